"""Figures for the book, in one seaborn style.

Call :func:`set_style` once per notebook. Every function draws on ``ax=`` when given (and returns
its figure) or makes its own figure, and returns the matplotlib ``Figure``; nothing here calls
``plt.show`` (notebooks display the returned figure; scripts save or close it).
Colours of attacks come from :func:`attack_palette`, so an attack has the same colour in every
figure of the book.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable, Mapping

import matplotlib.pyplot as plt
import matplotlib.ticker as mticker
import numpy as np
import pandas as pd
import seaborn as sns

from . import report

__all__ = [
    "set_style",
    "attack_palette",
    "plot_roc",
    "plot_roc_panels",
    "plot_score_hist",
    "plot_metric_vs",
    "plot_heatmap",
]

_BASE = sns.color_palette("colorblind", 10)
# Extra colours for names outside the registry (hashed, so stable across figures and sessions).
_EXTRA = sns.color_palette("dark", 10)

# Canonical attack -> index into the colour-blind palette (index 7 is grey: model-free baselines).
_KNOWN = {
    "loss": 0,
    "ref": 1,
    "zlib": 2,
    "min_k": 4,
    "min_k++": 9,
    "ne": 5,
    "gradnorm": 6,
    "baseline": 7,
    "recall": 8,
    "dc_pdd": 3,
}
_ALIASES = {
    "min_k_pp": "min_k++",
    "reference": "ref",
    "reference_model": "ref",
    "lira": "ref",
    "mink": "min_k",
    "min_k_prob": "min_k",
    "mink_prob": "min_k",
    "mink++": "min_k++",
    "min_k_plus_plus": "min_k++",
    "mink_plus_plus": "min_k++",
    "neighbor": "ne",
    "neighbour": "ne",
    "neighborhood": "ne",
    "neighbourhood": "ne",
    "grad_norm": "gradnorm",
    "dcpdd": "dc_pdd",
    "pdd": "dc_pdd",
    "blind": "baseline",
    "model_free": "baseline",
    "bag_of_words": "baseline",
    "bow": "baseline",
}


def set_style(font_scale: float = 1.1) -> None:
    """Seaborn whitegrid theme, colour-blind palette, sizes readable in the rendered book; and
    tables shown whole (:func:`mimirlib.report.show_full_tables`)."""
    sns.set_theme(
        context="notebook",
        style="whitegrid",
        palette="colorblind",
        font_scale=font_scale,
        rc={
            "figure.figsize": (6.0, 4.5),
            "figure.dpi": 100,
            "savefig.dpi": 150,
            "savefig.bbox": "tight",
            "axes.titleweight": "bold",
            "legend.frameon": False,
            "lines.linewidth": 1.8,
        },
    )
    report.show_full_tables()


def _canonical(name) -> str:
    """'Min-K++ (AUC 0.61)' -> 'min_k++': lower case, suffix in parentheses dropped, '-'/' ' -> '_'."""
    s = re.sub(r"\s*\(.*\)\s*$", "", str(name)).strip().lower()
    s = re.sub(r"[\s\-]+", "_", s)
    s = re.sub(r"_?%$", "", s)
    if re.fullmatch(r"min_?k(_?\d+)?", s):  # min_k_20 -> min_k
        s = "min_k"
    elif re.fullmatch(r"min_?k(_?\d+)?\+\+", s):
        s = "min_k++"
    return _ALIASES.get(s, s)


def attack_palette(attacks: Iterable) -> dict:
    """Colour per attack name, the same in every figure.

    Known attacks (loss, ref, zlib, min_k, min_k++, ne, gradnorm, recall, dc_pdd, and model-free
    baselines in grey) have fixed colour-blind-palette colours; spelling variants map to them.
    Other names get a colour from a second palette chosen by a stable hash of the name (probing to
    the next free colour if two names in the same call collide). Returns ``{name: rgb}`` keyed by
    the names as given, in order, duplicates removed.
    """
    names = list(dict.fromkeys(attacks))
    out: dict = {}
    used = set()
    for name in names:  # known first, so unknown names never take their colours
        key = _canonical(name)
        if key in _KNOWN:
            out[name] = _BASE[_KNOWN[key]]
            used.add(out[name])
    for name in names:
        if name in out:
            continue
        h = zlib.crc32(_canonical(name).encode("utf-8"))
        pool = _EXTRA + [c for c in _BASE if c not in used]
        colour = _EXTRA[h % len(_EXTRA)]
        if colour in used:
            free = [c for c in pool if c not in used]
            colour = free[h % len(free)] if free else pool[h % len(pool)]
        out[name] = colour
        used.add(colour)
    return {name: out[name] for name in names}


def _new_ax(ax, figsize=None):
    if ax is None:
        fig, ax = plt.subplots(figsize=figsize)
        return fig, ax
    return ax.figure, ax


def _smallest_fpr_step(curves: Mapping) -> float | None:
    """Smallest positive FPR (or step between FPRs) over the curves: 1/n for a full-resolution ROC."""
    best = None
    for fpr, _ in curves.values():
        u = np.unique(np.asarray(fpr, dtype=float))
        cand = np.concatenate([u[u > 0], np.diff(u)])
        cand = cand[cand > 0]
        if cand.size:
            best = float(cand.min()) if best is None else min(best, float(cand.min()))
    return best


def plot_roc(curves: Mapping, log: bool = False, ax=None, title=None, min_fpr: float | None = None):
    """ROC curves ``{label: (fpr, tpr)}`` with the chance diagonal.

    ``log=True`` draws log-log axes, where low-FPR behaviour (the regime that matters for
    membership inference) is visible; the x-axis then starts at the smallest resolvable FPR
    (``min_fpr``, by default inferred from the curves as 1/n), since nothing left of it is measured.
    """
    if not curves:
        raise ValueError("curves: empty; need at least one {label: (fpr, tpr)}")
    fig, ax = _new_ax(ax)
    colours = attack_palette(curves.keys())
    for label, (fpr, tpr) in curves.items():
        fpr, tpr = np.asarray(fpr, dtype=float), np.asarray(tpr, dtype=float)
        if fpr.shape != tpr.shape:
            raise ValueError(f"curves[{label!r}]: fpr {fpr.shape} and tpr {tpr.shape} differ in shape")
        ax.plot(fpr, tpr, label=str(label), color=colours[label])
    if log:
        lo = min_fpr if min_fpr is not None else (_smallest_fpr_step(curves) or 1e-3)
        ax.plot([lo, 1], [lo, 1], ls="--", color="0.5", lw=1, label="_chance")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, 1)
        tpos = [np.asarray(t, dtype=float) for _, t in curves.values()]
        tmin = min([lo] + [float(t[t > 0].min()) for t in tpos if (t > 0).any()])
        ax.set_ylim(tmin, 1.05)
    else:
        ax.plot([0, 1], [0, 1], ls="--", color="0.5", lw=1, label="_chance")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.01)
        ax.set_aspect("equal", adjustable="box")
    ax.set_xlabel("false positive rate")
    ax.set_ylabel("true positive rate")
    ax.legend(loc="lower right", fontsize="small")
    if title:
        ax.set_title(title)
    return fig


def plot_roc_panels(curves: Mapping, title=None, min_fpr: float | None = None):
    """Linear and log-log ROC side by side (the log panel shows the low-FPR regime)."""
    fig, (ax_lin, ax_log) = plt.subplots(1, 2, figsize=(11, 4.8))
    plot_roc(curves, log=False, ax=ax_lin, title="linear")
    plot_roc(curves, log=True, ax=ax_log, title="log-log", min_fpr=min_fpr)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_score_hist(scores: Mapping, ax=None, xlabel: str = "score", title=None, kde: bool = True):
    """Overlaid density histograms (shared bins) with a KDE per group, e.g. members / non-members /
    modified members: how much the score distributions overlap is what the AUC summarises."""
    if not scores:
        raise ValueError("scores: empty; need at least one {label: array}")
    arrays = {}
    for label, s in scores.items():
        a = np.asarray(s, dtype=float).ravel()
        if a.size == 0:
            raise ValueError(f"scores[{label!r}]: empty")
        a = a[np.isfinite(a)]
        if a.size == 0:
            raise ValueError(f"scores[{label!r}]: no finite values")
        arrays[label] = a
    fig, ax = _new_ax(ax)
    allv = np.concatenate(list(arrays.values()))
    bins = np.histogram_bin_edges(allv, bins="auto")
    if bins.size > 61:
        bins = np.histogram_bin_edges(allv, bins=60)
    colours = sns.color_palette("colorblind", max(len(arrays), 1))
    for colour, (label, a) in zip(colours, arrays.items()):
        use_kde = kde and a.size > 1 and float(np.ptp(a)) > 0
        sns.histplot(
            x=a,
            bins=bins,
            stat="density",
            element="step",
            alpha=0.3,
            color=colour,
            kde=use_kde,
            label=f"{label} (n={a.size})",
            ax=ax,
        )
    ax.set_xlabel(xlabel)
    ax.set_ylabel("density")
    ax.set_ylim(0, ax.get_ylim()[1] * (1.1 + 0.08 * len(arrays)))  # headroom for the legend
    ax.legend(fontsize="small", loc="upper right")
    if title:
        ax.set_title(title)
    return fig


def _draw_metric(ax, d: pd.DataFrame, x, y, lo, hi, hue, colours, order, logx, chance):
    numeric = pd.api.types.is_numeric_dtype(d[x])
    for h in colours:
        g = d if hue is None else d[d[hue] == h]
        if g.empty:
            continue
        if numeric:
            g = g.sort_values(x)
            xs = g[x].to_numpy(dtype=float)
        else:
            g = g.assign(_pos=g[x].map({v: i for i, v in enumerate(order)})).sort_values("_pos")
            xs = g["_pos"].to_numpy(dtype=float)
        ax.plot(xs, g[y].to_numpy(dtype=float), marker="o", ms=4, color=colours[h], label=str(h))
        if lo is not None and hi is not None:
            ax.fill_between(
                xs, g[lo].to_numpy(dtype=float), g[hi].to_numpy(dtype=float), color=colours[h], alpha=0.2, lw=0
            )
    if chance is not None:
        ax.axhline(chance, ls="--", color="0.5", lw=1, label="_chance")
    if not numeric:
        ax.set_xticks(range(len(order)))
        ax.set_xticklabels([str(v) for v in order], rotation=30, ha="right")
    if logx:
        ax.set_xscale("log")
        # engineering labels (500k, 1M, 7M) on major ticks only: minor labels overlap
        ax.xaxis.set_major_formatter(mticker.EngFormatter(sep=""))
        ax.xaxis.set_minor_formatter(mticker.NullFormatter())
        if numeric and d[x].nunique() <= 8:  # few x values (model sizes, epochs): label each one
            ax.set_xticks(sorted(d[x].unique()))
    ax.set_xlabel(str(x))
    ax.set_ylabel(str(y))


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
    """``y`` against ``x`` (model size, n-gram threshold, date...), one line per ``hue`` with its
    confidence band from ``lo``/``hi`` and a dashed chance line; with ``col``, one panel per value
    (shared y). Each (hue, col, x) must be a single row: aggregate or filter first, so that lines
    never silently mix settings. ``lo``/``hi`` = None draws no band (skipped too if the columns
    are absent)."""
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

    hues = list(pd.unique(df[hue])) if hue is not None else [y]
    if hue is not None and isinstance(df[hue].dtype, pd.CategoricalDtype):
        hues = [h for h in df[hue].cat.categories if h in set(hues)]
    colours = attack_palette(hues)
    if isinstance(df[x].dtype, pd.CategoricalDtype):
        order = list(df[x].cat.categories)
    else:
        order = list(pd.unique(df[x]))

    if col is None:
        fig, ax = _new_ax(ax)
        _draw_metric(ax, df, x, y, lo, hi, hue, colours, order, logx, chance)
        ax.legend(fontsize="small", title=hue)
        if title:
            ax.set_title(title)
        return fig

    panels = list(pd.unique(df[col]))
    ncols = max(1, min(col_wrap, len(panels)))
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.6 * nrows), sharey=True, squeeze=False)
    flat = axes.ravel()
    for a, p in zip(flat, panels):
        _draw_metric(a, df[df[col] == p], x, y, lo, hi, hue, colours, order, logx, chance)
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
    fig.tight_layout()
    return fig


def plot_heatmap(
    df_pivot: pd.DataFrame, ax=None, fmt: str = ".3f", center: float | None = 0.5, title=None, cbar_label: str = "AUC"
):
    """Annotated heatmap of a pivot table (e.g. attack x split AUCs), diverging around chance."""
    if not isinstance(df_pivot, pd.DataFrame) or df_pivot.empty:
        raise ValueError("df_pivot: expected a non-empty DataFrame (e.g. df.pivot(index=..., columns=...))")
    try:
        data = df_pivot.astype(float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"df_pivot: values must be numeric ({exc})") from None
    n_r, n_c = data.shape
    fig, ax = _new_ax(ax, figsize=(max(4.0, 1.0 + 0.9 * n_c), max(3.0, 0.8 + 0.45 * n_r)))
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
    ax.set_xlabel(str(df_pivot.columns.name or ""))
    ax.set_ylabel(str(df_pivot.index.name or ""))
    if title:
        ax.set_title(title)
    return fig
