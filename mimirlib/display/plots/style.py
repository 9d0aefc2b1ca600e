"""The book's figure style: one seaborn theme, one colour-blind-safe palette, attack colours,
axis and score labels with their units, and count ticks (33k, 1.1M).

One palette, :data:`PALETTE` (Okabe & Ito's eight colours, ordered so that the first four stay
apart for normal vision, deuteranopia and protanopia), is the colour cycle of every figure.
Colours of attacks come from :func:`attack_palette`, so an attack has the same colour in every
figure of the book; other series take :func:`series_colours` in order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import matplotlib.ticker as mticker
import numpy as np
import seaborn as sns

from mimirlib.display import report

# Okabe & Ito (2008), "Color universal design", for colour-blind readers: the first four are pairwise >= 25
# CIELAB apart under normal vision, deuteranopia and protanopia (tests/test_plots.py); faint yellow comes last.
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
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]

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
    "effective_epochs": "effective epochs (times the domain's members were seen, mean)",
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


def count_ticks(axis) -> None:
    """Label an axis of counts (tokens, parameters) as 33k, 1.1M, minor ticks unlabelled."""
    axis.set_major_formatter(_HUMAN)
    axis.set_minor_formatter(mticker.NullFormatter())


def new_ax(ax, figsize=None):
    """``(figure, axes)``: the given axes and their figure, or a new figure with one axes."""
    if ax is None:
        fig, ax = plt.subplots(figsize=figsize)
        return fig, ax
    return ax.figure, ax
