"""Word-level n-gram overlap between a text and a corpus (the paper's section 3.2.2).

The n-gram overlap of a non-member x on a training set D is the fraction of x's word
n-grams (stride 1) that occur anywhere in D. Words are whitespace-separated tokens, as in
the paper's appendix B.1 (exactly Python's ``str.split()``).

Three layers:

* ``ngram_set`` / ``overlap`` / ``overlaps``: the original exact helpers (a Python set of
  tuple hashes, one process); the lab build uses them to decontaminate non-members at 13-gram
  overlap <= 80%, so they stay as they are.
* ``NgramIndex``: the same measure, vectorised for corpus scale. Texts are encoded to UTF-8
  bytes in chunks; numpy finds the words (comparisons over the bytes); a loop compiled by numba
  hashes every word from unaligned 8-byte reads of its bytes and its length (splitmix64-mixed),
  and another every n-gram with a polynomial hash over the word hashes, rolled from one window
  to the next modulo 2**64: no Python loop per word or per n-gram. Each n-gram gets a
  stable 64-bit key (the same in every process, whatever ``PYTHONHASHSEED``), stored either as a
  sorted array of distinct keys (``mode="exact"``, 8 bytes per distinct n-gram) or in a blocked
  Bloom filter (``mode="bloom"``, the paper's appendix B.1 choice for the Pile, where the set of
  all n-grams does not fit in memory). A Bloom filter has no false negatives, so its overlap is
  never below the exact one, and it exceeds it by at most its design false-positive rate on the
  n-grams that are absent. Indexes with the same geometry merge (exact: union; Bloom: OR), so
  shards built in parallel give the index of the whole corpus (:func:`build_sharded`).
* ``LoopNgramIndex``: the pre-vectorised implementation (a Python loop over n-grams, blake2b
  keys, an ``rbloom`` filter), kept as the benchmark's baseline (``scripts/bench_ngrams.py``)
  and the tests' oracle.

"Exact" means exact up to 64-bit hash collisions: with N distinct n-grams the chance that
any two share a key is about N**2 / 2**65 (1e-9 for the lab, ~3% for a billion n-grams, and
then one n-gram of one text is miscounted).
"""

from __future__ import annotations

import glob
import hashlib
import math
import re
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numba
import numpy as np
import pandas as pd
from rbloom import Bloom

MODES = ("exact", "bloom")
# MIMIR's decontamination (appendix A.3): non-members are kept when their 13-gram overlap with
# the training data is <= 80%; one above that would be dropped as contaminated.
DECONTAMINATION_N = 13
DECONTAMINATION_MAX = 0.8
CHUNK_BYTES = 1 << 20  # texts are hashed ~1 MiB at a time: the per-byte arrays stay in cache
BLOCK_BITS = 64  # one Bloom block is one uint64 word: one memory access per n-gram
MAX_BLOCKS = 1 << 32  # 32 GiB of filter: fastrange below needs the block count under 2**32
CORPUS_SUFFIXES = (".txt", ".jsonl", ".ndjson", ".parquet")


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


def _check_args(n: int, mode: str, fpr: float) -> None:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n-gram size must be >= 1, got {n}")
    if mode not in MODES:
        raise ValueError(f"unknown n-gram index mode {mode!r}; expected one of {', '.join(MODES)}")
    if not 0.0 < fpr < 1.0:
        raise ValueError(f"false-positive rate must be in (0, 1), got {fpr}")


# --- vectorised hashing --------------------------------------------------------------------

_U64 = np.uint64
_WORD_BASE = 0xD6E8FEB86659FD93  # odd, so invertible modulo 2**64
_WORD_BASE_INV = pow(_WORD_BASE, -1, 1 << 64)
_SALT = _U64(0x5851F42D4C957F2D)  # decorrelates the Bloom bit choice from the block choice
_SALT16 = _U64(int(_SALT) & 0xFFFF)  # its low 16 bits, all that the pattern choice reads


# str.split() splits on exactly the characters for which str.isspace() is true. The ASCII ones
# are single UTF-8 bytes (the table below); the others (the pattern below) are found in their UTF-8
# bytes by _unicode_spaces.
_WS_TABLE = np.zeros(256, dtype=bool)
_WS_TABLE[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = True
_UNICODE_WS = re.compile("[\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")

# The per-word and per-n-gram work below is compiled by numba (one pass over the words, one over
# the n-grams, one over the keys): numpy needs a pass over every array per operation, which kept the
# Bloom build near 14 M n-grams/s on one core. All arithmetic is on uint64, modulo 2**64 (numba
# wraps, as C does); cache=True keeps the machine code beside this module, so only the first
# process compiles it (about 2 s).
_M1, _M2, _LEN_MUL = _U64(0xBF58476D1CE4E5B9), _U64(0x94D049BB133111EB), _U64(0x9FB21C651E98DF25)
_LEN_MASK = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [(1 << 64) - 1], dtype=_U64)


@numba.njit(cache=True, inline="always")
def _mix(x):
    """splitmix64's finaliser: every output bit depends on every input bit (Bloom bits need it)."""
    x = x ^ (x >> _U64(30))
    x = x * _M1
    x = x ^ (x >> _U64(27))
    x = x * _M2
    return x ^ (x >> _U64(31))


@numba.njit(cache=True)
def _mixed(values):
    out = np.empty(values.size, dtype=np.uint64)
    for i in range(values.size):
        out[i] = _mix(values[i])
    return out


@numba.njit(cache=True)
def _hash_words(view, starts, ends, len_mask):
    """A 64-bit hash of each word's bytes: its first 8 bytes as one little-endian integer (an
    unaligned read from ``view``, the buffer read as uint64 at every byte), masked to the word's
    length, plus the length times an odd constant, mixed; each further 8 bytes (masked likewise)
    are XORed in and mixed again."""
    out = np.empty(starts.size, dtype=np.uint64)
    for i in range(starts.size):
        start, length = starts[i], ends[i] - starts[i]
        h = _mix((view[start] & len_mask[min(length, 8)]) + _U64(length) * _LEN_MUL)
        for offset in range(8, length, 8):
            h = _mix(h ^ (view[start + offset] & len_mask[min(length - offset, 8)]))
        out[i] = h
    return out


@numba.njit(cache=True)
def _window_keys(word, first, counts, n, base, inverse):
    """The key of every run of ``n`` consecutive words inside one text, text by text: the mixed
    polynomial hash ``sum word[i + t] * base**t`` (t < n) modulo 2**64, rolled from one window to
    the next (drop the first word, divide by ``base`` with its inverse, add the new word times
    ``base**(n - 1)``): equal n-grams get equal keys anywhere. ``first`` holds each text's first
    word number, ``counts`` its number of n-grams (:func:`_ngram_counts`)."""
    out = np.empty(counts.sum(), dtype=np.uint64)
    top = _U64(1)
    for _ in range(n - 1):
        top = top * base
    o = 0
    for t in range(counts.size):
        if counts[t] == 0:
            continue
        lo = first[t]
        h, power = _U64(0), _U64(1)
        for j in range(n):
            h = h + word[lo + j] * power
            power = power * base
        out[o] = _mix(h)
        o += 1
        for i in range(lo + 1, lo + counts[t]):
            h = (h - word[i - 1]) * inverse + word[i + n - 1] * top
            out[o] = _mix(h)
            o += 1
    return out


def _word_hashes(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """:func:`_hash_words` of the words at ``starts``/``ends`` in ``buf`` (which ends in 8 padding bytes)."""
    view = np.ndarray(shape=(buf.size - 8,), dtype="<u8", buffer=buf, strides=(1,))  # word at every byte
    return _hash_words(view, starts, ends, _LEN_MASK)


def _encode(texts: Sequence[str | None]) -> tuple[np.ndarray, np.ndarray, bool]:
    """The texts' UTF-8 bytes joined by single spaces (then 8 zero bytes, so that an 8-byte read
    at any word start stays inside), each text's byte offset (plus the end), and whether all
    texts are ASCII (``str.isascii`` costs nothing): if not, :func:`_word_spans` looks for
    non-ASCII whitespace, which stays as its UTF-8 bytes."""
    parts = [t.encode("utf-8", "surrogatepass") if t else b"" for t in texts]
    lengths = np.fromiter((len(p) + 1 for p in parts), dtype=np.int64, count=len(parts))
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    ascii_only = all(t.isascii() for t in texts if t)
    return np.frombuffer(b" ".join(parts) + b" " + bytes(8), dtype=np.uint8), offsets, ascii_only


def _unicode_spaces(buf: np.ndarray) -> np.ndarray:
    """Positions of every byte of the non-ASCII whitespace characters (``_UNICODE_WS``) in
    ``buf``'s UTF-8 but its last 8 bytes: their lead bytes are 0xC2, 0xE1, 0xE2 or 0xE3 (never a
    continuation byte), so only the few bytes in 0xC2..0xE3 are examined, with the two after each."""
    lead = np.flatnonzero((buf[:-8] - np.uint8(0xC2)) <= 0xE3 - 0xC2)
    if not lead.size:
        return lead
    b0, b1, b2 = buf[lead], buf[lead + 1], buf[lead + 2]
    two = (b0 == 0xC2) & ((b1 == 0x85) | (b1 == 0xA0))  # U+0085, U+00A0
    e2 = (b0 == 0xE2) & (b1 == 0x80) & ((b2 <= 0x8A) | (b2 == 0xA8) | (b2 == 0xA9) | (b2 == 0xAF))
    three = (
        ((b0 == 0xE1) & (b1 == 0x9A) & (b2 == 0x80))  # U+1680
        | e2  # U+2000-200A, U+2028, U+2029, U+202F
        | ((b0 == 0xE2) & (b1 == 0x81) & (b2 == 0x9F))  # U+205F
        | ((b0 == 0xE3) & (b1 == 0x80) & (b2 == 0x80))  # U+3000
    )
    two, three = lead[two], lead[three]
    return np.concatenate([two, two + 1, three, three + 1, three + 2])


def _word_spans(buf: np.ndarray, ascii_only: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Start and end byte of every word (a maximal run of non-whitespace bytes) in ``buf`` but
    its last 8 bytes (the padding). Whitespace is what ``str.split()`` splits on: bytes 9-13 and
    28-32 (``_WS_TABLE``), and the non-ASCII characters of ``_UNICODE_WS`` (not looked for when
    ``ascii_only``). Bytes above 32 are word bytes but for the latter, and so are the control bytes
    0-8 and 14-27 (rarely any: one test, then an OR); word starts and ends alternate, so one scan
    for edges gives both."""
    b = buf[:-8]
    word = np.zeros(b.size + 2, dtype=bool)
    inner = word[1:-1]
    np.greater(b, 32, out=inner)
    control = (b - np.uint8(14)) < 14  # bytes 14-27 (smaller bytes wrap round to >= 242)
    control |= b < 9
    if control.any():
        inner |= control
    if not ascii_only:
        inner[_unicode_spaces(buf)] = False
    edges = np.flatnonzero(word[1:] != word[:-1])
    return edges[0::2], edges[1::2]


def _words(texts: Sequence[str | None]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(buf, starts, ends, first)``: the texts' joined bytes (:func:`_encode`), every word's start
    and end byte in them (:func:`_word_spans`), and each text's first word number, then the total."""
    buf, offsets, ascii_only = _encode(texts)
    starts, ends = _word_spans(buf, ascii_only)
    return buf, starts, ends, np.searchsorted(starts, offsets)


def _ngram_counts(first: np.ndarray, n: int) -> np.ndarray:
    """Word n-grams of each text, from its first word number (``_words``): 0 when shorter than n words."""
    return np.maximum(np.diff(first) - n + 1, 0)


def _sorted_unique(keys: np.ndarray) -> np.ndarray:
    """Sorted distinct values: a sort and one comparison (numpy 2.4's np.unique is ~20x slower
    on uint64, through its hash table)."""
    s = np.sort(keys)
    if s.size < 2:
        return s
    keep = np.empty(s.size, dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def _chunk_keys(texts: Sequence[str | None], n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Keys of every word n-gram of ``texts``: ``(keys, owner, counts)``, ``owner`` the text of
    each key, ``counts`` the number of n-grams of each text (0 when shorter than n words)."""
    buf, starts, ends, first = _words(texts)
    counts = _ngram_counts(first, n)
    keys = _window_keys(_word_hashes(buf, starts, ends), first, counts, n, _U64(_WORD_BASE), _U64(_WORD_BASE_INV))
    owner = np.repeat(np.arange(counts.size), counts)  # keys come text by text, counts[t] of text t
    return keys, owner, counts


def _chunks(texts: Sequence[str | None], chunk_bytes: int | None = None) -> Iterator[tuple[int, int]]:
    """``(lo, hi)`` ranges of texts holding about ``chunk_bytes`` (default CHUNK_BYTES) characters each."""
    chunk_bytes = chunk_bytes or CHUNK_BYTES
    lo, size = 0, 0
    for i, t in enumerate(texts):
        size += len(t) + 1 if t else 1
        if size >= chunk_bytes:
            yield lo, i + 1
            lo, size = i + 1, 0
    if lo < len(texts):
        yield lo, len(texts)


def iter_keys(texts: Sequence[str | None], n: int, chunk_bytes: int | None = None):
    """``(lo, keys, owner, counts)`` per chunk of texts; ``owner`` counts from ``lo``."""
    for lo, hi in _chunks(texts, chunk_bytes):
        keys, owner, counts = _chunk_keys(texts[lo:hi], n)
        yield lo, keys, owner, counts


def ngram_keys_array(text: str | None, n: int) -> np.ndarray:
    """Keys (uint64) of every word n-gram of ``text``, in order; empty for None or short texts."""
    return _chunk_keys([text], n)[0]


def ngram_key(gram: Sequence[str]) -> int:
    """Stable signed 64-bit key of one n-gram (the key :class:`NgramIndex` stores).

    Computed from the words' UTF-8 bytes only, so it is the same in every process (Python's
    ``hash`` of strings changes with PYTHONHASHSEED). Word boundaries are part of the key."""
    return int(ngram_keys_array(" ".join(gram), len(gram)).view(np.int64)[0])


def count_ngrams(texts: Sequence[str | None], n: int) -> int:
    """Number of word n-grams of ``texts`` (repeats included): sizes a Bloom filter."""
    total = 0
    for lo, hi in _chunks(texts):
        total += int(_ngram_counts(_words(texts[lo:hi])[3], n).sum())
    return total


# --- the blocked Bloom filter --------------------------------------------------------------


_MAX_LOAD = 256  # items per block beyond which a filter is saturated (rate taken as 1)
_LGAMMA = np.array([math.lgamma(j + 1) for j in range(2 * _MAX_LOAD + 1)])


@lru_cache(maxsize=None)
def _occupied_power(k: int, width: int = BLOCK_BITS) -> np.ndarray:
    """``E[(occupied bits / width)^k]`` for a block that received j = 0, 1, ... items of k
    bits each (bits drawn with replacement): the exact occupancy distribution, drawn bit by bit."""
    occupancy = np.zeros(width + 1)
    occupancy[0] = 1.0
    frac = np.arange(width + 1) / width
    out = np.zeros(_LGAMMA.size)
    for j in range(1, out.size):
        for _ in range(k):  # one more bit drawn: lands on an occupied bit, or occupies one more
            nxt = occupancy * frac
            nxt[1:] += occupancy[:-1] * (1 - frac[:-1])
            occupancy = nxt
        out[j] = occupancy @ frac**k
    return out


def blocked_bloom_fpr(load: float, k: int) -> float:
    """False-positive rate of a blocked Bloom filter holding ``load`` items per block on average.

    Items fall in blocks as a Poisson count j (mean ``load``); each sets k of the block's 64
    bits drawn with replacement; a query of an absent item tests k such bits of one block. So
    the rate is E_j E[(occupied / 64)^k] over the exact occupancy distribution."""
    if load <= 0:
        return 0.0
    if load > _MAX_LOAD:
        return 1.0
    j = np.arange(_LGAMMA.size)
    pmf = np.exp(j * math.log(load) - load - _LGAMMA)
    return float(min(1.0, pmf @ _occupied_power(int(k))))


@lru_cache(maxsize=64)
def bloom_geometry(fpr: float) -> tuple[int, float]:
    """``(k, load)``: bits set per item and the most items per block whose design
    false-positive rate is <= ``fpr`` (the k that packs the most items per block)."""
    best = (1, 0.0)
    for k in range(1, 11):  # 10 six-bit bit indices fit in one 64-bit hash
        lo, hi = 0.0, float(BLOCK_BITS)
        if blocked_bloom_fpr(1e-9, k) > fpr:
            continue
        for _ in range(40):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if blocked_bloom_fpr(mid, k) <= fpr else (lo, mid)
        if lo > best[1]:
            best = (k, lo)
    if best[1] <= 0:
        raise ValueError(f"false-positive rate {fpr} is below what a {BLOCK_BITS}-bit blocked Bloom filter reaches")
    return best


def bloom_bytes_per_ngram(fpr: float) -> float:
    """Filter bytes per n-gram added (repeats included) at design false-positive rate ``fpr``."""
    return BLOCK_BITS / bloom_geometry(float(fpr))[1] / 8


PATTERNS = 1 << 16  # bit patterns per k: one gather per key instead of k shift-and-ORs


@lru_cache(maxsize=None)
def _patterns(k: int) -> np.ndarray:
    """``PATTERNS`` 64-bit masks, each the OR of k bits drawn with replacement (by splitmix64
    from the pattern's number, so the same in every process and numpy version). A key's pattern
    is picked by bits of the key that do not pick its block: a pattern-table blocked Bloom filter
    (Putze, Sanders and Singler, 2007)."""
    draws = _mixed(np.arange(PATTERNS * k, dtype=_U64) + _SALT).reshape(PATTERNS, k) & _U64(63)
    return np.bitwise_or.reduce(_U64(1) << draws, axis=1)


@numba.njit(cache=True, inline="always")
def _bloom_slot(key, n_blocks, patterns):
    """The block of ``key`` (fastrange of its high 32 bits: n_blocks < 2**32) and its bit pattern
    (picked by its low 16 bits XOR the salt's)."""
    return ((key >> _U64(32)) * n_blocks) >> _U64(32), patterns[(key & _U64(0xFFFF)) ^ _SALT16]


@numba.njit(cache=True)
def _bloom_add(bits, keys, patterns):
    n_blocks = _U64(bits.size)
    for i in range(keys.size):
        block, mask = _bloom_slot(keys[i], n_blocks, patterns)
        bits[block] |= mask


@numba.njit(cache=True)
def _bloom_contains(bits, keys, patterns):
    n_blocks = _U64(bits.size)
    out = np.empty(keys.size, dtype=np.bool_)
    for i in range(keys.size):
        block, mask = _bloom_slot(keys[i], n_blocks, patterns)
        out[i] = (bits[block] & mask) == mask
    return out


class BlockedBloom:
    """A Bloom filter whose k bits per item lie in one 64-bit block (one memory access per
    item; inserts and queries are compiled loops). Filters of equal size, k and salt merge by OR."""

    def __init__(self, n_blocks: int, k: int):
        if not 1 <= n_blocks < MAX_BLOCKS:
            raise ValueError(f"Bloom filter of {n_blocks} blocks: must be in [1, 2**32)")
        if not 1 <= k <= 10:
            raise ValueError(f"bits per item must be in [1, 10], got {k}")
        self.k = int(k)
        self.bits = np.zeros(int(n_blocks), dtype=_U64)
        self.n_added = 0

    @classmethod
    def for_items(cls, items: int, fpr: float) -> BlockedBloom:
        k, load = bloom_geometry(float(fpr))
        return cls(max(1, math.ceil(max(1, items) / load)), k)

    @property
    def n_blocks(self) -> int:
        return self.bits.size

    def design_fpr(self, items: int | None = None) -> float:
        """The false-positive rate after ``items`` insertions (default: those made so far)."""
        return blocked_bloom_fpr((self.n_added if items is None else items) / self.n_blocks, self.k)

    def add(self, keys: np.ndarray) -> None:
        _bloom_add(self.bits, np.ascontiguousarray(keys, dtype=_U64), _patterns(self.k))
        self.n_added += int(keys.size)

    def contains(self, keys: np.ndarray) -> np.ndarray:
        return _bloom_contains(self.bits, np.ascontiguousarray(keys, dtype=_U64), _patterns(self.k))

    def union(self, other: BlockedBloom) -> BlockedBloom:
        if other.n_blocks != self.n_blocks or other.k != self.k:
            raise ValueError(
                f"cannot merge Bloom filters of different geometry: {self.n_blocks} blocks/k={self.k} "
                f"vs {other.n_blocks} blocks/k={other.k}"
            )
        out = BlockedBloom(self.n_blocks, self.k)
        np.bitwise_or(self.bits, other.bits, out=out.bits)
        out.n_added = self.n_added + other.n_added
        return out


# --- the index -------------------------------------------------------------------------------


class NgramIndex:
    """The n-grams of a training corpus, queried for the overlap of other texts.

    ``mode="bloom"`` keeps memory bounded (a blocked Bloom filter sized so that its design
    false-positive rate at ``expected_items`` is <= ``fpr``: about 1.5 bytes per n-gram at 1%)
    for the Pile-scale path; ``mode="exact"`` keeps every distinct key in a sorted array (8 bytes
    per distinct n-gram) and serves to validate the Bloom path and small corpora. Build with
    :meth:`build`, which counts the n-grams first to size the filter, or :func:`build_sharded`.
    """

    def __init__(self, n: int, mode: str = "bloom", fpr: float = 0.01, expected_items: int = 1):
        _check_args(n, mode, fpr)
        self.n, self.mode, self.fpr = int(n), mode, fpr
        self._keys = np.zeros(0, dtype=_U64)  # exact: sorted distinct keys
        self._pending: list[np.ndarray] = []  # exact: keys added since the last sort
        self._bloom = BlockedBloom.for_items(expected_items, fpr) if mode == "bloom" else None
        self.n_added = 0  # n-grams added, repeats included

    @classmethod
    def build(cls, texts: Iterable[str | None], n: int, mode: str = "bloom", fpr: float = 0.01) -> NgramIndex:
        """Index every n-gram of ``texts`` (None and empty texts are skipped).

        The Bloom filter is sized for the total n-gram count, an upper bound on the distinct
        count, so its realised false-positive rate is at most its design rate, <= ``fpr``."""
        _check_args(n, mode, fpr)
        texts = [t for t in texts if t]
        if mode == "exact":
            index = cls(n, mode, fpr)
            index.add_texts(texts)
            return index
        parts = [keys for _, keys, _, _ in iter_keys(texts, n)]  # hashed once: 8 bytes per n-gram for now
        index = cls(n, mode, fpr, expected_items=sum(p.size for p in parts))
        for keys in parts:
            index.add_keys(keys)
        return index

    def empty_like(self) -> NgramIndex:
        """An empty index of the same n, mode and geometry (a shard that merges with this one)."""
        out = NgramIndex(self.n, self.mode, self.fpr)
        if self._bloom is not None:
            out._bloom = BlockedBloom(self._bloom.n_blocks, self._bloom.k)
        return out

    def add_keys(self, keys: np.ndarray) -> None:
        if self._bloom is not None:
            self._bloom.add(keys)
        else:
            self._pending.append(keys)
            if sum(p.size for p in self._pending) > 1 << 24:
                self._sort()
        self.n_added += int(keys.size)

    def add_texts(self, texts: Sequence[str | None]) -> None:
        for _, keys, _, _ in iter_keys(texts, self.n):
            self.add_keys(keys)

    def add(self, text: str | None) -> None:
        self.add_texts([text])

    def _sort(self) -> None:
        if self._pending:
            self._keys = _sorted_unique(np.concatenate([self._keys, *self._pending]))
            self._pending = []

    def has(self, keys: np.ndarray) -> np.ndarray:
        """Whether each key is in the index (Bloom: possibly a false positive)."""
        if self._bloom is not None:
            return self._bloom.contains(keys)
        self._sort()
        if not self._keys.size:
            return np.zeros(keys.size, dtype=bool)
        order = np.argsort(keys)  # sorted needles: searchsorted walks the array once (~8x faster)
        pos = np.empty(keys.size, dtype=np.intp)
        pos[order] = np.searchsorted(self._keys, keys[order])
        np.minimum(pos, self._keys.size - 1, out=pos)
        return self._keys[pos] == keys

    def contains(self, ngram: str | Sequence[str]) -> bool:
        """Whether one n-gram (a string of n words, or a sequence of n words) is in the index."""
        gram = words(ngram) if isinstance(ngram, str) else list(ngram)
        if len(gram) != self.n:
            raise ValueError(f"expected a {self.n}-gram, got {len(gram)} words: {gram!r}")
        return bool(self.has(ngram_keys_array(" ".join(gram), self.n))[0])

    def overlap(self, text: str | None) -> float:
        """Fraction of ``text``'s n-grams found in the index (0.0 for texts shorter than n words)."""
        return float(self.overlaps([text])[0])

    def overlaps(self, texts: Iterable[str | None]) -> np.ndarray:
        """Overlap of each text (0.0 for None and texts shorter than n words)."""
        texts = list(texts)
        out = np.zeros(len(texts), dtype=float)
        for lo, keys, owner, counts in iter_keys(texts, self.n):
            hits = np.bincount(owner, weights=self.has(keys), minlength=counts.size)
            out[lo : lo + counts.size] = hits / np.maximum(counts, 1)
        return out

    def merge(self, other: NgramIndex) -> NgramIndex:
        """The index of both corpora: the union of exact sets, the OR of Bloom filters (which
        must have been made with the same geometry, e.g. by :meth:`empty_like`)."""
        if (other.n, other.mode) != (self.n, self.mode):
            raise ValueError(f"cannot merge a {other.mode} {other.n}-gram index into a {self.mode} {self.n}-gram index")
        out = NgramIndex(self.n, self.mode, self.fpr)
        if self._bloom is not None:
            out._bloom = self._bloom.union(other._bloom)
        else:
            self._sort()
            other._sort()
            out._keys = _sorted_unique(np.concatenate([self._keys, other._keys]))
        out.n_added = self.n_added + other.n_added
        return out

    @property
    def design_fpr(self) -> float:
        """Bloom: the false-positive rate at the n-grams added so far; exact: 0."""
        return self._bloom.design_fpr() if self._bloom is not None else 0.0

    @property
    def n_distinct(self) -> int | None:
        """Distinct keys (exact mode only; a Bloom filter does not know)."""
        if self._bloom is not None:
            return None
        self._sort()
        return int(self._keys.size)

    @property
    def memory_bytes(self) -> int:
        """Size of the store: the filter's bit array, or the sorted key array."""
        if self._bloom is not None:
            return int(self._bloom.bits.nbytes)
        self._sort()
        return int(self._keys.nbytes)

    def __repr__(self) -> str:
        return (
            f"NgramIndex(n={self.n}, mode={self.mode!r}, fpr={self.fpr}, n_added={self.n_added}, "
            f"memory_bytes={self.memory_bytes})"
        )


def warm_up() -> float:
    """Compile the index's loops now (or load them from numba's on-disk cache beside this module) and
    return the seconds it took. Every build and query calls them, so the first one in a process
    otherwise pays this once-per-process cost (about 2 s after a change to this module, 0.5 s from
    the cache): call it before timing a build. Later calls cost microseconds."""
    t0 = time.perf_counter()
    text = ["warm up the compiled n-gram loops"]
    NgramIndex.build(text, 1, mode="bloom").overlaps(text)  # the exact mode uses a subset of these kernels
    return time.perf_counter() - t0


def _build_shard(job: tuple[NgramIndex, list[str]]) -> NgramIndex:
    index, texts = job
    index.add_texts(texts)
    return index


def _shards(texts: list[str], count: int) -> list[list[str]]:
    """``count`` runs of consecutive texts of about equal total length."""
    ends = np.cumsum([len(t) for t in texts])
    cuts = np.searchsorted(ends, ends[-1] * np.arange(1, count) / count) if texts else []
    bounds = [0, *[int(c) + 1 for c in cuts], len(texts)]
    return [texts[a:b] for a, b in zip(bounds[:-1], bounds[1:]) if b > a]


def build_sharded(
    texts: Iterable[str | None],
    n: int,
    mode: str = "bloom",
    fpr: float = 0.01,
    shards: int = 2,
    engine: str = "process",
    ray_address: str | None = None,
) -> NgramIndex:
    """:meth:`NgramIndex.build` with the corpus split in ``shards`` parts indexed in parallel
    (``engine="process"``: a process pool; ``"ray"``: Ray tasks, on a local cluster or the one at
    ``ray_address``) and merged. Every shard's Bloom filter has the whole corpus's geometry, so
    the OR is exactly the filter one process would have built."""
    _check_args(n, mode, fpr)
    if engine not in ("process", "ray"):
        raise ValueError(f"unknown engine {engine!r}; expected process or ray")
    texts = [t for t in texts if t]
    proto = NgramIndex(n, mode, fpr, expected_items=count_ngrams(texts, n) if mode == "bloom" else 1)
    jobs = [(proto.empty_like(), part) for part in _shards(texts, max(1, int(shards)))]
    if not jobs:
        return proto
    if engine == "ray":
        parts = _run_on_ray(jobs, ray_address)
    elif len(jobs) == 1:
        parts = [_build_shard(jobs[0])]
    else:
        with ProcessPoolExecutor(max_workers=len(jobs)) as pool:
            parts = list(pool.map(_build_shard, jobs))
    out = parts[0]
    for p in parts[1:]:
        out = out.merge(p)
    return out


def _run_on_ray(jobs, address):
    import ray

    if not ray.is_initialized():
        ray.init(address=address, num_cpus=None if address else len(jobs), include_dashboard=False)
    task = ray.remote(_build_shard)
    return ray.get([task.remote(job) for job in jobs])


# --- a training corpus on disk ----------------------------------------------------------------


def corpus_files(spec: str | Path) -> list[Path]:
    """The files named by ``spec`` (a file, a folder: its files, or a glob), checked.

    Raises ValueError in one line naming ``spec`` when nothing matches or a file is not a
    ``.txt``, ``.jsonl``/``.ndjson`` or ``.parquet`` file; nothing is read yet."""
    s = str(spec)
    p = Path(s).expanduser()
    if glob.has_magic(s):
        found = sorted(Path(f) for f in glob.glob(str(p), recursive=True) if Path(f).is_file())
    elif p.is_dir():
        found = sorted(f for f in p.iterdir() if f.is_file() and f.suffix.lower() in CORPUS_SUFFIXES)
    elif p.is_file():
        found = [p]
    else:
        raise ValueError(f"training corpus {s}: no such file or folder")
    if not found:
        raise ValueError(f"training corpus {s}: matches no {', '.join(CORPUS_SUFFIXES)} file")
    bad = [f for f in found if f.suffix.lower() not in CORPUS_SUFFIXES]
    if bad:
        raise ValueError(f"training corpus {bad[0]}: unsupported file type; use {', '.join(CORPUS_SUFFIXES)}")
    return found


def corpus_texts(path: Path, column: str = "text", n: int = 1) -> Iterator[list[str]]:
    """The documents of one corpus file, in batches: a ``.txt`` file is one document, read in
    pieces of whole lines of about ``CHUNK_BYTES`` characters, each piece starting with the last
    ``n - 1`` words of the one before (so every n-gram that spans two pieces is in exactly one);
    a jsonl/parquet file (read by :func:`mimirlib.core.data.read_table`) gives its ``column`` in one
    batch (rows without text skipped)."""
    if path.suffix.lower() == ".txt":
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            carry, lines, size = "", [], 0
            for line in f:
                lines.append(line)
                size += len(line)
                if size >= CHUNK_BYTES:
                    piece = carry + " " + "".join(lines)
                    yield [piece]
                    tail = piece.rsplit(None, n - 1) if n > 1 else []
                    carry = " ".join(tail[1:] if len(tail) == n else tail)
                    lines, size = [], 0
            if lines:
                yield [carry + " " + "".join(lines)]
        return
    from mimirlib.core.data import read_table

    table = read_table(path)
    if column not in table.columns:
        raise ValueError(f"training corpus {path}: no column {column!r}; columns present: {table.columns}")
    yield [r[column] for r in table.rows if isinstance(r.get(column), str) and r[column]]


@dataclass
class CorpusOverlap:
    """Each text's n-gram overlap with a training corpus, and how MIMIR's decontamination
    (13-gram overlap <= 80% kept) would treat it."""

    overlap: np.ndarray
    n: int
    mode: str
    fpr: float
    files: int
    documents: int
    ngrams: int

    @property
    def failing(self) -> np.ndarray:
        return self.overlap > DECONTAMINATION_MAX

    def summary(self) -> dict:
        return {
            "n": self.n,
            "index": self.mode if self.mode == "exact" else f"bloom (fpr <= {self.fpr:g})",
            "corpus files": self.files,
            "corpus documents": self.documents,
            "corpus n-grams": self.ngrams,
            "non-members": int(self.overlap.size),
            "mean overlap": float(self.overlap.mean()) if self.overlap.size else float("nan"),
            "max overlap": float(self.overlap.max()) if self.overlap.size else float("nan"),
            f"fail decontamination (> {DECONTAMINATION_MAX:.0%})": int(self.failing.sum()),
        }


def corpus_overlap(
    texts: Sequence[str],
    files: Sequence[Path],
    n: int = DECONTAMINATION_N,
    mode: str = "bloom",
    fpr: float = 0.01,
    column: str = "text",
) -> CorpusOverlap:
    """Overlap of ``texts`` with the corpus in ``files`` (see :func:`corpus_files`).

    Bloom mode reads the corpus twice (once to count its n-grams and size the filter, once to
    fill it) so that only one file's documents are in memory at a time."""
    _check_args(n, mode, fpr)
    total = 0
    if mode == "bloom":
        total = sum(count_ngrams(batch, n) for f in files for batch in corpus_texts(f, column, n))
    index = NgramIndex(n, mode, fpr, expected_items=total)
    docs = 0
    for f in files:
        for batch in corpus_texts(f, column, n):
            index.add_texts(batch)
            docs += len(batch) if f.suffix.lower() != ".txt" else 0
        docs += f.suffix.lower() == ".txt"
    return CorpusOverlap(index.overlaps(texts), n, mode, fpr, len(files), docs, index.n_added)


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


# --- the baseline: the implementation before vectorisation ------------------------------------


def loop_ngram_key(gram: Sequence[str]) -> int:
    """The baseline's key: blake2b of the space-joined words (stable across processes)."""
    digest = hashlib.blake2b(" ".join(gram).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


class LoopNgramIndex:
    """The n-gram index as it was before vectorisation (a Python loop over n-grams, a Python
    set or an ``rbloom`` filter): the benchmark's baseline and an independent oracle in tests."""

    def __init__(self, n: int, mode: str = "bloom", fpr: float = 0.01, expected_items: int = 1):
        _check_args(n, mode, fpr)
        self.n, self.mode, self.fpr = n, mode, fpr
        self._store: set[int] | Bloom = set() if mode == "exact" else Bloom(max(1, expected_items), fpr)
        self.n_added = 0

    @classmethod
    def build(cls, texts: Iterable[str | None], n: int, mode: str = "bloom", fpr: float = 0.01) -> LoopNgramIndex:
        texts = [t for t in texts if t]
        index = cls(n, mode, fpr, expected_items=sum(max(0, len(words(t)) - n + 1) for t in texts))
        for t in texts:
            index.add(t)
        return index

    def _keys(self, text: str | None) -> list[int]:
        w = words(text) if text else []
        return [loop_ngram_key(w[i : i + self.n]) for i in range(len(w) - self.n + 1)]

    def add(self, text: str | None) -> None:
        keys = self._keys(text)
        self._store.update(keys)
        self.n_added += len(keys)

    def overlap(self, text: str | None) -> float:
        keys = self._keys(text)
        return sum(k in self._store for k in keys) / len(keys) if keys else 0.0

    def overlaps(self, texts: Iterable[str | None]) -> np.ndarray:
        return np.array([self.overlap(t) for t in texts], dtype=float)

    @property
    def memory_bytes(self) -> int:
        if self.mode == "bloom":
            return self._store.size_in_bits // 8
        return sys.getsizeof(self._store) + sum(sys.getsizeof(k) for k in self._store)
