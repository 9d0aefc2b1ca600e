"""The n-gram overlap chapter's measurement: how much each domain's non-members overlap the training data.

:func:`load` gives both splits of every domain (natural, and the low-overlap redraw) and the corpus
the overlap is measured against; :func:`overlap_study` measures the natural non-members with a
Bloom index per n, checked against an exact 7-gram index; :func:`decontamination` shows what the
13-gram <= 80% rule kept (appendix B.3); :func:`overlap_shift` how far the redraw lowered each
domain's overlap; :func:`mean_intervals` each domain's mean overlap with its interval over
texts. The scoring and the paired effects are in :mod:`mimirlib.experiments.ngram_overlap`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from mimirlib.core import ngrams
from mimirlib.core.data import Benchmark, BenchmarkError
from mimirlib.lab.layout import cut_words


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
    bloom_excess: np.ndarray  # Bloom minus exact 7-gram overlap, per natural non-member
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

    def bloom_check(self) -> pd.Series:
        """How far the Bloom filter's 7-gram overlaps exceed the exact ones (its false positives only add)."""
        e = self.bloom_excess
        return pd.Series(
            {
                "max excess": round(float(e.max()), 5),
                "mean excess": round(float(e.mean()), 5),
                "never below exact": "yes" if bool((e >= -1e-12).all()) else "no",
            },
            name="Bloom minus exact 7-gram overlap",
            dtype=object,
        )


def overlap_study(b: Benchmarks, ns=(4, 7, 13), bloom_fpr: float = 0.01) -> OverlapStudy:
    """Build a Bloom index per n over the training corpus and measure every natural non-member;
    also build the exact 7-gram index and record how far the Bloom 7-gram overlaps exceed it (with a
    7-gram Bloom index of its own when 7 is not among ``ns``)."""
    index, secs = {}, {}
    ngrams.warm_up()  # the one-time compile is no index's build time
    for n in ns:
        t0 = time.perf_counter()
        index[n] = ngrams.NgramIndex.build(b.train_corpus, n, mode="bloom", fpr=bloom_fpr)
        secs[n] = time.perf_counter() - t0
    exact7 = ngrams.NgramIndex.build(b.train_corpus, 7, mode="exact")
    bloom7 = index[7] if 7 in index else ngrams.NgramIndex.build(b.train_corpus, 7, mode="bloom", fpr=bloom_fpr)
    rows, excess, exact = [], [], []
    for d, bench in b.natural.items():
        nonmembers = list(bench.nonmembers)
        ex = exact7.overlaps(nonmembers)
        exact.append(pd.DataFrame({"domain": d, "overlap": ex}))
        for n in ns:
            rows.append(pd.DataFrame({"domain": d, "n": n, "overlap": index[n].overlaps(nonmembers)}))
        excess.append(bloom7.overlaps(nonmembers) - ex)
    build = pd.DataFrame({"n": list(ns), "build seconds": [round(secs[n], 2) for n in ns]}).set_index("n")
    return OverlapStudy(
        pd.concat(rows, ignore_index=True),
        build,
        np.concatenate(excess),
        pd.concat(exact, ignore_index=True),
        exact7,
    )


def mean_intervals(overlaps: pd.DataFrame, n_bootstrap: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Per domain of ``overlaps`` (one row per text: ``domain``, ``overlap``): the mean overlap with its
    95% percentile bootstrap interval over the texts (``n_bootstrap`` resamples, each domain drawn
    from ``seed``), and ``n_texts``: what ``verdicts.ngram_overlap.overlap_is_high`` decides on."""
    cols = ["domain", "mean", "lo", "hi", "n_texts"]
    rows = []
    for d, g in overlaps.dropna(subset=["overlap"]).groupby("domain", sort=False):
        x = g["overlap"].to_numpy(dtype=float)
        rng = np.random.default_rng(seed)
        means = np.array([x[rng.integers(0, x.size, x.size)].mean() for _ in range(max(1, n_bootstrap))])
        lo, hi = np.quantile(means, [0.025, 0.975])
        rows.append({"domain": d, "mean": float(x.mean()), "lo": float(lo), "hi": float(hi), "n_texts": x.size})
    return pd.DataFrame(rows, columns=cols)


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
