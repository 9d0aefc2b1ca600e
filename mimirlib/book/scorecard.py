"""The claims scorecard: every verdict the chapters decided, on one page, built from their runs.

Each chapter publishes its verdict records into its executed notebook
(:func:`mimirlib.verdicts.publish`); :func:`collect` reads them back and :func:`write_page`
renders a MyST page with one row per claim (where the paper says it, the claim, the paper's
number, the lab's number, the verdict, the sample size, a link to the deciding section). The
book's own findings (claims no paper makes) get their own table. Nothing on the page is typed:
a claim whose chapter did not run is simply absent, and the page says which chapters ran.
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import nbformat
import pandas as pd

from mimirlib.verdicts import GLUE_NAME, OUTCOMES

PAGE = "scorecard"
COLUMNS = ["source", "claim", "paper_value", "lab_value", "verdict", "n", "link"]
HEADERS = {
    "source": "paper, where",
    "claim": "claim",
    "paper_value": "paper",
    "lab_value": "lab",
    "verdict": "verdict",
    "n": "n",
    "link": "decided in",
}


def records_of(nb_path: Path) -> list[dict]:
    """The verdict records glued into one executed notebook (empty if it published none)."""
    nb = nbformat.read(nb_path, as_version=4)
    out = []
    for cell in nb.cells:
        for o in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if o.get("metadata", {}).get("scrapbook", {}).get("name") == GLUE_NAME:
                raw = o["data"]["application/papermill.record/text/plain"]
                out.extend(json.loads(ast.literal_eval(raw)))
    return out


def collect(executed_dir: Path, order: list[str]) -> pd.DataFrame:
    """All records of the chapters in ``order`` that have an executed notebook, in that order."""
    rows = []
    for stem in order:
        nb = executed_dir / f"{stem}.ipynb"
        if nb.exists():
            rows.extend(records_of(nb))
    return pd.DataFrame(
        rows,
        columns=[
            "claim",
            "verdict",
            "evidence",
            "rule",
            "source",
            "paper_value",
            "lab_value",
            "n",
            "origin",
            "key",
            "chapter",
            "section",
        ],
    )


def _cell(x) -> str:
    return str(x).replace("|", "\\|").replace("\n", " ")


def _table(df: pd.DataFrame) -> list[str]:
    lines = ["| " + " | ".join(HEADERS[c] for c in COLUMNS) + " |", "|" + " --- |" * len(COLUMNS)]
    for r in df.itertuples():
        link = f"{{ref}}`{r.chapter.replace('_', ' ')} <{r.section}>`"
        vals = {
            "source": r.source,
            "claim": r.claim,
            "paper_value": r.paper_value,
            "lab_value": r.lab_value,
            "verdict": f"**{r.verdict}**",
            "n": r.n,
        }
        lines.append("| " + " | ".join(_cell(vals[c]) if c != "link" else link for c in COLUMNS) + " |")
    return lines


def render(df: pd.DataFrame, ran: list[str]) -> str:
    """The scorecard page as MyST markdown."""
    counts = df.verdict.value_counts()
    summary = ", ".join(f"{int(counts.get(o, 0))} {o}" for o in OUTCOMES if counts.get(o, 0))
    paper, book = df[df.origin == "paper"], df[df.origin == "book"]
    lines = [
        f"({PAGE})=",
        "# Claims scorecard",
        "",
        "Every claim of the two papers that a chapter tests, with the verdict its run decided. The rows are "
        "read from the executed chapters (each chapter publishes the verdict records it displays), so this "
        "page can never disagree with them. Each verdict follows a named rule in `mimirlib.verdicts`, "
        "stated in full in the chapter's verdict table; *inconclusive* means the effect is inside the "
        "noise (paired bootstrap interval over the texts, and the spread over training seeds where the "
        "lab has several).",
        "",
        f"Chapters in this build: {', '.join(ran) if ran else 'none'}. Verdicts: {summary or 'none'}.",
        "",
        "## The papers' claims",
        "",
    ]
    lines += _table(paper) if len(paper) else ["No chapter with a paper claim has run."]
    lines += [
        "",
        "## The book's own findings",
        "",
        "Results the lab measured that neither paper claims (for example a model-free baseline the "
        "paper did not run). They are decided by the same kind of rule, but they are not reproductions.",
        "",
    ]
    lines += _table(book) if len(book) else ["None in this build."]
    return "\n".join(lines) + "\n"


def write_page(executed_dir: Path, order: list[str]) -> Path:
    """Write ``<executed_dir>/scorecard.md`` from the executed chapters (atomically)."""
    ran = [s for s in order if (executed_dir / f"{s}.ipynb").exists()]
    text = render(collect(executed_dir, order), ran)
    executed_dir.mkdir(parents=True, exist_ok=True)
    out = executed_dir / f"{PAGE}.md"
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, out)
    return out


def compare(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """Which verdicts and lab numbers moved between two builds (two :func:`collect` frames): one row
    per claim key in either, with the old and new verdict and lab value, and ``moved`` = the verdict
    changed (a claim present in one build only counts as moved)."""
    keep = ["key", "chapter", "verdict", "lab_value"]
    both = old[keep].merge(new[keep], on=["key", "chapter"], how="outer", suffixes=("_old", "_new"))
    both["moved"] = both.verdict_old.fillna("") != both.verdict_new.fillna("")
    return both.sort_values(["moved", "chapter", "key"], ascending=[False, True, True], ignore_index=True)


RECORD = "application/papermill.record/"


def glued_values(nb_path: Path) -> dict[str, str]:
    """Every value an executed notebook glued (``myst_nb.glue``), as ``name -> text``; a glued figure
    reads as ``name -> "figure <sha256 of its PNG>"``."""
    import hashlib

    nb = nbformat.read(nb_path, as_version=4)
    out = {}
    for cell in nb.cells:
        for o in cell.get("outputs", []) if cell.cell_type == "code" else []:
            name = o.get("metadata", {}).get("scrapbook", {}).get("name")
            data = o.get("data", {})
            if name is None or name == GLUE_NAME:
                continue
            if RECORD + "image/png" in data:
                out[name] = "figure " + hashlib.sha256(data[RECORD + "image/png"].encode()).hexdigest()[:16]
            else:
                out[name] = str(data.get(RECORD + "text/plain", data.get(RECORD + "text/html", "")))
    return out


def compare_glued(old_dir: Path, new_dir: Path, order: list[str]) -> pd.DataFrame:
    """One row per glued value of each chapter in either build: old and new text, ``same``."""
    rows = []
    for stem in order:
        old = glued_values(old_dir / f"{stem}.ipynb") if (old_dir / f"{stem}.ipynb").exists() else {}
        new = glued_values(new_dir / f"{stem}.ipynb") if (new_dir / f"{stem}.ipynb").exists() else {}
        for name in sorted(old.keys() | new.keys()):
            rows.append({"chapter": stem, "name": name, "old": old.get(name), "new": new.get(name)})
    df = pd.DataFrame(rows, columns=["chapter", "name", "old", "new"])
    df["same"] = df.old == df.new
    return df


def main(argv=None) -> int:
    """``python -m mimirlib.book.scorecard OLD_EXECUTED_DIR NEW_EXECUTED_DIR``: the verdicts that moved."""
    import argparse

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path)
    ap.add_argument("--glued", action="store_true", help="also compare every glued value (numbers and figures)")
    args = ap.parse_args(argv)
    for d in (args.old, args.new):
        if not d.is_dir():
            print(f"error: {d}: no such folder of executed chapters")
            return 2
    order = sorted({p.stem for d in (args.old, args.new) for p in d.glob("*.ipynb")})
    diff = compare(collect(args.old, order), collect(args.new, order))
    with pd.option_context("display.max_rows", None, "display.max_colwidth", 70, "display.width", 250):
        print(diff.to_string(index=False))
    print(f"{int(diff.moved.sum())} of {len(diff)} verdicts moved")
    if args.glued:
        glued = compare_glued(args.old, args.new, order)
        changed = glued[~glued.same]
        with pd.option_context("display.max_rows", None, "display.max_colwidth", 60, "display.width", 250):
            print(changed.drop(columns="same").to_string(index=False) if len(changed) else "")
        figures = glued.old.fillna("").str.startswith("figure ")
        print(
            f"{int((~glued.same & ~figures).sum())} of {int((~figures).sum())} glued values differ; "
            f"{int((~glued.same & figures).sum())} of {int(figures.sum())} glued figures differ"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
