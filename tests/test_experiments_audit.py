"""The audit chapter's experiment helpers."""

from types import SimpleNamespace

import pandas as pd

from mimirlib.experiments.audit import summary_lines


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
