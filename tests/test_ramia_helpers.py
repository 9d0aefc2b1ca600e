"""Helpers of the RaMIA chapter: range ground truth from a training set, repeated sampling,
training-point density, and redacted-text completion."""

import random

import numpy as np
import pytest

from mimirlib.core import metrics
from mimirlib.samplers.neighbors import load_masked_lm, train_masked_lm
from mimirlib.core.range_scores import mix_in, trimmed_average
from mimirlib.samplers.ranges import Range, fill_masked_words, fresh_draws, has_digit, label_ranges, subset_indices

# --------------------------------------------------------------------------- ground truth


def test_label_ranges_checks_every_training_text():
    train = ["a b c d e f", "u v w x y z"]
    ranges = [
        Range("a b c d e q", "hamming", 1),  # one word from a training text: IN
        Range("a b q q e f", "hamming", 1),  # two words away, size 1: OUT
        Range("a b q q e f", "hamming", 2),  # same centre, size 2: IN
        Range("u v w x y", "hamming", 3),  # another word count: never within a Hamming range
        Range("q v w x y z", "hamming", 1, label=False),  # a stale label is overwritten
    ]
    labels = label_ranges(ranges, train)
    assert labels.tolist() == [True, False, True, False, True]
    assert [r.label for r in ranges] == labels.tolist()
    assert labels.dtype == bool


def test_label_ranges_custom_within():
    ranges = [Range("abc", "prefix", 2), Range("xyz", "prefix", 2)]
    labels = label_ranges(ranges, ["abd"], within=lambda c, t, k: c[:k] == t[:k])
    assert labels.tolist() == [True, False]


# --------------------------------------------------------------------------- repeated sampling


def test_subset_indices_are_subsets_without_replacement():
    idx = subset_indices(7, 10, 4, 5, seed=1)
    assert idx.shape == (5, 7, 4)
    assert idx.min() >= 0 and idx.max() < 10
    for it in range(5):
        for r in range(7):
            row = idx[it, r]
            assert len(set(row.tolist())) == 4
            assert np.all(np.diff(row) > 0)
    assert not np.array_equal(idx[0], idx[1])  # iterations differ
    np.testing.assert_array_equal(idx, subset_indices(7, 10, 4, 5, seed=1))  # seeded
    full = subset_indices(3, 6, 6, 2)
    assert (full == np.arange(6)).all()  # n == pool: every sample, in order


def test_subset_indices_pick_scores_consistently():
    scores = np.arange(30.0).reshape(3, 10)
    idx = subset_indices(3, 10, 4, 2, seed=0)
    sub = np.take_along_axis(scores, idx[0], axis=1)
    np.testing.assert_array_equal(sub, scores[np.arange(3)[:, None], idx[0]])


def test_fresh_draws_spread_is_the_sampling_spread_and_pool_subsets_understate_it():
    """The std of the range AUC over iterations, against the truth: the std over independent re-draws
    of every range's samples. Fresh blocks match it; subsets of 10 of one 16-sample pool share most
    samples, and their spread is about sqrt(6/15), some 0.63, of it."""
    rng = np.random.default_rng(0)
    n_ranges, n, its = 60, 10, 30
    y = np.arange(n_ranges) < n_ranges // 2
    centre = 0.6 * y + rng.normal(0, 1, n_ranges)  # what each range's samples scatter around

    def draw(k):
        return centre[:, None] + rng.normal(0, 2, (n_ranges, k))

    def auc_of(samples):
        s = samples.mean(axis=1)
        return metrics.auc(s[y], s[~y])

    truth = np.std([auc_of(draw(n)) for _ in range(300)], ddof=1)
    pool = draw(n * its)
    fresh = [auc_of(np.take_along_axis(pool, i, axis=1)) for i in fresh_draws(n_ranges, n, its)]
    small = draw(16)
    subsets = [auc_of(np.take_along_axis(small, i, axis=1)) for i in subset_indices(n_ranges, 16, n, its, seed=0)]
    assert 0.75 < np.std(fresh, ddof=1) / truth < 1.3
    assert np.std(subsets, ddof=1) / truth < 0.8


def test_subset_indices_validates():
    with pytest.raises(ValueError, match="pool"):
        subset_indices(3, 4, 5, 1)
    with pytest.raises(ValueError, match="n_iterations"):
        subset_indices(3, 4, 2, 0)


# --------------------------------------------------------------------------- density


def test_mix_in_replaces_a_share_of_the_samples():
    s = np.zeros((2, 10))
    out = mix_in(s, [5.0, 7.0], 0.3)
    assert (out[0, :3] == 5.0).all() and (out[0, 3:] == 0.0).all()
    assert (out[1, :3] == 7.0).all()
    assert (s == 0).all()  # the input is not modified
    np.testing.assert_array_equal(mix_in(s, [1.0, 1.0], 0.0), s)
    assert (mix_in(s, [1.0, 2.0], 1.0) == np.array([[1.0], [2.0]])).all()
    assert (mix_in(np.zeros((1, 20)), [1.0], 0.05) == 1.0).sum() == 1  # 0.05 * 20 = 1 sample
    # more copies of a high point score can only raise a bottom-trimmed average
    rng = np.random.default_rng(0)
    base = rng.normal(size=(4, 20))
    prev = trimmed_average(base, 0.2, 1.0)
    for rate in (0.1, 0.25, 0.5):
        cur = trimmed_average(mix_in(base, np.full(4, 10.0), rate), 0.2, 1.0)
        assert (cur >= prev).all()
        prev = cur
    with pytest.raises(ValueError, match="rate"):
        mix_in(s, [1.0, 1.0], 1.5)
    with pytest.raises(ValueError, match="point_scores"):
        mix_in(s, [1.0], 0.5)


def test_has_digit():
    assert has_digit("3.14") and has_digit("v2") and has_digit("2023")
    assert not has_digit("three") and not has_digit("")


# --------------------------------------------------------------------------- redaction

SMALLEST = dict(vocab_size=200, hidden=16, layers=1, heads=1, max_len=64, epochs=1, batch_size=32, lr=5e-3)


def _corpus(n=200, seed=0):
    rng = random.Random(seed)
    return [
        f"Version {rng.randint(1, 9)} adds {rng.randint(10, 99)} fixes and {rng.choice(['3', '4', '5'])} "
        f"{rng.choice(['tests', 'docs', 'files'])} (issue {rng.randint(100, 999)})."
        for _ in range(n)
    ]


@pytest.fixture(scope="module")
def mlm(tmp_path_factory):
    path = train_masked_lm(_corpus(), tmp_path_factory.mktemp("mlm") / "m", seed=0, progress=False, **SMALLEST)
    return load_masked_lm(path)


TEXTS = ["Version 3 adds 42 fixes and 5 tests (issue 123).", "Version adds fixes and tests, no numbers."]


def test_fill_masked_words_changes_only_selected_words(mlm):
    model, tok = mlm
    out = fill_masked_words(TEXTS, model, tok, select=has_digit, n_candidates=6, seed=0, fill=has_digit)
    assert [len(c) for c in out] == [6, 6]
    assert out[1] == [TEXTS[1]] * 6  # nothing to redact
    orig = TEXTS[0].split()
    for cand in out[0]:
        words = cand.split()
        assert len(words) == len(orig)
        for a, b in zip(orig, words):
            if has_digit(a):
                assert has_digit(b)  # numbers are completed with numbers
            else:
                assert a == b  # everything else is byte-identical
        assert cand.endswith(").") and "(issue " in cand
    assert len(set(out[0])) > 1


def test_fill_masked_words_is_deterministic_and_order_free(mlm):
    model, tok = mlm
    a = fill_masked_words(TEXTS, model, tok, select=has_digit, n_candidates=4, seed=3)
    b = fill_masked_words(TEXTS[::-1], model, tok, select=has_digit, n_candidates=4, seed=3, batch_size=1)
    assert a == b[::-1]
    c = fill_masked_words(TEXTS, model, tok, select=has_digit, n_candidates=4, seed=4)
    assert c[0] != a[0]


def test_fill_masked_words_validates(mlm):
    model, tok = mlm
    with pytest.raises(ValueError, match="n_candidates"):
        fill_masked_words(TEXTS, model, tok, select=has_digit, n_candidates=0)
    with pytest.raises(ValueError, match="fill"):
        fill_masked_words(TEXTS, model, tok, select=has_digit, n_candidates=2, fill=lambda w: False)
    with pytest.raises(TypeError):
        fill_masked_words("one text", model, tok, select=has_digit, n_candidates=2)
