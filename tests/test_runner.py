"""mimirlib.runner and mimirlib.progress: parameters are checked before anything
runs, failures never replace a good executed notebook, progress stays out of
notebook outputs."""

import json
import os
import sys
import time
from pathlib import Path

import nbformat
import pytest

from mimirlib import progress as progress_mod
from mimirlib import runner
from mimirlib.runner import (
    NotebookFailed,
    ParameterError,
    ensure_kernel,
    list_notebooks,
    main,
    notebook_parameters,
    resolve_params,
    run_notebook,
    validate,
)

FIXTURES = Path(__file__).parent / "fixtures" / "notebooks"
TEST_KERNEL = "mimir-book-test"


@pytest.fixture(scope="module")
def kernel():
    ensure_kernel(TEST_KERNEL)
    return TEST_KERNEL


@pytest.fixture
def profiles(tmp_path):
    d = tmp_path / "profiles"
    d.mkdir()
    (d / "lab.yml").write_text("lab:\n  ignored: other code reads this\nnotebooks:\n  ok:\n    n: 4\n    rate: 0.25\n")
    (d / "smoke.yml").write_text("notebooks:\n  ok:\n    n: 1\n")
    (d / "paper.yml").write_text("notebooks: {}\n")
    return d


@pytest.fixture
def no_execution(monkeypatch):
    """Any attempt to execute (or even start a kernel) fails the test."""
    import papermill

    def boom(*a, **k):
        raise AssertionError("papermill.execute_notebook was called")

    monkeypatch.setattr(papermill, "execute_notebook", boom)
    monkeypatch.setattr(runner, "ensure_kernel", boom)


def write_nb(tmp_path, name, params_cell, body="print('hi')\n", first=""):
    path = tmp_path / f"{name}.py"
    path.write_text(f"# %% [markdown]\n# # {name}\n\n{first}# %% tags=[\"parameters\"]\n{params_cell}\n# %%\n{body}")
    return path


# ------------------------------------------------------------------ parameters


def test_parameters_parsed_with_types_defaults_help():
    p = notebook_parameters(FIXTURES / "ok.py")
    assert list(p) == ["n", "rate", "name", "domains", "flag", "extra", "profile", "sentinel"]
    assert p["n"] == {"default": 2, "type": "int", "help": "how many items to count"}
    assert p["rate"] == {"default": 0.5, "type": "float", "help": "a float rate"}
    # papermill's regex would split this one at the '#' inside the string
    assert p["name"] == {"default": "a#b", "type": "str", "help": "a string whose default contains a hash"}
    assert p["domains"]["type"] == "list" and p["domains"]["default"] == ["web"]
    assert p["flag"]["type"] == "bool"
    assert p["extra"] == {"default": None, "type": "any", "help": "anything at all"}


def test_undocumented_parameter_rejected(tmp_path):
    path = write_nb(tmp_path, "undoc", "a = 1  # documented\nb = 2\nc = 'x'\n")
    with pytest.raises(ParameterError, match=r"undocumented parameter\(s\) b, c"):
        notebook_parameters(path)


def test_missing_or_misplaced_parameters_cell_rejected(tmp_path):
    none = tmp_path / "none.py"
    none.write_text("# %%\nx = 1  # help\n")
    with pytest.raises(ParameterError, match="no cell tagged 'parameters'"):
        notebook_parameters(none)
    late = write_nb(tmp_path, "late", "x = 1  # help\n", first="# %%\nimport os\n\n")
    with pytest.raises(ParameterError, match="must be the first code cell"):
        notebook_parameters(late)


@pytest.mark.parametrize(
    "cell, match",
    [
        ("url = 'a=b'  # has a second =\n", "papermill cannot parse"),
        ("x: int | None = None  # union annotation\n", "papermill cannot parse"),
        ("x = 1  # ok\nimport os\n", "only `name = value  # help`"),
        ("x = len('ab')  # not a literal\n", "must be a Python literal"),
        ("x: int = 'a'  # wrong default\n", "declared int"),
    ],
)
def test_parameters_cell_papermill_would_misread_is_rejected(tmp_path, cell, match):
    with pytest.raises(ParameterError, match=match):
        notebook_parameters(write_nb(tmp_path, "bad", cell))


def test_validate_types():
    declared = notebook_parameters(FIXTURES / "ok.py")
    validate({"n": 3, "rate": 1, "flag": True, "domains": ["a"], "extra": object(), "name": "x"}, declared)
    for name, value, expected, got in [
        ("n", "3", "int", "str"),
        ("n", True, "int", "bool"),
        ("n", 1.5, "int", "float"),
        ("rate", "0.1", "float", "str"),
        ("flag", 1, "bool", "int"),
        ("name", 3, "str", "int"),
        ("domains", "code", "list", "str"),
        ("n", None, "int", "NoneType"),
    ]:
        with pytest.raises(ParameterError) as e:
            validate({name: value}, declared, notebook="ok")
        msg = str(e.value)
        assert f"'{name}'" in msg and f"expects {expected}" in msg and f"got {got}" in msg


def test_resolve_precedence_and_yaml_values(tmp_path, profiles):
    pf = tmp_path / "mine.yml"
    pf.write_text("rate: 0.5\nname: from-file\n")
    got = resolve_params(
        "ok",
        "lab",
        params_file=pf,
        overrides=["name=cli", "domains=[code, web]", "flag=true", "extra=1e-3"],
        notebooks_dir=FIXTURES,
        profiles_dir=profiles,
    )
    assert got == {
        "n": 4,
        "rate": 0.5,
        "name": "cli",
        "domains": ["code", "web"],
        "flag": True,
        "extra": 0.001,
        "profile": "lab",
    }
    # profile= is injected only where declared
    assert resolve_params("fails", "smoke", notebooks_dir=FIXTURES, profiles_dir=profiles) == {}
    nested = tmp_path / "nested.yml"
    nested.write_text("notebooks:\n  ok:\n    n: 9\n  fails:\n    fail: true\n")
    assert resolve_params("ok", "smoke", params_file=nested, notebooks_dir=FIXTURES, profiles_dir=profiles) == {
        "n": 9,
        "profile": "smoke",
    }
    with pytest.raises(ParameterError, match="unknown profile 'nope'.*available: lab, paper"):
        resolve_params("ok", "nope", notebooks_dir=FIXTURES, profiles_dir=profiles)
    with pytest.raises(ParameterError, match="expected -p name=value"):
        resolve_params("ok", "lab", overrides=["novalue"], notebooks_dir=FIXTURES, profiles_dir=profiles)


def test_unknown_parameter_rejected_before_execution(tmp_path, profiles, no_execution):
    sentinel, out = tmp_path / "ran.json", tmp_path / "out"
    t0 = time.monotonic()
    with pytest.raises(ParameterError) as e:
        run_notebook(
            "ok",
            overrides=["nn=3", f"sentinel={sentinel}"],
            notebooks_dir=FIXTURES,
            out_dir=out,
            kernel=TEST_KERNEL,
            profiles_dir=profiles,
        )
    msg = str(e.value)
    assert "unknown parameter 'nn' (from -p)" in msg
    assert "valid parameters: n, rate, name, domains, flag, extra, profile, sentinel" in msg
    assert time.monotonic() - t0 < 5
    assert not sentinel.exists() and not out.exists()


def test_unknown_parameter_from_profile_is_named(tmp_path, profiles, no_execution):
    (profiles / "lab.yml").write_text("notebooks:\n  ok:\n    steps: 3\n")
    with pytest.raises(ParameterError, match="'steps' \\(from profile lab\\)"):
        run_notebook("ok", notebooks_dir=FIXTURES, out_dir=tmp_path / "out", profiles_dir=profiles)


def test_ill_typed_parameter_rejected_before_execution(tmp_path, profiles, no_execution):
    with pytest.raises(ParameterError, match="'n' \\(from -p\\) expects int, got str"):
        run_notebook(
            "ok", overrides=["n=many"], notebooks_dir=FIXTURES, out_dir=tmp_path / "out", profiles_dir=profiles
        )
    assert not (tmp_path / "out").exists()


def test_cli_parameter_error_exits_2(tmp_path, profiles, no_execution, capsys):
    rc = main(
        [
            "ok",
            "-p",
            "nn=1",
            "--notebooks-dir",
            str(FIXTURES),
            "--out-dir",
            str(tmp_path / "out"),
            "--profiles-dir",
            str(profiles),
        ]
    )
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "unknown parameter 'nn'" in err


def test_cli_list_params(profiles, capsys):
    rc = main(["ok", "fails", "--list-params", "--notebooks-dir", str(FIXTURES), "--profiles-dir", str(profiles)])
    out = capsys.readouterr().out
    assert rc == 0
    assert "n: int = 2   [lab: 4]" in out and "how many items to count" in out
    assert "fail: bool = False" in out and "raise in the second code cell" in out


def test_list_notebooks_order(tmp_path):
    for s in ("b", "a", "c"):
        (tmp_path / f"{s}.py").write_text("")
    assert list_notebooks(tmp_path) == ["a", "b", "c"]
    (tmp_path / "ORDER").write_text("# run order\nc\n\nb.py\n")
    assert list_notebooks(tmp_path) == ["c", "b"]
    (tmp_path / "ORDER").write_text("zzz\n")
    with pytest.raises(ParameterError, match="no notebook zzz.py"):
        list_notebooks(tmp_path)


# ------------------------------------------------------------------- execution


def test_ensure_kernel_points_at_this_interpreter(kernel):
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec(kernel)
    assert spec.argv[0] == sys.executable
    assert Path(spec.resource_dir).is_relative_to(sys.prefix)
    assert ensure_kernel(kernel) == spec.resource_dir  # idempotent


def test_successful_run_writes_notebook_with_injected_parameters(tmp_path, profiles, kernel, capfd):
    sentinel, out = tmp_path / "ran.json", tmp_path / "out"
    path = run_notebook(
        "ok",
        profile="lab",
        overrides=[f"sentinel={sentinel}", "domains=[code]"],
        notebooks_dir=FIXTURES,
        out_dir=out,
        kernel=kernel,
        profiles_dir=profiles,
        tail_every=0.0,
    )
    assert path == out / "ok.ipynb" and path.is_file()
    assert sorted(p.name for p in out.iterdir()) == ["ok.ipynb"]  # no temp files left
    nb = nbformat.read(path, as_version=4)
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1
    src = injected[0].source
    for line in ("n = 4", "rate = 0.25", "profile = \"lab\"", "domains = [\"code\"]"):
        assert line in src.replace("'", '"')
    assert nb.cells[1].metadata["tags"] == ["parameters"]

    report = json.loads(sentinel.read_text())
    assert report["total"] == 6 and report["domains"] == ["code"]
    assert Path(report["cwd"]) == runner.REPO_ROOT
    env = report["env"]
    assert env["TQDM_DISABLE"] == "1" and env["HF_HUB_DISABLE_PROGRESS_BARS"] == "1"
    assert env["HF_HUB_OFFLINE"] == "1" and env["MPLBACKEND"] == "module://matplotlib_inline.backend_inline"
    assert env["MIMIR_PROGRESS_FILE"]
    assert os.environ.get("MIMIR_PROGRESS_FILE") is None  # parent env untouched

    # progress reached the terminal through the tail, never the notebook
    err = capfd.readouterr().err
    assert "[ok] stage: counting items" in err and "[ok] count: 100%" in err
    outputs = json.dumps([c.get("outputs", []) for c in nb.cells])
    assert "count" not in outputs and "stage" not in outputs and "total=6" in outputs


def test_failing_run_keeps_previous_output(tmp_path, profiles, kernel):
    out = tmp_path / "out"
    good = run_notebook("fails", notebooks_dir=FIXTURES, out_dir=out, kernel=kernel, profiles_dir=profiles)
    before = good.read_bytes()
    with pytest.raises(NotebookFailed) as e:
        run_notebook(
            "fails", overrides=["fail=true"], notebooks_dir=FIXTURES, out_dir=out, kernel=kernel, profiles_dir=profiles
        )
    msg = str(e.value)
    assert "notebook fails failed" in msg and "`if fail:  # the failing cell`" in msg
    assert "ValueError: boom" in msg
    assert e.value.partial == out / "failed" / "fails.ipynb"
    assert good.read_bytes() == before  # the previous good one is untouched
    partial = nbformat.read(out / "failed" / "fails.ipynb", as_version=4)
    assert any(o.get("ename") == "ValueError" for c in partial.cells for o in c.get("outputs", []))
    assert sorted(p.name for p in out.iterdir()) == ["failed", "fails.ipynb"]


def test_cli_notebook_failure_exits_1(tmp_path, profiles, kernel, capsys):
    out = tmp_path / "out"
    rc = main(
        [
            "fails",
            "-p",
            "fail=true",
            "--kernel",
            kernel,
            "--notebooks-dir",
            str(FIXTURES),
            "--out-dir",
            str(out),
            "--profiles-dir",
            str(profiles),
        ]
    )
    assert rc == 1
    assert "FAILED: notebook fails failed" in capsys.readouterr().err
    assert not (out / "fails.ipynb").exists() and (out / "failed" / "fails.ipynb").exists()


# -------------------------------------------------------------------- progress


def test_progress_writes_to_progress_file(tmp_path, monkeypatch):
    log_file = tmp_path / "progress.log"
    monkeypatch.setenv("MIMIR_PROGRESS_FILE", str(log_file))
    monkeypatch.setenv("TQDM_DISABLE", "1")  # as in the kernel: the file still wins
    progress_mod.log("training model h128")
    bar = progress_mod.progress(range(3), desc="train")
    assert not bar.disable
    assert sum(bar) == 3
    bar.close()
    text = log_file.read_text()
    assert "training model h128\n" in text
    assert "train: 100%" in text and "3/3" in text
    assert "\x1b" not in text and all(ord(ch) < 128 for ch in text)  # ascii bars


def test_progress_disabled_or_stderr(monkeypatch, capsys):
    monkeypatch.delenv("MIMIR_PROGRESS_FILE", raising=False)
    monkeypatch.setenv("TQDM_DISABLE", "1")
    assert progress_mod.progress(range(2)).disable
    progress_mod.log("hidden")
    monkeypatch.setenv("TQDM_DISABLE", "0")
    bar = progress_mod.progress(total=2, desc="visible")
    bar.update(2)
    bar.close()
    progress_mod.log("shown")
    err = capsys.readouterr().err
    assert "hidden" not in err and "visible" in err and "shown" in err


def test_tail_shows_lines_and_throttles_bars(tmp_path, capsys):
    tail = runner._Tail(tmp_path / "x.log", "nb", every=3600)
    tail._feed("stage one\n\rbar:  10%|#\rbar:  20%|##")
    tail._feed("\rbar:  30%|###\rbar: 100%|####\n")
    err = capsys.readouterr().err.splitlines()
    assert err == ["[nb] stage one", "[nb] bar:  20%|##", "[nb] bar: 100%|####"]
