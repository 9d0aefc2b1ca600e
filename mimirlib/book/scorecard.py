"""The claims scorecard: every verdict the chapters decided, on one page, built from their runs.

Each chapter publishes its verdict records into its executed notebook
(:func:`mimirlib.verdicts.publish`); :func:`collect` reads them back and :func:`write_page`
renders a MyST page: the counts per origin (the papers' claims and the book's own findings apart,
inconclusive verdicts by their power reading), then one short line per claim (the verdict with
its MDE beside the paper's effect, the claim and where the paper says it, a link to the deciding
section) and each claim's numbers a click away in a dropdown. The book's own findings (claims no
paper makes) get their own table. Nothing on the page is typed:
a claim whose chapter did not run is simply absent, and the page says which chapters ran.
"""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path

import nbformat
import pandas as pd

from mimirlib.core import power
from mimirlib.fsutil import write_text_atomic
from mimirlib.verdicts import GLUE_NAME, INCONCLUSIVE, NOT_REPRODUCED, OUTCOMES, PARTLY, REPRODUCED, outcome_label
from mimirlib.verdicts.draws import REPLICATIONS, repeat_text, replication

PAGE = "scorecard"
# A claim named in a summary line: its first words, up to this many characters.
CLAIM_BRIEF = 48
FIELDS = [
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
    "paper_effect",
    "effect_of_interest",
    "mde",
    "mde_floor",
    "power",
    "points",
    "paired_over",
    "chapter",
    "section",
    "decision",
    "units",
    "claimed_sign",
]
ORIGINS = {"paper": "the papers' claims", "book": "the book's own findings"}


def records_of(nb_path: Path, name: str = GLUE_NAME) -> list[dict]:
    """The records glued as ``name`` into one executed notebook (empty if it published none); by
    default the verdict records."""
    nb = nbformat.read(nb_path, as_version=4)
    out = []
    for cell in nb.cells:
        for o in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if o.get("metadata", {}).get("scrapbook", {}).get("name") == name:
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
    df = pd.DataFrame(rows, columns=FIELDS)
    df["power"] = df["power"].astype(object).fillna("")
    return df


def md_cell(x) -> str:
    """Text for one cell of a MyST table: pipes escaped, on one line."""
    return str(x).replace("|", "\\|").replace("\n", " ")


def _label(r) -> str:
    return outcome_label(r.verdict, r.power)


def _known(x):
    return None if x is None or pd.isna(x) else x


def _power(r, reach: bool = False) -> str:
    """``MDE 0.050 (0.030 with unlimited texts) vs paper +0.043`` for a record whose rule computed an
    MDE, else empty (:func:`mimirlib.core.power.describe`); with ``reach``, an underpowered record's text
    also says what would reach the bound (the details; the table's line stays short)."""
    if _known(r.mde) is None:
        return ""
    points = bool(_known(getattr(r, "points", None)))  # False in records written before the field
    return power.describe(
        r.mde,
        _known(r.paper_effect),
        _known(r.mde_floor),
        _known(r.effect_of_interest),
        points,
        (r.power or "") if reach else "",
        _known(getattr(r, "paired_over", None)) or power.TEXTS,  # records written before the field
    )


def _link(r) -> str:
    return f"{{ref}}`{r.chapter.replace('_', ' ')} <{r.section}>`"


def _table(df: pd.DataFrame) -> list[str]:
    """One short line per claim: the verdict, the claim and where the paper says it, the link."""
    lines = ["| verdict | claim | decided in |", "| --- | --- | --- |"]
    for r in df.itertuples():
        power = _power(r)
        verdict = f"**{_label(r)}**" + (f"<br>{power}" if power else "")
        lines.append(f"| {md_cell(verdict)} | {md_cell(r.claim)} ({md_cell(r.source)}) | {_link(r)} |")
    return lines


def repeats(df: pd.DataFrame) -> pd.Series:
    """Per claim, the share of simulated new lab draws that would decide it as this build did
    (:func:`mimirlib.verdicts.draws.replication`, from its units' own noise); NaN where its rule tallies no units."""
    out = []
    for r in df.itertuples(index=False):
        if not isinstance(r.units, (list, tuple)):  # no units published: its rule tallies none
            out.append(None)
            continue
        out.append(
            replication({k: _known(v) if not isinstance(v, (list, tuple)) else v for k, v in r._asdict().items()})
        )
    return pd.Series([float("nan") if x is None else x for x in out], index=df.index, dtype=float)


def _brief(claim: str) -> str:
    """A claim's first words, for a summary line (at most :data:`CLAIM_BRIEF` characters)."""
    return md_cell(textwrap.shorten(claim, CLAIM_BRIEF, placeholder=" ..."))


def repeats_text(df: pd.DataFrame, rep: pd.Series) -> str:
    """``a new lab draw would repeat about 78% of the 23 decided verdicts read on their units, ...; below one in
    two: ...`` (empty when no decided verdict was read on its units)."""
    decided = rep[df.verdict.isin(DECIDED) & rep.notna()]
    if decided.empty:
        return ""
    low = ", ".join(
        f"{_brief(df.claim[i])} ({df.chapter[i].replace('_', ' ')}) {rep[i]:.0%}"
        for i in decided.sort_values().index
        if rep[i] < 0.5
    )
    return (
        f"a new lab draw would repeat {repeat_text(list(decided), 'decided verdicts read on their units')}, if draws "
        f"differed only as their own intervals say ({REPLICATIONS} simulated draws each, "
        "`mimirlib.verdicts.draws.replication`)" + (f"; below one in two: {low}" if low else "")
    )


def _details(df: pd.DataFrame, rep: pd.Series) -> list[str]:
    """Each claim's numbers behind a dropdown: the paper's, the lab's, the sample size, the power, and how often a
    new lab draw would repeat its verdict (``rep``: :func:`repeats`)."""
    out = []
    for i, r in zip(df.index, df.itertuples()):
        again = (
            "" if pd.isna(rep[i]) else f"a new lab draw repeats this verdict in about {rep[i]:.0%} of simulated draws"
        )
        rows = [("paper", r.paper_value), ("lab", r.lab_value), ("n", r.n), ("power", _power(r, reach=True))]
        rows.append(("replication", again))
        out += [f":::{{dropdown}} {_label(r)}: {md_cell(r.claim)}", ""]
        out += [f"- **{k}**: {md_cell(v)}" for k, v in rows if v]
        out += ["", ":::", ""]
    return out


def counts(df: pd.DataFrame) -> pd.DataFrame:
    """Verdicts counted per origin (rows) and outcome (columns); inconclusive ones also by power reading."""
    cols = [o for o in OUTCOMES if o != INCONCLUSIVE] + [f"{INCONCLUSIVE}: {r}" for r in power.READINGS]
    cols.insert(OUTCOMES.index(INCONCLUSIVE), INCONCLUSIVE)
    out = pd.DataFrame(0, index=list(ORIGINS), columns=cols)
    for r in df.itertuples():
        out.loc[r.origin, r.verdict] += 1
        if r.verdict == INCONCLUSIVE and r.power:
            out.loc[r.origin, f"{INCONCLUSIVE}: {r.power}"] += 1
    return out


def summary(df: pd.DataFrame, origin: str) -> str:
    """``10 reproduced, 9 partly reproduced, 12 inconclusive (5 underpowered, ...)`` for one origin."""
    c = counts(df).loc[origin]
    parts = []
    for o in OUTCOMES:
        if not c[o]:
            continue
        kinds = [f"{c[f'{INCONCLUSIVE}: {r}']} {r}" for r in power.READINGS if c[f"{INCONCLUSIVE}: {r}"]]
        parts.append(f"{c[o]} {o}" + (f" ({', '.join(kinds)})" if o == INCONCLUSIVE and kinds else ""))
    return ", ".join(parts) or "none"


INTRO = (
    "Every claim of the papers that a chapter tests (the two the book follows, and Maini et al.'s dataset "
    "inference, which its chapter re-runs), with the verdict its run decided. The rows are read from "
    "the executed chapters (each chapter publishes the verdict records it displays), so this page can never disagree "
    "with them. Each verdict follows a named rule in `mimirlib.verdicts`, stated in full in the chapter's verdict "
    "table. *Inconclusive* means the effect is inside the noise (paired bootstrap interval over the texts, and the "
    "spread over training seeds where the lab has several); its kind says why: *smaller than the paper's* when a "
    "one-sided test (alpha 0.05) puts the lab's effect below the paper's; else *underpowered* when the smallest "
    "effect the lab's test would detect (the MDE, 80% power at alpha 0.05) is larger than the paper's effect, so the "
    "lab cannot tell; *unresolved* when neither. Where the paper gives no number (a figure only), the same tests "
    f"read against the book's smallest effect of interest, {power.SMALLEST_EFFECT_OF_INTEREST} AUC (one AUC point, "
    "between the smallest effects the papers report), shown as such and never as the paper's: *smaller than the "
    "smallest effect of interest*, else *underpowered* or *unresolved*; *no paper effect size* when a claim states "
    "neither. All of this is one lab draw (the lab profile's `seed`, which draws its splits, texts, "
    "initialisation and data order): a claim whose effect sits near its bar can read otherwise on another draw. "
    "Builds of several draws are read together, each unit's effect pooled over them and decided by the same rule, with "
    "`python -m mimirlib.book.draws A B C` (see the README)."
)


def _section(df: pd.DataFrame, title: str, empty: str, rep: pd.Series, lead: str = "") -> list[str]:
    lines = [f"## {title}", ""] + ([lead, ""] if lead else [])
    if not len(df):
        return lines + [empty, ""]
    return lines + _table(df) + ["", "Details, claim by claim:", ""] + _details(df, rep)


def render(df: pd.DataFrame, ran: list[str]) -> str:
    """The scorecard page as MyST markdown."""
    paper, book = df[df.origin == "paper"], df[df.origin == "book"]
    rep = repeats(df)
    lines = [f"({PAGE})=", "# Claims scorecard", "", INTRO, ""]
    lines += [f"Chapters in this build: {', '.join(ran) if ran else 'none'}.", ""]
    lines += [f"- **The papers' claims** ({len(paper)}): {summary(df, 'paper')}."]
    lines += [f"- **The book's own findings** ({len(book)}, not counted with the papers'): {summary(df, 'book')}."]
    again = repeats_text(df, rep)
    lines += ([f"- **Another lab draw**: {again}."] if again else []) + [""]
    lines += _section(paper, "The papers' claims", "No chapter with a paper claim has run.", rep[paper.index])
    lines += _section(
        book,
        "The book's own findings",
        "None in this build.",
        rep[book.index],
        lead="Results the lab measured that neither paper claims (for example a model-free baseline the paper did not "
        "run). They are decided by the same kind of rule, but they are not reproductions.",
    )
    return "\n".join(lines) + "\n"


def write_page(executed_dir: Path, order: list[str]) -> Path:
    """Write ``<executed_dir>/scorecard.md`` from the executed chapters (atomically)."""
    ran = [s for s in order if (executed_dir / f"{s}.ipynb").exists()]
    return write_text_atomic(executed_dir / f"{PAGE}.md", render(collect(executed_dir, order), ran))


def compare(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """Which verdicts and lab numbers moved between two builds (two :func:`collect` frames): one row
    per claim key in either, with the old and new verdict and lab value, and ``moved`` = the verdict
    changed (a claim present in one build only counts as moved)."""
    keep = ["key", "chapter", "verdict", "power", "lab_value"]
    old, new = (f.reindex(columns=f.columns.union(["power"])).astype({"power": object}) for f in (old, new))
    old, new = (f.fillna({"power": ""}) for f in (old, new))
    both = old[keep].merge(new[keep], on=["key", "chapter"], how="outer", suffixes=("_old", "_new"))
    both["moved"] = both.verdict_old.fillna("") != both.verdict_new.fillna("")
    return both.sort_values(["moved", "chapter", "key"], ascending=[False, True, True], ignore_index=True)


# Verdicts that decide a claim, and those of them that support it.
SUPPORTED = frozenset({REPRODUCED, PARTLY})
DECIDED = SUPPORTED | {NOT_REPRODUCED}


def decided_somewhere(verdicts: pd.DataFrame) -> pd.Series:
    """Per claim (a row of ``verdicts``: one column per build, NaN where absent): decided (reproduced, partly or
    not reproduced) in some build."""
    return verdicts.isin(DECIDED).any(axis=1)


def same_everywhere(verdicts: pd.DataFrame) -> pd.Series:
    """Per claim: one verdict in every build, a claim absent from a build counting as a verdict of its own."""
    return verdicts.fillna("absent").nunique(axis=1) == 1


def opposite(verdicts: pd.DataFrame) -> pd.Series:
    """Per claim: supported (reproduced or partly) in one build and not reproduced in another: a contradiction."""
    return verdicts.isin(SUPPORTED).any(axis=1) & (verdicts == NOT_REPRODUCED).any(axis=1)


def _two(diff: pd.DataFrame) -> pd.DataFrame:
    return diff[["verdict_old", "verdict_new"]]


def stability(diff: pd.DataFrame) -> tuple[int, int]:
    """(same, decided): of the claims decided (reproduced, partly or not reproduced) in either build of
    :func:`compare`'s frame, how many have the same verdict in both: the share issue 28 asks to be >= 90%
    for two labs drawn with different seeds. A claim present in one build only counts as not the same."""
    decided = decided_somewhere(_two(diff))
    return int((decided & same_everywhere(_two(diff))).sum()), int(decided.sum())


def decided_in_one_build_only(diff: pd.DataFrame) -> pd.Series:
    """The rows of :func:`compare`'s frame decided (reproduced, partly or not reproduced) in exactly one build."""
    return diff.verdict_old.isin(DECIDED) != diff.verdict_new.isin(DECIDED)


def disagreements(diff: pd.DataFrame) -> dict[str, int]:
    """How the decided claims of :func:`stability` that differ between the builds differ: ``opposite``
    (:func:`opposite`), ``decided in one build only`` (inconclusive, not tested or absent in the other) and
    ``reproduced vs partly``. Only ``opposite`` contradicts; the others are effects near a bar."""
    differ = decided_somewhere(_two(diff)) & ~same_everywhere(_two(diff))
    one_only = decided_in_one_build_only(diff)
    both = differ & ~one_only
    contra = opposite(_two(diff))
    return {
        "opposite": int(contra.sum()),
        "decided in one build only": int(one_only.sum()),
        "reproduced vs partly": int((both & ~contra).sum()),
    }


def one_build_readings(diff: pd.DataFrame) -> tuple[dict[str, int], int]:
    """The claims of :func:`disagreements`' ``decided in one build only``, by what the other build read:
    its power reading (``underpowered``: that build cannot tell; ``smaller than the paper's`` or ``smaller
    than the smallest effect of interest``: it rules the claimed effect size out), ``inconclusive``
    without one, ``not tested``, or ``absent``; counts in that order, zeros left out. And how many of
    them are *not reproduced* where decided and smaller than the claimed effect where not: the two
    builds then agree that the claimed effect is absent, on different sides of the tally's bar."""
    counts = dict.fromkeys([*power.READINGS, INCONCLUSIVE, "not tested", "absent"], 0)
    agree = 0
    for r in diff[decided_in_one_build_only(diff)].itertuples():
        decided_old = r.verdict_old in DECIDED
        verdict, reading = (r.verdict_new, r.power_new) if decided_old else (r.verdict_old, r.power_old)
        shown = r.verdict_old if decided_old else r.verdict_new
        if pd.isna(verdict):
            counts["absent"] += 1
        elif verdict == INCONCLUSIVE:
            counts[reading if reading in power.READINGS else INCONCLUSIVE] += 1
        else:
            counts["not tested"] += 1
        agree += shown == NOT_REPRODUCED and reading in (power.SMALLER, power.NEGLIGIBLE)
    return {k: n for k, n in counts.items() if n}, agree


def moves_text(diff: pd.DataFrame) -> str:
    """:func:`compare`'s frame as text: every verdict, old -> new (with its power reading), then the
    lab values of the moved ones, and the count."""

    def label(v, p):
        return "-" if pd.isna(v) else outcome_label(v, p)

    lines = []
    for r in diff.itertuples():
        mark = "*" if r.moved else " "
        old, new = label(r.verdict_old, r.power_old), label(r.verdict_new, r.power_new)
        lines.append(f"{mark} {r.chapter:<18} {r.key:<38} {old:<40} -> {new}")
    for r in diff[diff.moved].itertuples():
        lines += [f"  {r.key}:", f"      old lab value: {r.lab_value_old}", f"      new lab value: {r.lab_value_new}"]
    lines.append(f"{int(diff.moved.sum())} of {len(diff)} verdicts moved")
    same, decided = stability(diff)
    share = f" ({100 * same / decided:.0f}%)" if decided else ""
    lines.append(f"{same} of {decided} verdicts decided in either build are the same in both{share}")
    if same < decided:
        lines.append("the others: " + ", ".join(f"{n} {kind}" for kind, n in disagreements(diff).items()))
        readings, agree = one_build_readings(diff)
        if readings:
            lines.append(
                "decided in one build only, what the other read: "
                + ", ".join(f"{n} {kind}" for kind, n in readings.items())
                + f"; {agree} not reproduced in one and smaller than the claimed effect in the other (both rule it out)"
            )
    return "\n".join(lines)


def across(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Several builds' :func:`collect` frames side by side: one row per claim key in any, indexed by key, a
    column ``0 .. n-1`` per build with its outcome label (``-``: absent), and ``decided`` (reproduced, partly
    or not reproduced in some build), ``same`` (one verdict in every build, absent counting as a verdict) and
    ``opposite`` (supported in one build, not reproduced in another)."""
    verdicts = pd.concat([f.set_index("key").verdict.rename(i) for i, f in enumerate(frames)], axis=1)
    labels = (
        pd.concat(
            [
                pd.Series([outcome_label(v, w) for v, w in zip(f.verdict, f.power)], index=f.key, name=i, dtype=object)
                for i, f in enumerate(frames)
            ],
            axis=1,
        )
        .reindex(verdicts.index)
        .fillna("-")
    )
    return labels.assign(
        decided=decided_somewhere(verdicts), same=same_everywhere(verdicts), opposite=opposite(verdicts)
    )


def across_text(table: pd.DataFrame, names: list[str]) -> str:
    """:func:`across`' table as text: every claim decided in some build whose verdict is not the same in all,
    with each build's reading, then how many decided claims are the same in all builds, and the opposites."""
    builds = [c for c in table.columns if isinstance(c, int)]
    lines = [f"across {len(builds)} builds: " + ", ".join(f"[{i}] {n}" for i, n in zip(builds, names))]
    differ = table[table.decided & ~table.same]
    for key, r in differ.iterrows():
        lines.append(
            f"  {key:<38} " + " | ".join(f"[{i}] {r[i]}" for i in builds) + ("  (opposite)" if r.opposite else "")
        )
    n_dec, n_same = int(table.decided.sum()), int((table.decided & table.same).sum())
    share = f" ({100 * n_same / n_dec:.0f}%)" if n_dec else ""
    lines.append(
        f"{n_same} of {n_dec} verdicts decided in some build are the same in all {len(builds)}{share}; "
        f"{int(table.opposite.sum())} opposite (supported in one build, not reproduced in another)"
    )
    return "\n".join(lines)


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
    """``python -m mimirlib.book.scorecard OLD_EXECUTED_DIR NEW_EXECUTED_DIR [MORE ...]``: the verdicts that
    moved from OLD to NEW; with more builds (e.g. more lab draws), also every claim whose verdict is not the same
    in all of them, and how many are."""
    import argparse

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path)
    ap.add_argument("more", type=Path, nargs="*", help="more builds' executed folders, compared across all")
    ap.add_argument("--glued", action="store_true", help="also compare every glued value (numbers and figures)")
    args = ap.parse_args(argv)
    dirs = [args.old, args.new, *args.more]
    for d in dirs:
        if not d.is_dir():
            print(f"error: {d}: no such folder of executed chapters")
            return 2
    order = sorted({p.stem for d in dirs for p in d.glob("*.ipynb")})
    frames = [collect(d, order) for d in dirs]
    diff = compare(frames[0], frames[1])
    print(moves_text(diff))
    if args.more:
        print(across_text(across(frames), [str(d) for d in dirs]))
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
