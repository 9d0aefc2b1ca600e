"""Statistics of range scores (mimirlib.core.range_stats): correlations that stay quiet on constant
inputs, the paired bootstrap over the same ranges (and over sampling draws), percentiles among
non-members."""

import numpy as np
import pytest

from mimirlib.core import metrics, range_stats
from mimirlib.core.range_stats import paired_difference, pearson, percentile_among, range_auc, range_metrics, spearman


def test_spearman_and_pearson_are_nan_on_a_constant_side():
    assert np.isnan(spearman([1, 2, 3], [0.5, 0.5, 0.5]))
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert all(np.isnan(pearson([1, 2, 3], [1, 1, 1])))
    r, p = pearson([1, 2, 3, 4], [1, 2, 3, 5])
    assert r > 0.9 and p < 0.1


def test_range_metrics_report_auc_and_tprs_in_percent():
    m = range_metrics([0.9, 0.8, 0.1, 0.2], [True, True, False, False], (0.01, 0.001))
    assert m == {"auc": 1.0, metrics.budget_key(0.01): 100.0, metrics.budget_key(0.001): 100.0}


def separable(n=20, seed=0):
    rng = np.random.default_rng(seed)
    y = np.array([True] * n + [False] * n)
    good = np.where(y, 1.0, 0.0) + rng.normal(0, 0.3, 2 * n)
    noise = rng.normal(0, 1, 2 * n)
    return y, good, noise


def test_paired_difference_of_a_score_with_itself_is_exactly_zero():
    y, good, _ = separable()
    d = paired_difference(good, good, y, n_bootstrap=50, seed=0)
    assert (d["estimate"], d["lo"], d["hi"]) == (0.0, 0.0, 0.0)
    assert d["n_in"] == 20 and d["n_out"] == 20


def test_paired_difference_sees_a_clearly_better_score():
    y, good, noise = separable()
    d = paired_difference(good, noise, y, n_bootstrap=200, seed=0)
    assert d["lo"] > 0 and d["estimate"] == pytest.approx(range_auc(good, y) - range_auc(noise, y))
    assert d["auc_a"] > d["auc_b"]


def test_paired_difference_averages_iterations_against_a_fixed_side():
    y, good, noise = separable()
    its = np.stack([good, good + 0.01 * np.arange(40), noise])
    d = paired_difference(its, noise, y, n_bootstrap=50, seed=1)
    one = [metrics.paired_auc_difference(a[y], a[~y], noise[y], noise[~y], n_resamples=50, seed=1) for a in its]
    assert d["estimate"] == pytest.approx(np.mean([x.point for x in one]))
    assert d["lo"] == pytest.approx(np.mean([x.lo for x in one]))
    assert d["spread"] == pytest.approx(np.std([x.point for x in one], ddof=1))
    assert np.isnan(paired_difference(good, noise, y, n_bootstrap=10, seed=0)["spread"])


def test_paired_difference_refuses_mismatched_ranges():
    y, good, noise = separable()
    with pytest.raises(ValueError, match="same ranges"):
        paired_difference(good[:-1], noise[:-1], y, n_bootstrap=10, seed=0)
    with pytest.raises(ValueError, match="iterations"):
        paired_difference(np.stack([good] * 2), np.stack([noise] * 3), y, n_bootstrap=10, seed=0)


def test_percentile_among_counts_ties_half():
    ref = [1.0, 2.0, 2.0, 3.0]
    np.testing.assert_allclose(percentile_among([0.0, 2.0, 2.5, 9.0], ref), [0.0, 50.0, 75.0, 100.0])
    with pytest.raises(ValueError, match="empty"):
        percentile_among([1.0], [])


def test_seed_averaged_difference_of_one_seed_is_the_paired_bootstrap_of_each_iteration():
    # paired_difference is this one-seed case: checked against metrics' own paired bootstrap, iteration by iteration
    rng = np.random.default_rng(0)
    y = np.r_[np.ones(15, bool), np.zeros(15, bool)]
    a, b = rng.normal(size=(3, 30)) + y, rng.normal(size=30) + 0.5 * y
    one = range_stats.seed_averaged_difference([a], [b], y, n_bootstrap=100, seed=1)
    its = [metrics.paired_auc_difference(x[y], x[~y], b[y], b[~y], n_resamples=100, seed=1) for x in a]
    assert one["estimate"] == pytest.approx(np.mean([x.point for x in its]), abs=1e-12)
    assert (one["lo"], one["hi"]) == (np.mean([x.lo for x in its]), np.mean([x.hi for x in its]))
    assert one == {**range_stats.paired_difference(a, b, y, n_bootstrap=100, seed=1), **one}  # a superset of it
    assert one["n_seeds"] == 1 and np.isnan(one["seed_sd"]) and one["per_seed"] == pytest.approx([one["estimate"]])


def test_seed_averaged_difference_hand_worked_on_two_seeds():
    # two IN and two OUT ranges. Seed 1: a ranks both IN above both OUT (AUC 1), b ties them all (0.5): +0.5.
    # Seed 2: a = b: 0. Mean +0.25; seed sd = |0.5 - 0| / sqrt(2) = 0.3536.
    y = np.array([True, True, False, False])
    a1, b1 = np.array([3.0, 4.0, 1.0, 2.0]), np.zeros(4)
    a2 = b2 = np.array([1.0, 4.0, 2.0, 3.0])
    d = range_stats.seed_averaged_difference([a1, a2], [b1, b2], y, n_bootstrap=200, seed=0)
    assert d["per_seed"] == pytest.approx([0.5, 0.0])
    assert d["estimate"] == pytest.approx(0.25) and d["seed_sd"] == pytest.approx(0.5 / np.sqrt(2))
    assert d["n_seeds"] == 2 and d["auc_a"] == pytest.approx((1.0 + 0.5) / 2) and d["auc_b"] == pytest.approx(0.5)
    # the interval is one bootstrap over the ranges for both seeds: metrics' seed-averaged difference exactly
    ref = metrics.seed_averaged_auc_difference(
        [(a1[y], a1[~y], b1[y], b1[~y]), (a2[y], a2[~y], b2[y], b2[~y])], n_resamples=200, seed=0
    )
    assert (d["lo"], d["hi"]) == pytest.approx((ref.lo, ref.hi))


def test_seed_averaged_difference_refuses_seeds_on_other_ranges():
    y = np.array([True, False])
    with pytest.raises(ValueError, match="one range score per seed"):
        range_stats.seed_averaged_difference([np.zeros(2)], [], y, n_bootstrap=10, seed=0)
    with pytest.raises(ValueError, match="same ranges: 3, 2, 2"):
        range_stats.seed_averaged_difference([np.zeros(2), np.zeros(3)], [np.zeros(2)] * 2, y, n_bootstrap=10, seed=0)
