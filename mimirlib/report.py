"""Formatting results for display: ``AUC [lo, hi]`` cells, AUC pivot tables, and glueing a run's
numbers and figures into the page.

Verdicts are not decided here: they are named rules in :mod:`mimirlib.verdicts`.
"""

from __future__ import annotations

from typing import Mapping

import pandas as pd


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
