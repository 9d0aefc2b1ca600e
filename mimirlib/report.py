"""Formatting results for display: ``AUC [lo, hi]`` cells and AUC pivot tables.

Verdicts are not decided here: they are named rules in :mod:`mimirlib.verdicts`.
"""

from __future__ import annotations

import pandas as pd


def fmt_ci(point: float, lo: float, hi: float) -> str:
    return f"{point:.3f} [{lo:.3f}, {hi:.3f}]"


def auc_table(results: pd.DataFrame, index: list[str], columns: str = "attack", with_ci: bool = True) -> pd.DataFrame:
    """A pivot of AUC (optionally ``AUC [lo, hi]`` strings) for display."""
    df = results.copy()
    df["cell"] = [fmt_ci(a, lo, hi) if with_ci else f"{a:.3f}" for a, lo, hi in zip(df.auc, df.auc_lo, df.auc_hi)]
    return df.pivot_table(index=index, columns=columns, values="cell", aggfunc="first", sort=False)
