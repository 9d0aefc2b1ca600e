"""score_texts (unlabelled texts: modified members, range samples) agrees with score_benchmark."""

import numpy as np
import pytest

from mimirlib.core.data import Benchmark
from mimirlib.core.models import load_model
from mimirlib.core.scoring import score_benchmark, score_texts

from .conftest import synthetic_texts


def test_score_texts_matches_score_benchmark(tiny_model_dir):
    m = load_model(str(tiny_model_dir))
    texts = synthetic_texts(6, seed=3)
    bench = Benchmark("b", tuple(texts[:3]), tuple(texts[3:]))
    attacks = ["loss", "zlib", "min_k", "ref"]
    a = score_benchmark(bench, m, attacks, references={"r": m})
    b = score_texts(texts, m, attacks, references={"r": m})
    assert list(b.columns) == ["loss", "zlib", "min_k", "ref:r"]
    for col in b.columns:
        np.testing.assert_allclose(a[col].to_numpy(), b[col].to_numpy(), rtol=1e-6)
    assert np.allclose(b["ref:r"], 0.0)  # a model against itself: no calibrated signal


def test_score_texts_refuses_what_it_cannot_compute(tiny_model_dir):
    m = load_model(str(tiny_model_dir))
    with pytest.raises(ValueError, match="neighbours"):
        score_texts(["a b c d e"], m, ["ne"])
    with pytest.raises(ValueError, match="reference"):
        score_texts(["a b c d e"], m, ["ref"])
