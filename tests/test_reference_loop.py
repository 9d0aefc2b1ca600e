"""The faithful re-implementation of the reference's scoring loop (the baseline ``make bench`` times):
its windows, its k rule, and agreement with mimirlib's engine wherever both see the same tokens."""

import math

import numpy as np
import pytest
import torch

from mimirlib.core.attacks import AttackInputs, score
from mimirlib.core.models import load_model
from scripts.reference_loop import (
    REFERENCE_ATTACKS,
    reference_loop_scores,
    reference_spans,
    reference_window,
    token_log_probs,
)
from mimirlib.core.signals import Span, compute_signals, windows

from .conftest import synthetic_texts

WINDOW, STRIDE = 24, 12  # a window that is a multiple of the stride: both rules then agree (see below)


@pytest.fixture(scope="module")
def models(tiny_model_dir, tmp_path_factory):
    """A target and a differently initialised reference model sharing the tiny tokenizer, their output
    layers scaled up so their next-token distributions are as peaked as a trained model's (a random
    model's are nearly uniform: Var[log p] ~ 0.006, where float32 rounding alone moves Min-K%++ by 1e-4)."""
    from transformers import GPTNeoXForCausalLM

    from mimirlib.lab.train import ModelSize, neox_config

    tok = load_model(str(tiny_model_dir)).tokenizer
    root = tmp_path_factory.mktemp("loop")
    loaded = []
    for name, seed, size in (("target", 0, ModelSize("t", 16, 2, 2)), ("ref", 1, ModelSize("r", 8, 1, 2))):
        torch.manual_seed(seed)
        model = GPTNeoXForCausalLM(neox_config(size, len(tok), 64, tok.eos_token_id))
        with torch.no_grad():
            model.get_output_embeddings().weight.mul_(20.0)
        model.save_pretrained(root / name)
        tok.save_pretrained(root / name)
        loaded.append(load_model(str(root / name)))
    return tuple(loaded)


def n_tokens(loaded, text: str) -> int:
    return len(loaded.tokenizer(text)["input_ids"])


def same_contexts(n: int, window: int, stride: int) -> bool:
    """Whether the reference's passes and the engine's windows give every token the same left context."""

    def begins(spans):
        return {t: sp.begin for sp in spans for t in range(sp.first, sp.end)}

    return begins(reference_spans(n, window, stride)) == begins(windows(n, window, stride))


def test_reference_spans_hand_example():
    # 10 tokens, window 4, stride 2: steps at i = 0, 2, 4, 6, 8, each from max(i + 2 - 4, 0) to i + 2
    assert reference_spans(10, 4, 2) == [Span(0, 2, 1), Span(0, 4, 2), Span(2, 6, 4), Span(4, 8, 6), Span(6, 10, 8)]
    # 9 tokens: the last, partial step keeps the step's start (2 tokens of context); the engine's is full
    assert reference_spans(9, 4, 2)[-1] == Span(6, 9, 8)
    assert windows(9, 4, 2)[-1] == Span(5, 9, 8)
    assert not same_contexts(9, 4, 2) and same_contexts(10, 4, 2) and same_contexts(4, 4, 2)
    assert not same_contexts(30, 24, 10)  # a window that is not a multiple of the stride: different contexts


@pytest.mark.parametrize("n,window,stride", [(2, 8, 4), (8, 8, 4), (9, 8, 4), (31, 8, 3), (100, 16, 15), (5, 4, 1)])
def test_reference_spans_score_every_token_after_the_first_once(n, window, stride):
    spans = reference_spans(n, window, stride)
    assert [t for sp in spans for t in range(sp.first, sp.end)] == list(range(1, n))
    assert all(sp.end - sp.begin <= window for sp in spans)


def test_default_window_is_the_reference_rule(models):
    target, _ = models
    # the reference reads max_position_embeddings (512 for the tiny model), whatever the model trained on
    context = target.model.config.max_position_embeddings
    assert reference_window(target) == (context, context // 2)


def test_token_log_probs_use_the_reference_contexts(models):
    """Each token's log-probability is a plain forward pass over the reference's context for it
    (the last, partial step included), and each kept row is that position's full log-softmax."""
    target, _ = models
    text = " ".join(synthetic_texts(6, seed=11, words=6))
    ids = target.tokenizer(text)["input_ids"]
    window, stride = 16, 6
    assert len(ids) > 3 * window and len(ids) % stride != 0  # a partial last step
    probs, rows = token_log_probs(target, text, window, stride)
    assert len(probs) == len(ids) - 1 and rows.shape == (len(ids) - 1, target.model.config.vocab_size)
    expect = []
    for sp in reference_spans(len(ids), window, stride):
        with torch.no_grad():
            logits = target.model(input_ids=torch.tensor([ids[sp.begin : sp.end]])).logits[0].double()
        logp = torch.log_softmax(logits, -1)
        expect += [float(logp[t - sp.begin - 1, ids[t]]) for t in range(sp.first, sp.end)]
    assert np.allclose(probs, expect, atol=2e-5)
    assert np.allclose(rows.gather(-1, torch.tensor(ids[1:])[:, None]).squeeze(-1).numpy(), probs, atol=0)


def long_texts(loaded, count: int, stride: int, window: int) -> list[str]:
    """Texts several windows long whose token count is a multiple of ``stride``: the reference's last
    step is then full, so both sides give every token the same context (checked)."""
    out, seed = [], 100
    while len(out) < count:
        seed += 1
        text = " ".join(synthetic_texts(5, seed=seed, words=12 + seed % 7))
        ids = loaded.tokenizer(text)["input_ids"]
        cut = loaded.tokenizer.decode(ids[: len(ids) // stride * stride])
        n = n_tokens(loaded, cut)
        if n > 2 * window and same_contexts(n, window, stride):
            out.append(cut)
    return out


def test_loop_agrees_with_the_engine_where_both_see_the_same_tokens(models):
    target, ref = models
    short = [t for t in synthetic_texts(40, seed=7, words=5) if 6 <= n_tokens(target, t) <= WINDOW][:3]
    texts = long_texts(target, 4, STRIDE, WINDOW) + short  # several windows long, and one window
    assert all(same_contexts(n_tokens(target, t), WINDOW, STRIDE) for t in texts)
    assert any(n_tokens(target, t) > 2 * WINDOW for t in texts) and any(n_tokens(target, t) <= WINDOW for t in texts)
    loop = reference_loop_scores(target, ref, texts, window=WINDOW, stride=STRIDE)
    t = compute_signals(target, texts, window=WINDOW, stride=STRIDE)
    r = compute_signals(ref, texts, window=WINDOW, stride=STRIDE)
    inputs = [AttackInputs(x, a, b) for x, a, b in zip(texts, t, r)]
    assert all(math.floor(0.2 * len(s)) >= 1 for s in t)  # the two k rules pick the same tokens
    assert set(loop) == set(REFERENCE_ATTACKS)
    for attack in REFERENCE_ATTACKS:
        engine = score(attack, inputs)
        assert np.max(np.abs(loop[attack] - engine)) <= 1e-4, attack
    assert np.ptp(loop["ref"]) > 1e-3  # a real reference model, not the target again


def test_loop_differs_from_the_engine_where_the_last_step_is_partial(models):
    """Not a defect of either: the reference gives a partial last step less context (documented)."""
    target, ref = models
    text = " ".join(synthetic_texts(5, seed=3, words=25))
    n = n_tokens(target, text)
    assert n > 2 * WINDOW and not same_contexts(n, WINDOW, STRIDE)
    loop = reference_loop_scores(target, ref, [text], window=WINDOW, stride=STRIDE)
    (sig,) = compute_signals(target, [text], window=WINDOW, stride=STRIDE)
    assert abs(loop["loss"][0] - float(sig.logprob.mean())) > 1e-6


def test_min_k_follows_the_reference_k_rule(models):
    """floor(k * n) tokens with no minimum: under 5 scored tokens at k = 0.2 the score is NaN."""
    target, ref = models
    short = next(t for t in synthetic_texts(50, seed=5, words=2) if 2 <= n_tokens(target, t) <= 5)
    loop = reference_loop_scores(target, ref, [short])
    assert math.isnan(loop["min_k"][0]) and math.isnan(loop["min_k_pp"][0])
    assert all(np.isfinite(loop[a][0]) for a in ("loss", "zlib", "ref"))
    (sig,) = compute_signals(target, [short])
    assert np.isfinite(score("min_k", [AttackInputs(short, sig)])[0])  # mimirlib keeps at least one token


def test_bad_input_is_named(models):
    target, ref = models
    with pytest.raises(ValueError, match="token"):
        reference_loop_scores(target, ref, ["a"])
    with pytest.raises(ValueError, match="k must be"):
        reference_loop_scores(target, ref, ["a b c"], k=0)
    with pytest.raises(ValueError, match="stride"):
        reference_loop_scores(target, ref, ["a b c"], window=8, stride=8)
    text = " ".join(synthetic_texts(2, seed=8, words=6))
    alone = reference_loop_scores(target, ref, [text], window=8)  # a window alone: stride half of it
    assert alone["loss"][0] == pytest.approx(reference_loop_scores(target, ref, [text], window=8, stride=4)["loss"][0])


class Wrapped(torch.nn.Module):
    """The same model behind a class the engine does not know: it gets the plain full-logits forward."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids, attention_mask=attention_mask)


def test_engine_fast_path_equals_the_plain_forward(models):
    """The engine's speed-ups for known architectures (output layer on scored positions only, no padding
    mask, fused float32 reductions) give the signals of the plain forward with full logits and a mask."""
    from mimirlib.core.signals import _forward_signals, _split_head

    target, _ = models
    assert _split_head(target.model) is not None and _split_head(Wrapped(target.model)) is None
    rows = [target.tokenizer(t)["input_ids"] for t in synthetic_texts(3, seed=4, words=12)]
    width = max(map(len, rows))
    ids = torch.tensor([r + [0] * (width - len(r)) for r in rows])
    mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows])
    first = [1, 3, len(rows[2]) - 2]  # later windows: context positions are run but not scored
    fast = _forward_signals(target.model, ids, mask, first)
    plain = _forward_signals(Wrapped(target.model), ids, mask, first)
    for a, b in zip(fast, plain):
        for x, y in zip(a, b):
            assert len(x) == len(y) and np.allclose(x, y, atol=1e-5)
