"""Word-level n-gram overlap between a text and a corpus (the paper's section 3.2.2): the index and its queries.

The n-gram overlap of a non-member x on a training set D is the fraction of x's word
n-grams (stride 1) that occur anywhere in D. Words are whitespace-separated tokens, as in
the paper's appendix B.1 (exactly Python's ``str.split()``).

Three layers:

* ``ngram_set`` / ``overlap`` / ``overlaps``: the original exact helpers (a Python set of
  tuple hashes, one process); the lab build uses them to decontaminate non-members at 13-gram
  overlap <= 80%, so they stay as they are.
* ``NgramIndex``: the same measure, vectorised for corpus scale. Each n-gram gets a stable
  64-bit key (:mod:`mimirlib.core.ngram_keys`: compiled rolling hashes, no Python loop per word
  or per n-gram), stored either as a sorted array of distinct keys (``mode="exact"``, 8 bytes per
  distinct n-gram) or in a blocked Bloom filter (``mode="bloom"``, :mod:`mimirlib.core.bloom`),
  whose overlap is never below the exact one and exceeds it by at most its design false-positive
  rate on the n-grams that are absent. Indexes with the same geometry merge (exact: union;
  Bloom: OR), so shards built in parallel give the index of the whole corpus
  (:func:`build_sharded`); :func:`corpus_overlap` reads a training corpus from files.
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
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from rbloom import Bloom

from mimirlib.core import ngram_keys
from mimirlib.core.bloom import BlockedBloom
from mimirlib.core.ngram_keys import count_ngrams, iter_keys, ngram_keys_array

MODES = ("exact", "bloom")
# MIMIR's decontamination (appendix A.3): non-members are kept when their 13-gram overlap with
# the training data is <= 80%; one above that would be dropped as contaminated.
DECONTAMINATION_N = 13
DECONTAMINATION_MAX = 0.8
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
        self._keys = np.zeros(0, dtype=np.uint64)  # exact: sorted distinct keys
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
    """Compile the index's loops now (or load them from numba's on-disk cache beside
    :mod:`~mimirlib.core.ngram_keys` and :mod:`~mimirlib.core.bloom`) and return the seconds it
    took. Every build and query calls them, so the first one in a process otherwise pays this
    once-per-process cost (about 2 s after a change to those modules, 0.5 s from the cache): call
    it before timing a build. Later calls cost microseconds."""
    t0 = time.perf_counter()
    text = ["warm up the compiled n-gram loops"]
    NgramIndex.build(text, 1, mode="bloom").overlaps(text)  # the exact mode uses a subset of these kernels
    return time.perf_counter() - t0


def _build_shard(job: tuple[NgramIndex, list[str]]) -> NgramIndex:
    """The index of one shard's texts, in a filter of its own: on Ray the prototype comes from the
    object store read-only (numba cannot write it), so only its geometry is used."""
    proto, texts = job
    index = proto.empty_like()
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
    engine="process",
    ray_address: str | None = None,
) -> NgramIndex:
    """:meth:`NgramIndex.build` with the corpus split in ``shards`` parts indexed in parallel
    (``engine="process"``: a process pool; ``"ray"`` or a :class:`~mimirlib.core.engines.RayEngine`:
    Ray tasks, on a local cluster or the one at ``ray_address``, see :mod:`mimirlib.core.engines`)
    and merged. Every shard's Bloom filter has the whole corpus's geometry, so the OR is exactly
    the filter one process would have built."""
    from mimirlib.core.engines import RayEngine, resolve_engine

    _check_args(n, mode, fpr)
    if engine not in ("process", "ray") and not isinstance(engine, RayEngine):
        raise ValueError(f"unknown engine {engine!r}; expected process or ray")
    runner = resolve_engine(engine, ray_address) if engine != "process" else None
    texts = [t for t in texts if t]
    proto = NgramIndex(n, mode, fpr, expected_items=count_ngrams(texts, n) if mode == "bloom" else 1)
    jobs = [(proto, part) for part in _shards(texts, max(1, int(shards)))]
    if not jobs:
        return proto
    if runner is not None:
        parts = _run_on_ray(jobs, runner)
    elif len(jobs) == 1:
        parts = [_build_shard(jobs[0])]
    else:
        with ProcessPoolExecutor(max_workers=len(jobs)) as pool:
            parts = list(pool.map(_build_shard, jobs))
    out = parts[0]
    if runner is not None and len(parts) == 1:
        out = out.merge(proto)  # a writable copy: what Ray returns is read-only
    for p in parts[1:]:
        out = out.merge(p)
    return out


def _run_on_ray(jobs, runner):
    """The shards' indexes built by Ray tasks on ``runner``'s cluster (joined, or started, by
    :func:`mimirlib.core.ray_cluster.connect`); the prototype goes to the object store once."""
    from mimirlib.core.ray_cluster import connect, import_ray

    ray = import_ray()
    connect(runner)
    proto = ray.put(jobs[0][0])
    task = ray.remote(_ray_shard)
    return ray.get([task.remote(proto, texts) for _, texts in jobs])


def _ray_shard(proto: NgramIndex, texts: list[str]) -> NgramIndex:
    return _build_shard((proto, texts))


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
    pieces of whole lines of about ``ngram_keys.CHUNK_BYTES`` characters, each piece starting with the last
    ``n - 1`` words of the one before (so every n-gram that spans two pieces is in exactly one);
    a jsonl/parquet file (read by :func:`mimirlib.core.data.read_table`) gives its ``column`` in one
    batch (rows without text skipped)."""
    if path.suffix.lower() == ".txt":
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            carry, lines, size = "", [], 0
            for line in f:
                lines.append(line)
                size += len(line)
                if size >= ngram_keys.CHUNK_BYTES:
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
    engine=None,
) -> CorpusOverlap:
    """Overlap of ``texts`` with the corpus in ``files`` (see :func:`corpus_files`).

    Bloom mode reads the corpus twice (once to count its n-grams and size the filter, once to
    fill it) so that only one file's documents are in memory at a time. With ``engine`` (``"ray"``
    or a :class:`~mimirlib.core.engines.RayEngine`) the corpus is read once, whole, and indexed by
    :func:`build_sharded` in one shard per CPU of the cluster."""
    _check_args(n, mode, fpr)
    if engine is not None:
        return _corpus_overlap_on_ray(texts, files, n, mode, fpr, column, engine)
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


def _corpus_overlap_on_ray(texts, files, n, mode, fpr, column, engine) -> CorpusOverlap:
    from mimirlib.core.engines import resolve_engine
    from mimirlib.core.ray_cluster import cluster_cpus

    runner = resolve_engine(engine)
    corpus, docs = [], 0
    for f in files:
        for batch in corpus_texts(f, column, n):
            corpus += batch
            docs += len(batch) if f.suffix.lower() != ".txt" else 0
        docs += f.suffix.lower() == ".txt"
    index = build_sharded(corpus, n, mode, fpr, shards=cluster_cpus(runner), engine=runner)
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
