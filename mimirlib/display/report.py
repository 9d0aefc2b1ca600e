"""Formatting results for display: ``AUC [lo, hi]`` cells, AUC pivot tables, and glueing a run's
numbers and figures into the page.

Verdicts are not decided here: they are named rules in :mod:`mimirlib.verdicts`.
"""

from __future__ import annotations

from typing import Mapping

import pandas as pd


# pandas' display limits, lifted: a table the book shows is shown whole (pandas elides the middle
# columns past 20, rows past 60 and cell text past 50 characters with "...").
FULL_TABLES = {"display.max_columns": None, "display.max_rows": None, "display.max_colwidth": None}
# What a table cell shows where a value does not apply or does not exist (a seed spread of a model
# trained once, a pair that is not compared); pandas would print "NaN", which reads as a failure.
MISSING = "–"


def table_html(frame: pd.DataFrame) -> str:
    """``frame`` as a page shows it: pandas' notebook HTML (the same as its ``_repr_html_``), with
    :data:`MISSING` in the cells that hold no value."""
    return frame.to_html(notebook=True, na_rep=MISSING)


def show_full_tables(shell=None) -> None:
    """Lift pandas' display limits for this process, so no table in a page loses columns, rows or
    cell text to "..." (the paper's Table 1 is wider than pandas' default 20 columns), and, in an
    IPython kernel (``shell``, default the running one), show every DataFrame with
    :func:`table_html`. Called by ``plots.set_style``, which every chapter runs first."""
    for option, value in FULL_TABLES.items():
        pd.set_option(option, value)
    if shell is None:
        from IPython import get_ipython

        shell = get_ipython()
    if shell is not None:
        shell.display_formatter.formatters["text/html"].for_type(pd.DataFrame, table_html)


def fmt_ci(point: float, lo: float, hi: float) -> str:
    return f"{point:.3f} [{lo:.3f}, {hi:.3f}]"


# Column names a table shows in words (the rest: underscores read as spaces).
WORDS = {"lo": "95% CI low", "hi": "95% CI high", "n_texts": "texts"}


def words(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` as a page shows it: column and index names in words (:data:`WORDS`, else underscores as
    spaces) and yes/no for True/False columns; values otherwise untouched."""

    def name(x):
        return WORDS.get(x, x.replace("_", " ")) if isinstance(x, str) else x

    out = frame.rename(columns=name)
    out.index = out.index.set_names([name(n) for n in out.index.names])
    for c in out.columns:
        if out[c].dtype == bool:
            out[c] = out[c].map({True: "yes", False: "no"})
    return out


def count_of(k, noun: str) -> str:
    """``k`` of ``noun`` in words: ``"1 seed"``, ``"3 seeds"``; ``k`` may be a span (:func:`count_span`:
    ``"1-3 neighbours"``), singular only when it is 1."""
    return f"{k} {noun}" + ("" if str(k) == "1" else "s")


def count_span(values, sep: str = " to ") -> str:
    """The range of some counts as prose: ``"9"`` when they are all equal, else ``"9 to 12"`` (``"9-12"`` with
    ``sep="-"``, as the verdicts' sample sizes write it)."""
    lo, hi = int(min(values)), int(max(values))
    return f"{lo}" if lo == hi else f"{lo}{sep}{hi}"


# The sample sizes a row's numbers rest on, as the tables print them (``n_members`` / ``n_nonmembers``
# in a results frame; a frame with only one of them gets that one).
N_SIZES = {"n_members": "members", "n_nonmembers": "non-members"}


def n_column(sizes: list[str]) -> str:
    """The header of the sample-size column for the size columns a frame has, e.g.
    ``n (members / non-members)``."""
    return "n (" + " / ".join(N_SIZES[c] for c in sizes) + ")"


def n_cell(rows: pd.DataFrame, sizes: list[str], columns: str) -> str:
    """The sample size of one table row: ``"96 / 96"``; where some ``columns`` entries (attacks)
    rest on other counts than the row's most common one (a tie: the first column's), they are
    named: ``"96 / 96 (ne: 25 / 25)"``."""
    label = rows[sizes].astype(int).astype(str).agg(" / ".join, axis=1)
    counts = label.value_counts()
    common = max(label, key=lambda v: counts[v])  # the most common; a tie goes to the first column's
    others = {}
    for key, value in zip(rows[columns].astype(str), label):
        if value != common:
            others.setdefault(value, []).append(key)
    rest = "; ".join(f"{', '.join(dict.fromkeys(keys))}: {value}" for value, keys in others.items())
    return f"{common} ({rest})" if rest else common


def with_n(table: pd.DataFrame, results: pd.DataFrame, index: list[str], columns: str = "attack") -> pd.DataFrame:
    """``table`` (a pivot of ``results`` by ``index`` x ``columns``) with one more, last column: the
    members / non-members each row's numbers rest on (:func:`n_cell`). Unchanged when ``results``
    carries no ``n_members``/``n_nonmembers``, or one of them is already a row label."""
    sizes = [c for c in N_SIZES if c in results.columns and c not in index]
    if not sizes or len(sizes) < sum(c in results.columns for c in N_SIZES):
        return table
    cells = {
        (key if isinstance(key, tuple) else (key,)): n_cell(rows, sizes, columns)
        for key, rows in results.groupby(list(index), sort=False)
    }
    out = table.copy()
    keys = [k if isinstance(k, tuple) else (k,) for k in out.index]
    out[n_column(sizes)] = [cells.get(k, "") for k in keys]
    return out


def with_size(table: pd.DataFrame, header: str, cell: str) -> pd.DataFrame:
    """``table`` with one more, last column ``header`` holding ``cell`` in every row: the sample size
    all its rows share (``n_column``-style header, e.g. ``n (IN / OUT ranges)`` and ``"150 / 150"``);
    a table with a two-level header gets it as ``(header, "")``."""
    out = table.copy()
    out[(header,) + ("",) * (out.columns.nlevels - 1) if out.columns.nlevels > 1 else header] = cell
    return out


def auc_table(
    results: pd.DataFrame, index: list[str], columns: str = "attack", with_ci: bool = True, with_sizes: bool = True
) -> pd.DataFrame:
    """A pivot of AUC (optionally ``AUC [lo, hi]`` strings) for display, with the members /
    non-members each row rests on as its last column (:func:`with_n`) where ``results`` has them."""
    df = results.copy()
    df["cell"] = [fmt_ci(a, lo, hi) if with_ci else f"{a:.3f}" for a, lo, hi in zip(df.auc, df.auc_lo, df.auc_hi)]
    table = df.pivot_table(index=index, columns=columns, values="cell", aggfunc="first", sort=False)
    return with_n(table, df, list(index), columns) if with_sizes else table


def glue_values(values: Mapping[str, object]) -> None:
    """Glue each named value for the prose (``{glue:text}`name```), without displaying it."""
    from myst_nb import glue

    for name, value in values.items():
        glue(name, value, display=False)


def glue_figure(name: str, fig) -> None:
    """Glue a figure for a ``{glue:figure}`` directive and close it (it is shown there, not here)."""
    import matplotlib.pyplot as plt
    from myst_nb import glue

    glue(name, fig, display=False)
    plt.close(fig)
