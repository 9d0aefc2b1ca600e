"""Stable 64-bit keys of word n-grams, computed vectorised: the hashing behind :class:`NgramIndex`.

Words are whitespace-separated tokens, exactly Python's ``str.split()`` (the paper's appendix
B.1). Texts are encoded to UTF-8 bytes in chunks; numpy finds the words (comparisons over the
bytes); a loop compiled by numba hashes every word from unaligned 8-byte reads of its bytes and
its length (splitmix64-mixed), and another every n-gram with a polynomial hash over the word
hashes, rolled from one window to the next modulo 2**64: no Python loop per word or per n-gram.
Each n-gram gets a stable 64-bit key, the same in every process whatever ``PYTHONHASHSEED``
(:class:`mimirlib.core.ngrams.NgramIndex` stores them; :mod:`mimirlib.core.bloom` filters them).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

import numba
import numpy as np

CHUNK_BYTES = 1 << 20  # texts are hashed ~1 MiB at a time: the per-byte arrays stay in cache

_U64 = np.uint64
_WORD_BASE = 0xD6E8FEB86659FD93  # odd, so invertible modulo 2**64
_WORD_BASE_INV = pow(_WORD_BASE, -1, 1 << 64)

# str.split()'s separators (str.isspace()): the ASCII ones as single UTF-8 bytes (the table), the
# others (the pattern) found in their UTF-8 bytes by _unicode_spaces.
_WS_TABLE = np.zeros(256, dtype=bool)
_WS_TABLE[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = True
_UNICODE_WS = re.compile("[\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")

# numba compiles the per-word and per-n-gram passes (numpy's pass per operation held the Bloom build
# near 14 M n-grams/s); uint64 arithmetic wraps modulo 2**64; cache=True compiles once (about 2 s).
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
def splitmix64(values):
    """splitmix64's finaliser of every value (uint64 array): well-spread bits from counters."""
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
