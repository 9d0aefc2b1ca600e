"""The "RaMIA beyond text" rules: one test per modality and outcome, on synthetic gain frames."""

import math

import pandas as pd
import pytest

from mimirlib.display.paper_tables import load_paper_tables
from mimirlib.verdicts import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTED, PARTLY, REPRODUCED, SEED_Z
from mimirlib.verdicts import ramia_beyond_text as rules

CLEAR_UP = (0.03, 0.01, 0.05)  # estimate, lo, hi: the interval excludes 0, positive
CLEAR_DOWN = (-0.03, -0.05, -0.01)
NOISE = (0.005, -0.01, 0.02)  # the interval covers 0

RULES = [(rules.images_gain, rules.IMAGES_GAIN), (rules.tables_gain, rules.TABLES_GAIN)]


def gains(loss, rmia, spread=0.002):
    rows = []
    for backbone, (est, lo, hi) in (("LOSS", loss), ("RMIA", rmia)):
        rows.append(
            {
                "backbone": backbone,
                "estimate": est,
                "lo": lo,
                "hi": hi,
                "spread": spread,
                "auc_a": 0.6 + est,
                "auc_b": 0.6,
                "n_iterations": 10,
            }
        )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("rule,claim", RULES)
@pytest.mark.parametrize(
    "loss,rmia,outcome",
    [
        (CLEAR_UP, CLEAR_UP, REPRODUCED),
        (CLEAR_UP, NOISE, PARTLY),
        (CLEAR_DOWN, NOISE, NOT_REPRODUCED),
        (CLEAR_DOWN, CLEAR_DOWN, NOT_REPRODUCED),
        (NOISE, NOISE, INCONCLUSIVE),
    ],
)
def test_each_outcome(rule, claim, loss, rmia, outcome):
    v = rule(gains(loss, rmia), n="10 IN + 10 OUT ranges")
    assert v.verdict == outcome
    assert v.key == claim.key and v.paper_value == claim.paper_value and v.claim == claim.text
    assert "LOSS" in v.evidence and "RMIA" in v.evidence and "over samplings" in v.evidence
    assert v.n == "10 IN + 10 OUT ranges"


@pytest.mark.parametrize("rule,claim", RULES)
def test_a_gain_inside_the_sampling_spread_is_not_clear(rule, claim):
    """The paired interval excludes 0, but fresh samplings move the mean gain of 10 by more than half of it."""
    wide = CLEAR_UP[0] / SEED_Z * 1.01 * math.sqrt(10)
    assert rule(gains(CLEAR_UP, CLEAR_UP, spread=wide), n="-").verdict == INCONCLUSIVE
    # the mean of 10 samplings is held to 2 sd / sqrt(10), not to 2 sd of one sampling
    assert rule(gains(CLEAR_UP, CLEAR_UP, spread=wide / 1.02), n="-").verdict == REPRODUCED
    assert rule(gains(CLEAR_UP, CLEAR_UP, spread=CLEAR_UP[0] / SEED_Z * 1.01), n="-").verdict == REPRODUCED
    assert rule(gains(CLEAR_UP, CLEAR_UP, spread=math.nan), n="-").verdict == REPRODUCED  # one sampling: interval only


def replicated(estimates, half=0.03):
    """A gains frame of one replicate per estimate, both backbones alike, each with a paired interval of
    half-width ``half``."""
    frames = []
    for i, est in enumerate(estimates):
        frames.append(gains((est, est - half, est + half), (est, est - half, est + half)).assign(replicate=i))
    return pd.concat(frames, ignore_index=True)


def test_over_replicates_by_hand():
    """Two replicates, gains 0.02 and 0.04, each +/- 0.03: mean 0.03, each side pooled sqrt(2 x 0.03^2) / 2 =
    0.0212, spread the std of (0.02, 0.04) = 0.01414, averaged over 2."""
    out = rules.over_replicates(replicated([0.02, 0.04])).set_index("backbone")
    r = out.loc["RMIA"]
    assert r.estimate == pytest.approx(0.03)
    assert r.lo == pytest.approx(0.03 - 0.0212132, abs=1e-6) and r.hi == pytest.approx(0.03 + 0.0212132, abs=1e-6)
    assert r.spread == pytest.approx(0.0141421, abs=1e-6) and r.n_iterations == 2 and r.over == "replicates"
    assert r.auc_a == pytest.approx(0.63)
    one = rules.over_replicates(replicated([0.02]))  # one replicate: as it is, read over its samplings
    assert (one.over == "samplings").all() and one.estimate.tolist() == [0.02, 0.02]
    with pytest.raises(ValueError, match="twice"):
        rules.over_replicates(pd.concat([replicated([0.02, 0.04]), replicated([0.03])]))


@pytest.mark.parametrize("rule,claim", RULES)
def test_the_replicate_spread_is_the_noise_bar(rule, claim):
    """Four replicates whose pooled interval excludes 0 (0.03 +/- 0.015): clear only when the mean exceeds 2 sd
    between replicates / sqrt(4) (sd 0.0258 -> bar 0.0258 < 0.03: clear; sd 0.0316 -> bar 0.0316 > 0.03)."""
    near = replicated([0.0, 0.02, 0.04, 0.06])  # sd 0.0258
    v = rule(near, n="4 replicates")
    assert v.verdict == REPRODUCED and "over replicates" in v.evidence and "mean of 4 replicates" in v.evidence
    assert "replicate spread stands where the core rule has a seed spread" in v.rule
    wide = replicated([-0.01, 0.02, 0.04, 0.07])  # mean 0.03, sd 0.0337: 2 sd / 2 = 0.0337 > 0.03
    assert rule(wide, n="4 replicates").verdict == INCONCLUSIVE
    across = replicated([-0.03, 0.09], half=0.01)  # each clear, opposite: the pooled mean +0.03 within the spread
    assert rule(across, n="2 replicates").verdict == INCONCLUSIVE


@pytest.mark.parametrize("rule,claim", RULES)
def test_a_modality_not_run_is_not_tested(rule, claim):
    v = rule(pd.DataFrame(), n="not run")
    assert v.verdict == NOT_TESTED and v.key == claim.key


@pytest.mark.parametrize("claim,column", [(rules.IMAGES_GAIN, "CIFAR-10"), (rules.TABLES_GAIN, "Purchase-100")])
def test_claims_quote_the_transcribed_table_iii(claim, column):
    df = load_paper_tables()
    t3 = df[(df.paper == "ramia") & (df.table == "III") & (df.column == column)].set_index("row")
    for backbone in ("rmia", "lira"):
        value, std = t3.loc[backbone, "value"], t3.loc[backbone, "std"]
        assert f"+{value:.2f} ± {std:.2f}" in claim.paper_value, (backbone, claim.paper_value)
