"""The benchmark type: members, non-members and (optionally) their neighbours, checked on creation.

A benchmark is stored in the MIMIR schema: a table whose row ``i`` pairs ``member[i]`` with
``nonmember[i]`` and, optionally, the lists ``member_neighbors[i]`` / ``nonmember_neighbors[i]``
(the neighbourhood attack's perturbed copies). Validation happens here, so an attack never runs
on a half-broken benchmark. Loading from files, folders and the hub is :mod:`mimirlib.core.data`'s job
(which re-exports these names); :mod:`mimirlib.core.hub` builds benchmarks from the MIMIR dataset.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

__all__ = ["Benchmark", "BenchmarkError", "iter_jsonl"]


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

        def cut(seq):
            return None if seq is None else tuple(seq[:n])

        sides = (len(self.members), len(self.nonmembers))
        meta = {k: (v[:n] if isinstance(v, (list, tuple)) and len(v) in sides else v) for k, v in self.meta.items()}
        return Benchmark(
            self.name,
            cut(self.members),
            cut(self.nonmembers),
            cut(self.member_neighbors),
            cut(self.nonmember_neighbors),
            meta,
        )

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
