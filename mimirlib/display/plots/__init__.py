"""Figures for the book, in one seaborn style and one colour-blind-safe palette.

Call :func:`set_style` once per notebook. Every function draws on ``ax=`` when given (and returns
its figure) or makes its own figure, and returns the matplotlib ``Figure``; nothing here calls
``plt.show`` (notebooks display the returned figure; scripts save or close it).

One palette, :data:`PALETTE` (Okabe & Ito's eight colours, ordered so that the first four stay
apart for normal vision, deuteranopia and protanopia), is the colour cycle of every figure.
Colours of attacks come from :func:`attack_palette`, so an attack has the same colour in every
figure of the book; other series take :func:`series_colours` in order.
A figure a function builds ends with :func:`finish`: layout, then tick labels that would overlap
are wrapped, turned upright (categories) or thinned (numbers), so no two labels collide.

The figures live in submodules by family (:mod:`.style`, :mod:`.layout`, :mod:`.roc`,
:mod:`.distributions`, :mod:`.metric_vs`, :mod:`.heatmap`); this package re-exports the public
ones, so ``plots.plot_roc(...)`` reads the same everywhere.
"""

from mimirlib.display.plots.distributions import plot_score_ecdf, plot_score_hist
from mimirlib.display.plots.heatmap import plot_heatmap
from mimirlib.display.plots.layout import finish
from mimirlib.display.plots.metric_vs import plot_metric_vs
from mimirlib.display.plots.roc import plot_roc, plot_roc_panels
from mimirlib.display.plots.style import (
    MAX_OVERLAID,
    PALETTE,
    attack_palette,
    axis_label,
    count_ticks,
    human_number,
    score_label,
    series_colours,
    set_style,
)

__all__ = [
    "PALETTE",
    "MAX_OVERLAID",
    "set_style",
    "series_colours",
    "attack_palette",
    "axis_label",
    "score_label",
    "human_number",
    "count_ticks",
    "finish",
    "plot_roc",
    "plot_roc_panels",
    "plot_score_hist",
    "plot_score_ecdf",
    "plot_metric_vs",
    "plot_heatmap",
]
