"""Several lab draws' builds read together: ``python -m mimirlib.book.draws A B C ...``.

Each argument is a build's ``book/executed`` folder, one per lab draw (``seed:`` in the lab profile). Every
claim decided in every draw on its units' effects is read over all the draws by the same rule
(:func:`mimirlib.verdicts.draws.read_over_draws`): one line per claim with each draw's verdict and the
verdict over the draws, then the counts of the papers' claims decided per draw and over the draws, and the
claims whose draws differ beyond their own noise (Cochran's Q, p < 0.05).
"""

from __future__ import annotations

from pathlib import Path

from mimirlib.book.scorecard import DECIDED, records_of
from mimirlib.verdicts import outcome_label
from mimirlib.verdicts.draws import OverDraws, read_over_draws

HETEROGENEOUS_P = 0.05  # a claim's draws differ beyond their noise below this Q p-value (reported, not decided)


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
    return lines


def report(dirs: list[Path]) -> str:
    by_key = records_by_key(dirs)
    over = read_all(by_key)
    lines = [f"{len(dirs)} draws: " + ", ".join(f"[{i}] {d}" for i, d in enumerate(dirs))]
    for key, rs in by_key.items():
        o = over.get(key)
        if o is None:
            reading = "absent from a draw"
        elif o.verdict is None:
            reading = f"not read over the draws: {o.why}"
        else:
            reading = f"over the draws: {o.verdict.outcome_label}" + (f"; {o.q_text()}" if o.df else "")
        lines.append(f"  {key:<38} " + " | ".join(f"[{i}] {label(r)}" for i, r in enumerate(rs)) + f"  => {reading}")
    return "\n".join(lines + summary(by_key, over))


def main(argv=None) -> int:
    """``python -m mimirlib.book.draws A B [C ...]``: the executed folders of builds of several lab draws."""
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("builds", type=Path, nargs="+", help="each draw's book/executed folder (two or more)")
    args = ap.parse_args(argv)
    if len(args.builds) < 2:
        print("error: builds: give the executed folders of two or more lab draws")
        return 2
    for d in args.builds:
        if not d.is_dir():
            print(f"error: {d}: no such folder of executed chapters")
            return 2
    print(report(args.builds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
