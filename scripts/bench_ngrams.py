"""Benchmark: Bloom-filter versus exact n-gram index for the paper's n-gram overlap.

Builds both indexes over the lab snapshot's training texts (every domain but a held-out
slice of documents), queries the held-out slice, and prints n-grams per second for build and
query, the memory of each store, and how far the Bloom overlap exceeds the exact one (it can
never fall below it).

    .venv/bin/python scripts/bench_ngrams.py [--n 13] [--fpr 0.01] [--heldout 0.1]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from mimirlib.lab import corpus
from mimirlib.ngrams import NgramIndex


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


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=13, help="n-gram size (default 13, the paper's decontamination n)")
    ap.add_argument("--fpr", type=float, default=0.01, help="Bloom false-positive rate (default 0.01)")
    ap.add_argument("--heldout", type=float, default=0.1, help="fraction of each domain used as queries")
    args = ap.parse_args(argv)

    train, queries = load_texts(args.heldout)
    n_train = sum(max(0, len(t.split()) - args.n + 1) for t in train)
    counts = np.array([max(0, len(t.split()) - args.n + 1) for t in queries])  # n-grams per query
    n_query = int(counts.sum())
    print(
        f"corpus: lab snapshot, {len(corpus.DOMAINS)} domains; train {len(train)} texts / {n_train:,} "
        f"{args.n}-grams, queries {len(queries)} texts / {n_query:,} {args.n}-grams; fpr={args.fpr}"
    )

    results = {}
    for mode in ("bloom", "exact"):
        t0 = time.perf_counter()
        index = NgramIndex.build(train, args.n, mode=mode, fpr=args.fpr)
        t_build = time.perf_counter() - t0
        t0 = time.perf_counter()
        ov = index.overlaps(queries)
        t_query = time.perf_counter() - t0
        results[mode] = ov
        mem = index.memory_bytes
        print(
            f"{mode:5s}: build {n_train / t_build:10,.0f} n-grams/s ({t_build:5.1f} s)  "
            f"query {n_query / t_query:10,.0f} n-grams/s ({t_query:4.1f} s)  "
            f"memory {mem / 2**20:7.2f} MiB ({mem / max(1, n_train):5.1f} B/n-gram)  "
            f"mean overlap {ov.mean():.4f}"
        )

    excess = results["bloom"] - results["exact"]
    # false positives per n-gram absent from the training set: the realised Bloom error rate
    fp_rate = (excess * counts).sum() / max(((1 - results["exact"]) * counts).sum(), 1e-12)
    print(
        f"bloom - exact: min {excess.min():+.4f} (never < 0: {bool((excess >= 0).all())}), "
        f"mean {excess.mean():.5f}, max {excess.max():.4f}; "
        f"false positives per absent n-gram {fp_rate:.5f} (target <= {args.fpr})"
    )
    print(f"texts flagged >80% overlap: exact {(results['exact'] > 0.8).sum()}, bloom {(results['bloom'] > 0.8).sum()}")


if __name__ == "__main__":
    main()
