"""Score distributions: overlaid histograms and empirical CDFs of a few groups of texts."""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns

from mimirlib.display.plots.layout import finish, keep_legend_headroom
from mimirlib.display.plots.style import MAX_OVERLAID, new_ax, series_colours


def _groups(scores: Mapping) -> dict:
    if not scores:
        raise ValueError("scores: empty; need at least one {label: array}")
    if len(scores) > MAX_OVERLAID:
        raise ValueError(
            f"scores: {len(scores)} groups; at most {MAX_OVERLAID} distributions are drawn on one panel "
            "(draw small multiples: one panel per group of at most four)"
        )
    arrays = {}
    for label, s in scores.items():
        a = np.asarray(s, dtype=float).ravel()
        if a.size == 0:
            raise ValueError(f"scores[{label!r}]: empty")
        a = a[np.isfinite(a)]
        if a.size == 0:
            raise ValueError(f"scores[{label!r}]: no finite values")
        arrays[label] = a
    return arrays


def _count(label, a: np.ndarray, count_label: str | None) -> str:
    return f"{label} ({a.size} {count_label})" if count_label else f"{label} (n={a.size})"


def plot_score_hist(
    scores: Mapping,
    ax=None,
    xlabel: str = "score",
    title=None,
    kde: bool = True,
    count_label: str | None = None,
):
    """Overlaid density histograms (shared bins, outlined steps, light fill) with a KDE per group,
    e.g. members / non-members / modified members: how much the score distributions overlap is
    what the AUC summarises. At most :data:`MAX_OVERLAID` groups; each legend entry says its
    sample size ('(n=60)', or '(60 texts)' with ``count_label="texts"``), and the legend sits in
    head room above the bars."""
    arrays = _groups(scores)
    made = ax is None
    fig, ax = new_ax(ax)
    allv = np.concatenate(list(arrays.values()))
    bins = np.histogram_bin_edges(allv, bins="auto")
    if bins.size > 61:
        bins = np.histogram_bin_edges(allv, bins=60)
    colours = series_colours(len(arrays))
    for colour, (label, a) in zip(colours, arrays.items()):
        use_kde = kde and a.size > 1 and float(np.ptp(a)) > 0
        sns.histplot(
            x=a,
            bins=bins,
            stat="density",
            element="step",
            alpha=0.15,
            linewidth=1.8,
            color=colour,
            kde=use_kde,
            label=_count(label, a, count_label),
            ax=ax,
        )
    ax.set_xlabel(xlabel)
    ax.set_ylabel("density (per unit of score)")
    ax.legend(fontsize="small", loc="upper right")
    if title:
        ax.set_title(title)
    keep_legend_headroom(ax, fig)
    return finish(fig) if made else fig


def plot_score_ecdf(scores: Mapping, ax=None, xlabel: str = "score", title=None, count_label: str | None = None):
    """Empirical CDFs, one line per group (at most :data:`MAX_OVERLAID`): better than histograms
    when the groups are small or pile up on one value (e.g. overlaps of 0), since nothing is
    binned; a group to the right of another scores higher throughout."""
    arrays = _groups(scores)
    made = ax is None
    width, height = plt.rcParams["figure.figsize"]
    fig, ax = new_ax(ax, figsize=(1.5 * width, height))  # the legend sits beside the axes: keep them wide
    styles = ["-", "--", "-.", ":"]
    for k, (colour, (label, a)) in enumerate(zip(series_colours(len(arrays)), arrays.items())):
        sns.ecdfplot(x=a, ax=ax, color=colour, ls=styles[k % len(styles)], label=_count(label, a, count_label))
    ax.set_xlabel(xlabel)
    ax.set_ylabel("share of texts at or below this score")
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0))
    if title:
        ax.set_title(title)
    return finish(fig) if made else fig


# ----------------------------------------------------------------------------- metric vs x
