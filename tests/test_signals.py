import numpy as np
import pytest
import torch

from mimirlib.core.models import ModelLoadError, load_model, right_pad
from mimirlib.core.signals import (
    CacheCorrupted,
    SignalCache,
    Span,
    _forward_signals,
    _vocab_signals,
    compute_signals,
    resolve_window,
    windows,
)

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
    ((logprob, mean, variance),) = _forward_signals(FixedLogits(logits), ids, torch.ones_like(ids), [1])
    p0 = np.exp([2.0, 0, 0]) / np.exp([2.0, 0, 0]).sum()
    p1 = np.exp([0, 1.0, 0]) / np.exp([0, 1.0, 0]).sum()
    assert np.allclose(logprob, [np.log(p0[1]), np.log(p1[2])], atol=1e-6)
    for t, p in enumerate((p0, p1)):
        mu = (p * np.log(p)).sum()
        var = (p * np.log(p) ** 2).sum() - mu**2
        assert mean[t] == pytest.approx(mu, abs=1e-6)
        assert variance[t] == pytest.approx(var, abs=1e-6)


@pytest.mark.parametrize("hidden", [16, 200])  # a narrow head (64-row chunks) and a wide one (256)
def test_output_layer_chunks_equal_the_whole_logits(hidden):
    """Signals made from hidden states chunk by chunk through the output layer equal those of the
    full logit matrix, across chunk boundaries (600 positions: several chunks and a partial one)."""
    torch.manual_seed(0)
    head = torch.nn.Linear(hidden, 50, bias=True)
    h = torch.randn(600, hidden)
    target = torch.randint(0, 50, (600,))
    with torch.inference_mode():
        chunked = _vocab_signals(h, target, head)
        logp = torch.log_softmax(head(h).double(), dim=-1)
    p = logp.exp()
    mean = (p * logp).sum(-1)
    expected = (logp.gather(-1, target[:, None]).squeeze(-1), mean, (p * logp.square()).sum(-1) - mean.square())
    for got, want in zip(chunked, expected):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=0, atol=2e-5)


def test_padding_is_never_scored():
    logits = torch.randn(2, 4, 5)
    ids = torch.tensor([[1, 2, 3, 4], [1, 2, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])
    a, b = _forward_signals(FixedLogits(logits), ids, mask, [1, 1])
    assert len(a[0]) == 3 and len(b[0]) == 1
    (c,) = _forward_signals(FixedLogits(logits), ids[:1], mask[:1], [3])  # a later window: context not scored
    assert len(c[0]) == 1 and c[0][0] == pytest.approx(a[0][2])


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
    path = cache.path_for(m.cache_id, *resolve_window(m))
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


def test_a_model_loaded_without_weights_has_the_same_identity_and_reads_them_on_first_use(tiny_model_dir, tmp_path):
    """What a Ray driver needs (tokenizer, config, identity, size) without the weights' memory."""
    from mimirlib.core.models import describe

    full = load_model(str(tiny_model_dir))
    light = load_model(str(tiny_model_dir), weights=False)
    assert full.weights_loaded and not light.weights_loaded
    assert light.cache_id == full.cache_id and light.context_length == full.context_length
    assert describe(light) == describe(full)  # parameters counted on a weightless copy
    assert not light.weights_loaded
    texts = synthetic_texts(3, seed=5)
    for x, y in zip(compute_signals(light, texts), compute_signals(full, texts)):  # read now
        assert np.array_equal(x.logprob, y.logprob)
    assert light.weights_loaded
    broken = tmp_path / "broken"
    broken.mkdir()
    for f in tiny_model_dir.iterdir():
        if f.suffix != ".safetensors":
            (broken / f.name).write_bytes(f.read_bytes())
    lazy = load_model(str(broken), weights=False)  # tokenizer and config read: it loads
    with pytest.raises(ModelLoadError, match="broken.*could not be loaded"):
        lazy.model
    with pytest.raises(ModelLoadError, match="broken.*could not be loaded"):
        load_model(str(broken))  # eager: fails at once


# ----------------------------------------------------------------------------- windows: every text scored whole


@pytest.mark.parametrize("n,window,stride", [(2, 8, 4), (8, 8, 4), (9, 8, 4), (30, 8, 4), (31, 8, 3), (100, 16, 15)])
def test_windows_score_every_token_after_the_first_exactly_once(n, window, stride):
    spans = windows(n, window, stride)
    scored = [t for sp in spans for t in range(sp.first, sp.end)]
    assert scored == list(range(1, n))
    for sp in spans:
        assert 0 <= sp.begin < sp.first <= sp.end <= n and sp.end - sp.begin <= window
        assert sp.end - sp.first <= (window - 1 if sp.begin == 0 else stride)
        if sp.begin > 0:  # every token a later window scores sees >= window - stride tokens of context
            assert sp.first - sp.begin >= window - stride and sp.end - sp.begin == window


def test_windows_hand_example():
    # 10 tokens, window 4, stride 2: [0,4) scores 1-3; then 4-5 from [2,6); 6-7 from [4,8); 8-9 from [6,10)
    assert windows(10, 4, 2) == [Span(0, 4, 1), Span(2, 6, 4), Span(4, 8, 6), Span(6, 10, 8)]
    assert windows(9, 4, 2)[-1] == Span(5, 9, 8)  # the last window is full: more context, not less


def test_long_text_is_scored_whole_with_sliding_windows(tiny_model_dir):
    """A text ~5 windows long: every token after the first gets signals, and each equals a hand
    computation (a plain forward pass over that token's window, log-softmax, the two moments)."""
    m = load_model(str(tiny_model_dir))
    text = " ".join(synthetic_texts(12, seed=5, words=20))
    ids = m.tokenizer(text, add_special_tokens=False)["input_ids"]
    window, stride = 24, 10
    assert len(ids) > 5 * window
    (sig,) = compute_signals(m, [text], window=window, stride=stride)
    assert len(sig) == len(ids) - 1  # nothing truncated
    expect = {"logprob": [], "mean": [], "var": []}
    for sp in windows(len(ids), window, stride):
        with torch.no_grad():
            logits = m.model(input_ids=torch.tensor([ids[sp.begin : sp.end]])).logits[0].double()
        logp = torch.log_softmax(logits, -1)
        for t in range(sp.first, sp.end):
            row = logp[t - sp.begin - 1]
            mu = float((row.exp() * row).sum())
            expect["logprob"].append(float(row[ids[t]]))
            expect["mean"].append(mu)
            expect["var"].append(float((row.exp() * row**2).sum()) - mu**2)
    for name, values in expect.items():
        assert np.allclose(getattr(sig, name), values, atol=2e-5), name
    # the first window's tokens are exactly what a short text of those tokens gets
    (head,) = compute_signals(m, [m.tokenizer.decode(ids[:window])], window=window, stride=stride)
    assert np.allclose(sig.logprob[: window - 1], head.logprob[: window - 1], atol=1e-5)


def test_no_text_is_ever_scored_partially(tiny_model_dir):
    """Texts of every length around the window, in one batch: each gets n - 1 scored tokens."""
    m = load_model(str(tiny_model_dir))
    texts = [" ".join(synthetic_texts(k, seed=k, words=7)) for k in range(1, 14)]
    sigs = compute_signals(m, texts, window=16, stride=5, batch_size=3)
    for text, sig in zip(texts, sigs):
        assert len(sig) == len(m.tokenizer(text, add_special_tokens=False)["input_ids"]) - 1


def test_default_window_is_the_trained_context(tiny_model_dir, smoke_lab):
    tiny = load_model(str(tiny_model_dir))
    assert resolve_window(tiny) == (512, 256)  # no lab record: the config's max_position_embeddings
    lab_model = load_model(str(smoke_lab.model_dir(smoke_lab.target_names()[0])))
    seq_len = smoke_lab.config["seq_len"]
    assert lab_model.model.config.max_position_embeddings != seq_len
    assert resolve_window(lab_model) == (seq_len, seq_len // 2)  # what it was trained on, not its config
    assert resolve_window(lab_model, 40, 30) == (40, 30)


@pytest.mark.parametrize("window,stride", [(1, None), (0, None), (8, 8), (8, 0), (8.5, None), (True, None)])
def test_bad_window_or_stride_is_named(tiny_model_dir, window, stride):
    m = load_model(str(tiny_model_dir))
    with pytest.raises(ValueError, match="window|stride"):
        resolve_window(m, window, stride)


def test_cache_is_keyed_by_window_and_stride(tiny_model_dir, tmp_path):
    m = load_model(str(tiny_model_dir))
    cache = SignalCache(tmp_path / "signals")
    text = " ".join(synthetic_texts(6, seed=9, words=20))
    a = compute_signals(m, [text], cache=cache, window=16, stride=8)[0]
    b = compute_signals(m, [text], cache=cache, window=32, stride=8)[0]
    assert cache.misses == 2 and not np.allclose(a.logprob, b.logprob)
    assert (
        len({cache.path_for(m.cache_id, 16, 8), cache.path_for(m.cache_id, 32, 8), cache.path_for(m.cache_id, 16, 4)})
        == 3
    )


def test_right_pad_pads_on_the_right_and_masks_the_padding():
    """One helper pads every batch (signals, prefixed signals, neighbours, masked-LM training)."""
    ids, mask = right_pad([[5, 6, 7], [8], np.array([9, 10], dtype=np.int32)], pad_id=0)
    assert ids.dtype == mask.dtype == torch.long
    assert ids.tolist() == [[5, 6, 7], [8, 0, 0], [9, 10, 0]]
    assert mask.tolist() == [[1, 1, 1], [1, 0, 0], [1, 1, 0]]
