"""The "RaMIA beyond text" rules: one test per modality and outcome, on synthetic gain frames."""

import math

import pandas as pd
import pytest

from scipy import stats

from mimirlib.core import power
from mimirlib.display.paper_tables import load_paper_tables
from mimirlib.verdicts import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTED, PARTLY, REPRODUCED, SEED_Z
from mimirlib.verdicts import ramia_beyond_text as rules
from mimirlib.verdicts import regime

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
def test_the_pooled_mean_reads_in_points_like_the_gains(rule, claim):
    v = rule(gains(NOISE, NOISE), n="-")
    assert (
        "+0.50 points [-1.00, +2.00]" in v.evidence
        and "over samplings. Pooled (claimed direction): +0.50 points, se " in v.evidence
    )


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
    """Two replicates, gains 0.02 and 0.04: mean 0.03, sd 0.01414, t(0.975, 1) = 12.706, so the interval is
    0.03 +/- 12.706 x 0.01414 / sqrt(2) = 0.03 +/- 0.12706; no second noise bar (spread NaN)."""
    out = rules.over_replicates(replicated([0.02, 0.04])).set_index("backbone")
    r = out.loc["RMIA"]
    assert r.estimate == pytest.approx(0.03) and r.replicate_sd == pytest.approx(0.0141421, abs=1e-6)
    assert r.lo == pytest.approx(0.03 - 0.127062, abs=1e-5) and r.hi == pytest.approx(0.03 + 0.127062, abs=1e-5)
    assert math.isnan(r.spread) and r.n_iterations == 2 and r.over == "replicates"
    assert r.auc_a == pytest.approx(0.63) and rules.spread_of(r) == r.replicate_sd
    one = rules.over_replicates(replicated([0.02]))  # one replicate: as it is, read over its samplings
    assert (one.over == "samplings").all() and one.estimate.tolist() == [0.02, 0.02]
    assert rules.spread_of(next(one.itertuples())) == 0.002
    with pytest.raises(ValueError, match="twice"):
        rules.over_replicates(pd.concat([replicated([0.02, 0.04]), replicated([0.03])]))


def spread_exactly(mean, sd):
    """Four replicate gains with exactly this mean and sample sd."""
    z = pd.Series([-1.5, -0.5, 0.5, 1.5])
    return (mean + sd * z / z.std(ddof=1)).tolist()


@pytest.mark.parametrize("rule,claim", RULES)
def test_the_t_interval_over_replicates_decides(rule, claim):
    """Four replicates with mean 0.03: clear exactly when t(0.975, 3) sd / 2 < 0.03, i.e. sd < 0.018854; each
    replicate's own paired interval (here +/- 0.001, always clear) does not decide."""
    bar = 0.03 * 2 / stats.t.ppf(0.975, 3)
    assert bar == pytest.approx(0.018854, abs=1e-6)
    v = rule(replicated(spread_exactly(0.03, 0.99 * bar), half=0.001), n="4 replicates")
    assert v.verdict == REPRODUCED and "over replicates" in v.evidence and "mean of 4 replicates" in v.evidence
    assert "one-sample t test" in v.rule and "paired 95% bootstrap interval excludes 0" not in v.rule  # one bar
    assert rule(replicated(spread_exactly(0.03, 1.01 * bar), half=0.001), n="-").verdict == INCONCLUSIVE
    assert rule(replicated(spread_exactly(-0.03, 0.99 * bar), half=0.001), n="-").verdict == NOT_REPRODUCED


def test_the_mde_over_replicates_is_the_t_intervals():
    """The power reading takes its se from the t interval alone (no seed part: the spread between replicates is in
    it), so the MDE is (1.96 + 0.84) x t sd / sqrt(R) / 1.96 (the two backbones share their ranges: read as fully
    correlated, not averaged down), and there is no floor. Here sd 0.01, R 4: MDE 0.0227."""
    sd = 0.01
    v = rules.tables_gain(replicated(spread_exactly(0.0, sd)), n="-")
    se = stats.t.ppf(0.975, 3) * sd / 2 / power.Z_TWO_SIDED
    assert v.mde == pytest.approx(power.mde(se), rel=1e-6) and v.mde == pytest.approx(0.022745, abs=1e-6)
    assert v.mde_floor is None
    assert v.verdict == INCONCLUSIVE and v.power == "smaller than the paper's"  # 0 + 1.645 se < 0.0262


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


@pytest.mark.parametrize("rule,claim", RULES)
def test_a_target_out_of_the_papers_regime_bars_the_verdict(rule, claim):
    # replicates' targets at 95-97% test accuracy: the interval lies above 90%, the gains are not read
    column = "CIFAR-10" if claim is rules.IMAGES_GAIN else "Purchase-100"
    out = regime.generalisation("images", column, [0.95, 0.96, 0.97], 1697)
    v = rule(gains(CLEAR_UP, CLEAR_UP), n="n", regime=[out])
    assert v.verdict == NOT_TESTED and v.regime == out.key and "test accuracy 96.0%" in v.evidence
    # in regime (86-88%): the same gains decide, the row linked
    inside = regime.generalisation("images", column, [0.86, 0.87, 0.88], 1697)
    v = rule(gains(CLEAR_UP, CLEAR_UP), n="n", regime=[inside])
    assert v.verdict == REPRODUCED and v.regime == inside.key
    # cannot tell (the interval straddles 90%): the rule decides, as for the other chapters' rows
    straddles = regime.generalisation("images", column, [0.87, 0.90, 0.93], 1697)
    assert straddles.in_regime is None
    assert rule(gains(CLEAR_UP, CLEAR_UP), n="n", regime=[straddles]).verdict == REPRODUCED
