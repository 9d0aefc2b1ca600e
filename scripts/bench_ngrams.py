"""Benchmark: the n-gram index, vectorised versus the pre-vectorised loop, Bloom versus exact.

Builds each index over the lab snapshot's training texts (every domain but a held-out slice of
documents; ``--copies`` concatenates that many shifted copies of it for a larger corpus),
queries the held-out slice, and prints, for the loop baseline (:class:`LoopNgramIndex`, the
implementation before vectorisation) and the vectorised :class:`NgramIndex`: n-grams per
second of CPU time (and of wall time) for build and query (median of ``--repeats`` runs, one
process), the ratio, the store's memory and the build's peak traced memory (tracemalloc, a
separate run); then the sharded build on a process pool (1 and 2 workers); then how far the
Bloom overlap exceeds the exact one (never below it) against the filter's design rate, and
whether the vectorised exact overlaps equal the loop's. The vectorised index's per-word and
per-key loops are compiled by numba: the first call (which compiles them, or loads them from
numba's cache) is timed on its own line, outside the medians.

    .venv/bin/python scripts/bench_ngrams.py [--n 13] [--fpr 0.01] [--heldout 0.1] [--copies 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import tracemalloc

import numpy as np

from mimirlib.core import ngrams
from mimirlib.core.ngram_keys import count_ngrams
from mimirlib.lab import corpus
from mimirlib.core.ngrams import LoopNgramIndex, NgramIndex


def load_texts(heldout: float, seed: int = 0) -> tuple[list[str], list[str]]:
    """All deduplicated snapshot texts, split per domain into train and held-out queries."""
    rng = np.random.default_rng(seed)
    train, queries = [], []
    for name in corpus.DOMAINS:
        texts = [d["text"] for d in corpus.load_domain(name)]
        order = rng.permutation(len(texts))
        k = round(heldout * len(texts))
        queries += [texts[i] for i in order[:k]]
        train += [texts[i] for i in order[k:]]
    return train, queries


def grown(train: list[str], copies: int) -> list[str]:
    """``copies`` versions of the corpus, each word of copy c suffixed with c (so the copies
    share no n-gram and the distinct count grows with the corpus, as a real one would)."""
    out = list(train)
    for c in range(1, copies):
        out += [" ".join(f"{w}~{c}" for w in t.split()) for t in train]
    return out


def timed(fn, repeats: int):
    """Median wall seconds and median CPU seconds of this process (what one core spent: on a
    shared machine the wall time also counts the waits for a core) of ``repeats`` calls, and the
    last result."""
    wall, cpu, result = [], [], None
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu), result


def peak_traced(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=13, help="n-gram size (default 13, the paper's decontamination n)")
    ap.add_argument("--fpr", type=float, default=0.01, help="Bloom false-positive rate (default 0.01)")
    ap.add_argument("--heldout", type=float, default=0.1, help="fraction of each domain used as queries")
    ap.add_argument("--copies", type=int, default=1, help="corpus copies with disjoint words (default 1)")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs per measurement (median; default 3)")
    ap.add_argument("--skip-loop", action="store_true", help="skip the (slow) loop baseline")
    args = ap.parse_args(argv)

    train, queries = load_texts(args.heldout)
    train = grown(train, args.copies)
    n = args.n
    n_train = count_ngrams(train, n)
    counts = np.array([max(0, len(t.split()) - n + 1) for t in queries])  # n-grams per query
    n_query = int(counts.sum())
    print(
        f"corpus: lab snapshot x{args.copies}, {len(corpus.DOMAINS)} domains; train {len(train)} texts / "
        f"{n_train:,} {n}-grams, queries {len(queries)} texts / {n_query:,} {n}-grams; fpr={args.fpr}; "
        f"one process (numpy threads: {os.environ.get('OMP_NUM_THREADS', 'default')}), median of {args.repeats}"
    )

    ready = ngrams.warm_up()  # untimed: numba compiles the kernels, or loads them from its cache
    print(f"compiled kernels ready in {ready:.2f} s (compiled once, then loaded from numba's cache)")

    results, rates = {}, {}
    impls = [("vectorised", NgramIndex)] + ([] if args.skip_loop else [("loop", LoopNgramIndex)])
    for mode in ("bloom", "exact"):
        for name, cls in impls:
            t_build, c_build, index = timed(
                lambda cls=cls, mode=mode: cls.build(train, n, mode=mode, fpr=args.fpr), args.repeats
            )
            t_query, c_query, ov = timed(lambda index=index: index.overlaps(queries), args.repeats)
            results[name, mode] = ov
            rates[name, mode] = (n_train / c_build, n_query / c_query)
            mem = index.memory_bytes
            peak = ""
            if name == "vectorised":
                traced = peak_traced(lambda mode=mode: NgramIndex.build(train, n, mode=mode, fpr=args.fpr))
                peak = f"  build peak traced {traced / 2**20:7.1f} MiB"
            print(
                f"{name:10s} {mode:5s}: build {n_train / c_build:12,.0f} n-grams/CPU-s "
                f"({n_train / t_build:12,.0f}/s wall)  query {n_query / c_query:12,.0f} n-grams/CPU-s "
                f"({n_query / t_query:12,.0f}/s wall)  "
                f"store {mem / 2**20:8.2f} MiB ({mem / max(1, n_train):5.2f} B/n-gram){peak}"
            )
        if not args.skip_loop:
            (vb, vq), (lb, lq) = rates["vectorised", mode], rates["loop", mode]
            print(f"{'':10s} {mode:5s}: vectorised / loop (CPU time): build x{vb / lb:.1f}, query x{vq / lq:.1f}")

    for workers in (1, 2):
        for mode in ("bloom", "exact"):
            t, _, _ = timed(
                lambda mode=mode, w=workers: ngrams.build_sharded(train, n, mode=mode, fpr=args.fpr, shards=w),
                args.repeats,
            )
            print(
                f"sharded    {mode:5s}: {workers} worker(s) on a process pool: build {n_train / t:12,.0f} "
                f"n-grams/s wall ({os.cpu_count()} cores, shared)"
            )

    exact, bloom = results["vectorised", "exact"], results["vectorised", "bloom"]
    excess = bloom - exact
    # false positives per n-gram absent from the training set: the realised Bloom error rate
    fp_rate = (excess * counts).sum() / max(((1 - exact) * counts).sum(), 1e-12)
    design = NgramIndex.build(train, n, mode="bloom", fpr=args.fpr).design_fpr
    print(
        f"bloom - exact: min {excess.min():+.4f} (never < 0: {bool((excess >= 0).all())}), "
        f"mean {excess.mean():.5f}, max {excess.max():.4f}; "
        f"false positives per absent n-gram {fp_rate:.5f} (design {design:.5f}, target <= {args.fpr})"
    )
    if not args.skip_loop:
        same = bool(np.array_equal(exact, results["loop", "exact"]))
        print(f"vectorised exact overlaps == loop exact overlaps: {same}")
    print(
        f"texts failing MIMIR's decontamination (> {ngrams.DECONTAMINATION_MAX:.0%} overlap): "
        f"exact {(exact > ngrams.DECONTAMINATION_MAX).sum()}, bloom {(bloom > ngrams.DECONTAMINATION_MAX).sum()}"
    )


if __name__ == "__main__":
    main()
