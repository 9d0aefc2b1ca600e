"""The main-results rules (MIMIR §3.1): one test per rule and outcome, on synthetic effect frames."""

import pandas as pd
import pytest

from mimirlib.experiments.main_scores import EFFECT_COLUMNS
from mimirlib.verdicts import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTED, PARTLY, REPRODUCED
from mimirlib.verdicts import main_results as rules

DOMAINS = ["code", "math", "docs", "licenses", "encyclopedia", "changelog"]
CLEAR_UP = (0.05, 0.02, 0.08)  # interval excludes 0
CLEAR_DOWN = (-0.05, -0.08, -0.02)
NOISE = (0.01, -0.02, 0.04)  # interval straddles 0
COLUMNS = EFFECT_COLUMNS  # the paired-effects frame the experiment hands the rules


def effects(units, attack="ref", seed_sd=0.005, source="measured", n=150):
    """One effect row per (estimate, lo, hi) in ``units``, one domain each (cycling), for ``attack``."""
    rows = []
    for i, (est, lo, hi) in enumerate(units):
        rows.append(
            {
                "domain": DOMAINS[i % len(DOMAINS)] + ("" if i < len(DOMAINS) else str(i)),
                "attack": attack,
                "a": "x",
                "b": "y",
                "estimate": est,
                "lo": lo,
                "hi": hi,
                "seed_sd": seed_sd,
                "n_seeds": 3,
                "seed_sd_from": source,
                "n_members": n,
                "n_nonmembers": n,
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def aucs(values):
    return pd.DataFrame(
        {
            "domain": [f"d{i}" for i in range(len(values))],
            "attack": "loss",
            "auc": values,
            "n_members": 150,
            "n_nonmembers": 150,
        }
    )


def assert_complete(v):
    for f in ("claim", "verdict", "evidence", "rule", "source", "paper_value", "lab_value", "n", "origin", "key"):
        assert getattr(v, f), f
    assert v.origin == "paper" and v.source.startswith("MIMIR §3.1")


# ----------------------------------------------------------------------------- near random


def test_near_random_rule_reproduced_when_most_aucs_below_bound():
    v = rules.near_random(aucs([0.55, 0.52, 0.58, 0.65]), model="target-h256")  # 75% below
    assert v.verdict == REPRODUCED
    assert_complete(v)
    assert "4 AUCs of target-h256" in v.n and "150 + 150 texts" in v.n
    assert "d3/loss 0.650" in v.evidence


def test_near_random_rule_partly_when_a_large_minority_is_below():
    assert rules.near_random(aucs([0.55, 0.52, 0.65, 0.7, 0.8]), model="m").verdict == PARTLY  # 40%


def test_near_random_rule_not_reproduced_when_few_below():
    assert rules.near_random(aucs([0.55, 0.65, 0.7, 0.8, 0.9]), model="m").verdict == NOT_REPRODUCED  # 20%


def test_near_random_rule_bound_is_strict():
    # an AUC of exactly 0.6 is not "below 0.6"
    assert rules.near_random(aucs([rules.NEAR_RANDOM_AUC] * 4), model="m").verdict == NOT_REPRODUCED


def test_near_random_rule_not_tested_without_aucs():
    assert rules.near_random(aucs([]), model="m").verdict == NOT_TESTED


def test_near_random_paper_value_from_table_1():
    assert "36 of 40 AUCs below 0.6 at 12B" in rules.near_random(aucs([0.5]), model="m").paper_value


# ----------------------------------------------------------------------------- size trend, reference attack


def test_size_trend_reference_rule_reproduced_when_ref_clearly_rises_everywhere():
    v = rules.model_difference(rules.SIZE_TREND_REFERENCE, effects([CLEAR_UP] * 6), a="target-h256", b="target-h32")
    assert v.verdict == REPRODUCED
    assert_complete(v)
    assert v.n.startswith("6 domains") and "3 seeds" in v.n
    assert "AUC(target-h256) - AUC(target-h32)" in v.rule


def test_size_trend_reference_rule_not_reproduced_when_ref_falls_in_four_of_six():
    v = rules.model_difference(rules.SIZE_TREND_REFERENCE, effects([CLEAR_DOWN] * 4 + [CLEAR_UP] * 2), a="l", b="s")
    assert v.verdict == NOT_REPRODUCED
    assert "clearly opposite in 4" in v.lab_value and "code/ref: -0.050" in v.evidence


def test_size_trend_reference_rule_partly_when_half_rise_and_none_fall():
    v = rules.model_difference(rules.SIZE_TREND_REFERENCE, effects([CLEAR_UP] * 3 + [NOISE] * 3), a="l", b="s")
    assert v.verdict == PARTLY


def test_size_trend_reference_rule_inconclusive_when_inside_noise():
    v = rules.model_difference(rules.SIZE_TREND_REFERENCE, effects([NOISE] * 6), a="l", b="s")
    assert v.verdict == INCONCLUSIVE


def test_size_trend_reference_rule_inconclusive_when_inside_the_seed_spread():
    # every paired interval excludes 0, but the effects are under 2 seed sd
    v = rules.model_difference(rules.SIZE_TREND_REFERENCE, effects([CLEAR_UP] * 6, seed_sd=0.03), a="l", b="s")
    assert v.verdict == INCONCLUSIVE


def test_size_trend_reference_rule_reads_only_the_reference_attack():
    frame = pd.concat([effects([CLEAR_UP] * 6), effects([CLEAR_DOWN] * 6, attack="loss")])
    assert rules.model_difference(rules.SIZE_TREND_REFERENCE, frame, a="l", b="s").verdict == REPRODUCED


def test_size_trend_reference_rule_says_when_seed_sd_is_estimated():
    v = rules.model_difference(rules.SIZE_TREND_REFERENCE, effects([CLEAR_UP] * 6, source="estimated"), a="l", b="s")
    assert "estimated" in v.rule and "estimated" in v.n


def test_size_trend_reference_rule_not_tested_with_one_size():
    assert rules.model_difference(rules.SIZE_TREND_REFERENCE, effects([]), a="s", b="s").verdict == NOT_TESTED


# ----------------------------------------------------------------------------- size trend, other attacks


def test_size_trend_other_attacks_rule_reproduced_when_all_rise():
    v = rules.model_difference(rules.SIZE_TREND_OTHER_ATTACKS, effects([CLEAR_UP] * 12, attack="loss"), a="l", b="s")
    assert v.verdict == REPRODUCED
    assert_complete(v)
    assert v.n.startswith("12 (domain, attack) pairs")


def test_size_trend_other_attacks_rule_not_reproduced_when_most_fall():
    v = rules.model_difference(
        rules.SIZE_TREND_OTHER_ATTACKS, effects([CLEAR_DOWN] * 8 + [CLEAR_UP] * 4, attack="zlib"), a="l", b="s"
    )
    assert v.verdict == NOT_REPRODUCED


def test_size_trend_other_attacks_rule_partly_when_more_rise_than_fall():
    v = rules.model_difference(
        rules.SIZE_TREND_OTHER_ATTACKS,
        effects([CLEAR_UP] * 5 + [CLEAR_DOWN] * 2 + [NOISE] * 3, attack="loss"),
        a="l",
        b="s",
    )
    assert v.verdict == PARTLY


def test_size_trend_other_attacks_rule_inconclusive_when_inside_noise():
    v = rules.model_difference(rules.SIZE_TREND_OTHER_ATTACKS, effects([NOISE] * 12, attack="min_k"), a="l", b="s")
    assert v.verdict == INCONCLUSIVE
    assert "inside the noise: " in v.evidence  # more than MAX_LISTED units: the noisy ones by name


def test_size_trend_other_attacks_rule_ignores_the_reference_attack():
    assert (
        rules.model_difference(rules.SIZE_TREND_OTHER_ATTACKS, effects([CLEAR_UP] * 6), a="l", b="s").verdict
        == NOT_TESTED
    )


# ----------------------------------------------------------------------------- deduplication


def test_dedup_reference_rule_reproduced_when_natural_twin_clearly_higher():
    v = rules.model_difference(rules.DEDUP_REFERENCE, effects([CLEAR_UP] * 6), a="target-h64-natural", b="target-h64")
    assert v.verdict == REPRODUCED
    assert_complete(v)
    assert "AUC(target-h64-natural) - AUC(target-h64)" in v.rule


def test_dedup_reference_rule_not_reproduced_when_natural_twin_lower_in_five_of_six():
    v = rules.model_difference(rules.DEDUP_REFERENCE, effects([CLEAR_DOWN] * 5 + [CLEAR_UP]), a="n", b="d")
    assert v.verdict == NOT_REPRODUCED


def test_dedup_reference_rule_partly_when_half_clearly_for():
    v = rules.model_difference(
        rules.DEDUP_REFERENCE, effects([CLEAR_UP] * 3 + [NOISE] * 2 + [CLEAR_DOWN]), a="n", b="d"
    )
    assert v.verdict == PARTLY


def test_dedup_reference_rule_inconclusive_when_inside_noise():
    assert rules.model_difference(rules.DEDUP_REFERENCE, effects([NOISE] * 6), a="n", b="d").verdict == INCONCLUSIVE


def test_dedup_reference_rule_not_tested_without_twin():
    assert rules.model_difference(rules.DEDUP_REFERENCE, effects([]), a="", b="").verdict == NOT_TESTED


def test_dedup_other_attacks_rule_reproduced_when_natural_twin_clearly_higher():
    v = rules.model_difference(rules.DEDUP_OTHER_ATTACKS, effects([CLEAR_UP] * 10, attack="loss"), a="n", b="d")
    assert v.verdict == REPRODUCED
    assert_complete(v)


def test_dedup_other_attacks_rule_coin_flip_is_inconclusive_when_inside_noise():
    # half the pairs favour the natural twin, half the dedup one, none clearly: a coin flip
    flip = [(0.01, -0.03, 0.05)] * 5 + [(-0.01, -0.05, 0.03)] * 5
    v = rules.model_difference(rules.DEDUP_OTHER_ATTACKS, effects(flip, attack="loss"), a="n", b="d")
    assert v.verdict == INCONCLUSIVE


def test_dedup_other_attacks_rule_clear_coin_flip_is_not_reproduced():
    v = rules.model_difference(
        rules.DEDUP_OTHER_ATTACKS, effects([CLEAR_UP] * 5 + [CLEAR_DOWN] * 5, attack="zlib"), a="n", b="d"
    )
    assert v.verdict == NOT_REPRODUCED


def test_dedup_other_attacks_rule_partly_when_more_for_than_against():
    v = rules.model_difference(
        rules.DEDUP_OTHER_ATTACKS, effects([CLEAR_UP] * 5 + [CLEAR_DOWN] + [NOISE] * 4, attack="loss"), a="n", b="d"
    )
    assert v.verdict == PARTLY


# ----------------------------------------------------------------------------- best attack


def test_best_attack_rule_reproduced_when_ref_clearly_beats_the_others():
    v = rules.best_attack(effects([CLEAR_UP] * 10, attack="loss"), model="target-h256")
    assert v.verdict == REPRODUCED
    assert_complete(v)
    assert "(domain, other attack) pair" in v.n


def test_best_attack_rule_partly_when_ref_wins_more_than_it_loses():
    v = rules.best_attack(effects([CLEAR_UP] * 4 + [CLEAR_DOWN] * 2 + [NOISE] * 2, attack="zlib"), model="m")
    assert v.verdict == PARTLY


def test_best_attack_rule_not_reproduced_when_ref_mostly_loses():
    assert rules.best_attack(effects([CLEAR_DOWN] * 6, attack="min_k"), model="m").verdict == NOT_REPRODUCED


def test_best_attack_rule_inconclusive_when_inside_noise():
    assert rules.best_attack(effects([NOISE] * 10, attack="loss"), model="m").verdict == INCONCLUSIVE


def test_best_attack_rule_not_tested_without_effects():
    assert rules.best_attack(effects([]), model="m").verdict == NOT_TESTED


@pytest.mark.parametrize(
    "rule,needle",
    [
        (lambda e: rules.model_difference(rules.SIZE_TREND_REFERENCE, e, a="l", b="s"), "in 6 of 8 domains"),
        (lambda e: rules.best_attack(e, model="m"), "highest AUC at 12B in 7 of 8 domains"),
        (lambda e: rules.model_difference(rules.DEDUP_REFERENCE, e, a="n", b="d"), "Tables 12 vs 1"),
    ],
)
def test_paper_values_are_computed_from_the_transcribed_tables(rule, needle):
    assert needle in rule(effects([CLEAR_UP])).paper_value
