"""The ``mimir-run`` command line (``python -m mimirlib.runner``): arguments, ``--list-params``, ``--jobs``."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from mimirlib.runner.base import (
    DEFAULT_KERNEL,
    PROFILES_DIR,
    NotebookFailed,
    ParameterError,
    list_notebooks,
    notebook_file,
    resolve_path,
)
from mimirlib.display.report import count_of
from mimirlib.profiles import check_draw
from mimirlib.runner.execute import run_notebook
from mimirlib.runner.params import notebook_parameters
from mimirlib.runner.plan import plan_run
from mimirlib.runner.resolve import parse_overrides, profile_params


def _format_params(stem: str, path: Path, declared, profile_values) -> str:
    lines = [f"{stem}  ({path})"]
    if not declared:
        lines.append("  (no parameters)")
    for name, info in declared.items():
        line = f"  {name}: {info['type']} = {info['default']!r}"
        if name in profile_values:
            line += f"   [{profile_values['__profile__']}: {profile_values[name]!r}]"
        lines.append(line)
        lines.append(f"      {info['help']}")
    return "\n".join(lines)


def _build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mimir-run",
        description="Execute book notebooks (jupytext py:percent) with papermill. Parameters: profile, "
        "then --params-file, then -p. A run with the profile's parameters writes the published "
        "chapter, book/executed/<stem>.ipynb; a run with other parameters writes a variant beside "
        "it, book/variants/<stem>--<name>.ipynb, with a banner listing them (the book shows "
        "variants under their chapter), unless --publish.",
    )
    p.add_argument(
        "notebooks",
        nargs="*",
        metavar="NOTEBOOK",
        help="notebook stem (e.g. main_results) or path to notebooks/<stem>.py",
    )
    p.add_argument(
        "--all", action="store_true", help="run notebooks/ORDER if present, else every notebooks/*.py, in order"
    )
    p.add_argument("--profile", default="lab", help="parameter profile: mimirlib/profiles/<profile>.yml (default: lab)")
    p.add_argument(
        "--draw",
        type=int,
        default=None,
        metavar="N",
        help="read the lab drawn with seed N instead of the profile's own (built if missing; every value the "
        "profile ties to its draw follows), and write the chapters to book/draws/draw-N/, never the book's",
    )
    p.add_argument(
        "--params-file",
        metavar="F",
        help="YAML (or .json) {param: value}, or {notebooks: {stem: {param: value}}}",
    )
    p.add_argument(
        "-p",
        "--param",
        dest="overrides",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override one parameter (value parsed as YAML); "
        "repeatable. With several notebooks it applies to those that declare it",
    )
    out = p.add_mutually_exclusive_group()
    out.add_argument(
        "--variant",
        metavar="NAME",
        help="write book/variants/<stem>--NAME.ipynb, never the published chapter "
        "(default for a run with non-default parameters: a name made from them, e.g. min_k-0p1)",
    )
    out.add_argument(
        "--publish",
        action="store_true",
        help="replace the published chapter even when the parameters are not the profile's "
        "(its page then shows a banner listing them)",
    )
    p.add_argument(
        "--list-params", action="store_true", help="print each notebook's parameters (type, default, help) and exit"
    )
    p.add_argument(
        "--kernel", default=DEFAULT_KERNEL, help=f"Jupyter kernel name to register and use (default: {DEFAULT_KERNEL})"
    )
    p.add_argument("--notebooks-dir", default="notebooks", help=argparse.SUPPRESS)
    p.add_argument("--out-dir", default=None, help=argparse.SUPPRESS)  # default: runner.base.draw_dir(--draw)
    p.add_argument("--variants-dir", default=None, help=argparse.SUPPRESS)
    p.add_argument("--profiles-dir", default=None, help=argparse.SUPPRESS)
    p.add_argument("--timeout", type=int, default=None, help="per-cell execution timeout in seconds (default: none)")
    p.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="run up to N notebooks at once, each kernel with cores/N torch threads, the longest chapters "
        "first (default: 1, one after the other)",
    )
    return p


# Chapters that take longest on the lab (measured 2026-12 on 2 cores), started first by --jobs so that
# the last one to finish is a short one; any other chapter follows in the given order.
LONGEST_FIRST = ("main_results", "training_size", "ramia", "modified_members", "ngram_overlap")


def schedule(stems: list[str]) -> list[str]:
    """``stems`` in the order ``--jobs`` starts them: :data:`LONGEST_FIRST`, then the rest as given."""
    return [s for s in LONGEST_FIRST if s in stems] + [s for s in stems if s not in LONGEST_FIRST]


def _run_in_worker(threads: int, kwargs: dict) -> tuple[int, str]:
    """One notebook in a worker process whose kernels get ``threads`` torch threads: (status, message)."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(threads)
    t0 = time.monotonic()
    try:
        out = run_notebook(**kwargs)
    except ParameterError as e:
        return 2, f"error: {e}"
    except NotebookFailed as e:
        return 1, f"FAILED: {e}"
    return 0, f"done {Path(kwargs['stem']).stem} in {time.monotonic() - t0:.1f}s -> {out}"


def _prepare_lab(profile: str, profiles_dir, draw: int | None = None) -> None:
    """Build a packaged profile's lab, if it has one, before notebooks run side by side (never twice at
    once; ``draw``: the lab drawn with that seed). A ``--profiles-dir`` profile is left alone:
    :func:`mimirlib.lab.build.ensure_lab` reads the packaged profiles only."""
    if profiles_dir is not None:
        return
    from mimirlib.profiles import load_profile

    try:
        has_lab = "lab" in load_profile(profile)
    except Exception:  # an unknown profile is reported by the notebooks' own checks
        return
    if has_lab:
        from mimirlib.lab.build import ensure_lab

        ensure_lab(profile, draw)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``mimir-run`` / ``python -m mimirlib.runner``.

    Exit status: 0 ok, 2 bad parameters (nothing run), 1 a notebook failed.
    """
    args = _build_parser().parse_args(argv)
    try:
        try:
            check_draw(args.draw)
        except ValueError as e:
            raise ParameterError(f"--{e}") from None
        stems = list_notebooks(args.notebooks_dir) if args.all else []
        stems += [s for s in args.notebooks if s not in stems]
        if not stems:
            raise ParameterError("no notebooks given (name some, or use --all)")
        files = {s: notebook_file(s, args.notebooks_dir) for s in stems}
        declared = {s: notebook_parameters(f) for s, f in files.items()}

        if args.list_params:
            print(_list_params(args, files, declared))
            return 0
        overrides, plans = _plan_all(args, stems, files, declared)
    except ParameterError as e:
        print(f"mimir-run: error: {e}", file=sys.stderr)
        return 2

    if args.jobs < 1:
        print(f"mimir-run: error: --jobs must be at least 1, got {args.jobs}", file=sys.stderr)
        return 2
    if args.jobs > 1 and len(stems) > 1:
        return _run_side_by_side(args, stems, files, overrides)
    return _run_one_by_one(args, stems, files, overrides, plans)


def _list_params(args, files: dict, declared: dict) -> str:
    """``--list-params``: each notebook's parameters, with its profile's values."""
    profiles_dir = resolve_path(args.profiles_dir) if args.profiles_dir else PROFILES_DIR
    out = []
    for s, f in files.items():
        try:
            values = profile_params(f.stem, args.profile, profiles_dir, args.draw)
        except ParameterError:
            values = {}
        values["__profile__"] = args.profile
        out.append(_format_params(f.stem, f, declared[s], values))
    return "\n\n".join(out)


def _plan_all(args, stems: list[str], files: dict, declared: dict) -> tuple[dict, dict]:
    """``(overrides, {stem: RunPlan})``: every notebook's parameters resolved, validated and
    checked before anything runs (``ParameterError`` on the first problem)."""
    # With several notebooks, flat -p / params-file entries go to the
    # notebooks that declare them; a name no notebook declares is an error.
    overrides = parse_overrides(args.overrides)
    known = set().union(*(d.keys() for d in declared.values()))
    for name in overrides:
        if name not in known:
            raise ParameterError(
                f"unknown parameter {name!r} (from -p): not declared by {', '.join(files[s].stem for s in stems)}"
            )
    plans = {
        s: plan_run(
            files[s],
            args.profile,
            args.params_file,
            overrides,
            variant=args.variant,
            publish=args.publish,
            declared=declared[s],
            profiles_dir=args.profiles_dir,
            only_declared=len(stems) > 1,
            draw=args.draw,
        )
        for s in stems
    }
    return overrides, plans


def _run_one_by_one(args, stems: list[str], files: dict, overrides: dict, plans: dict) -> int:
    """The notebooks one after the other, stopping at the first that fails (its exit status)."""
    for s in stems:
        t0 = time.monotonic()
        where = f", variant {plans[s].variant}" if plans[s].variant else ""
        drawn = f", lab draw {args.draw}" if args.draw is not None else ""
        print(f"mimir-run: {files[s].stem} (profile {args.profile}{drawn}{where})", file=sys.stderr)
        try:
            out = run_notebook(**_run_kwargs(args, files[s], overrides, several=len(stems) > 1))
        except ParameterError as e:
            print(f"mimir-run: error: {e}", file=sys.stderr)
            return 2
        except NotebookFailed as e:
            print(f"mimir-run: FAILED: {e}", file=sys.stderr)
            return 1
        print(f"mimir-run: done {files[s].stem} in {time.monotonic() - t0:.1f}s -> {out}", file=sys.stderr)
        if plans[s].variant:
            print(
                "mimir-run: the published chapter is unchanged (--publish would replace it)",
                file=sys.stderr,
            )
    return 0


def _run_kwargs(args, file: Path, overrides: dict, *, several: bool) -> dict:
    """:func:`run_notebook`'s arguments for one notebook of this command line."""
    return dict(
        stem=str(file),
        profile=args.profile,
        params_file=args.params_file,
        overrides=overrides,
        notebooks_dir=args.notebooks_dir,
        out_dir=args.out_dir,
        kernel=args.kernel,
        variant=args.variant,
        publish=args.publish,
        variants_dir=args.variants_dir,
        profiles_dir=args.profiles_dir,
        execution_timeout=args.timeout,
        draw=args.draw,
        _only_declared=several,
    )


def _run_side_by_side(args, stems: list[str], files: dict, overrides: dict) -> int:
    """``--jobs N``: the notebooks in N worker processes (see :func:`schedule`); every notebook runs
    even if another fails; the exit status is the worst one (2 bad parameters, 1 a failure)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    _prepare_lab(args.profile, args.profiles_dir, args.draw)
    threads = max(1, (os.cpu_count() or 1) // args.jobs)
    each = count_of(threads, "thread")
    print(f"mimir-run: {len(stems)} notebooks, {args.jobs} at once, {each} each", file=sys.stderr)
    worst = 0
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=args.jobs, mp_context=ctx) as pool:
        futures = []
        for s in schedule(stems):
            futures.append(pool.submit(_run_in_worker, threads, _run_kwargs(args, files[s], overrides, several=True)))
        for fut in futures:
            status, message = fut.result()
            print(f"mimir-run: {message}", file=sys.stderr)
            worst = max(worst, status)
    return worst
