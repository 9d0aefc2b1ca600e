"""The instructor's workflow with real nbgrader (issue 31): the handouts' course folder
(``handouts/keys/course``: the shipped ``nbgrader_config.py`` and ``source/<chapter>/``) goes through
``nbgrader generate_assignment`` and ``autograde`` as nbgrader's documentation has it. The release
holds no solution (code or prose), an untouched release scores 0, the key full marks, a wrong answer
0; the keys come from the instructor's folder, none from ``mimirlib``. Here the tiny fixture chapter;
every real chapter on the smoke lab in tests/test_book.py (it reads the smoke book's kept runs)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from mimirlib.teach import exercises, handouts

from .test_handouts import FIXTURES, nbgrader_cells, text

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent


def nbgrader(course: Path, *args: str, timeout: int = 1200) -> float:
    """Run ``nbgrader ARGS`` in ``course`` as an instructor would (the venv's bin on PATH); seconds taken."""
    env = dict(os.environ, PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}", TQDM_DISABLE="1")
    env.pop(exercises.KEYS_ENV, None)  # the shipped config names the keys
    t0 = time.perf_counter()
    done = subprocess.run(
        [str(VENV_BIN / "nbgrader"), *args], cwd=course, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"nbgrader {' '.join(args)}: {done.stdout[-2000:]}{done.stderr[-3000:]}"
    return time.perf_counter() - t0


def submit(course: Path, chapter: str, student: str, nb) -> None:
    dest = course / "submitted" / student / chapter / f"{chapter}.ipynb"
    dest.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, dest)


def scores(course: Path, chapter: str) -> dict[str, tuple[float, float]]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        subs = gb.assignment_submissions(chapter)
        return {s.student_id: (s.score, s.max_score) for s in subs}


def solved(release, key):
    """``release`` with each solution cell replaced by the key's (what a student who got it right submits)."""
    nb = nbformat.from_dict(release)
    for s, k in zip(nbgrader_cells(nb, "solution"), nbgrader_cells(key, "solution")):
        s.source = k.source
    return nb


def release_and_key(out: Path, chapter: str):
    course = out / "keys" / "course"
    nbgrader(course, "generate_assignment", chapter)
    release = nbformat.read(course / "release" / chapter / f"{chapter}.ipynb", as_version=4)
    key = nbformat.read(course / "source" / chapter / f"{chapter}.ipynb", as_version=4)
    return course, release, key


def assert_no_solution_in(release, key) -> None:
    assert handouts.leaks(release, key) == []
    body = text(release)
    assert "{solution" not in body and "<summary>Solution" not in body and "### BEGIN SOLUTION" not in body


@pytest.mark.slow
def test_nbgrader_grades_the_fixture_chapter_with_the_shipped_config(tmp_path):
    out = tmp_path / "handouts"
    handouts.write_handouts(["tiny"], out, "smoke", FIXTURES)
    course, release, key = release_and_key(out, "tiny")
    assert_no_solution_in(release, key)
    assert "SECRET-PROSE" not in text(release)
    submit(course, "tiny", "untouched", release)
    submit(course, "tiny", "right", solved(release, key))
    wrong = solved(release, key)
    nbgrader_cells(wrong, "solution")[1].source = "spread = float(values.mean())"
    submit(course, "tiny", "wrong", wrong)
    nbgrader(course, "autograde", "tiny", "--create")
    assert scores(course, "tiny") == {"untouched": (0.0, 2.0), "right": (2.0, 2.0), "wrong": (1.0, 2.0)}
