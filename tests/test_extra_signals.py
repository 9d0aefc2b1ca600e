"""Signals beyond the plain pass (ReCaLL's prefixed pass, DC-PDD's token frequencies, the gradient
norm) and their scoring: checked against direct torch computations on a tiny model, their caches,
and ReCaLL's prefix never being a scored text."""

import numpy as np
import pytest
import torch

from mimirlib.core import extra_signals as xs
from mimirlib.core.models import load_model
from mimirlib.core.scoring_extra import score_extra
from mimirlib.core.signals import ScoringOptions, SignalCache, compute_signals

from .conftest import synthetic_texts

PREFIX = synthetic_texts(2, seed=7, words=12)
TEXTS = synthetic_texts(3, seed=8, words=8)


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    return load_model(str(tiny_model_dir))


def direct_logprobs(m, ids: list[int]) -> np.ndarray:
    """log p(x_t | x_<t) for t >= 1 of one sequence, from one plain forward pass."""
    with torch.no_grad():
        logits = m.model(input_ids=torch.tensor([ids])).logits[0].float()
    lsm = torch.log_softmax(logits[:-1], -1)
    return lsm.gather(-1, torch.tensor(ids[1:])[:, None]).squeeze(-1).numpy()


def test_a_prefix_text_that_is_also_scored_is_refused(tiny, tmp_path):
    cache = SignalCache(tmp_path)
    with pytest.raises(xs.PrefixLeak, match="also a text to score"):
        xs.recall_signals(tiny, TEXTS + [PREFIX[1]], PREFIX, cache=cache)
    with pytest.raises(xs.PrefixLeak):  # white space around it does not hide it
        xs.check_disjoint([" " + TEXTS[0] + "\n"], TEXTS)
    with pytest.raises(ValueError, match="at least one prefix text"):
        xs.check_disjoint([], TEXTS)
    assert cache.misses == 0 and not list(tmp_path.iterdir())  # refused before any pass
    with pytest.raises(xs.PrefixLeak):
        score_extra(TEXTS, tiny, ["recall"], prefix_texts=[TEXTS[2]], options=ScoringOptions(cache=cache))
    xs.check_disjoint(PREFIX, TEXTS)  # disjoint: no error


def test_prefixed_signals_equal_one_pass_over_prefix_and_text(tiny, tmp_path):
    cache = SignalCache(tmp_path)
    setup = xs.recall_setup(tiny, prefix_tokens=20)
    r = xs.recall_signals(tiny, TEXTS, PREFIX, cache=cache, prefix_tokens=20)
    pre = xs.prefix_ids(tiny.tokenizer, PREFIX, 20)
    assert len(pre) == 20 and pre[-1] == tiny.tokenizer.eos_token_id  # the last 20 tokens, ending the document
    for text, got, plain in zip(TEXTS, r.prefixed, r.unprefixed):
        ids = tiny.tokenizer(text, add_special_tokens=False)["input_ids"]
        assert len(ids) <= setup.text_window  # one window: the direct pass sees the same context
        want = direct_logprobs(tiny, pre + ids)[len(pre) :]  # the text's tokens after its first
        assert len(got) == len(plain) == len(ids) - 1
        assert np.allclose(got.logprob, want, atol=1e-5)
        assert np.allclose(plain.logprob, direct_logprobs(tiny, ids), atol=1e-5)
        assert not np.allclose(got.logprob, plain.logprob)  # the prefix changed something
    assert r.computed == len(TEXTS)
    again = xs.recall_signals(tiny, TEXTS, PREFIX, cache=cache, prefix_tokens=20)
    assert again.computed == 0 and np.array_equal(again.prefixed[0].logprob, r.prefixed[0].logprob)
    other = xs.recall_signals(tiny, TEXTS, PREFIX[:1], cache=cache, prefix_tokens=20)
    assert other.computed == len(TEXTS)  # another prefix is another cache entry


def test_long_texts_are_scored_whole_after_the_prefix(tiny, tmp_path):
    long = synthetic_texts(2, seed=9, words=60)
    r = xs.recall_signals(tiny, long, PREFIX, cache=SignalCache(tmp_path), window=80, prefix_tokens=40)
    for text, got in zip(long, r.prefixed):
        n = len(tiny.tokenizer(text, add_special_tokens=False)["input_ids"])
        assert n > xs.recall_setup(tiny, window=80, prefix_tokens=40).text_window  # several windows
        assert len(got) == n - 1 and np.isfinite(got.logprob).all()


def test_recall_budget_is_checked(tiny):
    assert xs.recall_setup(tiny).prefix_tokens == tiny.context_length // 2
    for bad in (0, tiny.context_length - 1, 2.5):
        with pytest.raises(ValueError, match="prefix_tokens"):
            xs.recall_setup(tiny, prefix_tokens=bad)


def test_token_frequencies_are_laplace_smoothed_counts_and_cached(tiny, tmp_path):
    tok = tiny.tokenizer
    corpus = synthetic_texts(4, seed=3, words=10)
    cache = SignalCache(tmp_path)
    freq = xs.token_frequencies(tok, corpus, cache=cache)
    ids = [i for row in tok(corpus, add_special_tokens=False)["input_ids"] for i in row]
    counts = np.bincount(ids, minlength=len(tok))
    assert freq.shape == (len(tok),)
    assert np.allclose(freq, (1 + counts) / (len(ids) + len(tok)))
    assert freq.sum() == pytest.approx(1.0)
    (saved,) = (tmp_path / "token-freq").glob("*.npy")
    np.save(saved, np.zeros(3))  # the cached table is what the next call reads
    assert xs.token_frequencies(tok, corpus, cache=cache).shape == (3,)
    assert xs.token_frequencies(tok, corpus[:3], cache=cache).shape == (len(tok),)  # another corpus, another table
    with pytest.raises(ValueError, match="no texts"):
        xs.token_frequencies(tok, [], cache=cache)


def test_scored_token_ids_align_with_signals(tiny):
    sigs = compute_signals(tiny, TEXTS)
    for text, ids, s in zip(TEXTS, xs.scored_token_ids(tiny, TEXTS), sigs):
        full = tiny.tokenizer(text, add_special_tokens=False)["input_ids"]
        assert ids.tolist() == full[1:] and len(ids) == len(s)


def direct_grad_norm(m, text: str, names=None) -> float:
    ids = m.tokenizer(text, add_special_tokens=False)["input_ids"]
    m.model.zero_grad(set_to_none=True)
    logits = m.model(input_ids=torch.tensor([ids])).logits[0].float()
    loss = torch.nn.functional.cross_entropy(logits[:-1], torch.tensor(ids[1:]))
    loss.backward()
    sq = sum(p.grad.square().sum() for n, p in m.model.named_parameters() if names is None or n in names)
    m.model.zero_grad(set_to_none=True)
    return float(sq.sqrt())


def test_gradient_norm_matches_torch_and_is_cached(tiny, tmp_path):
    cache = SignalCache(tmp_path)
    g = xs.gradient_norms(tiny, TEXTS, cache=cache)
    for text, v in zip(TEXTS, g.norms):
        assert v == pytest.approx(direct_grad_norm(tiny, text), rel=1e-4)
    assert g.computed == len(TEXTS) and g.ms_per_text > 0
    again = xs.gradient_norms(tiny, TEXTS, cache=cache)
    assert again.computed == 0 and again.norms == pytest.approx(g.norms)
    assert all(p.requires_grad for p in tiny.model.parameters())  # flags restored


def test_gradient_norm_of_a_named_subset(tiny, tmp_path):
    names = [n for n, _ in xs.select_parameters(tiny.model, "lm_head.*")]
    assert names == ["lm_head.weight"]
    g = xs.gradient_norms(tiny, TEXTS[:1], cache=SignalCache(tmp_path), params="lm_head.*")
    assert g.norms[0] == pytest.approx(direct_grad_norm(tiny, TEXTS[0], set(names)), rel=1e-4)
    assert g.norms[0] < direct_grad_norm(tiny, TEXTS[0])
    with pytest.raises(ValueError, match="matches no parameter"):
        xs.gradient_norms(tiny, TEXTS, params="no_such_layer.*")


def test_score_extra_scores_each_attack_and_reports_its_cost(tiny, tmp_path):
    cache = SignalCache(tmp_path)
    out = score_extra(
        TEXTS,
        tiny,
        ["recall", "dc_pdd", "grad_norm"],
        prefix_texts=PREFIX,
        frequency_corpus=PREFIX,
        options=ScoringOptions(cache=cache),
    )
    assert list(out.scores.columns) == ["recall", "dc_pdd", "grad_norm"] and len(out.scores) == len(TEXTS)
    assert np.isfinite(out.scores.to_numpy()).all()
    assert out.costs.attack.tolist() == ["recall", "dc_pdd", "grad_norm"]
    assert (out.costs.computed == len(TEXTS)).all() and (out.costs.ms_per_text > 0).all()
    g = xs.gradient_norms(tiny, TEXTS, cache=cache)
    assert out.scores.grad_norm.tolist() == pytest.approx([-v for v in g.norms])
    with pytest.raises(ValueError, match="'recall' needs prefix texts"):
        score_extra(TEXTS, tiny, ["recall"])
    with pytest.raises(ValueError, match="'dc_pdd' needs a corpus"):
        score_extra(TEXTS, tiny, ["dc_pdd"])
    with pytest.raises(ValueError, match="one of the paper's"):
        score_extra(TEXTS, tiny, ["loss"])
