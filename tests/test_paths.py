"""The cache is found from any working folder (issue 31: a handout opened in its own folder must not
start a new lab build)."""

import os
import subprocess
import sys
from pathlib import Path

from mimirlib import paths

ROOT = Path(__file__).resolve().parents[1]
PRINT_ROOT = "from mimirlib import paths; print(paths.cache_root())"


def run_in(cwd: Path, **env) -> str:
    base = {k: v for k, v in os.environ.items() if k != "MIMIR_CACHE"}
    proc = subprocess.run(
        [sys.executable, "-c", PRINT_ROOT], cwd=cwd, env={**base, **env}, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_project_root_is_the_checkout():
    assert paths.project_root() == ROOT


def test_cache_is_the_projects_from_any_folder(tmp_path):
    assert Path(run_in(tmp_path)) == ROOT / ".cache"
    assert Path(run_in(ROOT / "notebooks")) == ROOT / ".cache"


def test_mimir_cache_wins(tmp_path):
    assert Path(run_in(tmp_path, MIMIR_CACHE=str(tmp_path / "c"))) == tmp_path / "c"


def test_a_copy_outside_a_project_uses_the_working_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("MIMIR_CACHE", raising=False)
    monkeypatch.setattr(paths, "project_root", lambda: None)
    monkeypatch.chdir(tmp_path)
    assert paths.cache_root() == tmp_path / ".cache"


def test_a_lab_draws_audit_files_never_overwrite_the_books(monkeypatch, tmp_path):
    monkeypatch.setenv("MIMIR_CACHE", str(tmp_path))
    assert paths.audit_demo_dir("code") == tmp_path / "audit-demo" / "code"
    assert paths.audit_demo_dir("code", 3) == tmp_path / "audit-demo" / "draw-3" / "code"
    assert paths.audit_report_dir() == tmp_path / "audit-report"
    assert paths.audit_report_dir(3) == tmp_path / "audit-report" / "draw-3"
