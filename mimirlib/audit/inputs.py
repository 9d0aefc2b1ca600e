"""Reading the audit's texts: member and non-member files (or one labeled file), checked row by row.

Every input goes through the project's one reader, :func:`mimirlib.core.data.read_table`
(``.jsonl``, ``.csv``, ``.parquet``, or ``hf:NAME[:CONFIG]:SPLIT``); every problem is one
:class:`AuditError` line naming the file, the row and the column.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import numpy as np

from mimirlib.core.data import BenchmarkError, Table, read_table

_TRUE = {"1", "true", "member", "yes"}
_FALSE = {"0", "false", "nonmember", "non-member", "non_member", "no"}


class AuditError(ValueError):
    """Bad audit input (file, column, label, empty set, model, output folder); one line naming it."""


def _read_rows(source: str | Path) -> Table:
    """The rows of one input through the project's one reader (:func:`mimirlib.core.data.read_table`:
    a jsonl/csv/parquet file, or ``hf:NAME[:CONFIG]:SPLIT``), its errors as :class:`AuditError`."""
    try:
        return read_table(source)
    except BenchmarkError as e:  # the message already names the file (and line) and the problem
        raise AuditError(str(e)) from None


def _require_column(path, columns: Sequence[str], column: str, what: str) -> None:
    if column not in columns:
        raise AuditError(f"{path}: no {what} column {column!r}; columns present: {list(columns)}")


def _text_of(path, number: int, row: dict, column: str, unit: str) -> str:
    where = f"{path}: {unit} {number}"
    if column not in row:  # jsonl rows may lack a key other rows have
        raise AuditError(f"{where}: no {column!r} field")
    t = row[column]
    if not isinstance(t, str):
        kind = "null" if t is None else type(t).__name__
        raise AuditError(f"{where}: column {column!r} is {kind}, not text")
    if not t.strip():
        raise AuditError(f"{where}: column {column!r} is empty")
    return t


def parse_label(value) -> bool | None:
    """True for a member, False for a non-member, None if ``value`` is not a label we accept.

    Accepted: booleans, 0/1 (int, float or string), and the words member/nonmember,
    true/false, yes/no in any case (CSV has no booleans, so ``"True"`` must count).
    """
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return {1: True, 0: False}.get(int(value))
    if isinstance(value, (float, np.floating)):
        return {1.0: True, 0.0: False}.get(float(value)) if math.isfinite(value) else None
    if isinstance(value, str):
        v = value.strip().lower()
        if v in _TRUE:
            return True
        if v in _FALSE:
            return False
        try:
            return {1.0: True, 0.0: False}.get(float(v))
        except ValueError:
            return None
    return None


def load_member_file(path: str | Path, text_column: str = "text") -> list[str]:
    """The texts of one file (all members, or all non-members), validated.

    Raises :class:`AuditError` naming the file for a missing file, an unsupported or malformed
    file (a bad jsonl line by its number), a missing column (listing those present), no rows,
    or an empty / non-text value (by its row).
    """
    table = _read_rows(path)
    if not table.rows:
        raise AuditError(f"{path}: no rows (empty set)")
    _require_column(path, table.columns, text_column, "text")
    return [_text_of(path, n, r, text_column, table.unit) for n, r in table.numbered()]


def load_labeled_file(
    path: str | Path, text_column: str = "text", label_column: str = "label"
) -> tuple[list[str], list[str]]:
    """``(members, nonmembers)`` from one file whose ``label_column`` says which is which.

    Labels: booleans, 0/1 or member/nonmember (any case); anything else raises
    :class:`AuditError` naming the file, row, column and value. Either side empty raises too.
    """
    table = _read_rows(path)
    unit = table.unit
    if not table.rows:
        raise AuditError(f"{path}: no rows (empty set)")
    _require_column(path, table.columns, text_column, "text")
    _require_column(path, table.columns, label_column, "label")
    members, nonmembers = [], []
    for n, r in table.numbered():
        text = _text_of(path, n, r, text_column, unit)
        value = r.get(label_column)
        is_member = parse_label(value)
        if is_member is None:
            raise AuditError(
                f"{path}: {unit} {n}: column {label_column!r} has bad label {value!r}; "
                f"use true/false, 1/0 or member/nonmember"
            )
        (members if is_member else nonmembers).append(text)
    if not members:
        raise AuditError(f"{path}: no members (every row of column {label_column!r} is a non-member)")
    if not nonmembers:
        raise AuditError(f"{path}: no non-members (every row of column {label_column!r} is a member)")
    return members, nonmembers


def load_inputs(
    members=None, nonmembers=None, labeled=None, *, text_column: str = "text", label_column: str = "label"
) -> tuple[list[str], list[str]]:
    """Texts from either two files (``members`` and ``nonmembers``) or one ``labeled`` file."""
    if labeled and (members or nonmembers):
        raise AuditError("give either --labeled or --members/--nonmembers, not both")
    if labeled:
        return load_labeled_file(labeled, text_column, label_column)
    if not members or not nonmembers:
        missing = "--members" if not members else "--nonmembers"
        raise AuditError(f"{missing} is missing; give --members and --nonmembers, or one --labeled file")
    return load_member_file(members, text_column), load_member_file(nonmembers, text_column)
