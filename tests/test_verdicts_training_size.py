"""Verdict rules of the training-size chapter: one test per rule and outcome, on synthetic frames."""

import math

import pandas as pd
import pytest

from mimirlib.verdicts import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTED, PARTLY, REPRODUCED
from mimirlib.verdicts import training_size as rules

ATTACKS = ["loss", "zlib", "min_k", "ref"]


def start_frame(cells, seed_sd=math.nan):
    """One row per (auc, lo, hi) cell, one attack each, at step 1 of target-a."""
    return pd.DataFrame(
        [
            {
                "target": "target-a",
                "attack": ATTACKS[i % 4],
                "step": 1,
                "auc": a,
                "auc_lo": lo,
                "auc_hi": hi,
                "n_members": 40,
                "n_nonmembers": 96,
                "seed_sd": seed_sd,
                "n_seeds": 3,
            }
            for i, (a, lo, hi) in enumerate(cells)
        ]
    )


def test_near_random_start_rule_reproduced_when_every_interval_fits_the_band():
    v = rules.starts_near_random(start_frame([(0.51, 0.45, 0.57)] * 4, seed_sd=0.01))
    assert v.verdict == REPRODUCED
    assert v.key and v.source and v.paper_value and v.lab_value and v.n and v.origin == "paper"


def test_near_random_start_rule_not_reproduced_when_intervals_lie_above_the_band():
    assert rules.starts_near_random(start_frame([(0.75, 0.68, 0.82)] * 4)).verdict == NOT_REPRODUCED


def test_near_random_start_rule_partly_when_some_fit_and_the_rest_are_noise():
    cells = [(0.5, 0.45, 0.55)] * 2 + [(0.55, 0.35, 0.75)] * 2
    assert rules.starts_near_random(start_frame(cells)).verdict == PARTLY


def test_near_random_start_rule_inconclusive_when_the_window_is_too_small():
    # nine members: the interval is wider than the band, so it can show neither near random nor far from it
    wide = rules.starts_near_random(start_frame([(0.52, 0.30, 0.74)] * 4))
    assert wide.verdict == INCONCLUSIVE and wide.power == "underpowered"  # 0.44 wide: cannot fit in 0.2
    assert "median width is 0.440 against the band's 0.2" in wide.evidence


def test_near_random_start_rule_inconclusive_when_the_seed_spread_is_wider_than_the_band():
    noisy = rules.starts_near_random(start_frame([(0.51, 0.46, 0.56)] * 4, seed_sd=0.08))
    assert noisy.verdict == INCONCLUSIVE and noisy.power == "unresolved"  # the interval fits; the seeds do not


def test_near_random_start_rule_not_tested_without_a_window():
    assert rules.starts_near_random(start_frame([])).verdict == NOT_TESTED


def rf_frame(rise, fall, n=4, sd=math.nan):
    """``rise``/``fall``: (estimate, lo, hi) for every curve."""
    return pd.DataFrame(
        [
            {
                "target": "target-a",
                "attack": ATTACKS[i % 4],
                "first_step": 1,
                "peak_step": 8,
                "last_step": 100,
                "auc_first": 0.5,
                "auc_peak": 0.5 + rise[0],
                "auc_last": 0.5 + rise[0] - fall[0],
                "n_first": 9,
                "n_peak": 90,
                "n_last": 96,
                "n_nonmembers": 96,
                "rise": rise[0],
                "rise_lo": rise[1],
                "rise_hi": rise[2],
                "fall": fall[0],
                "fall_lo": fall[1],
                "fall_hi": fall[2],
                "rise_seed_sd": sd,
                "fall_seed_sd": sd,
                "n_seeds": 3,
            }
            for i in range(n)
        ]
    )


def test_rise_then_fall_rule_reproduced_when_rise_and_fall_are_both_clear():
    v = rules.rise_then_fall(rf_frame((0.15, 0.08, 0.22), (0.10, 0.04, 0.16), sd=0.01))
    assert v.verdict == REPRODUCED
    assert "peak step 8" in v.evidence and v.n.startswith("9-96 members")


def test_rise_then_fall_rule_not_reproduced_when_auc_keeps_rising():
    assert rules.rise_then_fall(rf_frame((0.15, 0.08, 0.22), (-0.10, -0.16, -0.04))).verdict == NOT_REPRODUCED


def test_rise_then_fall_rule_partly_when_half_the_curves_show_both():
    clear = rf_frame((0.15, 0.08, 0.22), (0.10, 0.04, 0.16), n=2)
    noisy = rf_frame((0.05, -0.10, 0.20), (0.10, 0.04, 0.16), n=2).assign(attack=["min_k", "ref"])
    assert rules.rise_then_fall(pd.concat([clear, noisy], ignore_index=True)).verdict == PARTLY


def test_rise_then_fall_rule_inconclusive_when_the_rise_is_inside_the_noise():
    assert rules.rise_then_fall(rf_frame((0.05, -0.10, 0.20), (0.10, 0.04, 0.16))).verdict == INCONCLUSIVE


def test_rise_then_fall_rule_inconclusive_when_inside_the_seed_spread():
    assert rules.rise_then_fall(rf_frame((0.15, 0.08, 0.22), (0.10, 0.04, 0.16), sd=0.08)).verdict == INCONCLUSIVE


def test_rise_then_fall_rule_not_tested_without_curves():
    assert rules.rise_then_fall(pd.DataFrame()).verdict == NOT_TESTED


def rec_frame(est, lo, hi, n=4, sd=math.nan):
    return pd.DataFrame(
        [
            {
                "target": "target-a",
                "attack": ATTACKS[i % 4],
                "auc_recent": 0.6,
                "auc_earliest": 0.6 - est,
                "earliest_steps_before_end": 150,
                "n_recent": 96,
                "n_earliest": 96,
                "n_nonmembers": 96,
                "estimate": est,
                "lo": lo,
                "hi": hi,
                "seed_sd": sd,
                "n_seeds": 3,
            }
            for i in range(n)
        ]
    )


def test_recency_rule_reproduced_when_recent_windows_are_clearly_easier():
    v = rules.recency(rec_frame(0.08, 0.03, 0.13, sd=0.01))
    assert v.verdict == REPRODUCED and v.origin == "paper" and "Figure 9" in v.source


def test_recency_rule_not_reproduced_when_recency_is_inverted():
    assert rules.recency(rec_frame(-0.12, -0.18, -0.06)).verdict == NOT_REPRODUCED


def test_recency_rule_partly_when_half_are_clear():
    f = pd.concat([rec_frame(0.08, 0.03, 0.13, n=2), rec_frame(0.02, -0.04, 0.08, n=2).assign(attack=["min_k", "ref"])])
    assert rules.recency(f).verdict == PARTLY


def test_recency_rule_inconclusive_when_inside_the_noise():
    assert rules.recency(rec_frame(0.02, -0.04, 0.08)).verdict == INCONCLUSIVE


def test_recency_rule_inconclusive_when_inside_the_seed_spread():
    assert rules.recency(rec_frame(0.04, 0.01, 0.07, sd=0.03)).verdict == INCONCLUSIVE


def test_recency_rule_reads_its_pooled_mean_when_the_count_cannot_decide():
    # C.1 is about an average ("more recently seen members are easier"): 3 of 8 units clearly inverted is below
    # the tally's half, but the pooled mean (-0.064, se 0.031, z -2.08) is clearly opposite; 2 of 8 (z -1.73) is not
    def frame(n_clear):
        clear = rec_frame(-0.12, -0.18, -0.06, n=n_clear)
        rest = rec_frame(-0.03, -0.09, 0.03, n=8 - n_clear)
        return pd.concat([clear, rest.assign(target="target-b")], ignore_index=True)

    v = rules.recency(frame(3))
    assert (v.verdict, v.decision) == (NOT_REPRODUCED, "pooled") and "z -2.08: clearly opposite" in v.evidence
    assert rules.recency(frame(2)).verdict == INCONCLUSIVE
    # the pooled mean reads before what is beside it (Min-K%++), never as part of it
    v = rules.recency(pd.concat([frame(3), rec_frame(-0.2, -0.3, -0.1, n=1).assign(attack="min_k_pp")]))
    assert v.evidence.index("Pooled") < v.evidence.index("Beside, not tallied")


def test_recency_rule_holds_a_mean_over_seeds_to_its_seed_standard_error_and_says_so():
    # seed sd 0.03: one seed's -0.05 is inside 2 sd (0.06); the mean of 3 seeds is held to 2 x 0.03 / sqrt(3) = 0.035
    one, mean = rec_frame(-0.05, -0.09, -0.01, sd=0.03), rec_frame(-0.05, -0.09, -0.01, sd=0.03).assign(averaged=3)
    v1, v3 = rules.recency(one), rules.recency(mean)
    assert (v1.verdict, v3.verdict) == (INCONCLUSIVE, NOT_REPRODUCED)
    assert rules.SEED_MEAN_NOTE in v3.rule and rules.SEED_MEAN_NOTE not in v1.rule
    assert "each effect the mean of 3 seeds" in v3.n and "each effect the mean" not in v1.n


def ctl_frame(est, lo, hi, gap=(0.0, -0.05, 0.05), sd=0.01, n=4):
    return pd.DataFrame(
        [
            {
                "control": "target-a-sched69",
                "target": "target-a",
                "attack": ["loss", "ref", "zlib", "min_k", "ne"][i],  # MIMIR's five: every row a unit
                "auc_recent": 0.6,
                "auc_earliest": 0.6 - est,
                "estimate": est,
                "lo": lo,
                "hi": hi,
                "seed_sd": sd,
                "n_seeds": 3,
                "target_estimate": est - gap[0],
                "target_lo": lo - gap[0],
                "target_hi": hi - gap[0],
                "gap": gap[0],
                "gap_lo": gap[1],
                "gap_hi": gap[2],
                "gap_seed_sd": sd * math.sqrt(2),
                "n_recent": 96,
                "n_earliest": 96,
                "n_nonmembers": 96,
                "control_lr_share": 0.295,
                "target_lr_share": 0.1,
                "earliest_steps_before_end": 150,
            }
            for i in range(n)
        ]
    )


def test_recency_control_rule_reproduced_when_the_control_shows_recency():
    v = rules.recency_on_control(ctl_frame(0.08, 0.03, 0.13))
    assert v.verdict == REPRODUCED
    assert v.origin == "book" and "30% of peak vs 10%" in v.evidence and "one seed" in v.n


def test_recency_control_rule_not_reproduced_when_the_control_is_inverted_too():
    assert rules.recency_on_control(ctl_frame(-0.10, -0.16, -0.04)).verdict == NOT_REPRODUCED


def test_recency_control_rule_inconclusive_when_inside_the_noise():
    assert rules.recency_on_control(ctl_frame(0.02, -0.04, 0.08)).verdict == INCONCLUSIVE


def test_recency_control_rule_inconclusive_when_inside_the_borrowed_seed_spread():
    assert rules.recency_on_control(ctl_frame(0.04, 0.01, 0.07, sd=0.03)).verdict == INCONCLUSIVE


def test_recency_control_rule_not_tested_without_a_control():
    v = rules.recency_on_control(pd.DataFrame())
    assert v.verdict == NOT_TESTED and v.origin == "book"


def test_schedule_rule_reproduced_when_the_control_gap_clearly_exceeds_the_target():
    v = rules.schedule_explains_recency(ctl_frame(0.0, -0.05, 0.05, gap=(0.10, 0.05, 0.15)))
    assert v.verdict == REPRODUCED and v.origin == "book" and "+0.100" in v.lab_value


def test_schedule_rule_not_reproduced_when_the_control_gap_is_clearly_smaller():
    assert (
        rules.schedule_explains_recency(ctl_frame(0.0, -0.05, 0.05, gap=(-0.10, -0.15, -0.05))).verdict
        == NOT_REPRODUCED
    )


def test_schedule_rule_inconclusive_when_the_paired_gap_is_inside_the_noise():
    assert rules.schedule_explains_recency(ctl_frame(0.0, -0.05, 0.05, gap=(0.02, -0.02, 0.06))).verdict == INCONCLUSIVE


def test_schedule_rule_inconclusive_when_the_gap_is_inside_the_seed_spread():
    # the interval excludes 0, but a gap of 0.04 is under 2 x 0.03 x sqrt(2)
    assert (
        rules.schedule_explains_recency(ctl_frame(0.0, -0.05, 0.05, gap=(0.04, 0.01, 0.07), sd=0.03)).verdict
        == INCONCLUSIVE
    )


def test_control_rules_read_measured_seed_pairs_as_a_mean_over_seeds_not_a_borrowed_spread():
    # a gap of 0.04 with seed sd 0.03: inside the borrowed spread (2 x 0.03 x sqrt(2) = 0.085), clear of three
    # measured pairs' mean (2 x 0.03 / sqrt(3) = 0.035)
    borrowed = ctl_frame(0.04, 0.01, 0.07, gap=(0.04, 0.01, 0.07), sd=0.03)
    measured = borrowed.assign(averaged=3, seed_borrowed=False, gap_seed_sd=0.03)
    assert rules.schedule_explains_recency(borrowed).verdict == INCONCLUSIVE
    v = rules.schedule_explains_recency(measured)
    assert v.verdict == REPRODUCED and "paired with its target's seed k" in v.evidence
    assert "mean of 3 seeds" in v.n and "seed pairs' gaps (measured)" in v.rule and "sqrt(2)" not in v.rule
    c = rules.recency_on_control(measured)
    assert c.verdict == REPRODUCED and "seed pairs' effects (measured)" in c.rule and "one seed" not in c.evidence
    assert "one seed" in rules.recency_on_control(borrowed).n and "borrowed" in rules.recency_on_control(borrowed).rule


def test_schedule_rule_not_tested_without_a_control():
    assert rules.schedule_explains_recency(pd.DataFrame()).verdict == NOT_TESTED


def test_the_control_rules_count_mimirs_attacks_as_c1_does_and_report_min_k_pp_beside():
    up = ctl_frame(0.08, 0.03, 0.13, gap=(0.10, 0.05, 0.15), n=2)
    down = ctl_frame(-0.10, -0.16, -0.04, gap=(-0.10, -0.15, -0.05), n=2).assign(attack="min_k_pp")
    frame = pd.concat([up, down], ignore_index=True)
    for rule in (rules.recency_on_control, rules.schedule_explains_recency):
        v = rule(frame)
        assert v.verdict == REPRODUCED and "in 2 of 2" in v.evidence  # tallied with Min-K%++: 2 for, 2 against
        assert "Beside, not tallied (min_k_pp, not one of MIMIR's five attacks)" in v.evidence and "Min-K%++" in v.rule
        assert rule(down).verdict == NOT_TESTED
    # the beside tally reads each claim's own measure: Min-K%++'s recency up (the control claim), its gap down
    mixed = ctl_frame(0.08, 0.03, 0.13, gap=(-0.10, -0.15, -0.05), n=2).assign(attack="min_k_pp")
    both = pd.concat([up, mixed], ignore_index=True)
    assert "min_k_pp, not one of MIMIR's five attacks): clear effect in the claimed direction in 2 of 2" in (
        rules.recency_on_control(both).evidence
    )
    assert (
        "min_k_pp, not one of MIMIR's five attacks): clear effect in the claimed direction in 0 of 2, clearly "
        + ("opposite in 2")
        in rules.schedule_explains_recency(both).evidence
    )


@pytest.mark.parametrize(
    "auc,lo,hi,sd,sign",
    [
        (0.50, 0.45, 0.55, None, 1),
        (0.50, 0.45, 0.55, 0.06, 0),  # the seed spread (2 sd) reaches past the band
        (0.75, 0.70, 0.80, None, -1),
        (0.25, 0.20, 0.30, None, -1),
        (0.62, 0.55, 0.69, None, 0),  # straddles the band's edge
    ],
)
def test_near_random_sign_each_case(auc, lo, hi, sd, sign):
    assert rules.near_random_sign(auc, lo, hi, sd) == sign


def test_rise_then_fall_rule_states_the_split_and_shows_its_mde():
    v = rules.rise_then_fall(rf_frame((0.15, 0.08, 0.22), (0.10, 0.04, 0.16), sd=0.01))
    assert "selection half" in v.rule and "test" in v.rule and "own peak" in v.rule
    assert "test half" in v.evidence and "test half" in v.lab_value and "window (test half)" in v.n
    assert v.paper_effect is None and v.mde is not None and v.mde > 0


def test_rise_then_fall_rule_reproduced_at_three_curves_in_four_partly_below():
    clear = rf_frame((0.15, 0.08, 0.22), (0.10, 0.04, 0.16), n=3)
    noise = rf_frame((0.15, 0.08, 0.22), (0.03, -0.02, 0.08), n=1).assign(attack=["ref"])  # the fall inside the noise
    assert rules.rise_then_fall(pd.concat([clear, noise], ignore_index=True)).verdict == REPRODUCED
    two = pd.concat([clear.iloc[:2], noise, noise.assign(attack=["min_k"])], ignore_index=True)
    assert rules.rise_then_fall(two).verdict == PARTLY


def test_rise_then_fall_rule_counts_a_clearly_rising_tail_against():
    clear = rf_frame((0.15, 0.08, 0.22), (0.10, 0.04, 0.16), n=2)
    rising = rf_frame((0.15, 0.08, 0.22), (-0.10, -0.16, -0.04), n=2).assign(attack=["min_k", "ref"])
    v = rules.rise_then_fall(pd.concat([clear, rising], ignore_index=True))
    assert v.verdict == NOT_REPRODUCED  # 2 for, 2 against: not more for than against
    assert "either clearly reversed in 2" in v.evidence


def test_rise_then_fall_rule_inconclusive_reads_against_the_smallest_effect_of_interest():
    v = rules.rise_then_fall(rf_frame((0.05, -0.10, 0.20), (0.10, 0.04, 0.16)))
    # the paper gives a figure only: the book's one AUC point; the rise's interval (se ~0.08) cannot tell it
    assert v.verdict == INCONCLUSIVE and v.power == "underpowered" and v.paper_effect is None
    assert v.effect_of_interest == 0.01


def test_min_k_pp_is_reported_beside_the_three_paper_claims_never_tallied():
    # four paper-attack units decide; four Min-K%++ rows with the opposite result must not move the verdicts
    far = start_frame([(0.75, 0.68, 0.82)] * 4)
    near = start_frame([(0.51, 0.45, 0.57)] * 4, seed_sd=0.01).assign(attack="min_k_pp")
    v = rules.starts_near_random(pd.concat([far, near], ignore_index=True))
    assert v.verdict == NOT_REPRODUCED and "clearly not in 4" in v.evidence
    assert "Beside, not tallied (min_k_pp, not one of MIMIR's five attacks): near random in 4 of 4," in v.evidence
    both = rf_frame((0.15, 0.08, 0.22), (0.10, 0.04, 0.16), sd=0.01)
    rising = rf_frame((0.15, 0.08, 0.22), (-0.10, -0.16, -0.04), sd=0.01).assign(attack="min_k_pp")
    v = rules.rise_then_fall(pd.concat([both, rising], ignore_index=True))
    assert (
        v.verdict == REPRODUCED
        and "(min_k_pp, not one of MIMIR's five attacks): rise and fall both clear in 0" in v.evidence
    )
    easier = rec_frame(0.08, 0.03, 0.13, sd=0.01)
    inverted = rec_frame(-0.12, -0.18, -0.06).assign(attack="min_k_pp")
    v = rules.recency(pd.concat([easier, inverted], ignore_index=True))
    assert (
        v.verdict == REPRODUCED
        and "attacks): clear effect in the claimed direction in 0 of 4, clearly opposite in 4" in v.evidence
    )
    only = rules.recency(inverted)
    assert only.verdict == NOT_TESTED  # Min-K%++ alone is no unit of a claim about MIMIR's attacks


def test_the_start_rule_states_its_band_test_not_the_paired_difference_bar():
    # the first checkpoint's claim reads AUCs against a band; the tally's "Clear: the paired interval excludes 0"
    # does not apply to it
    assert "paired 95% bootstrap interval excludes 0" not in rules.START_RULE
    assert "if >= 75% of units are near random" in rules.START_RULE and "clearly not near random" in rules.START_RULE
