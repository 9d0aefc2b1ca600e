"""Loading and writing benchmarks: MIMIR-schema files and folders, and the MIMIR dataset; and
:func:`read_table`, the one reader of every table a user or the lab hands us.

One loader serves the embedded lab and real data because both are stored in the MIMIR schema
(see :mod:`mimirlib.core.benchmark`): a table whose row ``i`` pairs ``member[i]`` with ``nonmember[i]``
and, optionally, the lists ``member_neighbors[i]`` / ``nonmember_neighbors[i]``. The MIMIR dataset
itself (local copy or hub name) is read by :mod:`mimirlib.core.hub`.

:func:`read_table` reads local ``.jsonl``/``.csv``/``.parquet`` files itself (exact line numbers
in errors, nothing written anywhere: the reasons, measured, are in the README) and hands
``hf:NAME[:CONFIG]:SPLIT`` -- a Hugging Face dataset by name, or a folder saved with
``save_to_disk`` / a folder of data files -- to ``datasets``, whose cache goes under
:func:`datasets_cache_dir`.
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from mimirlib.core import hub
from mimirlib import paths
from mimirlib.core.benchmark import Benchmark, BenchmarkError, iter_jsonl

__all__ = [
    "Benchmark",
    "BenchmarkError",
    "iter_jsonl",
    "HF_PREFIX",
    "TABLE_SUFFIXES",
    "HFSpec",
    "Table",
    "benchmark_from_records",
    "datasets_cache_dir",
    "error_line",
    "parse_hf_spec",
    "read_records",
    "read_table",
    "write_records",
    "load_benchmark",
]

REQUIRED_COLUMNS = ("member", "nonmember")
NEIGHBOR_COLUMNS = ("member_neighbors", "nonmember_neighbors")
TABLE_SUFFIXES = (".jsonl", ".ndjson", ".csv", ".parquet")
HF_PREFIX = "hf:"
HF_SYNTAX = "hf:NAME, hf:NAME:SPLIT or hf:NAME:CONFIG:SPLIT"
# One request to the hub's front page before asking `datasets`: offline, `datasets` retries five
# times with back-off (23 s here) and logs each retry; the probe fails in ~0.2 s.
HUB_PROBE_TIMEOUT_S = 5.0
# Markers of a folder written by `Dataset.save_to_disk` / `DatasetDict.save_to_disk`.
SAVED_DATASET_FILES = ("dataset_dict.json", "state.json")


def error_line(e: BaseException) -> str:
    """The first line of an exception's message (or its type): errors we pass on stay one line."""
    s = str(e).strip()
    return s.splitlines()[0] if s else type(e).__name__


def datasets_cache_dir() -> Path:
    """Where ``datasets`` keeps what it builds (Arrow copies, downloads): under the project cache,
    never beside the user's data or in the repository."""
    return paths.cache_root() / "datasets"


# ----------------------------------------------------------------------------- the one reader


@dataclass(frozen=True)
class Table:
    """The rows of one input, with what an error message needs to point into it.

    ``numbers[i]`` is row ``i``'s position counted in ``unit``: ``"line"`` (a jsonl file's line
    numbers, blank lines included) or ``"row"`` (from 1, after any header). ``columns`` lists
    every key seen, in first-seen order (a jsonl row may lack a key that others have).
    """

    source: str
    rows: list[dict]
    columns: list[str]
    numbers: list[int]
    unit: str

    def numbered(self):
        """``(number, row)`` pairs."""
        return zip(self.numbers, self.rows)


def read_table(source: str | Path) -> Table:
    """Rows of a ``.jsonl``/``.ndjson``, ``.csv`` or ``.parquet`` file, or of ``hf:...`` (see
    :func:`parse_hf_spec`): a Hugging Face dataset by name, or a dataset folder.

    Every problem raises :class:`BenchmarkError` in one line naming the file (and the line of a
    malformed jsonl line): missing file, folder given for a file, unsupported type, bad JSON,
    a line that is not a JSON object, bad UTF-8, an empty or malformed CSV, unreadable parquet;
    for ``hf:``, a malformed name, a missing folder, an unknown split or config, and an
    unreachable hub. CSV values are read as text, exactly as written (no "NA" -> missing).
    """
    if isinstance(source, str) and source.startswith(HF_PREFIX):
        return _read_hf(parse_hf_spec(source))
    p = Path(source)
    if not p.exists():
        looks_hub = isinstance(source, str) and "/" in source and not hub.is_local_path(source)
        looks_hub = looks_hub and p.suffix.lower() not in TABLE_SUFFIXES  # owner/name, not dir/x.jsonl
        hint = f" (a Hugging Face dataset? write {HF_PREFIX}{source}:SPLIT)" if looks_hub else ""
        raise BenchmarkError(f"{p}: file not found{hint}")
    if p.is_dir():
        raise BenchmarkError(
            f"{p}: is a folder, expected a .jsonl, .csv or .parquet file (a dataset folder: {HF_PREFIX}{p})"
        )
    suffix = p.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise BenchmarkError(f"{p}: unsupported file type {p.suffix or '(none)'!r}; use .jsonl, .csv or .parquet")
    try:
        if suffix in (".jsonl", ".ndjson"):
            return _read_jsonl(p)
        if suffix == ".csv":
            return _read_csv(p)
        return _read_parquet(p)
    except UnicodeDecodeError as e:
        raise BenchmarkError(f"{p}: not UTF-8 text ({e.reason} at byte {e.start})") from None


def _read_jsonl(p: Path) -> Table:
    rows, numbers, columns = [], [], {}
    for lineno, value in iter_jsonl(p):
        if not isinstance(value, dict):
            raise BenchmarkError(f"{p}:{lineno}: expected a JSON object, got {type(value).__name__}")
        rows.append(value)
        numbers.append(lineno)
        columns.update(dict.fromkeys(value))
    return Table(str(p), rows, list(columns), numbers, "line")


def _read_csv(p: Path) -> Table:
    import pandas as pd

    try:
        df = pd.read_csv(p, dtype=str, keep_default_na=False, encoding="utf-8")
    except pd.errors.EmptyDataError:
        raise BenchmarkError(f"{p}: empty file (no header, no rows)") from None
    except pd.errors.ParserError as e:
        raise BenchmarkError(f"{p}: malformed CSV ({error_line(e)})") from None
    rows = df.to_dict("records")
    return Table(str(p), rows, [str(c) for c in df.columns], list(range(1, len(rows) + 1)), "row")


def _read_parquet(p: Path) -> Table:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(p)
    except Exception as e:  # pyarrow raises many types
        raise BenchmarkError(f"{p}: unreadable parquet ({error_line(e)})") from None
    rows = table.to_pylist()
    return Table(str(p), rows, list(table.column_names), list(range(1, len(rows) + 1)), "row")


# ----------------------------------------------------------------------------- hf: datasets


@dataclass(frozen=True)
class HFSpec:
    """A parsed ``hf:`` source: ``name`` (hub ``owner/name`` or a local folder), optional
    ``config`` and ``split``; ``text`` is the source as written, for messages."""

    name: str
    config: str | None
    split: str | None
    text: str

    @property
    def local(self) -> bool:
        return hub.is_local_path(self.name)


def parse_hf_spec(text: str) -> HFSpec:
    """``hf:NAME``, ``hf:NAME:SPLIT`` or ``hf:NAME:CONFIG:SPLIT`` (the split is always last; an
    empty CONFIG, ``hf:NAME::SPLIT``, means the default). NAME is a hub dataset (``owner/name``)
    or a local folder (``./x``, ``/x``, ``~/x``: saved with ``save_to_disk``, or of data files)."""
    if not isinstance(text, str) or not text.startswith(HF_PREFIX):
        raise BenchmarkError(f"{text!r}: not a dataset source; expected {HF_SYNTAX}")
    parts = text[len(HF_PREFIX) :].split(":")
    if len(parts) > 3:
        raise BenchmarkError(f"{text}: too many ':'-separated parts; expected {HF_SYNTAX}")
    if not parts[0].strip():
        raise BenchmarkError(f"{text}: no dataset name; expected {HF_SYNTAX}")
    config = parts[1] or None if len(parts) == 3 else None
    split = parts[-1] if len(parts) > 1 else None
    if split is not None and not split.strip():
        raise BenchmarkError(f"{text}: empty split; expected {HF_SYNTAX}")
    return HFSpec(parts[0], config, split, text)


@contextmanager
def _quiet_datasets():
    """``datasets`` with its log lines and progress bars off (restored after): a failure must
    reach the user as our one line, not after ``datasets``' own ERROR lines and bars."""
    import logging

    import datasets
    import huggingface_hub.utils as hub_utils

    loggers = [logging.getLogger(n) for n in ("datasets", "huggingface_hub", "fsspec")]
    levels = [lg.level for lg in loggers]
    bars = [(m, m.are_progress_bars_disabled()) for m in (datasets, hub_utils)]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL + 1)
    for m, _ in bars:
        m.disable_progress_bars()
    try:
        yield datasets
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)
        for m, was_disabled in bars:
            if not was_disabled:
                m.enable_progress_bars()


def _unreachable(spec: HFSpec, endpoint: str, offline: bool) -> str:
    local = "pass a local file (.jsonl, .csv or .parquet) or hf:<folder saved with save_to_disk>"
    if offline:
        return (
            f"{spec.text}: HF_HUB_OFFLINE is set and dataset {spec.name!r} is not in the datasets cache "
            f"({datasets_cache_dir()}); {local}, or unset HF_HUB_OFFLINE where the hub is reachable"
        )
    return (
        f"{spec.text}: the Hugging Face hub ({endpoint}) is unreachable (offline?) and dataset {spec.name!r} "
        f"cannot be fetched; {local}, or set HF_HUB_OFFLINE=1 to use a copy already in the datasets cache"
    )


def _check_hub(spec: HFSpec, offline: bool) -> None:
    """Fail in one line, in a fraction of a second, when the hub cannot be reached (see
    :data:`HUB_PROBE_TIMEOUT_S`); with ``HF_HUB_OFFLINE`` set, ``datasets`` reads its cache only."""
    from huggingface_hub import constants
    from huggingface_hub.utils import get_session

    if offline:
        return
    try:
        get_session().head(constants.ENDPOINT, timeout=HUB_PROBE_TIMEOUT_S)
    except Exception:  # any transport failure (DNS, refused, timeout, TLS, proxy) means: not reachable
        raise BenchmarkError(_unreachable(spec, constants.ENDPOINT, False)) from None


def _read_hf(spec: HFSpec) -> Table:
    folder = Path(spec.name).expanduser()
    if spec.local:
        if not folder.exists():
            raise BenchmarkError(f"{spec.text}: no such folder {str(folder)!r}")
        if not folder.is_dir():
            raise BenchmarkError(f"{spec.text}: {folder} is a file; pass it without {HF_PREFIX}")
    with _quiet_datasets() as datasets:
        offline = bool(datasets.config.HF_HUB_OFFLINE)
        if not spec.local:
            _check_hub(spec, offline)
        try:
            if spec.local and any((folder / f).is_file() for f in SAVED_DATASET_FILES):
                if spec.config:
                    raise BenchmarkError(
                        f"{spec.text}: a folder saved with save_to_disk has no configs; use hf:FOLDER:SPLIT"
                    )
                obj = datasets.load_from_disk(str(folder))
            else:
                obj = datasets.load_dataset(
                    str(folder) if spec.local else spec.name,
                    spec.config,
                    split=spec.split,
                    cache_dir=str(datasets_cache_dir()),
                )
        except BenchmarkError:
            raise
        except ConnectionError:  # HF_HUB_OFFLINE set and no cached copy
            from huggingface_hub import constants

            raise BenchmarkError(_unreachable(spec, constants.ENDPOINT, offline)) from None
        except Exception as e:  # datasets raises many types (not found, gated, unknown split/config, format)
            raise BenchmarkError(f"{spec.text}: cannot load dataset {spec.name!r} ({error_line(e)})") from None
        ds = _pick_split(spec, obj, datasets.DatasetDict)
        return _table_of(spec, ds, datasets.ClassLabel)


def _pick_split(spec: HFSpec, obj, dataset_dict_type):
    if isinstance(obj, dataset_dict_type):
        splits = list(obj)
        if spec.split is not None:
            if spec.split not in obj:
                raise BenchmarkError(f"{spec.text}: no split {spec.split!r}; splits: {splits}")
            return obj[spec.split]
        if len(splits) == 1:
            return obj[splits[0]]
        raise BenchmarkError(f"{spec.text}: several splits {splits}; name one ({HF_SYNTAX})")
    if spec.split is not None and obj.split is not None and str(obj.split) != spec.split:
        raise BenchmarkError(f"{spec.text}: this dataset is the single split {str(obj.split)!r}")
    return obj


def _table_of(spec: HFSpec, ds, class_label_type) -> Table:
    """Rows as plain Python values; a class-label column becomes its label names (its integers
    index the names, so 0 can mean "member")."""
    rows = ds.to_list()
    for col, feature in ds.features.items():
        if isinstance(feature, class_label_type):
            for r in rows:
                if isinstance(r[col], int) and r[col] >= 0:
                    r[col] = feature.int2str(r[col])
    return Table(spec.text, rows, list(ds.column_names), list(range(1, len(rows) + 1)), "row")


# ----------------------------------------------------------------------------- benchmarks


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
    """Rows of a ``.jsonl``, ``.csv`` or ``.parquet`` file (or ``hf:...``): :func:`read_table`'s rows."""
    return read_table(path).rows


def write_records(records: Sequence[dict], path: str | Path) -> Path:
    """Write MIMIR-schema rows as jsonl, atomically (a reader never sees half a file)."""
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
    """Load a benchmark from a file, a folder, a hub dataset name or an ``hf:`` source.

    ``source`` may be a ``.jsonl``/``.parquet`` file in the MIMIR schema; a folder holding
    ``<config>/<split>.{jsonl,parquet}`` (the layout the lab exports); a local copy of the
    MIMIR dataset repository; the hub name ``iamgroot42/mimir`` (see :mod:`mimirlib.core.hub`); or
    ``hf:NAME[:CONFIG]:SPLIT``, any dataset in the MIMIR schema (config and split inside it).
    ``neighbors`` asks the MIMIR layouts for their neighbour files too (paired files always
    carry theirs when present).
    """
    if isinstance(source, str) and source.startswith(HF_PREFIX):
        if config is not None or split is not None:
            raise BenchmarkError(f"{source}: give the config and split inside it ({HF_SYNTAX}), not as arguments")
        spec = parse_hf_spec(source)
        name = "/".join(x for x in (spec.name, spec.config, spec.split) if x)
        return benchmark_from_records(read_table(source).rows, name=name, source=source)
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
