"""RaMIA's ranges of texts (mimirlib.samplers.ranges): the restoring sampler, fresh draws, the range game."""

import numpy as np
import pytest

from mimirlib.samplers import ranges as R
from mimirlib.samplers.perturb import word_hamming
from mimirlib.samplers.ranges import Range, range_game, range_labels, score_ranges


# --------------------------------------------------------------------------- the restoring sampler


def restoring_case(seed: int, n_words: int = 60, alpha: int = 10, d: int = 20):
    """A source text (with newlines), a centre alpha words away, and a sample d words from the centre."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(n_words)]
    seps = ["\n" if i % 7 == 6 else " " for i in range(n_words)]
    source = "".join(w + s for w, s in zip(words, seps)).rstrip()
    moved = rng.choice(n_words, alpha, replace=False)
    cw = list(words)
    for i in moved:
        cw[i] = f"c{i}"
    filled = rng.choice(n_words, d, replace=False)
    sw = list(cw)
    for i in filled:
        sw[i] = f"s{i}"
    centre = "".join(w + s for w, s in zip(cw, seps)).rstrip()
    sample = "".join(w + s for w, s in zip(sw, seps)).rstrip()
    return source, centre, sample


def test_restore_words_runs_from_the_sample_to_the_source():
    source, centre, sample = restoring_case(0)
    assert R.restore_words(source, sample, 0.0, centre=centre, size=20) == sample  # today's sampler
    assert R.restore_words(source, sample, 1.0, centre=centre, size=20) == source  # the text itself, byte for byte
    assert word_hamming(R.restore_words(source, sample, 0.0), source) == word_hamming(sample, source)


def test_restore_words_nests_stays_in_the_range_and_closes_in_linearly():
    ps = [0.0, 0.25, 0.5, 0.75, 1.0]
    mean_dist = np.zeros(len(ps))
    for seed in range(40):
        source, centre, sample = restoring_case(seed)
        prev = None
        for j, p in enumerate(ps):
            out = R.restore_words(source, sample, p, seed=3, centre=centre, size=20)
            assert word_hamming(out, centre) <= 20  # never leaves the range
            if prev is not None:  # a larger p puts back a superset of the words
                back_prev = {i for i, (a, b) in enumerate(zip(prev.split(), source.split())) if a == b}
                back = {i for i, (a, b) in enumerate(zip(out.split(), source.split())) if a == b}
                assert back_prev <= back
            prev = out
            mean_dist[j] += word_hamming(out, source) / 40
    d0 = mean_dist[0]
    assert np.all(np.diff(mean_dist) < 0) and mean_dist[-1] == 0
    np.testing.assert_allclose(mean_dist, [(1 - p) * d0 for p in ps], atol=0.12 * d0)  # about (1 - p) times
    # without the range check a restoration may leave it: the check is what keeps samples inside
    cases = [restoring_case(k, alpha=20, d=20) for k in range(40)]
    assert any(word_hamming(R.restore_words(s, x, 0.3, seed=k), c) > 20 for k, (s, c, x) in enumerate(cases))
    assert all(
        word_hamming(R.restore_words(s, x, 0.3, seed=k, centre=c, size=20), c) <= 20
        for k, (s, c, x) in enumerate(cases)
    )


def test_restore_words_is_seeded_and_validates():
    source, centre, sample = restoring_case(1)
    a = R.restore_words(source, sample, 0.5, seed=1)
    assert a == R.restore_words(source, sample, 0.5, seed=1)
    assert a != R.restore_words(source, sample, 0.5, seed=2)
    assert R.restore_words(source, "one two", 1.0) == "one two"  # another word count: left as is
    with pytest.raises(ValueError, match="p must be"):
        R.restore_words(source, sample, 1.5)


def test_fresh_draws_are_disjoint_blocks_of_the_pool():
    idx = R.fresh_draws(3, 4, 5)
    assert idx.shape == (5, 3, 4)
    for r in range(3):
        np.testing.assert_array_equal(np.sort(idx[:, r].ravel()), np.arange(20))  # each sample used once
    assert all(not set(idx[a, 0]) & set(idx[b, 0]) for a in range(5) for b in range(a))
    pool = np.arange(60.0).reshape(3, 20)
    np.testing.assert_array_equal(np.take_along_axis(pool, idx[1], axis=1), pool[:, 4:8])
    with pytest.raises(ValueError, match="n_iterations"):
        R.fresh_draws(3, 4, 0)


# --------------------------------------------------------------------------- the range game


def _swap(text, n, tag):
    """Replace the first n words by tagged words: word Hamming distance exactly n."""
    words = text.split()
    return " ".join([f"{tag}{j}" for j in range(n)] + words[n:])


def stub_perturb(texts, alpha, seed):
    return [_swap(t, alpha, "c") for t in texts]


def stub_sampler(centres, size, n, seed):
    # sample j changes words from the end: distance exactly `size` from the centre
    out = []
    for c in centres:
        words = c.split()
        out.append([" ".join(words[:-size] + [f"s{j}x{m}" for m in range(size)]) for j in range(n)])
    return out


MEMBERS = ["the cat sat on the mat today", "a dog ran in the park again"]
NONMEMBERS = ["we read every token of the text", "membership asks whether a sample was seen"]


def test_range_game_builds_labelled_ranges():
    ranges = range_game(MEMBERS, NONMEMBERS, alpha=2, size=3, n_samples=4, perturb=stub_perturb, sampler=stub_sampler)
    assert [r.label for r in ranges] == [True, True, False, False]
    np.testing.assert_array_equal(range_labels(ranges), [True, True, False, False])
    for r, src in zip(ranges, MEMBERS + NONMEMBERS):
        assert r.source == src and r.function == "hamming" and r.size == 3 and r.alpha == 2
        assert len(r.samples) == 4
        assert r.centre == _swap(src, 2, "c")


def test_range_game_alpha_beyond_the_range_size_is_out():
    ranges = range_game(MEMBERS, NONMEMBERS, alpha=4, size=3, n_samples=2, perturb=stub_perturb, sampler=stub_sampler)
    assert not any(r.label for r in ranges)  # the member is 4 words away: outside the range


def test_range_game_labels_by_content_not_by_origin():
    # a "non-member" one word away from a member: its range contains that member, so it is IN
    near = "the cat sat on the mat yesterday"
    ranges = range_game(MEMBERS, [near], alpha=0, size=1, n_samples=2, sampler=stub_sampler)
    assert [r.label for r in ranges] == [True, True, True]


def test_score_ranges_shapes_point_scores():
    ranges = [Range("a b", "hamming", 1, ["x", "yy", "zzz"]), Range("c d", "hamming", 1, ["1", "22", "4444"])]
    scores = score_ranges(ranges, lambda texts: [len(t) for t in texts])
    np.testing.assert_array_equal(scores, [[1, 2, 3], [1, 2, 4]])
    with pytest.raises(ValueError, match="same"):
        score_ranges([ranges[0], Range("e", "hamming", 1, ["q"])], lambda t: [0] * len(t))
