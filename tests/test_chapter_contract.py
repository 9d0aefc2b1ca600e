"""Every chapter has the same shape: its parameters cell -> one parameters object derived from that
cell -> ``run`` -> tables and figures -> ``verdicts``; and it shows the library lines it is about,
included from the source so the page cannot drift from the code."""

import ast
import re
from pathlib import Path

import jupytext
import pytest

from mimirlib.experiments.params import Params

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = (ROOT / "notebooks" / "ORDER").read_text().split()
NO_VERDICTS = {"audit", "running_at_scale"}  # a tool and a cost estimate: no claim of the papers to decide
MAX_HELP = 200  # characters of a parameter's help comment (the runner's --list-params shows it)
FROM_CELL = re.compile(r"^p = \w+\.Params\.from_cell\(globals\(\)\)$")
RUN = re.compile(r"^run = \w+\.run\(p[,)]")
INCLUDE = re.compile(r"```\{literalinclude\} (/mimirlib/\S+\.py)\n((?::[\w-]+:.*\n)*)")


def cells(stem):
    return jupytext.read(ROOT / "notebooks" / f"{stem}.py").cells


def code_cells(stem):
    return [c for c in cells(stem) if c.cell_type == "code"]


def statements(source: str) -> list[str]:
    return [ast.get_source_segment(source, n) for n in ast.parse(source).body]


@pytest.fixture(params=CHAPTERS)
def chapter(request):
    return request.param


def test_the_first_code_cell_is_the_parameters_cell_and_its_help_is_short(chapter):
    first = code_cells(chapter)[0]
    assert "parameters" in first.metadata.get("tags", []), chapter
    long = [ln for ln in first.source.splitlines() if "#" in ln and len(ln.split("#", 1)[1].strip()) > MAX_HELP]
    assert long == [], f"{chapter}: parameter help over {MAX_HELP} characters (say more in the prose): {long}"


def test_the_parameters_object_is_derived_from_the_cell_right_after_the_imports(chapter):
    setup = code_cells(chapter)[1].source
    body = statements(setup)
    at = [i for i, s in enumerate(body) if FROM_CELL.match(s)]
    assert len(at) == 1, f"{chapter}: the set-up cell must hold `p = exp.Params.from_cell(globals())` once"
    before = body[: at[0]]
    assert all(s.startswith(("import ", "from ")) for s in before), f"{chapter}: only imports before it"


def test_the_parameters_object_holds_exactly_the_cells_names(chapter):
    """Run the parameters cell and the imports before ``from_cell``: the object has the cell's names,
    no more (an imported constant would sneak in) and no fewer."""
    params_src = code_cells(chapter)[0].source
    declared = {t.id for n in ast.parse(params_src).body if isinstance(n, ast.Assign) for t in n.targets}
    ns: dict = {}
    exec(compile(params_src, f"{chapter}:parameters", "exec"), ns)
    setup = statements(code_cells(chapter)[1].source)
    imports = "\n".join(s for s in setup[: [bool(FROM_CELL.match(s)) for s in setup].index(True)])
    exec(compile(imports, f"{chapter}:imports", "exec"), ns)
    assert set(Params.from_cell(ns)) == declared


def test_the_chapter_runs_once_and_publishes_the_experiments_verdicts(chapter):
    lines = [s for c in code_cells(chapter)[2:] for s in statements(c.source)]
    assert sum(bool(RUN.match(s)) for s in lines) == 1, f"{chapter}: one `run = exp.run(p)`"
    publish = [s for s in lines if "verdicts.publish(" in s]
    if chapter in NO_VERDICTS:
        assert publish == []
    else:
        assert publish in (
            [f'display(verdicts.publish(exp.verdicts(run), "{chapter}"))'],
            [f'display(verdicts.publish(exp.verdicts(run), "{chapter}", exp.regime(run)))'],
        ), chapter


def test_no_experiment_module_re_lists_the_parameters_in_a_class():
    for path in (ROOT / "mimirlib" / "experiments").rglob("*.py"):
        classes = [n.name for n in ast.parse(path.read_text()).body if isinstance(n, ast.ClassDef)]
        assert "Params" not in classes or path.name == "params.py", path.name


def included_objects(stem) -> list[tuple[str, str]]:
    """(file, :pyobject:) of every literalinclude in the chapter's markdown."""
    text = "\n".join(c.source for c in cells(stem) if c.cell_type == "markdown") + "\n"
    out = []
    for m in INCLUDE.finditer(text):
        options = dict(re.findall(r":([\w-]+):\s*(.*)", m.group(2)))
        out.append((m.group(1), options.get("pyobject", "")))
    return out


def defines(path: Path, dotted: str) -> bool:
    body = ast.parse(path.read_text()).body
    for part in dotted.split("."):
        found = [n for n in body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == part]
        if not found:
            return False
        body = found[0].body
    return True


def test_the_chapter_shows_the_library_lines_it_is_about(chapter):
    if chapter == "running_at_scale":
        pytest.skip("a cost estimate: no algorithm of the papers")
    shown = included_objects(chapter)
    assert shown, f"{chapter}: include the algorithm it is about (literalinclude with :pyobject:)"
    for file, obj in shown:
        assert obj, f"{chapter}: {file} included without :pyobject: (the page would show the whole file)"
        assert defines(ROOT / file.lstrip("/"), obj), f"{chapter}: {file} defines no {obj}"


def test_the_include_pattern_reads_a_directive():
    text = "```{literalinclude} /mimirlib/core/attacks.py\n:pyobject: loss\n:emphasize-lines: 2\n```\n"
    m = INCLUDE.search(text)
    assert m.group(1) == "/mimirlib/core/attacks.py" and ":pyobject: loss" in m.group(2)
    assert defines(ROOT / "mimirlib/core/attacks.py", "min_k_params")
    assert not defines(ROOT / "mimirlib/core/attacks.py", "no_such_function")
