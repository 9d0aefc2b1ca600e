"""The masked-LM engine's public pieces (mimirlib.samplers.mlm): the splice helper, the whole-word set-up
(`MaskedLMSetup`), per-text generators and the input checks, pinned to what the samplers in
neighbors / perturb / ranges did before they shared them (tiny masked LM: seconds)."""

import dataclasses
import random

import numpy as np
import pytest
import torch

from mimirlib.samplers import neighbors, perturb
from mimirlib.samplers.mlm import MaskedLMSetup, load_masked_lm, masked_lm_setup, train_masked_lm
from mimirlib.samplers.mlm.inputs import as_text_list, check_texts
from mimirlib.samplers.mlm.sampling import eval_mode, salted_rng, sample_candidates, sample_ids, splice, text_rng
from mimirlib.samplers.mlm.words import fill_rows, ids_by_casefold, word_cores
from mimirlib.progress import progress, progress_factory

SMALLEST = dict(vocab_size=200, hidden=16, layers=1, heads=1, max_len=64, epochs=1, batch_size=32, lr=5e-3)
WORDS = ["The licensee", "A user", "copies", "reads", "the software", "the notice", "without warranty.", "as is."]
TEXT = "A user reads  the notice,\n    as is (really) -- and writes this file."


@pytest.fixture(scope="module")
def mlm(tmp_path_factory):
    rng = random.Random(0)
    texts = [" ".join(rng.choice(WORDS) for _ in range(6)) for _ in range(150)]
    return load_masked_lm(
        train_masked_lm(texts, tmp_path_factory.mktemp("mlm") / "m", seed=0, progress=False, **SMALLEST)
    )


def test_the_old_homes_re_export_the_engine():
    assert neighbors.train_masked_lm is train_masked_lm and neighbors.load_masked_lm is load_masked_lm


# --------------------------------------------------------------------------- splice


def test_splice_replaces_spans_and_keeps_everything_else():
    text = "The cat sat,\n  on the mat."
    assert splice(text, [(4, 7), (22, 25)], ["dog", "rug"]) == "The dog sat,\n  on the rug."
    assert splice(text, [], []) == text
    assert splice(text, [(0, 3)], ["[MASK]"]) == "[MASK] cat sat,\n  on the mat."
    assert splice("ab", [(0, 1), (1, 2)], ["", "xyz"]) == "xyz"


def test_splice_capitalises_only_when_asked_and_only_a_lower_case_fill_of_a_capital():
    text = "The cat. the Dog"
    spans = [(0, 3), (4, 7), (9, 12), (13, 16)]
    fills = ["a", "b", "c", "dEF"]
    assert splice(text, spans, fills) == "a b. c dEF"
    assert splice(text, spans, fills, capitalise=True) == "A b. c DEF"
    assert splice(text, [(0, 3)], ["1st"], capitalise=True) == "1st cat. the Dog"
    assert splice(text, [(0, 3)], [""], capitalise=True) == " cat. the Dog"


# --------------------------------------------------------------------------- whole-word set-up


def test_word_cores_strip_punctuation_and_skip_bare_punctuation():
    spans = word_cores(TEXT, len(TEXT))
    assert [TEXT[s:e] for s, e in spans] == [
        "A",
        "user",
        "reads",
        "the",
        "notice",
        "as",
        "is",
        "really",
        "and",
        "writes",
        "this",
        "file",
    ]
    assert [TEXT[s:e] for s, e in word_cores(TEXT, 12)] == ["A", "user", "reads"]


def test_masked_lm_setup_is_a_frozen_record_of_what_the_samplers_need(mlm):
    model, tok = mlm
    texts = [TEXT, "The licensee copies the software."]
    setup = masked_lm_setup(texts, model, tok, 512, "test")
    assert isinstance(setup, MaskedLMSetup)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setup.window = 3
    assert setup.texts == texts and setup.mask_id == tok.mask_token_id and setup.mask_token == tok.mask_token
    assert setup.window == 64  # min(max_length, the model's 64 positions)
    assert setup.capitalise is False  # the lab's WordPiece is cased
    assert [[t[s:e] for s, e in spans] for t, spans in zip(texts, setup.cores)] == [
        [TEXT[s:e] for s, e in word_cores(TEXT, len(TEXT))],
        ["The", "licensee", "copies", "the", "software"],
    ]
    fillable = [setup.vocab.core[i] for i in setup.fill_ok.nonzero().squeeze(1).tolist()]
    assert fillable and "user" in fillable
    assert not any(w.startswith("[") or not w.isalnum() for w in fillable)  # no special, piece or punctuation
    assert ids_by_casefold(setup)["user"] == [tok.convert_tokens_to_ids("user")]
    # a narrower set-up is a replace(), as ranges.fill_masked_words makes it
    narrow = dataclasses.replace(setup, cores=[spans[:1] for spans in setup.cores])
    assert narrow.cores[1] == [(0, 3)] and setup.cores[1][1] == (4, 12)


def test_masked_lm_setup_checks_and_the_empty_list(mlm):
    model, tok = mlm
    assert masked_lm_setup([], model, tok, 512, "test") is None
    with pytest.raises(TypeError, match=r"texts\[1\] is int"):
        masked_lm_setup(["a", 1], model, tok, 512, "test")


def test_the_uncased_tokenizer_asks_for_capitals(mlm):
    from transformers import BertTokenizerFast

    model, tok = mlm
    uncased = BertTokenizerFast(vocab=tok.get_vocab(), do_lower_case=True)
    assert masked_lm_setup(["The user."], model, uncased, 512, "test").capitalise is True


def test_fill_rows_fills_each_row_in_order_and_substitute_words_is_built_from_it(mlm):
    model, tok = mlm
    texts = [TEXT, "The licensee copies the software."]
    setup = masked_lm_setup(texts, model, tok, 512, "test")
    rows = [(0, np.array([1, 4]), np.array([0.1, 0.9])), (1, np.array([2]), np.array([0.5]))]
    with eval_mode(model):
        out = fill_rows(setup, rows, model, tok, exclude=ids_by_casefold(setup), top_k=5, batch_size=1)
    for (i, pos, _), variant in zip(rows, out):
        assert perturb.word_hamming(texts[i], variant) == len(pos)
        changed = [w for w, (a, b) in enumerate(zip(texts[i].split(), variant.split())) if a != b]
        assert len(changed) == len(pos)
    # substitute_words' first round is exactly these primitives with its own generators
    k, n = 1, 2
    rngs = [salted_rng(t, 0, "substitute-words", k) for t in texts]
    rows = [
        (i, np.sort(rngs[i].choice(len(setup.cores[i]), size=k, replace=False)), rngs[i].random(k))
        for i in range(len(texts))
        for _ in range(n + 2)
    ]
    with eval_mode(model):
        first = fill_rows(setup, rows, model, tok, exclude=ids_by_casefold(setup), top_k=20)
    expected = [list(dict.fromkeys(v for (i, _, _), v in zip(rows, first) if i == t))[:n] for t in range(2)]
    got = perturb.substitute_words(texts, model, tok, k=k, n_samples=n, seed=0)
    assert [g[: len(e)] for g, e in zip(got, expected)] == expected


# --------------------------------------------------------------------------- generators, checks, modes


def test_per_text_generators_keep_their_streams():
    """The seeds behind every sampler's output: changing them changes every neighbour and range."""
    assert text_rng("The licensee copies.", 0).integers(1000, size=4).tolist() == [336, 256, 725, 767]
    assert salted_rng("The licensee copies.", 3, "substitute-words", 2).integers(1000, size=4).tolist() == [
        855,
        982,
        215,
        199,
    ]
    assert salted_rng("x", 0, "a", 1).random() != salted_rng("x", 0, "b", 1).random()
    assert salted_rng("x", 0, "a", 1).random() != salted_rng("x", 0, "a", 2).random()


def test_input_checks_name_the_culprit():
    assert as_text_list(("a", "b")) == ["a", "b"]
    with pytest.raises(TypeError, match="single string"):
        as_text_list("ab")
    with pytest.raises(TypeError, match="not int"):
        as_text_list(3)
    check_texts(["a", " "])
    with pytest.raises(ValueError, match=r"texts\[1\] is empty or blank: nothing to do"):
        check_texts(["a", " ", 3], blank="nothing to do")
    with pytest.raises(TypeError, match=r"texts\[0\] is bytes, not str"):
        check_texts([b"a", " "], blank="nothing to do")


def test_eval_mode_restores_the_training_flag(mlm):
    model, _ = mlm
    model.train()
    with eval_mode(model):
        assert not model.training
    assert model.training
    with pytest.raises(RuntimeError), eval_mode(model):
        raise RuntimeError
    assert model.training
    model.eval()
    with eval_mode(model):
        pass
    assert not model.training


def test_progress_factory():
    bar = progress_factory(False)(total=3, desc="x")
    bar.update(1)
    bar.set_postfix(loss=1)
    bar.close()
    assert progress_factory(None) is progress and progress_factory(True) is progress
    assert progress_factory(print) is print
    with pytest.raises(TypeError, match="progress must be"):
        progress_factory("yes")


def test_torch_rng_untouched_by_sampling(mlm):
    model, tok = mlm
    torch.manual_seed(5)
    expected = torch.rand(2)
    torch.manual_seed(5)
    neighbors.generate_neighbors([TEXT], model, tok, n_neighbors=2, progress=False)
    perturb.substitute_words([TEXT], model, tok, k=1, n_samples=2)
    assert torch.equal(torch.rand(2), expected)


def test_top_k_sampling_over_candidates_equals_sampling_over_the_vocabulary():
    """sample_candidates (a cumulative sum over each row's top-k ids) draws exactly the ids that
    sample_ids draws from the whole row with only those ids allowed: random rows, rows with fewer
    allowed ids than k, a row whose allowed probabilities all underflow, and uniforms at 0 and
    just under 1."""
    gen = torch.Generator().manual_seed(0)
    n, vocab, k = 400, 300, 20
    logits = torch.randn(n, vocab, generator=gen) * 4
    allowed = torch.rand(n, vocab, generator=gen) < 0.5
    allowed[1, :] = False
    allowed[1, [5, 17, 250]] = True  # fewer allowed ids than k
    logits[2] = -1e4
    logits[2, 0] = 1e4  # every allowed probability but one underflows: uniform over allowed
    allowed[2, 0] = False
    uniforms = torch.rand(n, generator=gen, dtype=torch.float64)
    uniforms[3], uniforms[4] = 0.0, np.nextafter(1.0, 0.0)
    top = logits.masked_fill(~allowed, float("-inf")).topk(k, dim=-1).indices
    keep = torch.zeros_like(allowed).scatter_(1, top, True)
    expected = sample_ids(logits, allowed & keep, uniforms)
    got = sample_candidates(logits, top, allowed.gather(1, top), uniforms)
    assert torch.equal(got, expected)
    assert set(got[1:2].tolist()) <= {5, 17, 250} and bool(allowed[2, got[2]])
