"""A metric (AUC) against a setting (model size, threshold, date): one line per attack with its
interval, optionally one panel per value of a further column."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from mimirlib.display.plots.layout import finish
from mimirlib.display.plots.style import MARKERS, NEUTRAL, attack_palette, axis_label, count_ticks, new_ax


def _dodge(xs: np.ndarray, k: int, n: int, span: float, logx: bool) -> np.ndarray:
    """Shift series ``k`` of ``n`` sideways by a small share of the axis so error bars do not hide
    each other (multiplicatively on a log axis)."""
    step = (k - (n - 1) / 2) * 0.012
    if logx:
        return xs * 10 ** (step * span)
    return xs + step * span


def _draw_metric(ax, d: pd.DataFrame, x, y, lo, hi, hue, colours, order, logx, chance, all_x):
    numeric = pd.api.types.is_numeric_dtype(d[x])
    bars = len(colours) > 2  # several series: error bars, since overlapping bands turn to mud
    if numeric:
        vals = np.asarray(all_x, dtype=float)
        if logx:
            vals = vals[vals > 0]
            span = float(np.log10(vals.max() / vals.min())) if vals.size and vals.max() > vals.min() else 1.0
        else:
            span = float(np.ptp(vals)) if vals.size and np.ptp(vals) > 0 else 1.0
    else:
        span = max(len(order) - 1, 1)
    for k, h in enumerate(colours):
        g = d if hue is None else d[d[hue] == h]
        if g.empty:
            continue
        if numeric:
            g = g.sort_values(x)
            xs = g[x].to_numpy(dtype=float)
        else:
            g = g.assign(_pos=g[x].map({v: i for i, v in enumerate(order)})).sort_values("_pos")
            xs = g["_pos"].to_numpy(dtype=float)
        ys = g[y].to_numpy(dtype=float)
        marker = MARKERS[k % len(MARKERS)]
        if lo is not None and hi is not None and bars:
            xd = _dodge(xs, k, len(colours), span, logx and numeric)
            err = np.vstack([ys - g[lo].to_numpy(dtype=float), g[hi].to_numpy(dtype=float) - ys])
            ax.errorbar(
                xd,
                ys,
                yerr=np.clip(err, 0, None),
                marker=marker,
                ms=5,
                capsize=2,
                lw=1.5,
                elinewidth=1,
                color=colours[h],
                label=str(h),
            )
            continue
        ax.plot(xs, ys, marker=marker, ms=5, color=colours[h], label=str(h))
        if lo is not None and hi is not None:
            ax.fill_between(
                xs, g[lo].to_numpy(dtype=float), g[hi].to_numpy(dtype=float), color=colours[h], alpha=0.18, lw=0
            )
    if chance is not None:
        ax.axhline(chance, ls="--", color=NEUTRAL, lw=1, label="_chance")
    if not numeric:
        ax.set_xticks(range(len(order)))
        ax.set_xticklabels([str(v) for v in order])
    if logx:
        ax.set_xscale("log")
        count_ticks(ax.xaxis)
        if numeric and len(set(all_x)) <= 8:  # few x values (model sizes, epochs): label each one
            ax.set_xticks(sorted(set(all_x)))
    elif numeric and np.nanmax(np.abs(np.asarray(all_x, dtype=float))) >= 1e4:
        count_ticks(ax.xaxis)
    ax.set_xlabel(axis_label(x))
    ax.set_ylabel(axis_label(y))


def _checked_bands(df, x, y, lo, hi, hue, col, ax) -> tuple:
    """Raise on a frame :func:`plot_metric_vs` cannot draw (naming the column); the interval
    columns to draw (None, None when the default ones are absent)."""
    if not isinstance(df, pd.DataFrame) or df.empty:
        raise ValueError("df: expected a non-empty DataFrame")
    if lo is not None and hi is not None and (lo not in df.columns or hi not in df.columns):
        if (lo, hi) == ("auc_lo", "auc_hi"):  # defaults: bands are optional
            lo = hi = None
    needed = [c for c in (x, y, lo, hi, hue, col) if c is not None]
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise ValueError(f"df: missing column(s) {missing}; has {list(df.columns)}")
    keys = [c for c in (hue, col, x) if c is not None]
    dup = df.duplicated(subset=keys, keep=False)
    if dup.any():
        raise ValueError(
            f"df: {int(dup.sum())} rows share the same ({', '.join(keys)}); "
            "filter or aggregate so each line point is one row"
        )
    if col is not None and ax is not None:
        raise ValueError("ax: cannot draw a faceted (col=...) figure on a single ax; pass ax=None")
    return lo, hi


def plot_metric_vs(
    df: pd.DataFrame,
    x: str,
    y: str = "auc",
    lo: str | None = "auc_lo",
    hi: str | None = "auc_hi",
    hue: str | None = "attack",
    col: str | None = None,
    ax=None,
    logx: bool = False,
    chance: float | None = 0.5,
    col_wrap: int = 4,
    title=None,
):
    """``y`` against ``x`` (model size, n-gram threshold, date...), one line per ``hue`` (its own
    colour and marker) with its confidence interval from ``lo``/``hi`` (a band for up to three
    lines, error bars beyond) and a dashed chance line; with ``col``, one panel per value (shared
    y). Axis labels name the unit (:func:`axis_label`); counts on x read 33k, 1.1M. Each (hue, col,
    x) must be a single row: aggregate or filter first, so that lines never silently mix settings.
    ``lo``/``hi`` = None draws no interval (skipped too if the columns are absent)."""
    lo, hi = _checked_bands(df, x, y, lo, hi, hue, col, ax)
    hues = list(pd.unique(df[hue])) if hue is not None else [y]
    if hue is not None and isinstance(df[hue].dtype, pd.CategoricalDtype):
        hues = [h for h in df[hue].cat.categories if h in set(hues)]
    colours = attack_palette(hues)
    if isinstance(df[x].dtype, pd.CategoricalDtype):
        order = [v for v in df[x].cat.categories if v in set(df[x])]
    else:
        order = list(pd.unique(df[x]))
    all_x = list(pd.unique(df[x])) if pd.api.types.is_numeric_dtype(df[x]) else order

    if col is None:
        made = ax is None
        fig, ax = new_ax(ax, figsize=(7.6, 4.5))  # room for the legend beside the axes
        _draw_metric(ax, df, x, y, lo, hi, hue, colours, order, logx, chance, all_x)
        ax.legend(fontsize="small", title=hue, loc="upper left", bbox_to_anchor=(1.02, 1.0))
        if title:
            ax.set_title(title)
        return finish(fig) if made else fig

    panels = list(pd.unique(df[col]))
    ncols = max(1, min(col_wrap, len(panels)))
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.8 * nrows), sharey=True, squeeze=False)
    flat = axes.ravel()
    for a, p in zip(flat, panels):
        _draw_metric(a, df[df[col] == p], x, y, lo, hi, hue, colours, order, logx, chance, all_x)
        a.set_title(f"{col} = {p}")
    for a in flat[len(panels) :]:
        fig.delaxes(a)
    handles, labels = flat[0].get_legend_handles_labels()
    for a in flat[1 : len(panels)]:  # union of labels over panels, in first-seen order
        for hd, lb in zip(*a.get_legend_handles_labels()):
            if lb not in labels:
                handles.append(hd)
                labels.append(lb)
    fig.legend(handles, labels, title=hue, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize="small")
    if title:
        fig.suptitle(title)
    return finish(fig)


# ----------------------------------------------------------------------------- heatmap
