"""RaMIA's range scores (mimirlib.core.range_scores): trimmed averages (eq. 4), the trim sweep on a
reference model and the trim's notations, offline RMIA, and the backbone registry (hand values)."""

import inspect
import math

import numpy as np
import pytest

from mimirlib.core import metrics
from mimirlib.core import range_scores as R
from mimirlib.core.range_scores import (
    BACKBONES,
    backbone_scores,
    bayes_factor,
    get_backbone,
    glrt,
    offline_rmia,
    ramia,
    sweep_trim,
    trim_grid,
    trim_window,
    trimmed_average,
)

ONE_TO_TEN = np.arange(1.0, 11.0)


# --------------------------------------------------------------------------- trimmed average


@pytest.mark.parametrize(
    "q_s, q_e, expected",
    [
        (0.0, 1.0, 5.5),  # nothing trimmed
        (0.2, 1.0, 6.5),  # drop the lowest 20% -> mean(3..10)
        (0.0, 0.2, 1.5),  # the paper's AG News trim (q_s = 20, q_e = 100): keep the lowest 20% -> mean(1, 2)
        (0.0, 0.5, 3.0),  # drop the top half -> mean(1..5)
        (0.1, 0.9, 5.5),  # mean(2..9)
        (0.9, 1.0, 10.0),  # only the top score
        (0.29, 1.0, 6.5),  # 0.29 * 10 = 2.9 -> the lowest floor(2.9) = 2 are dropped -> mean(3..10)
        (0.0, 0.75, 4.5),  # ceil(7.5) = 8 ranks kept -> mean(1..8)
    ],
)
def test_trimmed_average_hand_values(q_s, q_e, expected):
    # shuffled input: the trim ranks scores, it does not take them in order
    shuffled = np.random.default_rng(0).permutation(ONE_TO_TEN)
    assert trimmed_average(shuffled, q_s, q_e) == pytest.approx(expected)


def test_trimmed_average_float_products_count_exactly():
    # 0.29 * 100 = 28.999999999999996 must drop 29 scores, not 28
    scores = np.arange(100.0)
    assert trim_window(100, 0.29, 1.0) == (29, 100)
    assert trimmed_average(scores, 0.29, 1.0) == pytest.approx(np.mean(np.arange(29.0, 100.0)))


def test_trimmed_average_rows_are_ranges():
    scores = np.array([[4.0, 1.0, 3.0, 2.0], [10.0, 0.0, 0.0, 0.0]])
    out = trimmed_average(scores, 0.5, 1.0)  # top two of each range
    np.testing.assert_allclose(out, [3.5, 5.0])
    assert out.shape == (2,)


def test_no_trim_is_the_bayes_factor_mean():
    scores = np.random.default_rng(1).normal(size=(7, 13))
    np.testing.assert_allclose(trimmed_average(scores, 0.0, 1.0), bayes_factor(scores))
    np.testing.assert_allclose(bayes_factor(scores), scores.mean(axis=1))


def test_top_window_approaches_glrt_from_below():
    scores = np.random.default_rng(2).normal(size=(5, 20))
    mx = glrt(scores)
    np.testing.assert_allclose(mx, scores.max(axis=1))
    prev = trimmed_average(scores, 0.0, 1.0)
    for q_s in np.linspace(0.05, 1.0, 20):
        cur = trimmed_average(scores, float(q_s), 1.0)
        assert np.all(cur >= prev - 1e-12)  # dropping low scores only raises the mean
        assert np.all(cur <= mx + 1e-12)  # ... and never past the max
        prev = cur
    assert np.all(prev < mx + 1e-12) and np.all(trimmed_average(scores, 0.0, 1.0) < mx)
    np.testing.assert_allclose(trimmed_average(scores, 1.0, 1.0), mx)
    np.testing.assert_allclose(trimmed_average(scores, 0.96, 1.0), mx)  # top 1 of 20


def test_empty_window_keeps_one_rank():
    assert trim_window(4, 0.5, 0.5) == (2, 3)
    assert trimmed_average([1.0, 2.0, 3.0, 4.0], 0.5, 0.5) == 3.0
    assert trimmed_average([1.0, 2.0, 3.0, 4.0], 0.0, 0.0) == 1.0


def test_trim_rejects_percentages_and_bad_windows():
    with pytest.raises(ValueError, match="fraction"):
        trimmed_average(ONE_TO_TEN, 20, 100)
    with pytest.raises(ValueError, match="must not exceed"):
        trimmed_average(ONE_TO_TEN, 0.6, 0.4)
    with pytest.raises(ValueError, match="NaN"):
        trimmed_average([1.0, np.nan], 0.0, 1.0)


# --------------------------------------------------------------------------- sweep on the reference


# Hand-made reference ranges, 4 samples each. Range AUCs, worked out by hand:
#   (0, 1):    IN means 2, 1.5;  OUT 2, 1.75 -> pairs (tie, win, loss, loss) = 1.5/4 = 0.375
#   (0.5, 1):  IN 4, 3;          OUT 2, 3.5  -> (win, win, win, loss)      = 0.75
#   (0.75, 1): IN 4, 3;          OUT 2, 7    -> (win, loss, win, loss)     = 0.5
REF_IN = np.array([[0.0, 0.0, 4.0, 4.0], [0.0, 3.0, 0.0, 3.0]])
REF_OUT = np.array([[2.0, 2.0, 2.0, 2.0], [7.0, 0.0, 0.0, 0.0]])
GRID = [(0.0, 1.0), (0.5, 1.0), (0.75, 1.0)]


def test_sweep_trim_picks_the_best_grid_point():
    q_s, q_e, table = sweep_trim(REF_IN, REF_OUT, GRID)
    assert (q_s, q_e) == (0.5, 1.0)
    np.testing.assert_allclose(table["auc"], [0.375, 0.75, 0.5])
    assert list(table.columns) == ["q_s", "q_e", "auc"]


def test_sweep_trim_ties_go_to_the_first_grid_point():
    # with 4 samples (0.6, 1) keeps the same ranks [2, 4) as (0.5, 1): equal AUC, the first wins
    q_s, q_e, table = sweep_trim(REF_IN, REF_OUT, [(0.75, 1.0), (0.6, 1.0), (0.5, 1.0)])
    np.testing.assert_allclose(table["auc"], [0.5, 0.75, 0.75])
    assert (q_s, q_e) == (0.6, 1.0)


def test_sweep_trim_cannot_receive_target_labels():
    params = inspect.signature(sweep_trim).parameters
    assert list(params) == ["ref_in_scores", "ref_out_scores", "grid"]
    assert all(p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) for p in params.values())
    with pytest.raises(TypeError):
        sweep_trim(REF_IN, REF_OUT, GRID, target_labels=[1, 0])  # no back door


def test_chosen_trim_does_not_depend_on_the_target():
    rng = np.random.default_rng(3)
    chosen = set()
    for _ in range(5):
        target = rng.normal(size=(6, 4))  # any target scores, any (unused) target labels
        scores, q_s, q_e, table = ramia(target, ref_in_scores=REF_IN, ref_out_scores=REF_OUT, grid=GRID)
        chosen.add((q_s, q_e))
        np.testing.assert_allclose(scores, trimmed_average(target, q_s, q_e))
        np.testing.assert_allclose(table["auc"], [0.375, 0.75, 0.5])
    assert chosen == {(0.5, 1.0)}


def test_sweep_finds_a_bottom_trim_when_a_quarter_of_the_samples_carry_the_signal():
    # IN ranges: 5 of 20 samples are near a training text and score higher; OUT: noise only.
    # Averaging the top quarter should beat both the plain mean (Bayes) and the max (GLRT).
    rng = np.random.default_rng(4)
    ins = rng.normal(size=(200, 20))
    ins[:, :5] += 1.5
    outs = rng.normal(size=(200, 20))
    q_s, q_e, table = sweep_trim(ins, outs, trim_grid("both", 0.05))
    best = table["auc"].max()
    assert q_e == 1.0 and 0.5 <= q_s <= 0.85
    assert best > table.set_index(["q_s", "q_e"]).loc[(0.0, 1.0), "auc"] + 0.01  # beats Bayes factor
    assert best > metrics.auc(glrt(ins), glrt(outs)) + 0.01  # beats GLRT


def test_trim_grid():
    assert trim_grid("bottom", 0.25) == [(0.0, 1.0), (0.25, 1.0), (0.5, 1.0), (0.75, 1.0)]
    assert trim_grid("top", 0.25) == [(0.0, 1.0), (0.0, 0.75), (0.0, 0.5), (0.0, 0.25)]
    assert len(trim_grid("both", 0.25)) == 7
    with pytest.raises(ValueError):
        trim_grid("sideways")


# --------------------------------------------------------------------------- the three notations of a trim


def test_paper_trim_keeps_the_outside_of_equation_4():
    assert R.paper_trim(20, 100) == (0.0, 0.2)  # AG News: keep the lowest 20%
    assert R.paper_trim(45, 100) == (0.0, 0.45)  # Purchase-100
    assert R.paper_trim(0, 25) == (0.25, 1.0)  # CelebA: keep the highest 75%
    assert R.paper_trim(30, 30) == (0.0, 1.0)  # nothing trimmed: the Bayes factor
    # the paper's AG News trim averages the lowest 10 of 50 samples
    scores = np.arange(50.0)
    assert trimmed_average(scores, *R.paper_trim(20, 100)) == pytest.approx(4.5)
    for bad, match in (((10, 90), "both tails"), ((0, 120), "percentile"), ((50, 20), "exceed")):
        with pytest.raises(ValueError, match=match):
            R.paper_trim(*bad)


def test_the_authors_code_names_the_share_trimmed():
    assert R.privacy_meter_trim(*R.paper_trim(20, 100)) == ("top", 0.8)
    assert R.privacy_meter_trim(*R.paper_trim(0, 25)) == ("bottom", 0.25)
    assert R.privacy_meter_trim(0.0, 1.0) == ("none", 0.0)
    with pytest.raises(ValueError, match="trims both ends"):
        R.privacy_meter_trim(0.1, 0.9)
    # what privacy meter's trim_mia_scores(s, ratio, "top") keeps: the lowest int((1 - ratio) n)
    rng = np.random.default_rng(0)
    s = rng.normal(size=(4, 20))
    direction, ratio = R.privacy_meter_trim(*R.paper_trim(0, 25))
    theirs = -np.sort(-s, axis=1)[:, : int((1 - ratio) * 20)].mean(axis=1)  # "bottom": keep the top ones
    np.testing.assert_allclose(trimmed_average(s, 0.25, 1.0), theirs)
    # its int() rounds down in floating point: at ratio 0.8 it keeps one of 10 scores, ours two
    assert int((1 - 0.8) * 10) == 1 and R.kept(10, 0.0, 0.2) == 2


def test_trim_grid_always_holds_the_extra_windows_once():
    ag = R.paper_trim(20, 100)
    assert ag not in trim_grid("both", 0.25)
    assert trim_grid("both", 0.25, extra=[ag])[-1] == ag
    assert trim_grid("top", 0.05, extra=[ag]).count(ag) == 1  # the step already hits it
    with pytest.raises(ValueError, match="q_e"):
        trim_grid("both", 0.25, extra=[(0.0, 2.0)])


def test_feasible_grid_leaves_out_single_sample_windows():
    grid = trim_grid("both", 0.05)
    assert R.kept(10, 0.0, 0.1) == 1 and R.kept(10, 0.95, 1.0) == 1  # a minimum and a maximum
    kept = R.feasible_grid(grid, 10, 2)
    assert (0.0, 0.1) not in kept and (0.95, 1.0) not in kept and (0.0, 0.2) in kept
    assert all(R.kept(10, *q) >= 2 for q in kept) and len(kept) < len(grid)
    assert R.feasible_grid(grid, 10, 1) == grid
    for bad in (0, 11, True):
        with pytest.raises(ValueError, match="min_kept"):
            R.feasible_grid(grid, 10, bad)
    with pytest.raises(ValueError, match="no grid point"):
        R.feasible_grid([(0.0, 0.1)], 10, 2)


# --------------------------------------------------------------------------- offline RMIA


def test_offline_rmia_hand_example():
    # a = 1: log Pr(x) = log mean_ref Pr(x|ref). ratio_x = (0.5, -0.5), ratio_z = (0, -2, -1)
    s = offline_rmia([-1.0, -2.0], [[-1.5], [-1.5]], [-1.0, -3.0, -2.0], [[-1.0], [-1.0], [-1.0]], a=1.0)
    np.testing.assert_allclose(s, [1.0, 2 / 3])
    # a tie with a population text counts as dominated (>= gamma)
    s = offline_rmia([-1.0], [[-1.0]], [-1.0, -3.0, -2.0], [[-1.0], [-1.0], [-1.0]], a=1.0)
    np.testing.assert_allclose(s, [1.0])
    # gamma = e: x must beat z by a factor e -> ratio_x - 1 >= ratio_z
    s = offline_rmia([-1.0, -2.0], [[-1.5], [-1.5]], [-1.0, -3.0, -2.0], [[-1.0], [-1.0], [-1.0]], a=1.0, gamma=math.e)
    np.testing.assert_allclose(s, [2 / 3, 1 / 3])


def _rmia_in_probability_space(tx, rx, tz, rz, a):
    """Independent reference: the privacy-meter formula with plain probabilities."""
    px = (1 + a) / 2 * np.exp(rx).mean(axis=1) + (1 - a) / 2
    pz = (1 + a) / 2 * np.exp(rz).mean(axis=1) + (1 - a) / 2
    rx_, rz_ = np.exp(tx) / px, np.exp(tz) / pz
    return np.array([np.mean(r / rz_ >= 1.0 - 1e-12) for r in rx_])


@pytest.mark.parametrize("a", [0.0, 0.3, 1.0])
def test_offline_rmia_matches_the_probability_space_formula(a):
    rng = np.random.default_rng(5)
    tx, tz = -rng.uniform(0.5, 4, 30), -rng.uniform(0.5, 4, 50)
    rx, rz = -rng.uniform(0.5, 4, (30, 3)), -rng.uniform(0.5, 4, (50, 3))
    np.testing.assert_allclose(offline_rmia(tx, rx, tz, rz, a=a), _rmia_in_probability_space(tx, rx, tz, rz, a))


def test_offline_rmia_is_monotone_in_the_target_likelihood():
    rng = np.random.default_rng(6)
    tz, rz = -rng.uniform(0.5, 4, 40), -rng.uniform(0.5, 4, (40, 2))
    lps = np.linspace(-5, -0.1, 25)
    s = offline_rmia(lps, np.full((25, 2), -2.0), tz, rz, a=0.5)
    assert np.all(np.diff(s) >= 0) and s[0] < s[-1]
    assert s.min() >= 0 and s.max() <= 1


def test_offline_rmia_validates_inputs():
    with pytest.raises(ValueError, match="log-probabilities"):
        offline_rmia([0.5], [[-1.0]], [-1.0], [[-1.0]])
    with pytest.raises(ValueError, match="reference models"):
        offline_rmia([-1.0], [[-1.0, -2.0]], [-1.0], [[-1.0]])
    with pytest.raises(ValueError, match="a must be"):
        offline_rmia([-1.0], [[-1.0]], [-1.0], [[-1.0]], a=2.0)


# ----------------------------------------------------------------------------- the backbone registry

OWN = np.array([-1.0, -2.0])
OTHER = np.array([-1.5, -1.5])
Z_OWN = np.array([-1.0, -3.0, -2.0])
Z_OTHER = np.array([-1.0, -1.0, -1.0])


def test_registry_holds_the_three_backbones_with_their_labels():
    assert {b: BACKBONES[b].label for b in BACKBONES} == {"loss": "LOSS", "ref": "Reference", "rmia": "RMIA"}
    assert [b for b in BACKBONES if BACKBONES[b].needs_reference] == ["ref", "rmia"]


def test_loss_backbone_is_the_mean_log_probability():
    np.testing.assert_array_equal(backbone_scores("loss", OWN), OWN)  # higher log-probability = member
    np.testing.assert_array_equal(backbone_scores("loss", OWN, OTHER, Z_OWN, Z_OTHER), OWN)


def test_reference_backbone_is_the_log_probability_gain_over_the_reference():
    # by hand: -1 - (-1.5) = 0.5, -2 - (-1.5) = -0.5
    np.testing.assert_allclose(backbone_scores("ref", OWN, OTHER), [0.5, -0.5])


def test_rmia_backbone_hand_values():
    # a = 1: ratio_x = own - other = (0.5, -0.5); ratio_z = (0, -2, -1); share of z at or below: 3/3, 2/3
    np.testing.assert_allclose(backbone_scores("rmia", OWN, OTHER, Z_OWN, Z_OTHER, a=1.0), [1.0, 2 / 3])


def test_backbones_keep_the_shape_of_a_range_game():
    rng = np.random.default_rng(0)
    own, other = -rng.uniform(0.5, 3, (4, 5)), -rng.uniform(0.5, 3, (4, 5))
    for b in BACKBONES:
        assert backbone_scores(b, own, other, Z_OWN, Z_OTHER).shape == (4, 5)
    flat = offline_rmia(own.ravel(), other.ravel(), Z_OWN, Z_OTHER, a=0.5)
    np.testing.assert_allclose(backbone_scores("rmia", own, other, Z_OWN, Z_OTHER, a=0.5), flat.reshape(4, 5))


def test_every_backbone_scores_a_more_likely_text_at_least_as_high():
    own = np.linspace(-4, -0.5, 9)
    for b in BACKBONES:
        s = backbone_scores(b, own, np.full(9, -2.0), Z_OWN, Z_OTHER)
        assert np.all(np.diff(s) >= 0) and s[-1] > s[0], b


def test_backbone_registry_refuses_unknown_names_and_missing_inputs():
    with pytest.raises(ValueError, match="unknown backbone 'lira'"):
        get_backbone("lira")
    with pytest.raises(ValueError, match="reference"):
        backbone_scores("ref", OWN)
    with pytest.raises(ValueError, match="population"):
        backbone_scores("rmia", OWN, OTHER)
    with pytest.raises(ValueError, match="same texts"):
        backbone_scores("ref", OWN, OTHER[:1])
