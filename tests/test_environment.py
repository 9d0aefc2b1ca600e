"""Set-up files agree with each other: one set of pins for pip (Makefile) and conda users."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def lock():
    return {
        line.strip()
        for line in (ROOT / "requirements/lock.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }


def test_environment_yml_mirrors_the_lock():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert "python=3.11" in env["dependencies"]
    pip = next(d for d in env["dependencies"] if isinstance(d, dict))["pip"]
    assert set(pip) - {"-e ."} == lock()


def test_pins_the_brief_requires():
    pins = lock()
    assert "torch==2.13.0" in pins  # an unpinned torch pulls a multi-GB CUDA build
    assert "jupyter-book==1.0.4.post1" in pins  # 2.x cannot build offline and drops _config.yml


def test_ci_runs_the_readme_test_command():
    assert "make test" in (ROOT / ".ci/run").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "make book" in readme and "make test" in readme
