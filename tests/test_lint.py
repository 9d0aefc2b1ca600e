"""The library, tests and scripts pass ruff with the configuration in pyproject.toml."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Being rewritten while this test was written; lint them here once they settle (then drop this list).
NOT_YET = ("mimirlib/experiments", "mimirlib/verdicts", "tests/test_experiments_*.py", "tests/test_verdicts_*.py")


def test_ruff_check_passes():
    # ruff is in the test extra (pinned in requirements/lock.txt)
    cmd = [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise"]
    cmd += [f"--extend-exclude={p}" for p in NOT_YET]
    cmd += ["mimirlib", "tests", "scripts"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
