"""Handouts (mimirlib.teach.handouts): nbgrader's ClearSolutions on the solution cells, the markdown
solutions removed, nothing of a solution left; the key runs green and the unchanged handout fails
every check. Unit tests use a tiny fixture chapter (tests/fixtures/handouts/tiny.py); every real
chapter's handout is graded by nbgrader on the smoke lab in tests/test_book.py."""

import copy
import shutil
from pathlib import Path

import nbformat
import pytest

from mimirlib.teach import handouts
from mimirlib.teach.handouts import HandoutError, check_executed, leaks, make_handout, strip_solution_blocks

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "handouts"
TINY = FIXTURES / "tiny.py"


def text(nb) -> str:
    return "\n".join(c.source for c in nb.cells)


def nbgrader_cells(nb, kind):
    return [c for c in nb.cells if c.metadata.get("nbgrader", {}).get(kind)]


# ------------------------------------------------------------------ markdown solutions


def test_strip_solution_blocks_removes_colon_backtick_nested_and_gated_solutions():
    md = "\n".join(
        [
            "intro",
            ":::{exercise} Predict, then run: x",
            ":label: ex-a-1",
            "question",
            ":::",
            "::::{solution} ex-a-1",
            ":class: dropdown",
            ":::{note}",
            "NESTED",
            ":::",
            "SECRET1",
            "::::",
            "middle",
            "```{solution} ex-a-2",
            "SECRET2",
            "```",
            ":::{solution-start} ex-a-3",
            ":::",
            "SECRET3",
            ":::{solution-end}",
            ":::",
            "after",
            ":::{dropdown} Answer",
            "quiz answer",
            ":::",
        ]
    )
    out = strip_solution_blocks(md)
    assert "SECRET" not in out and "NESTED" not in out and "{solution" not in out
    for kept in ("intro", "{exercise}", "question", "middle", "after", "{dropdown}", "quiz answer"):
        assert kept in out
    assert strip_solution_blocks(":::{solution} x\nSECRET never closed") == ""  # MyST: runs to the end


# ------------------------------------------------------------------ the fixture chapter


@pytest.fixture(scope="module")
def tiny():
    return make_handout(TINY, {"profile": "smoke", "n": 7})


def test_student_version_stubs_solution_regions_with_nbgraders_stub_and_keeps_the_rest(tiny):
    stubs = nbgrader_cells(tiny.student, "solution")
    assert len(stubs) == tiny.solution_cells == 2 and tiny.check_cells == 2
    for cell in stubs:
        assert "# YOUR CODE HERE\nraise NotImplementedError()" in cell.source
    assert "given_to_student = len(values)" in stubs[0].source  # code outside the markers stays
    student = text(tiny.student)
    for gone in ("SECRET-PROSE", "halfway_total", "np.ptp", "BEGIN SOLUTION", "{solution}", "inside the solution"):
        assert gone not in student, gone
    for kept in ("**Exercise: Extend the library", "Text after the solution stays.", "assert abs"):
        assert kept in student, kept
    # Jupyter renders no MyST: the quiz answer folds in HTML <details>, no directive is left raw
    assert "<details><summary>Answer</summary>" in student and ":::" not in student
    assert [c.source for c in nbgrader_cells(tiny.student, "grade")] == [
        c.source for c in nbgrader_cells(tiny.key, "grade")
    ]  # the checks are the key's, unchanged


def test_key_keeps_solutions_and_both_carry_the_parameters_and_nbgrader_checksums(tiny):
    key = text(tiny.key)
    assert "def halfway_total" in key and "SECRET-PROSE-ONE" in key and "BEGIN SOLUTION" in key
    for nb in (tiny.key, tiny.student):
        injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
        assert len(injected) == 1 and "n = 7" in injected[0].source and 'profile = "smoke"' in injected[0].source
        for cell in nbgrader_cells(nb, "grade") + nbgrader_cells(nb, "solution"):
            assert len(cell.metadata.nbgrader["checksum"]) == 32  # ComputeChecksums ran
        assert nb.metadata.kernelspec.name == handouts.DEFAULT_KERNEL


def test_leak_check_finds_a_solution_line_a_marker_or_a_solution_block(tiny):
    assert leaks(tiny.student, tiny.key) == []
    for planted in ("spread = float(np.ptp(values))", "### BEGIN SOLUTION", ":::{solution} ex-tiny-1"):
        bad = copy.deepcopy(tiny.student)
        bad.cells[-1].source += "\n" + planted
        assert len(leaks(bad, tiny.key)) == 1, planted


def test_bad_nbgrader_metadata_or_a_stray_solution_region_is_one_line_naming_the_chapter(tmp_path):
    src = TINY.read_text()
    dup = tmp_path / "dup.py"
    dup.write_text(src.replace('"ex-tiny-2-check"', '"ex-tiny-1-check"'))
    with pytest.raises(HandoutError, match=r"dup\.py: nbgrader: Duplicate grade id: ex-tiny-1-check$"):
        make_handout(dup)
    stray = tmp_path / "stray.py"
    stray.write_text(
        src.replace("values = np.arange", "### BEGIN SOLUTION\nvalues = np.arange").replace(
            "expected_mean = float", "### END SOLUTION\nexpected_mean = float"
        )
    )
    with pytest.raises(HandoutError, match=r"stray\.py: nbgrader: Solution region detected in a non-solution cell"):
        make_handout(stray)


def test_cli_writes_student_and_key_and_a_bad_chapter_writes_nothing(tmp_path, capsys):
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    shutil.copy(TINY, nbs / "tiny.py")
    out = tmp_path / "handouts"
    args = ["--notebooks-dir", str(nbs), "--out", str(out), "--profile", "smoke"]
    assert handouts.main(["tiny", "nosuch", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nosuch" in err[0] and not out.exists()
    assert handouts.main(args) == 0
    assert "tiny" in capsys.readouterr().out
    student = nbformat.read(out / "tiny.ipynb", as_version=4)
    key = nbformat.read(out / "keys" / "tiny.ipynb", as_version=4)
    assert "NotImplementedError" in text(student) and "halfway_total" in text(key)
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == [
        "keys/course/nbgrader_config.py",
        "keys/course/source/tiny/tiny.ipynb",
        "keys/exercise_keys.py",
        "keys/tiny.ipynb",
        "tiny.ipynb",
    ]
    # nbgrader's source: the key's code (solutions inside the markers), the student's markdown
    source = nbformat.read(out / "keys" / "course" / "source" / "tiny" / "tiny.ipynb", as_version=4)
    assert "def halfway_total" in text(source) and "SECRET-PROSE" not in text(source)
    assert "<summary>Solution</summary>" in text(key) and "SECRET-PROSE-ONE" in text(key)
    assert "halfway_total" in (out / "keys" / "exercise_keys.py").read_text()
    config = (out / "keys" / "course" / "nbgrader_config.py").read_text()
    for setting in ("c.Execute.timeout = ", "kernel_name = 'mimir-book'", "MIMIR_CACHE", "MIMIR_KEYS", "PATH"):
        assert setting in config, setting
    compile(config, "nbgrader_config.py", "exec")


# ------------------------------------------------------------------ executed


@pytest.mark.slow
def test_fixture_key_runs_green_and_unchanged_handout_fails_every_check(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "h"
    handouts.write_handouts(["tiny"], out, "smoke", FIXTURES)
    key = handouts.execute(out / "keys" / "tiny.ipynb", tmp_path / "key.ipynb", allow_errors=True, timeout=120)
    student = handouts.execute(out / "tiny.ipynb", tmp_path / "student.ipynb", allow_errors=True, timeout=120)
    assert check_executed(key, student) == []
    # The rule can fail: a handout whose stub was filled in passes its checks, and that is reported.
    solved = nbformat.read(out / "tiny.ipynb", as_version=4)
    for s, k in zip(
        nbgrader_cells(solved, "solution"), nbgrader_cells(nbformat.read(out / "keys" / "tiny.ipynb", 4), "solution")
    ):
        s.source = k.source
    nbformat.write(solved, tmp_path / "solved.ipynb")
    done = handouts.execute(tmp_path / "solved.ipynb", tmp_path / "solved.out.ipynb", allow_errors=True, timeout=120)
    problems = check_executed(key, done)
    assert len(problems) == 4 and all("on the unchanged handout" in p for p in problems)


# ------------------------------------------------------------------ read in Jupyter (issue 31 item 3)


def test_markdown_for_jupyter_resolves_glue_folds_answers_and_includes_code():
    from mimirlib.teach import readable

    md = "\n".join(
        [
            "Trained {glue:text}`most_epochs` epochs ({glue:text}`ex_model`), AUC {glue:text}`auc:.3f`, k {glue}`k`.",
            "See {term}`bootstrap intervals <bootstrap interval>` and {cite:p}`a2024,b2025`.",
            "Write your prediction down before you open",
            "a solution.",
            ":::{exercise} Predict, then run: x",
            ":label: ex-a-1",
            "question",
            ":::",
            ":::{dropdown} Answer",
            "(b).",
            ":::",
            "```{glue:figure} fig_x",
            "A caption",
            "on two lines.",
            "```",
            "```{literalinclude} /mimirlib/core/attacks.py",
            ":pyobject: loss_score",
            "```",
        ]
    )
    values = {"most_epochs": "8", "ex_model": "'epochs-8x'", "auc": "0.61234"}
    out = readable.for_jupyter(md, values, student=True, root=ROOT)
    assert "Trained 8 epochs (epochs-8x), AUC 0.612, k `k` (in the book)." in out
    assert "See bootstrap intervals and [a2024, b2025]." in out
    assert "before you run its cell." in out and "open a solution" not in out
    assert "**Exercise: Predict, then run: x**" in out and ":label:" not in out
    assert "<details><summary>Answer</summary>\n\n(b).\n\n</details>" in out
    assert "*Figure `fig_x` (in the book): A caption on two lines.*" in out
    assert '@register("loss", "LOSS")\ndef loss_score(x: AttackInputs) -> float:' in out
    assert "{" not in out.split("```python")[0] and ":::" not in out
    # the key keeps its solutions, folded; another profile's run gives no numbers
    key = readable.for_jupyter(":::{solution} ex-a-1\n:class: dropdown\nSECRET\n:::", {}, student=False)
    assert key == "<details><summary>Solution</summary>\n\nSECRET\n\n</details>"
    assert readable.book_values("nosuch", "lab", ROOT / "book" / "executed") == {}


# ------------------------------------------------------------------ exercises done in the notebook (issue 31 item 3)


def test_a_chapters_runner_commands_become_steps_in_its_notebook():
    from mimirlib.teach import readable

    md = (
        "Run\n```bash\n.venv/bin/python -m mimirlib.runner epochs -p 'attacks=[loss, zlib]' -p n_samples=10\n```\nthen."
    )
    out = readable.runner_steps(md, "epochs")
    assert "```bash" not in out and "mimirlib.runner" not in out
    assert "*Your settings*" in out and "```python\nattacks = ['loss', 'zlib']\nn_samples = 10\n```" in out
    assert out.startswith("Run\n") and out.endswith("then.") and readable.RUN_ALL in out
    listing = "```bash\n.venv/bin/python -m mimirlib.runner epochs -p min_k=0.05  # one k\n"
    listing += ".venv/bin/python -m mimirlib.runner epochs --list-params\n```"
    assert "min_k = 0.05" in (both := readable.runner_steps(listing, "epochs"))
    assert "Every parameter, with its help, is in the parameters cell" in both
    kept = [
        "```bash\nmake venv\n.venv/bin/python -m mimirlib.runner epochs -p min_k=0.05\n```",  # not only the runner
        "```bash\n.venv/bin/python -m mimirlib.runner audit -p seed=1\n```",  # another chapter's command
        "```bash\n.venv/bin/python -m mimirlib.runner epochs --profile smoke\n```",  # smoke has epochs settings
        "```bash\n.venv/bin/python -m mimirlib.runner epochs --profile nosuch\n```",
        "```bash\n.venv/bin/python -m mimirlib.runner epochs --jobs 2\n```",
        "```bash\n.venv/bin/python -m mimirlib.runner epochs -p 'x=[unclosed'\n```",  # not YAML
    ]
    for block in kept:
        assert readable.runner_steps(block, "epochs") == block
    smoke = "```bash\n.venv/bin/python -m mimirlib.runner lab --profile smoke\n```"  # no lab settings in smoke
    assert "```python\nprofile = 'smoke'\n```" in readable.runner_steps(smoke, "lab")


def test_the_settings_cell_replaces_the_injected_parameters_when_the_handout_runs(tiny, tmp_path, monkeypatch):
    """What the rewritten exercises ask (write a value in *Your settings*, run every cell) works."""
    from mimirlib.teach import readable

    monkeypatch.chdir(tmp_path)
    nb = copy.deepcopy(tiny.student)
    tags = [c.metadata.get("tags", []) for c in nb.cells]
    settings = next(i for i, c in enumerate(nb.cells) if c.source.startswith(readable.SETTINGS_TITLE))
    assert "injected-parameters" in tags[settings - 1]  # right after papermill's cell: its values win
    assert "values = np.arange(n" in nb.cells[settings + 1].source
    nb.cells[settings].source += "n = 3\n"
    nb.cells.append(nbformat.v4.new_code_cell("print(len(values), profile)"))
    nbformat.write(nb, tmp_path / "edited.ipynb")
    done = handouts.execute(tmp_path / "edited.ipynb", tmp_path / "out.ipynb", allow_errors=True, timeout=120)
    assert done.cells[-1].outputs[0]["text"] == "3 smoke\n"  # n from the settings, the profile injected
