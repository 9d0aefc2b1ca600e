"""The main-results rules (MIMIR §3.1): one test per rule and outcome, on synthetic effect frames."""

import dataclasses
import json

import pandas as pd
import pytest

from mimirlib.experiments.main_scores import EFFECT_COLUMNS
from mimirlib import verdicts
from mimirlib.verdicts import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTED, PARTLY, REPRODUCED
from mimirlib.verdicts import draws
from mimirlib.verdicts import main_results as rules

DOMAINS = ["code", "math", "docs", "licenses", "encyclopedia", "changelog"]
CLEAR_UP = (0.05, 0.02, 0.08)  # interval excludes 0
CLEAR_DOWN = (-0.05, -0.08, -0.02)
NOISE = (0.01, -0.02, 0.04)  # interval straddles 0
COLUMNS = EFFECT_COLUMNS  # the paired-effects frame the experiment hands the rules


def effects(units, attack="ref", seed_sd=0.005, source="measured", n=150, imputed_for=""):
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
                "seed_sd_imputed_for": imputed_for if source == "estimated" else "",
                "n_members": n,
                "n_nonmembers": n,
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


BELOW = (0.55, 0.50, 0.59)  # (auc, lo, hi): the whole interval below 0.6
ABOVE = (0.70, 0.65, 0.75)  # the whole interval at or above 0.6
STRADDLE = (0.58, 0.54, 0.62)  # the point estimate is below 0.6, the interval is not


def aucs(units, attack="loss", n=150, start=0):
    """One AUC row per (auc, lo, hi) in ``units``, each in its own domain ``d<i>``."""
    return pd.DataFrame(
        [
            {"domain": f"d{start + i}", "attack": attack, "auc": a, "auc_lo": lo, "auc_hi": hi}
            | {"n_members": n, "n_nonmembers": n}
            for i, (a, lo, hi) in enumerate(units)
        ],
        columns=["domain", "attack", "auc", "auc_lo", "auc_hi", "n_members", "n_nonmembers"],
    )


def assert_complete(v):
    for f in ("claim", "verdict", "evidence", "rule", "source", "paper_value", "lab_value", "n", "origin", "key"):
        assert getattr(v, f), f
    assert v.origin == "paper" and v.source.startswith("MIMIR §3.1")


# ----------------------------------------------------------------------------- near random

BOUND = rules.NEAR_RANDOM_AUC


@pytest.mark.parametrize(
    "lo,hi,reading",
    [
        (BOUND - 0.1, BOUND - 1e-9, rules.BELOW_BOUND),  # the upper bound just below 0.6: below
        (BOUND - 0.1, BOUND, rules.UNDECIDED),  # the upper bound at 0.6: not below
        (BOUND, BOUND + 0.1, rules.ABOVE_BOUND),  # the lower bound at 0.6: at or above
        (BOUND - 1e-9, BOUND + 0.1, rules.UNDECIDED),  # just below it: undecided
    ],
)
def test_near_random_reading_on_both_sides_of_the_bound(lo, hi, reading):
    assert rules.near_random_reading(lo, hi) == reading


def test_near_random_rule_reproduced_when_three_in_four_aucs_are_clearly_below():
    v = rules.near_random(aucs([BELOW, BELOW, BELOW, ABOVE]), model="target-h256")
    assert v.verdict == REPRODUCED
    assert_complete(v)
    assert "4 AUCs of target-h256" in v.n and "150 + 150 texts" in v.n
    assert "d3/loss 0.700 [0.650, 0.750]" in v.evidence
    assert v.lab_value == "3 of 4 below 0.6, 1 at or above, 0 undecided"


def test_near_random_rule_partly_when_most_but_under_three_in_four_are_below():
    assert rules.near_random(aucs([BELOW] * 3 + [ABOVE] * 2), model="m").verdict == PARTLY  # 60%


def test_near_random_rule_not_reproduced_when_as_many_are_above():
    assert rules.near_random(aucs([BELOW] * 2 + [ABOVE] * 2), model="m").verdict == NOT_REPRODUCED


def test_near_random_rule_point_estimates_below_the_bound_are_not_enough():
    # the old rule counted these four as below 0.6; their intervals reach past it
    v = rules.near_random(aucs([STRADDLE] * 3 + [BELOW]), model="m")
    assert v.verdict == INCONCLUSIVE
    assert "undecided: 3" in v.evidence


def test_near_random_inconclusive_says_whether_the_intervals_could_clear_the_papers_margin():
    from mimirlib.core import power

    margin = rules._paper_margin()
    assert 0 < margin < 0.1  # the paper's median AUC at 12B sits a few points below 0.6
    # four domains' AUCs, each interval 0.4 wide (se 0.102): pooled independently over the domains' texts,
    # se 0.051 and MDE 0.143, above the paper's margin
    wide = rules.near_random(aucs([(0.55, 0.35, 0.75)] * 4), model="m")
    assert wide.verdict == INCONCLUSIVE and wide.power == power.UNDERPOWERED and wide.mde > margin
    assert wide.mde == pytest.approx(2.8016 * 0.4 / 3.92 / 2, rel=1e-3)
    assert wide.paper_effect == margin
    # tight intervals just under the bound: the lab's AUCs are clearly closer to 0.6 than the paper's
    close = pd.DataFrame([dict(r, auc=0.595, auc_lo=0.59, auc_hi=0.6001) for r in aucs([BELOW] * 4).to_dict("records")])
    v = rules.near_random(close, model="m")
    assert v.verdict == INCONCLUSIVE and v.power == power.SMALLER


def test_near_random_rule_counts_the_paper_attacks_only_and_reports_min_k_pp_beside():
    frame = pd.concat([aucs([BELOW] * 4), aucs([ABOVE] * 4, attack="min_k_pp")], ignore_index=True)
    v = rules.near_random(frame, model="m")
    assert v.verdict == REPRODUCED  # four of four paper-attack AUCs; Min-K%++'s four above do not count
    assert v.n.startswith("4 AUCs of m") and "4 AUCs beside" in v.n
    assert "Beside, not tallied (min_k_pp, not one of MIMIR's five attacks): below in 0 of 4, at or above in 4" in (
        v.evidence
    )


def test_near_random_rule_reports_the_neighbourhood_attack_on_fewer_texts_beside():
    frame = pd.concat([aucs([BELOW] * 4), aucs([ABOVE] * 4, attack="ne", n=25)], ignore_index=True)
    v = rules.near_random(frame, model="m")
    assert v.verdict == REPRODUCED
    assert "Beside, not tallied (ne, on 25 + 25 texts per domain, fewer than the full benchmark)" in v.evidence
    full = pd.concat([aucs([BELOW] * 4), aucs([ABOVE] * 4, attack="ne")], ignore_index=True)
    assert rules.near_random(full, model="m").verdict == NOT_REPRODUCED  # on every text, ne is a unit


def test_near_random_rule_states_the_interval_units_and_correlation():
    v = rules.near_random(aucs([BELOW]), model="m")
    for needle in ("upper bound < 0.6", "lower bound >= 0.6", "Min-K%++", "neighbourhood", "not independent"):
        assert needle in v.rule


def test_near_random_rule_not_tested_without_aucs():
    assert rules.near_random(aucs([]), model="m").verdict == NOT_TESTED
    assert rules.near_random(aucs([BELOW], attack="min_k_pp"), model="m").verdict == NOT_TESTED


def test_near_random_paper_value_from_table_1():
    assert "36 of 40 AUCs below 0.6 at 12B" in rules.near_random(aucs([BELOW]), model="m").paper_value


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


SMALL_UP = (0.04, -0.005, 0.085)  # inside the noise alone (text se 0.023), clear when six independent domains pool


def test_size_trend_reference_rule_partly_when_no_domain_alone_but_the_pooled_mean_is_clear():
    # pooled by hand: text se 0.09 / 3.92 = 0.0230 per domain, independent across the 6 domains: 0.0230 / sqrt(6);
    # seed part 0.005 (fully correlated): se = sqrt(0.0230^2 / 6 + 0.005^2) = 0.0106, z = 0.040 / 0.01061 = 3.77
    v = rules.model_difference(rules.SIZE_TREND_REFERENCE, effects([SMALL_UP] * 6), a="l", b="s")
    assert v.verdict == PARTLY
    assert "clear effect in the claimed direction in 0 of 6" in v.evidence
    assert "Pooled (claimed direction): +0.040, se 0.0106, z +3.77: clear in the claimed direction." in v.evidence
    assert verdicts.POOLED_RULE in v.rule


def test_size_trend_reference_rule_not_reproduced_when_the_pooled_mean_is_clearly_opposite():
    down = (-0.04, -0.085, 0.005)
    assert (
        rules.model_difference(rules.SIZE_TREND_REFERENCE, effects([down] * 6), a="l", b="s").verdict == NOT_REPRODUCED
    )


def test_units_sharing_one_domains_texts_do_not_pool_as_independent():
    # four attacks on the same texts: fully correlated, se = their root mean square 0.0235, z 1.70: inconclusive
    frame = effects([SMALL_UP] * 4, attack="loss").assign(domain="code", attack=["loss", "zlib", "min_k", "ne"])
    v = rules.model_difference(rules.SIZE_TREND_OTHER_ATTACKS, frame, a="l", b="s")
    assert v.verdict == INCONCLUSIVE and "z +1.70: inside the noise" in v.evidence


def test_size_trend_reference_rule_reads_only_the_reference_attack():
    frame = pd.concat([effects([CLEAR_UP] * 6), effects([CLEAR_DOWN] * 6, attack="loss")])
    assert rules.model_difference(rules.SIZE_TREND_REFERENCE, frame, a="l", b="s").verdict == REPRODUCED


def test_size_trend_reference_rule_says_when_seed_sd_is_estimated():
    v = rules.model_difference(
        rules.SIZE_TREND_REFERENCE, effects([CLEAR_UP] * 6, source="estimated", imputed_for="l"), a="l", b="s"
    )
    assert "estimated" in v.rule
    assert "seed sd imputed (l without seed replicates) for all 6 of 6 units" in v.n


def test_seed_provenance_names_the_measured_and_the_imputed_units():
    measured = rules.model_difference(rules.SIZE_TREND_REFERENCE, effects([CLEAR_UP] * 6), a="l", b="s")
    assert "seed sd measured for all 6 units (3 seeds of each model)" in measured.n
    assert "estimated" not in measured.rule
    mixed = pd.concat(
        [
            effects([CLEAR_UP] * 2, attack="loss"),
            effects([CLEAR_UP] * 2, attack="zlib", source="estimated", imputed_for="l"),
        ]
    )
    v = rules.model_difference(rules.SIZE_TREND_OTHER_ATTACKS, mixed, a="l", b="s")
    assert "seed sd imputed (l without seed replicates) for 2 of 4 units (code/zlib, math/zlib)" in v.n
    assert "measured for 2 (code/loss, math/loss)" in v.n


def test_comparative_rules_say_their_units_are_correlated():
    v = rules.model_difference(rules.SIZE_TREND_REFERENCE, effects([CLEAR_UP] * 6), a="l", b="s")
    assert "correlated, not independent" in v.rule and "MIMIR's five attacks" in v.rule


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


# ----------------------------------------------------------------------------- Min-K%++ beside the paper's attacks

# The three rules whose units are MIMIR's attacks other than ref (Figure 12's size and deduplication, the best attack)
OTHER_ATTACK_RULES = [
    lambda e: rules.model_difference(rules.SIZE_TREND_OTHER_ATTACKS, e, a="l", b="s"),
    lambda e: rules.model_difference(rules.DEDUP_OTHER_ATTACKS, e, a="n", b="d"),
    lambda e: rules.best_attack(e, model="m"),
]


@pytest.mark.parametrize("rule", OTHER_ATTACK_RULES)
def test_min_k_pp_is_reported_beside_never_tallied(rule):
    frame = pd.concat([effects([CLEAR_UP] * 6, attack="loss"), effects([CLEAR_DOWN] * 6, attack="min_k_pp")])
    v = rule(frame)
    assert v.verdict == REPRODUCED  # Min-K%++'s six clear falls would make it partly at best
    assert v.n.startswith("6 (domain")
    assert "Beside, not tallied (min_k_pp, not one of MIMIR's five attacks): clear effect in the claimed " in v.evidence
    assert "code/min_k_pp: -0.050" in v.evidence
    assert rule(effects([CLEAR_UP] * 6, attack="min_k_pp")).verdict == NOT_TESTED  # no unit left


@pytest.mark.parametrize("rule", OTHER_ATTACK_RULES)
def test_the_neighbourhood_attack_on_fewer_texts_is_reported_beside_on_every_text_a_unit(rule):
    loss = effects([CLEAR_UP] * 2, attack="loss")
    subset = rule(pd.concat([loss, effects([CLEAR_DOWN] * 2, attack="ne", n=25)]))
    assert subset.verdict == REPRODUCED  # two of two full-benchmark units; ne's two clear falls on 25 + 25 do not count
    assert subset.n.startswith("2 (domain") and "pairs beside" in subset.n and "(ne)" not in subset.n
    assert "Beside, not tallied (ne, on 25 + 25 texts per domain, fewer than the full benchmark)" in subset.evidence
    assert "code/ne: -0.050" in subset.evidence
    assert subset.evidence.index("Pooled") < subset.evidence.index("Beside")  # the pooled mean is the units' only
    every = rule(pd.concat([loss, effects([CLEAR_DOWN] * 2, attack="ne")]))  # ne on the 150 + 150 texts: a unit
    assert every.verdict == NOT_REPRODUCED and every.n.startswith("4 (domain") and "beside" not in every.n


def test_the_full_benchmark_is_read_per_domain_and_tolerates_a_few_lost_texts():
    # domains of different sizes: code 150 texts a side, math 300; ne on 25 in each; math's LOSS lost 2 texts to
    # missing scores beside its zlib on all 300 (exact equality with the most texts would put LOSS beside)
    math = effects([CLEAR_UP, CLEAR_UP], n=300).iloc[[1, 1]].assign(attack=["loss", "zlib"], n_members=[298, 300])
    frame = pd.concat(
        [effects([CLEAR_UP], attack="loss", n=150), math, effects([CLEAR_DOWN] * 2, attack="ne", n=25)],
        ignore_index=True,
    )
    assert list(rules.is_unit(frame)) == [True, True, True, False, False]
    v = rules.best_attack(frame, model="m")
    assert v.verdict == REPRODUCED and v.n.startswith("3 (domain") and "2 (domain, other attack) pairs beside" in v.n
    # the share on both sides: 0.5 of the best-covered attack's texts
    edge = effects([CLEAR_UP] * 2, attack="loss", n=100).assign(domain="code", attack=["loss", "zlib"])
    assert list(rules.is_unit(edge.assign(n_members=[100, 50], n_nonmembers=[100, 50]))) == [True, True]
    assert list(rules.is_unit(edge.assign(n_members=[100, 49], n_nonmembers=[100, 50]))) == [True, False]


def test_sample_sizes_read_as_one_span_over_the_domains_and_name_attacks_only_where_they_differ():
    # two domains of 150 and 300 texts a side, two attacks on both: one span, no attack list (it was one
    # "m + n texts (loss, zlib)" clause per domain size, the same attacks in each)
    frame = pd.concat([effects([CLEAR_UP], attack=a, n=150) for a in ("loss", "zlib")])
    frame = pd.concat([frame, frame.assign(domain="math", n_members=300, n_nonmembers=300)], ignore_index=True)
    n = rules.best_attack(frame, model="m").n
    assert "; 150-300 + 150-300 texts per domain; " in n and "(loss" not in n
    one = rules.best_attack(frame[frame.domain == "math"], model="m").n
    assert "; 300 + 300 texts per domain; " in one  # one size: no span
    # a unit on other texts (math's LOSS lost 2 members) names each group's attacks
    lost = frame.assign(n_members=frame.n_members.where((frame.domain != "math") | (frame.attack != "loss"), 298))
    assert "; 150-298 + 150-300 texts (loss); 150-300 + 150-300 texts (zlib) per domain; " in (
        rules.best_attack(lost, model="m").n
    )


def test_the_reference_attacks_rows_set_the_full_benchmark_of_the_other_attacks_claims():
    # Figure 12's claims keep the other attacks' rows, but the full benchmark is read with ref's rows in: with ref
    # on every text and ne on 25 + 25 alone among the others, ne is beside and the claim has no unit
    frame = pd.concat([effects([CLEAR_UP] * 2), effects([CLEAR_DOWN] * 2, attack="ne", n=25)], ignore_index=True)
    v = rules.model_difference(rules.SIZE_TREND_OTHER_ATTACKS, frame, a="l", b="s")
    assert v.verdict == NOT_TESTED and "Beside, not tallied (ne, on 25 + 25 texts per domain" in v.evidence
    assert rules.model_difference(rules.SIZE_TREND_REFERENCE, frame, a="l", b="s").verdict == REPRODUCED


def test_a_subset_scored_unit_no_longer_weighs_in_the_pooled_mean_and_its_se():
    # two domains' LOSS effects inside the noise alone (se 0.0230 each, independent): pooled se 0.0163, z 2.46.
    # Counted like them, ne's effects (estimate 0, interval 0.4 wide: se 0.102, as on 25 + 25 texts) halve the mean
    # (0.020) and triple the se (root mean square within each domain: 0.0523): z 0.38, inside the noise
    small = effects([SMALL_UP] * 2, attack="loss", seed_sd=None)
    wide = effects([(0.0, -0.2, 0.2)] * 2, attack="ne", n=25, seed_sd=None)
    v = rules.model_difference(rules.SIZE_TREND_OTHER_ATTACKS, pd.concat([small, wide]), a="l", b="s")
    assert v.verdict == PARTLY and "z +2.46: clear in the claimed direction" in v.evidence
    assert v.mde == pytest.approx(2.8016 * 0.09 / 3.92 / 2**0.5, rel=1e-3)
    counted = wide.assign(n_members=150, n_nonmembers=150)  # the same effects on every text: units, pooled
    u = rules.model_difference(rules.SIZE_TREND_OTHER_ATTACKS, pd.concat([small, counted]), a="l", b="s")
    assert u.verdict == INCONCLUSIVE and "+0.020, se 0.0523, z +0.38: inside the noise" in u.evidence


# ----------------------------------------------------------------------------- the paper's effects


def _table1_numbers():
    from mimirlib.display.paper_tables import paper_table

    t1, t12 = paper_table("mimir", "1"), paper_table("mimir", "12")
    size = t1.loc["12B"] - t1.loc["160M"]
    is_ref = size.index.get_level_values(1) == "ref"
    rows = [r for r in t12.index if r in t1.index]
    dedup = t12.loc[rows] - t1.loc[rows, t12.columns]
    dedup_ref = dedup.loc[:, dedup.columns.get_level_values(1) == "ref"].to_numpy().mean()
    dedup_other = dedup.loc[:, dedup.columns.get_level_values(1) != "ref"].to_numpy().mean()
    row = t1.loc["12B"]
    margins = [row[(d, "ref")] - row[(d, a)] for d, a in row.index if a != "ref"]
    return size[is_ref].mean(), size[~is_ref].mean(), dedup_ref, dedup_other, sum(margins) / len(margins)


@pytest.mark.parametrize(
    "rule,index,expected",
    [
        (lambda e: rules.model_difference(rules.SIZE_TREND_REFERENCE, e, a="l", b="s"), 0, 0.043),
        (lambda e: rules.model_difference(rules.SIZE_TREND_OTHER_ATTACKS, e, a="l", b="s"), 1, 0.016),
        (lambda e: rules.model_difference(rules.DEDUP_REFERENCE, e, a="n", b="d"), 2, 0.013),
        (lambda e: rules.model_difference(rules.DEDUP_OTHER_ATTACKS, e, a="n", b="d"), 3, 0.007),
        (lambda e: rules.best_attack(e, model="m"), 4, 0.026),
    ],
)
def test_paper_effects_are_the_transcribed_tables_means_as_printed(rule, index, expected):
    frame = effects([NOISE] * 6, attack="ref" if index in (0, 2) else "loss")
    v = rule(frame)
    assert v.paper_effect == expected == pytest.approx(_table1_numbers()[index], abs=5e-4)
    assert f"{expected:+.3f}" in v.paper_value  # the number the paper value prints
    assert v.verdict == INCONCLUSIVE and v.mde is not None and v.power  # read against the paper's effect


def test_near_random_publishes_its_margins_so_that_draws_can_be_read_together():
    near = (0.57, 0.53, 0.61)  # 0.6 - AUC = 0.03 +/- 0.04: undecided on one draw
    v = rules.near_random(aucs([near] * 3 + [BELOW]), model="m")
    assert v.verdict == INCONCLUSIVE and v.decision == "tally"
    assert [u["label"] for u in v.units] == ["d0/loss", "d1/loss", "d2/loss", "d3/loss"]
    assert v.units[0]["estimate"] == pytest.approx(0.03) and v.units[0]["lo"] == pytest.approx(-0.01)
    record = json.loads(json.dumps(dataclasses.asdict(v)))
    over = draws.read_over_draws([record] * 4).verdict  # +/- 0.04 / 2: every margin clear
    assert over.verdict == REPRODUCED
