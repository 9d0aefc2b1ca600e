"""The lab page's sanity-check rule: one test per outcome, on synthetic paired gaps."""

import math

import pandas as pd

from mimirlib.verdicts import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTED, PARTLY, REPRODUCED
from mimirlib.verdicts import lab as rules

CLEAR_UP = (0.30, 0.20, 0.40)
CLEAR_DOWN = (-0.10, -0.20, -0.02)
NOISE = (0.05, -0.05, 0.15)


def gaps(*effects, seed_sd=0.01):
    return pd.DataFrame(
        [
            {
                "b": f"target-h{16 * 2**i}",
                "auc_b": 0.55,
                "estimate": e[0],
                "lo": e[1],
                "hi": e[2],
                "seed_sd": seed_sd,
                "n_seeds": 3,
            }
            for i, e in enumerate(effects)
        ]
    )


def verdict(frame, auc=0.9, lo=0.8, hi=0.97):
    return rules.lab_is_informative(auc, lo, hi, frame, many="epochs-8x-h64", n="180 + 180 texts")


def test_informative_rule_reproduced_when_many_epochs_clearly_beat_every_target():
    v = verdict(gaps(CLEAR_UP, CLEAR_UP, CLEAR_UP, CLEAR_UP))
    assert v.verdict == REPRODUCED
    assert v.origin == "book" and v.key == "book-lab-informative"
    for f in ("claim", "evidence", "rule", "source", "paper_value", "lab_value", "n"):
        assert getattr(v, f), f


def test_informative_rule_not_reproduced_when_the_interval_lies_at_or_below_chance():
    # the gaps are clear, but the many-epoch model itself shows no signal
    v = verdict(gaps(CLEAR_UP, CLEAR_UP), auc=0.47, lo=0.43, hi=rules.CHANCE)
    assert v.verdict == NOT_REPRODUCED
    assert "no signal" in v.evidence and "inside MIMIR's near-random band" in v.evidence


def test_informative_rule_inconclusive_when_the_interval_reaches_chance():
    for lo, hi in ((rules.CHANCE, 0.8), (0.45, 0.56), (0.4, rules.CHANCE + 0.001)):
        v = verdict(gaps(CLEAR_UP, CLEAR_UP), auc=0.53, lo=lo, hi=hi)
        assert v.verdict == INCONCLUSIVE, (lo, hi)
        assert "cannot tell" in v.evidence


def test_informative_rule_reproduced_just_above_chance_and_reports_the_near_random_band():
    v = verdict(gaps(CLEAR_UP, CLEAR_UP), auc=0.56, lo=rules.CHANCE + 0.01, hi=0.6)
    assert v.verdict == REPRODUCED and "lies inside MIMIR's near-random band (< 0.6)" in v.evidence
    # the lab draws' case: 0.635 [0.595, 0.676] with every gap clear; the 0.6 band is reported, not a gate
    v = verdict(gaps(CLEAR_UP, CLEAR_UP), auc=0.635, lo=0.595, hi=0.676)
    assert v.verdict == REPRODUCED and "straddles the edge of MIMIR's near-random band (0.6)" in v.evidence
    v = verdict(gaps(CLEAR_UP, CLEAR_UP), auc=0.7, lo=rules.SIGNAL_FLOOR + 0.01, hi=0.8)
    assert v.verdict == REPRODUCED and "clears MIMIR's near-random band" in v.evidence
    assert "reported, not a gate" in v.rule


def test_informative_rule_not_reproduced_when_one_epoch_targets_score_clearly_higher():
    assert verdict(gaps(CLEAR_DOWN, CLEAR_DOWN, NOISE)).verdict == NOT_REPRODUCED


def test_informative_rule_partly_when_half_the_targets_are_clearly_below():
    assert verdict(gaps(CLEAR_UP, CLEAR_UP, NOISE, NOISE)).verdict == PARTLY


def test_informative_rule_inconclusive_when_inside_noise():
    assert verdict(gaps(NOISE, NOISE, NOISE)).verdict == INCONCLUSIVE


def test_informative_rule_inconclusive_when_gaps_are_within_the_seed_spread():
    v = verdict(gaps(CLEAR_UP, CLEAR_UP, CLEAR_UP, seed_sd=0.2))
    assert v.verdict == INCONCLUSIVE
    assert "seed sd 0.200" in v.evidence


def test_informative_rule_reads_nan_seed_sd_as_unknown():
    v = verdict(gaps(CLEAR_UP, CLEAR_UP, seed_sd=math.nan))
    assert v.verdict == REPRODUCED and "seed sd" not in v.evidence


def test_informative_rule_not_tested_without_one_epoch_targets():
    v = verdict(gaps())
    assert v.verdict == NOT_TESTED and v.lab_value
