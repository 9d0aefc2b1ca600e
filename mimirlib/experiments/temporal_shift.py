"""MIMIR §4 (temporal shift): members against same-period and later-dated non-members, as tidy frames.

One set of members is scored against the *natural* non-members (same period) and against later
non-members. :func:`run`: :func:`load` resolves the benchmarks, :func:`score` runs every attack on
every target (and seed replicate) plus the model-free blind baseline, and the functions below give
the Table 3/5 analogues, the Figure 6 curve, the Figure 4/8 overlaps, and the paired differences
the verdicts (:func:`verdicts`, :mod:`mimirlib.verdicts.temporal_shift`) are decided on.

The benchmarks share their members, not their non-members: split-vs-split comparisons resample the shared members
jointly, each non-member set on its own (``metrics.paired_auc_difference(..., paired_nonmembers=False)``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from mimirlib.core import metrics, ngrams
from mimirlib.core.data import Benchmark
from mimirlib.core.scoring import member_nonmember
from mimirlib.core.signals import ScoringOptions, SignalCache, cache_note
from mimirlib.display import report
from mimirlib.experiments.benchmark_scores import BASELINE, SuiteScorer, blind_record, blind_scores
from mimirlib.experiments.params import Params
from mimirlib.experiments.suite import Suite, suite_for
from mimirlib.verdicts import Verdict, split_paper_attacks
from mimirlib.verdicts import regime as fidelity
from mimirlib.verdicts import temporal_shift as rules

NATURAL = "natural"  # the name of the same-period benchmark in every frame


# ----------------------------------------------------------------------------- benchmarks


@dataclass
class Benchmarks:
    """The natural benchmark and the shifted ones, oldest first (``order``: natural first)."""

    suite: Suite
    domain: str
    benches: dict[str, Benchmark]

    @property
    def order(self) -> list[str]:
        return list(self.benches)

    @property
    def shifted(self) -> list[str]:
        return self.order[1:]

    def sizes(self) -> pd.DataFrame:
        return pd.DataFrame(
            [
                {"benchmark": k, "members": len(b.members), "non-members": len(b.nonmembers)}
                for k, b in self.benches.items()
            ]
        ).set_index("benchmark")


def load(
    suite: Suite,
    *,
    domain=None,
    natural_split: str = "ngram_13_0.8",
    shifted_config=None,
    shifted_splits=None,
    n_samples=None,
) -> Benchmarks:
    """The suite's benchmarks; ``None`` parameters mean the lab's dated domain and later bins."""
    lab = suite.lab
    if domain is None:
        domain = lab.config["temporal"]["domain"]
    if shifted_splits is None:
        shifted_splits = [f"temporal_{b['name']}" for b in lab.config["temporal"]["bins"]]
    if NATURAL in shifted_splits:
        raise ValueError(f"shifted_splits: {NATURAL!r} is the same-period benchmark's name, not a shifted split")
    shifted_config = shifted_config or domain
    benches = {NATURAL: suite.benchmark(domain, natural_split).subset(n_samples)}
    benches |= {s: suite.benchmark(shifted_config, s).subset(n_samples) for s in shifted_splits}
    return Benchmarks(suite, domain, benches)


def seed_replicates(suite: Suite, target: str) -> list[str]:
    """Paths of ``target``'s independently trained seed replicates (the lab's), without ``target``;
    empty for a model named by hub id or path outside the lab."""
    lab = suite.lab
    if lab is None or not Path(target).is_dir() or Path(target).resolve() != lab.model_dir(Path(target).name).resolve():
        return []
    reps = [str(lab.model_dir(n)) for n in lab.seed_replicates(Path(target).name)[1:]]
    return [r for r in reps if Path(r).is_dir()]


def shared_members(a: Benchmark, b: Benchmark) -> tuple[np.ndarray, np.ndarray]:
    """Indices ``(ia, ib)`` of the member texts the two benchmarks share, in ``a``'s order."""
    where = {t: i for i, t in enumerate(b.members)}
    pairs = [(i, where[t]) for i, t in enumerate(a.members) if t in where]
    ia, ib = (np.array(x, dtype=int) for x in zip(*pairs)) if pairs else (np.array([], int), np.array([], int))
    return ia, ib


# ----------------------------------------------------------------------------- scoring


@dataclass
class ScoreRun:
    """Per-text scores and AUCs of every (model, benchmark), and the blind baseline's.

    ``scores[(model_label, benchmark)]``: one row per text (members first), ``is_member`` and one
    column per attack (the first reference model's column is ``ref``). ``replicates[target]``
    lists the labels of a target's seed replicates (scored like it). ``results`` holds the main
    targets' AUCs; ``seed_results`` every model's, with the target it replicates.
    """

    benchmarks: Benchmarks
    targets: list[str]  # labels, smallest first
    attacks: list[str]  # score columns the chapter decides on (secondary reference models left out)
    scores: dict
    replicates: dict
    results: pd.DataFrame
    seed_results: pd.DataFrame
    blind: pd.DataFrame
    blind_scores: dict
    n_resamples: int
    seed: int

    @property
    def largest(self) -> str:
        return self.targets[-1]

    @property
    def latest(self) -> str:
        return self.benchmarks.order[-1]

    @property
    def earliest(self) -> str:
        return self.benchmarks.shifted[0]


def score(
    b: Benchmarks,
    attacks: Sequence[str],
    *,
    attack_params=None,
    options: ScoringOptions | None = None,
    n_bootstrap: int = 1000,
    seed: int = 0,
    blind_folds: int = 5,
) -> ScoreRun:
    """Score every target and its seed replicates on every benchmark; the blind baseline's
    out-of-fold scores on every benchmark. AUCs with bootstrap intervals for the main targets."""
    suite = b.suite
    scorer = SuiteScorer(suite, attacks, attack_params=attack_params, options=options)
    scores, replicates, rows, seed_rows = {}, {}, [], []
    for target in suite.targets:
        label = suite.label(target)
        reps = seed_replicates(suite, target)
        replicates[label] = [suite.label(r) for r in reps]
        for model in [target] + reps:
            for name, bench in b.benches.items():
                s = scores[(suite.label(model), name)] = scorer(bench, model)
                for col in (c for c in s.columns if c != "is_member"):
                    m, n = member_nonmember(s, col)
                    rec = {"target": label, "model": suite.label(model), "benchmark": name, "attack": col}
                    if model == target:
                        ev = metrics.evaluate(m, n, n_resamples=n_bootstrap, seed=seed)
                        rows.append(rec | ev | {"params": suite.params(target)})
                    seed_rows.append(rec | {"auc": metrics.auc(m, n)})
    blind_frames = {name: blind_scores(bench, blind_folds, seed) for name, bench in b.benches.items()}
    blind_rows = [
        {"benchmark": name, "attack": BASELINE, **blind_record(f, n_bootstrap, seed)}
        for name, f in blind_frames.items()
    ]
    first = next(iter(scores.values()))
    decided = [c for c in first.columns if c != "is_member" and not c.startswith("ref:")]
    return ScoreRun(
        b,
        [suite.label(t) for t in suite.targets],
        decided,
        scores,
        replicates,
        pd.DataFrame(rows),
        pd.DataFrame(seed_rows),
        pd.DataFrame(blind_rows),
        blind_frames,
        int(n_bootstrap),
        int(seed),
    )


# ----------------------------------------------------------------------------- tables and curves


def table3(run: ScoreRun) -> pd.DataFrame:
    """AUC per (benchmark, target) and attack on the natural and the latest benchmark, with the
    blind baseline (model-free, hence the same for every target) next, and the members /
    non-members each row rests on as the last column."""
    r = run.results
    shown = r[r.benchmark.isin([NATURAL, run.latest])]
    tab = shown.pivot_table(index=["benchmark", "target"], columns="attack", values="auc", sort=False)
    blind = run.blind.set_index("benchmark").auc
    tab["baseline (no model)"] = [float(blind[bench]) for bench, _ in tab.index]
    return report.with_n(tab, shown, ["benchmark", "target"])


def auc_curve(run: ScoreRun, target: str | None = None) -> pd.DataFrame:
    """AUC with its interval per (benchmark, attack) for one target (default: the largest), the
    blind baseline included; ``benchmark`` is ordered natural first, then later and later."""
    target = target or run.largest
    cols = ["benchmark", "attack", "auc", "auc_lo", "auc_hi"]
    r = run.results
    curve = pd.concat([r[(r.target == target) & r.attack.isin(run.attacks)][cols], run.blind[cols]], ignore_index=True)
    curve["benchmark"] = pd.Categorical(curve.benchmark, categories=run.benchmarks.order, ordered=True)
    return curve


def table5(run: ScoreRun, fpr_targets: Sequence[float], target: str | None = None) -> pd.DataFrame:
    """Thresholds set at each FPR budget on each shifted benchmark's non-members, applied to the
    natural non-members: one row per (benchmark, budget, attack) with the count of natural
    non-members flagged (``false_positives`` of ``n_natural``), that FPR, and how many shifted
    non-members lie above the threshold (``shifted_above``; the threshold is the shifted set's
    ``shifted_above + 1``-th largest score, which the verdict's exchangeability test needs)."""
    target = target or run.largest
    nat = run.scores[(target, NATURAL)]
    rows = []
    for name in run.benchmarks.shifted:
        s = run.scores[(target, name)]
        for col in run.attacks:
            _, shifted_non = member_nonmember(s, col)
            _, natural_non = member_nonmember(nat, col)
            for f in fpr_targets:
                thr = metrics.threshold_at_fpr(shifted_non, f)
                k = int(np.count_nonzero(natural_non > thr))
                rows.append(
                    {
                        "benchmark": name,
                        "budget": float(f),
                        "attack": col,
                        "threshold": thr,
                        "false_positives": k,
                        "n_natural": int(natural_non.size),
                        "n_shifted": int(shifted_non.size),
                        "shifted_above": int(np.count_nonzero(shifted_non > thr)),
                        "fpr": k / natural_non.size,
                    }
                )
    return pd.DataFrame(rows)


TABLE5_N = ("n (non-members)", "natural / shifted")  # Table 5 view's sample-size column


def table5_view(t5: pd.DataFrame) -> pd.DataFrame:
    """Table 5's layout: FPR on the natural non-members in %, rows benchmarks, columns (budget, attack),
    and last the non-members each row rests on (natural, where the FPR is read / shifted, where the
    threshold is set)."""
    v = t5.assign(**{"target FPR": t5.budget.map(lambda f: f"{f:.0%}"), "FPR on natural (%)": 100 * t5.fpr})
    table = v.pivot_table(index="benchmark", columns=["target FPR", "attack"], values="FPR on natural (%)", sort=False)
    sizes = t5.groupby("benchmark", sort=False)[["n_natural", "n_shifted"]].first()
    table[TABLE5_N] = [f"{sizes.n_natural[b]} / {sizes.n_shifted[b]}" for b in table.index]
    return table


# ----------------------------------------------------------------------------- n-gram overlap


def overlaps(b: Benchmarks, n: int) -> dict[str, np.ndarray]:
    """Each benchmark's non-members' word ``n``-gram overlap with the training data (the lab's
    whole training pool; on real data the natural benchmark's members stand in for it)."""
    lab = b.suite.lab
    corpus = lab.pool_texts("train") if lab is not None else list(b.benches[NATURAL].members)
    index = ngrams.NgramIndex.build(corpus, n, mode="exact")
    return {name: index.overlaps(list(bench.nonmembers)) for name, bench in b.benches.items()}


def overlap_summary(ov: dict[str, np.ndarray]) -> pd.DataFrame:
    return pd.DataFrame({name: {"mean": v.mean(), "median": np.median(v), "n": v.size} for name, v in ov.items()}).T


def mean_difference(a, b, n_resamples: int = 1000, seed: int = 0, confidence: float = 0.95):
    """``mean(a) - mean(b)`` of two independent samples with a percentile-bootstrap interval
    (each resampled on its own); returns ``(point, lo, hi)``."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.size == 0 or b.size == 0:
        raise ValueError(f"mean_difference: empty sample ({a.size} and {b.size} values)")
    rng = np.random.default_rng(seed)
    d = a[rng.integers(0, a.size, (n_resamples, a.size))].mean(axis=1) - b[
        rng.integers(0, b.size, (n_resamples, b.size))
    ].mean(axis=1)
    alpha = 1.0 - confidence
    lo, hi = np.quantile(d, [alpha / 2, 1 - alpha / 2])
    return float(a.mean() - b.mean()), float(lo), float(hi)


def overlap_drops(ov: dict[str, np.ndarray], n_resamples: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Per shifted benchmark: mean overlap of the natural non-members minus its own, with a
    bootstrap interval (different texts: resampled independently)."""
    nat = ov[NATURAL]
    rows = []
    for name, v in ov.items():
        if name == NATURAL:
            continue
        d, lo, hi = mean_difference(nat, v, n_resamples, seed)
        rows.append(
            {
                "benchmark": name,
                "natural_mean": float(nat.mean()),
                "shifted_mean": float(v.mean()),
                "drop": d,
                "lo": lo,
                "hi": hi,
                "n_natural": int(nat.size),
                "n_shifted": int(v.size),
            }
        )
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- paired differences


def unpaired_auc_difference(
    am, an, bm, bn, n_resamples: int = 1000, seed: int = 0, confidence: float = 0.95
) -> metrics.PairedDifference:
    """AUC(a) - AUC(b) when a and b share no texts: all four sets resampled independently (the
    fallback for benchmarks whose members differ, e.g. separately drawn real-data splits)."""
    am, an, bm, bn = (np.asarray(x, dtype=float) for x in (am, an, bm, bn))
    rng = np.random.default_rng(seed)

    def draw(x):
        return x[rng.integers(0, x.size, x.size)]

    diffs = np.array([metrics.auc(draw(am), draw(an)) - metrics.auc(draw(bm), draw(bn)) for _ in range(n_resamples)])
    alpha = 1.0 - confidence
    lo, hi = np.quantile(diffs, [alpha / 2, 1 - alpha / 2])
    return metrics.PairedDifference(
        metrics.auc(am, an) - metrics.auc(bm, bn), float(lo), float(hi), int(am.size), int(an.size), int(n_resamples)
    )


def split_difference(
    sa: pd.DataFrame, sb: pd.DataFrame, col: str, ia, ib, n_resamples: int = 1000, seed: int = 0
) -> tuple[metrics.PairedDifference, bool]:
    """AUC on benchmark a minus AUC on benchmark b for one score column: paired over the shared
    members ``ia``/``ib`` (non-members resampled independently), or unpaired when none are
    shared. Returns the difference and whether it was paired."""
    am, an = member_nonmember(sa, col)
    bm, bn = member_nonmember(sb, col)
    if len(ia):
        return metrics.paired_auc_difference(
            am[ia], an, bm[ib], bn, n_resamples=n_resamples, seed=seed, paired_nonmembers=False
        ), True
    return unpaired_auc_difference(am, an, bm, bn, n_resamples=n_resamples, seed=seed), False


def _point_difference(sa, sb, col, ia, ib) -> float:
    am, an = member_nonmember(sa, col)
    bm, bn = member_nonmember(sb, col)
    if len(ia):
        am, bm = am[ia], bm[ib]
    return metrics.auc(am, an) - metrics.auc(bm, bn)


def auc_differences(run: ScoreRun, a: str, b: str, targets: Sequence[str] | None = None) -> pd.DataFrame:
    """AUC(benchmark a) - AUC(benchmark b) per (target, attack): the main seed's paired bootstrap
    interval, and the standard deviation of the same difference across the target's seed
    replicates (``seed_sd``; NaN with one seed). One row per unit, tidy."""
    ia, ib = shared_members(run.benchmarks.benches[a], run.benchmarks.benches[b])
    rows = []
    for target in targets or run.targets:
        models = [target] + run.replicates.get(target, [])
        for col in run.attacks:
            d, paired = split_difference(
                run.scores[(target, a)], run.scores[(target, b)], col, ia, ib, run.n_resamples, run.seed
            )
            per_seed = [_point_difference(run.scores[(m, a)], run.scores[(m, b)], col, ia, ib) for m in models]
            rows.append(
                {
                    "target": target,
                    "attack": col,
                    "a": a,
                    "b": b,
                    "diff": d.point,
                    "lo": d.lo,
                    "hi": d.hi,
                    "seed_sd": float(np.std(per_seed, ddof=1)) if len(models) > 1 else np.nan,
                    "n_seeds": len(models),
                    "paired": paired,
                    "n_members": d.n_members,
                    "n_nonmembers_a": len(run.benchmarks.benches[a].nonmembers),
                    "n_nonmembers_b": len(run.benchmarks.benches[b].nonmembers),
                }
            )
    return pd.DataFrame(rows)


def shift_gains(run: ScoreRun) -> pd.DataFrame:
    """Table 3's comparison: AUC with the latest shifted non-members minus AUC with the natural ones."""
    return auc_differences(run, run.latest, NATURAL)


def lateness_trend(run: ScoreRun) -> pd.DataFrame:
    """Figure 6's comparison: AUC with the latest shifted non-members minus AUC with the earliest
    shifted ones; empty with a single shifted benchmark (nothing to compare)."""
    if len(run.benchmarks.shifted) < 2:
        return pd.DataFrame()
    return auc_differences(run, run.latest, run.earliest)


def differences_view(d: pd.DataFrame) -> pd.DataFrame:
    """A differences frame for reading: one row per target, ``diff [lo, hi]`` per attack."""
    cell = d.apply(lambda r: f"{r['diff']:+.3f} [{r.lo:+.3f}, {r.hi:+.3f}]", axis=1)
    return d.assign(cell=cell).pivot(index="target", columns="attack", values="cell").loc[d.target.unique()]


@dataclass(frozen=True)
class BlindComparison:
    """The blind baseline on the latest benchmark against itself on the natural one (``rise``)
    and against the best attack on the largest target (``vs_best``), both paired differences."""

    rise: metrics.PairedDifference
    vs_best: metrics.PairedDifference
    blind_natural: float
    blind_latest: float
    best_attack: str
    best_latest: float
    target: str
    latest: str
    n_members: int
    n_nonmembers: int


def blind_comparison(run: ScoreRun, target: str | None = None) -> BlindComparison:
    """How the model-free classifier fares: its rise from the natural to the latest benchmark
    (shared members, different non-members) and its AUC minus the best attack's on the latest
    benchmark (the same texts on both sides)."""
    target, latest = target or run.largest, run.latest
    ia, ib = shared_members(run.benchmarks.benches[latest], run.benchmarks.benches[NATURAL])
    rise, _ = split_difference(
        run.blind_scores[latest], run.blind_scores[NATURAL], BASELINE, ia, ib, run.n_resamples, run.seed
    )
    r = run.results
    on_latest = r[(r.target == target) & (r.benchmark == latest) & r.attack.isin(run.attacks)].set_index("attack").auc
    best = str(on_latest.idxmax())
    bm, bn = member_nonmember(run.blind_scores[latest], BASELINE)
    am, an = member_nonmember(run.scores[(target, latest)], best)
    vs = metrics.paired_auc_difference(bm, bn, am, an, n_resamples=run.n_resamples, seed=run.seed)
    blind = run.blind.set_index("benchmark").auc
    return BlindComparison(
        rise,
        vs,
        float(blind[NATURAL]),
        float(blind[latest]),
        best,
        float(on_latest[best]),
        target,
        latest,
        int(bm.size),
        int(bn.size),
    )


def seed_spread(run: ScoreRun) -> pd.DataFrame:
    """Seed-to-seed standard deviation of each replicated target's AUC per benchmark (median over
    attacks), beside the median bootstrap half-width of the main seed's AUC: what a reader should
    use to compare two models on the same texts (the seed sd) and what says which texts were
    drawn (the interval)."""
    s = run.seed_results
    if s.empty or not any(run.replicates.values()):
        return pd.DataFrame(columns=["target", "benchmark", "n_seeds", "seed_sd", "bootstrap_half_width"])
    sd = (
        s[s.attack.isin(run.attacks)].groupby(["target", "benchmark", "attack"]).auc.agg(["std", "count"]).reset_index()
    )
    sd = (
        sd[sd["count"] > 1]
        .groupby(["target", "benchmark"], sort=False)
        .agg(seed_sd=("std", "median"), n_seeds=("count", "max"))
        .reset_index()
    )
    r = run.results[run.results.attack.isin(run.attacks)]
    hw = (
        r.assign(hw=(r.auc_hi - r.auc_lo) / 2)
        .groupby(["target", "benchmark"])
        .hw.median()
        .rename("bootstrap_half_width")
        .reset_index()
    )
    return sd.merge(hw, on=["target", "benchmark"])[
        ["target", "benchmark", "n_seeds", "seed_sd", "bootstrap_half_width"]
    ]


def headline(
    run: ScoreRun,
    gains: pd.DataFrame,
    trend: pd.DataFrame,
    drops: pd.DataFrame,
    t5: pd.DataFrame,
    blind: BlindComparison,
) -> dict:
    """The numbers the chapter's prose quotes (each glued under its key), over MIMIR's attacks as the verdicts."""
    gains, trend, t5 = (split_paper_attacks(x)[0] for x in (gains, trend, t5))
    f0 = t5.budget.min()
    return {
        "latest": run.latest,
        "earliest": run.earliest,
        "largest": run.largest,
        "gain_median": float(gains["diff"].median()),
        "trend_median": float(trend["diff"].median()) if not trend.empty else float("nan"),
        "overlap_natural": 100 * float(drops.natural_mean.iloc[0]),
        "overlap_latest": 100 * float(drops.shifted_mean.iloc[-1]),
        "budget_min": 100 * float(f0),
        "fpr_min_budget_median": 100 * float(t5[t5.budget == f0].fpr.median()),
        "n_natural": int(t5.n_natural.iloc[0]),
        "blind_nat": blind.blind_natural,
        "blind_latest": blind.blind_latest,
        "best_latest": blind.best_latest,
        "best_attack": blind.best_attack,
    }


# ----------------------------------------------------------------------------- the chapter


@dataclass
class Run:
    """Everything the chapter shows, computed by :func:`run` in the chapter's order."""

    params: Params
    benchmarks: Benchmarks
    scored: ScoreRun
    gains: pd.DataFrame  # :func:`shift_gains`
    trend: pd.DataFrame  # :func:`lateness_trend`
    overlaps: dict[str, np.ndarray]  # :func:`overlaps` at the chapter's ``overlap_n``
    drops: pd.DataFrame  # :func:`overlap_drops`
    t5: pd.DataFrame  # :func:`table5` at the chapter's ``fpr_targets``
    blind: BlindComparison
    cache_note: str = ""

    @property
    def largest(self) -> str:
        return self.scored.largest

    def prose_numbers(self) -> dict:
        """:func:`headline`'s numbers and the chapter's ``overlap_n``, each glued under its key."""
        h = headline(self.scored, self.gains, self.trend, self.drops, self.t5, self.blind)
        return h | {"overlap_n": self.params.overlap_n}


def run(p: Params, suite: Suite | None = None) -> Run:
    """The chapter: the benchmarks, every model scored on each, then the differences, overlaps,
    thresholds and the blind baseline's comparison, in the order the page shows them."""
    # the chapter names one ``domain``; the suite takes a list of them
    suite = suite or suite_for(p.replace(domains=[p.domain] if p.domain else None))
    b = load(
        suite,
        domain=p.domain,
        natural_split=p.natural_split,
        shifted_config=p.shifted_config,
        shifted_splits=p.shifted_splits,
        n_samples=p.n_samples,
    )
    cache = SignalCache.default()
    scored = score(
        b,
        p.attacks,
        attack_params=p.attack_params(),
        options=p.scoring(cache=cache),
        n_bootstrap=p.n_bootstrap,
        seed=p.seed,
        blind_folds=p.blind_folds,
    )
    note = cache_note(cache.hits, cache.misses)
    gains, trend = shift_gains(scored), lateness_trend(scored)
    ov = overlaps(b, p.overlap_n)
    drops = overlap_drops(ov, p.n_bootstrap, p.seed)
    t5 = table5(scored, p.fpr_targets)
    return Run(p, b, scored, gains, trend, ov, drops, t5, blind_comparison(scored), note)


def regime(run: Run) -> list[fidelity.Regime]:
    """The chapter's fidelity rows: is each shifted benchmark's shift present (its blind-baseline AUC)?"""
    b = run.scored.blind
    return [fidelity.shift(r.benchmark, r.auc, r.auc_lo, r.auc_hi) for r in b[b.benchmark != NATURAL].itertuples()]


def verdicts(run: Run) -> list[Verdict]:
    """The chapter's verdicts, in the page's order; those about the shift link its rows."""
    keys = ",".join(r.key for r in regime(run))
    shifted = [
        rules.shift_inflates_auc(run.gains),
        rules.auc_grows_with_lateness(run.trend),
        rules.shifted_overlap_lower(run.drops, run.params.overlap_n),
        rules.shifted_thresholds_misfire(run.t5, run.scored.largest),
    ]
    return [replace(v, regime=keys) for v in shifted] + [rules.blind_baseline_separates(run.blind)]
