"""Word-level n-gram overlap between a text and a corpus (the paper's section 3.2.2).

The n-gram overlap of a non-member x on a training set D is the fraction of x's word
n-grams (stride 1) that occur anywhere in D. Words are whitespace-separated tokens, as in
the paper's appendix B.1.

Two layers:

* ``ngram_set`` / ``overlap`` / ``overlaps``: the original exact helpers (a Python set of
  tuple hashes, one process); the lab uses them to decontaminate non-members at 13-gram
  overlap <= 80%.
* ``NgramIndex``: the same measure over a stable 64-bit key per n-gram, stored either in a
  Python set (``mode="exact"``) or in a Bloom filter (``mode="bloom"``, the paper's appendix
  B.1 choice for the Pile, where the set of all n-grams does not fit in memory). A Bloom
  filter has no false negatives, so its overlap is never below the exact one, and it exceeds
  it by about the configured false-positive rate on the n-grams that are absent.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
from rbloom import Bloom

MODES = ("exact", "bloom")


def words(text: str) -> list[str]:
    return text.split()


def ngrams(text: str, n: int) -> list[tuple[str, ...]]:
    w = words(text)
    return [tuple(w[i : i + n]) for i in range(len(w) - n + 1)]


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


# --- stable keys and the index -------------------------------------------------------------


def ngram_key(gram: Sequence[str]) -> int:
    """Stable signed 64-bit key of one n-gram: blake2b of its space-joined words.

    Python's ``hash`` of strings changes with PYTHONHASHSEED; this key does not, so an index
    (or a saved Bloom filter) gives the same answer in every process. Words never contain
    whitespace, so joining with a space is injective."""
    digest = hashlib.blake2b(" ".join(gram).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


def ngram_keys(text: str | None, n: int) -> list[int]:
    """Keys of every word n-gram of ``text`` (stride 1); empty for None or texts shorter than n."""
    w = words(text) if text else []
    return [ngram_key(w[i : i + n]) for i in range(len(w) - n + 1)]


def _count_ngrams(texts: Sequence[str], n: int) -> int:
    return sum(max(0, len(words(t)) - n + 1) for t in texts)


class NgramIndex:
    """The n-grams of a training corpus, queried for the overlap of other texts.

    ``mode="bloom"`` keeps memory bounded (``-ln(fpr) / ln(2)^2`` bits per n-gram, about 1.2
    bytes at fpr=0.01) for the Pile-scale path; ``mode="exact"`` keeps every key in a Python
    set (tens of bytes per n-gram) and serves to validate the Bloom path and small corpora.
    Build with :meth:`build`, which counts the n-grams first to size the filter.
    """

    def __init__(self, n: int, mode: str = "bloom", fpr: float = 0.01, expected_items: int = 1):
        if n < 1:
            raise ValueError(f"n-gram size must be >= 1, got {n}")
        if mode not in MODES:
            raise ValueError(f"unknown n-gram index mode {mode!r}; expected one of {', '.join(MODES)}")
        if not 0.0 < fpr < 1.0:
            raise ValueError(f"false-positive rate must be in (0, 1), got {fpr}")
        self.n, self.mode, self.fpr = n, mode, fpr
        # Keys are already stable ints, and Python's hash of an int does not depend on
        # PYTHONHASHSEED, so the Bloom filter can use its default (fast, built-in) hash.
        self._store: set[int] | Bloom = set() if mode == "exact" else Bloom(max(1, expected_items), fpr)
        self.n_added = 0  # n-grams added, repeats included

    @classmethod
    def build(cls, texts: Iterable[str | None], n: int, mode: str = "bloom", fpr: float = 0.01) -> NgramIndex:
        """Index every n-gram of ``texts`` (None and empty texts are skipped).

        The Bloom filter is sized for the total n-gram count, an upper bound on the distinct
        count, so its realised false-positive rate is at most ``fpr``."""
        texts = [t for t in texts if t]
        index = cls(n, mode, fpr, expected_items=_count_ngrams(texts, n))
        for t in texts:
            index.add(t)
        return index

    def add(self, text: str | None) -> None:
        keys = ngram_keys(text, self.n)
        self._store.update(keys)
        self.n_added += len(keys)

    def contains(self, ngram: str | Sequence[str]) -> bool:
        """Whether one n-gram (a string of n words, or a sequence of n words) is in the index."""
        gram = words(ngram) if isinstance(ngram, str) else list(ngram)
        if len(gram) != self.n:
            raise ValueError(f"expected a {self.n}-gram, got {len(gram)} words: {gram!r}")
        return ngram_key(gram) in self._store

    def overlap(self, text: str | None) -> float:
        """Fraction of ``text``'s n-grams found in the index (0.0 for texts shorter than n words)."""
        keys = ngram_keys(text, self.n)
        if not keys:
            return 0.0
        store = self._store
        return sum(k in store for k in keys) / len(keys)

    def overlaps(self, texts: Iterable[str | None]) -> np.ndarray:
        return np.array([self.overlap(t) for t in texts], dtype=float)

    @property
    def memory_bytes(self) -> int:
        """Size of the store: the filter's bit array, or the set plus its int objects."""
        if self.mode == "bloom":
            return self._store.size_in_bits // 8
        return sys.getsizeof(self._store) + sum(sys.getsizeof(k) for k in self._store)

    def __repr__(self) -> str:
        return (
            f"NgramIndex(n={self.n}, mode={self.mode!r}, fpr={self.fpr}, n_added={self.n_added}, "
            f"memory_bytes={self.memory_bytes})"
        )


def overlap_table(
    texts: Iterable[str | None],
    train_texts: Iterable[str | None],
    ns: Sequence[int] = (4, 7, 13),
    mode: str = "bloom",
    fpr: float = 0.01,
) -> pd.DataFrame:
    """N-gram overlap of each of ``texts`` with ``train_texts``: one row per text, one column
    ``ngram_<n>`` per n (the measure behind the paper's Figure 2 and Table 2)."""
    texts, train_texts = list(texts), [t for t in train_texts if t]
    return pd.DataFrame({f"ngram_{n}": NgramIndex.build(train_texts, n, mode, fpr).overlaps(texts) for n in ns})
