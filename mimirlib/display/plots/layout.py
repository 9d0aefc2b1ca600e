"""Finishing a figure: layout, then tick labels that would overlap are wrapped, turned upright
(categories) or thinned (numbers), so no two labels collide; histogram legends keep head room above
the data."""

from __future__ import annotations

import functools
import re
import weakref

import matplotlib.ticker as mticker
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.category import StrCategoryFormatter

_HEADROOM = weakref.WeakSet()  # axes whose legend sits in head room above the data (histograms)
_BESIDE = weakref.WeakSet()  # of those, the axes whose legend had to move beside them


def _renderer(fig):
    """Draw the figure (text sizes are known only then) and return its renderer. A figure whose
    canvas cannot render (closed with ``plt.close``) gets an Agg canvas first."""
    if getattr(fig.canvas, "get_renderer", None) is None:
        FigureCanvasAgg(fig)  # attaches itself as fig.canvas
    fig.canvas.draw()
    return fig.canvas.get_renderer()


def _drawn_tick_labels(axis) -> list:
    """The tick labels the last draw showed: inside the view, visible, not empty; major then minor."""
    lo, hi = sorted(axis.get_view_interval())
    tol = 1e-9 * max(abs(hi - lo), abs(hi), 1e-300)
    out = []
    for locs, get in (
        (axis.get_majorticklocs(), axis.get_major_ticks),
        (axis.get_minorticklocs(), axis.get_minor_ticks),
    ):
        for loc, tick in zip(locs, get(len(locs))):
            if not lo - tol <= loc <= hi + tol:
                continue
            for text in (tick.label1, tick.label2):
                if text.get_visible() and text.get_text().strip():
                    out.append((float(loc), text))
    return out


def _crowded(texts, renderer, horizontal: bool, pad: float = 2.0) -> bool:
    """Whether any two labels' boxes overlap (with ``pad`` pixels between neighbours)."""
    boxes = sorted((t.get_window_extent(renderer) for t in texts), key=lambda b: b.x0 if horizontal else b.y0)
    for a, b in zip(boxes, boxes[1:]):
        if horizontal and b.x0 < a.x1 + pad and b.y0 < a.y1 and a.y0 < b.y1:
            return True
        if not horizontal and b.y0 < a.y1 + pad and b.x0 < a.x1 and a.x0 < b.x1:
            return True
    return False


def _wrap(label: str) -> str:
    """One line break at the separator nearest the middle ('temporal_2022-23' -> 'temporal_\\n2022-23')."""
    cuts = [m.end() for m in re.finditer(r"\s", label) if 0 < m.end() < len(label)]  # spaces first
    cuts = cuts or [m.end() for m in re.finditer(r"[_\-/:]", label) if 0 < m.end() < len(label)]
    if not cuts or "\n" in label:
        return label
    cut = min(cuts, key=lambda i: abs(i - len(label) / 2))
    return label[:cut].rstrip() + "\n" + label[cut:].lstrip()


def _categorical(axis) -> bool:
    """Whether the axis labels categories (fixed texts: ``set_ticklabels``, seaborn's categorical
    axes, heatmaps) rather than numbers a formatter writes."""
    fmt = axis.get_major_formatter()
    if isinstance(fmt, (mticker.FixedFormatter, StrCategoryFormatter)):
        return True
    return isinstance(fmt, mticker.FuncFormatter) and isinstance(fmt.func, functools.partial)  # set_ticklabels


def _tidy_axis(axis, renderer, horizontal: bool) -> bool:
    """Make one axis' tick labels readable; True if anything changed. Categories (fixed labels) are
    wrapped onto two lines, then turned upright; numbers lose minor labels, then every label that
    would touch the one kept before it."""
    drawn = _drawn_tick_labels(axis)
    if not _crowded([t for _, t in drawn], renderer, horizontal):
        return False
    if _categorical(axis):
        if not horizontal:
            return False  # horizontal category labels on y: nothing better to do
        locs = list(axis.get_majorticklocs())
        texts = [t.get_text() for t in axis.get_majorticklabels()]
        if any(_wrap(s) != s for s in texts):
            axis.set_ticks(locs, [_wrap(s) for s in texts])
            if not _crowded([t for _, t in _drawn_tick_labels(axis)], renderer, horizontal):
                return True
            axis.set_ticks(locs, texts)
        if all(t.get_rotation() == 90 for _, t in drawn):
            return False
        axis.set_tick_params(labelrotation=90)
        return True
    minors = set(axis.get_minorticklabels())
    if any(t in minors for _, t in drawn):
        axis.set_minor_formatter(mticker.NullFormatter())
        drawn = [(loc, t) for loc, t in drawn if t not in minors]
    kept = []
    for loc, text in sorted(drawn, key=lambda d: d[0]):
        if not kept or not _crowded([kept[-1][1], text], renderer, horizontal):
            kept.append((loc, text))
    axis.set_major_locator(mticker.FixedLocator([loc for loc, _ in kept]))
    return True


def _fit_labels(ax, renderer) -> bool:
    """Break a title or axis label longer than its axes onto two lines (so it cannot run into the
    next panel's); True if any changed."""
    frame = ax.get_window_extent(renderer)
    changed = False
    for text, room, along in (
        (ax.title, frame.width, "width"),
        (ax.xaxis.label, frame.width, "width"),
        (ax.yaxis.label, frame.height, "height"),
    ):
        s = text.get_text()
        if s and getattr(text.get_window_extent(renderer), along) > room * 1.02 and _wrap(s) != s:
            text.set_text(_wrap(s))
            changed = True
    return changed


def _legend_headroom(ax, renderer) -> None:
    """Raise the y limit so the data end below the legend (kept inside the axes, top right); a legend
    that would need over 40% of the height moves outside, to the right."""
    leg = ax.get_legend()
    if leg is None or renderer is None or ax in _BESIDE:
        return
    top = float(ax.dataLim.y1)
    if not np.isfinite(top) or top <= 0:
        return
    box, frame = leg.get_window_extent(renderer), ax.get_window_extent(renderer)
    share = (frame.y1 - box.y0) / max(frame.height, 1.0) + 0.03
    if share > 0.4:
        leg.set_loc("upper left")
        leg.set_bbox_to_anchor((1.01, 1.0), transform=ax.transAxes)
        ax.set_ylim(0, top * 1.05)
        _BESIDE.add(ax)
        return
    ax.set_ylim(0, top / (1.0 - share))


def keep_legend_headroom(ax, fig) -> None:
    """Give ``ax``'s legend (on ``fig``) head room above the data now, and again after every
    :func:`finish` layout (histograms, whose bars would run into it)."""
    _HEADROOM.add(ax)
    _legend_headroom(ax, _renderer(fig))


def finish(fig, layout: bool = True):
    """Lay the figure out (``layout``: ``tight_layout``; pass False for a seaborn grid already laid
    out) and make every tick label readable: overlapping category labels are wrapped or turned
    upright, overlapping numbers thinned. Histogram legends get their head room again after the
    layout. Returns ``fig``."""
    changed = True
    for _ in range(4):
        if layout:
            fig.tight_layout()
        renderer = _renderer(fig)
        for ax in fig.axes:
            if ax in _HEADROOM:
                _legend_headroom(ax, renderer)
        if not changed:
            break
        changed = False
        for ax in fig.axes:
            if ax.get_visible() and ax.axison:
                changed |= _fit_labels(ax, renderer)
                changed |= _tidy_axis(ax.xaxis, renderer, True)
                changed |= _tidy_axis(ax.yaxis, renderer, False)
    return fig
