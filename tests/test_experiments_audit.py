"""The audit chapter's experiment helpers."""

from pathlib import Path
from types import SimpleNamespace

import pandas as pd

from mimirlib.experiments.audit import summary_lines

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "audit"


def test_summary_names_local_models_by_folder_name_only(tmp_path):
    model, ref = tmp_path / "lab" / "target-h64", tmp_path / "lab" / "ref-disjoint-h128"
    rep = SimpleNamespace(
        model={"name": str(model), "revision": None, "params": 1234},
        reference={"name": str(ref)},
        scores=pd.DataFrame({"is_member": [1, 1, 0]}),
    )
    lines = summary_lines(rep)
    assert lines == [
        "model: target-h64, 1,234 parameters; reference: ref-disjoint-h128",
        "texts: 2 members, 1 non-members",
    ]
    assert str(tmp_path) not in " ".join(lines)
    hub = SimpleNamespace(model={"name": "EleutherAI/pythia-160m"}, reference=None, scores=rep.scores)
    assert summary_lines(hub)[0] == "model: EleutherAI/pythia-160m; no reference model"


def test_run_audits_the_users_files_with_the_chapters_parameters(tiny_model_dir, tmp_path, monkeypatch):
    """The chapter's run on a user's model and files: the defaults of its parameters cell, a few
    overridden as the runner would; the report saved to out_dir, the signals in the cache."""
    from mimirlib import paths
    from mimirlib.experiments import audit as exp
    from mimirlib.runner import notebook_parameters

    monkeypatch.setenv("MIMIR_CACHE", str(tmp_path / "cache"))
    cell = notebook_parameters(ROOT / "notebooks" / "audit.py")
    p = exp.Params({k: v["default"] for k, v in cell.items()}).replace(
        profile="smoke",
        model=str(tiny_model_dir),
        members=str(FIX / "members.jsonl"),
        nonmembers=str(FIX / "nonmembers.jsonl"),
        attacks="loss,min_k",
        window=64,
        n_bootstrap=20,
        out_dir=str(tmp_path / "report"),
    )
    run = exp.run(p)
    assert run.model == str(tiny_model_dir) and (len(run.members), len(run.nonmembers)) == (12, 12)
    assert run.saved == tmp_path / "report" and (run.saved / "report.md").is_file()
    rep = run.report
    assert rep.attacks == ["loss", "min_k"] and rep.corpus is None and rep.reference is None
    assert rep.settings["window"] == 64 and rep.settings["n_bootstrap"] == 20
    assert rep.settings["members"] == str(FIX / "members.jsonl") and "labeled" not in rep.settings
    assert list(paths.signals_dir().glob("*.sqlite"))  # scored through the chapter's signal cache
