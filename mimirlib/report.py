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


def show_full_tables() -> None:
    """Lift pandas' display limits for this process, so no table in a page loses columns, rows or
    cell text to "..." (the paper's Table 1 is wider than pandas' default 20 columns). Called by
    ``plots.set_style``, which every chapter runs first."""
    for option, value in FULL_TABLES.items():
        pd.set_option(option, value)


def fmt_ci(point: float, lo: float, hi: float) -> str:
    return f"{point:.3f} [{lo:.3f}, {hi:.3f}]"


def auc_table(results: pd.DataFrame, index: list[str], columns: str = "attack", with_ci: bool = True) -> pd.DataFrame:
    """A pivot of AUC (optionally ``AUC [lo, hi]`` strings) for display."""
    df = results.copy()
    df["cell"] = [fmt_ci(a, lo, hi) if with_ci else f"{a:.3f}" for a, lo, hi in zip(df.auc, df.auc_lo, df.auc_hi)]
    return df.pivot_table(index=index, columns=columns, values="cell", aggfunc="first", sort=False)


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
