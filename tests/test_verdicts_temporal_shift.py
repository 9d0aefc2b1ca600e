"""The temporal-shift chapter's verdict rules (MIMIR §4): one test per rule and outcome, on small
synthetic frames shaped like the experiment layer's."""

import numpy as np
import pandas as pd
import pytest

from mimirlib.core import metrics
from mimirlib.experiments.temporal_shift import BlindComparison
from mimirlib.verdicts import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTED, PARTLY, REPRODUCED
from mimirlib.verdicts import temporal_shift as rules

# ----------------------------------------------------------------------------- helpers

CLEAR_UP = (0.10, 0.05, 0.15)  # (estimate, lo, hi): interval above 0
CLEAR_DOWN = (-0.10, -0.15, -0.05)
NOISE = (0.02, -0.03, 0.07)  # interval contains 0


ATTACKS = ["loss", "ref", "zlib", "min_k", "ne"]  # MIMIR's five: every row a unit


def diffs(units, a="temporal_2023", b="natural", seed_sd=None, n_seeds=1):
    """A differences frame (as experiments.temporal_shift.auc_differences) with one row per
    (estimate, lo, hi) in ``units``."""
    rows = []
    for i, (d, lo, hi) in enumerate(units):
        rows.append(
            {
                "target": f"t{i // 5}",
                "attack": ATTACKS[i % 5],
                "a": a,
                "b": b,
                "diff": d,
                "lo": lo,
                "hi": hi,
                "seed_sd": float("nan") if seed_sd is None else seed_sd,
                "n_seeds": n_seeds,
                "paired": True,
                "n_members": 150,
                "n_nonmembers_a": 150,
                "n_nonmembers_b": 150,
            }
        )
    return pd.DataFrame(rows)


def drops(units):
    return pd.DataFrame(
        [
            {
                "benchmark": f"bin{i}",
                "natural_mean": 0.30,
                "shifted_mean": 0.30 - d,
                "drop": d,
                "lo": lo,
                "hi": hi,
                "n_natural": 150,
                "n_shifted": 150,
            }
            for i, (d, lo, hi) in enumerate(units)
        ]
    )


def t5(false_positives, budget=0.01, n=150):
    above = int(np.floor(budget * n + 1e-9))  # as metrics.threshold_at_fpr leaves above its threshold
    return pd.DataFrame(
        [
            {
                "benchmark": f"bin{i // 5}",
                "budget": budget,
                "attack": ATTACKS[i % 5],
                "threshold": 0.0,
                "false_positives": k,
                "n_natural": n,
                "n_shifted": n,
                "shifted_above": above,
                "fpr": k / n,
            }
            for i, k in enumerate(false_positives)
        ]
    )


def blind(rise, vs_best):
    def pdiff(e):
        return metrics.PairedDifference(e[0], e[1], e[2], 150, 150, 1000)

    return BlindComparison(
        pdiff(rise),
        pdiff(vs_best),
        0.52,
        0.52 + rise[0],
        "loss",
        0.52 + rise[0] - vs_best[0],
        "target-h256",
        "temporal_2022-23",
        150,
        150,
    )


def assert_complete(v):
    for name in ("claim", "verdict", "evidence", "rule", "source", "paper_value", "lab_value", "n", "origin", "key"):
        assert getattr(v, name), f"{v.key or v.claim}: field {name} is empty"


# ----------------------------------------------------------------------------- Table 3: shift inflates AUC


def test_shift_inflates_auc_reproduced_when_most_units_rise_clearly():
    v = rules.shift_inflates_auc(diffs([CLEAR_UP] * 4 + [NOISE]))
    assert v.verdict == REPRODUCED
    assert_complete(v)
    assert "4 of 5" in v.evidence and "150 shared members" in v.n


def test_the_auc_claims_count_mimirs_attacks_and_report_min_k_pp_beside():
    frame = pd.concat([diffs([CLEAR_UP] * 3 + [NOISE]), diffs([CLEAR_DOWN] * 4).assign(attack="min_k_pp")])
    for rule in (rules.shift_inflates_auc, rules.auc_grows_with_lateness):
        v = rule(frame)
        assert v.verdict == REPRODUCED and "3 of 4" in v.evidence  # Min-K%++'s four falls tallied: 3 for, 4 against
        assert (
            "Beside, not tallied (not one of MIMIR's five attacks): clear effect in the claimed direction in 0 of 4"
            in (v.evidence)
        )
        assert "Min-K%++" in v.rule and "1 attack beside" in v.n and "1 target x 4 attacks" in v.n
        assert rule(diffs([CLEAR_UP]).assign(attack="min_k_pp")).verdict == NOT_TESTED


def test_table5_counts_mimirs_attacks_and_reports_min_k_pp_beside():
    frame = pd.concat([t5([40] * 4), t5([0] * 4).assign(attack="min_k_pp")], ignore_index=True)
    v = rules.shifted_thresholds_misfire(frame, "m")
    assert v.verdict == REPRODUCED and "in 4 of 4" in v.evidence and "4 attacks" in v.n
    assert (
        "Beside, not tallied (min_k_pp, not one of MIMIR's five attacks): clear effect in the claimed direction "
        "in 0 of 4" in v.evidence
    )
    assert rules.shifted_thresholds_misfire(t5([40]).assign(attack="min_k_pp"), "m").verdict == NOT_TESTED


def test_shift_inflates_auc_partly_when_half_rise_and_none_fall():
    assert rules.shift_inflates_auc(diffs([CLEAR_UP] * 2 + [NOISE] * 2)).verdict == PARTLY


def test_shift_inflates_auc_not_reproduced_when_auc_clearly_falls():
    assert rules.shift_inflates_auc(diffs([CLEAR_DOWN] * 3 + [CLEAR_UP])).verdict == NOT_REPRODUCED


def test_shift_inflates_auc_inconclusive_when_inside_the_bootstrap_noise():
    assert rules.shift_inflates_auc(diffs([NOISE] * 5)).verdict == INCONCLUSIVE


def test_shift_inflates_auc_inconclusive_when_inside_the_seed_spread():
    # every interval excludes 0, but a seed sd of 0.06 makes +0.10 less than 2 sd: a seed could flip it
    v = rules.shift_inflates_auc(diffs([CLEAR_UP] * 5, seed_sd=0.06, n_seeds=3))
    assert v.verdict == INCONCLUSIVE
    assert "3 seeds" in v.n and "seed sd" in v.evidence


def test_shift_inflates_auc_not_tested_without_a_shifted_benchmark():
    assert rules.shift_inflates_auc(pd.DataFrame()).verdict == NOT_TESTED


# ----------------------------------------------------------------------------- Figure 6: trend with lateness


def test_auc_grows_with_lateness_reproduced_when_latest_clearly_beats_earliest():
    v = rules.auc_grows_with_lateness(diffs([CLEAR_UP] * 5, b="temporal_2020"))
    assert v.verdict == REPRODUCED
    assert_complete(v)
    assert "temporal_2020" in v.evidence


def test_auc_grows_with_lateness_partly_when_some_units_rise():
    assert rules.auc_grows_with_lateness(diffs([CLEAR_UP] * 3 + [CLEAR_DOWN] + [NOISE])).verdict == PARTLY


def test_auc_grows_with_lateness_not_reproduced_when_latest_is_weaker():
    assert rules.auc_grows_with_lateness(diffs([CLEAR_DOWN] * 5)).verdict == NOT_REPRODUCED


def test_auc_grows_with_lateness_inconclusive_when_inside_the_noise():
    assert rules.auc_grows_with_lateness(diffs([NOISE] * 4 + [CLEAR_UP])).verdict == INCONCLUSIVE


def test_auc_grows_with_lateness_not_tested_with_one_shifted_benchmark():
    assert rules.auc_grows_with_lateness(pd.DataFrame()).verdict == NOT_TESTED


# ----------------------------------------------------------------------------- Figures 4 and 8: overlap


def test_shifted_overlap_lower_reproduced_when_every_bin_clearly_drops():
    v = rules.shifted_overlap_lower(drops([CLEAR_UP] * 3), n=7)
    assert v.verdict == REPRODUCED
    assert_complete(v)
    assert "7-gram" in v.evidence and "30.0%" in v.evidence


def test_shifted_overlap_lower_partly_when_some_bins_drop():
    assert rules.shifted_overlap_lower(drops([CLEAR_UP, CLEAR_UP, NOISE, NOISE]), n=7).verdict == PARTLY


def test_shifted_overlap_lower_not_reproduced_when_shifted_overlap_more():
    assert rules.shifted_overlap_lower(drops([CLEAR_DOWN] * 3), n=7).verdict == NOT_REPRODUCED


def test_shifted_overlap_lower_inconclusive_when_drops_are_inside_the_noise():
    assert rules.shifted_overlap_lower(drops([NOISE] * 3), n=7).verdict == INCONCLUSIVE


def test_shifted_overlap_lower_not_tested_without_shifted_bins():
    assert rules.shifted_overlap_lower(pd.DataFrame(), n=7).verdict == NOT_TESTED


# ----------------------------------------------------------------------------- Table 5: misfiring thresholds


def _cell_under(shifted, natural, budget):
    """(false positives, shifted above the threshold) of one Table 5 cell, as experiments.table5."""
    thr = metrics.threshold_at_fpr(shifted, budget)
    return int((natural > thr).sum()), int((shifted > thr).sum())


def test_exchangeable_counts_match_a_seeded_permutation_of_pooled_scores():
    rng = np.random.default_rng(0)
    pooled = rng.normal(size=300)
    counts = []
    for _ in range(4000):
        perm = rng.permutation(pooled)
        counts.append(_cell_under(perm[:150], perm[150:], 0.05)[0])
    law = rules.exchangeable_counts(150, 150, 7)  # floor(5% of 150) = 7 shifted above the threshold
    assert np.arange(151) @ law == pytest.approx(150 * 8 / 151)  # E = n_natural x r / (n_shifted + 1)
    observed = np.bincount(counts, minlength=151) / len(counts)
    assert np.abs(np.cumsum(observed) - np.cumsum(law)).max() < 0.03  # Kolmogorov distance, 4,000 draws


def test_misfire_effect_threshold_at_one_percent_of_150_sits_between_7_and_8():
    law = rules.exchangeable_counts(150, 150, 1)
    assert law[8:].sum() < rules.ALPHA_ONE_SIDED <= law[7:].sum()  # P(>= 8) = 0.016, P(>= 7) = 0.043
    assert rules.misfire_effect(7, 150, 150, 1).sign() == 0  # 4.7%, four times the budget, still chance
    assert rules.misfire_effect(8, 150, 150, 1).sign() == 1


def test_misfire_effect_below_chance_at_ten_percent_sits_between_6_and_7():
    law = rules.exchangeable_counts(150, 150, 15)
    assert law[:7].sum() < rules.ALPHA_ONE_SIDED <= law[:8].sum()
    assert rules.misfire_effect(7, 150, 150, 15).sign() == 0
    assert rules.misfire_effect(6, 150, 150, 15).sign() == -1


def test_misfire_effect_budget_one_flags_everything_and_is_never_clear():
    e = rules.misfire_effect(150, 150, 150, 150)
    assert e.sign() == 0 and e.estimate == 0.0


@pytest.mark.parametrize("budget", [0.01, 0.05, 0.10])
def test_misfire_false_for_rate_under_the_null_is_at_most_nominal(budget):
    # shifted and natural non-members from ONE distribution: a cell may count for the claim in
    # at most 2.5% of draws (the old fixed-threshold binomial rule: about 11% / 9% / 8%)
    rng = np.random.default_rng(int(budget * 1000))
    draws = 3000
    new = old = 0
    for _ in range(draws):
        k, above = _cell_under(rng.normal(size=150), rng.normal(size=150), budget)
        new += rules.misfire_effect(k, 150, 150, above).sign() == 1
        old += metrics.proportion_interval(k, 150)[0] > budget
    se = np.sqrt(rules.ALPHA_ONE_SIDED * (1 - rules.ALPHA_ONE_SIDED) / draws)
    assert new / draws <= rules.ALPHA_ONE_SIDED + 2 * se
    assert old / draws > 0.06  # the leniency the test replaces


@pytest.mark.parametrize("budget, power", [(0.01, 0.5), (0.05, 0.85), (0.10, 0.9)])
def test_misfire_detects_a_real_shift(budget, power):
    # shifted non-members score 0.8 sd lower: a threshold at 1% on them flags about 6% of the natural ones
    rng = np.random.default_rng(1)
    hits = []
    for _ in range(400):
        k, above = _cell_under(rng.normal(-0.8, 1, size=150), rng.normal(size=150), budget)
        hits.append(rules.misfire_effect(k, 150, 150, above).sign() == 1)
    assert np.mean(hits) > power


def test_shifted_thresholds_misfire_reproduced_when_counts_exceed_chance():
    v = rules.shifted_thresholds_misfire(t5([8] * 5), target="target-h256")
    assert v.verdict == REPRODUCED
    assert_complete(v)
    assert "150 natural non-members per cell" in v.n and "exchangeable" in v.rule
    assert v.paper_effect == pytest.approx(0.1012, abs=1e-4) and v.mde is not None


def test_shifted_thresholds_misfire_inconclusive_with_seven_false_positives_of_150():
    # 7 of 150 is 4.7% > 1%, but a threshold estimated from 150 shifted non-members gives it by chance
    v = rules.shifted_thresholds_misfire(t5([7] * 5), target="target-h256")
    assert v.verdict == INCONCLUSIVE
    assert v.power  # an inconclusive tallied verdict carries its power reading


def test_shifted_thresholds_misfire_partly_when_some_cells_exceed_chance():
    assert rules.shifted_thresholds_misfire(t5([8, 8, 8, 2, 2]), target="t").verdict == PARTLY


def test_shifted_thresholds_misfire_not_reproduced_when_counts_fall_below_chance():
    # 6 of 150 at a 10% budget: a same-distribution threshold gives fewer than 7 in under 2.5% of draws
    assert rules.shifted_thresholds_misfire(t5([6] * 5, budget=0.10), target="t").verdict == NOT_REPRODUCED
    assert rules.shifted_thresholds_misfire(t5([7] * 5, budget=0.10), target="t").verdict == INCONCLUSIVE


def test_shifted_thresholds_misfire_not_tested_without_cells():
    assert rules.shifted_thresholds_misfire(pd.DataFrame(), target="t").verdict == NOT_TESTED


# ----------------------------------------------------------------------------- the blind baseline (book)


def test_blind_baseline_is_the_books_finding_not_a_paper_claim():
    v = rules.blind_baseline_separates(blind(CLEAR_UP, NOISE))
    assert v.origin == "book"
    assert "book's finding" in v.as_row()["paper's claim"]
    assert_complete(v)


def test_blind_baseline_reproduced_when_it_rises_and_matches_the_best_attack():
    assert rules.blind_baseline_separates(blind(CLEAR_UP, NOISE)).verdict == REPRODUCED
    assert rules.blind_baseline_separates(blind(CLEAR_UP, CLEAR_UP)).verdict == REPRODUCED


def test_blind_baseline_partly_when_the_best_attack_clearly_beats_it():
    assert rules.blind_baseline_separates(blind(CLEAR_UP, CLEAR_DOWN)).verdict == PARTLY


def test_blind_baseline_not_reproduced_when_it_clearly_falls():
    assert rules.blind_baseline_separates(blind(CLEAR_DOWN, CLEAR_UP)).verdict == NOT_REPRODUCED


def test_blind_baseline_inconclusive_when_its_rise_is_inside_the_noise():
    assert rules.blind_baseline_separates(blind(NOISE, CLEAR_UP)).verdict == INCONCLUSIVE


def test_rules_have_stable_distinct_keys():
    vs = [
        rules.shift_inflates_auc(diffs([CLEAR_UP])),
        rules.auc_grows_with_lateness(diffs([CLEAR_UP])),
        rules.shifted_overlap_lower(drops([CLEAR_UP]), n=7),
        rules.shifted_thresholds_misfire(t5([8]), target="t"),
        rules.blind_baseline_separates(blind(CLEAR_UP, NOISE)),
    ]
    keys = [v.key for v in vs]
    assert len(set(keys)) == 5
    assert all(k.startswith("mimir-4-") for k in keys[:4])


def test_paper_effects_are_in_each_rules_units():
    # Table 3 (12B, temporal Wikipedia) minus Table 1 (12B, Wikipedia), mean of the five attacks
    gain = (0.164 + 0.217 + 0.202 + 0.083 + 0.106) / 5
    assert rules.shift_inflates_auc(diffs([CLEAR_UP] * 5)).paper_effect == pytest.approx(gain, abs=1e-9)
    assert rules.auc_grows_with_lateness(diffs([CLEAR_UP] * 5)).paper_effect == pytest.approx(0.795 - 0.723)
    assert rules.shifted_overlap_lower(drops([CLEAR_UP]), n=7).paper_effect == pytest.approx(0.393 - 0.139)
    assert rules.blind_baseline_separates(blind(CLEAR_UP, NOISE)).paper_effect is None


def test_the_shifted_benchmarks_sizes_read_as_their_span_not_their_median():
    # the verdict printed the median (185) of 162, 203 and 185 shifted non-members as every benchmark's
    d = drops([CLEAR_UP] * 3).assign(n_shifted=[162, 203, 185])
    assert "150 natural + 162-203 shifted non-members x 3" in rules.shifted_overlap_lower(d, n=7).n
