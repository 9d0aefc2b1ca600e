"""The blind (model-free) baseline: high AUC under distribution shift, chance without it."""

import random

import numpy as np
import pytest

from mimirlib.core.baselines import blind_auc

VOCAB = [
    "the",
    "release",
    "adds",
    "support",
    "for",
    "parsing",
    "files",
    "faster",
    "and",
    "fixes",
    "a",
    "crash",
    "when",
    "configuration",
    "is",
    "missing",
    "users",
    "reported",
    "errors",
    "in",
    "build",
    "on",
    "some",
    "platforms",
]


def texts(n, seed, extra=(), words=40):
    """Random texts over a shared vocabulary; ``extra`` words are sprinkled in (e.g. a year)."""
    rng = random.Random(seed)
    vocab = list(VOCAB) + list(extra)
    return [" ".join(rng.choice(vocab) for _ in range(words)) for _ in range(n)]


def test_shifted_distributions_are_separable():
    old = texts(60, seed=1, extra=["2019", "March", "2019"])
    new = texts(60, seed=2, extra=["2023", "October", "2023"])
    out = blind_auc(old, new)
    assert out["auc"] > 0.9
    assert out["n_members"] == 60 and out["n_nonmembers"] == 60
    assert out["scores"].shape == (120,)
    # members first, higher = member
    assert out["scores"][:60].mean() > out["scores"][60:].mean()


def test_same_distribution_is_near_chance():
    pool = texts(200, seed=0)  # AUC over pool seeds 0-7: 0.48-0.60 (sd ~0.04 at 100 vs 100)
    random.Random(0).shuffle(pool)
    out = blind_auc(pool[:100], pool[100:])
    assert 0.35 <= out["auc"] <= 0.65


def test_deterministic_given_seed():
    a, b = texts(30, seed=4, extra=["alpha"]), texts(30, seed=5, extra=["beta"])
    first, again = blind_auc(a, b, seed=7), blind_auc(a, b, seed=7)
    assert first["auc"] == again["auc"]
    np.testing.assert_array_equal(first["scores"], again["scores"])
    other = blind_auc(a, b, seed=8)  # another fold assignment: other out-of-fold scores
    assert not np.array_equal(first["scores"], other["scores"])


def test_tiny_or_empty_sets_raise():
    good = texts(10, seed=6)
    with pytest.raises(ValueError, match="members has 3 texts, fewer than n_splits=5"):
        blind_auc(good[:3], good)
    with pytest.raises(ValueError, match="nonmembers has 0 texts.*empty"):
        blind_auc(good, [])
    with pytest.raises(ValueError, match="n_splits >= 2"):
        blind_auc(good, good, n_splits=1)
    assert blind_auc(good[:3], good[3:6], n_splits=3)["n_members"] == 3


def test_evaluate_blind_reports_the_same_auc_as_blind_auc():
    from mimirlib.core.baselines import blind_auc, evaluate_blind

    a = [f"release notes 2019 module {i}" for i in range(10)]
    b = [f"release notes 2023 module {i}" for i in range(10)]
    rec = evaluate_blind(a, b, n_splits=5, seed=0, n_resamples=50)
    assert rec["auc"] == pytest.approx(blind_auc(a, b, n_splits=5, seed=0)["auc"])
    assert rec["auc_lo"] <= rec["auc"] <= rec["auc_hi"]


def test_out_of_fold_scores_equal_the_pipeline_refitted_on_each_fold():
    """blind_auc counts each text's n-grams once; its scores must be what cross_val_predict gets by
    refitting blind_classifier() on every fold (where each fold learns its own vocabulary and idf)."""
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    from mimirlib.core.baselines import blind_classifier

    rng = random.Random(3)
    # words only some texts have (so the folds' vocabularies differ), an accented one, digits
    rare = [f"w{i}ord" for i in range(30)] + ["café", "naïve", "2021"]
    a = [t + " " + " ".join(rng.sample(rare, 3)) for t in texts(25, seed=4, extra=["2019"])]
    b = [t + " " + rng.choice(rare) for t in texts(25, seed=5, extra=["2023"])]
    out = blind_auc(a, b, n_splits=5, seed=11)
    y = np.r_[np.ones(25, dtype=int), np.zeros(25, dtype=int)]
    cv = StratifiedKFold(n_splits=5, shuffle=True, random_state=11)
    expected = cross_val_predict(blind_classifier(), a + b, y, cv=cv, method="decision_function")
    np.testing.assert_allclose(out["scores"], expected, rtol=0, atol=1e-12)


def test_blind_holdout_test_keeps_its_level_on_iid_sets_and_sees_a_shift():
    import numpy as np

    from mimirlib.core.baselines import blind_holdout_test
    from tests.conftest import synthetic_texts

    ps = []
    for seed in range(60):
        t = synthetic_texts(40, seed=seed)
        ps.append(blind_holdout_test(t[:20], t[20:], seed=seed)["p_value"])
    assert np.mean(np.array(ps) < 0.05) <= 0.1  # nominal 5%; 60 draws
    later = [f"release {i}.{i % 7}.0 on 2023-0{1 + i % 9}-1{i % 10} fixes bug {100 + i}" for i in range(20)]
    r = blind_holdout_test(synthetic_texts(20), later)
    assert r["auc"] > 0.9 and r["p_value"] < 0.01 and r["n_test"] == 10
