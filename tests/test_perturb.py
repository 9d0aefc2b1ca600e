"""Modified members: random token replacement (MIMIR 5) and masked-LM word substitution at an
exact word Hamming distance (RaMIA V-A4), on a tiny masked LM trained in seconds."""

import random
import re

import numpy as np
import pytest

from mimirlib.samplers.neighbors import load_masked_lm, train_masked_lm
from mimirlib.samplers.perturb import (
    _candidate_ids,
    _replace_ids,
    random_token_variants,
    replace_random_tokens,
    substitute_words,
    within_hamming,
    word_hamming,
)
from mimirlib.samplers.ranges import mlm_hamming_sampler, range_game

SUBJECTS = ["The licensee", "A user", "The author", "Each contributor", "The program", "Our parser"]
VERBS = ["copies", "modifies", "distributes", "returns", "reads", "writes", "parses"]
OBJECTS = ["the software", "a copy", "the notice", "this file", "the buffer", "every token", "the value"]
TAILS = ["without warranty.", "under these terms.", "at no charge.", "in source form.", "as is."]
SMALLEST = dict(vocab_size=200, hidden=16, layers=1, heads=1, max_len=64, epochs=1, batch_size=32, lr=5e-3)

TEXTS = [
    "The licensee copies the software without warranty.",
    "A user reads  the notice,\n    as is (really) -- and writes this file.",
    "Each contributor modifies every token at no charge.",
]


def corpus(n=150, seed=0):
    rng = random.Random(seed)
    return [
        " ".join([rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(OBJECTS), rng.choice(TAILS)]) for _ in range(n)
    ]


@pytest.fixture(scope="module")
def mlm(tmp_path_factory):
    path = train_masked_lm(corpus(), tmp_path_factory.mktemp("mlm") / "m", seed=0, progress=False, **SMALLEST)
    return load_masked_lm(path)


@pytest.fixture(scope="module")
def target_tok(tiny_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tiny_model_dir))


# --------------------------------------------------------------------------- Hamming distance


def test_word_hamming_hand_values():
    assert word_hamming("a b c d", "a b c d") == 0
    assert word_hamming("a b c d", "a x c y") == 2
    assert word_hamming("a  b\nc", "a b c") == 0  # whitespace runs do not count
    assert word_hamming("terms.", "terms") == 1  # words, punctuation included
    # other word counts: padded with empty words (positional mismatches + length difference)
    assert word_hamming("a b", "a b c") == 1
    assert word_hamming("a b c", "x a b c") == 4


def test_within_hamming():
    assert within_hamming("a b c", "a x c", 1)
    assert not within_hamming("a b c", "x y c", 1)
    assert not within_hamming("a b c", "a b", 5)  # other length: outside every Hamming range


# --------------------------------------------------------------------------- random tokens


def test_replace_ids_changes_exactly_n_positions_with_non_special_tokens(target_tok):
    cands = _candidate_ids(target_tok)
    special = set(target_tok.all_special_ids)
    assert special and not special & set(cands.tolist())
    ids = target_tok("the model reads every token of the text", add_special_tokens=False)["input_ids"]
    rng = np.random.default_rng(0)
    for n in (0, 1, 3, len(ids)):
        new, pos = _replace_ids(ids, n, cands, rng)
        diff = [p for p, (a, b) in enumerate(zip(ids, new)) if a != b]
        assert diff == pos.tolist() and len(diff) == n
        assert not special & {new[p] for p in diff}
    with pytest.raises(ValueError, match="only"):
        _replace_ids(ids, len(ids) + 1, cands, rng)
    new, pos = _replace_ids(ids, 2, cands, rng, max_tokens=3)
    assert pos.max() < 3 and new[3:] == ids[3:]


def test_replace_ids_draws_the_whole_vocabulary_uniformly():
    cands = np.arange(5, 15)  # 10 candidates
    rng = np.random.default_rng(1)
    drawn = [_replace_ids([0], 1, cands, rng)[0][0] for _ in range(5000)]
    counts = np.bincount(drawn, minlength=15)[5:]
    assert counts.min() > 400 and counts.max() < 600  # ~500 each
    # never the token already there: with two candidates, a replacement is always the other one
    new, _ = _replace_ids([1, 2, 1, 2], 4, np.array([1, 2]), rng)
    assert new == [2, 1, 2, 1]


def test_replace_random_tokens(target_tok):
    text = "membership inference asks whether a sample was part of the training data"
    assert replace_random_tokens(text, target_tok, 0, 0) == text  # decode round-trips
    a = replace_random_tokens(text, target_tok, 3, np.random.default_rng(7))
    b = replace_random_tokens(text, target_tok, 3, 7)
    assert a == b and a != text


def test_random_token_variants_are_per_text_deterministic(target_tok):
    texts = ["the model reads every token", "the next one from what came before the text"]
    v = random_token_variants(texts, target_tok, 2, n_trials=5, seed=3)
    assert [len(r) for r in v] == [5, 5]
    assert all(x != t for t, row in zip(texts, v) for x in row)
    assert random_token_variants(texts[::-1], target_tok, 2, n_trials=5, seed=3) == v[::-1]
    assert random_token_variants(texts, target_tok, 2, n_trials=5, seed=4) != v
    with pytest.raises(ValueError, match=r"texts\[0\]"):
        random_token_variants(["the"], target_tok, 25)


# --------------------------------------------------------------------------- word substitution


@pytest.mark.parametrize("k", [1, 3])
def test_substitute_words_exact_distance_and_distinct(mlm, k):
    model, tok = mlm
    out = substitute_words(TEXTS, model, tok, k=k, n_samples=6, seed=0)
    assert [len(v) for v in out] == [6, 6, 6]
    for text, variants in zip(TEXTS, out):
        assert len(set(variants)) == 6 and text not in variants
        for v in variants:
            assert word_hamming(text, v) == k
            assert re.findall(r"\s+", v) == re.findall(r"\s+", text)  # whitespace byte-identical
            for w, x in zip(text.split(), v.split()):
                if w != x:  # a changed word keeps its punctuation and is another word, not a recasing
                    assert re.sub(r"\w", "", w) == re.sub(r"\w", "", x)
                    assert w.strip(".,()").casefold() != x.strip(".,()").casefold()
    # the lone "--" has no core: it is never replaced
    assert all(v.split()[8] == "--" for v in out[1])


def test_substitute_words_is_deterministic_and_order_free(mlm):
    model, tok = mlm
    a = substitute_words(TEXTS, model, tok, k=2, n_samples=4, seed=1)
    b = substitute_words(TEXTS[::-1], model, tok, k=2, n_samples=4, seed=1, batch_size=3)
    assert a == b[::-1]
    assert substitute_words(TEXTS, model, tok, k=2, n_samples=4, seed=2) != a


def test_substitute_words_can_replace_every_word(mlm):
    model, tok = mlm
    text = "The author returns a copy."
    (variants,) = substitute_words([text], model, tok, k=5, n_samples=3, seed=0)
    assert all(word_hamming(text, v) == 5 and v.endswith(".") for v in variants)


def test_substitute_words_errors_name_the_text(mlm):
    model, tok = mlm
    with pytest.raises(ValueError, match=r"texts\[1\].*fewer than k=3"):
        substitute_words(["The author returns a copy.", "a -- b"], model, tok, k=3, n_samples=1)
    with pytest.raises(ValueError, match=r"texts\[0\].*distinct"):
        substitute_words(["copy"], model, tok, k=1, n_samples=50, top_k=2, max_rounds=2)
    with pytest.raises(ValueError, match="k must be"):
        substitute_words(TEXTS, model, tok, k=0, n_samples=1)


def test_range_game_with_the_mlm_sampler(mlm):
    model, tok = mlm
    sampler = mlm_hamming_sampler(model, tok)
    members, nonmembers = TEXTS[:2], [TEXTS[2], "Our parser writes the buffer under these terms."]
    ranges = range_game(
        members,
        nonmembers,
        alpha=2,
        size=3,
        n_samples=5,
        sampler=sampler,
        perturb=lambda texts, a, s: [v[0] for v in sampler(texts, a, 1, s)],
        seed=0,
    )
    assert [r.label for r in ranges] == [True, True, False, False]
    for r in ranges:
        assert word_hamming(r.source, r.centre) == 2
        assert all(word_hamming(r.centre, x) == 3 for x in r.samples) and len(set(r.samples)) == 5


def test_words_changed_aligns_insertions():
    from mimirlib.samplers.perturb import words_changed

    a = "the quick brown fox jumps over the lazy dog"
    assert words_changed(a, a) == 0.0
    assert words_changed(a, "the quick brown cat jumps over the lazy dog") == pytest.approx(1 / 9)
    # an inserted word shifts positions but changes nothing else
    assert words_changed(a, "the quick brown fox really jumps over the lazy dog") == 0.0
    assert words_changed(a, "") == 1.0


# --------------------------------------------------------------------------- random words (the size-matched control)


def test_replace_random_words_changes_exactly_k_whole_words_from_the_pool():
    from mimirlib.samplers.perturb import replace_random_words, word_hamming, word_pool

    text = "The licensee, copies (the) software.\n  Then - it reads\tthe notice..."
    pool = word_pool(["alpha beta, (gamma)", "delta the"])
    assert pool == ["alpha", "beta", "gamma", "delta", "the"]
    for k in range(0, 11):
        out = replace_random_words(text, k, pool, k)
        assert word_hamming(text, out) == k
        assert [m for m in re.findall(r"\s+", out)] == re.findall(r"\s+", text)  # whitespace kept
        for a, b in zip(text.split(), out.split()):
            if a != b:
                core = b.strip("(),.")
                assert core in pool and core.casefold() != a.strip("(),.").casefold()
                assert b.replace(core, "", 1) == a.replace(a.strip("(),."), "", 1)  # punctuation kept
    assert replace_random_words(text, 3, pool, 5) == replace_random_words(text, 3, pool, np.random.default_rng(5))
    with pytest.raises(ValueError, match="only 10 replaceable"):
        replace_random_words(text, 11, pool, 0)
    with pytest.raises(ValueError, match="no word other than 'the'"):
        replace_random_words("the", 1, ["The", "THE"], 0)
    with pytest.raises(ValueError, match="empty"):
        replace_random_words(text, 1, [], 0)
    with pytest.raises(ValueError, match="k must be"):
        replace_random_words(text, -1, pool, 0)
