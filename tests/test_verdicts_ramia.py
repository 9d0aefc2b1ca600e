"""The RaMIA chapter's verdict rules, one test per rule and outcome, on small synthetic frames.

A comparative frame has one row per backbone: ``estimate`` (AUC of side a minus side b) and its
paired 95% interval ``lo``/``hi``. Clear for the claim: the interval is above 0; inside the noise:
it holds 0 (the "inconclusive" cases)."""

import dataclasses

import pandas as pd
import pytest

from mimirlib.verdicts import SEED_MEAN_BAR, INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTED, OUTCOMES, PARTLY, REPRODUCED
from mimirlib.verdicts import ramia as rules

UP = dict(estimate=0.03, lo=0.01, hi=0.05)  # clearly positive
DOWN = dict(estimate=-0.03, lo=-0.05, hi=-0.01)  # clearly negative
NOISE = dict(estimate=0.003, lo=-0.02, hi=0.025)  # inside the paired interval


def frame(*effects, **extra):
    rows = []
    for i, e in enumerate(effects):
        rows.append(
            {
                "backbone": ["LOSS", "RMIA", "Reference"][i],
                **e,
                "auc_a": 0.7,
                "auc_b": 0.7 - e["estimate"],
                "spread": 0.004,
                **{k: v[i] if isinstance(v, list) else v for k, v in extra.items()},
            }
        )
    return pd.DataFrame(rows)


OPTIONAL = ("paper_effect", "effect_of_interest", "mde", "mde_floor", "power", "regime", "decision", "units")


def assert_complete(v, key):
    """Every field of a verdict is set (the scorecard shows them all); the power fields are optional."""
    for f in dataclasses.fields(v):
        if f.name not in OPTIONAL:
            assert getattr(v, f.name) not in ("", None), f.name
    assert v.key == key and v.origin == "paper" and v.verdict in OUTCOMES


# ----------------------------------------------------------------------------- Tables III/IV


def test_ramia_beats_mia_reproduced_when_every_backbone_gains_clearly():
    v = rules.ramia_beats_mia(frame(UP, UP), "10 + 10 ranges")
    assert v.verdict == REPRODUCED
    assert_complete(v, "ramia-table3-gain")
    assert "+3.0 [+1.0, +5.0]" in v.evidence and "± 0.4" in v.evidence
    assert "1.20" in v.paper_value and v.n == "10 + 10 ranges"


def test_ramia_beats_mia_partly_when_one_backbone_gains_and_one_is_noise():
    assert rules.ramia_beats_mia(frame(UP, NOISE), "n").verdict == PARTLY


def test_ramia_beats_mia_not_reproduced_when_mia_is_clearly_better():
    assert rules.ramia_beats_mia(frame(DOWN, DOWN), "n").verdict == NOT_REPRODUCED
    assert rules.ramia_beats_mia(frame(UP, DOWN), "n").verdict == NOT_REPRODUCED  # one each: no support


def test_ramia_beats_mia_inconclusive_when_the_gain_is_inside_the_noise():
    # the case: 0.928 vs 0.925 is a +0.3 point gain that the paired interval cannot tell from 0
    v = rules.ramia_beats_mia(frame(NOISE, NOISE), "25 + 25 ranges")
    assert v.verdict == INCONCLUSIVE
    assert "inside the noise in 2" in v.evidence


def test_ramia_beats_mia_reads_its_pooled_mean_in_the_points_its_evidence_is_in():
    v = rules.ramia_beats_mia(frame(NOISE, NOISE), "n")
    assert "inside the noise in 2. Pooled (claimed direction): +0.30 points, se " in v.evidence  # after the tally


def test_ramia_beats_mia_evidence_says_what_the_spread_is_and_the_room_left():
    v = rules.ramia_beats_mia(frame(UP, UP), "n")
    assert (
        "std over fresh draws of the samples" in v.evidence and "paired interval over the ranges decides" in v.evidence
    )
    # auc_b, the MIA at the centre, is 0.67: 33 points of room above it
    assert "room left above the MIA at the centre (100 × (1 - its AUC)): LOSS 33.0, RMIA 33.0" in v.evidence


def seeded(effect, per_seed):
    """A backbone's row averaged over the target's seeds: its seeds' estimates and their sd."""
    return {**effect, "n_seeds": len(per_seed), "per_seed": per_seed, "seed_sd": float(pd.Series(per_seed).std())}


def test_ramia_beats_mia_over_seeds_holds_the_mean_to_the_seed_bar_on_both_sides():
    # both means +0.03 with the ranges' interval above 0; seeds that agree (sd 0.01: 2 sd / sqrt(3) = 0.0115) are
    # clear, seeds that disagree (sd 0.036: bar 0.042 above the mean's 0.03) are inside the noise
    agree, split = [0.02, 0.03, 0.04], [0.07, 0.0, 0.02]
    v = rules.ramia_beats_mia(frame(seeded(UP, agree), seeded(UP, agree)), "n")
    assert v.verdict == REPRODUCED and "(100 × (1 - its AUC, the seeds' mean)): " in v.evidence
    assert "the mean over the target's seeds" in v.evidence and "(seeds +2.0, +3.0, +4.0; seed sd 1.0)" in v.evidence
    assert rules.SEEDS_NOTE in v.rule and SEED_MEAN_BAR in rules.SEEDS_NOTE
    v = rules.ramia_beats_mia(frame(seeded(UP, split), seeded(UP, split)), "n")
    assert v.verdict == INCONCLUSIVE and "inside the noise in 2" in v.evidence
    assert rules.SEEDS_NOTE not in rules.ramia_beats_mia(frame(UP, UP), "n").rule  # one target: no seed bar


def test_trimmed_beats_glrt_and_bayes_over_seeds_names_its_seeds():
    agree = [0.02, 0.03, 0.04]
    v = rules.trimmed_beats_glrt_and_bayes(versus((seeded(UP, agree),) * 2, (seeded(UP, agree),) * 2), "n")
    assert v.verdict == REPRODUCED and "trimmed minus baseline, the mean over the target's seeds" in v.evidence
    assert rules.SEEDS_NOTE in v.rule
    assert v.lab_value.startswith("the seeds' mean AUCs: LOSS: trimmed 0.700 vs GLRT (max) 0.680")
    one = rules.trimmed_beats_glrt_and_bayes(versus((UP, UP), (UP, UP)), "n")  # one target: its own AUCs
    assert one.lab_value.startswith("LOSS: trimmed 0.700")


def test_ramia_beats_mia_not_tested_without_backbones():
    assert rules.ramia_beats_mia(pd.DataFrame(), "n").verdict == NOT_TESTED


# ----------------------------------------------------------------------------- Figure 11


def versus(glrt, bayes, tie_bayes=(False, False)):
    rows = []
    for b, eg, eb, tb in zip(("LOSS", "RMIA"), glrt, bayes, tie_bayes):
        rows.append({"backbone": b, "baseline": "GLRT (max)", "tie": False, **eg, "auc_a": 0.7, "auc_b": 0.68})
        rows.append({"backbone": b, "baseline": "Bayes factor (mean)", "tie": tb, **eb, "auc_a": 0.7, "auc_b": 0.68})
    return pd.DataFrame(rows)


def test_trimmed_beats_glrt_and_bayes_reproduced_when_all_comparisons_are_clear():
    v = rules.trimmed_beats_glrt_and_bayes(versus((UP, UP), (UP, UP)), "n")
    assert v.verdict == REPRODUCED
    assert_complete(v, "ramia-fig11-trimmed")


def test_trimmed_beats_glrt_and_bayes_partly_when_it_beats_glrt_only():
    assert rules.trimmed_beats_glrt_and_bayes(versus((UP, UP), (NOISE, NOISE)), "n").verdict == PARTLY


def test_trimmed_beats_glrt_and_bayes_not_reproduced_when_the_baselines_win():
    assert rules.trimmed_beats_glrt_and_bayes(versus((DOWN, DOWN), (DOWN, UP)), "n").verdict == NOT_REPRODUCED


def test_trimmed_beats_glrt_and_bayes_inconclusive_inside_the_noise():
    assert rules.trimmed_beats_glrt_and_bayes(versus((NOISE, NOISE), (NOISE, UP)), "n").verdict == INCONCLUSIVE


def test_trimmed_beats_glrt_and_bayes_tie_by_construction_is_no_evidence():
    # the chosen trim keeps every sample: trimmed IS the Bayes factor. Even a (float-rounding) "clear"
    # difference on those rows must not count for the claim: the result is partly, not reproduced.
    v = rules.trimmed_beats_glrt_and_bayes(versus((UP, UP), (UP, UP), tie_bayes=(True, True)), "n")
    assert v.verdict == PARTLY
    assert "tie by construction" in v.evidence and "in 2 of 4" in v.evidence
    # with GLRT inside the noise too, nothing is left: inconclusive
    v = rules.trimmed_beats_glrt_and_bayes(versus((NOISE, NOISE), (UP, UP), tie_bayes=(True, True)), "n")
    assert v.verdict == INCONCLUSIVE


def test_trimmed_beats_glrt_and_bayes_not_tested_without_rows():
    assert rules.trimmed_beats_glrt_and_bayes(pd.DataFrame(), "n").verdict == NOT_TESTED


# ----------------------------------------------------------------------------- Figure 6


def sizes(*effects):
    return frame(*effects, d_small=20, d_large=80, rho=-0.5)


def test_larger_range_lowers_auc_reproduced_when_auc_falls_clearly_for_every_backbone():
    v = rules.larger_range_lowers_auc(sizes(UP, UP), "n")
    assert v.verdict == REPRODUCED
    assert_complete(v, "ramia-fig6-range-size")
    assert "(d 20)" in v.evidence and "(d 80)" in v.evidence and "Figure 6" in v.source


def test_larger_range_lowers_auc_partly_when_one_backbone_falls():
    assert rules.larger_range_lowers_auc(sizes(UP, NOISE), "n").verdict == PARTLY


def test_larger_range_lowers_auc_not_reproduced_when_auc_rises():
    assert rules.larger_range_lowers_auc(sizes(DOWN, DOWN), "n").verdict == NOT_REPRODUCED


def test_larger_range_lowers_auc_inconclusive_inside_the_noise():
    assert rules.larger_range_lowers_auc(sizes(NOISE, NOISE), "n").verdict == INCONCLUSIVE


def test_larger_range_lowers_auc_not_tested_with_one_size():
    assert rules.larger_range_lowers_auc(pd.DataFrame(), "n").verdict == NOT_TESTED


# ----------------------------------------------------------------------------- Figure 5


def density(*effects):
    return frame(*effects, density_lo=0.0, density_hi=rules.PAPER_MAX_DENSITY, rho=0.9)


def test_density_raises_auc_reproduced_when_auc_rises_clearly_for_every_backbone():
    v = rules.density_raises_auc(density(UP, UP), "n")
    assert v.verdict == REPRODUCED
    assert_complete(v, "ramia-fig5-density")
    assert "(0%)" in v.evidence and "(50%)" in v.evidence and "50%" in v.rule


def test_density_raises_auc_partly_when_one_backbone_rises():
    assert rules.density_raises_auc(density(NOISE, UP), "n").verdict == PARTLY


def test_density_raises_auc_not_reproduced_when_auc_falls():
    assert rules.density_raises_auc(density(DOWN, DOWN), "n").verdict == NOT_REPRODUCED


def test_density_raises_auc_inconclusive_inside_the_noise():
    assert rules.density_raises_auc(density(NOISE, NOISE), "n").verdict == INCONCLUSIVE


# ----------------------------------------------------------------------------- Figure 7


def corr(*rp):
    return pd.DataFrame([{"backbone": b, "r": r, "p": p, "n": 30} for b, (r, p) in zip(("LOSS", "RMIA"), rp)])


def test_vulnerability_correlated_reproduced_when_every_r_is_significantly_positive():
    v = rules.vulnerability_correlated(corr((0.6, 0.001), (0.4, 0.02)), "n")
    assert v.verdict == REPRODUCED
    assert_complete(v, "ramia-fig7-correlation")


def test_vulnerability_correlated_partly_when_one_r_is_significant():
    assert rules.vulnerability_correlated(corr((0.6, 0.001), (0.2, 0.3)), "n").verdict == PARTLY


def test_vulnerability_correlated_not_reproduced_when_r_is_significantly_negative():
    assert rules.vulnerability_correlated(corr((-0.6, 0.001), (-0.5, 0.01)), "n").verdict == NOT_REPRODUCED


def test_vulnerability_correlated_inconclusive_when_no_r_is_significant():
    # positive but not significant (the old rule called this "partly"); a constant side gives NaN
    assert rules.vulnerability_correlated(corr((0.2, 0.3), (float("nan"), float("nan"))), "n").verdict == INCONCLUSIVE


@pytest.mark.parametrize("p,outcome", [(rules.CORR_P * 0.99, REPRODUCED), (rules.CORR_P, INCONCLUSIVE)])
def test_vulnerability_correlated_threshold_is_strict(p, outcome):
    assert rules.vulnerability_correlated(corr((0.5, p), (0.5, p)), "n").verdict == outcome


# ----------------------------------------------------------------------------- section V-H


def red(*effects, tie=False):
    return frame(*effects, auc_mean=0.7, tie_mean=tie)


def test_redaction_beats_completion_reproduced_when_every_backbone_gains_clearly():
    v = rules.redaction_beats_completion(red(UP, UP), "25 + 25 texts")
    assert v.verdict == REPRODUCED
    assert_complete(v, "ramia-vh-redacted")
    assert "mean of completions 0.700" in v.evidence


def test_redaction_beats_completion_partly_when_one_backbone_gains():
    assert rules.redaction_beats_completion(red(UP, NOISE), "n").verdict == PARTLY


def test_redaction_beats_completion_not_reproduced_when_one_completion_wins():
    assert rules.redaction_beats_completion(red(DOWN, NOISE), "n").verdict == NOT_REPRODUCED


def test_redaction_beats_completion_inconclusive_inside_the_noise():
    # 0.928 vs 0.925 on 25 + 25 texts: a paired interval holding 0
    v = rules.redaction_beats_completion(red(NOISE, NOISE, tie=True), "25 + 25 texts")
    assert v.verdict == INCONCLUSIVE
    assert "the same score: no trim was chosen" in v.evidence


def test_redaction_beats_completion_not_tested_without_texts():
    assert rules.redaction_beats_completion(pd.DataFrame(), "n").verdict == NOT_TESTED


# ----------------------------------------------------------------------------- the distance curve


def curve(*rows):
    """One row per backbone: (rise effect, RaMIA minus MIA at p_near as an effect)."""
    out = []
    for i, (rise, near) in enumerate(rows):
        out.append(
            {
                "backbone": ["LOSS", "RMIA"][i],
                **rise,
                "near_estimate": near["estimate"],
                "near_lo": near["lo"],
                "near_hi": near["hi"],
                "far_estimate": -0.032,
                "d_far": 55.2,
                "d_near": 18.4,
                "p_near": 0.75,
                "alpha": 20,
                "crossing": 24.0,
            }
        )
    return pd.DataFrame(out)


def test_closer_samples_raise_gain_reproduced_when_the_curve_rises_to_the_centre():
    v = rules.closer_samples_raise_gain(curve((UP, NOISE), (UP, UP)), "60 + 60 ranges")
    assert v.verdict == REPRODUCED and v.origin == "book" and v.key == "ramia-distance-curve"
    for f in dataclasses.fields(v):
        assert f.name in OPTIONAL or getattr(v, f.name) not in ("", None), f.name
    assert "-3.2 at 55.2 words" in v.evidence and "at 18.4 words (p 0.75; the centre: 20)" in v.evidence
    assert "overtakes the MIA at 24 words" in v.evidence and v.rule == rules.DISTANCE_RULE


def test_closer_samples_raise_gain_partly_when_one_backbone_rises():
    assert rules.closer_samples_raise_gain(curve((UP, NOISE), (NOISE, NOISE)), "n").verdict == PARTLY


def test_closer_samples_raise_gain_not_reproduced_when_closer_samples_still_lose():
    # the curve rises, but samples as close as the centre still lose clearly to it: distance does not explain it
    assert rules.closer_samples_raise_gain(curve((UP, DOWN), (UP, DOWN)), "n").verdict == NOT_REPRODUCED
    # or the curve falls as the samples come closer
    assert rules.closer_samples_raise_gain(curve((DOWN, UP), (DOWN, NOISE)), "n").verdict == NOT_REPRODUCED


def test_closer_samples_raise_gain_inconclusive_when_the_rise_is_noise():
    v = rules.closer_samples_raise_gain(curve((NOISE, UP), (NOISE, NOISE)), "n")
    assert v.verdict == INCONCLUSIVE and "inside the noise in 2" in v.evidence


def test_an_inconclusive_distance_curve_says_whether_the_lab_could_see_a_one_point_rise():
    from mimirlib.core import power

    # NOISE's rise: interval 0.045 wide, se 0.01148 on both backbones (the same ranges: rms): MDE 0.0322 > 0.01
    v = rules.closer_samples_raise_gain(curve((NOISE, UP), (NOISE, NOISE)), "n")
    assert v.power == power.UNDERPOWERED and v.mde == pytest.approx(2.8016 * 0.045 / 3.92, rel=1e-3)
    # what would reach it is more ranges (its units), not more texts: more samples per range barely help
    assert v.paired_over == "ranges" and "x the ranges behind each effect" in v.power_text()
    assert "texts" not in v.power_text()
    assert v.effect_of_interest == power.SMALLEST_EFFECT_OF_INTEREST and "smallest effect of interest" in v.rule
    # a tight rise of +0.1 point [-0.1, +0.3]: MDE 0.0029, and below one point: smaller than the book's bound
    tight = dict(estimate=0.001, lo=-0.001, hi=0.003)
    w = rules.closer_samples_raise_gain(curve((tight, UP), (tight, NOISE)), "n")
    assert w.verdict == INCONCLUSIVE and w.power == power.NEGLIGIBLE and w.mde < 0.01
    # decided: the MDE is shown, no power label; never marked a tally of the rises (not re-read over draws), even
    # where the rises' own signs agree with the rule's units, as here
    d = rules.closer_samples_raise_gain(curve((UP, NOISE), (UP, UP)), "n")
    assert d.verdict == REPRODUCED and d.power == "" and d.mde > 0 and d.decision == ""


def test_closer_samples_raise_gain_not_tested_without_a_close_enough_p():
    v = rules.closer_samples_raise_gain(pd.DataFrame(), "n")
    assert v.verdict == NOT_TESTED and "as close" in v.evidence


# ----------------------------------------------------------------------------- the paper's regime


def test_a_backbone_with_a_saturated_centre_is_not_counted():
    from mimirlib.verdicts import regime

    rows = [regime.centre("LOSS", 0.767, 0.0167), regime.centre("RMIA", 0.979, 0.683)]
    v = rules.ramia_beats_mia(frame(DOWN, UP), "n", rows)  # LOSS clearly down, RMIA (saturated) up
    assert v.verdict == NOT_REPRODUCED and "clear effect in the claimed direction in 0 of 1" in v.evidence
    assert ". Not counted, out of the paper's regime: RaMIA target's MIA at the range centre (RMIA)" in v.evidence
    assert v.regime == "centre-loss,centre-rmia" and rules.REGIME_NOTE in v.rule
    # the same frame in regime counts both backbones
    assert rules.ramia_beats_mia(frame(DOWN, UP), "n", rows[:1]).verdict == NOT_REPRODUCED
    assert "1 of 2" in rules.ramia_beats_mia(frame(DOWN, UP), "n").evidence


def test_every_backbone_saturated_means_not_tested_saying_why():
    from mimirlib.verdicts import regime

    rows = [regime.centre("LOSS", 0.97, 0.5), regime.centre("RMIA", 0.979, 0.683)]
    v = rules.density_raises_auc(frame(UP, UP, rho=[0.9, 0.9], density_lo=0.0, density_hi=0.5), "n", rows)
    assert v.verdict == NOT_TESTED and v.evidence.startswith("not tested: RaMIA target's MIA at the range centre")
    assert "TPR at 1% FPR 68.3%" in v.evidence
