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
"""

from __future__ import annotations

import functools
import re
import weakref
from collections.abc import Iterable, Mapping

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.category import StrCategoryFormatter

import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import matplotlib.ticker as mticker
import numpy as np
import pandas as pd
import seaborn as sns

from mimirlib.display import report

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

# Okabe & Ito (2008), "Color universal design": the qualitative palette designed for colour-blind
# readers. Order: the first four are pairwise the most distinct under normal vision, deuteranopia
# and protanopia (CIELAB distance >= 25 in all three; tests/test_plots.py measures it); yellow,
# faint on white, comes last.
_OKABE_ITO = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "bluish green": "#009E73",
    "black": "#000000",
    "sky blue": "#56B4E9",
    "vermillion": "#D55E00",
    "reddish purple": "#CC79A7",
    "yellow": "#F0E442",
}
PALETTE: list[tuple[float, float, float]] = [mcolors.to_rgb(h) for h in _OKABE_ITO.values()]
NEUTRAL = (0.5, 0.5, 0.5)  # chance lines and other references, never a data series
MAX_OVERLAID = 4  # distributions drawn over each other on one panel, at most
# Only when one call needs more than eight colours (never in the book's figures).
_OVERFLOW = [c for c in sns.color_palette("dark", 10)]
_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]

# Canonical attack -> its colour (the book's seven series stay >= 15 CIELAB apart under normal
# vision, deuteranopia and protanopia; the model-free baseline is black).
_KNOWN = {
    "loss": _OKABE_ITO["blue"],
    "ref": _OKABE_ITO["orange"],
    "zlib": _OKABE_ITO["bluish green"],
    "min_k": _OKABE_ITO["reddish purple"],
    "min_k++": _OKABE_ITO["sky blue"],
    "ne": _OKABE_ITO["vermillion"],
    "baseline": _OKABE_ITO["black"],
    "gradnorm": _OKABE_ITO["yellow"],
}
_KNOWN = {k: mcolors.to_rgb(v) for k, v in _KNOWN.items()}
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
    "blind": "baseline",
    "model_free": "baseline",
    "bag_of_words": "baseline",
    "bow": "baseline",
}

# Column names of the book's tidy frames -> axis labels that say what is counted, in which unit.
_AXIS_LABELS = {
    "auc": "AUC",
    "params": "model size (parameters)",
    "tokens": "tokens seen in training",
    "epochs": "epochs (times each member was seen)",
    "steps_before_end": "training steps before the last step",
    "step": "training step",
    "share trimmed": "share of a range's samples trimmed",
    "training-text density": "training-text density (share of an IN range's samples)",
    "benchmark": "non-member benchmark",
    "range size d": "range size d (words)",
    "overlap": "n-gram overlap (share of the text's n-grams in the training data)",
}
# What an attack's score measures and in which unit (mimirlib.core.attacks; log-likelihoods in nats).
_SCORE_UNITS = {
    "loss": "mean token log-likelihood (nats)",
    "ref": "log-likelihood minus the reference model's (nats/token)",
    "zlib": "mean token log-likelihood / zlib size (nats per byte)",
    "min_k": "mean log-likelihood of the k% least likely tokens (nats)",
    "min_k++": "mean standardised log-likelihood of the k% lowest tokens (std. devs)",
    "ne": "neighbours' mean NLL minus the text's (nats/token)",
}


def set_style(font_scale: float = 1.1) -> None:
    """Seaborn whitegrid theme, :data:`PALETTE` as the colour cycle, sizes readable in the rendered
    book; and tables shown whole (:func:`mimirlib.display.report.show_full_tables`)."""
    sns.set_theme(
        context="notebook",
        style="whitegrid",
        palette=PALETTE,
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


def series_colours(n: int) -> list:
    """The first ``n`` colours of :data:`PALETTE` (then of a darker overflow palette): for series that
    are not attacks (models, methods, groups of texts)."""
    pool = PALETTE + _OVERFLOW
    return [pool[i % len(pool)] for i in range(int(n))]


def _canonical(name) -> str:
    """'Min-K++ (AUC 0.61)' -> 'min_k++'; 'ref:ref-h128' -> 'ref': lower case, suffix in parentheses
    and a ':model' qualifier dropped, '-'/' ' -> '_'."""
    s = re.sub(r"\s*\(.*\)\s*$", "", str(name)).strip().lower()
    s = re.sub(r"[\s\-]+", "_", s)
    s = re.sub(r"_?%$", "", s)
    if re.fullmatch(r"min_?k(_?\d+)?", s):  # min_k_20 -> min_k
        s = "min_k"
    elif re.fullmatch(r"min_?k(_?\d+)?\+\+", s):
        s = "min_k++"
    s = _ALIASES.get(s, s)
    if ":" in s:  # ref:<reference model> is the reference attack
        head = _ALIASES.get(s.split(":", 1)[0], s.split(":", 1)[0])
        if head in _KNOWN:
            return head
    return s


def attack_palette(attacks: Iterable) -> dict:
    """Colour per series name: attacks keep one colour in every figure, other names take the free
    palette colours in order.

    Known attacks (loss, ref, zlib, min_k, min_k++, ne, gradnorm, and model-free baselines in
    black) have fixed :data:`PALETTE` colours; spelling variants and ``ref:<model>`` map to them.
    Every other name, and a second name of an attack already coloured in this call (two
    references), takes the first :data:`PALETTE` colour not used in the call, in order of
    appearance. Returns ``{name: rgb}`` keyed by the names as given, in order, duplicates removed;
    colours are distinct within a call.
    """
    names = list(dict.fromkeys(attacks))
    out: dict = {}
    used: list = []
    for name in names:  # known first, so other names never take their colours
        colour = _KNOWN.get(_canonical(name))
        if colour is not None and colour not in used:
            out[name] = colour
            used.append(colour)
    for name in names:
        if name in out:
            continue
        free = [c for c in PALETTE + _OVERFLOW if c not in used]
        colour = free[0] if free else series_colours(len(used) + 1)[-1]
        out[name] = colour
        used.append(colour)
    return {name: out[name] for name in names}


def axis_label(column) -> str:
    """A readable axis label with its unit for a column of the book's frames (``params`` ->
    'model size (parameters)'); other names are returned as given."""
    return _AXIS_LABELS.get(str(column), str(column))


def score_label(attack) -> str:
    """'loss score: mean token log-likelihood (nats)': what an attack's score measures, higher =
    more member-like; the bare 'X score' for attacks without a registered description."""
    unit = _SCORE_UNITS.get(_canonical(attack))
    return f"{attack} score: {unit}" if unit else f"{attack} score"


def human_number(value: float) -> str:
    """Tick text for counts: 1024 -> '1k', 32768 -> '33k', 537472 -> '537k', 1124100 -> '1.1M'."""
    v = float(value)
    if not np.isfinite(v):
        return str(v)
    units = ((1.0, ""), (1e3, "k"), (1e6, "M"), (1e9, "B"), (1e12, "T"))
    k = max(i for i, (div, _) in enumerate(units) if abs(v) >= div or i == 0)
    if k < len(units) - 1 and abs(round(v / units[k][0])) >= 1000:  # 999,999 -> '1M', not '1000k'
        k += 1
    div, suffix = units[k]
    x = v / div
    if abs(x) >= 10 or x == round(x):
        return f"{x:.0f}{suffix}"
    if abs(x) >= 1:
        return f"{x:.1f}".rstrip("0").rstrip(".") + suffix
    return f"{x:.2g}{suffix}"


_HUMAN = mticker.FuncFormatter(lambda v, _pos: human_number(v))
_PLAIN = mticker.FuncFormatter(lambda v, _pos: f"{v:g}")


def count_ticks(axis) -> None:
    """Label an axis of counts (tokens, parameters) as 33k, 1.1M, minor ticks unlabelled."""
    axis.set_major_formatter(_HUMAN)
    axis.set_minor_formatter(mticker.NullFormatter())


def _new_ax(ax, figsize=None):
    if ax is None:
        fig, ax = plt.subplots(figsize=figsize)
        return fig, ax
    return ax.figure, ax


# ----------------------------------------------------------------------------- finishing a figure

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


def _log_ticks(axis, lo: float, hi: float) -> None:
    """Plain decimal labels (0.01, 0.1, 1) on a log axis: 1-2-5 steps over less than two decades."""
    decades = np.log10(max(hi, 1e-300) / max(lo, 1e-300))
    axis.set_major_locator(mticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0) if decades < 2 else (1.0,)))
    axis.set_major_formatter(_PLAIN)
    axis.set_minor_formatter(mticker.NullFormatter())


# ----------------------------------------------------------------------------- ROC


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
    Up to three curves share a legend in the lower right; more get it beside the axes.
    """
    if not curves:
        raise ValueError("curves: empty; need at least one {label: (fpr, tpr)}")
    made = ax is None
    fig, ax = _new_ax(ax)
    colours = attack_palette(curves.keys())
    for label, (fpr, tpr) in curves.items():
        fpr, tpr = np.asarray(fpr, dtype=float), np.asarray(tpr, dtype=float)
        if fpr.shape != tpr.shape:
            raise ValueError(f"curves[{label!r}]: fpr {fpr.shape} and tpr {tpr.shape} differ in shape")
        ax.plot(fpr, tpr, label=str(label), color=colours[label])
    if log:
        lo = min_fpr if min_fpr is not None else (_smallest_fpr_step(curves) or 1e-3)
        ax.plot([lo, 1], [lo, 1], ls="--", color=NEUTRAL, lw=1, label="_chance")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, 1)
        tpos = [np.asarray(t, dtype=float) for _, t in curves.values()]
        tmin = min([lo] + [float(t[t > 0].min()) for t in tpos if (t > 0).any()])
        ax.set_ylim(tmin, 1.05)
        _log_ticks(ax.xaxis, lo, 1.0)
        _log_ticks(ax.yaxis, tmin, 1.05)
    else:
        ax.plot([0, 1], [0, 1], ls="--", color=NEUTRAL, lw=1, label="_chance")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.01)
        ax.set_aspect("equal", adjustable="box")
    ax.set_xlabel("false positive rate")
    ax.set_ylabel("true positive rate")
    if len(curves) <= 3:
        ax.legend(loc="lower right", fontsize="small")
    else:
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small")
    if title:
        ax.set_title(title)
    return finish(fig) if made else fig


def plot_roc_panels(curves: Mapping, title=None, min_fpr: float | None = None):
    """Linear and log-log ROC side by side (the log panel shows the low-FPR regime), one legend
    beside both."""
    fig, (ax_lin, ax_log) = plt.subplots(1, 2, figsize=(11, 4.8))
    plot_roc(curves, log=False, ax=ax_lin, title="linear axes")
    plot_roc(curves, log=True, ax=ax_log, title="log-log axes (low FPR)", min_fpr=min_fpr)
    handles, labels = ax_log.get_legend_handles_labels()
    for ax in (ax_lin, ax_log):
        ax.get_legend().remove()
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize="small")
    if title:
        fig.suptitle(title)
    return finish(fig)


# ----------------------------------------------------------------------------- distributions


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
    fig, ax = _new_ax(ax)
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
    _HEADROOM.add(ax)
    _legend_headroom(ax, _renderer(fig))
    return finish(fig) if made else fig


def plot_score_ecdf(scores: Mapping, ax=None, xlabel: str = "score", title=None, count_label: str | None = None):
    """Empirical CDFs, one line per group (at most :data:`MAX_OVERLAID`): better than histograms
    when the groups are small or pile up on one value (e.g. overlaps of 0), since nothing is
    binned; a group to the right of another scores higher throughout."""
    arrays = _groups(scores)
    made = ax is None
    width, height = plt.rcParams["figure.figsize"]
    fig, ax = _new_ax(ax, figsize=(1.5 * width, height))  # the legend sits beside the axes: keep them wide
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
        marker = _MARKERS[k % len(_MARKERS)]
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
        order = [v for v in df[x].cat.categories if v in set(df[x])]
    else:
        order = list(pd.unique(df[x]))
    all_x = list(pd.unique(df[x])) if pd.api.types.is_numeric_dtype(df[x]) else order

    if col is None:
        made = ax is None
        fig, ax = _new_ax(ax, figsize=(7.6, 4.5))  # room for the legend beside the axes
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
    fig, ax = _new_ax(ax, figsize=(max(4.0, 2.2 + 0.1 * row_label + width * n_c), max(3.0, 1.2 + 0.45 * n_r)))
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
