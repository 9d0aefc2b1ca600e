"""Loading and writing benchmarks: MIMIR-schema files and folders, and the MIMIR dataset.

One loader serves the embedded lab and real data because both are stored in the MIMIR schema
(see :mod:`mimirlib.benchmark`): a table whose row ``i`` pairs ``member[i]`` with ``nonmember[i]``
and, optionally, the lists ``member_neighbors[i]`` / ``nonmember_neighbors[i]``. The MIMIR dataset
itself (local copy or hub name) is read by :mod:`mimirlib.hub`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from . import hub
from .benchmark import Benchmark, BenchmarkError, iter_jsonl

__all__ = [
    "Benchmark",
    "BenchmarkError",
    "iter_jsonl",
    "benchmark_from_records",
    "read_records",
    "write_records",
    "load_benchmark",
]

REQUIRED_COLUMNS = ("member", "nonmember")
NEIGHBOR_COLUMNS = ("member_neighbors", "nonmember_neighbors")


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
        return Benchmark(
            name,
            tuple(members),
            tuple(nonmembers),
            neigh.get("member_neighbors"),
            neigh.get("nonmember_neighbors"),
            meta={"source": str(source)},
        )
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


def load_benchmark(
    source: str | Path, config: str | None = None, split: str | None = None, *, neighbors: bool = True
) -> Benchmark:
    """Load a benchmark from a file, a folder, or a hub dataset name.

    ``source`` may be a ``.jsonl``/``.parquet`` file in the MIMIR schema; a folder holding
    ``<config>/<split>.{jsonl,parquet}`` (the layout the lab exports); a local copy of the
    MIMIR dataset repository; or the hub name ``iamgroot42/mimir`` (see :mod:`mimirlib.hub`).
    ``neighbors`` asks the MIMIR layouts for their neighbour files too (paired files always
    carry theirs when present).
    """
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
