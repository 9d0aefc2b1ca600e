"""The training-size chapter (MIMIR §3.2.1, Figures 2 left and 13; appendix C.1, Figure 9): members
from windows of a lab model's recorded data order, one fixed non-member set, AUC per checkpoint and
per window, and the paired effects its verdicts rest on.

:func:`run` scores the design (:mod:`mimirlib.experiments.training_windows`: the models, the
windows of steps, their members and the fixed non-members) and bootstraps every window's
within-domain AUC (:mod:`mimirlib.experiments.window_auc`); the functions below turn it into the
page's tables, the effects :func:`verdicts` rests on, and the numbers the prose states.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Sequence

import pandas as pd

from mimirlib.core.signals import SignalCache, cache_note
from mimirlib.display import report
from mimirlib.experiments.params import Params
from mimirlib.experiments.training_windows import (
    CONTROL,
    CONTROL_TARGET,
    REPLICATE,
    TARGET,
    checkpoint_windows,
    final_lr_share,
    fixed_nonmembers,
    recency_windows,
    roster,
    score_windows,
    window_members,
    window_steps,
)
from mimirlib.experiments.window_auc import (
    MIN_MEMBERS,
    SELECTION,
    TEST,
    WINDOW,
    AucDraws,
    auc_draws,
    interval,
    point_aucs,
    split_halves,
)
from mimirlib.lab.build import lab_for
from mimirlib.lab.layout import Lab
from mimirlib.verdicts import Verdict, seed_sd, split_paper_attacks
from mimirlib.verdicts import training_size as rules

# ----------------------------------------------------------------------------- the run


@dataclass
class Run:
    """Every window's scores and AUCs, with the roster of models, as :func:`run` computed them."""

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
    control_pairs: list = dataclasses.field(default_factory=list)  # (control, target) seed by seed: Lab.control_pairs
    cache_hits: int = 0
    cache_misses: int = 0
    lab: Lab | None = None
    params: Params | None = None

    @property
    def targets(self) -> list[str]:
        """The chapter's targets, in the order it lists them."""
        return self.models(TARGET)

    @property
    def cache_note(self) -> str:
        return cache_note(self.cache_hits, self.cache_misses)

    def models(self, *kinds: str) -> list[str]:
        return list(self.roster[self.roster.kind.isin(kinds)].model)

    def seed_group(self, base: str) -> list[str]:
        """``base`` and its scored seed replicates."""
        r = self.roster
        return [base] + list(r[(r.base == base) & (r.kind == REPLICATE)].model)

    def with_auc(self, analysis: str) -> pd.DataFrame:
        w = self.windows[self.windows.analysis == analysis].drop(columns=["analysis", "n_members"])
        return w.merge(self.aucs.table, on=WINDOW, how="inner")


def design_windows(lab: Lab, ros: pd.DataFrame, window_fraction: float, n_recency: int) -> pd.DataFrame:
    """Every window the run scores: each checkpoint's of the models scored by step, then the
    recency windows of every model (column ``analysis``)."""
    frames = []
    for r in ros.itertuples():
        if r.by_step:
            frames.append(checkpoint_windows(lab, r.model, window_fraction).assign(analysis="checkpoint"))
        frames.append(recency_windows(lab, r.model, window_fraction, n_recency).assign(analysis="recency"))
    return pd.concat(frames, ignore_index=True)


def read_from(p: Params | None) -> int:
    """The fewest members a window may hold and be read (scored, its AUC shown and decided on): the
    chapter's ``min_members``. The paper draws 1,000 members from every window, its first read
    included (step 1,000); the lab's log-spaced first checkpoints hold a handful (11 at step 1)."""
    return max(MIN_MEMBERS, int(p.min_members)) if p is not None and "min_members" in p else MIN_MEMBERS


def run(p: Params, lab: Lab | None = None, cache: SignalCache | None = None) -> Run:
    """Score every window of the design and bootstrap its AUCs (see the module docstring). ``lab``:
    the profile's lab unless given; ``p.targets`` None means all of its one-epoch targets."""
    lab = lab or lab_for(p)
    cache = cache or SignalCache.default()
    texts = lab.trained_texts()
    ros = roster(lab, p.targets or lab.target_names(), p.seed_replicates)
    nonmembers = fixed_nonmembers(lab, p.samples, texts)
    windows = design_windows(lab, ros, p.window_fraction, p.recency_windows)
    orders = {m: lab.data_order(m) for m in ros.model}
    members = {
        (m, f, l_): window_members(lab, orders[m], f, l_, p.samples, p.seed, texts)
        for m, f, l_ in windows[["model", "first", "last"]].drop_duplicates().itertuples(index=False)
    }
    windows["n_members"] = [
        len(members[key]) for key in windows[["model", "first", "last"]].itertuples(index=False, name=None)
    ]
    scored = windows[windows.n_members >= read_from(p)]
    h0, m0 = cache.hits, cache.misses
    scores = score_windows(lab, scored, members, nonmembers, p.attacks, options=p.scoring(cache=cache))
    aucs = auc_draws(scores, p.n_bootstrap, p.seed)
    ctl, base = lab.recency_control(), lab.recency_control_target()
    lr = {m: final_lr_share(lab, m) for m in (ctl, base) if m is not None}
    tokens = {m: o.tokens_per_step for m, o in orders.items()}
    hits, misses = cache.hits - h0, cache.misses - m0
    pairs = lab.control_pairs()
    return Run(
        ros, windows, nonmembers, scores, aucs, list(p.attacks), tokens, ctl, base, lr, pairs, hits, misses, lab, p
    )


# ----------------------------------------------------------------------------- tables for the page


def by_step(run: Run) -> pd.DataFrame:
    """AUC per (target, checkpoint, attack) with its interval, members in the window, tokens seen."""
    t = run.with_auc("checkpoint")
    t = t[t.model.isin(run.models(TARGET))].rename(columns={"model": "target"})
    t["tokens"] = [s * run.tokens_per_step[m] for m, s in zip(t.target, t.step)]
    return t[
        ["target", "step", "tokens", "first", "last", "attack", "auc", "auc_lo", "auc_hi", "n_members", "n_nonmembers"]
    ].reset_index(drop=True)


def recency(run: Run) -> pd.DataFrame:
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


def members_per_window(run: Run, analysis: str = "checkpoint") -> pd.DataFrame:
    """Members in every window (one column per model; the fixed non-member count is the same for
    all): by checkpoint step, or (``analysis="recency"``) by steps before the end."""
    w = run.windows[
        (run.windows.analysis == analysis) & run.windows.model.isin(run.models(TARGET, CONTROL, CONTROL_TARGET))
    ]
    index = "step" if analysis == "checkpoint" else "steps_before_end"
    w = w.astype({index: int})
    return w.pivot_table(index=index, columns="model", values="n_members", aggfunc="first").astype("Int64")


# ----------------------------------------------------------------------------- effects for the verdicts


def _with_seed_sd(rows: pd.DataFrame, run: Run, columns: Sequence[str]) -> pd.DataFrame:
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


def start_auc(run: Run) -> pd.DataFrame:
    """Each target's AUC at its first scored checkpoint, per attack, with its interval, the members
    in that window and the seed sd of that AUC (its replicates' first windows)."""
    t = run.with_auc("checkpoint")
    first = t.loc[t.groupby(["model", "attack"]).step.idxmin()]
    first = first.merge(run.roster[["model", "kind"]], on="model")
    out = _with_seed_sd(first, run, ["auc"]).rename(columns={"model": "target", "auc_seed_sd": "seed_sd"})
    return out[
        ["target", "attack", "step", "auc", "auc_lo", "auc_hi", "n_members", "n_nonmembers", "seed_sd", "n_seeds"]
    ].reset_index(drop=True)


def checkpoint_scores(run: Run) -> pd.DataFrame:
    """The scores of the checkpoint windows (the recency windows left out)."""
    w = run.windows[run.windows.analysis == "checkpoint"][WINDOW].drop_duplicates()
    return run.scores.merge(w.astype(run.scores[WINDOW].dtypes.to_dict()), on=WINDOW, how="inner")


def choose_peaks(selection: pd.DataFrame, steps: dict[str, list[int]]) -> dict[str, int]:
    """Per model: the interior checkpoint (``steps[model][1:-1]``) where the AUC of ``selection``
    (scores of the selection half), averaged over attacks, is highest."""
    aucs = point_aucs(selection)
    peaks = {}
    for model, g in aucs.groupby("model", sort=False):
        mean = g[g.step.isin(steps.get(model, [])[1:-1])].groupby("step").auc.mean()
        if not mean.empty:
            peaks[model] = int(mean.idxmax())
    return peaks


def _rise_fall_rows(aucs: AucDraws, model: str, kind: str, first: int, peak: int, last: int) -> list[dict]:
    """One row per attack with AUCs at ``first``, ``peak``, ``last`` in ``aucs`` (one window per step)."""
    t = aucs.table[aucs.table.model == model]
    rows = []
    for attack, a in t.groupby("attack", sort=False):
        at = dict(zip(a.step.astype(int), a.index))
        if not {first, peak, last} <= set(at):
            continue
        rise, fall = aucs.difference(at[peak], at[first]), aucs.difference(at[peak], at[last])
        auc, n = aucs.table.auc, aucs.table.n_members
        rows.append(
            {"model": model, "kind": kind, "attack": attack, "first_step": first, "peak_step": peak, "last_step": last}
            | {f"auc_{k}": auc.iat[at[s]] for k, s in (("first", first), ("peak", peak), ("last", last))}
            | {f"n_{k}": int(n.iat[at[s]]) for k, s in (("first", first), ("peak", peak), ("last", last))}
            | {"n_nonmembers": int(aucs.table.n_nonmembers.iat[at[first]])}
            | dict(zip(("rise", "rise_lo", "rise_hi"), rise))
            | dict(zip(("fall", "fall_lo", "fall_hi"), fall))
        )
    return rows


def rise_and_fall(run: Run, seed: int | None = None) -> pd.DataFrame:
    """Per (target, attack): the rise AUC(peak) - AUC(first) and the fall AUC(peak) - AUC(last), with
    the peak chosen on one half of the texts and both effects measured on the other.

    The peak of a noisy curve is biased up, so choosing it on the texts it is then measured on
    inflates the rise and the fall alike. The checkpoint windows' texts (members and the fixed
    non-members) are split at random into two halves (:func:`window_auc.split_halves`: stratified
    by role, domain and window, seeded by ``seed``, the run's seed by default). On the selection half, the
    peak is the interior checkpoint with the model's highest AUC averaged over attacks; on the test
    half, every AUC and effect, with joint-bootstrap intervals paired on the test half's non-members.
    The seed sd is over the target's replicates, each with its own peak. AUCs and member counts in
    the frame are the test half's."""
    seed = (run.params.seed if run.params is not None else 0) if seed is None else int(seed)
    t = run.with_auc("checkpoint")
    steps = {m: sorted(int(s) for s in g.step.unique()) for m, g in t.groupby("model", sort=False)}
    steps = {m: s for m, s in steps.items() if len(s) >= 3}
    scores = checkpoint_scores(run)
    scores = scores[scores.model.isin(list(steps))]
    half = split_halves(scores, seed)
    peaks = choose_peaks(scores[half == SELECTION], steps)
    keep = {(m, s) for m, p in peaks.items() for s in (steps[m][0], p, steps[m][-1])}
    chosen = pd.Series([(m, int(s)) in keep for m, s in zip(scores.model, scores.step)], index=scores.index)
    test = scores[(half == TEST) & chosen]
    aucs = auc_draws(test, run.aucs.draws.shape[0], seed)
    kinds = dict(zip(run.roster.model, run.roster.kind))
    rows = [r for m, p in peaks.items() for r in _rise_fall_rows(aucs, m, kinds[m], steps[m][0], p, steps[m][-1])]
    if not rows:
        return pd.DataFrame()
    out = _with_seed_sd(pd.DataFrame(rows), run, ["rise", "fall"]).rename(columns={"model": "target"})
    return out.drop(columns="kind").reset_index(drop=True)


def _recency_rows(run: Run) -> pd.DataFrame:
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


def recency_effects(run: Run) -> pd.DataFrame:
    """Per (target, attack): AUC(most recent window) - AUC(earliest window scored) at the final
    checkpoint, averaged over the target and its seed replicates (columns estimate, lo, hi, seed_sd,
    n_seeds, averaged, auc_recent, auc_earliest, ...; the AUCs are the seeds' means too). Each seed
    saw its documents in its own order, so its windows hold other members: the mean's interval is the
    mean of the seeds' bootstrap differences, paired on the fixed non-members (resampled alike for
    every window) and independent over the members (the few documents two seeds' windows share are
    resampled apart, a member part some 5-10% narrow); ``seed_sd`` is over the seeds' estimates, which
    carry their own members' noise too, so the seed bar more than makes up for it. Only the chapter's
    targets (not the control or a target added for it)."""
    rows = _recency_rows(run)
    if rows.empty:
        return rows
    out = _with_seed_sd(rows, run, ["estimate"]).rename(columns={"estimate_seed_sd": "seed_sd"})
    out = out[out.kind == TARGET].rename(columns={"model": "target"}).assign(averaged=1)
    d = run.aucs.draws
    for i, r in out.iterrows():
        g = rows[rows.model.isin(run.seed_group(r.target)) & (rows.attack == r.attack)]
        est, lo, hi = interval(g.estimate.mean(), (d[:, list(g.ia)] - d[:, list(g.ib)]).mean(axis=1))
        aucs = [g.auc_recent.mean(), g.auc_earliest.mean()]
        out.loc[i, ["estimate", "lo", "hi", "auc_recent", "auc_earliest", "averaged"]] = [est, lo, hi, *aucs, len(g)]
    out["averaged"] = out.averaged.astype(int)
    return out.drop(columns=["kind", "ia", "ib"]).reset_index(drop=True)


def control_effects(run: Run) -> pd.DataFrame:
    """Per attack, the recency control against its target on the same windows and texts, seed by
    seed (``run.control_pairs``, those scored): ``estimate``/``lo``/``hi`` the control's own recency
    effect (recent - earliest window), ``target_*`` its targets', ``gap``/``gap_lo``/``gap_hi`` the
    first minus the second, each a mean over the ``averaged`` pairs with the interval of the mean of
    their joint-bootstrap differences (a pair is fully paired: same members, same non-members; the
    pairs' windows hold other members, as in :func:`recency_effects`). ``seed_sd``/``gap_seed_sd``:
    over the pairs' estimates when there are two or more (``seed_borrowed`` False); with one (a lab
    without ``recency_control.seeds``), the target's seed sd over its replicates, and that x sqrt(2)
    for the gap (a difference of two trained models). Empty when the lab has no recency control or
    no two of its windows were read."""
    rows = _recency_rows(run) if run.control is not None else pd.DataFrame()
    if rows.empty:
        return rows
    tgt = _with_seed_sd(rows, run, ["estimate"]).set_index(["model", "attack"])
    d = run.aucs.draws
    out = []
    for attack, g in rows.groupby("attack", sort=False):
        g = g.set_index("model")
        pairs = [(c, t) for c, t in run.control_pairs if c in g.index and t in g.index]
        if not pairs or (run.control_target, attack) not in tgt.index:
            continue
        own = tgt.loc[(run.control_target, attack)]  # the target's own row: its seed sd over its replicates
        c, t = g.loc[[c for c, _ in pairs]], g.loc[[t for _, t in pairs]]
        c_draws = (d[:, list(c.ia)] - d[:, list(c.ib)]).mean(axis=1)
        t_draws = (d[:, list(t.ia)] - d[:, list(t.ib)]).mean(axis=1)
        est = interval(c.estimate.mean(), c_draws)
        target = interval(t.estimate.mean(), t_draws)
        gaps = c.estimate.to_numpy() - t.estimate.to_numpy()
        gap = interval(gaps.mean(), c_draws - t_draws)
        borrowed = len(pairs) < 2
        sd = float(own.estimate_seed_sd) if borrowed else seed_sd(list(c.estimate))
        first = c.iloc[0]
        out.append(
            {
                "control": run.control,
                "target": run.control_target,
                "attack": attack,
                "auc_recent": c.auc_recent.mean(),
                "auc_earliest": c.auc_earliest.mean(),
                "estimate": est[0],
                "lo": est[1],
                "hi": est[2],
                "seed_sd": sd,
                "n_seeds": int(own.n_seeds) if borrowed else len(pairs),
                "averaged": len(pairs),
                "seed_borrowed": borrowed,
                "target_estimate": target[0],
                "target_lo": target[1],
                "target_hi": target[2],
                "gap": gap[0],
                "gap_lo": gap[1],
                "gap_hi": gap[2],
                "gap_seed_sd": sd * math.sqrt(2) if borrowed else seed_sd(list(gaps)),
                "n_recent": int(first.n_recent),
                "n_earliest": int(first.n_earliest),
                "n_nonmembers": int(first.n_nonmembers),
                "control_lr_share": run.final_lr.get(run.control, math.nan),
                "target_lr_share": run.final_lr.get(run.control_target, math.nan),
                "earliest_steps_before_end": int(first.earliest_steps_before_end),
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
    """Per (target, attack): the peak step (chosen on the selection half), the test half's AUC at
    the first, peak and last checkpoints, the rise and the fall with their paired intervals, and
    their seed sd."""
    if rf.empty:
        return rf
    return pd.DataFrame(
        {
            "target": rf.target,
            "attack": rf.attack,
            "peak step (selection half)": rf.peak_step,
            "AUC first (test half)": rf.auc_first.round(3),
            "AUC peak (test half)": rf.auc_peak.round(3),
            "AUC last (test half)": rf.auc_last.round(3),
            "rise (peak - first)": [_ci(*x) for x in zip(rf.rise, rf.rise_lo, rf.rise_hi)],
            "rise seed sd": rf.rise_seed_sd.round(3),
            "fall (peak - last)": [_ci(*x) for x in zip(rf.fall, rf.fall_lo, rf.fall_hi)],
            "fall seed sd": rf.fall_seed_sd.round(3),
        }
    ).set_index(["target", "attack"])


def recency_table(rec: pd.DataFrame) -> pd.DataFrame:
    """Per (target, attack), means over the target's seeds: AUC of the most recent and the earliest
    window, their paired difference and its seed sd."""
    if rec.empty:
        return rec
    return pd.DataFrame(
        {
            "target": rec.target,
            "attack": rec.attack,
            "AUC most recent": rec.auc_recent.round(3),
            "AUC earliest": rec.auc_earliest.round(3),
            "recent - earliest": [_ci(*x) for x in zip(rec.estimate, rec.lo, rec.hi)],
            "seeds": rec.averaged,
            "seed sd": rec.seed_sd.round(3),
        }
    ).set_index(["target", "attack"])


def control_table(ctl: pd.DataFrame) -> pd.DataFrame:
    """Per attack: recent - earliest on the control and on its target (same windows, same texts),
    and the control minus the target, fully paired; each a mean over the seed pairs (column seeds)."""
    if ctl.empty:
        return ctl
    return pd.DataFrame(
        {
            "attack": ctl.attack,
            "control: recent - earliest": [_ci(*x) for x in zip(ctl.estimate, ctl.lo, ctl.hi)],
            "target, same texts: recent - earliest": [
                _ci(*x) for x in zip(ctl.target_estimate, ctl.target_lo, ctl.target_hi)
            ],
            "control - target": [_ci(*x) for x in zip(ctl.gap, ctl.gap_lo, ctl.gap_hi)],
            "seeds": ctl.averaged if "averaged" in ctl else 1,
            "seed sd (difference)": ctl.gap_seed_sd.round(3),
        }
    ).set_index("attack")


def summary(run: Run) -> dict:
    """The numbers the chapter's prose states (each glued under its key); the learning-rate shares
    are those of the recency control's target (or the first target) and of the control."""
    lab, window_fraction = run.lab, run.params.window_fraction
    w = run.windows[run.windows.model.isin(run.models(TARGET))]
    cp = w[w.analysis == "checkpoint"]
    bar = read_from(run.params)
    unread, cp = cp[cp.n_members < bar], cp[cp.n_members >= bar]
    first = cp[cp.step == cp.step.min()]
    # over MIMIR's attacks, as the recency verdicts count them (Min-K%++ beside)
    rec, ctl = (split_paper_attacks(x)[0] for x in (recency_effects(run), control_effects(run)))
    ref = run.control_target or run.models(TARGET)[0]
    out = {
        "window_pct": 100 * window_fraction,
        "n_nonmembers": len(run.nonmembers),
        "n_domains": int(run.nonmembers.domain.nunique()),
        "first_step": int(cp.step.min()),
        "n_first_text": report.count_span(first.n_members),
        "n_window_text": report.count_span(cp.n_members),
        "min_members": bar,
        "unread_steps": ", ".join(map(str, sorted(unread.step.unique()))) or "none",
        "n_unread_text": report.count_span(unread.n_members) if len(unread) else "none",
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


def verdicts(run: Run) -> list[Verdict]:
    """The chapter's verdicts, in the order the page states them."""
    ctl = control_effects(run)
    return [
        rules.starts_near_random(start_auc(run)),
        rules.rise_then_fall(rise_and_fall(run)),
        rules.recency(recency_effects(run)),
        rules.recency_on_control(ctl),
        rules.schedule_explains_recency(ctl),
    ]
