"""The papers' own tables, transcribed once (MIMIR: Duan et al. 2024; RaMIA).

Notebooks put reproduced numbers next to the published ones; keeping the published numbers in
one checked data file (``resources/paper_tables.csv``, one printed number per line, described by
``resources/paper_tables.yml``) means nobody retypes them into a notebook and gets one wrong.
"""

from __future__ import annotations

import copy
import functools
import math
import os
from importlib.resources import files

import pandas as pd
import yaml

COLUMNS = ("paper", "table", "block", "row", "column", "metric", "value", "std")
KEY = ("paper", "table", "block", "row", "column", "metric")
_CSV = "paper_tables.csv"
_YML = "paper_tables.yml"


def _resource(name: str):
    # Resolved through the package, not __file__, so it also works from an installed wheel.
    return files("mimirlib") / "resources" / name


def _parse_number(raw: str, *, where: str, field: str, allow_empty: bool) -> float:
    if raw == "":
        if allow_empty:
            return math.nan
        raise ValueError(f"{where}: {field} is empty")
    try:
        x = float(raw)
    except ValueError:
        raise ValueError(f"{where}: {field} {raw!r} is not a number") from None
    if not math.isfinite(x):
        raise ValueError(f"{where}: {field} {raw!r} is not finite")
    return x


def _read(source) -> pd.DataFrame:
    name = str(source)
    # Everything as text first: empty blocks stay "", labels such as "2020-08" stay labels.
    with (
        open(source, encoding="utf-8") if isinstance(source, (str, os.PathLike)) else source.open("r", encoding="utf-8")
    ) as fh:
        raw = pd.read_csv(fh, dtype=str, keep_default_na=False)
    if tuple(raw.columns) != COLUMNS:
        missing = [c for c in COLUMNS if c not in raw.columns]
        extra = [c for c in raw.columns if c not in COLUMNS]
        raise ValueError(
            f"{name}: columns must be exactly {','.join(COLUMNS)}; "
            f"missing {missing}, unexpected {extra}, got order {list(raw.columns)}"
        )
    for col in ("paper", "table", "row", "column", "metric"):
        empty = raw.index[raw[col].str.strip() == ""]
        if len(empty):
            raise ValueError(f"{name} line {empty[0] + 2}: column {col!r} is empty")
    values, stds = [], []
    for i, (v, s) in enumerate(zip(raw["value"], raw["std"])):
        where = f"{name} line {i + 2}"
        values.append(_parse_number(v, where=where, field="value", allow_empty=False))
        sd = _parse_number(s, where=where, field="std", allow_empty=True)
        if sd < 0:
            raise ValueError(f"{where}: std {s!r} is negative")
        stds.append(sd)
    dup = raw.duplicated(list(KEY), keep="first")
    if dup.any():
        i = int(dup.to_numpy().nonzero()[0][0])
        key = ", ".join(f"{k}={raw.at[i, k]!r}" for k in KEY)
        raise ValueError(f"{name} line {i + 2}: duplicate cell ({key})")
    out = raw.copy()
    out["value"] = values
    out["std"] = stds
    return out


@functools.lru_cache(maxsize=1)
def _default() -> pd.DataFrame:
    return _read(_resource(_CSV))


def load_paper_tables(path: str | os.PathLike | None = None) -> pd.DataFrame:
    """All transcribed numbers, long form (``COLUMNS``); ``std`` is NaN where none is printed.

    Validated on load (exact columns, numeric values, no duplicate cell) so a bad edit to the
    CSV fails loudly with the file and line, not as a wrong number in a figure. ``path``
    overrides the packaged file (for checking a candidate edit).
    """
    df = _read(path) if path is not None else _default()
    return df.copy()


def list_tables() -> list[tuple[str, str]]:
    """Every (paper, table) documented in the metadata, text-only tables included."""
    meta = _meta()
    return [(p, t) for p, d in meta["papers"].items() for t in d["tables"]]


@functools.lru_cache(maxsize=1)
def _meta() -> dict:
    with _resource(_YML).open("r", encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def table_meta(paper: str, table) -> dict:
    """Caption, metric, meaning of blocks/rows/columns, targets and value count of one table."""
    papers = _meta()["papers"]
    if paper not in papers:
        raise ValueError(f"unknown paper {paper!r}; known: {sorted(papers)}")
    tables = papers[paper]["tables"]
    key = str(table)
    if key not in tables:
        raise ValueError(f"unknown table {key!r} for paper {paper!r}; known: {list(tables)}")
    out = copy.deepcopy(tables[key])
    out.update(paper=paper, table=key, title=papers[paper].get("title"))
    return out


def _first_seen(values) -> list:
    return list(dict.fromkeys(values))


def paper_table(paper: str, table, block: str | None = None, values: str = "value") -> pd.DataFrame:
    """One table laid out as printed: rows x columns, in the paper's order.

    With ``block=None`` every block is kept and becomes the outer column level (as in the
    paper's header). Any other label that varies inside the selection (``metric`` in RaMIA
    Table IV) becomes a further column level. ``values="std"`` gives the printed stds instead.
    """
    if values not in ("value", "std"):
        raise ValueError(f"values must be 'value' or 'std', got {values!r}")
    df = load_paper_tables()
    key = str(table)
    sel = df[(df["paper"] == paper) & (df["table"] == key)]
    if sel.empty:
        known = _first_seen(zip(df["paper"], df["table"]))
        raise ValueError(f"no numbers for paper={paper!r} table={key!r}; numeric tables: {known}")
    if block is not None:
        blocks = _first_seen(sel["block"])
        sel = sel[sel["block"] == block]
        if sel.empty:
            raise ValueError(f"table {paper} {key} has no block {block!r}; blocks: {blocks}")
    levels = [c for c in ("block", "column", "metric") if c == "column" or sel[c].nunique() > 1]
    wide = sel.pivot(index="row", columns=levels if len(levels) > 1 else levels[0], values=values)
    if len(levels) > 1:
        cols = pd.MultiIndex.from_tuples(_first_seen(zip(*(sel[c] for c in levels))), names=levels)
    else:
        cols = pd.Index(_first_seen(sel["column"]), name="column")
    wide = wide.reindex(index=_first_seen(sel["row"]), columns=cols)
    wide.index.name = "row"
    return wide
