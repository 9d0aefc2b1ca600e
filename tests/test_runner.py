"""mimirlib.runner and mimirlib.progress: parameters are checked before anything
runs, failures never replace a good executed notebook, progress stays out of
notebook outputs."""

import json
import os
import re
import shlex
import signal
import subprocess
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
    execute,
    list_notebooks,
    main,
    notebook_parameters,
    resolve_params,
    run_notebook,
    validate,
    variants,
)
from mimirlib.runner.cli import _build_parser
from mimirlib.runner.kernel import ProgressTail
from mimirlib.runner.resolve import parse_overrides

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
    monkeypatch.setattr(execute, "ensure_kernel", boom)  # where run_notebook looks it up


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
        publish=True,
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
    assert nb.cells[2].metadata["tags"] == ["parameters"]  # after the title and the run's banner
    assert injected[0].metadata["tags"] == ["injected-parameters", "hide-input"]  # collapsed, not removed

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
            "fails",
            overrides=["fail=true"],
            notebooks_dir=FIXTURES,
            out_dir=out,
            kernel=kernel,
            publish=True,
            profiles_dir=profiles,
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
            "--publish",
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
    tail = ProgressTail(tmp_path / "x.log", "nb", every=3600)
    tail._feed("stage one\n\rbar:  10%|#\rbar:  20%|##")
    tail._feed("\rbar:  30%|###\rbar: 100%|####\n")
    err = capsys.readouterr().err.splitlines()
    assert err == ["[nb] stage one", "[nb] bar:  20%|##", "[nb] bar: 100%|####"]


# ----------------------------------------------------- bad inputs, before any kernel (issue 16 item 9)


def cli(*args, notebooks_dir=FIXTURES, out=None, profiles=None, kernel=None):
    argv = [*map(str, args), "--notebooks-dir", str(notebooks_dir)]
    if out is not None:
        argv += ["--out-dir", str(out)]
    if profiles is not None:
        argv += ["--profiles-dir", str(profiles)]
    if kernel is not None:
        argv += ["--kernel", kernel]
    return main(argv)


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith("mimir-run: error: ") and "Traceback" not in err
    return err


@pytest.mark.parametrize(
    "name, content, match",
    [
        ("missing.yml", None, "missing.yml: no such file"),
        ("broken.yml", "n: [1, 2\n", "broken.yml: invalid YAML"),
        ("broken.json", '{"n": 1,}', "broken.json: invalid JSON"),
        ("list.yml", "- 1\n- 2\n", "list.yml: expected a mapping"),
        ("folder", "DIR", "folder: not a file"),
    ],
)
def test_bad_params_file_is_one_line_exit_2(tmp_path, profiles, no_execution, capsys, name, content, match):
    pf = tmp_path / name
    if content == "DIR":
        pf.mkdir()
    elif content is not None:
        pf.write_text(content)
    rc = cli("ok", "--params-file", pf, out=tmp_path / "out", profiles=profiles)
    assert rc == 2
    assert match in one_error_line(capsys)
    assert not (tmp_path / "out").exists()


def test_params_file_json_is_read(tmp_path, profiles):
    pf = tmp_path / "p.json"
    pf.write_text('{"n": 7, "domains": ["code"]}')
    got = resolve_params("ok", "lab", params_file=pf, notebooks_dir=FIXTURES, profiles_dir=profiles)
    assert got["n"] == 7 and got["domains"] == ["code"]


NAMES_CELL = (
    "attacks = None  # attacks to run (a list, or comma-separated like the audit's)\n"
    "after_attacks = []  # attacks after the paper\n"
    "engine = 'local'  # where forward passes run\n"
    "ray_address = None  # the Ray cluster to join\n"
    "ray_workers = None  # Ray workers\n"
    "ray_gpus_per_worker = None  # GPUs per Ray worker\n"
    "backbones = ['loss']  # RaMIA backbones\n"
    "domains = None  # domains to evaluate\n"
    "demo_domain = 'code'  # the demonstration's domain (always the lab's)\n"
    "models = None  # target models by hub name or local path\n"
    "reference_model = None  # one reference model\n"
    "benchmark_source = None  # where the benchmarks are\n"
    "targets = None  # lab targets by name\n"
    "dtype = 'auto'  # the weights' dtype\n"
    "profile = 'lab'  # set from --profile\n"
)


@pytest.fixture
def names_nb(tmp_path):
    d = tmp_path / "nbs"
    d.mkdir()
    write_nb(d, "names", NAMES_CELL)
    return d


@pytest.fixture
def lab_profiles(tmp_path):
    d = tmp_path / "lab-profiles"
    d.mkdir()
    (d / "lab.yml").write_text(
        "lab:\n  domains: [code, math]\n  targets:\n    - {name: h16}\n    - {name: h32}\nnotebooks: {}\n"
    )
    (d / "paper.yml").write_text("notebooks: {}\n")
    return d


@pytest.mark.parametrize(
    "overrides, culprit",
    [
        (
            ["attacks=[loss, lossy]"],
            "parameter 'attacks' (from -p): unknown attack 'lossy' (known: dc_pdd, grad_norm, loss, min_k",
        ),
        (["attacks=loss,nope"], "unknown attack 'nope'"),  # the audit's comma-separated form
        (["after_attacks=[recall, recal]"], "parameter 'after_attacks' (from -p): unknown attack 'recal'"),
        (["engine=dask"], "parameter 'engine' (from -p): unknown engine 'dask' (known: local, ray)"),
        (["ray_address=auto"], "parameter 'ray_address' (from -p): ray_address='auto' needs engine='ray'"),
        (
            ["engine=ray", "ray_address=nohost"],
            "parameter 'ray_address' (from -p): ray_address must be None, 'auto', 'host:port' or 'ray://host:port'",
        ),
        (["ray_workers=4"], "parameter 'ray_workers' (from -p): ray_workers=4 needs engine='ray'"),
        (
            ["engine=ray", "ray_workers=0"],
            "parameter 'ray_workers' (from -p): RayEngine workers must be an integer >= 1",
        ),
        (
            ["engine=ray", "ray_gpus_per_worker=-1"],
            "parameter 'ray_gpus_per_worker' (from -p): RayEngine gpus_per_worker",
        ),
        (["backbones=[rmia, lira]"], "parameter 'backbones' (from -p): unknown backbone 'lira' (known: loss, ref"),
        (
            ["domains=[code, wiki]"],
            "parameter 'domains' (from -p): unknown domain 'wiki' (lab of profile lab: code, math)",
        ),
        (["demo_domain=wiki"], "parameter 'demo_domain' (from -p): unknown domain 'wiki'"),
        (
            ["benchmark_source=iamgroot42/mimir", "domains=[github, gitlab]"],
            "unknown domain 'gitlab' (MIMIR's configs: arxiv",
        ),
        (["models=[./no/such/model]"], "parameter 'models' (from -p): no model folder './no/such/model'"),
        (["reference_model=/no/such/ref"], "parameter 'reference_model' (from -p): no model folder '/no/such/ref'"),
        (["targets=[target-h16, target-h99]"], "unknown lab target 'target-h99' (lab of profile lab: target-h16"),
        (["dtype=bf32"], "parameter 'dtype' (from -p): unknown dtype 'bf32' (use auto, fast, float32, bfloat16 or"),
    ],
)
def test_unknown_names_rejected_before_a_kernel(
    tmp_path, names_nb, lab_profiles, no_execution, capsys, overrides, culprit
):
    args = [x for o in overrides for x in ("-p", o)]
    t0 = time.monotonic()
    rc = cli("names", *args, notebooks_dir=names_nb, out=tmp_path / "out", profiles=lab_profiles)
    assert rc == 2 and time.monotonic() - t0 < 20
    err = one_error_line(capsys)
    assert "notebook names: " in err and culprit in err
    assert not (tmp_path / "out").exists() and not (tmp_path / "variants").exists()


def test_known_names_pass_the_checks(tmp_path, names_nb, lab_profiles, tiny_dir_model):
    # every kind of valid value: registry names, lab domains, MIMIR configs, hub names, an existing
    # folder (relative to the kernel's working directory), lab targets
    for overrides in (
        {"attacks": ["loss", "ref", "zlib", "min_k", "min_k_pp", "ne"], "backbones": ["loss", "ref", "rmia"]},
        {"attacks": "loss, min_k"},
        {"after_attacks": ["recall", "dc_pdd", "grad_norm"], "engine": "ray"},
        {"domains": ["code", "math"], "demo_domain": "math", "targets": ["target-h32"]},
        {"benchmark_source": "iamgroot42/mimir", "domains": ["github", "wikipedia_(en)"]},
        {"benchmark_source": str(tmp_path), "domains": ["anything"]},  # a local folder: the chapter checks
        {"dtype": "fast"},
        {"dtype": "bf16"},
        {"models": ["EleutherAI/pythia-160m", str(tiny_dir_model)], "reference_model": f"./{tiny_dir_model.name}"},
    ):
        plan = runner.plan_run(
            names_nb / "names.py", "lab", overrides=overrides, profiles_dir=lab_profiles, cwd=tiny_dir_model.parent
        )
        assert plan.changed == overrides


@pytest.fixture
def tiny_dir_model(tmp_path):
    d = tmp_path / "my-model"
    d.mkdir()
    (d / "config.json").write_text("{}")
    return d


def test_every_chapter_default_run_is_valid_and_published():
    """`make book` (--all --profile lab) and the smoke book: every chapter's parameters pass every
    check, and a run with the profile's own parameters writes the published chapter."""
    nbs = runner.REPO_ROOT / "notebooks"
    for stem in list_notebooks(nbs):
        declared = notebook_parameters(nbs / f"{stem}.py")
        for profile in ("smoke", "lab"):
            plan = runner.plan_run(nbs / f"{stem}.py", profile, declared=declared, only_declared=True)
            assert plan.variant is None and plan.changed == {}, (stem, profile)


# ------------------------------------------------------------ variants and banners (issue 16 items 1, 8)


def test_changed_parameters_against_profile_defaults():
    declared = {
        "n": {"default": 2, "type": "int", "help": "."},
        "k": {"default": 0.2, "type": "float", "help": "."},
        "xs": {"default": (1, 2), "type": "list", "help": "."},
        "profile": {"default": "lab", "type": "str", "help": "."},
    }
    defaults = variants.default_parameters(declared, {"n": 4})
    assert defaults == {"n": 4, "k": 0.2, "xs": [1, 2], "profile": "lab"}
    # the profile's own value, a value equal to the default and the profile name change nothing
    assert variants.changed_parameters({"n": 4, "k": 0.2, "xs": [1, 2], "profile": "smoke"}, defaults) == {}
    assert variants.changed_parameters({"n": 2, "k": 0.1, "xs": [1, 2]}, defaults) == {"n": 2, "k": 0.1}


@pytest.mark.parametrize(
    "value, text",
    [(0.1, "0.1"), (1e-3, "0.001"), (3, "3"), (True, "true"), (None, "null"), ("code", "code"), (["a", "b"], "[a, b]")],
)
def test_cli_value_reads_back_as_the_same_value(value, text):
    assert variants.cli_value(value) == text
    assert parse_overrides([f"x={text}"])["x"] == value


@pytest.mark.parametrize("value", ["true", "1.5", "a: b", "", "x,y", [1, "2"], {"a": [1, 2]}])
def test_cli_value_quotes_what_yaml_would_misread(value):
    assert parse_overrides([f"x={variants.cli_value(value)}"])["x"] == value


def test_variant_names():
    assert variants.auto_variant_name({"min_k": 0.1}) == "min_k-0p1"
    assert variants.auto_variant_name({"domains": ["code", "math"], "n": 3}) == "domains-code-math__n-3"
    long = variants.auto_variant_name({"models": ["/some/very/long/path/to/a/model/folder"] * 3})
    assert len(long) <= 60 and re.fullmatch(r"[A-Za-z0-9_-]+", long)
    assert long != variants.auto_variant_name({"models": ["/some/very/long/path/to/a/model/folder"] * 4})
    assert variants.variant_for({}) is None  # defaults: the published chapter
    assert variants.variant_for({"k": 0.1}) == "k-0p1"
    assert variants.variant_for({"k": 0.1}, variant="k01") == "k01"
    assert variants.variant_for({}, variant="again") == "again"
    assert variants.variant_for({"k": 0.1}, publish=True) is None
    with pytest.raises(ParameterError, match="bad variant name 'a b'"):
        variants.variant_for({}, variant="a b")
    with pytest.raises(ParameterError, match="give one"):
        variants.variant_for({}, variant="x", publish=True)


def test_reproduce_command_round_trips():
    cmd = variants.reproduce_command("ok", "smoke", {"n": 3, "name": "a b", "domains": ["x"]}, variant="v1")
    assert cmd == "python -m mimirlib.runner ok --profile smoke -p n=3 -p 'name=a b' -p 'domains=[x]' --variant v1"
    argv = shlex.split(cmd)[3:]
    args = _build_parser().parse_args(argv)
    assert parse_overrides(args.overrides) == {"n": 3, "name": "a b", "domains": ["x"]}
    assert args.variant == "v1" and args.profile == "smoke"
    assert variants.reproduce_command("ok", "lab", {"n": 3}, publish=True).endswith("-p n=3 --publish")
    assert variants.reproduce_command("ok", "lab", {}) == "python -m mimirlib.runner ok --profile lab"


def executed_like(with_label=True):
    """A notebook shaped like papermill's output of a chapter."""
    v4 = nbformat.v4
    title = v4.new_markdown_cell("# A chapter\n\nThe paper's claim.")
    params = v4.new_code_cell("k = 0.2  # k")
    params.metadata["tags"] = ["parameters", "hide-input"]
    injected = v4.new_code_cell("# Parameters\nk = 0.1\n")
    injected.metadata["tags"] = ["injected-parameters"]
    body = "(verdicts-x)=\n## Verdicts\nSee {ref}`verdicts-x`, {ref}`the table <verdicts-x>`, [here](#verdicts-x)"
    body += " and {ref}`verdicts-xy`."
    cells = [title, params, injected, v4.new_code_cell("print(k)")]
    if with_label:
        cells.append(v4.new_markdown_cell(body))
    return v4.new_notebook(cells=cells)


def test_finish_notebook_default_run_hides_injected_cell_and_adds_no_banner():
    nb = variants.finish_notebook(executed_like(), profile="lab", changed={}, defaults={"k": 0.2}, command="c")
    assert [c.metadata.get("tags", []) for c in nb.cells[1:3]] == [
        ["parameters", "hide-input"],
        ["injected-parameters", "hide-input"],
    ]
    assert nb.cells[0].source.startswith("# A chapter") and len(nb.cells) == 5  # nothing added or removed
    assert "(verdicts-x)=" in nb.cells[-1].source  # the published chapter keeps its labels
    assert nb.metadata["mimir"] == {
        "profile": "lab",
        "variant": None,
        "published": True,
        "parameters": {},
        "command": "c",
    }


def test_variant_links_to_other_pages_point_at_the_published_chapters():
    """A variant lives in book/variants: its links written for book/executed ([RaMIA](ramia.ipynb))
    would name missing pages there, a failed strict build; anchors, absolute paths and URLs stay."""
    text = (
        "See the [RaMIA chapter](ramia.ipynb), [its verdicts](ramia.ipynb#verdicts), the [scorecard](scorecard.md), "
        "[here](#verdicts-x), [docs](https://example.org/a.ipynb) and [up](/abs/b.ipynb)."
    )
    nb = executed_like()
    nb.cells.append(nbformat.v4.new_markdown_cell(text))
    code = nbformat.v4.new_code_cell("x = '[a](ramia.ipynb)'")
    nb.cells.append(code)
    out = variants.finish_notebook(
        nb, profile="lab", changed={"k": 0.1}, defaults={"k": 0.2}, command="c", variant="k01", chapters="../executed"
    )
    assert out.cells[-2].source == (
        "See the [RaMIA chapter](../executed/ramia.ipynb), [its verdicts](../executed/ramia.ipynb#verdicts), the "
        "[scorecard](../executed/scorecard.md), [here](#verdicts-x--k01), [docs](https://example.org/a.ipynb) and "
        "[up](/abs/b.ipynb)."
    )
    assert out.cells[-1].source == "x = '[a](ramia.ipynb)'"  # code is not prose
    published = variants.finish_notebook(
        executed_like(), profile="lab", changed={"k": 0.1}, defaults={"k": 0.2}, command="c", publish=True
    )
    assert "../executed" not in "".join(c.source for c in published.cells)


def test_finish_notebook_drops_widget_outputs_and_state():
    # a tqdm.notebook bar (transformers' GGUF conversion) as papermill records it: a widget view
    # with a text fallback, and the notebook's widget state that makes myst-nb load CDN scripts
    nb = executed_like()
    bar = nbformat.v4.new_output(
        "display_data",
        data={"application/vnd.jupyter.widget-view+json": {"model_id": "m1"}, "text/plain": "Converting: 0%|"},
    )
    text = nbformat.v4.new_output("stream", name="stdout", text="kept\n")
    nb.cells[3].outputs = [bar, text]
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    nb = variants.finish_notebook(nb, profile="lab", changed={}, defaults={"k": 0.2}, command="c")
    assert nb.cells[3].outputs == [text]
    assert "widgets" not in nb.metadata


def test_finish_notebook_banner_after_title_lists_changed_parameters():
    cmd = variants.reproduce_command("x", "lab", {"k": 0.1, "names": ["a|b"]}, variant="k01")
    nb = variants.finish_notebook(
        executed_like(),
        profile="lab",
        changed={"k": 0.1, "names": ["a|b"]},
        defaults={"k": 0.2, "names": None},
        command=cmd,
        variant="k01",
    )
    banner = nb.cells[1]
    assert banner.cell_type == "markdown" and nb.cells[0].source.startswith("# A chapter")
    src = banner.source
    assert src.startswith(":::{admonition} Variant `k01`: not the published chapter") and src.endswith(":::")
    assert "| `k` | `0.1` | `0.2` |" in src
    assert "| `names` | `[a\\|b]` | `null` |" in src  # a '|' cannot break the table
    assert cmd in src and "--variant k01" in cmd
    # the variant's own labels and references to them are renamed; others are left alone
    body = nb.cells[-1].source
    assert "(verdicts-x--k01)=" in body and "{ref}`verdicts-x--k01`" in body
    assert "{ref}`the table <verdicts-x--k01>`" in body and "[here](#verdicts-x--k01)" in body
    assert "{ref}`verdicts-xy`" in body
    assert nb.metadata["mimir"]["variant"] == "k01" and nb.metadata["mimir"]["parameters"] == {
        "k": 0.1,
        "names": ["a|b"],
    }


def test_banner_of_a_published_run_with_other_parameters():
    nb = variants.finish_notebook(
        executed_like(False),
        profile="smoke",
        changed={"k": 0.1},
        defaults={"k": 0.2},
        command="c --publish",
        publish=True,
    )
    assert nb.cells[1].source.startswith(":::{admonition} Executed with non-default parameters")
    assert "default (profile `smoke`)" in nb.cells[1].source
    assert nb.metadata["mimir"]["published"] is True


def test_banner_goes_after_the_title_even_when_parameters_come_first():
    nb = executed_like(False)
    nb.cells.insert(0, nb.cells.pop(1))  # a chapter whose parameters cell is still above its title
    nb.cells.insert(0, nbformat.v4.new_markdown_cell("Some intro without a heading."))
    variants.finish_notebook(nb, profile="lab", changed={"k": 0.1}, defaults={"k": 0.2}, command="c")
    i = [c.source.split("\n")[0] for c in nb.cells].index("# A chapter")
    assert nb.cells[i + 1].metadata["tags"] == ["mimir-run-banner"]


def test_cli_variant_and_publish_exclude_each_other(tmp_path, profiles, no_execution, capsys):
    with pytest.raises(SystemExit) as e:
        cli("ok", "--variant", "a", "--publish", out=tmp_path / "out", profiles=profiles)
    assert e.value.code == 2 and "not allowed with argument" in capsys.readouterr().err
    assert cli("ok", "--variant", "../up", out=tmp_path / "out", profiles=profiles) == 2
    assert "bad variant name '../up'" in one_error_line(capsys)


def test_orphans_of_dead_runs_are_removed_live_ones_kept(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        files = {
            "dead": tmp_path / f".ok.{dead.pid}.abc.ipynb.partial",
            "live": tmp_path / f".ok.{live.pid}.abc.ipynb.partial",
            "mine": tmp_path / f".ok.{os.getpid()}.abc.ipynb.partial",
            "other_chapter": tmp_path / f".ok--v.{dead.pid}.abc.ipynb.partial",
            "published": tmp_path / "ok.ipynb",
        }
        for f in files.values():
            f.write_text("{}")
        execute._remove_orphans(tmp_path, ".ok.")
        assert {k for k, f in files.items() if f.exists()} == {"live", "mine", "other_chapter", "published"}
    finally:
        live.kill()
        live.wait()


# ------------------------------------------------------------- variants, executed (slow: a kernel each)


@pytest.mark.slow
def test_non_default_run_writes_a_variant_and_keeps_the_published_chapter(tmp_path, profiles, kernel, capsys):
    out = tmp_path / "book" / "executed"
    published = run_notebook("ok", notebooks_dir=FIXTURES, out_dir=out, kernel=kernel, profiles_dir=profiles)
    before = published.read_bytes()
    nb = nbformat.read(published, as_version=4)
    assert not any("mimir-run-banner" in c.metadata.get("tags", []) for c in nb.cells)
    assert nb.metadata["mimir"]["published"] is True

    rc = cli("ok", "-p", "n=3", "-p", "rate=0.25", out=out, profiles=profiles, kernel=kernel)
    assert rc == 0
    variant = tmp_path / "book" / "variants" / "ok--n-3.ipynb"  # rate=0.25 is the profile's: not a change
    assert variant.is_file() and published.read_bytes() == before
    assert "published chapter is unchanged" in capsys.readouterr().err
    vnb = nbformat.read(variant, as_version=4)
    banner = vnb.cells[1].source
    assert "| `n` | `3` | `4` |" in banner and "rate" not in banner.split("Reproduce")[0]
    assert '"total=3 rate=0.25' in json.dumps([o for c in vnb.cells for o in c.get("outputs", [])])

    # the banner's command reproduces the run: same variant, same outputs
    cmd = vnb.metadata["mimir"]["command"]
    assert cmd == "python -m mimirlib.runner ok --profile lab -p n=3 --variant n-3"
    variant.unlink()
    assert cli(*shlex.split(cmd)[3:], out=out, profiles=profiles, kernel=kernel) == 0
    again = nbformat.read(variant, as_version=4)
    assert [c.get("outputs") for c in again.cells] == [c.get("outputs") for c in vnb.cells]
    assert published.read_bytes() == before

    # --publish replaces the chapter, banner and all
    assert cli("ok", "-p", "n=3", "--publish", out=out, profiles=profiles, kernel=kernel) == 0
    pnb = nbformat.read(published, as_version=4)
    assert pnb.cells[1].source.startswith(":::{admonition} Executed with non-default parameters")
    assert pnb.metadata["mimir"]["command"].endswith("-p n=3 --publish")
    assert sorted(p.name for p in out.iterdir()) == ["ok.ipynb"]  # no temporary files left


@pytest.mark.slow
def test_failed_variant_keeps_its_partial_beside_the_variants(tmp_path, profiles, kernel):
    out = tmp_path / "executed"
    with pytest.raises(NotebookFailed) as e:
        run_notebook(
            "fails", overrides=["fail=true"], notebooks_dir=FIXTURES, out_dir=out, kernel=kernel, profiles_dir=profiles
        )
    assert e.value.partial == tmp_path / "variants" / "failed" / "fails--fail-true.ipynb"
    assert not out.exists() or not list(out.glob("*.ipynb"))


# ---------------------------------------------------------------- kill -9 mid-chapter (slow, ~30 s)


def glued(nb_path: Path) -> dict[str, str]:
    """Every glued value of an executed notebook (name -> text/plain)."""
    nb = nbformat.read(nb_path, as_version=4)
    out = {}
    for c in nb.cells:
        for o in c.get("outputs", []):
            sb = o.get("metadata", {}).get("scrapbook")
            if sb:
                out[sb["name"]] = o["data"][sb["mime_prefix"] + "text/plain"]
    return out


def children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc to find the kernel's pid")
def test_kill_9_mid_chapter_never_leaves_a_half_written_chapter(tmp_path, smoke_lab):
    """SIGKILL the runner while the `epochs` chapter computes its signals, on the smoke lab with a
    fresh signal cache: the published notebook is still the previous good one, the orphaned
    kernel exits, and the re-run (on the half-filled cache) glues the same numbers as an
    uninterrupted run."""
    from mimirlib import paths

    out = tmp_path / "executed"

    def cache(name):  # a fresh cache root that shares the built lab (never rebuilt here)
        root = tmp_path / name
        (root / "lab").mkdir(parents=True)
        (root / "lab" / smoke_lab.root.name).symlink_to(smoke_lab.root)
        return root

    log = tmp_path / "runs.log"  # a file, not a pipe: nobody reads it while the run goes on

    def start(cache_root):
        env = {**os.environ, "MIMIR_CACHE": str(cache_root)}
        cmd = [sys.executable, "-m", "mimirlib.runner", "epochs", "--profile", "smoke", "--out-dir", str(out)]
        with open(log, "ab") as fh:
            return subprocess.Popen(cmd, env=env, cwd=runner.REPO_ROOT, stdout=fh, stderr=fh)

    first = start(cache("cache-a"))
    assert first.wait(timeout=300) == 0, log.read_text()[-2000:]
    published = out / "epochs.ipynb"
    good, reference = published.read_bytes(), glued(published)
    assert reference and "mean_gain" in reference

    b = cache("cache-b")
    killed = start(b)
    signals = b / paths.signals_dir().relative_to(paths.cache_root())
    t0 = time.monotonic()
    while not (signals.exists() and any(signals.iterdir())):  # the chapter is computing signals
        assert killed.poll() is None, "the run ended before it could be killed"
        assert time.monotonic() - t0 < 120
        time.sleep(0.05)
    time.sleep(0.3)
    kernels = children(killed.pid)
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait()
    try:
        assert published.read_bytes() == good  # never a half-written chapter
        assert [p.name for p in out.glob("*.ipynb")] == ["epochs.ipynb"]
        assert list(out.glob(".epochs.*.ipynb.partial"))  # what papermill had written so far
        deadline = time.monotonic() + 15
        while any(map(alive, kernels)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(map(alive, kernels)), "the kernel outlived its killed runner"
    finally:
        for pid in filter(alive, kernels):
            os.kill(pid, signal.SIGKILL)

    rerun = start(b)
    assert rerun.wait(timeout=300) == 0, log.read_text()[-2000:]
    assert glued(published) == reference
    assert not list(out.glob(".epochs.*")), "the killed run's partial output was not cleaned up"


def test_schedule_starts_the_longest_chapters_first():
    from mimirlib.runner import schedule

    stems = ["lab", "main_results", "epochs", "ramia", "training_size", "audit"]
    assert schedule(stems) == ["main_results", "training_size", "ramia", "lab", "epochs", "audit"]
    assert schedule(["ok", "fails"]) == ["ok", "fails"]


def test_jobs_runs_notebooks_side_by_side_and_reports_the_worst_status(tmp_path, profiles, capsys, monkeypatch):
    def no_lab(*a, **k):
        raise AssertionError("a --profiles-dir profile must not build the packaged lab")

    monkeypatch.setattr("mimirlib.lab.build.ensure_lab", no_lab)
    out = tmp_path / "out"
    common = ["--notebooks-dir", str(FIXTURES), "--out-dir", str(out), "--profiles-dir", str(profiles)]
    assert main(["ok", "fails", "-p", "fail=true", "--jobs", "2", *common]) == 1  # both ran; one failed
    err = capsys.readouterr().err
    assert "2 at once" in err and "done ok" in err and "FAILED" in err
    assert (out / "ok.ipynb").exists()
    assert main(["ok", "--jobs", "0", *common]) == 2


@pytest.mark.parametrize("address", ["auto", "10.0.0.5:6379", "ray://head.example:10001"])
def test_a_cluster_address_with_the_ray_engine_is_accepted(address):
    """The README's command for a cluster (-p engine=ray -p ray_address=...) passes the name checks."""
    from mimirlib.runner import check_names

    check_names({"engine": "ray", "ray_address": address}, "lab", notebook="names")
    with pytest.raises(runner.ParameterError, match="needs engine='ray'"):
        check_names({"engine": "local", "ray_address": address}, "lab", notebook="names")


# ------------------------------------------------------------------ lab draws (--draw N)

DRAWN_CELL = (
    'profile = "lab"  # the lab\n'
    "draw = None  # the lab's draw\n"
    "seed = 0  # tied to the draw by the profile\n"
    "n = 1  # not tied\n"
)


@pytest.fixture
def drawn(tmp_path):
    """A notebook declaring ``draw`` and a profile tying another of its parameters to the draw (``*draw``)."""
    nbs, profs = tmp_path / "nbs", tmp_path / "profiles"
    nbs.mkdir()
    profs.mkdir()
    write_nb(nbs, "drawn", DRAWN_CELL, body="print(f'draw={draw} seed={seed} n={n}')\n")
    write_nb(nbs, "plain", "n = 1  # declares no draw\n", body="print(f'n={n}')\n")
    (profs / "lab.yml").write_text("lab:\n  seed: &draw 0\nnotebooks:\n  drawn:\n    seed: *draw\n    n: 2\n")
    (profs / "paper.yml").write_text("notebooks: {}\n")
    return nbs, profs


def test_a_draw_is_the_profiles_own_value_not_a_change(drawn):
    nbs, profs = drawn
    plan = runner.plan_run(nbs / "drawn.py", "lab", draw=3, profiles_dir=profs)
    assert plan.params == {"seed": 3, "n": 2, "profile": "lab", "draw": 3}
    assert plan.changed == {} and plan.variant is None  # a draw's chapter is not a variant of its own
    assert plan.command == "python -m mimirlib.runner drawn --profile lab --draw 3"
    own = runner.plan_run(nbs / "drawn.py", "lab", profiles_dir=profs)
    assert own.params == {"seed": 0, "n": 2, "profile": "lab"} and "--draw" not in own.command
    other = runner.plan_run(nbs / "drawn.py", "lab", overrides=["n=5"], draw=3, profiles_dir=profs)
    assert other.changed == {"n": 5} and other.variant == "n-5"
    assert other.command == "python -m mimirlib.runner drawn --profile lab --draw 3 -p n=5 --variant n-5"
    plain = runner.plan_run(nbs / "plain.py", "lab", draw=3, profiles_dir=profs)
    assert plain.params == {} and plain.changed == {}  # no draw where none is declared


@pytest.mark.parametrize(
    "args,match",
    [
        (["-p", "draw=3"], "parameter 'draw' is set by --draw"),
        (["--draw", "-1"], "--draw -1: a lab draw is a seed"),
        (["--profile", "paper", "--draw", "2"], "--draw: profile 'paper' has no embedded lab"),
    ],
)
def test_a_bad_draw_is_one_line_exit_2_before_a_kernel(drawn, no_execution, capsys, args, match):
    nbs, profs = drawn
    assert cli("drawn", *args, notebooks_dir=nbs, profiles=profs) == 2
    assert match in one_error_line(capsys)


def test_a_draws_chapters_go_to_its_own_folder_never_the_books(tmp_path, drawn, kernel, monkeypatch):
    nbs, profs = drawn
    assert runner.base.draw_dir(None) == "book/executed" and runner.base.draw_dir(4) == "book/draws/draw-4"
    where = {None: tmp_path / "executed", 4: tmp_path / "draws" / "4"}
    monkeypatch.setattr(execute, "draw_dir", lambda d: str(where[d]))
    assert cli("drawn", "--draw", "4", notebooks_dir=nbs, profiles=profs, kernel=kernel) == 0
    done = tmp_path / "draws" / "4" / "drawn.ipynb"
    assert done.is_file() and not (tmp_path / "executed").exists()
    nb = nbformat.read(done, as_version=4)
    assert "draw=4 seed=4 n=2" in json.dumps([c.get("outputs") for c in nb.cells])
    assert nb.metadata["mimir"]["published"] is True
    assert not any("mimir-run-banner" in c.metadata.get("tags", []) for c in nb.cells)  # the draw's own chapter
    # another parameter under a draw: a variant inside the draw's folder, not beside the book's chapters
    assert cli("drawn", "--draw", "4", "-p", "n=5", notebooks_dir=nbs, profiles=profs, kernel=kernel) == 0
    assert (tmp_path / "draws" / "4" / "variants" / "drawn--n-5.ipynb").is_file()


@pytest.mark.slow
def test_a_chapter_runs_on_a_lab_drawn_with_another_seed(tmp_path, kernel):
    """``--draw 1`` on the smoke profile: its own lab (seed 1, a folder of its own), whose seed replicates train
    with the draw plus their seed (a lab drawn with seed 1 once trained its ``-seed1`` replicate as its target),
    and a real chapter executed on it with ``draw = 1`` injected, into the draw's folder."""
    from mimirlib.lab.build import ensure_lab

    out = tmp_path / "draw-1"
    assert cli("epochs", "--profile", "smoke", "--draw", "1", notebooks_dir=runner.REPO_ROOT / "notebooks", out=out,
               kernel=kernel) == 0  # fmt: skip
    lab, own = ensure_lab("smoke", 1), ensure_lab("smoke")
    assert lab.config["seed"] == 1 and lab.root != own.root
    target, replicate = lab.seed_replicates("target-h16")[:2]
    assert lab.data_order(target).to_json() != lab.data_order(replicate).to_json()
    nb = nbformat.read(out / "epochs.ipynb", as_version=4)
    injected = next(c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", []))
    assert "draw = 1" in injected.source and nb.metadata["papermill"]["parameters"]["draw"] == 1
