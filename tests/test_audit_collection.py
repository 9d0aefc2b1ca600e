"""The audit's collection question (--suspect, --validation): dataset inference from the command line,
its report folder, and its one-line refusals (sizes, mixed questions, a validation set that is not IID)."""

import json

import pandas as pd
import pytest

from mimirlib import audit
from tests.conftest import synthetic_texts


def write(path, texts):
    pd.DataFrame({"text": texts}).to_json(path, orient="records", lines=True)
    return path


def run_cli(capfd, *argv):
    code = audit.main([str(a) for a in argv])
    out, err = capfd.readouterr()
    return code, out, err


@pytest.fixture
def sets(tmp_path):
    texts = synthetic_texts(40, seed=3)
    return write(tmp_path / "suspect.jsonl", texts[:20]), write(tmp_path / "validation.jsonl", texts[20:])


def test_collection_report_is_written_with_its_p_value_and_features(tmp_path, capfd, tiny_model_dir, sets):
    out = tmp_path / "report"
    code, stdout, err = run_cli(
        capfd, "--model", tiny_model_dir, "--suspect", sets[0], "--validation", sets[1], "--out", out
    )
    assert code == 0, err
    assert "# Dataset inference" in stdout and "p-value" in stdout and "IID check" in stdout
    record = json.loads((out / "audit.json").read_text())
    assert record["question"] == "collection" and 0 <= record["p_value"] <= 1 and len(record["p_values"]) == 10
    assert set(record["weights"]) == {"loss", "zlib"} | {f"min_k_{k:g}" for k in (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6)}
    features = pd.read_csv(out / "features.csv")
    assert list(features["set"].value_counts().sort_index()) == [20, 20] and "loss" in features


def shifted(tmp_path):
    """A validation set a bag of words tells apart: other words, dates and version numbers."""
    texts = [
        f"release {i}.{i % 7}.0 on 2023-0{1 + i % 9}-1{i % 10} fixes bug {100 + i} in module {i}" for i in range(20)
    ]
    return write(tmp_path / "later.jsonl", texts)


@pytest.mark.parametrize(
    "case, message",
    [
        ("too_few", "error: --suspect: dataset inference needs at least 8 texts, got 5"),
        ("mixed", "error: --suspect/--validation ask the collection question; --members the per-text one"),
        ("one_set", "error: --suspect and --validation: dataset inference needs both sets"),
        ("not_iid", "error: --validation: a model-free classifier tells it from --suspect (held-out blind AUC"),
    ],
)
def test_refusals_are_one_line_exit_2_and_write_nothing(case, message, tmp_path, capfd, tiny_model_dir, sets):
    suspect, validation = sets
    args = ["--model", tiny_model_dir, "--out", tmp_path / "out"]
    if case == "too_few":
        args += ["--suspect", write(tmp_path / "few.jsonl", synthetic_texts(5)), "--validation", validation]
    elif case == "mixed":
        args += ["--suspect", suspect, "--validation", validation, "--members", suspect]
    elif case == "one_set":
        args += ["--suspect", suspect]
    else:
        args += ["--suspect", suspect, "--validation", shifted(tmp_path)]
    code, stdout, err = run_cli(capfd, *args)
    assert code == 2 and err.strip().startswith(message), err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_the_iid_check_runs_before_any_model_loads(tmp_path, capfd, sets):
    code, _, err = run_cli(
        capfd, "--model", tmp_path / "no-such-model", "--suspect", sets[0], "--validation", shifted(tmp_path)
    )
    assert code == 2 and "model" in err  # the model name is checked first (cheap), then the sets
    code, _, err = run_cli(capfd, "--model", "org/any", "--suspect", sets[0], "--validation", shifted(tmp_path))
    assert code == 2 and "blind AUC" in err  # refused with no attempt to reach the hub
