"""Benchmarks: members, non-members and (optionally) their neighbours.

One loader serves the embedded lab and real data because both are stored in the MIMIR schema:
a table whose row ``i`` pairs ``member[i]`` with ``nonmember[i]`` and, optionally, the lists
``member_neighbors[i]`` / ``nonmember_neighbors[i]`` (see ``../shared/RESOURCES.md`` section 4).
Validation happens on load, so an attack never runs on a half-broken benchmark.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

REQUIRED_COLUMNS = ("member", "nonmember")
NEIGHBOR_COLUMNS = ("member_neighbors", "nonmember_neighbors")


class BenchmarkError(ValueError):
    """A benchmark file or table that does not follow the MIMIR schema."""


@dataclass(frozen=True)
class Benchmark:
    """Members and non-members of one benchmark (a domain and split, say).

    ``member_neighbors[i]`` are perturbed copies of ``members[i]`` (the neighbourhood attack's
    inputs); ``meta`` carries anything the source knows about each text (lab ground truth, dates).
    """

    name: str
    members: tuple[str, ...]
    nonmembers: tuple[str, ...]
    member_neighbors: tuple[tuple[str, ...], ...] | None = None
    nonmember_neighbors: tuple[tuple[str, ...], ...] | None = None
    meta: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        _check_texts(self.members, f"{self.name}: member")
        _check_texts(self.nonmembers, f"{self.name}: nonmember")
        for col, texts, neigh in (
            ("member_neighbors", self.members, self.member_neighbors),
            ("nonmember_neighbors", self.nonmembers, self.nonmember_neighbors),
        ):
            if neigh is None:
                continue
            if len(neigh) != len(texts):
                raise BenchmarkError(f"{self.name}: {col} has {len(neigh)} rows for {len(texts)} texts")
            for i, row in enumerate(neigh):
                _check_texts(row, f"{self.name}: {col}[{i}]")

    @property
    def has_neighbors(self) -> bool:
        return self.member_neighbors is not None and self.nonmember_neighbors is not None

    @property
    def labels(self) -> list[int]:
        """1 for members then 0 for non-members, aligned with :meth:`texts`."""
        return [1] * len(self.members) + [0] * len(self.nonmembers)

    def texts(self) -> list[str]:
        return list(self.members) + list(self.nonmembers)

    def subset(self, n: int | None) -> "Benchmark":
        """The first ``n`` members and non-members (keeps pairs; ``None`` keeps all)."""
        if n is None or (n >= len(self.members) and n >= len(self.nonmembers)):
            return self
        cut = lambda seq: None if seq is None else tuple(seq[:n])  # noqa: E731
        meta = {k: (v[:n] if isinstance(v, (list, tuple)) and len(v) in (len(self.members), len(self.nonmembers)) else v)
                for k, v in self.meta.items()}
        return Benchmark(self.name, cut(self.members), cut(self.nonmembers),
                         cut(self.member_neighbors), cut(self.nonmember_neighbors), meta)

    def to_records(self) -> list[dict]:
        """Rows in the MIMIR schema (pairs by index; unequal sides are padded with ``None``)."""
        n = max(len(self.members), len(self.nonmembers))
        rows = []
        for i in range(n):
            row = {"member": _at(self.members, i), "nonmember": _at(self.nonmembers, i)}
            if self.has_neighbors:
                row["member_neighbors"] = list(_at(self.member_neighbors, i) or [])
                row["nonmember_neighbors"] = list(_at(self.nonmember_neighbors, i) or [])
            rows.append(row)
        return rows


def _at(seq, i):
    return seq[i] if i < len(seq) else None


def _check_texts(texts: Sequence[str], what: str) -> None:
    if len(texts) == 0:
        raise BenchmarkError(f"{what}: no texts")
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise BenchmarkError(f"{what}[{i}] is {type(t).__name__}, not text")
        if not t.strip():
            raise BenchmarkError(f"{what}[{i}] is empty")


def benchmark_from_records(records: Sequence[dict], name: str, source: str = "") -> Benchmark:
    """Build a :class:`Benchmark` from MIMIR-schema rows, naming ``source`` in every error."""
    where = source or name
    if not records:
        raise BenchmarkError(f"{where}: no rows")
    columns = set(records[0])
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing:
        raise BenchmarkError(f"{where}: missing column(s) {missing}; found {sorted(columns)}")
    members = [r.get("member") for r in records if r.get("member") is not None]
    nonmembers = [r.get("nonmember") for r in records if r.get("nonmember") is not None]
    neigh = {}
    if all(c in columns for c in NEIGHBOR_COLUMNS):
        for col, side in (("member_neighbors", "member"), ("nonmember_neighbors", "nonmember")):
            neigh[col] = tuple(tuple(r[col]) for r in records if r.get(side) is not None)
    try:
        return Benchmark(name, tuple(members), tuple(nonmembers),
                         neigh.get("member_neighbors"), neigh.get("nonmember_neighbors"),
                         meta={"source": str(source)})
    except BenchmarkError as e:
        raise BenchmarkError(f"{where}: {e}") from None


def read_records(path: str | Path) -> list[dict]:
    """Rows of a ``.jsonl`` (one JSON object per line) or ``.parquet`` file."""
    path = Path(path)
    if not path.exists():
        raise BenchmarkError(f"{path}: file not found")
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            return pq.read_table(path).to_pylist()
        except Exception as e:  # pyarrow raises many types
            raise BenchmarkError(f"{path}: unreadable parquet ({e})") from None
    rows = []
    for lineno, row in iter_jsonl(path):
        if not isinstance(row, dict):
            raise BenchmarkError(f"{path}:{lineno}: expected a JSON object, got {type(row).__name__}")
        rows.append(row)
    return rows


def iter_jsonl(path: Path):
    """``(line number, value)`` for each non-blank line; a malformed line raises, naming file and line."""
    with Path(path).open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield lineno, json.loads(line)
            except json.JSONDecodeError as e:
                raise BenchmarkError(f"{path}:{lineno}: malformed JSON ({e.msg})") from None


def write_records(records: Sequence[dict], path: str | Path) -> Path:
    """Write MIMIR-schema rows as jsonl, atomically (a reader never sees half a file)."""
    import os
    import tempfile

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            for r in records:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def load_benchmark(source: str | Path, config: str | None = None, split: str | None = None, *,
                   neighbors: bool = True) -> Benchmark:
    """Load a benchmark from a file, a folder, or a hub dataset name.

    ``source`` may be a ``.jsonl``/``.parquet`` file in the MIMIR schema; a folder holding
    ``<config>/<split>.{jsonl,parquet}`` (the layout the lab exports); a local copy of the
    MIMIR dataset repository; or the hub name ``iamgroot42/mimir`` (see :mod:`mimirlib.hub`).
    ``neighbors`` asks the MIMIR layouts for their neighbour files too (paired files always
    carry theirs when present).
    """
    from . import hub

    p = Path(source)
    if p.is_dir() and hub.is_mimir_layout(p) or (not p.exists() and str(source) == hub.MIMIR_REPO):
        if config is None or split is None:
            raise BenchmarkError(f"{source}: the MIMIR dataset needs config= and split=")
        return hub.load_mimir(config, split, local_root=p if p.is_dir() else None, neighbors=neighbors)
    if p.is_file():
        return benchmark_from_records(read_records(p), name=p.stem, source=str(p))
    if p.is_dir():
        if config is None or split is None:
            raise BenchmarkError(f"{p}: a benchmark folder needs config= and split=")
        for ext in (".jsonl", ".parquet"):
            f = p / config / f"{split}{ext}"
            if f.exists():
                return benchmark_from_records(read_records(f), name=f"{config}/{split}", source=str(f))
        available = sorted(str(x.relative_to(p)) for x in p.glob("*/*") if x.suffix in (".jsonl", ".parquet"))
        raise BenchmarkError(f"{p}: no benchmark {config}/{split}; available: {available[:20]}")
    raise BenchmarkError(f"{source}: no such file or folder")
