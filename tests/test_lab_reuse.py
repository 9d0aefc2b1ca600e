"""Model reuse across lab folders (mimirlib.lab.reuse): the fingerprint, the search, the adoption."""

import numpy as np
import pytest

from mimirlib.lab import reuse

RECIPE = {"lr": 0.001, "seed": 0}
IDS = ["math/1", "math/2"]
TOKENS = [[1, 2, 3], [4, 5]]
WINDOWS = {"train": np.arange(8).reshape(2, 4)}


@pytest.fixture
def tok_dir(tmp_path):
    d = tmp_path / "tok"
    d.mkdir()
    (d / "tokenizer.json").write_text('{"vocab": 1}')
    return d


def _fp(tok_dir, **change):
    args = dict(recipe=RECIPE, ids=IDS, tokens=TOKENS, tokenizer_dir=tok_dir, eval_windows=WINDOWS, fmt=2) | change
    return reuse.fingerprint(**args)


def test_the_fingerprint_changes_with_everything_a_model_depends_on(tok_dir, tmp_path):
    base = _fp(tok_dir)
    assert _fp(tok_dir) == base  # stable
    other_tok = tmp_path / "tok2"
    other_tok.mkdir()
    (other_tok / "tokenizer.json").write_text('{"vocab": 2}')
    changed = [
        _fp(tok_dir, recipe=RECIPE | {"lr": 0.002}),
        _fp(tok_dir, ids=IDS[::-1]),  # the order is part of it
        _fp(tok_dir, tokens=[[1, 2], [3, 4, 5]]),  # the same tokens cut at another place
        _fp(other_tok),
        _fp(tok_dir, eval_windows={"train": np.arange(8).reshape(2, 4) + 1}),
        _fp(tok_dir, fmt=3),
    ]
    assert base not in changed and len(set(changed)) == len(changed)


def _trained(root, name, fp):
    (root / "models" / name).mkdir(parents=True)
    (root / "models" / name / "model.safetensors").write_bytes(b"weights")
    reuse.record(root, name, fp)


def test_only_a_recorded_finished_model_of_another_lab_is_adopted(tmp_path):
    here, there = tmp_path / "lab-new", tmp_path / "lab-old"
    here.mkdir()
    _trained(there, "target-h8", "fp1")
    (there / "models" / "target-h16.partial").mkdir()  # interrupted: never recorded
    reuse.record(there, "target-h16", "fp2")
    assert reuse.find(here, "target-h8", "other") is None  # another recipe
    assert reuse.find(here, "target-h16", "fp2") is None  # recorded, but its folder never finished
    assert reuse.find(there, "target-h8", "fp1") is None  # a lab never adopts from itself
    dst = here / "models" / "target-h8"
    dst.with_name("target-h8.partial").mkdir(parents=True)  # a copy cut short earlier is replaced
    assert reuse.reuse(here, "target-h8", "fp1", dst) == there / "models" / "target-h8"
    assert (dst / "model.safetensors").samefile(there / "models" / "target-h8" / "model.safetensors")
    assert not dst.with_name("target-h8.partial").exists()
    assert reuse.recorded(here) == {"target-h8": "fp1"}


def test_an_unreadable_record_is_no_record(tmp_path):
    (tmp_path / reuse.FINGERPRINTS).write_text("{half")
    assert reuse.recorded(tmp_path) == {}


def test_recording_keeps_every_name_and_leaves_an_unchanged_record_untouched(tmp_path):
    reuse.record(tmp_path, "a", "fp1")
    reuse.record(tmp_path, "b", "fp2")
    before = (tmp_path / reuse.FINGERPRINTS).stat().st_mtime_ns
    reuse.record(tmp_path, "a", "fp1")  # already recorded: no rewrite
    assert (tmp_path / reuse.FINGERPRINTS).stat().st_mtime_ns == before
    reuse.record(tmp_path, "a", "fp3")
    assert reuse.recorded(tmp_path) == {"a": "fp3", "b": "fp2"}
