"""N-gram overlap: exact index against a brute-force reference, Bloom index against exact."""

import os
import random
import subprocess
import sys

import numpy as np
import pytest

from mimirlib import ngrams
from mimirlib.ngrams import NgramIndex, ngram_key, overlap_table


def brute_overlap(text, train_texts, n):
    """Reference straight from the definition: tuples of words, no hashing."""
    train = {tuple(w[i : i + n]) for t in train_texts if t for w in [t.split()] for i in range(len(w) - n + 1)}
    w = text.split()
    grams = [tuple(w[i : i + n]) for i in range(len(w) - n + 1)]
    return sum(g in train for g in grams) / len(grams) if grams else 0.0


TRAIN = [
    "the cat sat on the mat and the cat sat on the hat",
    "a b c d e f g",
    "naïve café — 東京 タワー über straße naïve café",
    None,
    "",
    "x y",
]
QUERIES = [
    "the cat sat on the mat",  # fully contained
    "the cat sat on the hat and the dog sat",  # partly contained
    "the cat the cat the cat sat on",  # repeated n-grams, each counted every time
    "a b c z e f g",  # one word breaks several n-grams
    "naïve café — 東京 タワー über",  # unicode words
    "naive cafe — 東京 タワー über",  # unicode: no normalisation, different words
    "x y",  # shorter than n for n >= 3
    "",
    "one",
]


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_exact_matches_brute_force(n):
    index = NgramIndex.build(TRAIN, n, mode="exact")
    got = index.overlaps(QUERIES)
    want = np.array([brute_overlap(q, TRAIN, n) for q in QUERIES])
    np.testing.assert_allclose(got, want)
    # and the original set-based helper agrees
    np.testing.assert_allclose(ngrams.overlaps(QUERIES, ngrams.ngram_set([t for t in TRAIN if t], n), n), want)


def test_hand_values():
    index = NgramIndex.build(TRAIN, 3, mode="exact")
    assert index.overlap("the cat sat on the mat") == 1.0
    assert index.overlap("a b c z e f g") == pytest.approx(2 / 5)  # abc, efg of 5 trigrams
    assert index.overlap("x y") == 0.0  # shorter than n
    assert index.overlap(None) == 0.0
    assert index.contains("on the mat") and index.contains(("東京", "タワー", "über"))
    assert not index.contains("on the rug")
    with pytest.raises(ValueError, match="3-gram"):
        index.contains("on the")
    assert index.n_added == 11 + 5 + 7  # None, "" and "x y" add nothing


def test_bad_arguments():
    with pytest.raises(ValueError, match="mode"):
        NgramIndex.build(TRAIN, 3, mode="approx")
    with pytest.raises(ValueError, match="false-positive"):
        NgramIndex.build(TRAIN, 3, fpr=0.0)
    with pytest.raises(ValueError, match=">= 1"):
        NgramIndex.build(TRAIN, 0)


def random_texts(rng, count, vocab, lo=20, hi=80):
    return [" ".join(rng.choice(vocab) for _ in range(rng.randint(lo, hi))) for _ in range(count)]


@pytest.fixture(scope="module")
def random_corpus():
    rng = random.Random(0)
    vocab = [f"w{i}" for i in range(50)]  # small vocabulary: many shared 3-grams, few shared 5-grams
    return random_texts(rng, 2000, vocab), random_texts(rng, 3000, vocab)


@pytest.mark.parametrize("n,fpr", [(3, 0.01), (5, 0.01), (5, 0.05)])
def test_bloom_never_under_reports_and_stays_within_fpr(random_corpus, n, fpr):
    train, queries = random_corpus
    exact = NgramIndex.build(train, n, mode="exact").overlaps(queries)
    bloom = NgramIndex.build(train, n, mode="bloom", fpr=fpr).overlaps(queries)
    excess = bloom - exact
    assert (excess >= 0).all(), "a Bloom filter has no false negatives"
    assert 0 < exact.mean() < 1  # the corpus exercises both hits and misses
    # a false positive can only occur on an absent n-gram, at rate <= fpr
    assert excess.mean() <= 2 * fpr * (1 - exact.mean()) + 1e-3
    # and no text is pushed far above its exact value (texts have 16-78 n-grams)
    assert np.quantile(excess, 0.99) <= 2 * fpr + 0.1 and excess.max() <= 0.3


def test_bloom_is_sized_for_fpr():
    texts = [" ".join(f"t{i}_{j}" for j in range(100)) for i in range(100)]  # 9,600 distinct 5-grams
    small = NgramIndex.build(texts, 5, fpr=0.1)
    tight = NgramIndex.build(texts, 5, fpr=0.001)
    assert tight.memory_bytes > 2.5 * small.memory_bytes
    assert small.memory_bytes < NgramIndex.build(texts, 5, mode="exact").memory_bytes / 10


def test_key_is_stable_across_processes():
    grams = [("the", "cat", "sat"), ("naïve", "東京", "タワー"), ("a",)]
    code = (
        "from mimirlib.ngrams import ngram_key, NgramIndex;"
        f"print([ngram_key(g) for g in {grams!r}]);"
        "print(NgramIndex.build(['a b c d e f', 'x y z'], 3).overlaps(['a b c q', 'y z w x y z']).tolist())"
    )
    runs = []
    for seed in ("1", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        runs.append(out.stdout)
    assert runs[0] == runs[1]
    assert runs[0].splitlines()[0] == str([ngram_key(g) for g in grams])
    assert all(-(2**63) <= ngram_key(g) < 2**63 for g in grams)
    assert ngram_key(("ab", "c")) != ngram_key(("a", "bc"))


@pytest.mark.parametrize("mode", ["exact", "bloom"])
def test_overlap_table(mode):
    train = iter(TRAIN)  # a one-shot iterable must serve every n
    table = overlap_table(QUERIES, train, ns=(1, 3), mode=mode)
    assert list(table.columns) == ["ngram_1", "ngram_3"]
    assert len(table) == len(QUERIES)
    want = [brute_overlap(q, TRAIN, 3) for q in QUERIES]
    if mode == "exact":
        np.testing.assert_allclose(table["ngram_3"], want)
    else:
        assert (table["ngram_3"].to_numpy() >= np.array(want)).all()
    assert table["ngram_1"].iloc[0] == 1.0 and table["ngram_3"].iloc[6] == 0.0
