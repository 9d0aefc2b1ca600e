"""The n-gram overlap chapter (MIMIR §3.2.2, Table 2, Figures 3, 7, 14): how much non-members
overlap the training data, and how MIAs fare when the non-members are redrawn to low overlap.

:func:`run` takes the chapter's steps in order: the overlap measurement
(:mod:`mimirlib.experiments.ngram_overlap_study`: the splits, the overlap study, what the
decontamination kept, how far the redraw lowered each domain's overlap), then
:func:`score_splits` (every attack and the blind baseline on both splits), then the paired
effects :func:`verdicts` rests on (:func:`auc_gain_effects`, :func:`blind_gain_effects`,
:func:`ref_gain_effects`).

The two splits share their members and differ in their non-members, so every comparison of a
split with the other is paired on the shared members and resamples the two non-member sets
independently.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from mimirlib.core import metrics
from mimirlib.core.scoring import evaluate_scores
from mimirlib.core.signals import ScoringOptions, SignalCache, cache_note
from mimirlib.display import plots
from mimirlib.experiments.benchmark_scores import BASELINE, REF, SuiteScorer, blind_record, blind_scores
from mimirlib.experiments.ngram_overlap_study import (
    Benchmarks,
    OverlapStudy,
    decontamination,
    load,
    mean_intervals,
    overlap_shift,
    overlap_study,
    shared_members,
)
from mimirlib.experiments.params import Params
from mimirlib.experiments.suite import suite_for
from mimirlib.verdicts import Effect, Verdict, effect_from_paired, seed_sd
from mimirlib.verdicts import ngram_overlap as rules

NATURAL = "natural"  # split labels in every frame
LOW = "7-gram <= 20%"


# ----------------------------------------------------------------------------- scoring


@dataclass
class ScoreRun:
    """Scores of every model on both splits, their AUCs, and the blind baseline's."""

    benchmarks: Benchmarks
    scores: dict  # (model label, domain, split) -> frame: is_member + one column per attack
    blind_scores: dict  # (domain, split) -> frame: is_member + "baseline" (out-of-fold)
    results: pd.DataFrame  # target, domain, split, attack, auc, auc_lo, auc_hi, ... (base targets)
    blind: pd.DataFrame  # domain, split, attack="baseline", auc, ...
    targets: list[str]  # target labels, smallest first
    replicates: dict  # target label -> labels of its seed replicates (scored too)

    def sizes(self) -> pd.DataFrame:
        b = self.benchmarks
        return pd.DataFrame(
            {
                "natural pairs": {d: len(x.members) for d, x in b.natural.items()},
                "<= 20% 7-gram pairs": {d: len(x.members) if x else 0 for d, x in b.low.items()},
            }
        )

    def table2(self, target: str) -> pd.DataFrame:
        """Table 2 analogue: AUC of ``target`` per attack (and the blind baseline), domain and split."""
        t = pd.concat([self.results[self.results.target == target], self.blind], ignore_index=True)
        return t.pivot_table(index="attack", columns=["domain", "split"], values="auc", sort=False)

    def gains(self) -> pd.DataFrame:
        """AUC(low) - AUC(natural) per target, domain and attack (each split's own AUC, all members)."""
        w = self.results.pivot_table(index=["target", "domain", "attack"], columns="split", values="auc").dropna()
        if w.empty:
            return pd.DataFrame(columns=["target", "domain", "attack", NATURAL, LOW, "gain"])
        w["gain"] = w[LOW] - w[NATURAL]
        return w.reset_index()

    def gain_pivot(self, target: str) -> pd.DataFrame:
        """AUC gain of ``target``, domains by attacks (the heatmap's data)."""
        g = self.gains()
        return g[g.target == target].pivot_table(index="domain", columns="attack", values="gain")

    def gain_summary(self) -> pd.DataFrame:
        """Per target (smallest first): mean and median gain, the share of (domain, attack) with one, and
        how many (domain, attack) gains they summarise (each an AUC difference on :meth:`sizes` pairs)."""
        g = self.gains().groupby("target", sort=False).gain
        out = pd.DataFrame(
            {
                "mean AUC gain": g.mean(),
                "median gain": g.median(),
                "share of (domain, attack) with a gain": g.apply(lambda x: float((x > 0).mean())),
                "n (domain, attack) gains": g.size(),
            }
        )
        return out.reindex([t for t in self.targets if t in out.index])


def score_splits(
    suite,
    b: Benchmarks,
    attacks,
    *,
    attack_params=None,
    options: ScoringOptions | None = None,
    n_bootstrap: int = 1000,
    seed: int = 0,
    blind_folds: int = 5,
    replicate_domains=None,
) -> ScoreRun:
    """Score both splits of every domain with every target, evaluate each attack's AUC with a
    bootstrap interval, and run the blind baseline. The targets' seed replicates are scored too,
    in ``replicate_domains`` only (``None``: every domain; ``[]``: none), to measure the seed
    spread of the paired effects where it matters without scoring every replicate everywhere."""
    scorer = SuiteScorer(suite, attacks, attack_params=attack_params, options=options)
    targets = [suite.label(t) for t in suite.targets]
    reps = {suite.label(t): suite.replicates(t) for t in suite.targets}
    rep_models = [(suite.label(r), r) for rs in reps.values() for r in rs]
    base_models = [(suite.label(t), t) for t in suite.targets]
    scores, blind_frames, rows, blind = {}, {}, [], []
    for d in b.domains:
        for split, bench in ((NATURAL, b.natural[d]), (LOW, b.low[d])):
            if bench is None:
                continue
            with_reps = replicate_domains is None or d in replicate_domains
            for label, path in base_models + (rep_models if with_reps else []):
                s = scores[(label, d, split)] = scorer(bench, path)
                if label in targets:
                    ev = evaluate_scores(s, n_resamples=n_bootstrap, seed=seed)
                    rows.append(ev.assign(domain=d, split=split, target=label))
            blind_frames[(d, split)] = blind_scores(bench, blind_folds, seed)
            rec = blind_record(blind_frames[(d, split)], n_bootstrap, seed)
            blind.append({"domain": d, "split": split, "attack": BASELINE, **rec})
    results = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()
    return ScoreRun(
        b,
        scores,
        blind_frames,
        results,
        pd.DataFrame(blind),
        targets,
        {t: [suite.label(r) for r in rs] for t, rs in reps.items()},
    )


# ----------------------------------------------------------------------------- paired effects


def _sides(frame: pd.DataFrame, column: str, members_idx: np.ndarray):
    labels = frame["is_member"].to_numpy().astype(bool)
    s = frame[column].to_numpy(dtype=float)
    return s[labels][members_idx], s[~labels]


def _split_pair(run: ScoreRun, d: str):
    """``(i_natural, i_low)`` shared-member indices of domain ``d``, or None if it has no low split."""
    low = run.benchmarks.low.get(d)
    if low is None:
        return None
    i_nat, i_low = shared_members(run.benchmarks.natural[d], low)
    return (i_nat, i_low) if len(i_nat) else None


def _auc_gain(nat: pd.DataFrame, low: pd.DataFrame, col: str, idx, n_bootstrap: int, seed: int):
    i_nat, i_low = idx
    lm, ln = _sides(low, col, i_low)
    nm, nn = _sides(nat, col, i_nat)
    return metrics.paired_auc_difference(lm, ln, nm, nn, n_resamples=n_bootstrap, seed=seed, paired_nonmembers=False)


def _with_seeds(run: ScoreRun, target: str, d: str, estimate) -> tuple[float | None, int]:
    """Seed sd of ``estimate(model label)`` over ``target`` and its replicates scored in domain
    ``d``, and the seed count."""
    labels = [m for m in [target] + list(run.replicates.get(target, [])) if (m, d, LOW) in run.scores]
    values = [estimate(m) for m in labels]
    return seed_sd(values), len(values)


def auc_gain_effects(run: ScoreRun, target: str, n_bootstrap: int = 1000, seed: int = 0) -> dict[str, list[Effect]]:
    """Domain -> one Effect per attack: paired AUC(low) - AUC(natural) of ``target`` on the shared
    members (each split's non-members resampled on their own), with the seed sd of the point
    estimate where the target has seed replicates."""
    out = {}
    for d in run.benchmarks.domains:
        idx = _split_pair(run, d)
        if idx is None:
            continue
        nat, low = run.scores[(target, d, NATURAL)], run.scores[(target, d, LOW)]
        effects = []
        for col in [c for c in nat.columns if c != "is_member"]:
            diff = _auc_gain(nat, low, col, idx, n_bootstrap, seed)
            sd, k = _with_seeds(
                run,
                target,
                d,
                lambda m: _auc_gain(run.scores[(m, d, NATURAL)], run.scores[(m, d, LOW)], col, idx, 1, seed).point,
            )
            effects.append(effect_from_paired(diff, seed_sd=sd, n_seeds=k, label=f"{d}/{col}"))
        out[d] = effects
    return out


def seed_spread(run: ScoreRun, n_bootstrap: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Per target with seed replicates: over the (domain, attack) where they were scored, the
    median half-width of the AUC gain's 95% paired-bootstrap interval (which texts were drawn)
    beside the median seed sd of the same gain (which training run was read)."""
    cols = ["seeds", "(domain, attack)", "median bootstrap half-width", "median seed sd"]
    rows = {}
    for t in run.targets:
        es = [e for es in auc_gain_effects(run, t, n_bootstrap, seed).values() for e in es if e.seed_sd is not None]
        if es:
            rows[t] = [
                max(e.n_seeds for e in es),
                len(es),
                float(np.median([(e.hi - e.lo) / 2 for e in es])),
                float(np.median([e.seed_sd for e in es])),
            ]
    return pd.DataFrame.from_dict(rows, orient="index", columns=cols).rename_axis("target")


def blind_gain_effects(run: ScoreRun, n_bootstrap: int = 1000, seed: int = 0) -> dict[str, list[Effect]]:
    """Domain -> [Effect]: paired AUC(low) - AUC(natural) of the blind baseline's out-of-fold scores
    (one classifier cross-validated per split; the members are the same texts in both)."""
    out = {}
    for d in run.benchmarks.domains:
        idx = _split_pair(run, d)
        if idx is None:
            continue
        diff = _auc_gain(run.blind_scores[(d, NATURAL)], run.blind_scores[(d, LOW)], BASELINE, idx, n_bootstrap, seed)
        out[d] = [effect_from_paired(diff, label=f"{d}/{BASELINE}")]
    return out


def _gain_contrast(run: ScoreRun, model: str, d: str, other: str, idx, n_bootstrap: int, seed: int):
    i_nat, i_low = idx
    nat, low = run.scores[(model, d, NATURAL)], run.scores[(model, d, LOW)]
    return metrics.paired_gain_difference(
        _sides(low, other, i_low),
        _sides(nat, other, i_nat),
        _sides(low, REF, i_low),
        _sides(nat, REF, i_nat),
        n_resamples=n_bootstrap,
        seed=seed,
    )


def ref_gain_effects(run: ScoreRun, target: str, n_bootstrap: int = 1000, seed: int = 0) -> dict[str, list[Effect]]:
    """Domain -> one Effect per non-reference attack: gain(other) - gain(ref), where a gain is
    AUC(low) - AUC(natural); paired over the shared members and each split's non-members, which
    both attacks score. Positive when the reference attack gains less. Empty without ``ref``."""
    out = {}
    for d in run.benchmarks.domains:
        idx = _split_pair(run, d)
        if idx is None:
            continue
        nat = run.scores[(target, d, NATURAL)]
        if REF not in nat.columns:
            return {}
        others = [c for c in nat.columns if c not in ("is_member", REF) and not c.startswith("ref:")]
        effects = []
        for col in others:
            diff = _gain_contrast(run, target, d, col, idx, n_bootstrap, seed)
            sd, k = _with_seeds(run, target, d, lambda m: _gain_contrast(run, m, d, col, idx, 1, seed).point)
            effects.append(effect_from_paired(diff, seed_sd=sd, n_seeds=k, label=f"{d}/{col} - ref"))
        out[d] = effects
    return out


def effects_table(groups: dict[str, dict[str, list[Effect]]]) -> pd.DataFrame:
    """Effects as rows (``groups``: comparison name -> domain -> effects): comparison, unit,
    estimate, 95% paired interval, seed sd and count, and the clear sign (0 = inside the noise)."""
    cols = ["comparison", "unit", "estimate", "lo", "hi", "seed sd", "seeds", "clear sign"]
    rows = [
        {
            "comparison": name,
            "unit": e.label,
            "estimate": e.estimate,
            "lo": e.lo,
            "hi": e.hi,
            "seed sd": np.nan if e.seed_sd is None else e.seed_sd,
            "seeds": e.n_seeds,
            "clear sign": e.sign(),
        }
        for name, effects in groups.items()
        for es in effects.values()
        for e in es
    ]
    return pd.DataFrame(rows, columns=cols).set_index(["comparison", "unit"])


def exercise_domain(run: Run) -> str:
    """The domain the exercises work on: the first the redraw makes informative (the chapter's verdicts
    count only those), else the first with a low-overlap benchmark."""
    low = [d for d, b in run.benchmarks.low.items() if b is not None]
    informative = [d for d in rules.informative_names(run.shift) if d in low]
    return (informative or low)[0]


def prose_numbers(study: OverlapStudy, shift: pd.DataFrame, gain_effects: dict, blind_effects: dict) -> dict:
    """The numbers the chapter's prose states: overlap extremes, the Bloom filter's mean excess,
    how many domains the redraw informs, and the mean paired AUC gain there (attacks, baseline)."""
    m7 = study.mean7()
    used = rules.informative_names(shift)

    def mean(fx):
        vals = [e.estimate for d in used for e in fx.get(d, [])]
        return float(np.mean(vals)) if vals else float("nan")

    return {
        "max_m7": float(m7.max()),
        "max_m7_domain": str(m7.idxmax()),
        "min_m7": float(m7.min()),
        "min_m7_domain": str(m7.idxmin()),
        "bloom_excess": float(study.bloom_excess.mean()),
        "n_low_domains": len(shift),
        "n_informative": len(used),
        "min_overlap_drop": f"{rules.MIN_OVERLAP_DROP:.2f}",
        "mean_gain": mean(gain_effects),
        "blind_gain": mean(blind_effects),
    }


# ----------------------------------------------------------------------------- the chapter


@dataclass
class Run:
    """Everything the chapter shows, computed by :func:`run` in the chapter's order."""

    params: Params
    suite: object  # the Suite the models and benchmarks came from
    benchmarks: Benchmarks
    study: OverlapStudy
    decontaminated: pd.DataFrame | None  # :func:`decontamination` (None on real data)
    shift: pd.DataFrame  # :func:`overlap_shift`
    splits: ScoreRun
    gain_effects: dict[str, list[Effect]]  # :func:`auc_gain_effects` of the largest target
    blind_effects: dict[str, list[Effect]]  # :func:`blind_gain_effects`
    ref_effects: dict[str, list[Effect]]  # :func:`ref_gain_effects` of the largest target
    cache_note: str = ""

    @property
    def largest(self) -> str:
        return self.splits.targets[-1]


def run(p: Params, suite=None) -> Run:
    """The chapter: the overlap study, the redraw's overlap shift, both splits scored (seed
    replicates only in the domains the shift makes informative), and the paired effects."""
    suite = suite or suite_for(p)
    b = load(suite, p.natural_split, p.low_overlap_split, p.n_samples)
    study = overlap_study(b, p.ns, p.bloom_fpr)
    dec = decontamination(b, study)
    shift = overlap_shift(b, study)
    cache = SignalCache.default()
    splits = score_splits(
        suite,
        b,
        p.attacks,
        attack_params=p.attack_params(),
        options=p.scoring(cache=cache),
        n_bootstrap=p.n_bootstrap,
        seed=p.seed,
        blind_folds=p.blind_folds,
        replicate_domains=rules.informative_names(shift),
    )
    note = cache_note(cache.hits, cache.misses)
    largest = splits.targets[-1]
    gain_fx = auc_gain_effects(splits, largest, p.n_bootstrap, p.seed)
    blind_fx = blind_gain_effects(splits, p.n_bootstrap, p.seed)
    ref_fx = ref_gain_effects(splits, largest, p.n_bootstrap, p.seed)
    return Run(p, suite, b, study, dec, shift, splits, gain_fx, blind_fx, ref_fx, note)


def shift_table(shift: pd.DataFrame) -> pd.DataFrame:
    """:func:`overlap_shift` by domain, with whether each domain informs the verdicts on the redraw."""
    return shift.set_index("domain").assign(informative=rules.informative_domains(shift))


def overlap_means(run: Run) -> pd.DataFrame:
    """Each domain's mean exact 7-gram overlap of its natural non-members with its 95% bootstrap
    interval over the texts (:func:`mean_intervals`), its reading against the 30% bar and the
    paper's value of the Pile domain it plays: the table :func:`rules.overlap_is_high` decides on."""
    m = mean_intervals(run.study.exact_overlaps, run.params.n_bootstrap, run.params.seed)
    return m.set_index("domain").assign(
        reading=[rules.overlap_reading(lo, hi) for lo, hi in zip(m.lo, m.hi)],
        paper=[rules.paper_counterpart(d)[0] for d in m.domain],
    )


def verdicts(run: Run) -> list[Verdict]:
    """The chapter's verdicts, in the order the page states them."""
    means = mean_intervals(run.study.exact_overlaps, run.params.n_bootstrap, run.params.seed)
    keys = ",".join(f"overlap-{d}" for d in means.domain)  # the lab page's rows (experiments.lab.regime)
    return [rules.overlap_is_high(means)] + [
        replace(v, regime=keys)
        for v in (
            rules.low_overlap_is_easier(run.gain_effects, run.shift, run.largest),
            rules.redraw_drifts_towards_distribution_inference(run.blind_effects, run.shift),
            rules.reference_gains_less(run.ref_effects, run.shift, run.largest),
        )
    ]


# ----------------------------------------------------------------------------- figures


def overlap_figure(overlaps: pd.DataFrame):
    """Figures 3 and 14 analogue: box plots of the natural non-members' overlap, one panel per n."""
    g = sns.catplot(
        data=overlaps,
        x="domain",
        y="overlap",
        col="n",
        kind="box",
        height=3.6,
        aspect=1.15,
        sharey=True,
        color=plots.series_colours(1)[0],
        saturation=1,
        fliersize=2,
    )
    g.set_axis_labels("domain", "n-gram overlap\n(share of the text's n-grams in training)")
    g.set_titles("n = {col_name}")
    g.tight_layout()
    plt.close(g.figure)
    return plots.finish(g.figure, layout=False)


def decontamination_figure(dec: pd.DataFrame | None):
    """Figure 7 analogue: 7-gram overlap of all held-out candidates and of the kept ones; a
    placeholder saying so when there is no held-out pool (real data)."""
    if dec is None:
        return _placeholder("not available for real data")
    sets = list(dict.fromkeys(dec["set"]))
    g = sns.catplot(
        data=dec,
        x="domain",
        y="overlap",
        hue="set",
        kind="box",
        height=3.8,
        aspect=2.2,
        fliersize=2,
        saturation=1,
        palette=dict(zip(sets, plots.series_colours(len(sets)))),
    )
    g.set_axis_labels("domain", "7-gram overlap\n(share of the text's 7-grams in training)")
    g.tight_layout()
    plt.close(g.figure)
    return plots.finish(g.figure, layout=False)


def _placeholder(text: str):
    fig, ax = plt.subplots(figsize=(4, 1))
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center")
    plt.close(fig)
    return fig


def gain_figure(run: ScoreRun, target: str):
    """Heatmap of ``target``'s AUC gain (low-overlap minus natural), domains by attacks."""
    if run.gain_pivot(target).empty:
        return _placeholder("no domain has a low-overlap split")
    fig = plots.plot_heatmap(
        run.gain_pivot(target), center=0.0, cbar_label="AUC gain", title=f"{target}: AUC({LOW}) - AUC({NATURAL})"
    )
    plt.close(fig)
    return fig


def decontamination_table(dec: pd.DataFrame | None) -> pd.DataFrame:
    """Mean and count of the 7-gram overlap per domain and set (a note where there is no pool)."""
    if dec is None:
        return pd.DataFrame({"note": ["needs the lab's held-out pool: skipped for real data"]})
    return dec.pivot_table(index="domain", columns="set", values="overlap", aggfunc=["mean", "count"], sort=False)
