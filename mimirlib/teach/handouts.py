"""Student handouts and instructor keys made from the chapter notebooks, with nbgrader's own machinery.

A chapter's exercises follow nbgrader's conventions (CONTRIBUTING, "Exercises"): a solution cell
(``nbgrader.solution``) holds its solution between ``### BEGIN SOLUTION`` and ``### END SOLUTION``,
and a locked check cell (``nbgrader.grade``) asserts against values the chapter computes. Per chapter,
``python -m mimirlib.teach.handouts`` writes

- ``handouts/keys/<chapter>.ipynb``, the instructor's key: the chapter as written, its nbgrader metadata
  validated (nbgrader's ``MetadataValidator``) and checksummed (``ComputeChecksums``), so nbgrader can
  grade with it;
- ``handouts/<chapter>.ipynb``, the student's: nbgrader's ``ClearSolutions`` (each solution region
  becomes ``# YOUR CODE HERE`` / ``raise NotImplementedError()``; code outside the markers stays),
  ``ClearHiddenTests``, ``ClearOutput`` and ``ComputeChecksums``, then the markdown ``{solution}``
  blocks of sphinx-exercise removed (nbgrader does not know them);
- ``handouts/keys/exercise_keys.py``: the instructor's keys the check cells compare with (every
  chapter's solution regions; the package holds none), found through ``$MIMIR_KEYS``;
- ``handouts/keys/course/``: an nbgrader course (:mod:`mimirlib.teach.course`): its
  ``nbgrader_config.py`` and ``source/<chapter>/<chapter>.ipynb``, the key with the student's markdown.

Markdown reads as Jupyter shows it (:mod:`mimirlib.teach.readable`): glued values resolved from the
book's executed run of the same profile, quiz answers and the key's solutions in folded ``<details>``.
Both carry the profile's parameters in papermill's injected-parameters cell, so they run as they are
in Jupyter. A handout is written only if nothing of a solution is left in it (:func:`leaks`).
:func:`check_executed` is the rule the tests apply to executed handouts: the key runs green, and
every check cell of the unchanged student version fails (a check that passes on the stub proves nothing).
"""

from __future__ import annotations

import argparse
import ast
import copy
import os
import re
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from mimirlib.runner import DEFAULT_KERNEL, REPO_ROOT, ParameterError, list_notebooks, resolve_params, saved
from mimirlib.teach import course, exercises, readable

__all__ = [
    "BEGIN",
    "END",
    "Handout",
    "HandoutError",
    "check_executed",
    "execute",
    "leaks",
    "make_handout",
    "solution_lines",
    "strip_solution_blocks",
    "write_handouts",
    "main",
]

BEGIN, END = exercises.BEGIN, exercises.END  # nbgrader's markers (ClearSolutions' delimiters)
HANDOUTS_DIR = "handouts"
KEYS_SUBDIR = "keys"
# sphinx-exercise's solution directives: ``{solution}`` is one block; ``{solution-start}`` ...
# ``{solution-end}`` gate everything between them.
_SOLUTION, _GATE_START, _GATE_END = "solution", "solution-start", "solution-end"
_FENCE = re.compile(r"^\s*(?P<fence>:{3,}|`{3,})\{(?P<name>[\w-]+)\}")
# A solution line shorter than this (``)``, ``else:``) may appear anywhere; it is not a leak.
_MIN_LEAK_CHARS = 12


class HandoutError(ValueError):
    """A chapter cannot be turned into a handout (bad nbgrader metadata, a leak); names the culprit."""


@dataclass
class Handout:
    """One chapter's pair of notebooks (nbformat nodes) and its exercise counts."""

    chapter: str
    student: object
    key: object
    solution_cells: int
    check_cells: int
    source: object = None  # nbgrader's source/: the key's code, the student's markdown
    saved: Path | None = None  # the book run's kept results it reads (mimirlib.runner.saved), None if none


def _nbgrader(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def _closing(fence: str) -> re.Pattern:
    return re.compile(rf"^\s*{re.escape(fence[0])}{{{len(fence)},}}\s*$")


def strip_solution_blocks(markdown: str) -> str:
    """``markdown`` without its sphinx-exercise solution blocks (colon or backtick fences, any
    length; ``{solution-start}`` ... ``{solution-end}`` with everything between). An unclosed block
    runs to the end of the cell, as MyST reads it."""
    lines = markdown.split("\n")
    out: list[str] = []
    gated = False
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        name = m["name"] if m else None
        if name in (_SOLUTION, _GATE_START, _GATE_END):
            close = _closing(m["fence"])
            j = i + 1
            while j < len(lines) and not close.match(lines[j]):
                j += 1
            gated = name == _GATE_START or (gated and name != _GATE_END)
            i = j + 1
            continue
        if not gated:
            out.append(lines[i])
        i += 1
    return "\n".join(out).strip("\n")


def solution_lines(nb) -> set[str]:
    """The stripped lines between nbgrader's markers in ``nb``'s solution cells that appear nowhere
    else in it (and are long enough to mean something): what must never reach a student."""
    inside, outside = set(), set()
    for cell in nb.cells:
        region = False
        for line in cell.source.split("\n"):
            s = line.strip()
            if BEGIN in line:
                region = True
            elif END in line:
                region = False
            elif s:
                (inside if region and _nbgrader(cell).get("solution") else outside).add(s)
    return {s for s in inside - outside if len(s) >= _MIN_LEAK_CHARS}


def leaks(student, key) -> list[str]:
    """What of a solution is left in ``student``: a marker, a solution line of ``key``, or a
    ``{solution}`` directive; empty when the handout is clean."""
    secret = solution_lines(key)
    found = []
    for n, cell in enumerate(student.cells):
        for line in cell.source.split("\n"):
            s = line.strip()
            m = _FENCE.match(line)
            if BEGIN in line or END in line:
                found.append(f"cell {n}: nbgrader marker {s!r}")
            elif s in secret:
                found.append(f"cell {n}: solution line {s!r}")
            elif m and m["name"] in (_SOLUTION, _GATE_START, _GATE_END):
                found.append(f"cell {n}: {{{m['name']}}} block")
    return found


def _read_chapter(path: Path):
    import jupytext

    nb = jupytext.read(path)
    nb.metadata["kernelspec"] = {
        "name": DEFAULT_KERNEL,
        "display_name": f"Python ({DEFAULT_KERNEL})",
        "language": "python",
    }
    nb.metadata.setdefault("language_info", {"name": "python"})
    nb.metadata.setdefault("papermill", {})  # what papermill's own loader adds and its parameterize expects
    for cell in nb.cells:
        cell.metadata.setdefault("tags", [])
    return nb


def _preprocess(nb, preprocessors, where: str):
    resources: dict = {}
    try:
        for p in preprocessors:
            nb, resources = p.preprocess(nb, resources)
    except RuntimeError as e:  # ClearSolutions/ClearHiddenTests: a region outside its kind of cell, unclosed
        raise HandoutError(f"{where}: nbgrader: {' '.join(str(e).split())}") from None
    return nb


def _validate(nb, where: str) -> None:
    """nbgrader's metadata validator (what its CheckCellMetadata runs), with its own message: that
    preprocessor replaces it with "the nbgrader metadata may be corrupted", naming no cell."""
    from nbgrader.nbgraderformat import MetadataValidator, ValidationError
    from nbgrader.nbgraderformat.common import SchemaMismatchError

    try:
        MetadataValidator().validate_nb(nb)
    except (ValidationError, SchemaMismatchError) as e:
        msg = getattr(e, "message", None) or str(e)
        raise HandoutError(f"{where}: nbgrader: {' '.join(msg.split())}") from None


def _readable(nb, values: dict, *, student: bool, chapter: str):
    """``nb``'s markdown cells for Jupyter (the student's without solution blocks); empty ones dropped."""
    cells = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            src = strip_solution_blocks(cell.source) if student else cell.source
            cell.source = readable.for_jupyter(src, values, student=student, root=REPO_ROOT, chapter=chapter)
            if not cell.source.strip():
                continue
        cells.append(cell)
    nb.cells = cells
    return nb


def with_settings_cell(nb):
    """``nb`` with an empty code cell right after its parameters (and papermill's injected ones), where
    an exercise's changed values go (:data:`mimirlib.teach.readable.SETTINGS_TITLE`)."""
    import nbformat

    tags = [set(c.metadata.get("tags", [])) for c in nb.cells]
    last = max((i for i, t in enumerate(tags) if t & {"parameters", "injected-parameters"}), default=-1)
    cell = nbformat.v4.new_code_cell(readable.SETTINGS_TITLE + "\n")
    cell.metadata["tags"] = []
    nb.cells.insert(last + 1, cell)
    return nb


def _keep_call(cell) -> list[str] | None:
    """The names a cell that is only ``saved.keep(exp, p, name=value, ...)`` keeps, else None."""
    try:
        body = ast.parse(cell.source).body
    except SyntaxError:
        return None
    if len(body) != 1 or not isinstance(body[0], ast.Expr) or not isinstance(call := body[0].value, ast.Call):
        return None
    f = call.func
    if not (isinstance(f, ast.Attribute) and f.attr == "keep" and isinstance(f.value, ast.Name)):
        return None
    if f.value.id != "saved":
        return None
    return [k.arg for k in call.keywords]


def reusing_saved(nb, where: str):
    """``nb`` reading back what its book run kept (:mod:`mimirlib.runner.saved`): the ``saved.keep`` cell
    removed, and each kept name's assignment ``x = <expr>`` made ``x = saved.reuse(exp, p, "x", lambda: <expr>)``,
    so the handout, and nbgrader's autograde of it, skips the chapter's scoring when its parameters are the
    book's. A kept name assigned other than once at the top of a cell is a :class:`HandoutError`."""
    calls = [(i, _keep_call(c) if c.cell_type == "code" else None) for i, c in enumerate(nb.cells)]
    kept = [(i, names) for i, names in calls if names is not None]
    if not kept:
        return nb
    names = {n for _, ns in kept for n in ns}
    found: dict[str, int] = {}
    for cell in nb.cells:
        if cell.cell_type != "code" or _keep_call(cell) is not None:
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        lines = cell.source.split("\n")
        for node in reversed(tree.body):  # bottom up: a rewrite leaves the lines above where they were
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                name = node.targets[0].id
                if name in names:
                    found[name] = found.get(name, 0) + 1
                    expr = ast.get_source_segment(cell.source, node.value)
                    new = f"{name} = saved.reuse(exp, p, \"{name}\", lambda: {expr})".split("\n")
                    lines[node.lineno - 1 : node.end_lineno] = new
        cell.source = "\n".join(lines)
    wrong = sorted(n for n in names if found.get(n) != 1)
    if wrong:
        raise HandoutError(f"{where}: saved.keep names {', '.join(wrong)}, not assigned exactly once in a cell")
    nb.cells = [c for i, c in enumerate(nb.cells) if i not in {k for k, _ in kept}]
    return nb


def make_handout(path: str | os.PathLike, params: dict | None = None, values: dict | None = None) -> Handout:
    """The key, the student version and nbgrader's source of the chapter notebook at ``path``
    (py:percent), with ``params`` injected as papermill does and glued ``values`` (name -> text)
    written into the markdown. Raises :class:`HandoutError` on bad nbgrader metadata or if the
    student version (or the source nbgrader releases from) still holds solution text."""
    import logging

    from nbgrader.preprocessors import ClearHiddenTests, ClearOutput, ClearSolutions, ComputeChecksums
    from papermill.parameterize import parameterize_notebook

    path = Path(path)
    nb = reusing_saved(_read_chapter(path), str(path))
    if params:
        nb = parameterize_notebook(nb, params, kernel_name=DEFAULT_KERNEL, language="python")
    nb = with_settings_cell(nb)
    _validate(nb, str(path))
    # nbgrader logs the cell before raising; the one line of HandoutError is enough.
    quiet = logging.getLogger("mimirlib.teach.handouts.nbgrader")
    quiet.setLevel(logging.CRITICAL)
    key = _preprocess(copy.deepcopy(nb), [ComputeChecksums(log=quiet)], str(path))
    student = _preprocess(
        copy.deepcopy(nb),
        [ClearSolutions(log=quiet), ClearHiddenTests(log=quiet), ClearOutput(log=quiet), ComputeChecksums(log=quiet)],
        str(path),
    )
    _validate(student, str(path))
    values = values or {}
    student = _readable(student, values, student=True, chapter=path.stem)
    source = _readable(copy.deepcopy(key), values, student=True, chapter=path.stem)
    key = _readable(key, values, student=False, chapter=path.stem)
    found = leaks(student, key)
    if found:
        raise HandoutError(f"{path}: the student version would leak a solution ({found[0]})")
    prose = [c.source for c in source.cells if c.cell_type == "markdown"]
    if prose != [c.source for c in student.cells if c.cell_type == "markdown"]:
        raise HandoutError(f"{path}: nbgrader's source would release other markdown than the handout's")
    solutions = sum(1 for c in key.cells if c.cell_type == "code" and _nbgrader(c).get("solution"))
    checks = sum(1 for c in key.cells if c.cell_type == "code" and _nbgrader(c).get("grade"))
    return Handout(path.stem, student, key, solutions, checks, source)


def _write_atomic(nb, dest: Path) -> None:
    import nbformat

    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".partial", dir=dest.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            nbformat.write(nb, fh)
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_handouts(
    chapters: list[str] | None = None,
    out_dir: str | os.PathLike = HANDOUTS_DIR,
    profile: str = "lab",
    notebooks_dir: str | os.PathLike = "notebooks",
) -> list[Handout]:
    """Write ``<out_dir>/<chapter>.ipynb``, ``<out_dir>/keys/<chapter>.ipynb`` and nbgrader's
    ``<out_dir>/keys/course/source/<chapter>/<chapter>.ipynb`` for ``chapters`` (default: every
    chapter in ``notebooks/ORDER``) with ``profile``'s parameters, and the keys of every chapter
    with the course's ``nbgrader_config.py``. Every chapter is made (and checked) before the first
    file is written: one bad chapter writes nothing."""
    from mimirlib.paths import cache_root

    nb_dir = Path(notebooks_dir)
    nb_dir = nb_dir if nb_dir.is_absolute() else REPO_ROOT / nb_dir  # as the runner reads it
    stems = chapters or list_notebooks(nb_dir)
    made = []
    for stem in stems:
        path = nb_dir / f"{stem}.py"
        if not path.is_file():
            raise ParameterError(f"no chapter {stem!r} in {nb_dir} (chapters: {', '.join(list_notebooks(nb_dir))})")
        params = resolve_params(stem, profile, notebooks_dir=nb_dir)
        values = readable.book_values(stem, profile, REPO_ROOT / "book" / "executed")
        made.append(replace(make_handout(path, params, values), saved=saved.kept_for(path, params)))
    sources = {s: (nb_dir / f"{s}.py").read_text(encoding="utf-8") for s in list_notebooks(nb_dir)}
    keys_dir = (Path(out_dir) / KEYS_SUBDIR).resolve()
    for h in made:
        _write_atomic(h.key, keys_dir / f"{h.chapter}.ipynb")
        _write_atomic(h.source, keys_dir / course.COURSE_SUBDIR / "source" / h.chapter / f"{h.chapter}.ipynb")
        _write_atomic(h.student, Path(out_dir) / f"{h.chapter}.ipynb")
    keys_file = keys_dir / course.KEYS_FILE
    _write_text(keys_file, exercises.keys_source(sources))
    config = course.config_text(keys_file, cache_root().resolve(), course.venv_bin())
    _write_text(keys_dir / course.COURSE_SUBDIR / "nbgrader_config.py", config)
    return made


def _write_text(dest: Path, text: str) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.partial")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, dest)


def execute(path: str | os.PathLike, out: str | os.PathLike, *, allow_errors: bool, timeout: int = 1800):
    """Run the notebook at ``path`` in the book's kernel (working directory: the current one) and
    write the executed copy to ``out``; with ``allow_errors`` every cell runs and errors become
    outputs (nbgrader's autograder does the same). Returns the executed notebook."""
    import nbformat
    from nbclient import NotebookClient

    from mimirlib.runner import ensure_kernel

    ensure_kernel(DEFAULT_KERNEL)
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name=DEFAULT_KERNEL,
        allow_errors=allow_errors,
        resources={"metadata": {"path": os.getcwd()}},
    )
    try:
        client.execute()
    finally:
        _write_atomic(nb, Path(out))
    return nb


def _errors(cell) -> list[str]:
    return [f"{o.get('ename')}: {o.get('evalue')}" for o in cell.get("outputs", []) if o.get("output_type") == "error"]


def check_executed(key, student) -> list[str]:
    """Problems with an executed key and an executed, unchanged student handout: any error in the
    key; a student check cell that passed (its stub is no stub, or the check cannot fail); a
    student solution cell that ran without error. Empty when both behave."""
    problems = []
    for n, cell in enumerate(key.cells):
        if cell.cell_type == "code" and _errors(cell):
            problems.append(f"key cell {n} failed: {_errors(cell)[0]}")
    for cell in student.cells:
        meta = _nbgrader(cell)
        if cell.cell_type != "code" or not (meta.get("grade") or meta.get("solution")):
            continue
        if not cell.get("outputs") and cell.get("execution_count") is None:
            problems.append(f"student cell {meta.get('grade_id')} never ran")
        elif not _errors(cell):
            what = "check passed" if meta.get("grade") else "solution stub ran without error"
            problems.append(f"student cell {meta.get('grade_id')}: {what} on the unchanged handout")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m mimirlib.teach.handouts",
        description="Write student handouts (solutions stubbed, nbgrader format) and instructor keys per chapter.",
    )
    ap.add_argument("chapters", nargs="*", help="chapter stems (default: every chapter in notebooks/ORDER)")
    ap.add_argument("--profile", default="lab", help="whose parameters the handouts carry (default: lab)")
    ap.add_argument("--out", default=HANDOUTS_DIR, help="output folder (default: handouts/; keys in handouts/keys/)")
    ap.add_argument("--notebooks-dir", default="notebooks", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    try:
        made = write_handouts(args.chapters or None, args.out, args.profile, args.notebooks_dir)
    except (HandoutError, ParameterError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for h in made:
        print(
            f"{h.chapter:18s} {h.solution_cells} solution cell(s), {h.check_cells} check cell(s) -> "
            f"{Path(args.out) / (h.chapter + '.ipynb')}, key {Path(args.out) / KEYS_SUBDIR / (h.chapter + '.ipynb')}"
        )
    missing = [h.chapter for h in made if h.saved is None]
    if missing:
        print(
            f"no kept run for {', '.join(missing)} with the {args.profile} profile and this mimirlib: their "
            "handouts (and nbgrader's autograde, per student) re-run the chapter's scoring; run "
            f"`make book PROFILE={args.profile}` first"
        )
    keys = Path(args.out) / KEYS_SUBDIR
    print(f"instructor's keys: {keys / course.KEYS_FILE}; nbgrader course: {keys / course.COURSE_SUBDIR}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
