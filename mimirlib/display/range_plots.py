"""Figures of range membership (RaMIA's chapters): the range-ROC panel of the MIA at a range's point
query against RaMIA's range score, each labelled with its range AUC."""

from __future__ import annotations

from mimirlib.core import metrics
from mimirlib.core.range_stats import range_auc
from mimirlib.display import plots


def range_roc_panel(ax, y, mia, ramia, title: str) -> None:
    """One range-ROC panel (log-log): the MIA's scores and RaMIA's range scores against the IN labels
    ``y``, each labelled with its range AUC, coloured as methods (not as attacks)."""
    curves = {
        f"MIA (AUC {range_auc(mia, y):.3f})": metrics.roc(mia[y], mia[~y])[:2],
        f"RaMIA (AUC {range_auc(ramia, y):.3f})": metrics.roc(ramia[y], ramia[~y])[:2],
    }
    plots.plot_roc(curves, log=True, ax=ax, title=title)
    for line, colour in zip(ax.get_lines(), plots.series_colours(2)):
        line.set_color(colour)
    ax.legend(loc="lower right", fontsize="small")
    ax.set_xlabel("false positive rate (OUT ranges flagged)")
    ax.set_ylabel("true positive rate (IN ranges flagged)")
