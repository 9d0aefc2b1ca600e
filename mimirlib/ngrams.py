"""Word-level n-gram overlap between a text and a corpus (the paper's section 3.2.2).

The n-gram overlap of a non-member x on a training set D is the fraction of x's word
n-grams (stride 1) that occur anywhere in D. Words are whitespace-separated tokens, as in
the paper's appendix B.1. This module is exact (a Python set of hashed n-grams); it is
what the lab uses to decontaminate non-members at 13-gram overlap <= 80%.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np


def words(text: str) -> list[str]:
    return text.split()


def ngrams(text: str, n: int) -> list[tuple[str, ...]]:
    w = words(text)
    return [tuple(w[i:i + n]) for i in range(len(w) - n + 1)]


def ngram_set(texts: Iterable[str], n: int) -> set[int]:
    """Hashes of every word n-gram in ``texts`` (Python's tuple hash: exact for our sizes)."""
    out: set[int] = set()
    for t in texts:
        out.update(hash(g) for g in ngrams(t, n))
    return out


def overlap(text: str, corpus_ngrams: set[int], n: int) -> float:
    """Fraction of ``text``'s n-grams found in ``corpus_ngrams`` (0.0 for texts shorter than n words)."""
    grams = ngrams(text, n)
    if not grams:
        return 0.0
    return sum(hash(g) in corpus_ngrams for g in grams) / len(grams)


def overlaps(texts: Iterable[str], corpus_ngrams: set[int], n: int) -> np.ndarray:
    return np.array([overlap(t, corpus_ngrams, n) for t in texts])
