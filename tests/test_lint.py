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


def long_comment_blocks(text: str) -> list[int]:
    """First line of every run of three or more consecutive comment-only lines (a comment says why in
    at most two lines; more belongs in a docstring, the prose or the commit message)."""
    import io
    import tokenize

    starts, run, last = [], 0, -1
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT and tok.line.strip().startswith("#"):
            run = run + 1 if tok.start[0] == last + 1 else 1
            last = tok.start[0]
            if run == 3:
                starts.append(tok.start[0] - 2)
    return starts


def test_comments_are_at_most_two_lines():
    found = [
        f"{p.relative_to(ROOT)}:{line}"
        for p in sorted((ROOT / "mimirlib").rglob("*.py"))
        for line in long_comment_blocks(p.read_text(encoding="utf-8"))
    ]
    assert found == [], "comment blocks over two lines: " + ", ".join(found)


def test_the_comment_check_counts_consecutive_comment_lines():
    assert long_comment_blocks("# a\n# b\nx = 1\n# c\n") == []
    assert long_comment_blocks("x = 1\n    # a\n    # b\n    # c\ny = 2  # not a block\n") == [2]
    assert long_comment_blocks("s = '''\n# in a string\n# not a comment\n# at all\n'''\n") == []
