"""Notebooks orchestrate; the library computes. These checks keep logic, verdict thresholds and lab
layout out of the chapter sources (notebooks/*.py), where nothing would test them."""

import re
from pathlib import Path

import jupytext
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.py"))
MAX_CODE_LINES = 80  # code lines outside the parameters cell; a chapter is one call per step
DEFINITION = re.compile(r"\s*(def|class|async def)\s")

# A comparison with a numeric literal is a decision written in a cell (e.g. ``auc > 0.6``); the
# rules live in mimirlib.verdicts. Plain arguments (``figsize=(7, 4)``) are not comparisons.
THRESHOLD = re.compile(r"(?:[<>]=?|==)\s*-?\d*\.?\d+(?![\w\]])|-?\d*\.\d+\s*(?:[<>]=?|==)")
# The lab's layout belongs to mimirlib.lab (class Lab): no notebook names its files or model folders.
LAB_PATH = re.compile(
    r"""f?["'](?:target-|epochs-|ref-disjoint|mlm-)|splits\.json|data_order\.json|selection\.json|"""
    r"""lab\.root|cache_root\(\)\s*/|\.glob\("""
)


def code_cells(path):
    nb = jupytext.read(path)
    return [c for c in nb.cells if c.cell_type == "code"]


def body_cells(path):
    return [c for c in code_cells(path) if "parameters" not in c.metadata.get("tags", [])]


def code_lines(cell):
    return [ln for ln in cell.source.splitlines() if ln.strip() and not ln.strip().startswith("#")]


def outside_solutions(cell) -> list[str]:
    """The code lines of ``cell`` minus, in a cell tagged "solution", those between nbgrader's
    `### BEGIN SOLUTION` and `### END SOLUTION` markers: the one place a notebook may define a
    function (an exercise's answer, which the student handout replaces by a stub)."""
    if "solution" not in cell.metadata.get("tags", []):
        return code_lines(cell)
    out, inside = [], False
    for ln in cell.source.splitlines():
        if ln.strip() == "### BEGIN SOLUTION":
            inside = True
        elif ln.strip() == "### END SOLUTION":
            inside = False
        elif not inside and ln.strip() and not ln.strip().startswith("#"):
            out.append(ln)
    return out


@pytest.fixture(params=NOTEBOOKS, ids=lambda p: p.stem)
def notebook(request):
    return request.param


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 9


def test_no_notebook_defines_a_function_or_class(notebook):
    bad = [ln for c in code_cells(notebook) for ln in outside_solutions(c) if DEFINITION.match(ln)]
    assert bad == [], f"{notebook.name}: move these into mimirlib: {bad}"


def test_no_notebook_builds_a_verdict_or_holds_a_threshold(notebook):
    lines = [ln for c in body_cells(notebook) for ln in code_lines(c)]
    assert [ln for ln in lines if "Verdict(" in ln] == [], notebook.name
    thresholds = [ln for ln in lines if THRESHOLD.search(ln)]
    assert thresholds == [], f"{notebook.name}: thresholds belong in mimirlib.verdicts"


def test_no_notebook_builds_a_lab_path_or_model_name(notebook):
    bad = [ln for c in code_cells(notebook) for ln in code_lines(c) if LAB_PATH.search(ln)]
    assert bad == [], f"{notebook.name}: use mimirlib.lab's Lab read API instead: {bad}"


def test_notebooks_are_short(notebook):
    n = sum(len(code_lines(c)) for c in body_cells(notebook))
    assert n <= MAX_CODE_LINES, f"{notebook.name}: {n} code lines outside the parameters cell"


def test_plumbing_cells_are_hidden(notebook):
    """A cell of only imports / set-up is tagged hide-input (the reader can still expand it)."""
    for c in body_cells(notebook):
        lines = code_lines(c)
        if lines and all(re.match(r"\s*(import|from)\s", ln) for ln in lines):
            tags = c.metadata.get("tags", [])
            assert "hide-input" in tags or "remove-input" in tags, f"{notebook.name}: {lines[0]!r} cell not hidden"


def test_threshold_pattern_catches_decisions_but_not_arguments():
    assert THRESHOLD.search("frac = (auc < 0.6).mean()")
    assert THRESHOLD.search("ok = 0.75 <= frac")
    assert not THRESHOLD.search("fig, ax = plt.subplots(figsize=(7, 4))")
    assert not THRESHOLD.search("x = results[results.n > n_min]")
    assert LAB_PATH.search('name = f"target-{size}"')
    assert not LAB_PATH.search("lab.model_dir(lab.recency_control())")


def test_only_nbgrader_solution_regions_of_solution_cells_may_define_functions():
    from nbformat.v4 import new_code_cell

    region = "x = 1\n### BEGIN SOLUTION\ndef f(a):\n    return a\n### END SOLUTION\n"
    tagged = new_code_cell(region, metadata={"tags": ["hide-input", "solution"]})
    untagged = new_code_cell(region, metadata={"tags": ["hide-input"]})
    after = new_code_cell(region + "def g():\n    pass\n", metadata={"tags": ["solution"]})
    unclosed_before = new_code_cell("def h():\n    pass\n" + region, metadata={"tags": ["solution"]})

    def defined(cell):
        return [ln.strip() for ln in outside_solutions(cell) if DEFINITION.match(ln)]

    assert defined(tagged) == []
    assert defined(untagged) == ["def f(a):"]
    assert defined(after) == ["def g():"]
    assert defined(unclosed_before) == ["def h():"]
