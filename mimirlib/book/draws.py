"""Several lab draws' builds read together: ``python -m mimirlib.book.draws A B C ...``.

Each argument is a build's ``book/executed`` folder, one per lab draw (``seed:`` in the lab profile), or
``book/draws/draw-N``, where ``python -m mimirlib.book.draws --build 0 3 5`` (``make draws DRAWS="0 3 5"``) puts
each draw's chapters: every draw checked first, then for each a lab drawn with that seed and every chapter on it
(``mimir-run --all --draw N``), then the reading below, printed and written to ``book/draws/reading.txt``; the
book's build renders it as a page beside the scorecard (:func:`write_page`) while two or more draws are there. Every
claim decided in every draw on its units' effects is read over all the draws by the same rule
(:func:`mimirlib.verdicts.draws.read_over_draws`): one line per claim with each draw's verdict and the
verdict over the draws, then the counts of the papers' claims decided per draw and over the draws, and the
claims whose draws differ beyond their own noise (Cochran's Q, p < 0.05), each pair's stability, and how each
draw's own prediction fared on the others (:func:`prediction`: the scorecard's share of simulated new draws that
would repeat each verdict, summed, against how many the other draws repeated). With ``--against D E F``, another set
of draws is read the same way and the two readings are compared as two builds are (:func:`compare_sets`: how many
claims decided by either set read the same in both, and how the others differ).
"""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path

import pandas as pd

from mimirlib.book.scorecard import (
    DECIDED,
    collect,
    compare,
    disagreements,
    md_cell,
    records_of,
    repeats,
    stability,
)
from mimirlib.fsutil import write_text_atomic
from mimirlib.paths import draw_of
from mimirlib.verdicts import outcome_label
from mimirlib.verdicts.draws import OverDraws, read_over_draws, repeat_text, replication

HETEROGENEOUS_P = 0.05  # a claim's draws differ beyond their noise below this Q p-value (reported, not decided)
PAGE = "draws"  # the book's page of the reading over the draws in book/draws (beside the scorecard)


def records_by_key(dirs: list[Path]) -> dict[str, list[dict | None]]:
    """Per claim key (in the chapters' order), its record in each build (None where absent)."""
    stems = sorted({p.stem for d in dirs for p in d.glob("*.ipynb")})
    out: dict[str, list[dict | None]] = {}
    for i, d in enumerate(dirs):
        for stem in stems:
            nb = d / f"{stem}.ipynb"
            for r in records_of(nb) if nb.exists() else []:
                out.setdefault(r["key"], [None] * len(dirs))[i] = r
    return out


def label(r: dict | None) -> str:
    return "-" if r is None else outcome_label(r["verdict"], r.get("power") or "")


def read_all(by_key: dict[str, list[dict | None]]) -> dict[str, OverDraws]:
    """Each claim present in every build, read over the draws."""
    return {k: read_over_draws(rs) for k, rs in by_key.items() if all(r is not None for r in rs)}


def summary(by_key: dict[str, list[dict | None]], over: dict[str, OverDraws]) -> list[str]:
    """The papers' claims decided in each draw and over the draws, and the claims whose draws differ."""
    paper = [k for k, rs in by_key.items() if any(r and r.get("origin") == "paper" for r in rs)]
    n_builds = len(next(iter(by_key.values()))) if by_key else 0
    per_draw = [sum(1 for k in paper if by_key[k][i] and by_key[k][i]["verdict"] in DECIDED) for i in range(n_builds)]
    readable = [k for k in paper if k in over and over[k].verdict is not None]
    decided = [k for k in readable if over[k].verdict.verdict in DECIDED]
    others = [k for k in paper if k not in readable]
    absent = [k for k in others if any(r is None for r in by_key[k])]
    others = [k for k in others if k not in absent]
    same = [k for k in others if len({r["verdict"] for r in by_key[k]}) == 1]
    same_decided = [k for k in same if by_key[k][0]["verdict"] in DECIDED]
    lines = [
        f"papers' claims decided per draw: {', '.join(map(str, per_draw))} of {len(paper)}",
        f"{len(readable)} of {len(paper)} papers' claims read over the draws: {len(decided)} decided over the "
        f"draws; the other {len(others)} keep their per-draw verdicts: {len(same_decided)} decided the same in every "
        f"draw, {len(same) - len(same_decided)} undecided in every draw, {len(others) - len(same)} not the same in "
        f"every draw ({', '.join(k for k in others if k not in same) or 'none'})"
        + (f"; absent from some draw: {', '.join(absent)}" if absent else ""),
    ]
    q, df = sum(o.q for o in over.values() if o.df), sum(o.df for o in over.values())
    if df:
        lines.append(
            f"every claim read over the draws: Q {q:.1f} on {df} df (Q/df {q / df:.2f}; near 1: the draws differ as "
            "their own intervals predict)"
        )
    wide = [k for k, o in over.items() if o.df and o.p < HETEROGENEOUS_P]
    lines.append(
        f"claims whose draws differ beyond their own noise (Q p < {HETEROGENEOUS_P}): {', '.join(wide) or 'none'}"
    )
    again = [p for p in (replication(asdict(over[k].verdict)) for k in decided) if p is not None]
    if again:
        what = "papers' claims decided over these draws"
        lines.append(
            f"a new set of as many draws would repeat {repeat_text(again, what)}, if draws differed only as the pooled "
            "intervals say (widened where Q/df > 1; mimirlib.verdicts.draws.replication)"
        )
    return lines


def set_reading(records: list[dict | None], over: OverDraws | None) -> tuple[str | None, str]:
    """A set of draws' reading of one claim, (verdict, power reading): over the draws where it is read so, else the
    verdict every draw gave, else (None, ""): no single reading (its draws differ, or one lacks the claim)."""
    if over is not None and over.verdict is not None:
        return over.verdict.verdict, over.verdict.power
    if all(r is not None for r in records) and len({r["verdict"] for r in records}) == 1:
        return records[0]["verdict"], records[0].get("power") or ""
    return None, ""


def compare_sets(a: list[Path], b: list[Path]) -> pd.DataFrame:
    """The readings of two sets of draws side by side, in the frame :func:`scorecard.compare` makes of two builds
    (``verdict_old`` / ``verdict_new``, their power readings; None where a set has no single reading)."""
    by_a, by_b = records_by_key(a), records_by_key(b)
    over_a, over_b = read_all(by_a), read_all(by_b)
    rows = []
    for key in dict.fromkeys([*by_a, *by_b]):
        va, pa = set_reading(by_a.get(key, [None]), over_a.get(key))
        vb, pb = set_reading(by_b.get(key, [None]), over_b.get(key))
        rows.append({"key": key, "verdict_old": va, "power_old": pa, "verdict_new": vb, "power_new": pb})
    return pd.DataFrame(rows, columns=["key", "verdict_old", "power_old", "verdict_new", "power_new"])


def sets_text(diff: pd.DataFrame) -> str:
    """:func:`compare_sets`' frame as text: the claims the two sets read differently, then the counts."""

    def show(v, p):
        return "no single reading" if v is None or pd.isna(v) else outcome_label(v, p)

    lines = ["the two sets of draws, where they differ:"]
    for r in diff.itertuples():
        if r.verdict_old != r.verdict_new:
            lines.append(f"  {r.key:<38} {show(r.verdict_old, r.power_old)} | {show(r.verdict_new, r.power_new)}")
    same, decided = stability(diff)
    share = f" ({100 * same / decided:.0f}%)" if decided else ""
    lines.append(f"{same} of {decided} claims decided by either set read the same in both{share}")
    lines.append("the others: " + ", ".join(f"{n} {kind}" for kind, n in disagreements(diff).items()))
    return "\n".join(lines)


def frames_of(dirs: list[Path]) -> list[pd.DataFrame]:
    """Each draw's verdicts as the scorecard collects them (:func:`scorecard.collect`), the chapters in one order."""
    order = sorted({p.stem for d in dirs for p in d.glob("*.ipynb")})
    return [collect(d, order) for d in dirs]


def pairs_text(dirs: list[Path], names: list[str] | None = None, frames: list[pd.DataFrame] | None = None) -> str:
    """Each pair of draws as two builds are compared (:func:`scorecard.stability`: of the claims decided in either,
    the share with the same verdict in both), and their mean: the issue's bar for one lab draw against another.
    ``names``: the draws' names (default ``[0]``, ``[1]``... as :func:`report` numbers them)."""
    names = names or [f"[{i}]" for i in range(len(dirs))]
    frames = frames if frames is not None else frames_of(dirs)
    shares, parts = [], []
    for i in range(len(dirs)):
        for j in range(i + 1, len(dirs)):
            same, decided = stability(compare(frames[i], frames[j]))
            shares.append(same / decided if decided else float("nan"))
            parts.append(f"{names[i]} v {names[j]} {same}/{decided}" + (f" {100 * shares[-1]:.0f}%" if decided else ""))
    mean = pd.Series(shares, dtype=float).mean()
    return (
        "each pair of draws, claims decided in either read the same: "
        + ", ".join(parts)
        + (f" (mean {100 * mean:.0f}%)" if len(shares) > 1 and pd.notna(mean) else "")
    )


def prediction(own: pd.DataFrame, others: list[pd.DataFrame]) -> pd.DataFrame:
    """How one draw's own prediction fared on the other draws: per verdict it decided on its units (the rows the
    scorecard's ``replication`` reads), ``predicted`` (:func:`scorecard.repeats`: the share of simulated new draws
    that would decide it so, from its units' own noise) and ``repeated`` (how many of ``others`` decided it the
    same; a claim absent from one of them counts as not repeated there)."""
    rep = repeats(own)
    keep = own.verdict.isin(DECIDED) & rep.notna()
    theirs = [o.set_index("key").verdict for o in others]  # indexed once, not once per claim
    repeated = [sum(t.get(k) == v for t in theirs) for k, v in zip(own.key, own.verdict)]
    out = pd.DataFrame({"key": own.key, "verdict": own.verdict, "predicted": rep, "repeated": repeated})
    return out[keep].reset_index(drop=True)


def _span(shares: pd.Series) -> str:
    """``28%`` or ``28-68%``: the lowest and highest of some shares."""
    lo, hi = f"{shares.min():.0%}", f"{shares.max():.0%}"
    return lo if lo == hi else f"{lo[:-1]}-{hi}"


def prediction_text(names: list[str], frames: list[pd.DataFrame]) -> str:
    """Each draw's prediction against the other draws, in words: the verdicts expected to repeat (the sum of the
    predicted shares, with the sd a binomial count of such trials would have, as if they were independent), how many
    did, and the predicted shares of those that did and of those that did not."""
    parts = []
    for i, own in enumerate(frames):
        others = frames[:i] + frames[i + 1 :]
        t = prediction(own, others)
        if t.empty:
            continue
        k = len(others)
        p = t.predicted.to_numpy()
        sd = float((k * p * (1 - p)).sum()) ** 0.5
        flips = t[t.repeated < k]
        text = (
            f"{names[i]} predicted {p.mean():.0%} of its {len(t)} decided verdicts read on units to repeat: "
            f"{k * p.sum():.1f} of {k * len(t)} expected (sd {sd:.1f}), {int(t.repeated.sum())} repeated"
        )
        if not flips.empty:
            text += f"; predicted {_span(flips.predicted)} for those not repeated everywhere"
            held = t[t.repeated == k].predicted
            text += f", {_span(held)} for the others" if len(held) else ""
        parts.append(text)
    return ("each draw's own prediction, on the other draws: " + "; ".join(parts)) if parts else ""


def report(dirs: list[Path]) -> str:
    by_key = records_by_key(dirs)
    over = read_all(by_key)
    lines = [f"{len(dirs)} draws: " + ", ".join(f"[{i}] {d}" for i, d in enumerate(dirs))]
    for key, rs in by_key.items():
        each = " | ".join(f"[{i}] {label(r)}" for i, r in enumerate(rs))
        lines.append(f"  {key:<38} {each}  => {reading_of(over.get(key))}")
    names, frames = [f"[{i}]" for i in range(len(dirs))], frames_of(dirs)
    said = [*summary(by_key, over), pairs_text(dirs, names, frames), prediction_text(names, frames)]
    return "\n".join(lines + [s for s in said if s])


def reading_of(o: OverDraws | None) -> str:
    """One claim's reading over the draws, in words."""
    if o is None:
        return "absent from a draw"
    if o.verdict is None:
        return f"not read over the draws: {o.why}"
    return f"over the draws: {o.verdict.outcome_label}" + (f"; {o.q_text()}" if o.df else "")


def page_reading(o: OverDraws | None) -> str:
    """One claim's reading over the draws as a short table cell: the verdict in bold and its Q below, or why
    it has none."""
    if o is None:
        return "absent from a draw"
    if o.verdict is None:
        return f"none: {md_cell(o.why)}"
    q = f"<br>Q/df {o.q / o.df:.2f}, p {o.p:.2f}" if o.df else ""
    return f"**{md_cell(o.verdict.outcome_label)}**{q}"


def draw_folders(root: Path) -> list[Path]:
    """The draws' folders under ``root`` (``draw-N``, :func:`mimirlib.paths.draw_folder`, holding executed chapters),
    by N. A folder is taken for its draw by its name (``mimir-run --draw N`` writes there)."""
    found = [d for d in root.glob("draw-*") if draw_of(d) is not None and any(d.glob("*.ipynb"))]
    return sorted(found, key=draw_of)


PAGE_INTRO = (
    "The chapters of this book run on one lab, drawn with one seed (its splits, benchmark selection, initialisation "
    "and data order). Here the same chapters, run on labs drawn with other seeds (`make draws`, in `book/draws/`), "
    "are read together: each claim decided on its units' effects is decided over the draws by the rule that decided "
    "it in each draw, on each unit pooled over them (the mean; each draw's interval counted as independent noise), "
    "and Cochran's Q says whether the draws differ more than their own intervals predict. Rules that read cells, "
    "flag shares or peaks keep their per-draw verdicts. These readings are not the chapters' verdicts: each "
    "chapter's page shows its own draw."
)


def render_page(dirs: list[Path]) -> str:
    """The reading over the draws in ``dirs`` as a MyST page: the draws, the counts, each pair's stability, then
    one row per claim (each draw's verdict, the reading over the draws). Folder names only, never paths."""
    by_key = records_by_key(dirs)
    over = read_all(by_key)
    names = [d.name for d in dirs]
    lines = [f"({PAGE})=", "# Over several lab draws", "", PAGE_INTRO, ""]
    lines += [f"Draws on this page: {', '.join(f'`{n}`' for n in names)}.", ""]
    frames = frames_of(dirs)
    said = [*summary(by_key, over), pairs_text(dirs, names, frames), prediction_text(names, frames)]
    lines += [f"- {md_cell(s)}" for s in said if s]
    for origin, title in (("paper", "The papers' claims"), ("book", "The book's own findings")):
        rows = {k: rs for k, rs in by_key.items() if next(r for r in rs if r is not None).get("origin") == origin}
        lines += ["", f"## {title}", ""]
        if not rows:
            lines.append("None in these draws.")
            continue
        lines += ["| over the draws | claim | each draw |", "| --- | --- | --- |"]
        for key, rs in rows.items():
            claim = f"{md_cell(next(r for r in rs if r is not None)['claim'])} (`{key}`)"
            labels = [md_cell(label(r)) for r in rs]
            each = "<br>".join(f"{n}: {v}" for n, v in zip(names, labels))
            each = f"every draw: {labels[0]}" if len(set(labels)) == 1 else each
            lines.append(f"| {page_reading(over.get(key))} | {claim} | {each} |")
    rerun = " ".join(str(draw_of(d)) for d in dirs)
    lines += ["", f'Re-run: `make draws DRAWS="{rerun}"` (about an hour per new draw on 2 cores), then `make html`.']
    return "\n".join(lines) + "\n"


def write_page(draws_root: Path, executed_dir: Path) -> Path | None:
    """``<executed_dir>/draws.md`` from the draws under ``draws_root`` while there are two or more (atomically);
    with fewer, a page left from earlier draws is removed. Returns the page, or None."""
    out = executed_dir / f"{PAGE}.md"
    dirs = draw_folders(draws_root) if draws_root.is_dir() else []
    if len(dirs) < 2:
        out.unlink(missing_ok=True)
        return None
    return write_text_atomic(out, render_page(dirs))


def parse_draws(values: list[str], profile: str, jobs: int = 1) -> list[int]:
    """``--build``'s draws as integers, each checked against ``profile`` (one with a lab), and ``jobs`` >= 1;
    ValueError naming the first bad one. Two or more draws, none twice."""
    if jobs < 1:
        raise ValueError(f"--jobs {jobs}: run at least one chapter at a time")
    from mimirlib.lab.build import lab_config

    draws = []
    for v in values:
        try:
            d = int(v)
        except ValueError:
            raise ValueError(f"draw {v!r}: a lab draw is a seed, an integer >= 0") from None
        lab_config(profile, d)  # an integer >= 0, of a profile with a lab
        draws.append(d)
    if len(draws) < 2 or len(set(draws)) < len(draws):
        raise ValueError(f"draws {' '.join(values) or '(none)'}: give two or more different seeds")
    return draws


def build_draws(draws: list[int], profile: str, jobs: int) -> list[Path]:
    """Each draw's lab and chapters (``mimir-run --all --draw N``, in ``book/draws/draw-N``), one draw after the
    other; the draws' folders. RuntimeError naming the draw whose run failed (its good chapters stay)."""
    from mimirlib.runner import REPO_ROOT, draw_dir
    from mimirlib.runner import main as run

    for d in draws:
        rc = run(["--all", "--profile", profile, "--jobs", str(jobs), "--draw", str(d)])
        if rc:
            raise RuntimeError(f"draw {d}: mimir-run --all --draw {d} exited {rc} (see above)")
    return [REPO_ROOT / draw_dir(d) for d in draws]


def _error(message: str, status: int = 2) -> int:
    """One line on stderr naming the culprit; the exit status."""
    print(f"mimirlib.book.draws: error: {message}", file=sys.stderr)
    return status


def main(argv=None) -> int:
    """``python -m mimirlib.book.draws A B [C ...]``: the executed folders of builds of several lab draws;
    ``--build N M ...``: build those draws first, then read them."""
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("builds", nargs="*", help="each draw's executed folder (two or more); with --build, the draws")
    ap.add_argument("--build", action="store_true", help="the arguments are draws (seeds) to build, then read")
    ap.add_argument("--profile", default="lab", help="with --build: the profile whose lab is drawn (default: lab)")
    ap.add_argument("--jobs", type=int, default=1, help="with --build: chapters side by side (mimir-run --jobs)")
    ap.add_argument("--against", type=Path, nargs="+", default=[], help="another set of draws' folders to compare")
    args = ap.parse_args(argv)
    if args.build:
        try:
            if args.against:
                raise ValueError("--against reads folders already built; build the draws first, then compare")
            draws = parse_draws(args.builds, args.profile, args.jobs)
        except ValueError as e:
            return _error(str(e))
        try:
            dirs = build_draws(draws, args.profile, args.jobs)
        except RuntimeError as e:
            return _error(str(e), 1)
        text = report(dirs)
        (dirs[0].parent / "reading.txt").write_text(text + "\n", encoding="utf-8")
        print(text)
        return 0
    args.builds = [Path(b) for b in args.builds]
    if len(args.builds) < 2:
        return _error("builds: give the executed folders of two or more lab draws")
    for d in [*args.builds, *args.against]:
        if not d.is_dir():
            return _error(f"{d}: no such folder of executed chapters")
    print(report(args.builds))
    if args.against:
        print(sets_text(compare_sets(args.builds, args.against)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
