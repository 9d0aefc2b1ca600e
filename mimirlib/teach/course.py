"""An nbgrader course folder beside the instructor's keys: ``keys/course/`` (written by the handouts).

- ``nbgrader_config.py``: the settings nbgrader needs for these chapters and nothing else: the
  book's kernel, a cell timeout a chapter's scoring fits in where its handout cannot read the book run's
  kept results, the venv's ``bin`` first on
  ``PATH`` (nbgrader runs ``alembic`` from ``PATH`` when it makes its gradebook), the signal cache
  (``MIMIR_CACHE``) and the instructor's keys (``MIMIR_KEYS``) the check cells compare with;
- ``source/<chapter>/<chapter>.ipynb``: the key with the markdown the student gets (no solution
  prose), so ``nbgrader generate_assignment <chapter>`` releases the handout and nothing more.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mimirlib.runner import DEFAULT_KERNEL

__all__ = ["COURSE_SUBDIR", "EXECUTE_TIMEOUT", "KEYS_FILE", "config_text", "venv_bin"]

COURSE_SUBDIR = "course"
KEYS_FILE = "exercise_keys.py"
# Per cell, in seconds. nbgrader's default (30 s) stops scoring cells: on the smoke lab the keys' slowest
# cells took 10-277 s (main_results 277, temporal_shift 64; 2 shared cores); RaMIA's lab key 294 s in all.
EXECUTE_TIMEOUT = 1800


def config_text(keys_file: Path, cache: Path, venv_bin: Path, timeout: int = EXECUTE_TIMEOUT) -> str:
    """The course's ``nbgrader_config.py``: absolute paths of this machine, each overridable by the
    environment (``MIMIR_CACHE``, ``MIMIR_KEYS``) before nbgrader starts."""
    return f'''"""nbgrader settings for the mimir-book chapters (written by `python -m mimirlib.teach.handouts`).

Run nbgrader from this folder, e.g.
    {venv_bin / "nbgrader"} generate_assignment <chapter>
    {venv_bin / "nbgrader"} autograde <chapter> --create
"""

import os

c = get_config()  # noqa: F821  (nbgrader defines it)

# nbgrader runs `alembic` from PATH when it creates the gradebook: the project's venv first.
os.environ["PATH"] = {str(venv_bin)!r} + os.pathsep + os.environ.get("PATH", "")
# The built lab and its signal cache (an unpacked classroom pack: the folder `unpack` wrote into).
os.environ.setdefault("MIMIR_CACHE", {str(cache)!r})
# The instructor's keys the check cells compare a student's code with; never give this file out.
os.environ.setdefault("MIMIR_KEYS", {str(keys_file)!r})

# A handout reads the results the book's run kept (mimirlib.runner.saved), so autograde re-runs only the
# figures and the exercises. To stop a handout whose kept results are missing (another profile, a changed
# mimirlib) instead of re-running the chapter's whole scoring for every student, uncomment:
# os.environ["MIMIR_REQUIRE_SAVED"] = "1"

c.Execute.kernel_name = {DEFAULT_KERNEL!r}
# Seconds per cell: a chapter's scoring cell takes minutes on the lab (nbgrader's default is 30).
c.Execute.timeout = {int(timeout)}
c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
'''


def venv_bin() -> Path:
    """The ``bin`` folder of the Python running this (the project's venv under ``make``)."""
    return Path(sys.executable).parent
