"""Annotated heatmaps of pivot tables (attack x split AUCs), diverging around chance."""

from __future__ import annotations

import numpy as np
import pandas as pd
import seaborn as sns

from mimirlib.display.plots.layout import finish
from mimirlib.display.plots.style import new_ax


def plot_heatmap(
    df_pivot: pd.DataFrame, ax=None, fmt: str = ".3f", center: float | None = 0.5, title=None, cbar_label: str = "AUC"
):
    """Annotated heatmap of a pivot table (e.g. attack x split AUCs), diverging around ``center``;
    columns are wide enough for their labels, which stay horizontal."""
    if not isinstance(df_pivot, pd.DataFrame) or df_pivot.empty:
        raise ValueError("df_pivot: expected a non-empty DataFrame (e.g. df.pivot(index=..., columns=...))")
    try:
        data = df_pivot.astype(float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"df_pivot: values must be numeric ({exc})") from None
    n_r, n_c = data.shape
    longest = max(len(str(c)) for c in data.columns)
    width = max(0.9, 0.11 * longest + 0.3)  # inches per column: the longest label fits
    row_label = max(len(str(r)) for r in data.index)
    made = ax is None
    fig, ax = new_ax(ax, figsize=(max(4.0, 2.2 + 0.1 * row_label + width * n_c), max(3.0, 1.2 + 0.45 * n_r)))
    vmin = vmax = None
    if center is not None and np.isfinite(data.to_numpy()).any():
        span = float(np.nanmax(np.abs(data.to_numpy() - center)))
        span = span if span > 0 else 0.05
        vmin, vmax = center - span, center + span
    sns.heatmap(
        data,
        ax=ax,
        annot=True,
        fmt=fmt,
        cmap="vlag",
        center=center,
        vmin=vmin,
        vmax=vmax,
        linewidths=0.5,
        cbar_kws={"label": cbar_label},
    )
    ax.tick_params(axis="x", labelrotation=0)
    ax.tick_params(axis="y", labelrotation=0)
    ax.set_xlabel(str(df_pivot.columns.name or ""))
    ax.set_ylabel(str(df_pivot.index.name or ""))
    if title:
        ax.set_title(title)
    return finish(fig) if made else fig
