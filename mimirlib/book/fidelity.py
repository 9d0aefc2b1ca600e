"""The lab's fidelity table: each property a claim depends on, the lab's value beside the paper's.

Chapters publish :class:`mimirlib.verdicts.regime.Regime` rows with their verdicts (measured in
their own runs, decided by the tested rules of :mod:`mimirlib.verdicts.regime`); :func:`write_table`
gathers them into ``fidelity.md`` beside the executed chapters, and the lab page includes that file.
Each row carries an anchor (``regime-<key>``) that the verdict tables link to.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from mimirlib.book.scorecard import md_cell, records_of
from mimirlib.fsutil import write_text_atomic
from mimirlib.verdicts import regime, section_label

FILE = "fidelity.md"
COLUMNS = ["key", "property", "lab_value", "paper_value", "in_regime", "rule", "chapter"]


def collect(executed_dir: Path, order: list[str]) -> pd.DataFrame:
    """Every fidelity row the chapters in ``order`` published, in that order (the first of a key wins)."""
    rows = []
    for stem in order:
        nb = executed_dir / f"{stem}.ipynb"
        if nb.exists():
            rows.extend(records_of(nb, regime.GLUE_NAME))
    return pd.DataFrame(rows, columns=COLUMNS).drop_duplicates("key", ignore_index=True)


STATUS = {True: "**yes**", False: "**no**"}
# How a row marked no bears on the verdicts that link it (the table's first lines, under the lab page's prose)
READING = (
    "A verdict about the semantic neighbours, the RaMIA centre, an upsampled domain or RaMIA beyond text (its "
    "targets' generalisation) is *not tested* when a row it rests on is marked *no*, and says why (RaMIA sets "
    "aside only the point attack it aggregates, LOSS or RMIA, whose centre MIA is out of regime). The other rows "
    "do not bar a verdict: a power row's shortfall shows in each comparative verdict's MDE (*underpowered* when it "
    "is above the paper's effect), the overlap rows say how far each domain's non-members are from the Pile's, and "
    "the shift rows whether the shift the temporal claims are about is there."
)


def render(df: pd.DataFrame) -> str:
    """The table as MyST markdown (an included fragment: no page title)."""
    if df.empty:
        return "No chapter has published a fidelity row in this build.\n"
    n_out = int((df.in_regime == False).sum())  # noqa: E712 (None stays apart)
    lines = [
        f"{len(df)} properties measured by the chapters' runs; {n_out} out of the paper's regime. {READING}",
        "",
        "| property | lab | paper | in regime? | measured in |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in df.itertuples():
        ok = STATUS.get(r.in_regime, "cannot tell")
        anchor = f'<span id="regime-{r.key}"></span>'
        where = f"{{ref}}`{r.chapter.replace('_', ' ')} <{section_label(r.chapter)}>`"
        cells = [
            anchor + md_cell(r.property),
            md_cell(r.lab_value),
            md_cell(r.paper_value),
            f"{ok} ({md_cell(r.rule)})",
        ]
        lines.append("| " + " | ".join(cells + [where]) + " |")
    return "\n".join(lines) + "\n"


def write_table(executed_dir: Path, order: list[str]) -> Path:
    """Write ``<executed_dir>/fidelity.md`` from the executed chapters (atomically)."""
    return write_text_atomic(executed_dir / FILE, render(collect(executed_dir, order)))
