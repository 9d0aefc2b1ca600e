"""The training-size chapter (MIMIR §3.2.1, Figures 2 left and 13; appendix C.1, Figure 9): members
from windows of a lab model's recorded data order, one fixed non-member set, AUC per checkpoint and
per window, and the paired effects its verdicts rest on.

Design, as the paper's: for the checkpoint at step *s*, members are documents seen once, entirely
within the last ``window_fraction`` of the steps before *s* (the paper: the last 100 of ~99,000
steps); for recency, the final checkpoint is fixed and the window moves back. The non-members are
the same texts everywhere (the paper: 1,000 fixed): the first ``samples // domains`` held-out
documents of each domain's main benchmark.

AUC is computed *within each domain* and averaged with the members' domain shares
(:func:`stratified_auc`): an early window holds few members (9 at the lab's first checkpoint), and
a window that happens to hold mostly one domain would otherwise be scored on the loss gap between
domains, not on membership. Uncertainty comes from one joint bootstrap (:func:`auc_draws`):
members are resampled as a whole (the AUC is a mean over members of each one's within-domain win
rate, so a domain with one member in a window still varies), once per distinct member set; the
fixed non-members are resampled within domain, once per draw for every model, checkpoint and
window. So any difference of two AUCs is
paired on whatever texts the two share: the non-members always, the members too when the windows
hold the same documents (a target and its recency control read the same data in the same order).
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from mimirlib.display import report
from mimirlib.lab.layout import MAIN_SPLIT, Lab, cut_words
from mimirlib.lab.train import DataOrder, ModelSize, TrainConfig, learning_rate
from mimirlib.core.models import load_model
from mimirlib.core.scoring import score_texts
from mimirlib.core.signals import SignalCache
from mimirlib.verdicts import seed_sd

MEMBER, NONMEMBER = "member", "nonmember"
WINDOW = ["model", "step", "first", "last"]  # one window of members at one checkpoint of one model
CONFIDENCE = 0.95  # percentile intervals of every AUC and effect
MIN_MEMBERS = 2  # a window with fewer members has no AUC (the first steps of a tiny lab may hold one)
# Roles of the models a run scores: the chapter's targets, their seed replicates (only their seed
# spread is used), the recency control, and the control's target when the chapter's list lacks it.
TARGET, REPLICATE, CONTROL, CONTROL_TARGET = "target", "replicate", "control", "control's target"


# ----------------------------------------------------------------------------- design


def per_domain(samples: int, domains: Sequence[str]) -> int:
    """Members (at most) and non-members per domain in every window: ``samples`` spread evenly."""
    return max(1, int(samples) // len(domains))


def fixed_nonmembers(lab: Lab, samples: int, texts: dict[str, str] | None = None) -> pd.DataFrame:
    """The one non-member set of the chapter (columns id, domain, text): the first
    :func:`per_domain` held-out documents of each domain's main benchmark, as benchmark samples."""
    texts = lab.trained_texts() if texts is None else texts
    k = per_domain(samples, lab.config["domains"])
    ids = [(d, r["nonmember_id"]) for d in lab.config["domains"] for r in lab.ground_truth(d, MAIN_SPLIT)[:k]]
    rows = [{"id": i, "domain": d, "text": cut_words(texts[i], lab.config["sample_words"])} for d, i in ids]
    return pd.DataFrame(rows, columns=["id", "domain", "text"])


def window_members(
    lab: Lab, order: DataOrder, first: int, last: int, samples: int, seed: int = 0, texts: dict[str, str] | None = None
) -> pd.DataFrame:
    """Up to :func:`per_domain` documents of each domain seen once, entirely within steps
    ``first..last`` of ``order`` (a seeded draw), as benchmark samples (columns id, domain, text)."""
    texts = lab.trained_texts() if texts is None else texts
    ids = order.seen_in_window(max(int(first), 1), int(last))
    k = per_domain(samples, lab.config["domains"])
    rows = []
    for d in lab.config["domains"]:
        mine = [i for i in ids if i.startswith(f"{d}/")]
        mine = [mine[j] for j in np.random.default_rng(seed).permutation(len(mine))][:k]
        rows += [{"id": i, "domain": d, "text": cut_words(texts[i], lab.config["sample_words"])} for i in mine]
    return pd.DataFrame(rows, columns=["id", "domain", "text"])


def window_steps(order: DataOrder, window_fraction: float) -> int:
    """The window's width in steps: ``window_fraction`` of the run, at least one step."""
    return max(1, round(window_fraction * order.steps))


def checkpoint_windows(lab: Lab, model: str, window_fraction: float) -> pd.DataFrame:
    """For every checkpoint of ``model``: the window of steps just before it (cut at step 1)."""
    w = window_steps(lab.data_order(model), window_fraction)
    return pd.DataFrame(
        [{"model": model, "step": s, "first": max(1, s - w + 1), "last": s} for s in lab.checkpoints(model)]
    )


def recency_windows(lab: Lab, model: str, window_fraction: float, n_windows: int) -> pd.DataFrame:
    """At the final checkpoint of ``model``: ``n_windows`` successive windows of the same width, window
    *j* ending *j* widths before the last step (fewer when the run is too short)."""
    order = lab.data_order(model)
    w, final = window_steps(order, window_fraction), order.steps
    rows = [
        {
            "model": model,
            "step": final,
            "first": final - (j + 1) * w + 1,
            "last": final - j * w,
            "window": j,
            "steps_before_end": j * w,
        }
        for j in range(int(n_windows))
        if final - (j + 1) * w + 1 >= 1
    ]
    return pd.DataFrame(rows)


def roster(lab: Lab, targets: Sequence[str], seed_replicates: bool = True) -> pd.DataFrame:
    """The models a run scores (columns model, base, kind, by_step): ``targets``, their seed
    replicates (``base`` = the target), the recency control (``lab.recency_control()``) and its
    target. ``by_step``: scored at every checkpoint (the recency analysis reads the final one)."""
    rows = []
    for t in targets:
        rows.append({"model": t, "base": t, "kind": TARGET, "by_step": True})
        if seed_replicates:
            rows += [{"model": r, "base": t, "kind": REPLICATE, "by_step": True} for r in lab.seed_replicates(t)[1:]]
    ctl = lab.recency_control()
    if ctl is not None:
        base = control_target(lab)
        if base not in targets:
            rows.append({"model": base, "base": base, "kind": CONTROL_TARGET, "by_step": False})
            if seed_replicates:
                rows += [
                    {"model": r, "base": base, "kind": REPLICATE, "by_step": False}
                    for r in lab.seed_replicates(base)[1:]
                ]
        rows.append({"model": ctl, "base": ctl, "kind": CONTROL, "by_step": False})
    return pd.DataFrame(rows)


def control_target(lab: Lab) -> str | None:
    """The one-epoch target whose data and recipe the recency control shares (its size's target)."""
    return lab.recency_control_target()


def final_lr_share(lab: Lab, model: str) -> float:
    """The learning rate at ``model``'s last step as a share of its peak (its recorded schedule)."""
    c = dict(lab.manifest["models"][model]["config"])
    fields = {f.name for f in dataclasses.fields(TrainConfig)}
    cfg = TrainConfig(size=ModelSize(**c.pop("size")), **{k: v for k, v in c.items() if k in fields})
    steps = lab.data_order(model).steps
    return learning_rate(cfg, steps, steps) / cfg.lr


# ----------------------------------------------------------------------------- scoring


def score_windows(
    lab: Lab,
    windows: pd.DataFrame,
    members: dict,
    nonmembers: pd.DataFrame,
    attacks: Sequence[str],
    *,
    cache: SignalCache | None = None,
    batch_size: int = 16,
    dtype: str = "auto",
    engine="local",
) -> pd.DataFrame:
    """Scores of each window's members and of the fixed non-members at the window's checkpoint: one
    row per (window, text, attack) with columns model, step, first, last, role, id, domain, attack,
    score. ``members[(model, first, last)]`` is that window's member frame. Each checkpoint is loaded
    once; the final one is the model itself (its signals are shared with the other chapters)."""
    ref_name = lab.config["references"][0]["name"]
    needs_ref = "ref" in attacks
    reference = load_model(str(lab.model_dir(ref_name)), dtype=dtype) if needs_ref else None
    out = []
    for (model, step), ws in windows.drop_duplicates(WINDOW).groupby(["model", "step"], sort=False):
        final = step == lab.checkpoints(model)[-1]
        loaded = load_model(str(lab.model_dir(model)), None if final else f"step{step}", dtype=dtype)
        parts = {(r.first, r.last): members[(model, r.first, r.last)] for r in ws.itertuples()}
        texts = list(dict.fromkeys([t for m in parts.values() for t in m.text] + list(nonmembers.text)))
        s = score_texts(
            texts,
            loaded,
            attacks,
            references={"ref": reference} if needs_ref else None,
            cache=cache,
            batch_size=batch_size,
            desc=f"{model}@{step}",
            engine=engine,
        )
        s = s.rename(columns={"ref:ref": "ref"}).assign(text=texts)
        for (first, last), m in parts.items():
            both = pd.concat([m.assign(role=MEMBER), nonmembers.assign(role=NONMEMBER)], ignore_index=True)
            long = both.merge(s, on="text", how="left").melt(
                id_vars=["id", "domain", "role"], value_vars=list(attacks), var_name="attack", value_name="score"
            )
            out.append(long.assign(model=model, step=step, first=first, last=last))
    cols = WINDOW + ["role", "id", "domain", "attack", "score"]
    return pd.concat(out, ignore_index=True)[cols] if out else pd.DataFrame(columns=cols)


# ----------------------------------------------------------------------------- AUC and its joint bootstrap


def _set_rng(seed: int, ids: Sequence[str], salt: str) -> np.random.Generator:
    """One generator per distinct text set: the same set always gets the same resamples."""
    h = int(hashlib.sha256((salt + "\n" + "\n".join(map(str, ids))).encode()).hexdigest()[:15], 16)
    return np.random.default_rng([int(seed), h])


def stratified_counts(domains: Sequence[str], n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap multiplicities ``(n_resamples, len(domains))``, resampling within each domain, so
    every resample keeps each domain's count."""
    dom = np.asarray(domains)
    counts = np.zeros((int(n_resamples), dom.size), dtype=np.int64)
    rows = np.arange(int(n_resamples))[:, None]
    for d in pd.unique(dom):
        idx = np.flatnonzero(dom == d)
        draw = rng.integers(0, idx.size, size=(int(n_resamples), idx.size)) + rows * idx.size
        counts[:, idx] = np.bincount(draw.ravel(), minlength=int(n_resamples) * idx.size).reshape(-1, idx.size)
    return counts


def stratified_auc(
    member_scores,
    member_domains,
    nonmember_scores,
    nonmember_domains,
    member_counts: np.ndarray | None = None,
    nonmember_counts: np.ndarray | None = None,
):
    """AUC within each domain (members against the non-members of their own domain, ties half),
    averaged with the members' domain shares: the mean over members of each one's share of
    same-domain non-members it outscores. With bootstrap multiplicities (rows of
    :func:`stratified_counts`; the non-members' must keep each domain's count), one AUC per row;
    without, the point AUC (a float)."""
    ms, ns = np.asarray(member_scores, float), np.asarray(nonmember_scores, float)
    md, nd = np.asarray(member_domains), np.asarray(nonmember_domains)
    point = member_counts is None
    cm = np.ones((1, ms.size)) if point else np.asarray(member_counts, float)
    cn = np.ones((1, ns.size)) if point else np.asarray(nonmember_counts, float)
    out = np.zeros(cm.shape[0])
    for d in pd.unique(md):
        i, j = md == d, nd == d
        if not j.any():
            raise ValueError(f"domain {d!r} has members but no non-members: a within-domain AUC needs both")
        c = (ms[i][:, None] > ns[j][None, :]) + 0.5 * (ms[i][:, None] == ns[j][None, :])
        out += np.einsum("bi,bi->b", cm[:, i], cn[:, j] @ c.T) / j.sum()
    out /= cm.sum(axis=1)
    return float(out[0]) if point else out


@dataclass
class AucDraws:
    """Point AUCs and joint bootstrap draws: ``table`` has one row per (model, step, first, last,
    attack) with auc, auc_lo, auc_hi, n_members, n_nonmembers; ``draws[:, i]`` are row *i*'s AUCs."""

    table: pd.DataFrame
    draws: np.ndarray

    def index(self, model: str, step: int, first: int, last: int, attack: str) -> int:
        t = self.table
        hit = np.flatnonzero(
            (t.model == model) & (t.step == step) & (t["first"] == first) & (t["last"] == last) & (t.attack == attack)
        )
        if hit.size != 1:
            raise KeyError(f"no AUC for {model}@{step} window {first}..{last}, attack {attack!r}")
        return int(hit[0])

    def difference(self, a: int, b: int) -> tuple[float, float, float]:
        """AUC(row a) - AUC(row b): point and percentile interval from the joint draws."""
        return interval(self.table.auc.iat[a] - self.table.auc.iat[b], self.draws[:, a] - self.draws[:, b])


def interval(point: float, draws: np.ndarray) -> tuple[float, float, float]:
    alpha = 1.0 - CONFIDENCE
    lo, hi = np.quantile(draws, [alpha / 2, 1 - alpha / 2])
    return float(point), float(lo), float(hi)


def auc_draws(scores: pd.DataFrame, n_resamples: int = 1000, seed: int = 0) -> AucDraws:
    """Within-domain AUC of every (window, attack) of ``scores`` (as :func:`score_windows` returns)
    and its draws in one joint bootstrap: the non-members (one fixed set, checked) are resampled
    within domain once per draw for all rows; each distinct member set is resampled (as a whole)
    once per draw for all rows that hold it."""
    groups = list(scores.groupby(WINDOW + ["attack"], sort=False))
    fixed = groups[0][1][groups[0][1].role == NONMEMBER] if groups else scores
    non_ids = list(fixed.id)
    cn = stratified_counts(list(fixed.domain), n_resamples, _set_rng(seed, non_ids, NONMEMBER))
    member_counts: dict[tuple, np.ndarray] = {}
    rows, cols = [], []
    for key, g in groups:
        m, n = g[g.role == MEMBER], g[g.role == NONMEMBER]
        if list(n.id) != non_ids:
            raise ValueError(f"{key}: the non-members differ from the fixed set; every window must share them")
        if len(m) < MIN_MEMBERS:
            continue
        ids = tuple(m.id)
        if ids not in member_counts:
            # members resampled as one stratum: a mean over members of their within-domain win rates
            member_counts[ids] = stratified_counts([MEMBER] * len(ids), n_resamples, _set_rng(seed, ids, MEMBER))
        point = stratified_auc(m.score, m.domain, n.score, n.domain)
        d = stratified_auc(m.score, m.domain, n.score, n.domain, member_counts[ids], cn)
        _, lo, hi = interval(point, d)
        rows.append(
            dict(zip(WINDOW + ["attack"], key))
            | {"auc": point, "auc_lo": lo, "auc_hi": hi, "n_members": len(m), "n_nonmembers": len(n)}
        )
        cols.append(d)
    table = pd.DataFrame(rows, columns=WINDOW + ["attack", "auc", "auc_lo", "auc_hi", "n_members", "n_nonmembers"])
    return AucDraws(table, np.column_stack(cols) if cols else np.zeros((int(n_resamples), 0)))


# ----------------------------------------------------------------------------- the run


@dataclass
class TrainingSizeRun:
    roster: pd.DataFrame  # model, base, kind, by_step
    windows: pd.DataFrame  # analysis ("checkpoint" | "recency"), model, step, first, last, window, steps_before_end
    nonmembers: pd.DataFrame  # id, domain, text: the fixed set
    scores: pd.DataFrame
    aucs: AucDraws
    attacks: list[str]
    tokens_per_step: dict[str, int]
    control: str | None = None
    control_target: str | None = None
    final_lr: dict = dataclasses.field(default_factory=dict)  # final / peak learning rate: the control, its target
    cache_hits: int = 0
    cache_misses: int = 0

    def models(self, *kinds: str) -> list[str]:
        return list(self.roster[self.roster.kind.isin(kinds)].model)

    def seed_group(self, base: str) -> list[str]:
        """``base`` and its scored seed replicates."""
        r = self.roster
        return [base] + list(r[(r.base == base) & (r.kind == REPLICATE)].model)

    def with_auc(self, analysis: str) -> pd.DataFrame:
        w = self.windows[self.windows.analysis == analysis].drop(columns=["analysis", "n_members"])
        return w.merge(self.aucs.table, on=WINDOW, how="inner")


def run(
    lab: Lab,
    *,
    targets: Sequence[str],
    attacks: Sequence[str],
    window_fraction: float,
    samples: int,
    recency_windows_n: int,
    n_bootstrap: int = 1000,
    seed: int = 0,
    batch_size: int = 16,
    dtype: str = "auto",
    seed_replicates: bool = True,
    cache: SignalCache | None = None,
    engine="local",
) -> TrainingSizeRun:
    """Score every window of the design and bootstrap its AUCs (see the module docstring)."""
    cache = cache or SignalCache.default()
    texts = lab.trained_texts()
    ros = roster(lab, targets, seed_replicates)
    nonmembers = fixed_nonmembers(lab, samples, texts)
    frames = []
    for r in ros.itertuples():
        if r.by_step:
            frames.append(checkpoint_windows(lab, r.model, window_fraction).assign(analysis="checkpoint"))
        frames.append(recency_windows(lab, r.model, window_fraction, recency_windows_n).assign(analysis="recency"))
    windows = pd.concat(frames, ignore_index=True)
    orders = {m: lab.data_order(m) for m in ros.model}
    members = {
        (m, f, l_): window_members(lab, orders[m], f, l_, samples, seed, texts)
        for m, f, l_ in windows[["model", "first", "last"]].drop_duplicates().itertuples(index=False)
    }
    windows["n_members"] = [
        len(members[key]) for key in windows[["model", "first", "last"]].itertuples(index=False, name=None)
    ]
    scored = windows[windows.n_members >= MIN_MEMBERS]
    h0, m0 = cache.hits, cache.misses
    scores = score_windows(
        lab, scored, members, nonmembers, attacks, cache=cache, batch_size=batch_size, dtype=dtype, engine=engine
    )
    aucs = auc_draws(scores, n_bootstrap, seed)
    ctl, base = lab.recency_control(), control_target(lab)
    lr = {m: final_lr_share(lab, m) for m in (ctl, base) if m is not None}
    return TrainingSizeRun(
        ros,
        windows,
        nonmembers,
        scores,
        aucs,
        list(attacks),
        {m: o.tokens_per_step for m, o in orders.items()},
        ctl,
        base,
        lr,
        cache.hits - h0,
        cache.misses - m0,
    )


# ----------------------------------------------------------------------------- tables for the page


def by_step(run: TrainingSizeRun) -> pd.DataFrame:
    """AUC per (target, checkpoint, attack) with its interval, members in the window, tokens seen."""
    t = run.with_auc("checkpoint")
    t = t[t.model.isin(run.models(TARGET))].rename(columns={"model": "target"})
    t["tokens"] = [s * run.tokens_per_step[m] for m, s in zip(t.target, t.step)]
    return t[
        ["target", "step", "tokens", "first", "last", "attack", "auc", "auc_lo", "auc_hi", "n_members", "n_nonmembers"]
    ].reset_index(drop=True)


def recency(run: TrainingSizeRun) -> pd.DataFrame:
    """AUC per (model, window, attack) at the final checkpoint, for the targets, the recency control
    and its target (seed replicates left out: they enter only as seed spread)."""
    t = run.with_auc("recency")
    t = t[t.model.isin(run.models(TARGET, CONTROL, CONTROL_TARGET))].rename(columns={"model": "target"})
    t = t.astype({"window": int, "steps_before_end": int})
    return t[
        [
            "target",
            "window",
            "steps_before_end",
            "first",
            "last",
            "attack",
            "auc",
            "auc_lo",
            "auc_hi",
            "n_members",
            "n_nonmembers",
        ]
    ].reset_index(drop=True)


def members_per_window(run: TrainingSizeRun, analysis: str = "checkpoint") -> pd.DataFrame:
    """Members in every window (one column per model; the fixed non-member count is the same for
    all): by checkpoint step, or (``analysis="recency"``) by steps before the end."""
    w = run.windows[
        (run.windows.analysis == analysis) & run.windows.model.isin(run.models(TARGET, CONTROL, CONTROL_TARGET))
    ]
    index = "step" if analysis == "checkpoint" else "steps_before_end"
    w = w.astype({index: int})
    return w.pivot_table(index=index, columns="model", values="n_members", aggfunc="first").astype("Int64")


# ----------------------------------------------------------------------------- effects for the verdicts


def _with_seed_sd(rows: pd.DataFrame, run: TrainingSizeRun, columns: Sequence[str]) -> pd.DataFrame:
    """Rows of the targets with the seed sd of each effect column over the target and its replicates."""
    out = []
    for r in rows[rows.kind.isin([TARGET, CONTROL_TARGET])].to_dict("records"):
        group = rows[rows.model.isin(run.seed_group(r["model"])) & (rows.attack == r["attack"])]
        r["n_seeds"] = len(group)
        for c in columns:
            sd = seed_sd(list(group[c]))
            r[f"{c}_seed_sd"] = math.nan if sd is None else sd
        out.append(r)
    return pd.DataFrame(out)


def start_auc(run: TrainingSizeRun) -> pd.DataFrame:
    """Each target's AUC at its first scored checkpoint, per attack, with its interval, the members
    in that window and the seed sd of that AUC (its replicates' first windows)."""
    t = run.with_auc("checkpoint")
    first = t.loc[t.groupby(["model", "attack"]).step.idxmin()]
    first = first.merge(run.roster[["model", "kind"]], on="model")
    out = _with_seed_sd(first, run, ["auc"]).rename(columns={"model": "target", "auc_seed_sd": "seed_sd"})
    return out[
        ["target", "attack", "step", "auc", "auc_lo", "auc_hi", "n_members", "n_nonmembers", "seed_sd", "n_seeds"]
    ].reset_index(drop=True)


def rise_and_fall(run: TrainingSizeRun) -> pd.DataFrame:
    """Per (target, attack): the peak checkpoint (the interior checkpoint where the model's AUC,
    averaged over attacks, is highest; chosen once per model on the point estimates), the rise
    AUC(peak) - AUC(first) and the fall AUC(peak) - AUC(last), each with its joint-bootstrap
    interval (paired on the fixed non-members) and the seed sd over the target's replicates (each
    replicate with its own peak)."""
    t = run.with_auc("checkpoint").merge(run.roster[["model", "kind"]], on="model")
    rows = []
    for model, g in t.groupby("model", sort=False):
        steps = sorted(g.step.unique())
        if len(steps) < 3:
            continue
        mean = g.groupby("step").auc.mean()
        peak = int(mean.loc[steps[1:-1]].idxmax())
        for attack, a in g.groupby("attack", sort=False):
            at = {
                s: run.aucs.index(model, s, int(r["first"]), int(r["last"]), attack)
                for s, r in a.set_index("step").iterrows()
            }
            if not {steps[0], peak, steps[-1]} <= set(at):
                continue
            rise, fall = run.aucs.difference(at[peak], at[steps[0]]), run.aucs.difference(at[peak], at[steps[-1]])
            auc, n = run.aucs.table.auc, run.aucs.table.n_members
            rows.append(
                {
                    "model": model,
                    "kind": g.kind.iat[0],
                    "attack": attack,
                    "first_step": steps[0],
                    "peak_step": peak,
                    "last_step": steps[-1],
                    "auc_first": auc.iat[at[steps[0]]],
                    "auc_peak": auc.iat[at[peak]],
                    "auc_last": auc.iat[at[steps[-1]]],
                    "n_first": int(n.iat[at[steps[0]]]),
                    "n_peak": int(n.iat[at[peak]]),
                    "n_last": int(n.iat[at[steps[-1]]]),
                    "n_nonmembers": len(run.nonmembers),
                    "rise": rise[0],
                    "rise_lo": rise[1],
                    "rise_hi": rise[2],
                    "fall": fall[0],
                    "fall_lo": fall[1],
                    "fall_hi": fall[2],
                }
            )
    if not rows:
        return pd.DataFrame()
    out = _with_seed_sd(pd.DataFrame(rows), run, ["rise", "fall"]).rename(columns={"model": "target"})
    return out.drop(columns="kind").reset_index(drop=True)


def _recency_rows(run: TrainingSizeRun) -> pd.DataFrame:
    t = run.with_auc("recency").merge(run.roster[["model", "kind"]], on="model")
    rows = []
    for (model, attack), g in t.groupby(["model", "attack"], sort=False):
        g = g.sort_values("window")
        if len(g) < 2:
            continue
        a, b = g.iloc[0], g.iloc[-1]
        ia = run.aucs.index(model, int(a.step), int(a["first"]), int(a["last"]), attack)
        ib = run.aucs.index(model, int(b.step), int(b["first"]), int(b["last"]), attack)
        est, lo, hi = run.aucs.difference(ia, ib)
        rows.append(
            {
                "model": model,
                "kind": g.kind.iat[0],
                "attack": attack,
                "auc_recent": a.auc,
                "auc_earliest": b.auc,
                "earliest_steps_before_end": int(b.steps_before_end),
                "n_recent": int(a.n_members),
                "n_earliest": int(b.n_members),
                "n_nonmembers": int(a.n_nonmembers),
                "estimate": est,
                "lo": lo,
                "hi": hi,
                "ia": ia,
                "ib": ib,
            }
        )
    return pd.DataFrame(rows)


def recency_effects(run: TrainingSizeRun) -> pd.DataFrame:
    """Per (target, attack): AUC(most recent window) - AUC(earliest window scored) at the final
    checkpoint, interval paired on the fixed non-members, seed sd over the target's replicates
    (columns estimate, lo, hi, seed_sd, n_seeds, auc_recent, auc_earliest, ...). Only the
    chapter's targets (not the control or a target added for it)."""
    rows = _recency_rows(run)
    if rows.empty:
        return rows
    out = _with_seed_sd(rows, run, ["estimate"]).rename(columns={"estimate_seed_sd": "seed_sd"})
    out = out[out.kind == TARGET].rename(columns={"model": "target"})
    return out.drop(columns=["kind", "ia", "ib"]).reset_index(drop=True)


def control_effects(run: TrainingSizeRun) -> pd.DataFrame:
    """Per attack, the recency control against its target on the same windows and texts:
    ``estimate``/``lo``/``hi`` the control's own recency effect (recent - earliest window);
    ``gap``/``gap_lo``/``gap_hi`` the control's recency effect minus the target's, fully paired
    (same members, same non-members). Seed sd: the control has one seed; ``seed_sd`` borrows the
    target's (same recipe), ``gap_seed_sd`` is that x sqrt(2) (a difference of two trained models).
    Empty when the lab has no recency control."""
    if run.control is None:
        return pd.DataFrame()
    rows = _recency_rows(run)
    tgt = _with_seed_sd(rows, run, ["estimate"]).set_index(["model", "attack"])
    out = []
    for r in rows[rows.model == run.control].itertuples():
        if (run.control_target, r.attack) not in tgt.index:
            continue
        t = tgt.loc[(run.control_target, r.attack)]
        d = run.aucs.draws
        gap = interval(r.estimate - t.estimate, (d[:, r.ia] - d[:, r.ib]) - (d[:, int(t.ia)] - d[:, int(t.ib)]))
        sd = float(t.estimate_seed_sd)
        out.append(
            {
                "control": run.control,
                "target": run.control_target,
                "attack": r.attack,
                "auc_recent": r.auc_recent,
                "auc_earliest": r.auc_earliest,
                "estimate": r.estimate,
                "lo": r.lo,
                "hi": r.hi,
                "seed_sd": sd,
                "n_seeds": int(t.n_seeds),
                "target_estimate": float(t.estimate),
                "target_lo": float(t.lo),
                "target_hi": float(t.hi),
                "gap": gap[0],
                "gap_lo": gap[1],
                "gap_hi": gap[2],
                "gap_seed_sd": sd * math.sqrt(2),
                "n_recent": r.n_recent,
                "n_earliest": r.n_earliest,
                "n_nonmembers": r.n_nonmembers,
                "control_lr_share": run.final_lr.get(run.control, math.nan),
                "target_lr_share": run.final_lr.get(run.control_target, math.nan),
                "earliest_steps_before_end": r.earliest_steps_before_end,
            }
        )
    return pd.DataFrame(out)


# ----------------------------------------------------------------------------- display


def _ci(point, lo, hi) -> str:
    return f"{point:+.3f} [{lo:+.3f}, {hi:+.3f}]"


def auc_pivot(frame: pd.DataFrame, index: Sequence[str] = ("target", "step", "n_members")) -> pd.DataFrame:
    """AUC [95% interval] per attack (columns), rows by ``index`` (members in the window included)."""
    return report.auc_table(
        frame.rename(columns={"n_members": "members"}), [("members" if c == "n_members" else c) for c in index]
    )


def start_table(start: pd.DataFrame) -> pd.DataFrame:
    """The first checkpoint per (target, attack): AUC with its interval, members, seed sd."""
    return pd.DataFrame(
        {
            "target": start.target,
            "attack": start.attack,
            "step": start.step,
            "AUC [95% CI]": [report.fmt_ci(*x) for x in zip(start.auc, start.auc_lo, start.auc_hi)],
            "members": start.n_members,
            "non-members": start.n_nonmembers,
            "seed sd": start.seed_sd.round(3),
        }
    ).set_index(["target", "attack"])


def rise_fall_table(rf: pd.DataFrame) -> pd.DataFrame:
    """Per (target, attack): the AUC at the first, peak and last checkpoints, the rise and the fall
    with their paired intervals, and their seed sd."""
    if rf.empty:
        return rf
    return pd.DataFrame(
        {
            "target": rf.target,
            "attack": rf.attack,
            "peak step": rf.peak_step,
            "AUC first": rf.auc_first.round(3),
            "AUC peak": rf.auc_peak.round(3),
            "AUC last": rf.auc_last.round(3),
            "rise (peak - first)": [_ci(*x) for x in zip(rf.rise, rf.rise_lo, rf.rise_hi)],
            "rise seed sd": rf.rise_seed_sd.round(3),
            "fall (peak - last)": [_ci(*x) for x in zip(rf.fall, rf.fall_lo, rf.fall_hi)],
            "fall seed sd": rf.fall_seed_sd.round(3),
        }
    ).set_index(["target", "attack"])


def recency_table(rec: pd.DataFrame) -> pd.DataFrame:
    """Per (target, attack): AUC of the most recent and the earliest window, their paired difference
    and its seed sd."""
    if rec.empty:
        return rec
    return pd.DataFrame(
        {
            "target": rec.target,
            "attack": rec.attack,
            "AUC most recent": rec.auc_recent.round(3),
            "AUC earliest": rec.auc_earliest.round(3),
            "recent - earliest": [_ci(*x) for x in zip(rec.estimate, rec.lo, rec.hi)],
            "seed sd": rec.seed_sd.round(3),
        }
    ).set_index(["target", "attack"])


def control_table(ctl: pd.DataFrame) -> pd.DataFrame:
    """Per attack: recent - earliest on the control and on its target (same windows, same texts),
    and the control minus the target, fully paired."""
    if ctl.empty:
        return ctl
    return pd.DataFrame(
        {
            "attack": ctl.attack,
            "control: recent - earliest": [_ci(*x) for x in zip(ctl.estimate, ctl.lo, ctl.hi)],
            "target: recent - earliest": [_ci(*x) for x in zip(ctl.target_estimate, ctl.target_lo, ctl.target_hi)],
            "control - target": [_ci(*x) for x in zip(ctl.gap, ctl.gap_lo, ctl.gap_hi)],
            "seed sd (difference)": ctl.gap_seed_sd.round(3),
        }
    ).set_index("attack")


def summary(lab: Lab, run: TrainingSizeRun, window_fraction: float) -> dict:
    """The numbers the chapter's prose states (each glued under its key); the learning-rate shares
    are those of the recency control's target (or the first target) and of the control."""
    w = run.windows[run.windows.model.isin(run.models(TARGET))]
    cp = w[w.analysis == "checkpoint"]
    first = cp[cp.step == cp.step.min()]
    rec, ctl = recency_effects(run), control_effects(run)
    ref = run.control_target or run.models(TARGET)[0]
    out = {
        "window_pct": 100 * window_fraction,
        "n_nonmembers": len(run.nonmembers),
        "n_domains": int(run.nonmembers.domain.nunique()),
        "first_step": int(cp.step.min()),
        "n_first_text": report.count_span(first.n_members),
        "n_window_text": report.count_span(cp.n_members),
        "n_steps": int(lab.data_order(ref).steps),
        "window_steps": window_steps(lab.data_order(ref), window_fraction),
        "recency_mean": float(rec.estimate.mean()) if not rec.empty else math.nan,
        "target_lr_pct": 100 * run.final_lr.get(ref, final_lr_share(lab, ref)),
        "control": run.control or "none",
        "control_target": run.control_target or "none",
    }
    if run.control is not None and not ctl.empty:
        out |= {
            "control_lr_pct": 100 * run.final_lr[run.control],
            "control_recency_mean": float(ctl.estimate.mean()),
            "control_target_recency_mean": float(ctl.target_estimate.mean()),
            "gap_mean": float(ctl.gap.mean()),
        }
    else:
        out |= {
            "control_lr_pct": math.nan,
            "control_recency_mean": math.nan,
            "control_target_recency_mean": math.nan,
            "gap_mean": math.nan,
        }
    return out
