"""Dataset inference (mimirlib.core.dataset_inference): Eq. 2, the outlier step, the split, the
test's level on null features and its power and direction on a planted shift."""

import numpy as np
import pytest
from scipy import stats

from mimirlib.core import dataset_inference as di


def test_combine_is_eq2_by_hand():
    assert di.combine([0.1, 0.2]) == pytest.approx(1 - 0.9 * 0.8)
    assert di.combine([0.0, 0.0]) == 0.0
    assert di.combine([1.0, 0.01]) == 1.0
    # never below the largest p-value: the combination is conservative
    assert di.combine([0.01, 0.05, 0.03]) >= 0.05


def test_tame_outliers_sets_each_tails_extremes_to_the_mean():
    x = np.c_[np.arange(1.0, 41.0), np.arange(40.0, 0.0, -1.0)]
    out = di.tame_outliers(x, 0.05)  # 40 x 0.05 / 2 = 1 value per tail
    assert out[0, 0] == out[39, 0] == pytest.approx(20.5)
    assert out[0, 1] == out[39, 1] == pytest.approx(20.5)
    assert (out[1:39] == x[1:39]).all()
    assert (di.tame_outliers(x[:10], 0.05) == x[:10]).all()  # too few texts for a whole outlier


def test_trim_drops_each_tails_extremes():
    x = np.r_[100.0, np.arange(38.0), -100.0]
    assert list(di.trim(x, 0.05)) == list(np.arange(38.0))  # 40 x 0.05 / 2 = 1 per tail
    assert len(di.trim(x[:10], 0.05)) == 10


def test_halves_partition_the_texts():
    a, b = di.halves(11, np.random.default_rng(0))
    assert len(a) == 5 and len(b) == 6
    assert sorted(np.r_[a, b]) == list(range(11))


def _sets(rng, n, shift=0.0, n_features=5):
    s = rng.normal(size=(n, n_features))
    s[:, 0] += shift
    return s, rng.normal(size=(n, n_features))


def test_level_on_null_features_is_uniform():
    rng = np.random.default_rng(1)
    p = [di.infer(*_sets(rng, 60), n_partitions=1, seed=i).p_first for i in range(400)]
    assert stats.kstest(p, "uniform").pvalue > 0.01
    assert 0.06 <= np.mean(np.array(p) < 0.1) <= 0.14


def test_combined_test_stays_below_its_level_under_the_null():
    rng = np.random.default_rng(2)
    p = [di.infer(*_sets(rng, 40), seed=i).p_value for i in range(100)]
    assert np.mean(np.array(p) < di.ALPHA) <= di.ALPHA


def test_welch_matches_scipy():
    rng = np.random.default_rng(6)
    x, y = rng.normal(size=23), rng.normal(0.3, 2.0, size=31)
    want = stats.ttest_ind(x, y, equal_var=False, alternative="less").pvalue
    assert di.welch_less(x, y) == pytest.approx(want, rel=1e-9)
    assert di.welch_less(np.ones(5), np.ones(5)) == 1.0


def test_regress_is_sklearns_linear_regression():
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(7)
    x, y = rng.normal(size=(40, 5)), rng.integers(0, 2, 40).astype(float)
    fit = LinearRegression().fit(x, y)
    assert di.regress(x, y) == pytest.approx(np.r_[fit.intercept_, fit.coef_], abs=1e-10)


def test_power_on_a_planted_shift_and_the_learned_weight():
    rng = np.random.default_rng(3)
    runs = [di.infer(*_sets(rng, 100, shift=0.6), seed=i) for i in range(30)]
    assert np.mean([r.p_first < di.ALPHA for r in runs]) >= 0.9  # one partition's test
    assert np.mean([r.flagged() for r in runs]) >= 0.3  # Eq. 2 pays for its validity with power
    strong = [di.infer(*_sets(rng, 100, shift=1.0), seed=i) for i in range(10)]
    assert np.mean([r.flagged() for r in strong]) >= 0.9
    w = np.mean([r.weights for r in runs], axis=0)
    assert w[0] < 0 and abs(w[0]) > 3 * np.abs(w[1:]).max()  # the member-like feature pulls toward 0 (suspect)


def test_the_direction_is_learned_so_any_difference_is_flagged():
    """One-sided in the *learned* direction: a suspect set *less* member-like than the validation set
    is flagged as well (the regression learns the sign on A), which is why the sets must be IID."""
    rng = np.random.default_rng(4)
    runs = [di.infer(*_sets(rng, 100, shift=-1.0), seed=i) for i in range(10)]
    assert np.mean([r.flagged() for r in runs]) >= 0.9
    assert np.mean([r.weights[0] for r in runs]) > 0  # the feature now pulls toward 'validation'


def test_the_t_test_is_one_sided():
    x = np.arange(10.0)
    assert di.welch_less(x, x + 5) < 0.01 and di.welch_less(x + 5, x) > 0.99


def test_same_seed_same_result_and_reading():
    s, v = _sets(np.random.default_rng(5), 30, shift=1.0)
    a, b = di.infer(s, v, seed=7, features=list("abcde")), di.infer(s, v, seed=7, features=list("abcde"))
    assert a == b and len(a.p_values) == di.N_PARTITIONS
    assert set(a.weights_table()) == set("abcde")
    assert a.reading().startswith("p = ") and ("<" in a.reading()) == a.flagged()


@pytest.mark.parametrize(
    "suspect, validation, match",
    [
        (np.zeros((5, 2)), np.zeros((20, 2)), "suspect: dataset inference needs at least 8 texts, got 5"),
        (np.zeros((20, 2)), np.zeros((20, 3)), "suspect has 2 features and validation 3"),
        (np.zeros((20, 2)), np.full((20, 2), np.nan), "validation: features hold NaN"),
    ],
)
def test_bad_input_names_the_culprit(suspect, validation, match):
    with pytest.raises(ValueError, match=match):
        di.infer(suspect, validation)
