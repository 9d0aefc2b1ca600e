import numpy as np
import pytest
import torch

from mimirlib.models import ModelLoadError, load_model
from mimirlib.signals import CacheCorrupted, SignalCache, _forward_signals, compute_signals

from .conftest import synthetic_texts


class FixedLogits(torch.nn.Module):
    """A fake LM whose logits are given: lets tests hand-compute every signal."""

    def __init__(self, logits):
        super().__init__()
        self.logits = logits

    def forward(self, input_ids, attention_mask):
        return type("Out", (), {"logits": self.logits[: input_ids.shape[0], : input_ids.shape[1]]})()


def test_signals_match_hand_computation():
    logits = torch.tensor([[[2.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]]])
    ids = torch.tensor([[0, 1, 2]])
    (s,) = _forward_signals(FixedLogits(logits), ids, torch.ones_like(ids))
    p0 = np.exp([2.0, 0, 0]) / np.exp([2.0, 0, 0]).sum()
    p1 = np.exp([0, 1.0, 0]) / np.exp([0, 1.0, 0]).sum()
    assert np.allclose(s.logprob, [np.log(p0[1]), np.log(p1[2])], atol=1e-6)
    for t, p in enumerate((p0, p1)):
        mu = (p * np.log(p)).sum()
        var = (p * np.log(p) ** 2).sum() - mu**2
        assert s.mean[t] == pytest.approx(mu, abs=1e-6)
        assert s.var[t] == pytest.approx(var, abs=1e-6)


def test_padding_is_never_scored():
    logits = torch.randn(2, 4, 5)
    ids = torch.tensor([[1, 2, 3, 4], [1, 2, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])
    a, b = _forward_signals(FixedLogits(logits), ids, mask)
    assert len(a) == 3 and len(b) == 1


def test_batched_equals_one_at_a_time(tiny_model_dir):
    m = load_model(str(tiny_model_dir))
    texts = synthetic_texts(5, seed=1, words=10) + synthetic_texts(3, seed=2, words=30)
    batched = compute_signals(m, texts, batch_size=8)
    single = [compute_signals(m, [t], batch_size=1)[0] for t in texts]
    for x, y in zip(batched, single):
        assert len(x) == len(y)
        assert np.allclose(x.logprob, y.logprob, atol=1e-4)
        assert np.allclose(x.var, y.var, atol=1e-4)


def test_cache_hit_and_miss(tiny_model_dir, tmp_path):
    m = load_model(str(tiny_model_dir))
    cache = SignalCache(tmp_path / "signals")
    texts = synthetic_texts(6, seed=3)
    first = compute_signals(m, texts, cache=cache)
    assert (cache.hits, cache.misses) == (0, 6)
    second = compute_signals(m, texts + synthetic_texts(2, seed=4), cache=cache)
    assert (cache.hits, cache.misses) == (6, 8)
    assert all(np.array_equal(a.logprob, b.logprob) for a, b in zip(first, second))


def test_corrupted_cache_names_the_file(tiny_model_dir, tmp_path):
    m = load_model(str(tiny_model_dir))
    cache = SignalCache(tmp_path / "signals")
    compute_signals(m, synthetic_texts(2), cache=cache)
    path = cache.path_for(m.cache_id, 512)
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(CacheCorrupted, match=str(path)):
        compute_signals(m, synthetic_texts(2), cache=cache)


def test_too_short_text_is_named(tiny_model_dir):
    m = load_model(str(tiny_model_dir))
    with pytest.raises(ValueError, match="token"):
        compute_signals(m, ["a"])


def test_unloadable_model_is_named(tmp_path):
    with pytest.raises(ModelLoadError, match="no-such-model"):
        load_model(str(tmp_path / "no-such-model"))


def test_local_revisions_load_like_hub_branches(tiny_model_dir, tmp_path):
    import shutil

    root = tmp_path / "m"
    shutil.copytree(tiny_model_dir, root)
    shutil.copytree(tiny_model_dir, root / "revisions" / "step1")
    m = load_model(str(root), "step1")
    assert m.revision == "step1" and m.cache_id != load_model(str(root)).cache_id
    with pytest.raises(ModelLoadError, match="step99000.*step1"):
        load_model(str(root), "step99000")


def test_precision_is_part_of_the_cache_identity(tiny_model_dir):
    assert load_model(str(tiny_model_dir)).cache_id != load_model(str(tiny_model_dir), dtype="bfloat16").cache_id
