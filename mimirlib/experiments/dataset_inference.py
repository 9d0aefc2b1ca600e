"""The dataset-inference chapter (Maini et al., 2024): from texts to collections, on the lab.

:func:`run` reads every text's feature vector (the paper's features the book's attacks compute,
:data:`mimirlib.core.dataset_inference.FEATURES`, from the signal cache) for each target and domain, then repeats
:func:`mimirlib.core.dataset_inference.infer` on random draws of three kinds (:data:`SCENARIOS`):

- ``members``: members as the suspect set against non-members (the test's power), per set size;
- ``iid``: non-members against other non-members of the same benchmark: the null holds exactly
  (the lab knows no text of either was trained on), so every flag is a false positive;
- ``shift``: same-period non-members against *later* non-members (the temporal-shift chapter's
  split), the paper's IID assumption broken: a flag is again a false positive.

:func:`verdicts` decides the chapter's claims (:mod:`mimirlib.verdicts.dataset_inference`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from mimirlib.core import dataset_inference as di
from mimirlib.core import metrics
from mimirlib.core.data import Benchmark
from mimirlib.core.scoring import score_features
from mimirlib.core.signals import SignalCache, cache_note
from mimirlib.experiments import temporal_shift
from mimirlib.experiments.params import Params
from mimirlib.experiments.suite import Suite, suite_for
from mimirlib.verdicts import Verdict
from mimirlib.verdicts import dataset_inference as rules

SCENARIOS = ("members", "iid", "shift")
POWER_LEVEL = 0.9  # "reaches p < 0.1 in at least 90% of draws" (the power bar)


@dataclass
class FeatureSet:
    """One model's feature vectors of one benchmark's members and non-members (texts x features)."""

    model: str
    domain: str
    members: np.ndarray
    nonmembers: np.ndarray


def benchmark_features(suite: Suite, model: str, domain: str, bench: Benchmark, spec: dict, options) -> FeatureSet:
    ref = suite.model(next(iter(suite.references.values()))) if suite.references else None
    f = score_features(bench.texts(), suite.model(model), spec, reference=ref, options=options, desc=bench.name)
    x = f.to_numpy()
    labels = np.asarray(bench.labels, dtype=bool)
    return FeatureSet(suite.label(model), domain, x[labels], x[~labels])


def draw_tests(
    suspect: np.ndarray,
    validation: np.ndarray | None,
    n: int,
    n_draws: int,
    rng: np.random.Generator,
    *,
    n_partitions: int = di.N_PARTITIONS,
    names: Sequence[str] | None = None,
) -> list[di.Inference]:
    """``n_draws`` tests of ``n`` random suspect texts against ``n`` random validation texts; with
    ``validation`` None both sets are drawn, disjoint, from ``suspect`` (a null of one pool)."""
    out = []
    for _ in range(n_draws):
        if validation is None:
            idx = rng.choice(len(suspect), 2 * n, replace=False)
            s, v = suspect[idx[:n]], suspect[idx[n:]]
        else:
            s = suspect[rng.choice(len(suspect), n, replace=False)]
            v = validation[rng.choice(len(validation), n, replace=False)]
        out.append(di.infer(s, v, features=names, n_partitions=n_partitions, seed=int(rng.integers(2**31))))
    return out


def sizes_for(sizes: Sequence[int], available: int) -> list[int]:
    """The suspect-set sizes a pool of ``available`` texts per side allows (at least the test's minimum)."""
    return [n for n in sizes if di.MIN_PER_SIDE <= n <= available]


@dataclass
class DatasetInferenceRun:
    """Every test's p-values (``tests``: one row per draw), the learned weights at the largest members
    set, the features' per-text AUCs, and what the tests rest on."""

    tests: pd.DataFrame  # scenario, model, domain, n, draw, p, p_first
    weights: pd.DataFrame  # model, domain, draw, feature, weight (members scenario, largest n)
    features: list[str]
    models: list[str]
    domains: list[str]
    shift: dict = field(default_factory=dict)  # the shift scenario's domain and later split
    n_draws: int = 0
    n_partitions: int = di.N_PARTITIONS
    cache_hits: int = 0
    cache_misses: int = 0
    sets: list[FeatureSet] = field(default_factory=list, repr=False)  # every (model, domain)'s features
    example: dict = field(default_factory=dict, repr=False)  # the largest target's path and first domain's texts

    @property
    def cache_note(self) -> str:
        return cache_note(self.cache_hits, self.cache_misses)

    @property
    def largest(self) -> str:
        return self.models[-1]

    def of(self, scenario: str) -> pd.DataFrame:
        return self.tests[self.tests.scenario == scenario]

    @property
    def feature_aucs(self) -> pd.DataFrame:
        """Per-text AUC of each feature: one row per (model, domain, feature), from :attr:`sets`."""
        return pd.DataFrame(
            [
                {
                    "model": fs.model,
                    "domain": fs.domain,
                    "feature": f,
                    "auc": metrics.auc(fs.members[:, k], fs.nonmembers[:, k]),
                }
                for fs in self.sets
                for k, f in enumerate(self.features)
            ]
        )


def _rows(scenario, model, domain, n, runs: list[di.Inference]) -> list[dict]:
    return [
        {
            "scenario": scenario,
            "model": model,
            "domain": domain,
            "n": n,
            "draw": i,
            "p": r.p_value,
            "p_first": r.p_first,
        }
        for i, r in enumerate(runs)
    ]


def _weight_rows(fs: FeatureSet, runs: list[di.Inference]) -> list[dict]:
    return [
        {"model": fs.model, "domain": fs.domain, "draw": i, "feature": f, "weight": w}
        for i, r in enumerate(runs)
        for f, w in r.weights_table().items()
    ]


def shifted_pools(suite: Suite, p: Params, spec: dict, options) -> tuple[dict, dict[str, tuple]]:
    """The shift scenario's pools per target: (same-period non-members, later non-members) features of
    the temporal-shift chapter's dated domain and its latest bin; empty without a lab (or split)."""
    if suite.lab is None and p.shift_split is None:
        return {}, {}
    benches = temporal_shift.load(
        suite, domain=p.shift_domain, shifted_splits=[p.shift_split] if p.shift_split else None
    )
    later = benches.shifted[-1]
    pools = {}
    for model in suite.targets:
        same = benchmark_features(suite, model, benches.domain, benches.benches[temporal_shift.NATURAL], spec, options)
        late = benchmark_features(suite, model, benches.domain, benches.benches[later], spec, options)
        pools[suite.label(model)] = (same.nonmembers, late.nonmembers)
    return {"domain": benches.domain, "later": later}, pools


def run(p: Params, suite: Suite | None = None) -> DatasetInferenceRun:
    """Features of every target on every domain's benchmark (and the temporal split's), then the three
    scenarios' draws at each suspect-set size of ``p.sizes``."""
    suite = suite or suite_for(p)
    cache = SignalCache.default()
    options = p.scoring(cache=cache)
    spec = di.feature_spec(p.features, bool(suite.references))
    names = list(spec)
    sets = [
        benchmark_features(suite, m, d, suite.benchmark(d, p.split).subset(p.n_samples), spec, options)
        for m in suite.targets
        for d in suite.domains
    ]
    shift, pools = shifted_pools(suite, p, spec, options)
    rows, weight_rows = [], []
    kw = dict(n_partitions=p.n_partitions, names=names)
    for i, fs in enumerate(sets):
        rng = np.random.default_rng([p.seed, i])
        member_sizes = sizes_for(p.sizes, min(len(fs.members), len(fs.nonmembers)))
        for n in member_sizes:
            runs = draw_tests(fs.members, fs.nonmembers, n, p.n_draws, rng, **kw)
            rows += _rows("members", fs.model, fs.domain, n, runs)
            if n == member_sizes[-1]:
                weight_rows += _weight_rows(fs, runs)
        for n in sizes_for(p.sizes, len(fs.nonmembers) // 2):
            rows += _rows("iid", fs.model, fs.domain, n, draw_tests(fs.nonmembers, None, n, p.n_draws, rng, **kw))
    for j, (model, (same, late)) in enumerate(pools.items()):
        rng = np.random.default_rng([p.seed, len(sets) + j])
        for n in sizes_for(p.sizes, min(len(same), len(late))):
            rows += _rows("shift", model, shift["domain"], n, draw_tests(same, late, n, p.n_draws, rng, **kw))
    return DatasetInferenceRun(
        pd.DataFrame(rows),
        pd.DataFrame(weight_rows),
        names,
        [suite.label(m) for m in suite.targets],
        list(suite.domains),
        shift,
        int(p.n_draws),
        int(p.n_partitions),
        cache.hits,
        cache.misses,
        sets,
        example_inputs(suite, p),
    )


def example_inputs(suite: Suite, p: Params) -> dict:
    """What the exercises score: the largest target and the first domain's members and non-members."""
    bench = suite.benchmark(suite.domains[0], p.split).subset(p.n_samples)
    return {"model": suite.targets[-1], "members": list(bench.members), "nonmembers": list(bench.nonmembers)}


def flag_share(
    run: DatasetInferenceRun, model: str, domain: str, n: int, features: Sequence[str] | None = None, n_draws: int = 20
) -> float:
    """Share of ``n_draws`` members-set draws of size ``n`` flagged at p < 0.1, on ``features`` only
    (None: all the run's), for one model and domain of the run (an exercise's question); ``n`` is capped
    at the texts the domain holds."""
    fs = next((f for f in run.sets if f.model == model and f.domain == domain), None)
    if fs is None:
        raise ValueError(f"no features of model {model!r} on domain {domain!r} in the run")
    cols = [run.features.index(f) for f in features] if features is not None else list(range(len(run.features)))
    n = min(n, len(fs.members), len(fs.nonmembers))
    rng = np.random.default_rng([7, n])
    runs = draw_tests(fs.members[:, cols], fs.nonmembers[:, cols], n, n_draws, rng, n_partitions=run.n_partitions)
    return float(np.mean([r.flagged() for r in runs]))


# ----------------------------------------------------------------------------- summaries


def flag_rates(tests: pd.DataFrame, by: Sequence[str], alpha: float = di.ALPHA) -> pd.DataFrame:
    """Per group of ``by``: draws, the share flagged (p < ``alpha``) with its exact (Clopper-Pearson) 95%
    interval, for the combined p-value (``share``) and for one partition's (``share_first``)."""
    out = []
    for key, g in tests.groupby(list(by), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(by, key)) | {"draws": len(g)}
        for col, name in (("p", "share"), ("p_first", "share_first")):
            k = int((g[col] < alpha).sum())
            lo, hi = metrics.proportion_interval(k, len(g))
            row |= {f"flagged{name[5:]}": k, name: k / len(g), f"{name}_lo": lo, f"{name}_hi": hi}
        out.append(row)
    return pd.DataFrame(out)


def smallest_sizes(run: DatasetInferenceRun, level: float = POWER_LEVEL) -> pd.DataFrame:
    """Per model: the smallest members-set size whose draws (all domains pooled) reach p < alpha in at
    least ``level`` of them, or NaN when no size of the run does; the largest size's share beside."""
    rates = flag_rates(run.of("members"), ["model", "n"])
    out = []
    for model in run.models:
        r = rates[rates.model == model].sort_values("n")
        hit = r[r.share >= level]
        out.append(
            {
                "model": model,
                "smallest n (p < 0.1 in >= 90% of draws)": int(hit.n.iloc[0]) if len(hit) else np.nan,
                "largest n tried": int(r.n.max()),
                "share flagged there": float(r.share.iloc[-1]),
            }
        )
    return pd.DataFrame(out).set_index("model")


def first_shares(run: DatasetInferenceRun) -> pd.Series:
    """Per model: the share of members-set draws flagged at the smallest set size."""
    r = power_curve(run)
    return r[r.n == r.n.min()].set_index("model").share


def power_curve(run: DatasetInferenceRun) -> pd.DataFrame:
    """Share of members-set draws flagged per (model, n), domains pooled (the figure's data)."""
    return flag_rates(run.of("members"), ["model", "n"])


def false_positive_table(run: DatasetInferenceRun) -> pd.DataFrame:
    """False-positive rates under IID and under temporal shift per (scenario, n), models and domains
    pooled, with exact intervals, for the combined test and for one partition's p-value."""
    t = run.tests[run.tests.scenario.isin(["iid", "shift"])]
    rates = flag_rates(t, ["scenario", "n"])
    cols = {"share": "flagged (Eq. 2)", "share_first": "flagged (one partition)"}
    view = rates.assign(**{v: interval_texts(rates, k) for k, v in cols.items()})
    return view.set_index(["scenario", "n"])[["draws", *cols.values()]]


def interval_texts(rates: pd.DataFrame, col: str) -> list[str]:
    """``share [lo, hi]`` as percentages, one per row of a :func:`flag_rates` frame."""
    return [f"{s:.1%} [{lo:.1%}, {hi:.1%}]" for s, lo, hi in zip(rates[col], rates[f"{col}_lo"], rates[f"{col}_hi"])]


def weights_table(run: DatasetInferenceRun) -> pd.DataFrame:
    """Mean learned weight per (feature, model) at the largest members set (negative: the feature pulls a
    text toward 'suspect'), beside the feature's per-text AUC (mean over domains)."""
    w = run.weights.groupby(["feature", "model"], sort=False).weight.mean().unstack("model")[run.models]
    a = run.feature_aucs[run.feature_aucs.model == run.largest].groupby("feature", sort=False).auc.mean()
    return w.round(3).assign(**{f"per-text AUC ({run.largest})": a.round(3)}).loc[run.features]


def best_text_auc(run: DatasetInferenceRun) -> pd.DataFrame:
    """Per model: the best feature's per-text AUC (mean over domains), what a single-text attack gets."""
    m = run.feature_aucs.groupby(["model", "feature"], sort=False).auc.mean()
    return m.groupby(level="model", sort=False).max().rename("best per-text AUC").to_frame()


def verdicts(run: DatasetInferenceRun) -> list[Verdict]:
    """The chapter's verdicts, in the order its prose refers to them (verdict_0 ... verdict_2)."""
    largest = run.of("members")
    largest = largest[(largest.model == run.largest) & (largest.n == largest.n.max())]
    return [
        rules.separates_train_from_validation(flag_rates(largest, ["domain", "n"]), model=run.largest),
        rules.no_false_positives_under_iid(flag_rates(run.of("iid"), ["scenario"])),
        rules.shift_makes_false_positives(
            flag_rates(run.of("shift"), ["scenario", "n"]), domain=run.shift.get("domain")
        ),
    ]


def size_phrase(n: float, largest: int, share: float | None = None) -> str:
    """``"50 texts per side"``, or that no size up to ``largest`` did (NaN ``n``), with the share of draws
    flagged at ``largest`` when given."""
    if not np.isnan(n):
        return f"{int(n)} texts per side"
    there = "" if share is None else f" (at {largest}, {share:.0%} of draws flagged)"
    return f"no size up to {largest} texts per side{there}"


def power_reading(sizes: pd.DataFrame, first_shares: pd.Series) -> str:
    """What :func:`smallest_sizes` says of dataset inference's idea, from the run: whether some target
    reaches the bar, and whether the share flagged grows from the smallest set size to the largest on
    every target (``first_shares``: each model's share at the smallest size)."""
    reached = sizes.iloc[:, 0].notna()
    grows = bool((sizes["share flagged there"] > first_shares.reindex(sizes.index)).all())
    trend = (
        "grows with the set's size on every target" if grows else "does not grow with the set's size on every target"
    )
    if reached.any():
        return (
            f"The share flagged {trend}, and {int(reached.sum())} of {len(sizes)} targets reach the bar: the idea "
            "of dataset inference, a weak per-text signal summed over many texts becoming a strong set-level one"
        )
    return (
        f"No target reaches the bar within the run's sizes; the share flagged {trend}: a weak per-text signal "
        "summed over more texts moves toward a set-level one, but this lab's signals need more texts than the run draws"
    )


def prose_numbers(run: DatasetInferenceRun) -> dict:
    """The numbers the chapter's prose quotes, by glue name."""
    fp = flag_rates(run.tests[run.tests.scenario.isin(["iid", "shift"])], ["scenario"]).set_index("scenario")
    sizes = smallest_sizes(run)
    shift, n_max = run.of("shift"), int(run.of("members").n.max())
    out = {
        "di_models": ", ".join(run.models),
        "di_largest": run.largest,
        "di_smallest_model": run.models[0],
        "di_draws": run.n_draws,
        "di_partitions": run.n_partitions,
        "di_n_max": n_max,
        "di_n_features": len(run.features),
        "di_size_largest": size_phrase(sizes.iloc[-1, 0], n_max, sizes["share flagged there"].iloc[-1]),
        "di_size_smallest": size_phrase(sizes.iloc[0, 0], n_max, sizes["share flagged there"].iloc[0]),
        "di_power_reading": power_reading(sizes, first_shares(run)),
        "di_best_auc": float(best_text_auc(run).loc[run.largest].iloc[0]),
    }
    for scenario in ("iid", "shift"):
        there = scenario in fp.index
        out[f"di_{scenario}_rate"] = float(fp.loc[scenario, "share"]) if there else float("nan")
        out[f"di_{scenario}_first"] = float(fp.loc[scenario, "share_first"]) if there else float("nan")
    out["di_shift_n"] = int(shift.n.max()) if len(shift) else 0
    return out
