"""The blocked Bloom filter of n-gram keys: its geometry, design false-positive rate and compiled loops.

A Bloom filter (the paper's appendix B.1 choice for the Pile, where the set of all n-grams does
not fit in memory) has no false negatives, so an overlap read from it is never below the exact
one, and it exceeds it by at most its design false-positive rate on the n-grams that are absent.
Here every item's k bits lie in one 64-bit block (one memory access per item), picked from a
table of bit patterns; filters of the same geometry merge by OR, so shards built in parallel
give the filter of the whole corpus (:func:`mimirlib.core.ngrams.build_sharded`).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numba
import numpy as np

from mimirlib.core.ngram_keys import splitmix64

BLOCK_BITS = 64  # one Bloom block is one uint64 word: one memory access per n-gram
MAX_BLOCKS = 1 << 32  # 32 GiB of filter: fastrange below needs the block count under 2**32

_U64 = np.uint64
SALT = _U64(0x5851F42D4C957F2D)  # decorrelates the Bloom bit choice from the block choice
_SALT16 = _U64(int(SALT) & 0xFFFF)  # its low 16 bits, all that the pattern choice reads


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
    draws = splitmix64(np.arange(PATTERNS * k, dtype=_U64) + SALT).reshape(PATTERNS, k) & _U64(63)
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
