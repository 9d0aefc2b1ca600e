import math
import zlib

import numpy as np
import pytest

from mimirlib.attacks import ATTACKS, AttackInputs, lowest_k, score
from mimirlib.signals import TokenSignals


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
