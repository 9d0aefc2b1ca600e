"""Tests for mimirlib.core.metrics, including regressions for the reference implementation's defects
(re-negated bootstrap; TPR@FPR with a strict "<" that turns TPR@0.1%FPR into TPR@0%FPR)."""

import time

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score, roc_curve

from mimirlib.core import metrics as M


def _labels(m, n):
    return np.r_[np.ones(len(m)), np.zeros(len(n))]


def _normal_pair(shift=0.5, n_m=1000, n_n=1000, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(shift, 1.0, n_m), rng.normal(0.0, 1.0, n_n)


# ----------------------------------------------------------------------------- AUC


def test_auc_negation_is_one_minus_auc():
    rng = np.random.default_rng(1)
    for _ in range(20):
        m = np.round(rng.normal(0.3, 1, rng.integers(1, 60)), 1)  # rounding creates ties
        n = np.round(rng.normal(0.0, 1, rng.integers(1, 60)), 1)
        assert M.auc(-m, -n) == pytest.approx(1.0 - M.auc(m, n), abs=1e-12)


def test_auc_separable_and_reversed():
    assert M.auc([3, 4, 5], [0, 1, 2]) == 1.0
    assert M.auc([0, 1, 2], [3, 4, 5]) == 0.0


def test_auc_identical_distributions_is_half():
    s = np.arange(10.0)
    assert M.auc(s, s) == 0.5
    assert M.auc([1, 1, 1], [1, 1]) == 0.5  # all tied: ties count half
    rng = np.random.default_rng(2)
    assert M.auc(rng.normal(size=5000), rng.normal(size=5000)) == pytest.approx(0.5, abs=0.02)


@pytest.mark.parametrize("seed", range(10))
def test_auc_matches_sklearn_with_ties(seed):
    rng = np.random.default_rng(seed)
    m = rng.integers(0, 8, rng.integers(1, 300)).astype(float)
    n = rng.integers(0, 6, rng.integers(1, 300)).astype(float)
    assert M.auc(m, n) == pytest.approx(roc_auc_score(_labels(m, n), np.r_[m, n]), abs=1e-12)


def test_auc_accepts_lists_and_columns():
    assert M.auc([[1.0], [2.0]], [[0.0]]) == 1.0


# ----------------------------------------------------------------------------- bootstrap


def test_bootstrap_mean_close_to_point_and_interval_contains_it():
    m, n = _normal_pair(0.5)
    r = M.bootstrap_auc(m, n, n_resamples=1000, seed=0)
    assert isinstance(r, M.BootstrapResult)
    assert r.point == pytest.approx(M.auc(m, n))
    assert abs(r.mean - r.point) < 0.01
    assert r.lo < r.point < r.hi
    assert r.n_resamples == 1000
    # Standard error of an AUC near 0.64 with 1000+1000 samples is ~0.012.
    assert 0.005 < r.std < 0.02
    assert r.hi - r.lo == pytest.approx(2 * 1.96 * r.std, rel=0.15)


def test_bootstrap_does_not_flip():
    """Reference defect: scores re-negated inside the bootstrap made its mean look like 1 - AUC."""
    m, n = _normal_pair(2.0, seed=3)
    r = M.bootstrap_auc(m, n)
    assert r.point > 0.9
    assert r.mean > 0.5 and abs(r.mean - r.point) < 0.01
    assert r.lo > 0.5
    neg = M.bootstrap_auc(-m, -n)
    assert neg.mean == pytest.approx(1.0 - r.mean, abs=0.01)


def test_bootstrap_exact_against_explicit_resamples():
    """Counts-based AUC per resample equals sklearn on the explicitly resampled arrays.

    Mirrors the draw order of bootstrap_auc (one chunk: member indices, then indices into the
    *sorted* non-members; resampling with replacement does not depend on the order of the set).
    """
    rng0 = np.random.default_rng(7)
    m = np.round(rng0.normal(0.4, 1, 37), 1)
    n = np.round(rng0.normal(0.0, 1, 23), 1)
    B = 50
    rng = np.random.default_rng(11)
    im = rng.integers(0, m.size, size=(B, m.size))
    inn = rng.integers(0, n.size, size=(B, n.size))
    n = np.sort(n)
    expect = np.array([roc_auc_score(_labels(m[a], n[b]), np.r_[m[a], n[b]]) for a, b in zip(im, inn)])
    r = M.bootstrap_auc(m, n, n_resamples=B, seed=11, confidence=0.9)
    assert r.mean == pytest.approx(expect.mean(), abs=1e-12)
    assert r.std == pytest.approx(expect.std(ddof=1), abs=1e-12)
    assert r.lo == pytest.approx(np.quantile(expect, 0.05), abs=1e-12)
    assert r.hi == pytest.approx(np.quantile(expect, 0.95), abs=1e-12)


def test_bootstrap_chunking_keeps_statistics(monkeypatch):
    m, n = _normal_pair(0.5, n_m=400, n_n=300, seed=5)
    full = M.bootstrap_auc(m, n, n_resamples=600, seed=1)
    monkeypatch.setattr(M, "_CHUNK_CELLS", 20_000)  # forces ~14 chunks
    chunked = M.bootstrap_auc(m, n, n_resamples=600, seed=1)
    assert chunked.n_resamples == 600
    assert abs(chunked.mean - full.mean) < 0.005
    assert chunked.std == pytest.approx(full.std, rel=0.2)


def test_bootstrap_is_seeded():
    m, n = _normal_pair(0.3, n_m=200, n_n=200)
    assert M.bootstrap_auc(m, n, seed=4) == M.bootstrap_auc(m, n, seed=4)
    assert M.bootstrap_auc(m, n, seed=4) != M.bootstrap_auc(m, n, seed=5)


def test_bootstrap_is_fast():
    m, n = _normal_pair(0.5)
    M.bootstrap_auc(m, n, n_resamples=50)  # warm-up
    t0 = time.perf_counter()
    M.bootstrap_auc(m, n, n_resamples=1000)
    assert time.perf_counter() - t0 < 1.0


# ----------------------------------------------------------------------------- ROC


def test_roc_matches_sklearn_points_and_rule():
    rng = np.random.default_rng(3)
    m = np.round(rng.normal(0.5, 1, 200), 1)
    n = np.round(rng.normal(0.0, 1, 150), 1)
    fpr, tpr, thr = M.roc(m, n)
    f2, t2, _ = roc_curve(_labels(m, n), np.r_[m, n], drop_intermediate=False)
    np.testing.assert_allclose(fpr, f2)
    np.testing.assert_allclose(tpr, t2)
    assert (fpr[0], tpr[0]) == (0.0, 0.0) and (fpr[-1], tpr[-1]) == (1.0, 1.0)
    assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0) and np.all(np.diff(thr) < 0)
    # Same rule as fpr_at_threshold (member iff score > threshold).
    for f, t, th in zip(fpr[::7], tpr[::7], thr[::7]):
        assert M.fpr_at_threshold(n, th) == f
        assert M.fpr_at_threshold(m, th) == t
    assert np.trapezoid(tpr, fpr) == pytest.approx(M.auc(m, n))


# ----------------------------------------------------------------------------- TPR at FPR


def test_tpr_at_fpr_hand_example():
    m = [0.9, 0.8, 0.3]
    n = [0.7, 0.2, 0.1, 0.05]
    # Budget 1/4: one non-member (0.7) may exceed the threshold 0.2 -> all three members caught.
    r = M.tpr_at_fpr(m, n, 0.25)
    assert r == M.TprAtFpr(
        tpr=1.0, fpr_achieved=0.25, threshold=0.2, fpr_budget=0.25, min_resolvable_fpr=0.25, resolvable=True
    )
    # Budget below 1/4: no false positive allowed -> threshold 0.7, TPR 2/3 at FPR 0.
    r = M.tpr_at_fpr(m, n, 0.2)
    assert r.tpr == pytest.approx(2 / 3) and r.fpr_achieved == 0.0 and r.threshold == 0.7
    assert not r.resolvable and r.min_resolvable_fpr == 0.25
    # Budget 1/2: threshold 0.1, FPR 1/2, TPR 1.
    r = M.tpr_at_fpr(m, n, 0.5)
    assert (r.tpr, r.fpr_achieved, r.threshold) == (1.0, 0.5, 0.1)


def test_tpr_at_fpr_allows_fpr_equal_to_budget():
    """Reference defect: strict '<' made TPR@0.1%FPR with 1,000 non-members TPR@0%FPR."""
    rng = np.random.default_rng(0)
    n = np.r_[rng.normal(0, 1, 999), 50.0]  # one extreme non-member
    m = rng.normal(3, 1, 1000)
    at0 = M.tpr_at_fpr(m, n, 0.0)
    r = M.tpr_at_fpr(m, n, 0.001)
    assert r.resolvable and r.min_resolvable_fpr == 0.001
    assert r.fpr_achieved == 0.001
    assert at0.tpr == 0.0 and r.tpr > 0.3


@pytest.mark.parametrize("n_n", [3, 7, 100, 1000, 1024])
def test_budget_equal_to_one_over_n_is_resolvable(n_n):
    rng = np.random.default_rng(n_n)
    r = M.tpr_at_fpr(rng.normal(1, 1, 50), rng.normal(0, 1, n_n), 1.0 / n_n)
    assert r.resolvable and r.min_resolvable_fpr == 1.0 / n_n
    assert r.fpr_achieved == pytest.approx(1.0 / n_n)


def test_unresolvable_budget_reports_tpr_at_zero_fpr():
    rng = np.random.default_rng(1)
    m, n = rng.normal(1, 1, 300), rng.normal(0, 1, 500)
    r = M.tpr_at_fpr(m, n, 0.001)  # 0.001 < 1/500
    assert r.min_resolvable_fpr == pytest.approx(1 / 500)
    assert r.resolvable is False
    assert r.fpr_achieved == 0.0
    assert r.tpr == M.tpr_at_fpr(m, n, 0.0).tpr
    assert r.threshold == n.max()


def test_tpr_at_fpr_never_exceeds_budget_and_is_optimal():
    """Property test over seeded random draws (with ties) and several budgets."""
    rng = np.random.default_rng(1234)
    for _ in range(150):
        n_m, n_n = rng.integers(1, 400, size=2)
        dec = rng.integers(0, 3)  # 0 decimals = many ties
        m = np.round(rng.normal(rng.uniform(-1, 2), 1, n_m), dec)
        n = np.round(rng.normal(0, rng.uniform(0.5, 2), n_n), dec)
        fpr, tpr, _ = M.roc(m, n)
        for b in (0.0, 0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 1.0 / n_n, 3.0 / n_n, 0.3 / n_n):
            b = min(b, 1.0)
            r = M.tpr_at_fpr(m, n, b)
            assert r.fpr_achieved <= b
            assert r.min_resolvable_fpr == 1.0 / n_n
            assert r.resolvable == (b >= 1.0 / n_n)
            # Optimal: the best TPR among ROC points within the budget.
            assert r.tpr == pytest.approx(tpr[fpr <= b].max())
            # Consistent with the transferred-threshold helpers.
            assert M.fpr_at_threshold(n, r.threshold) == r.fpr_achieved
            assert M.fpr_at_threshold(m, r.threshold) == r.tpr


def test_float_rounding_of_budget_times_n():
    # 0.07 * 100 = 7.000000000000001 and 0.29 * 100 = 28.999999999999996 in floating point.
    n = np.arange(100.0)
    assert M.fpr_at_threshold(n, M.threshold_at_fpr(n, 0.07)) == 0.07
    assert M.fpr_at_threshold(n, M.threshold_at_fpr(n, 0.29)) == 0.29


# ----------------------------------------------------------------------------- transferred thresholds


def test_threshold_at_fpr_consistency():
    rng = np.random.default_rng(9)
    for _ in range(50):
        n = np.round(rng.normal(size=rng.integers(1, 500)), rng.integers(0, 3))
        for b in (0.0, 0.001, 0.01, 0.1, 0.5, 0.999, 1.0):
            t = M.threshold_at_fpr(n, b)
            assert M.fpr_at_threshold(n, t) <= b


def test_threshold_extremes_and_ties():
    n = np.array([0.1, 0.5, 0.9, 0.3])
    assert M.threshold_at_fpr(n, 0.0) == 0.9
    assert M.threshold_at_fpr(n, 1.0) == -np.inf
    assert M.fpr_at_threshold(n, -np.inf) == 1.0
    tied = np.ones(10)
    assert M.threshold_at_fpr(tied, 0.5) == 1.0 and M.fpr_at_threshold(tied, 1.0) == 0.0


def test_transferred_threshold_between_sets():
    shifted = np.arange(100.0)  # e.g. temporally shifted non-members
    natural = np.arange(100.0) - 50.0  # e.g. natural non-members: lower scores
    t = M.threshold_at_fpr(shifted, 0.01)
    assert t == 98.0 and M.fpr_at_threshold(shifted, t) == 0.01
    assert M.fpr_at_threshold(natural, t) == 0.0
    assert M.fpr_at_threshold(natural + 60, t) == pytest.approx(0.11)


# ----------------------------------------------------------------------------- evaluate


def test_evaluate_record():
    m, n = _normal_pair(0.5, n_m=800, n_n=1000)
    rec = M.evaluate(m, n, n_resamples=200)
    for k in (
        "auc",
        "auc_mean",
        "auc_lo",
        "auc_hi",
        "tpr@1%fpr",
        "tpr@0.1%fpr",
        "min_resolvable_fpr",
        "n_members",
        "n_nonmembers",
    ):
        assert k in rec
    assert all(np.isscalar(v) for v in rec.values())
    assert rec["auc"] == pytest.approx(M.auc(m, n))
    assert rec["auc_lo"] <= rec["auc"] <= rec["auc_hi"]
    assert rec["tpr@1%fpr"] == M.tpr_at_fpr(m, n, 0.01).tpr
    assert rec["tpr@0.1%fpr"] == M.tpr_at_fpr(m, n, 0.001).tpr
    assert rec["min_resolvable_fpr"] == 0.001
    assert (rec["n_members"], rec["n_nonmembers"]) == (800, 1000)


def test_budget_key():
    assert M.budget_key(0.01) == "tpr@1%fpr"
    assert M.budget_key(0.001) == "tpr@0.1%fpr"
    assert M.budget_key(0.05) == "tpr@5%fpr"
    assert M.budget_key(0.0001) == "tpr@0.01%fpr"


# ----------------------------------------------------------------------------- invalid input


@pytest.mark.parametrize(
    "fn",
    [
        M.auc,
        M.bootstrap_auc,
        M.roc,
        M.evaluate,
        lambda a, b: M.tpr_at_fpr(a, b, 0.01),
    ],
)
def test_invalid_scores_name_the_set(fn):
    good = [0.1, 0.2, 0.3]
    with pytest.raises(ValueError, match=r"^member_scores.*non-finite"):
        fn([0.1, np.nan], good)
    with pytest.raises(ValueError, match=r"^nonmember_scores.*non-finite"):
        fn(good, [np.inf, 0.2])
    with pytest.raises(ValueError, match=r"^member_scores.*empty"):
        fn([], good)
    with pytest.raises(ValueError, match=r"^nonmember_scores.*empty"):
        fn(good, [])
    with pytest.raises(ValueError, match=r"^member_scores.*1-d"):
        fn(np.ones((2, 3)), good)
    with pytest.raises(ValueError, match=r"^nonmember_scores"):
        fn(good, ["a", "b"])


def test_invalid_parameters():
    m, n = [0.5, 0.6], [0.1, 0.2]
    for b in (-0.1, 1.5, np.nan, "x"):
        with pytest.raises(ValueError, match="fpr_budget"):
            M.tpr_at_fpr(m, n, b)
        with pytest.raises(ValueError, match="fpr_budget"):
            M.threshold_at_fpr(n, b)
    with pytest.raises(ValueError, match="n_resamples"):
        M.bootstrap_auc(m, n, n_resamples=0)
    with pytest.raises(ValueError, match="confidence"):
        M.bootstrap_auc(m, n, confidence=1.0)
    with pytest.raises(ValueError, match="^scores"):
        M.fpr_at_threshold([np.nan], 0.0)
    with pytest.raises(ValueError, match="^nonmember_scores"):
        M.threshold_at_fpr([], 0.1)
    with pytest.raises(ValueError, match="threshold"):
        M.fpr_at_threshold([0.1], np.nan)


def test_paired_differences_check_their_bootstrap_settings():
    # the same check as bootstrap_auc's: a positive whole number of resamples, a level in (0, 1)
    m, n = [0.5, 0.6], [0.1, 0.2]
    for bad in (0, -3, 2.0, True):
        with pytest.raises(ValueError, match="n_resamples"):
            M.paired_auc_difference(m, n, m, n, n_resamples=bad)
        with pytest.raises(ValueError, match="n_resamples"):
            M.paired_gain_difference((m, n), (m, n), (m, n), (m, n), n_resamples=bad)
    for bad in (0.0, 1.0, 1.5, "x", None):
        with pytest.raises(ValueError, match="confidence"):
            M.paired_auc_difference(m, n, m, n, confidence=bad)
        with pytest.raises(ValueError, match="confidence"):
            M.paired_gain_difference((m, n), (m, n), (m, n), (m, n), confidence=bad)


# ----------------------------------------------------------------------------- proportion intervals


def test_proportion_interval_zero_of_36_clopper_pearson_by_hand():
    lo, hi = M.proportion_interval(0, 36)  # exact upper bound at 0 successes: 1 - (alpha/2)^(1/n)
    assert lo == 0.0 and hi == pytest.approx(1 - 0.025 ** (1 / 36), abs=1e-12)
    assert hi == pytest.approx(0.0974, abs=5e-5)


def test_proportion_interval_zero_of_36_wilson_by_hand():
    lo, hi = M.proportion_interval(0, 36, method="wilson")  # z^2 / (n + z^2) at k = 0
    z2 = 1.959964**2
    assert lo == 0.0 and hi == pytest.approx(z2 / (36 + z2), abs=1e-6)
    assert hi == pytest.approx(0.0964, abs=5e-5)


def test_proportion_interval_all_of_n_mirrors_none_of_n():
    for method in M.PROPORTION_METHODS:
        lo0, hi0 = M.proportion_interval(0, 36, method=method)
        lo, hi = M.proportion_interval(36, 36, method=method)
        assert hi == 1.0 and lo == pytest.approx(1 - hi0, abs=1e-12)


def test_proportion_interval_matches_scipy_binomtest():
    from scipy.stats import binomtest

    for k, n in ((2, 150), (5, 150), (10, 100), (1, 36)):
        for method, name in (("clopper-pearson", "exact"), ("wilson", "wilson")):
            ci = binomtest(k, n).proportion_ci(confidence_level=0.9, method=name)
            assert M.proportion_interval(k, n, 0.9, method) == pytest.approx((ci.low, ci.high), abs=1e-10)


def test_proportion_interval_takes_a_fractional_effective_count():
    lo, hi = M.proportion_interval(1.5, 36)  # between 1 and 2 of 36
    lo1, hi1 = M.proportion_interval(1, 36)
    lo2, hi2 = M.proportion_interval(2, 36)
    assert lo1 < lo < lo2 and hi1 < hi < hi2


@pytest.mark.parametrize(
    "k, n, kw",
    [(-1, 10, {}), (11, 10, {}), (0, 0, {}), (1, 10, {"confidence": 1.0}), (1, 10, {"method": "normal"})],
)
def test_proportion_interval_rejects_bad_input(k, n, kw):
    with pytest.raises(ValueError):
        M.proportion_interval(k, n, **kw)


def test_a_seed_averaged_difference_of_one_seed_is_the_paired_difference():
    rng = np.random.default_rng(3)
    am, an, bm, bn = rng.normal(1, 1, 40), rng.normal(0, 1, 50), rng.normal(0.5, 1, 40), rng.normal(0, 1, 50)
    one = M.seed_averaged_auc_difference([(am, an, bm, bn)], n_resamples=200, seed=4)
    assert one == M.paired_auc_difference(am, an, bm, bn, n_resamples=200, seed=4)


def test_a_seed_averaged_difference_is_the_mean_of_the_seeds_differences():
    # seed 1: AUC(a) = 1, AUC(b) = 0.5 (ties); seed 2: AUC(a) = 0.75, AUC(b) = 0.25 -> mean 0.5
    m, n = [2.0, 3.0], [0.0, 1.0]
    s1 = (m, n, [1.0, 1.0], [1.0, 1.0])
    s2 = ([2.0, 0.5], [1.0, 0.0], [0.0, 0.5], [1.0, 0.4])
    d = M.seed_averaged_auc_difference([s1, s2], n_resamples=50)
    assert d.point == pytest.approx(((1 - 0.5) + (0.75 - 0.25)) / 2)
    assert (d.n_members, d.n_nonmembers, d.n_resamples) == (2, 2, 50)
    twice = M.seed_averaged_auc_difference([s1, s1], n_resamples=50, seed=1)
    assert twice == M.seed_averaged_auc_difference([s1], n_resamples=50, seed=1)  # one draw serves every seed


def test_a_seed_averaged_difference_needs_the_same_texts_for_every_seed():
    s1 = ([1.0, 2.0], [0.0, 1.0], [1.0, 2.0], [0.0, 1.0])
    with pytest.raises(ValueError, match=r"seeds\[1\]: .*same texts"):
        M.seed_averaged_auc_difference([s1, ([1.0], [0.0, 1.0], [1.0], [0.0, 1.0])])
    with pytest.raises(ValueError, match="at least one"):
        M.seed_averaged_auc_difference([])
    with pytest.raises(ValueError, match=r"seeds\[0\]"):
        M.seed_averaged_auc_difference([(s1[0], s1[1])])


def test_mean_t_interval_by_hand():
    # 1, 2, 3: mean 2, sd 1, half-width t(0.975, 2) / sqrt(3) = 4.302653 / 1.732051 = 2.484138
    mean, lo, hi, sd = M.mean_t_interval([1.0, 2.0, 3.0])
    assert (mean, sd) == (2.0, 1.0) and lo == pytest.approx(2 - 2.484138, abs=1e-6) and hi == pytest.approx(4.484138)
    for bad in ([1.0], [1.0, float("nan")], [[1.0, 2.0]]):
        with pytest.raises(ValueError, match="values"):
            M.mean_t_interval(bad)
