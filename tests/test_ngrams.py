"""N-gram overlap: exact index against a brute-force reference and the pre-vectorised loop,
Bloom index against exact and its design bound, shards against one build, corpus files."""

import json
import math
import os
import random
import subprocess
import sys

import numpy as np
import pytest

from mimirlib.core import bloom as bloom_filter
from mimirlib.core import ngram_keys, ngrams
from mimirlib.core.bloom import BlockedBloom
from mimirlib.core.ngram_keys import ngram_key
from mimirlib.core.ngrams import LoopNgramIndex, NgramIndex, overlap_table


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


M64 = (1 << 64) - 1


def py_mix(x):
    """splitmix64's finaliser on Python ints."""
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & M64
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def py_word_hash(word):
    """The word hash as ngram_keys.py's docstring states it: first 8 bytes (little-endian) plus the
    length times 0x9FB21C651E98DF25, mixed; each further 8 bytes XORed in and mixed."""
    b = word.encode("utf-8")
    h = py_mix((int.from_bytes(b[:8], "little") + len(b) * 0x9FB21C651E98DF25) & M64)
    for off in range(8, len(b), 8):
        h = py_mix(h ^ int.from_bytes(b[off : off + 8], "little"))
    return h


def py_keys(text, n):
    """Mixed polynomial hash sum(word_hash[i + t] * B**t) mod 2**64 of every n-gram, in order."""
    h = [py_word_hash(w) for w in text.split()]
    base = ngram_keys._WORD_BASE
    return [py_mix(sum(h[i + t] * pow(base, t, 1 << 64) for t in range(n)) & M64) for i in range(len(h) - n + 1)]


@pytest.mark.parametrize("n", [1, 2, 5])
def test_compiled_keys_equal_the_definition(n):
    """The compiled word hashes and rolling windows against the definition in Python integers: words
    of 1 to 24 bytes (one, two and three 8-byte reads), multi-byte characters, texts of every length
    around n in one chunk (no window spans two texts)."""
    rng = random.Random(n)
    alphabet = "abcdefghij" + "éß東京"
    texts = [
        " ".join("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12))) for _ in range(m)) for m in range(9)
    ]
    texts += ["x" * length for length in range(1, 25)] + [" ".join("y" * length for length in range(1, 25))]
    keys, owner, counts = ngram_keys._chunk_keys(texts, n)
    expected = [k for t in texts for k in py_keys(t, n)]
    assert [int(k) for k in keys] == expected
    assert counts.tolist() == [max(len(t.split()) - n + 1, 0) for t in texts]
    assert owner.tolist() == [i for i, c in enumerate(counts) for _ in range(c)]


def test_compiled_bloom_sets_the_stated_bits():
    """Each key sets, in block ((key >> 32) * blocks) >> 32, the pattern numbered (key ^ salt) & 0xFFFF."""
    patterns = bloom_filter._patterns(4)

    def slot(key):
        return ((key >> 32) * 37) >> 32, int(patterns[(key ^ int(bloom_filter.SALT)) & 0xFFFF])

    rng = random.Random(1)
    keys = np.array([rng.getrandbits(64) for _ in range(300)], dtype=np.uint64)
    bloom = BlockedBloom(37, 4)
    bloom.add(keys)
    expected = [0] * 37
    for block, pattern in map(slot, map(int, keys)):
        expected[block] |= pattern
    assert bloom.bits.tolist() == expected
    assert bloom.contains(keys).all()
    others = np.array([rng.getrandbits(64) for _ in range(2000)], dtype=np.uint64)
    hit = [expected[block] & pattern == pattern for block, pattern in map(slot, map(int, others))]
    assert bloom.contains(others).tolist() == hit
    assert 0 < sum(hit) < len(hit)  # both answers occur, so the comparison means something


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
    exact = NgramIndex.build(texts, 5, mode="exact")
    assert exact.n_distinct == 9600 and exact.memory_bytes == 8 * 9600
    assert tight.memory_bytes > 2.5 * small.memory_bytes
    assert small.memory_bytes < exact.memory_bytes / 8  # under one byte per n-gram at 10%
    for index, fpr in ((small, 0.1), (tight, 0.001)):
        assert index.design_fpr <= fpr  # sized for the count, so at most the target
        assert index.design_fpr > fpr / 2  # and not wastefully larger than needed


def test_key_is_stable_across_processes():
    grams = [("the", "cat", "sat"), ("naïve", "東京", "タワー"), ("a",)]
    code = (
        "from mimirlib.core.ngram_keys import ngram_key; from mimirlib.core.ngrams import NgramIndex;"
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


# --- the vectorised path in detail ------------------------------------------------------------


def test_whitespace_is_exactly_str_split():
    """The byte table plus the non-ASCII pattern are exactly str.isspace()'s characters."""
    unicode_ws = {c for c in range(0x110000) if chr(c).isspace()}
    ascii_ws = {b for b in range(128) if ngram_keys._WS_TABLE[b]}
    assert not ngram_keys._WS_TABLE[128:].any()  # no byte of a multi-byte character is a separator
    rewritten = {c for c in range(128, 0x110000) if ngram_keys._UNICODE_WS.fullmatch(chr(c))}
    assert ascii_ws | rewritten == unicode_ws
    odd = "a\xa0b\u3000c\x1cd\x85e\u2028f\tg\u200bh  i\u00e9\u2009j"  # \u200b is not whitespace
    keys = ngram_keys.ngram_keys_array(odd, 1)
    assert keys.size == len(odd.split()) == 9
    assert [int(k) for k in keys.view(np.int64)] == [ngram_key((w,)) for w in odd.split()]


def test_non_ascii_whitespace_is_found_in_the_utf8_bytes():
    """Every character whose UTF-8 lead byte could start a whitespace sequence (U+0080..U+3FFF),
    between two letters: the words are str.split()'s, whatever the neighbours, and an all-ASCII
    chunk (which skips the search) splits as str.split() too."""
    text = "".join(f"x{chr(c)}y" for c in range(0x80, 0x4000))
    words = text.split()
    keys = ngram_keys.ngram_keys_array(text, 1)
    assert keys.size == len(words) == 1 + sum(chr(c).isspace() for c in range(0x80, 0x4000))
    np.testing.assert_array_equal(keys, ngram_keys.ngram_keys_array(" ".join(words), 1))
    ascii_text = "".join(chr(c) + "z" for c in range(128))
    assert ngram_keys.ngram_keys_array(ascii_text, 1).size == len(ascii_text.split())


@pytest.mark.parametrize("n", [1, 2, 5])
def test_odd_texts_match_brute_force(n):
    train = ["ab ab\x00 a b\x00", "x \ud800 y z", "\u00e9t\u00e9 \u00e9t\u00e9", "  lead and trail  ", "\n\n"]
    queries = [
        "ab\x00 a b\x00 q",
        "ab a b",
        "x \ud800 y z w",
        "\u00e9t\u00e9 \u00e9t\u00e9 \u00e9t\u00e9",
        "lead and trail",
        " ",
    ]
    got = NgramIndex.build(train, n, mode="exact").overlaps(queries)
    np.testing.assert_allclose(got, [brute_overlap(q, train, n) for q in queries])


def test_chunk_size_does_not_change_answers(monkeypatch, random_corpus):
    train, queries = random_corpus
    whole = NgramIndex.build(train, 4, mode="exact")
    want = whole.overlaps(queries)
    monkeypatch.setattr(ngram_keys, "CHUNK_BYTES", 997)  # chunks of a few texts, cut anywhere
    small = NgramIndex.build(train, 4, mode="exact")
    assert small.n_added == whole.n_added and small.n_distinct == whole.n_distinct
    np.testing.assert_array_equal(small.overlaps(queries), want)


def test_matches_the_loop_baseline(random_corpus):
    train, queries = random_corpus
    for n in (2, 3, 5):
        new = NgramIndex.build(train, n, mode="exact")
        old = LoopNgramIndex.build(train, n, mode="exact")
        np.testing.assert_array_equal(new.overlaps(queries), old.overlaps(queries))
        assert new.n_added == old.n_added and new.n_distinct == len(old._store)


def test_same_answers_as_before_on_the_smoke_lab(smoke_lab):
    """Old (the lab build's tuple-hash sets, the loop index) and new agree exactly on the lab's
    own corpus and held-out texts, at the paper's n."""
    train = smoke_lab.pool_texts("train")
    queries = smoke_lab.pool_texts("heldout")
    assert len(train) > 50 and len(queries) > 10
    for n in (4, 7, 13):
        new = NgramIndex.build(train, n, mode="exact").overlaps(queries)
        np.testing.assert_array_equal(new, ngrams.overlaps(queries, ngrams.ngram_set(train, n), n))
        np.testing.assert_array_equal(new, LoopNgramIndex.build(train, n, mode="exact").overlaps(queries))
        assert 0 < new.mean() < 1
        bloom = NgramIndex.build(train, n, mode="bloom").overlaps(queries)
        assert (bloom >= new).all()


# --- the blocked Bloom filter -------------------------------------------------------------------


def test_design_rate_formula():
    # one bit per item: a query bit is set with probability 1 - (63/64)^j, so the rate is
    # E_j[1 - (63/64)^j] = 1 - exp(-load / 64) for Poisson j
    for load in (0.5, 3.0, 20.0):
        assert bloom_filter.blocked_bloom_fpr(load, 1) == pytest.approx(1 - math.exp(-load / 64), rel=1e-9)
    assert bloom_filter.blocked_bloom_fpr(0, 7) == 0.0
    assert bloom_filter.blocked_bloom_fpr(3.0, 5) < bloom_filter.blocked_bloom_fpr(6.0, 5)  # fuller is worse
    k, load = bloom_filter.bloom_geometry(0.01)
    assert 4 <= k <= 10 and bloom_filter.blocked_bloom_fpr(load, k) <= 0.01
    assert 64 / load < 14  # bits per item at 1%: a little above the classic filter's 9.6


@pytest.mark.parametrize("fpr", [0.01, 0.05])
def test_measured_false_positives_match_the_design(fpr):
    rng = np.random.default_rng(0)
    items = 200_000
    bloom = BlockedBloom.for_items(items, fpr)
    keys = np.unique(rng.integers(0, 2**64 - 1, 3 * items, dtype=np.uint64, endpoint=True))
    keys = rng.permutation(keys)  # distinct, uniform over all 64 bits, as the mixed n-gram keys are
    present, absent = keys[:items], keys[items:]
    bloom.add(present)
    assert bloom.contains(present).all()  # no false negatives
    measured = bloom.contains(absent).mean()
    design = bloom.design_fpr()
    assert design <= fpr
    sd = math.sqrt(design * (1 - design) / absent.size)
    assert abs(measured - design) < 5 * sd + 0.05 * design, (measured, design)


def test_bloom_insert_with_colliding_blocks():
    bloom = BlockedBloom(1, 3)  # one block: every key collides in the same batch
    keys = np.arange(1, 40, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    bloom.add(keys)
    assert bloom.contains(keys).all()
    with pytest.raises(ValueError, match="geometry"):
        bloom.union(BlockedBloom(2, 3))


# --- shards -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["exact", "bloom"])
def test_shards_merge_to_the_single_build(random_corpus, mode):
    train, queries = random_corpus
    one = NgramIndex.build(train, 3, mode=mode)
    sharded = ngrams.build_sharded(train, 3, mode=mode, shards=3)
    assert sharded.n_added == one.n_added
    if mode == "bloom":
        np.testing.assert_array_equal(sharded._bloom.bits, one._bloom.bits)  # OR of shards == one filter
    else:
        assert sharded.n_distinct == one.n_distinct  # (sorts the pending keys of both)
        np.testing.assert_array_equal(sharded._keys, one._keys)
    np.testing.assert_array_equal(sharded.overlaps(queries), one.overlaps(queries))


def test_merge_refuses_other_geometry():
    a = NgramIndex.build(["a b c d"], 2, mode="bloom")
    b = NgramIndex.build(["a b c d " * 500], 2, mode="bloom")
    with pytest.raises(ValueError, match="geometry"):
        a.merge(b)
    with pytest.raises(ValueError, match="3-gram"):
        a.merge(NgramIndex.build(["a b c d"], 3, mode="bloom"))
    with pytest.raises(ValueError, match="engine"):
        ngrams.build_sharded(["a b"], 1, engine="spark")


# --- a training corpus on disk -----------------------------------------------------------------


def test_corpus_files_and_overlap(tmp_path):
    import pandas as pd

    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "a.txt").write_text(TRAIN[0], encoding="utf-8")
    with open(tmp_path / "c" / "b.jsonl", "w", encoding="utf-8") as f:
        for t in TRAIN[1:3]:
            f.write(json.dumps({"text": t, "meta": 1}) + "\n")
        f.write(json.dumps({"text": None}) + "\n")
    pd.DataFrame({"text": [TRAIN[5]]}).to_parquet(tmp_path / "c" / "d.parquet")
    files = ngrams.corpus_files(tmp_path / "c")
    assert [f.name for f in files] == ["a.txt", "b.jsonl", "d.parquet"]
    assert ngrams.corpus_files(str(tmp_path / "c" / "*.jsonl")) == [tmp_path / "c" / "b.jsonl"]
    for mode in ("exact", "bloom"):
        res = ngrams.corpus_overlap(QUERIES, files, n=3, mode=mode)
        want = [brute_overlap(q, TRAIN, 3) for q in QUERIES]
        if mode == "exact":
            np.testing.assert_allclose(res.overlap, want)
        assert (res.overlap >= np.array(want)).all()
        assert res.documents == 4 and res.files == 3
        assert res.summary()["fail decontamination (> 80%)"] == int((res.overlap > 0.8).sum()) >= 1
    with pytest.raises(ValueError, match="no column 'body'"):
        ngrams.corpus_overlap(QUERIES, files, n=3, column="body")


def test_txt_corpus_read_in_pieces_is_exact(tmp_path, monkeypatch):
    rng = random.Random(1)
    vocab = [f"v{i}" for i in range(8)]
    lines = [" ".join(rng.choice(vocab) for _ in range(rng.randint(0, 9))) for _ in range(400)]
    doc = "\n".join(lines) + "\n"
    (tmp_path / "big.txt").write_text(doc, encoding="utf-8")
    queries = random_texts(rng, 50, vocab, 5, 30)
    monkeypatch.setattr(ngram_keys, "CHUNK_BYTES", 64)  # dozens of pieces, cut between lines
    assert len(list(ngrams.corpus_texts(tmp_path / "big.txt", n=5))) > 20
    res = ngrams.corpus_overlap(queries, [tmp_path / "big.txt"], n=5, mode="exact")
    np.testing.assert_allclose(res.overlap, [brute_overlap(q, [doc], 5) for q in queries])
    assert res.ngrams == len(doc.split()) - 4 and res.documents == 1


def test_corpus_files_errors(tmp_path):
    with pytest.raises(ValueError, match="no such file"):
        ngrams.corpus_files(tmp_path / "missing.jsonl")
    with pytest.raises(ValueError, match="matches no"):
        ngrams.corpus_files(str(tmp_path / "*.jsonl"))
    (tmp_path / "x.csvx").write_text("a")
    with pytest.raises(ValueError, match="unsupported"):
        ngrams.corpus_files(str(tmp_path / "x.*"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="matches no"):
        ngrams.corpus_files(tmp_path / "empty")


def test_warm_up_compiles_every_kernel_a_build_and_query_use():
    """In a fresh process (numba compiles lazily, per process), ``warm_up`` leaves every compiled
    kernel of the index with a compiled signature, so that a build timed after it times no compile."""
    kernels = [
        "ngram_keys.splitmix64",
        "ngram_keys._hash_words",
        "ngram_keys._window_keys",
        "bloom._bloom_add",
        "bloom._bloom_contains",
    ]
    code = (
        "from mimirlib.core import bloom, ngram_keys, ngrams\n"
        f"names = {kernels!r}\n"
        "before = [n for n in names if eval(n).signatures]\n"
        "seconds = ngrams.warm_up()\n"
        "print(before, [n for n in names if not eval(n).signatures], seconds >= 0)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["[]", "[]", "True"], out


@pytest.mark.parametrize("shards", [3, 1])
def test_shards_built_on_ray_equal_the_process_pool_ones(random_corpus, shards):
    """Ray hands the tasks read-only arrays (its object store): each shard fills a filter of its own."""
    pytest.importorskip("ray")
    from mimirlib.core import engines

    train, queries = random_corpus[0][:200], random_corpus[1][:200]
    try:
        for mode in ("bloom", "exact"):
            local = ngrams.build_sharded(train, 3, mode=mode, shards=shards)
            on_ray = ngrams.build_sharded(train, 3, mode=mode, shards=shards, engine=engines.RayEngine(num_cpus=1))
            assert on_ray.n_added == local.n_added
            if mode == "bloom":
                np.testing.assert_array_equal(on_ray._bloom.bits, local._bloom.bits)
                on_ray.add("a text added after the build")  # the result is writable
            else:
                assert on_ray.n_distinct == local.n_distinct  # (sorts the pending keys of both)
                np.testing.assert_array_equal(on_ray._keys, local._keys)
            np.testing.assert_array_equal(on_ray.overlaps(queries), local.overlaps(queries))
    finally:
        engines.shutdown()
