"""ROC figures: linear and log-log axes (the low-FPR regime that matters for membership inference)."""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import matplotlib.ticker as mticker
import numpy as np

from mimirlib.display.plots.layout import finish
from mimirlib.display.plots.style import NEUTRAL, attack_palette, new_ax

_PLAIN = mticker.FuncFormatter(lambda v, _pos: f"{v:g}")


def _log_ticks(axis, lo: float, hi: float) -> None:
    """Plain decimal labels (0.01, 0.1, 1) on a log axis: 1-2-5 steps over less than two decades."""
    decades = np.log10(max(hi, 1e-300) / max(lo, 1e-300))
    axis.set_major_locator(mticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0) if decades < 2 else (1.0,)))
    axis.set_major_formatter(_PLAIN)
    axis.set_minor_formatter(mticker.NullFormatter())


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
    (``min_fpr``, by default inferred from the curves as 1/n), since nothing left of it is measured,
    and each curve starts at its own 1/n (a curve on 25 non-members is not drawn left of 1/25).
    Up to three curves share a legend in the lower right; more get it beside the axes.
    """
    if not curves:
        raise ValueError("curves: empty; need at least one {label: (fpr, tpr)}")
    made = ax is None
    fig, ax = new_ax(ax)
    colours = attack_palette(curves.keys())
    for label, (fpr, tpr) in curves.items():
        fpr, tpr = np.asarray(fpr, dtype=float), np.asarray(tpr, dtype=float)
        if fpr.shape != tpr.shape:
            raise ValueError(f"curves[{label!r}]: fpr {fpr.shape} and tpr {tpr.shape} differ in shape")
        own = _smallest_fpr_step({label: (fpr, tpr)}) if log else None
        if own is not None:  # a curve on fewer texts starts at its own 1/n, not at the axis's edge
            fpr, tpr = fpr[fpr >= own * (1 - 1e-9)], tpr[fpr >= own * (1 - 1e-9)]
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
