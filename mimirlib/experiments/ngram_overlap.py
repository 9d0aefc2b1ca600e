"""The n-gram overlap chapter (MIMIR §3.2.2, Table 2, Figures 3, 7, 14): how much non-members
overlap the training data, and how MIAs fare when the non-members are redrawn to low overlap.

Steps, each returning tidy frames: :func:`load` (the two splits and the training corpus),
:func:`overlap_study` (Bloom-filter overlaps, checked against an exact index),
:func:`decontamination` (what the 13-gram <= 80% rule keeps), :func:`overlap_shift` (how much
the redraw lowered each domain's overlap), :func:`score_splits` (every attack and the blind
baseline on both splits), then the paired effects the verdicts rest on
(:func:`auc_gain_effects`, :func:`blind_gain_effects`, :func:`ref_gain_effects`).

The two splits share their members and differ in their non-members, so every comparison of a
split with the other is paired on the shared members and resamples the two non-member sets
independently.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from mimirlib.core import metrics, ngrams
from mimirlib.display import plots
from mimirlib.core.baselines import blind_auc
from mimirlib.core.data import Benchmark, BenchmarkError
from mimirlib.lab.layout import cut_words
from mimirlib.core.scoring import evaluate_scores, score_benchmark
from mimirlib.verdicts import Effect, effect_from_paired, seed_sd
from mimirlib.verdicts.ngram_overlap import informative_names

NATURAL = "natural"  # split labels in every frame
LOW = "7-gram <= 20%"
BASELINE = "baseline"  # the blind (model-free) classifier's row among the attacks
REF = "ref"  # the first reference model's column (``ref:<name>`` in scoring) is renamed to this


# ----------------------------------------------------------------------------- inputs


@dataclass
class Benchmarks:
    """Each domain's natural benchmark and its low-overlap redraw (``None`` where the source has
    none), and the corpus overlaps are measured against."""

    natural: dict[str, Benchmark]
    low: dict[str, Benchmark | None]
    train_corpus: list[str]
    lab: object | None = None  # the lab (for its held-out pool), None for real data

    @property
    def domains(self) -> list[str]:
        return list(self.natural)


def load(suite, natural_split: str, low_split: str, n_samples: int | None = None) -> Benchmarks:
    """Both splits of every domain of ``suite``. The overlap corpus is the lab's training pool;
    on real data (no training set at hand) the natural benchmarks' members stand in for it."""
    natural = {d: suite.benchmark(d, natural_split).subset(n_samples) for d in suite.domains}
    low = {}
    for d in suite.domains:
        try:
            low[d] = suite.benchmark(d, low_split).subset(n_samples)
        except (BenchmarkError, FileNotFoundError):  # no document of this domain is that novel
            low[d] = None
    lab = suite.lab
    corpus = lab.pool_texts("train") if lab is not None else [t for b in natural.values() for t in b.members]
    return Benchmarks(natural, low, corpus, lab)


# ----------------------------------------------------------------------------- overlap


@dataclass
class OverlapStudy:
    """Overlap of the natural non-members with the training corpus (Bloom filter, as the paper),
    the time to build each index, and the Bloom filter's excess over an exact 7-gram index."""

    overlaps: pd.DataFrame  # domain, n, overlap: one row per natural non-member and n
    build_seconds: pd.DataFrame  # index n: seconds to build the Bloom index
    bloom_excess: np.ndarray  # Bloom minus exact 7-gram overlap, per natural non-member (when 7 is among the n)
    exact_overlaps: pd.DataFrame  # domain, overlap: exact 7-gram overlap of each natural non-member
    exact7: ngrams.NgramIndex = field(repr=False)  # exact 7-gram index of the corpus

    def means(self) -> pd.DataFrame:
        """Mean overlap per domain (rows) and n (columns)."""
        m = self.overlaps.pivot_table(index="domain", columns="n", values="overlap", aggfunc="mean", sort=False)
        m.columns = [f"mean {n}-gram overlap" for n in m.columns]
        return m

    def mean7(self) -> pd.Series:
        """Mean exact 7-gram overlap of each domain's natural non-members."""
        return self.exact_overlaps.groupby("domain", sort=False).overlap.mean()

    def bloom_check(self) -> dict:
        e = self.bloom_excess
        return {
            "max excess": float(e.max()),
            "mean excess": float(e.mean()),
            "never below exact": bool((e >= -1e-12).all()),
        }


def overlap_study(b: Benchmarks, ns=(4, 7, 13), bloom_fpr: float = 0.01) -> OverlapStudy:
    """Build a Bloom index per n over the training corpus and measure every natural non-member;
    also build the exact 7-gram index and record how far the Bloom overlaps exceed it."""
    index, secs = {}, {}
    ngrams.warm_up()  # the one-time compile is no index's build time
    for n in ns:
        t0 = time.perf_counter()
        index[n] = ngrams.NgramIndex.build(b.train_corpus, n, mode="bloom", fpr=bloom_fpr)
        secs[n] = time.perf_counter() - t0
    exact7 = ngrams.NgramIndex.build(b.train_corpus, 7, mode="exact")
    rows, excess, exact = [], [], []
    for d, bench in b.natural.items():
        nonmembers = list(bench.nonmembers)
        ex = exact7.overlaps(nonmembers)
        exact.append(pd.DataFrame({"domain": d, "overlap": ex}))
        for n in ns:
            ov = index[n].overlaps(nonmembers)
            rows.append(pd.DataFrame({"domain": d, "n": n, "overlap": ov}))
            if n == 7:
                excess.append(ov - ex)
    build = pd.DataFrame({"n": list(ns), "build seconds": [round(secs[n], 2) for n in ns]}).set_index("n")
    return OverlapStudy(
        pd.concat(rows, ignore_index=True),
        build,
        np.concatenate(excess) if excess else np.zeros(1),
        pd.concat(exact, ignore_index=True),
        exact7,
    )


def decontamination(b: Benchmarks, study: OverlapStudy, min_words: int = 100) -> pd.DataFrame | None:
    """Appendix B.3: exact 7-gram overlap of every held-out candidate of each domain (cut like the
    benchmark samples, at least ``min_words`` words) and of the non-members the 13-gram <= 80%
    rule kept. ``None`` on real data, where no held-out pool is at hand."""
    lab = b.lab
    if lab is None:
        return None
    rows = []
    for d in b.domains:
        cands = [cut_words(t, lab.config["sample_words"]) for t in lab.pool_texts("heldout", [d])]
        cands = [t for t in cands if len(t.split()) >= min_words]
        rows.append(pd.DataFrame({"domain": d, "set": "all held-out", "overlap": study.exact7.overlaps(cands)}))
        rows.append(
            pd.DataFrame(
                {
                    "domain": d,
                    "set": "kept (13-gram <= 80%)",
                    "overlap": study.exact7.overlaps(list(b.natural[d].nonmembers)),
                }
            )
        )
    return pd.concat(rows, ignore_index=True)


def shared_members(natural: Benchmark, low: Benchmark) -> tuple[np.ndarray, np.ndarray]:
    """Indices ``(i_natural, i_low)`` of the member texts both splits hold, in the low split's order."""
    where = {t: i for i, t in enumerate(natural.members)}
    pairs = [(where[t], j) for j, t in enumerate(low.members) if t in where]
    i_nat, i_low = (np.array(x, dtype=int) for x in zip(*pairs)) if pairs else (np.zeros(0, int), np.zeros(0, int))
    return i_nat, i_low


def overlap_shift(b: Benchmarks, study: OverlapStudy) -> pd.DataFrame:
    """One row per domain with a low-overlap split: the mean exact 7-gram overlap of its natural and
    its redrawn non-members, the drop between them, and the sizes the paired comparisons use."""
    rows = []
    for d, low in b.low.items():
        if low is None:
            continue
        nat = b.natural[d]
        o_nat = float(study.mean7()[d])
        o_low = float(study.exact7.overlaps(list(low.nonmembers)).mean())
        rows.append(
            {
                "domain": d,
                "natural_overlap": o_nat,
                "low_overlap": o_low,
                "overlap_drop": o_nat - o_low,
                "n_members": len(shared_members(nat, low)[0]),
                "n_natural_nonmembers": len(nat.nonmembers),
                "n_low_nonmembers": len(low.nonmembers),
            }
        )
    cols = [
        "domain",
        "natural_overlap",
        "low_overlap",
        "overlap_drop",
        "n_members",
        "n_natural_nonmembers",
        "n_low_nonmembers",
    ]
    return pd.DataFrame(rows, columns=cols)


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


def _replicates(suite, target: str) -> list[str]:
    """Paths of a lab target's seed replicates (none for real models)."""
    if suite.lab is None or not Path(target).exists():
        return []
    return [str(suite.lab.model_dir(r)) for r in suite.lab.seed_replicates(Path(target).name)[1:]]


def score_splits(
    suite,
    b: Benchmarks,
    attacks,
    *,
    min_k: float = 0.2,
    cache=None,
    window: int | None = None,
    stride: int | None = None,
    batch_size: int = 16,
    n_bootstrap: int = 1000,
    seed: int = 0,
    blind_folds: int = 5,
    replicate_domains=None,
    engine="local",
) -> ScoreRun:
    """Score both splits of every domain with every target, evaluate each attack's AUC with a
    bootstrap interval, and run the blind baseline. The targets' seed replicates are scored too,
    in ``replicate_domains`` only (``None``: every domain; ``[]``: none), to measure the seed
    spread of the paired effects where it matters without scoring every replicate everywhere."""
    params = {"min_k": {"k": min_k}, "min_k_pp": {"k": min_k}}
    refs = {label: suite.model(r) for label, r in suite.references.items()}
    main_ref = f"ref:{next(iter(refs))}" if refs else None
    targets = [suite.label(t) for t in suite.targets]
    reps = {suite.label(t): _replicates(suite, t) for t in suite.targets}
    rep_models = [(suite.label(r), r) for rs in reps.values() for r in rs]
    base_models = [(suite.label(t), t) for t in suite.targets]
    scores, blind_scores, rows, blind = {}, {}, [], []
    for d in b.domains:
        for split, bench in ((NATURAL, b.natural[d]), (LOW, b.low[d])):
            if bench is None:
                continue
            with_reps = replicate_domains is None or d in replicate_domains
            for label, path in base_models + (rep_models if with_reps else []):
                s = score_benchmark(
                    bench,
                    suite.model(path),
                    attacks,
                    references=refs,
                    cache=cache,
                    window=window,
                    stride=stride,
                    batch_size=batch_size,
                    attack_params=params,
                    engine=engine,
                )
                s = s.rename(columns={main_ref: REF}) if main_ref else s
                scores[(label, d, split)] = s
                if label in targets:
                    ev = evaluate_scores(s, n_resamples=n_bootstrap, seed=seed)
                    rows.append(ev.assign(domain=d, split=split, target=label))
            bl = blind_auc(bench.members, bench.nonmembers, n_splits=blind_folds, seed=seed)
            blind_scores[(d, split)] = pd.DataFrame({"is_member": bench.labels, BASELINE: bl["scores"]})
            n_m = bl["n_members"]
            rec = metrics.evaluate(bl["scores"][:n_m], bl["scores"][n_m:], n_resamples=n_bootstrap, seed=seed)
            blind.append({"domain": d, "split": split, "attack": BASELINE, **rec})
    results = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()
    return ScoreRun(
        b,
        scores,
        blind_scores,
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


def prose_numbers(study: OverlapStudy, shift: pd.DataFrame, gain_effects: dict, blind_effects: dict) -> dict:
    """The numbers the chapter's prose states: overlap extremes, the Bloom filter's mean excess,
    how many domains the redraw informs, and the mean paired AUC gain there (attacks, baseline)."""
    m7 = study.mean7()
    used = informative_names(shift)

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
        "mean_gain": mean(gain_effects),
        "blind_gain": mean(blind_effects),
    }


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
