"""The library, notebooks, tests and scripts pass ruff (lint and format) with pyproject.toml's configuration."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PATHS = ["mimirlib", "notebooks", "tests", "scripts"]


def ruff(*args: str) -> subprocess.CompletedProcess:
    # ruff is in the test extra (pinned in requirements/lock.txt)
    return subprocess.run([sys.executable, "-m", "ruff", *args, *PATHS], cwd=ROOT, capture_output=True, text=True)


def test_ruff_check_passes():
    done = ruff("check", "--no-cache", "--output-format", "concise")
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_format_is_applied():
    done = ruff("format", "--check", "--no-cache")  # notebooks are excluded in pyproject.toml (why: there)
    assert done.returncode == 0, "run `.venv/bin/ruff format " + " ".join(PATHS) + "`\n" + done.stdout + done.stderr
