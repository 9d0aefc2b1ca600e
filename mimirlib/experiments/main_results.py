"""Main results (MIMIR §3.1: Tables 1, 6 and 11, Figures 1 and 12): every attack against the one-epoch
suite, its natural-data twin and their seed replicates, and the paired effects the verdicts decide on.

:func:`run` scores every model once (signals cached on disk) and evaluates every attack;
the other functions turn a :class:`MainRun` into the chapter's tables, figures, paired effects,
seed spread and verdicts. Attack names in the tables are the shown ones: the reference attack with
the first reference model is ``ref``; the other references keep their ``ref:<name>`` column.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from mimirlib.core import metrics
from mimirlib.display import plots, report
from mimirlib.core.scoring import score_benchmark
from mimirlib.core.signals import SignalCache
from mimirlib.verdicts import SEED_Z, effect_from_paired, seed_sd
from mimirlib.verdicts import main_results as rules

# Parameters of Pythia-dedup-12B, the paper's largest target (MIMIR §3, "Target models"): the
# yardstick for how much smaller the lab's models are.
PYTHIA_LARGEST_PARAMS = 12e9
REF = rules.REFERENCE  # the shown name of the reference attack with the main (first) reference model
NE = "ne"  # the neighbourhood attack, scored on the first ``ne_samples`` pairs only


@dataclass
class MainRun:
    """Everything the chapter shows, from one scoring pass.

    ``results``: one row per (model, domain, attack column): AUC with its bootstrap interval,
    TPR at 1% and 0.1% FPR, ``min_resolvable_fpr``, sizes; ``target`` is the model's label,
    ``base`` the label of the model it replicates (itself for seed 0), ``seed_index`` 0, 1, 2...
    ``scores``: (model label, domain) -> scores indexed by (is_member, position within its side),
    one column per attack (``ne`` is NaN outside its subset), so two columns pair on the same texts.
    """

    results: pd.DataFrame
    scores: dict
    targets: list[str]  # the one-epoch targets' labels, smallest first
    natural: tuple[str, str] | None  # (deduplicated target, its natural-data twin), labels
    replicates: dict[str, list[str]]  # base label -> [base, seed replicate labels...]
    main_ref: str | None  # the score column of the reference attack shown as ``ref``
    attacks: list[str]  # shown attack names, in the order asked for
    n_bootstrap: int = 1000
    seed: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    scale: dict = field(default_factory=dict)  # largest target's params and tokens seen (lab only)
    memo: dict = field(default_factory=dict, repr=False)  # paired effects, computed once per run

    @property
    def smallest(self) -> str:
        return self.targets[0]

    @property
    def largest(self) -> str:
        return self.targets[-1]

    def column(self, attack: str) -> str:
        """The score column behind a shown attack name."""
        return self.main_ref if attack == REF and self.main_ref else attack

    def cache_line(self) -> str:
        return f"signal cache: {self.cache_hits} texts read from disk, {self.cache_misses} computed"


# ----------------------------------------------------------------------------- scoring


def indexed(scores: pd.DataFrame) -> pd.DataFrame:
    """A ``score_benchmark`` frame (``is_member`` column, members first) indexed by
    (is_member, position within its side), the key that pairs the same text across frames."""
    member = scores["is_member"].astype(bool)
    pos = member.groupby(member).cumcount()
    out = scores.drop(columns="is_member")
    out.index = pd.MultiIndex.from_arrays([member.to_numpy(), pos.to_numpy()], names=["is_member", "pos"])
    return out


def evaluate_columns(frame: pd.DataFrame, *, n_bootstrap: int, seed: int) -> pd.DataFrame:
    """``metrics.evaluate`` of each column of an :func:`indexed` frame, on the texts it scored."""
    member = frame.index.get_level_values("is_member").to_numpy().astype(bool)
    rows = []
    for col in frame.columns:
        s = frame[col].to_numpy(dtype=float)
        ok = np.isfinite(s)
        rec = metrics.evaluate(s[member & ok], s[~member & ok], n_resamples=n_bootstrap, seed=seed)
        rows.append({"attack": col, **rec})
    return pd.DataFrame(rows)


def run(
    suite,
    *,
    split: str,
    attacks,
    min_k: float,
    n_samples,
    ne_samples,
    n_bootstrap: int,
    seed: int,
    window: int | None,
    stride: int | None,
    batch_size: int,
    cache: SignalCache | None = None,
    engine="local",
) -> MainRun:
    """Score every one-epoch target, the natural-data twin and every seed replicate of them on each
    domain's benchmark, and evaluate each attack. The reference attack runs with each reference of
    the suite; seed-0 lab targets other than the smallest also get the smallest target as a
    reference (the paper's Pythia-1.4B ablation); replicates get the suite's references only."""
    cache = cache or SignalCache.default()
    attacks = list(attacks)
    params = {"min_k": {"k": min_k}, "min_k_pp": {"k": min_k}}
    point = [a for a in attacks if a != NE]
    refs = {label: suite.model(r) for label, r in suite.references.items()}
    smallest = suite.targets[0]
    small_ref = "small-" + suite.label(smallest).replace("target-", "")
    bases = list(suite.targets) + list(suite.natural_twin.values())
    hits0, misses0 = cache.hits, cache.misses
    scores, rows, replicates = {}, [], {}
    for base in bases:
        names = [base] + suite.replicates(base)
        replicates[suite.label(base)] = [suite.label(n) for n in names]
        for i, name in enumerate(names):
            model_refs = dict(refs)
            if i == 0 and suite.lab is not None and base != smallest:
                model_refs[small_ref] = suite.model(smallest)
            for domain in suite.domains:
                bench = suite.benchmark(domain, split).subset(n_samples)
                kw = dict(cache=cache, window=window, stride=stride, batch_size=batch_size, engine=engine)
                frame = indexed(
                    score_benchmark(bench, suite.model(name), point, references=model_refs, attack_params=params, **kw)
                )
                if NE in attacks and bench.has_neighbors:
                    ne = indexed(score_benchmark(bench.subset(ne_samples), suite.model(name), [NE], **kw))
                    frame = frame.join(ne[NE])
                scores[(suite.label(name), domain)] = frame
                ev = evaluate_columns(frame, n_bootstrap=n_bootstrap, seed=seed)
                rows.append(
                    ev.assign(
                        target=suite.label(name),
                        base=suite.label(base),
                        seed_index=i,
                        domain=domain,
                        params=suite.params(name),
                    )
                )
    results = pd.concat(rows, ignore_index=True)
    lead = ["target", "base", "seed_index", "domain", "attack"]
    results = results[lead + [c for c in results.columns if c not in lead]]
    main_ref = f"ref:{next(iter(suite.references))}" if REF in attacks and suite.references else None
    natural = None
    if suite.natural_twin:
        dd, nat = next(iter(suite.natural_twin.items()))
        natural = (suite.label(dd), suite.label(nat))
    return MainRun(
        results,
        scores,
        [suite.label(t) for t in suite.targets],
        natural,
        replicates,
        main_ref,
        attacks,
        n_bootstrap,
        seed,
        cache.hits - hits0,
        cache.misses - misses0,
        scale_of(suite),
    )


def scale_of(suite) -> dict:
    """The largest target's parameter count, how many times smaller it is than Pythia-12B and, for a
    lab model, the tokens it saw in training (from the lab manifest) and the share of training
    documents the natural-data twin saw several times (from the lab config)."""
    largest = suite.targets[-1]
    p = suite.params(largest)
    out = {"params": int(p), "pythia_ratio": PYTHIA_LARGEST_PARAMS / p, "tokens_seen": None, "natural_fraction": None}
    if suite.lab is not None:
        meta = suite.lab.manifest["models"].get(Path(largest).name, {})
        out["tokens_seen"] = meta.get("tokens_seen")
        out["natural_fraction"] = (suite.lab.config.get("natural_duplication") or {}).get("fraction")
    return out


# ----------------------------------------------------------------------------- tables and figures


def shown(run: MainRun, *, replicas: bool = False) -> pd.DataFrame:
    """The one-epoch targets' rows with the main reference renamed ``ref`` and the other reference
    columns dropped (seed 0 only unless ``replicas``)."""
    r = run.results[run.results.base.isin(run.targets)]
    if not replicas:
        r = r[r.seed_index == 0]
    r = r[~r.attack.str.startswith("ref:") | (r.attack == run.main_ref)].copy()
    if run.main_ref:
        r["attack"] = r.attack.replace({run.main_ref: REF})
    return r


def auc_table(run: MainRun) -> pd.DataFrame:
    """Table 1 analogue: ``AUC [lo, hi]`` per (domain, target) and attack."""
    return report.auc_table(shown(run), index=["domain", "target"])


def tpr_table(run: MainRun) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 11 analogue: TPR at 1% FPR per (domain, target) and attack, and beside it the smallest
    FPR each attack can resolve per domain (1 / its number of non-members: the neighbourhood
    attack runs on fewer texts). The TPR table's last column: the members / non-members per row."""
    s = shown(run)
    tpr = s.pivot_table(index=["domain", "target"], columns="attack", values="tpr@1%fpr", sort=False)
    resolvable = s.pivot_table(index="domain", columns="attack", values="min_resolvable_fpr", aggfunc="max", sort=False)
    return report.with_n(tpr.round(3), s, ["domain", "target"]), resolvable.round(4)


def figure_auc_vs_size(run: MainRun):
    """Figure 1 / 12 analogue: AUC against parameters, one panel per domain."""
    return plots.plot_metric_vs(shown(run), x="params", hue="attack", col="domain", logx=True)


def roc_curves(run: MainRun, target: str, domain: str) -> dict:
    """``{attack: (fpr, tpr)}`` of the shown attacks for one model and domain."""
    frame = run.scores[(target, domain)]
    member = frame.index.get_level_values("is_member").to_numpy().astype(bool)
    curves = {}
    for attack in run.attacks:
        col = run.column(attack)
        if col not in frame.columns:
            continue
        s = frame[col].to_numpy(dtype=float)
        ok = np.isfinite(s)
        fpr, tpr, _ = metrics.roc(s[member & ok], s[~member & ok])
        curves[attack] = (fpr, tpr)
    return curves


def figure_roc(run: MainRun, domain: str | None = None):
    """Linear and log-log ROC of every attack against the largest target on one domain (the first)."""
    domain = domain or run.results.domain.iloc[0]
    return plots.plot_roc_panels(roc_curves(run, run.largest, domain), title=f"{run.largest} on {domain}")


def reference_table(run: MainRun) -> pd.DataFrame:
    """Table 6 analogue: AUC of the reference attack with each reference, per (domain, target)."""
    r = run.results[(run.results.seed_index == 0) & run.results.attack.str.startswith("ref:")]
    return r.pivot_table(index=["domain", "target"], columns="attack", values="auc", sort=False).round(3)


def figure_reference_ablation(run: MainRun):
    """Mean AUC over domains of the reference attack with each reference, against target size."""
    r = run.results[
        (run.results.seed_index == 0) & run.results.attack.str.startswith("ref:") & run.results.target.isin(run.targets)
    ]
    mean = r.groupby(["attack", "params"], as_index=False)[["auc", "auc_lo", "auc_hi"]].mean()
    mean["reference model"] = mean.attack.str.removeprefix("ref:")
    fig, ax = plt.subplots(figsize=(7, 4))
    plots.plot_metric_vs(mean, x="params", hue="reference model", ax=ax, logx=True)
    ax.set_ylabel("AUC, mean over domains")
    ax.set_title("Reference-based attack, by reference model")
    return plots.finish(fig)


# ----------------------------------------------------------------------------- paired effects and seeds


def _pair(run: MainRun, domain: str, a: tuple[str, str], b: tuple[str, str]) -> pd.DataFrame:
    """Columns ``a`` and ``b``: the two (model, attack) scores on the texts both scored."""
    x = run.scores[(a[0], domain)][run.column(a[1])]
    y = run.scores[(b[0], domain)][run.column(b[1])]
    return pd.concat([x.rename("a"), y.rename("b")], axis=1).dropna()


def paired(run: MainRun, domain: str, a: tuple[str, str], b: tuple[str, str]) -> metrics.PairedDifference:
    """AUC(a) - AUC(b), each a (model label, attack), paired on the texts both scored."""
    both = _pair(run, domain, a, b)
    m = both.index.get_level_values("is_member").to_numpy().astype(bool)
    return metrics.paired_auc_difference(
        both.a[m], both.a[~m], both.b[m], both.b[~m], n_resamples=run.n_bootstrap, seed=run.seed
    )


def point_difference(run: MainRun, domain: str, a: tuple[str, str], b: tuple[str, str]) -> float:
    """AUC(a) - AUC(b) on the texts both scored (no bootstrap)."""
    both = _pair(run, domain, a, b)
    m = both.index.get_level_values("is_member").to_numpy().astype(bool)
    return metrics.auc(both.a[m], both.a[~m]) - metrics.auc(both.b[m], both.b[~m])


def _replicated_targets(run: MainRun) -> list[str]:
    return [t for t in run.targets if len(run.replicates.get(t, [])) >= 2]


def _pooled(sds) -> float | None:
    """The root-mean-square of several seed sds (their variances averaged), or None if none."""
    v = [s for s in sds if s is not None]
    return float(np.sqrt(np.mean(np.square(v)))) if v else None


def auc_seed_sd(run: MainRun, model: str, domain: str, attack: str) -> tuple[float | None, int, str]:
    """(seed sd of AUC, seeds, "measured" | "estimated" | "none"). A model without replicates gets
    the pooled seed sd of the replicated one-epoch targets for the same (domain, attack)."""
    reps = run.replicates.get(model, [model])
    if len(reps) >= 2:
        return seed_sd([_auc(run, r, domain, attack) for r in reps]), len(reps), "measured"
    others = _replicated_targets(run)
    if not others:
        return None, 1, "none"
    sds = [auc_seed_sd(run, t, domain, attack)[0] for t in others]
    return _pooled(sds), len(run.replicates[others[0]]), "estimated"


def _auc(run: MainRun, model: str, domain: str, attack: str) -> float:
    r = run.results
    row = r[(r.target == model) & (r.domain == domain) & (r.attack == run.column(attack))]
    return float(row.auc.iloc[0])


def models_seed_sd(run: MainRun, domain: str, attack: str, a: str, b: str) -> tuple[float | None, int, str]:
    """Seed sd of AUC(a) - AUC(b) for one attack: measured (seed i of a against seed i of b) when both
    models have replicates, else sqrt(sd_a^2 + sd_b^2) with each sd from :func:`auc_seed_sd`."""
    ra, rb = run.replicates.get(a, [a]), run.replicates.get(b, [b])
    if len(ra) >= 2 and len(rb) >= 2:
        k = min(len(ra), len(rb))
        d = [point_difference(run, domain, (ra[i], attack), (rb[i], attack)) for i in range(k)]
        return seed_sd(d), k, "measured"
    (sa, na, _), (sb, nb, _) = auc_seed_sd(run, a, domain, attack), auc_seed_sd(run, b, domain, attack)
    if sa is None or sb is None:
        return None, 1, "none"
    return float(np.hypot(sa, sb)), max(na, nb), "estimated"


def attacks_seed_sd(run: MainRun, domain: str, model: str, a: str, b: str) -> tuple[float | None, int, str]:
    """Seed sd of AUC(attack a) - AUC(attack b) on one model: measured over its replicates, else the
    pooled seed sd of the same difference on the replicated one-epoch targets."""
    reps = run.replicates.get(model, [model])
    if len(reps) >= 2:
        return seed_sd([point_difference(run, domain, (r, a), (r, b)) for r in reps]), len(reps), "measured"
    others = _replicated_targets(run)
    if not others:
        return None, 1, "none"
    sds = [attacks_seed_sd(run, domain, t, a, b)[0] for t in others]
    return _pooled(sds), len(run.replicates[others[0]]), "estimated"


def _effect_row(run, domain, attack, a, b, sd_info) -> dict:
    d = paired(run, domain, a, b)
    sd, n_seeds, source = sd_info
    e = effect_from_paired(d, seed_sd=sd, n_seeds=n_seeds, label=f"{domain}/{attack}")
    return {
        "domain": domain,
        "attack": attack,
        "a": f"{a[0]}:{a[1]}",
        "b": f"{b[0]}:{b[1]}",
        "estimate": e.estimate,
        "lo": e.lo,
        "hi": e.hi,
        "seed_sd": sd,
        "n_seeds": n_seeds,
        "seed_sd_from": source,
        "n_members": d.n_members,
        "n_nonmembers": d.n_nonmembers,
    }


EFFECT_COLUMNS = [
    "domain",
    "attack",
    "a",
    "b",
    "estimate",
    "lo",
    "hi",
    "seed_sd",
    "n_seeds",
    "seed_sd_from",
    "n_members",
    "n_nonmembers",
]


def _domains(run: MainRun) -> list[str]:
    return list(dict.fromkeys(run.results.domain))


def _has(run: MainRun, model: str, domain: str, attack: str) -> bool:
    return (model, domain) in run.scores and run.column(attack) in run.scores[(model, domain)].columns


def size_effects(run: MainRun) -> pd.DataFrame:
    """Per (domain, attack): AUC(largest target) - AUC(smallest target) on the same texts, with the
    paired bootstrap interval and the seed sd of that difference. Empty with one target."""
    if "size_effects" not in run.memo:
        run.memo["size_effects"] = _size_effects(run)
    return run.memo["size_effects"].copy()


def _size_effects(run: MainRun) -> pd.DataFrame:
    if len(run.targets) < 2:
        return pd.DataFrame(columns=EFFECT_COLUMNS)
    rows = [
        _effect_row(
            run, d, att, (run.largest, att), (run.smallest, att), models_seed_sd(run, d, att, run.largest, run.smallest)
        )
        for d in _domains(run)
        for att in run.attacks
        if _has(run, run.largest, d, att) and _has(run, run.smallest, d, att)
    ]
    return pd.DataFrame(rows, columns=EFFECT_COLUMNS)


def dedup_effects(run: MainRun) -> pd.DataFrame:
    """Per (domain, attack): AUC(natural-data twin) - AUC(its deduplicated twin) on the same texts
    (positive = deduplication lowers the AUC). Empty without a natural-data twin."""
    if "dedup_effects" not in run.memo:
        run.memo["dedup_effects"] = _dedup_effects(run)
    return run.memo["dedup_effects"].copy()


def _dedup_effects(run: MainRun) -> pd.DataFrame:
    if run.natural is None:
        return pd.DataFrame(columns=EFFECT_COLUMNS)
    dd, nat = run.natural
    rows = [
        _effect_row(run, d, att, (nat, att), (dd, att), models_seed_sd(run, d, att, nat, dd))
        for d in _domains(run)
        for att in run.attacks
        if _has(run, nat, d, att) and _has(run, dd, d, att)
    ]
    return pd.DataFrame(rows, columns=EFFECT_COLUMNS)


def best_attack_effects(run: MainRun) -> pd.DataFrame:
    """Per (domain, other attack): AUC(ref) - AUC(other) against the largest target, paired on the
    texts both scored (the neighbourhood attack's subset for ``ne``). Empty without ``ref``."""
    if "best_attack_effects" not in run.memo:
        run.memo["best_attack_effects"] = _best_attack_effects(run)
    return run.memo["best_attack_effects"].copy()


def _best_attack_effects(run: MainRun) -> pd.DataFrame:
    if REF not in run.attacks or not run.main_ref:
        return pd.DataFrame(columns=EFFECT_COLUMNS)
    m = run.largest
    rows = [
        _effect_row(run, d, att, (m, REF), (m, att), attacks_seed_sd(run, d, m, REF, att))
        for d in _domains(run)
        for att in run.attacks
        if att != REF and _has(run, m, d, att) and _has(run, m, d, REF)
    ]
    return pd.DataFrame(rows, columns=EFFECT_COLUMNS)


def dedup_table(run: MainRun) -> pd.DataFrame:
    """AUC of the deduplicated target and its natural-data twin per (domain, attack), with the paired
    difference (natural - dedup), its interval and seed sd, and the texts each row rests on."""
    eff = dedup_effects(run)
    if eff.empty:
        return eff
    s = run.results[run.results.seed_index == 0]
    dd, nat = run.natural
    out = eff.set_index(["domain", "attack"])
    pair = s[s.target.isin([dd, nat])]
    pair = pair.assign(attack=pair.attack.replace({run.main_ref: REF})) if run.main_ref else pair
    for label in (dd, nat):
        out[label] = pair[pair.target == label].set_index(["domain", "attack"]).auc
    out["natural - dedup"] = [f"{e:+.3f} [{lo:+.3f}, {hi:+.3f}]" for e, lo, hi in zip(out.estimate, out.lo, out.hi)]
    return report.with_n(out[[dd, nat, "natural - dedup", "seed_sd"]].round(3), pair, ["domain", "attack"], "target")


def seed_spread(run: MainRun) -> pd.DataFrame:
    """Per (domain, attack): the AUC seed sd of each replicated model, their pooled value over the
    replicated one-epoch targets, the typical (median) bootstrap half-width of one AUC, and the
    half-width of the paired size difference (largest - smallest target on the same texts), and the
    texts each row rests on. Empty when no model has replicates."""
    replicated = [b for b, reps in run.replicates.items() if len(reps) >= 2]
    if not replicated:
        return pd.DataFrame()
    base = shown(run)
    size = size_effects(run).set_index(["domain", "attack"])
    rows = []
    for d in _domains(run):
        for att in run.attacks:
            if not _has(run, run.largest, d, att):
                continue
            row = {"domain": d, "attack": att}
            for b in replicated:
                row[f"seed sd {b}"] = auc_seed_sd(run, b, d, att)[0] if _has(run, b, d, att) else np.nan
            row["seed sd (pooled)"] = _pooled([auc_seed_sd(run, t, d, att)[0] for t in _replicated_targets(run)])
            g = base[(base.domain == d) & (base.attack == att)]
            row["bootstrap half-width"] = float(((g.auc_hi - g.auc_lo) / 2).median())
            if (d, att) in size.index:
                e = size.loc[(d, att)]
                row["paired half-width (size)"] = float((e.hi - e.lo) / 2)
            rows.append(row)
    table = pd.DataFrame(rows).set_index(["domain", "attack"]).astype(float).round(4)
    return report.with_n(table, base, ["domain", "attack"], "target")


# ----------------------------------------------------------------------------- verdicts and prose


def verdicts(run: MainRun) -> list:
    """The chapter's verdicts, in the order the prose refers to them (verdict_0 ... verdict_5)."""
    largest = shown(run)
    largest = largest[largest.target == run.largest]
    size, dedup, best = size_effects(run), dedup_effects(run), best_attack_effects(run)
    dd, nat = run.natural or ("", "")
    return [
        rules.near_random(largest, model=run.largest),
        rules.size_trend_reference(size, smallest=run.smallest, largest=run.largest),
        rules.size_trend_other_attacks(size, smallest=run.smallest, largest=run.largest),
        rules.dedup_reference(dedup, dedup=dd, natural=nat),
        rules.dedup_other_attacks(dedup, dedup=dd, natural=nat),
        rules.best_attack(best, model=run.largest),
    ]


def _fmt(x, spec: str, missing: str = "n/a") -> str:
    return missing if x is None or (isinstance(x, float) and not np.isfinite(x)) else format(x, spec)


def prose_numbers(run: MainRun) -> dict:
    """The numbers the chapter's prose states, formatted, by glue name."""
    s = shown(run)
    top = s[s.target == run.largest].sort_values("auc", ascending=False).iloc[0]
    spread = seed_spread(run)
    replicated = [b for b, reps in run.replicates.items() if len(reps) >= 2]
    per_model = (
        spread[[c for c in spread.columns if c.startswith("seed sd ") and "pooled" not in c]]
        if not spread.empty
        else pd.DataFrame()
    )
    tokens = run.scale.get("tokens_seen")
    return {
        "largest": run.largest,
        "largest_params_m": _fmt(run.scale.get("params", np.nan) / 1e6, ".2f"),
        "pythia_ratio": _fmt(run.scale.get("pythia_ratio"), ",.0f"),
        "tokens_seen_m": _fmt(tokens / 1e6 if tokens else None, ".2f", "unknown (not a lab model)"),
        "near_random_bound": f"{rules.NEAR_RANDOM_AUC:g}",
        "seed_z": f"{SEED_Z:g}",
        "natural_fraction": _fmt(
            100 * run.scale["natural_fraction"] if run.scale.get("natural_fraction") else None, ".0f"
        ),
        "frac_below_06": _fmt(100 * float((s[s.target == run.largest].auc < rules.NEAR_RANDOM_AUC).mean()), ".0f"),
        "n_members": str(int(s.n_members.max())),
        "best_attack": str(top.attack),
        "best_domain": str(top.domain),
        "best_auc": _fmt(float(top.auc), ".3f"),
        "seed_setup": (
            f"{max(len(run.replicates[b]) for b in replicated)} trained seeds each of " + ", ".join(replicated)
            if replicated
            else "one trained seed of each model (no replicates, so no seed spread to show)"
        ),
        "seed_sd_median": _fmt(float(spread["seed sd (pooled)"].median()) if not spread.empty else None, ".4f"),
        "seed_sd_max": _fmt(float(np.nanmax(per_model.to_numpy())) if not per_model.empty else None, ".3f"),
        "boot_hw_median": _fmt(float(s.eval("(auc_hi - auc_lo) / 2").median()), ".3f"),
        "paired_hw_median": _fmt(
            float(spread["paired half-width (size)"].median()) if "paired half-width (size)" in spread else None, ".3f"
        ),
    }


# ----------------------------------------------------------------------------- off-the-shelf reference


def offline_reference(
    suite,
    samples: int,
    *,
    split: str,
    n_bootstrap: int,
    seed: int,
    window: int | None,
    stride: int | None,
    cache: SignalCache | None = None,
) -> pd.DataFrame:
    """The reference attack with SmolLM2-135M (the only off-the-shelf reference available offline)
    beside the lab's own references, on the first ``samples`` pairs of each domain, for every
    one-epoch lab target. Empty when ``samples`` is 0 or the suite is not the lab's."""
    if not samples or suite.lab is None:
        return pd.DataFrame()
    from mimirlib.core.models import load_model
    from mimirlib.core.offline_models import smollm2_reference
    from mimirlib.core.scoring import evaluate_scores

    cache = cache or SignalCache.default()
    smol = load_model(str(smollm2_reference()), dtype="bfloat16")
    rows = []
    for target in suite.targets:
        refs = {label: suite.model(r) for label, r in suite.references.items()} | {"smollm2-135m": smol}
        for domain in suite.domains:
            bench = suite.benchmark(domain, split).subset(samples)
            s = score_benchmark(
                bench,
                suite.model(target),
                ["ref"],
                references=refs,
                cache=cache,
                window=window,
                stride=stride,
                batch_size=8,
            )
            ev = evaluate_scores(s, n_resamples=n_bootstrap, seed=seed)
            rows.append(ev.assign(domain=domain, target=suite.label(target)))
    return pd.concat(rows, ignore_index=True)


def offline_tables(offline: pd.DataFrame) -> list[pd.DataFrame]:
    """AUC per (domain, target) and reference, and the mean per reference; [] when skipped."""
    if offline.empty:
        return []
    pivot = offline.pivot_table(index=["domain", "target"], columns="attack", values="auc", sort=False).round(3)
    return [pivot, offline.groupby("attack")[["auc"]].mean().round(3).rename(columns={"auc": "mean AUC"})]


# ----------------------------------------------------------------------------- attacks after the paper

BASELINE = "loss"  # the second table's yardstick: the cheapest attack, scored on the same texts


@dataclass
class AfterPaperPlan:
    """What the attacks after the paper will run with, read and checked before any scoring:
    ``attacks`` that can run, ``skipped`` (attack -> why not), the ReCaLL prefix per domain and the
    DC-PDD frequency corpus, with where each came from."""

    attacks: list[str]
    skipped: dict
    prefix: dict  # domain -> prefix texts (known non-members, disjoint from every benchmark text)
    corpus: list[str] | None
    prefix_source: str
    corpus_source: str
    prefix_tokens: int | None = None
    grad_params: str | None = None
    dc_pdd_a: float = 0.01


def plan_after_paper(
    suite,
    *,
    attacks,
    prefix_shots: int,
    prefix_tokens: int | None = None,
    prefix_file: str | None = None,
    frequency_file: str | None = None,
    grad_params: str | None = None,
    dc_pdd_a: float = 0.01,
) -> AfterPaperPlan:
    """The prefix and corpus the attacks after the paper need. The lab's: its reference pool (the
    documents its disjoint reference model trained on, never a benchmark text), the first
    ``prefix_shots`` of each domain as that domain's ReCaLL prefix, all of it as DC-PDD's corpus.
    Elsewhere: the texts of ``prefix_file`` / ``frequency_file`` (jsonl, csv or parquet, column
    ``text``); an attack without its input is skipped, with the reason. Raises ValueError naming an
    unknown attack, a paper attack, or a bad count."""
    from mimirlib.core.attacks import get_attack, needs_extra
    from mimirlib.audit import load_member_file
    from mimirlib.core.scoring_extra import missing_input

    attacks = list(attacks or [])
    for a in attacks:
        get_attack(a)  # KeyError naming it when unknown
        if not needs_extra(a):
            raise ValueError(f"after_attacks: {a!r} is one of the paper's attacks (the first table has it)")
    if isinstance(prefix_shots, bool) or not isinstance(prefix_shots, int) or prefix_shots < 1:
        raise ValueError(f"recall_shots must be a positive integer, got {prefix_shots!r}")
    kept = f"the last {prefix_tokens} tokens" if prefix_tokens else "the last half-window of tokens"
    if prefix_file:
        shots = load_member_file(prefix_file)[:prefix_shots]
        prefix, prefix_source = (
            {d: shots for d in suite.domains},
            f"{kept} of the first {len(shots)} texts of {prefix_file}",
        )
    elif suite.lab is not None:
        prefix = {d: suite.lab.pool_texts("reference", [d])[:prefix_shots] for d in suite.domains}
        prefix_source = f"{kept} of the first {prefix_shots} documents of the domain's reference pool"
    else:
        prefix, prefix_source = {}, "none given"
    if frequency_file:
        corpus, corpus_source = load_member_file(frequency_file), str(frequency_file)
    elif suite.lab is not None:
        corpus = suite.lab.pool_texts("reference")
        corpus_source = f"the lab's reference pool ({len(corpus)} documents, every domain)"
    else:
        corpus, corpus_source = None, "none given"
    skipped, ok = {}, []
    for a in attacks:
        why = missing_input(a, prefix_texts=prefix.get(suite.domains[0]) if prefix else None, frequency_corpus=corpus)
        if why:
            skipped[a] = why
        else:
            ok.append(a)
    return AfterPaperPlan(
        ok, skipped, prefix, corpus, prefix_source, corpus_source, prefix_tokens, grad_params, dc_pdd_a
    )


@dataclass
class AfterPaperRun:
    """The attacks after the paper against the one-epoch targets: ``results`` one row per (target,
    domain, attack column, LOSS included) as :func:`evaluate_columns`; ``scores`` (target label,
    domain) -> an :func:`indexed` frame; ``costs`` one row per (target, domain, attack)."""

    plan: AfterPaperPlan
    results: pd.DataFrame
    scores: dict
    costs: pd.DataFrame
    targets: list[str]
    n_bootstrap: int = 1000
    seed: int = 0

    @property
    def largest(self) -> str:
        return self.targets[-1]


def after_paper(
    suite,
    plan: AfterPaperPlan,
    *,
    split: str,
    n_samples,
    n_bootstrap: int,
    seed: int,
    window: int | None,
    stride: int | None,
    batch_size: int,
    cache: SignalCache | None = None,
) -> AfterPaperRun:
    """Score LOSS and each planned attack after the paper on the one-epoch targets (no replicates,
    no natural twin: the second table is the first table's companion), per domain, on the first
    ``n_samples`` pairs. ReCaLL's prefix is checked disjoint from the scored texts (it raises if not)."""
    from mimirlib.core.scoring_extra import score_extra

    cache = cache or SignalCache.default()
    rows, costs, scores = [], [], {}
    kw = dict(cache=cache, window=window, stride=stride, batch_size=batch_size)
    for name in suite.targets:
        label, model = suite.label(name), suite.model(name)
        for domain in suite.domains:
            bench = suite.benchmark(domain, split).subset(n_samples)
            frame = score_benchmark(bench, model, [BASELINE], **kw)
            if plan.attacks:
                extra = score_extra(
                    bench.texts(),
                    model,
                    plan.attacks,
                    prefix_texts=plan.prefix.get(domain),
                    frequency_corpus=plan.corpus,
                    grad_params=plan.grad_params,
                    prefix_tokens=plan.prefix_tokens,
                    attack_params={"dc_pdd": {"a": plan.dc_pdd_a}},
                    desc=f"{domain} {label}",
                    **kw,
                )
                frame = pd.concat([frame, extra.scores], axis=1)
                costs.append(extra.costs.assign(target=label, domain=domain))
            frame = indexed(frame)
            scores[(label, domain)] = frame
            ev = evaluate_columns(frame, n_bootstrap=n_bootstrap, seed=seed)
            rows.append(ev.assign(target=label, domain=domain, params=suite.params(name)))
    cost = pd.concat(costs, ignore_index=True) if costs else pd.DataFrame()
    return AfterPaperRun(
        plan,
        pd.concat(rows, ignore_index=True),
        scores,
        cost,
        [suite.label(t) for t in suite.targets],
        n_bootstrap,
        seed,
    )


def after_paper_table(after: AfterPaperRun) -> pd.DataFrame:
    """The second table: ``AUC [lo, hi]`` per (domain, target) of LOSS and each attack after the paper."""
    return report.auc_table(after.results, index=["domain", "target"])


def after_paper_costs(after: AfterPaperRun) -> pd.DataFrame:
    """Per attack: milliseconds per computed text for each target, total seconds in this run, texts
    computed (0 when every input came from the cache), and what it runs."""
    if after.costs.empty:
        return pd.DataFrame()
    c = after.costs.groupby(["attack", "target"], sort=False)[["seconds", "computed"]].sum()
    per_text = (1000 * c.seconds / c.computed.where(c.computed > 0)).unstack("target")[after.targets]
    per_text.columns = [f"ms per text, {t}" for t in per_text.columns]
    total = after.costs.groupby("attack", sort=False).agg(
        seconds=("seconds", "sum"), computed=("computed", "sum"), what=("what", "first")
    )
    return per_text.join(total).round(1)


def after_paper_vs_loss(after: AfterPaperRun) -> pd.DataFrame:
    """Per (domain, attack) against the largest target: AUC(attack) - AUC(LOSS) on the same texts with
    its paired 95% interval, and the reading (:func:`mimirlib.verdicts.main_results.versus_loss`)."""
    out = []
    for (label, domain), frame in after.scores.items():
        if label != after.largest:
            continue
        m = frame.index.get_level_values("is_member").to_numpy().astype(bool)
        base = frame[BASELINE].to_numpy(dtype=float)
        for attack in after.plan.attacks:
            s = frame[attack].to_numpy(dtype=float)
            d = metrics.paired_auc_difference(
                s[m], s[~m], base[m], base[~m], n_resamples=after.n_bootstrap, seed=after.seed
            )
            out.append(
                {
                    "domain": domain,
                    "attack": attack,
                    "AUC - AUC(loss)": f"{d.point:+.3f} [{d.lo:+.3f}, {d.hi:+.3f}]",
                    "estimate": d.point,
                    "lo": d.lo,
                    "hi": d.hi,
                    "reading": rules.versus_loss(d.lo, d.hi),
                }
            )
    return pd.DataFrame(out, columns=["domain", "attack", "AUC - AUC(loss)", "estimate", "lo", "hi", "reading"])


def after_paper_numbers(after: AfterPaperRun) -> dict:
    """The numbers the second table's prose states, formatted, by glue name: each attack's ms per
    computed text against the largest target (or why it did not run), the section's total seconds,
    and where the gradient norm is worth its backward pass."""
    out = {}
    costs = after.costs[after.costs.target == after.largest] if not after.costs.empty else after.costs
    for attack in ("recall", "dc_pdd", "grad_norm"):
        if attack in after.plan.skipped:
            out[f"after_{attack}_ms"] = f"not run ({after.plan.skipped[attack]})"
        elif attack not in after.plan.attacks:
            out[f"after_{attack}_ms"] = "not run (not asked for)"
        else:
            c = costs[costs.attack == attack]
            n = int(c.computed.sum())
            out[f"after_{attack}_ms"] = (
                f"{1000 * c.seconds.sum() / n:.1f} ms per text ({n} texts)" if n else "read from the cache (no pass)"
            )
    out["after_seconds"] = _fmt(float(after.costs.seconds.sum()) if not after.costs.empty else 0.0, ".0f")
    vs = after_paper_vs_loss(after)
    g = vs[vs.attack == "grad_norm"].set_index("domain").reading
    out["grad_norm_worth"] = rules.worth_its_cost(g) if len(g) else "not measured in this run"
    out["after_prefix_source"] = after.plan.prefix_source
    out["after_corpus_source"] = after.plan.corpus_source
    return out
