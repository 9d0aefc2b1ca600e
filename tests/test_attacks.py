import math
import zlib

import numpy as np
import pytest

from mimirlib.core.attacks import AFTER_PAPER, ATTACKS, AttackInputs, lowest_k, needs_extra, score
from mimirlib.core.signals import TokenSignals


def sig(lp, mean=None, var=None):
    lp = np.array(lp, dtype=np.float32)
    return TokenSignals(
        lp,
        np.array(mean if mean is not None else np.zeros_like(lp), dtype=np.float32),
        np.array(var if var is not None else np.ones_like(lp), dtype=np.float32),
    )


X = AttackInputs(
    "hello hello hello",
    sig([-1.0, -2.0, -3.0, -4.0, -10.0]),
    reference=sig([-2.0, -2.0, -2.0, -2.0, -2.0]),
    neighbors=[sig([-5.0, -5.0]), sig([-3.0, -3.0])],
)


def test_loss_is_minus_mean_nll():
    assert score("loss", [X])[0] == pytest.approx(-4.0)


def test_reference_subtracts_reference_nll():
    # -(L_target - L_ref) = -(4 - 2)
    assert score("ref", [X])[0] == pytest.approx(-2.0)


def test_zlib_divides_by_compressed_bytes():
    assert score("zlib", [X])[0] == pytest.approx(-4.0 / len(zlib.compress(b"hello hello hello")))


def test_min_k_takes_floor_k_lowest_and_keeps_one():
    # k=0.4 of 5 tokens -> 2 lowest: -10, -4
    assert score("min_k", [X], k=0.4)[0] == pytest.approx(-7.0)
    # k=0.1 of 5 -> floor 0 -> keep 1
    assert score("min_k", [X], k=0.1)[0] == pytest.approx(-10.0)
    assert score("min_k", [X])[0] == pytest.approx(-10.0)  # default k = 0.2 -> 1 token


def test_min_k_pp_normalises_by_distribution():
    x = AttackInputs("t", sig([-1.0, -2.0, -4.0], mean=[-1.5, -1.0, -2.0], var=[0.25, 4.0, 1.0]))
    z = [(-1 + 1.5) / 0.5, (-2 + 1) / 2.0, (-4 + 2) / 1.0]  # 1.0, -0.5, -2.0
    assert score("min_k_pp", [x], k=0.67)[0] == pytest.approx(np.mean(sorted(z)[:2]))


def test_neighbourhood_compares_with_mean_neighbour_loss():
    # mean neighbour NLL = 4, target NLL = 4 -> 0; shift target
    assert score("ne", [X])[0] == pytest.approx(0.0)
    y = AttackInputs("t", sig([-1.0]), neighbors=X.neighbors)
    assert score("ne", [y])[0] == pytest.approx(3.0)


def test_direction_lower_loss_scores_higher():
    member = AttackInputs("a b", sig([-0.5, -0.5]), reference=sig([-2.0, -2.0]))
    non = AttackInputs("a b", sig([-3.0, -3.0]), reference=sig([-2.0, -2.0]))
    for name in ("loss", "ref", "zlib", "min_k", "min_k_pp"):
        s = score(name, [member, non])
        assert s[0] > s[1], name


def test_missing_inputs_and_bad_params_are_named():
    bare = AttackInputs("t", sig([-1.0]))
    with pytest.raises(ValueError, match="reference"):
        score("ref", [bare])
    with pytest.raises(TypeError, match="q"):
        score("min_k", [bare], q=3)
    with pytest.raises(KeyError, match="nope"):
        score("nope", [bare])
    with pytest.raises(ValueError):
        lowest_k(np.ones(3), 0)


def test_registry_has_the_papers_attacks():
    assert {"loss", "ref", "zlib", "min_k", "min_k_pp", "ne"} <= set(ATTACKS)
    assert math.isclose(ATTACKS["min_k"].params["k"], 0.2)


# ----------------------------------------------------------------------------- attacks after the paper


def test_recall_is_the_ratio_of_prefixed_to_plain_log_likelihood():
    x = AttackInputs("t", sig([-1.0]), prefixed=sig([-2.0, -4.0]), unprefixed=sig([-1.0, -2.0]))
    # LL(x | P) / LL(x) = -3 / -1.5
    assert score("recall", [x])[0] == pytest.approx(2.0)
    # a member loses more likelihood to the non-member prefix: larger ratio, higher score
    non = AttackInputs("t", sig([-1.0]), prefixed=sig([-1.0, -2.0]), unprefixed=sig([-1.0, -2.0]))
    assert score("recall", [x, non]).tolist() == pytest.approx([2.0, 1.0])


def test_dc_pdd_caps_frequency_calibrated_probabilities_over_first_occurrences():
    freq = np.full(10, 0.05)
    freq[5], freq[7] = 0.1, 0.01
    # tokens 5, 7, 5: the second 5 is a repeat and is not counted
    x = AttackInputs("t", sig(np.log([0.5, 0.25, 0.9])), token_ids=np.array([5, 7, 5]), token_freq=freq)
    a5, a7 = 0.5 * math.log(1 / 0.1), 0.25 * math.log(1 / 0.01)  # 1.1513, 1.1513
    assert score("dc_pdd", [x], a=10.0)[0] == pytest.approx((a5 + a7) / 2)
    assert score("dc_pdd", [x], a=1.0)[0] == pytest.approx(1.0)  # both capped
    # default cap a = 0.01: 0.01 * log(100) = 0.046 and 0.5 * log(10) = 1.15 are both capped
    y = AttackInputs("t", sig(np.log([0.01, 0.5])), token_ids=np.array([7, 5]), token_freq=freq)
    assert score("dc_pdd", [y])[0] == pytest.approx(0.01)
    z = AttackInputs("t", sig(np.log([0.001, 0.5])), token_ids=np.array([7, 5]), token_freq=freq)
    assert score("dc_pdd", [z])[0] == pytest.approx((0.001 * math.log(100) + 0.01) / 2)
    with pytest.raises(ValueError, match="token ids"):
        score("dc_pdd", [AttackInputs("t", sig([-1.0, -1.0]), token_ids=np.array([1]), token_freq=freq)])


def test_grad_norm_scores_the_negated_norm():
    xs = [AttackInputs("t", sig([-1.0]), grad_norm=0.5), AttackInputs("t", sig([-1.0]), grad_norm=3.0)]
    assert score("grad_norm", xs).tolist() == pytest.approx([-0.5, -3.0])  # the smaller gradient: member


def test_after_paper_attacks_name_their_missing_inputs():
    bare = AttackInputs("t", sig([-1.0]))
    for name, need in (("recall", "prefixed"), ("dc_pdd", "token_(ids|freq)"), ("grad_norm", "grad_norm")):
        with pytest.raises(ValueError, match=need):
            score(name, [bare])
    assert set(AFTER_PAPER) <= set(ATTACKS)
    assert all(needs_extra(a) for a in AFTER_PAPER)
    assert not any(needs_extra(a) for a in ("loss", "ref", "zlib", "min_k", "min_k_pp", "ne"))
