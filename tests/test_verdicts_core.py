"""The verdict core: what counts as a clear effect, how a tally becomes an outcome, the records."""

import json

import numpy as np
import pytest

from mimirlib.core import metrics
from mimirlib import verdicts
from mimirlib.verdicts import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    NOT_TESTED,
    PARTLY,
    REPRODUCED,
    Effect,
    Verdict,
    decide_tally,
    tally,
)
from mimirlib.verdicts import main_results, training_size


def test_effect_sign_clear_positive_and_negative():
    assert Effect(0.05, 0.01, 0.09).sign() == 1
    assert Effect(-0.05, -0.09, -0.01).sign() == -1


def test_effect_inside_bootstrap_interval_is_noise():
    assert Effect(0.05, -0.01, 0.11).sign() == 0


def test_effect_inside_seed_spread_is_noise_even_with_a_narrow_interval():
    # interval excludes 0, but the effect is under SEED_Z seed sd: a different seed could flip it
    assert Effect(0.01, 0.005, 0.015, seed_sd=0.006, n_seeds=3).sign() == 0
    assert Effect(0.02, 0.015, 0.025, seed_sd=0.006, n_seeds=3).sign() == 1


def test_a_mean_over_seeds_is_held_to_its_seed_standard_error():
    # seed sd 0.02: one seed's +0.03 is inside 2 sd (0.04); the mean of 3 seeds is held to
    # 2 x 0.02 / sqrt(3) = 0.0231, which +0.03 clears; +0.02 does not
    assert Effect(0.03, 0.01, 0.05, seed_sd=0.02, n_seeds=3).sign() == 0
    assert Effect(0.03, 0.01, 0.05, seed_sd=0.02, n_seeds=3, averaged=3).sign() == 1
    assert Effect(0.02, 0.01, 0.03, seed_sd=0.02, n_seeds=3, averaged=3).sign() == 0
    e = Effect(0.03, 0.01, 0.05, seed_sd=0.02, n_seeds=3, averaged=3)
    assert e.seed_se == pytest.approx(0.02 / np.sqrt(3))
    assert e.se == pytest.approx(np.sqrt((0.04 / 3.919928) ** 2 + 0.02**2 / 3), rel=1e-5)
    assert e.describe().startswith("mean of 3 seeds +0.030")
    # the rule text every chapter quotes for such effects says the same bar
    assert verdicts.SEED_MEAN_BAR.endswith("exceeds 2 seed sd / sqrt(r)")
    assert all(verdicts.SEED_MEAN_BAR in n for n in (main_results.AVERAGED_NOTE, training_size.SEED_MEAN_NOTE))


@pytest.mark.parametrize("averaged", [0, 4, True, 1.5])
def test_an_effect_cannot_average_more_seeds_than_it_has(averaged):
    with pytest.raises(ValueError, match="averaged"):
        Effect(0.03, 0.01, 0.05, seed_sd=0.02, n_seeds=3, averaged=averaged)


def test_the_power_floor_of_averaged_effects_is_their_seed_standard_error():
    claim = verdicts.Claim("x", paper_effect=0.02)
    one = claim.read_power([Effect(0.01, 0.0, 0.02, seed_sd=0.03, n_seeds=3)])
    three = claim.read_power([Effect(0.01, 0.0, 0.02, seed_sd=0.03, n_seeds=3, averaged=3)])
    assert one.floor == pytest.approx(2.801585 * 0.03, rel=1e-5)
    assert three.floor == pytest.approx(2.801585 * 0.03 / np.sqrt(3), rel=1e-5)


def test_tally_counts_relative_to_the_claimed_direction():
    es = [Effect(0.05, 0.01, 0.09), Effect(-0.05, -0.09, -0.01), Effect(0.0, -0.1, 0.1)]
    t = tally(es, claimed_sign=-1)
    assert (t.n_for, t.n_against, t.n_noise) == (1, 1, 1)


@pytest.mark.parametrize(
    "counts,outcome",
    [
        ((3, 0, 1), REPRODUCED),  # 75% clearly for
        ((2, 0, 2), PARTLY),  # half decided, all for
        ((1, 2, 1), NOT_REPRODUCED),  # more clearly against than for
        ((1, 1, 0), NOT_REPRODUCED),  # a tie is not support
        ((1, 0, 3), INCONCLUSIVE),  # most inside the noise
        ((8, 0, 10), INCONCLUSIVE),  # 8 of 18 for: under half
        ((8, 1, 9), INCONCLUSIVE),  # the seed-3 B.2 case: a unit against does not make it partly
        ((9, 1, 8), PARTLY),  # half for, more for than against
        ((5, 4, 9), INCONCLUSIVE),  # mixed, neither side at half
        ((2, 9, 7), NOT_REPRODUCED),  # half against
        ((0, 0, 0), NOT_TESTED),
    ],
)
def test_decide_tally_each_outcome(counts, outcome):
    assert decide_tally(verdicts.Tally(*counts)) == outcome


RANK = {NOT_REPRODUCED: 0, INCONCLUSIVE: 1, PARTLY: 2, REPRODUCED: 3}


def test_decide_tally_is_monotone_in_the_evidence():
    # every tally of up to 24 units: a unit moved from the noise to the claim's side never lowers the
    # outcome, and one moved to the opposite side never raises it (the old rule broke the second)
    for n in range(1, 25):
        for f in range(n + 1):
            for a in range(n - f + 1):
                z = n - f - a
                here = RANK[decide_tally(verdicts.Tally(f, a, z))]
                if z:
                    assert RANK[decide_tally(verdicts.Tally(f + 1, a, z - 1))] >= here, (f, a, z)
                    assert RANK[decide_tally(verdicts.Tally(f, a + 1, z - 1))] <= here, (f, a, z)


@pytest.mark.parametrize(
    "counts,estimate,outcome",
    [
        ((1, 0, 5), 0.040, PARTLY),  # the tally is inconclusive; the pooled z is 2.05 > 1.96 (se 0.0195)
        ((1, 0, 5), 0.038, INCONCLUSIVE),  # z 1.95: inside the noise
        ((0, 1, 5), -0.040, NOT_REPRODUCED),  # pooled clearly opposite
        ((0, 1, 5), -0.038, INCONCLUSIVE),
        ((6, 0, 0), -0.040, REPRODUCED),  # the tally decides: the pooled effect is not consulted
        ((0, 4, 2), 0.040, NOT_REPRODUCED),
        ((0, 0, 0), 0.040, NOT_TESTED),
    ],
)
def test_decide_pooled_reads_the_pooled_effect_only_when_the_tally_is_inconclusive(counts, estimate, outcome):
    assert verdicts.decide_pooled(verdicts.Tally(*counts), estimate, 0.0195) == outcome


def test_decide_pooled_is_monotone_in_the_evidence():
    # every tally of up to 12 units and pooled z on both sides of the bar: a larger pooled effect, or a
    # unit moved from the noise to the claim's side, never lowers the outcome; one moved against never raises it
    zs = [-3.0, -1.97, -1.95, 0.0, 1.95, 1.97, 3.0]
    for n in range(1, 13):
        for f in range(n + 1):
            for a in range(n - f + 1):
                z0 = n - f - a
                for i, z in enumerate(zs):
                    here = RANK[verdicts.decide_pooled(verdicts.Tally(f, a, z0), z, 1.0)]
                    if i + 1 < len(zs):
                        assert RANK[verdicts.decide_pooled(verdicts.Tally(f, a, z0), zs[i + 1], 1.0)] >= here
                    if z0:
                        assert RANK[verdicts.decide_pooled(verdicts.Tally(f + 1, a, z0 - 1), z, 1.0)] >= here
                        assert RANK[verdicts.decide_pooled(verdicts.Tally(f, a + 1, z0 - 1), z, 1.0)] <= here


def _average_claim_units():
    # 3 units clearly opposite (-0.12, se 0.0306: z -3.9), 5 inside the noise (-0.03): the tally is
    # inconclusive (3 of 8 against, below half); the pooled mean -0.064, se 0.0306 (fully correlated), z -2.08
    return [Effect(-0.12, -0.18, -0.06)] * 3 + [Effect(-0.03, -0.09, 0.03)] * 5


@pytest.mark.parametrize("average,outcome,decision", [(True, NOT_REPRODUCED, "pooled"), (False, INCONCLUSIVE, "tally")])
def test_a_claim_about_an_average_is_tallied_then_read_on_its_pooled_mean(average, outcome, decision):
    claim = verdicts.Claim("X raises Y", average=average)
    v = claim.tallied(tally(_average_claim_units()), "evidence", verdicts.TALLY_RULE)
    assert (v.verdict, v.decision) == (outcome, decision)
    assert v.rule.count(verdicts.POOLED_RULE) == (1 if average else 0)
    assert (
        "evidence. Pooled (claimed direction): -0.064, se 0.0306, z -2.08: clearly opposite." == v.evidence
    ) == average


@pytest.mark.parametrize("average", [True, False])
def test_what_is_beside_the_units_ends_the_evidence_after_the_pooled_reading(average):
    v = verdicts.Claim("X raises Y", average=average).tallied(
        tally(_average_claim_units()), "evidence.", verdicts.TALLY_RULE, " Beside: Min-K%++ -0.2."
    )
    assert v.evidence.startswith("evidence.") and v.evidence.endswith(" Beside: Min-K%++ -0.2.")
    assert ("Pooled" in v.evidence) == average


def test_a_pooled_mean_beside_a_tally_that_decides_says_it_was_not_read():
    # one unit clearly for, one clearly against (the semantic-closer claim's shape): the tally decides "not
    # reproduced" (half against, as many as for), while the pooled mean is clear for: shown, marked not read
    units = [Effect(0.15, 0.14, 0.16), Effect(-0.06, -0.07, -0.05)]
    v = verdicts.Claim("X raises Y", average=True).tallied(tally(units), "evidence.", verdicts.TALLY_RULE)
    assert v.verdict == NOT_REPRODUCED
    assert v.evidence.endswith(": clear in the claimed direction; not read, as the tally decides.")
    # an inconclusive tally (the test above): the pooled mean decides, with no such note
    w = verdicts.Claim("X raises Y", average=True).tallied(tally(_average_claim_units()), "e", verdicts.TALLY_RULE)
    assert w.verdict == NOT_REPRODUCED and "not read" not in w.evidence


def test_the_pooled_reading_is_written_in_points_where_the_evidence_is():
    # RaMIA's evidence gives AUC differences in points (x 100): its pooled mean reads in the same units
    claim = verdicts.Claim("X raises Y", average=True)
    v = claim.tallied(
        tally(_average_claim_units()), "RaMIA minus MIA, AUC points: -12.0", verdicts.TALLY_RULE, points=True
    )
    assert v.evidence.endswith("-12.0. Pooled (claimed direction): -6.38 points, se 3.06, z -2.08: clearly opposite.")
    assert v.verdict == NOT_REPRODUCED and "-0.064" not in v.evidence


def test_an_average_claim_inside_the_noise_stays_inconclusive_and_its_rule_quotes_the_pooled_rule_once():
    units = [Effect(-0.12, -0.18, -0.06)] * 2 + [Effect(-0.03, -0.09, 0.03)] * 6  # pooled -0.053, z -1.73
    rule = f"{verdicts.TALLY_RULE}; {verdicts.POOLED_RULE}"
    v = verdicts.Claim("X raises Y", average=True).tallied(tally(units), "evidence", rule)
    assert v.verdict == INCONCLUSIVE and v.rule == rule and "z -1.7" in v.evidence


def test_verdict_refuses_unknown_outcome_and_origin():
    with pytest.raises(ValueError, match="verdict"):
        Verdict("c", "sort of", "e", "r")
    with pytest.raises(ValueError, match="origin"):
        Verdict("c", REPRODUCED, "e", "r", origin="blog")


def test_book_findings_are_labelled_as_such_in_the_table_row():
    row = Verdict("a blind classifier separates", REPRODUCED, "e", "r", origin="book").as_row()
    assert "book's finding" in row["paper's claim"]


def test_records_round_trip_with_chapter_and_section():
    v = Verdict("c", INCONCLUSIVE, "e", "r", source="MIMIR §3.1", n="10 + 10", key="k")
    rec = json.loads(verdicts.to_json([v], "main_results", verdicts.section_label("main_results")))
    assert rec[0]["verdict"] == INCONCLUSIVE and rec[0]["section"] == "verdicts-main-results"
    assert rec[0]["chapter"] == "main_results" and rec[0]["n"] == "10 + 10"


def test_claim_builds_every_record_of_its_rule():
    claim = verdicts.Claim("c", source="MIMIR §3.1", paper_value="36 of 40", key="k", origin="book")
    fixed = dict(claim="c", source="MIMIR §3.1", paper_value="36 of 40", key="k", origin="book")
    v = claim.verdict(PARTLY, "e", "r", lab_value="0.6", n="10 + 10")
    assert v == Verdict(verdict=PARTLY, evidence="e", rule="r", lab_value="0.6", n="10 + 10", **fixed)
    assert claim.not_tested("no run", n="-") == Verdict(verdict=NOT_TESTED, evidence="no run", rule="-", n="-", **fixed)
    t = tally([Effect(0.05, 0.01, 0.09)] * 3 + [Effect(0.0, -0.1, 0.1)])
    assert claim.tallied(t, "e", "r").verdict == decide_tally(t) == REPRODUCED
    assert verdicts.Claim("c").verdict(REPRODUCED, "e", "r").origin == "paper"


def test_seed_sd_needs_two_seeds():
    assert verdicts.seed_sd([0.6]) is None
    assert verdicts.seed_sd([0.6, 0.62, 0.64]) == pytest.approx(0.02)


# ----------------------------------------------------------------- paired bootstrap


def test_paired_difference_point_is_the_difference_of_aucs():
    a_m, a_n = [0.9, 0.8, 0.7], [0.1, 0.75, 0.3]
    b_m, b_n = [0.2, 0.8, 0.7], [0.1, 0.75, 0.3]
    d = metrics.paired_auc_difference(a_m, a_n, b_m, b_n, n_resamples=50)
    assert d.point == pytest.approx(metrics.auc(a_m, a_n) - metrics.auc(b_m, b_n))
    assert d.lo <= d.point <= d.hi


def test_pairing_makes_a_shared_text_effect_cancel():
    # b = a + a small constant shift on members: a paired comparison sees a tight, positive effect,
    # although each AUC alone has a wide interval.
    rng = np.random.default_rng(0)
    m, n = rng.normal(0.3, 1, 200), rng.normal(0, 1, 200)
    d = metrics.paired_auc_difference(m + 0.3, n, m, n, n_resamples=300, seed=1)
    one = metrics.bootstrap_auc(m, n, n_resamples=300, seed=1)
    assert d.lo > 0
    assert (d.hi - d.lo) < (one.hi - one.lo)


def test_identical_scores_give_a_zero_width_difference():
    rng = np.random.default_rng(0)
    m, n = rng.normal(0.3, 1, 50), rng.normal(0, 1, 50)
    d = metrics.paired_auc_difference(m, n, m, n, n_resamples=100)
    assert d.point == d.lo == d.hi == 0.0
    assert Effect(d.point, d.lo, d.hi).sign() == 0


def test_paired_difference_refuses_unaligned_members():
    with pytest.raises(ValueError, match="b_members"):
        metrics.paired_auc_difference([1, 2], [0], [1], [0])
    with pytest.raises(ValueError, match="paired_nonmembers"):
        metrics.paired_auc_difference([1], [0, 1], [1], [0])
    d = metrics.paired_auc_difference([1.0], [0.0, 0.5], [1.0], [0.0], n_resamples=10, paired_nonmembers=False)
    assert d.point == 0.0


def test_verdict_table_keeps_long_evidence():
    long = "x" * 120
    html = verdicts.verdict_table([Verdict("a claim", REPRODUCED, long, "a rule")]).to_html()
    assert long in html and "a claim" in html


@pytest.mark.parametrize(
    "z,reading,outcome",
    [
        (2.0, "clear in the claimed direction", PARTLY),
        (1.95, "inside the noise", INCONCLUSIVE),
        (-1.95, "inside the noise", INCONCLUSIVE),
        (-2.0, "clearly opposite", NOT_REPRODUCED),
    ],
)
def test_the_pooled_reading_names_its_direction_as_the_outcome_does(z, reading, outcome):
    # a pooled mean clearly opposite to the claim once read "clear" (its |z|), beside a "not reproduced"
    assert verdicts.pooled_reading(z) == reading
    assert verdicts.decide_pooled(verdicts.Tally(0, 0, 4), z, 1.0) == outcome


def test_parts_after_the_evidence_are_sentences_of_their_own():
    s = verdicts.sentences
    assert s("a", " Beside: b.") == s("a.", ". Beside: b.") == "a. Beside: b."  # both ways the chapters wrote it
    assert s("a: noise.", ". Beside, c") == "a: noise. Beside, c"  # once read "noise.. Beside"
    assert s("x in 2", "; not counted, out of regime") == "x in 2. Not counted, out of regime"
    assert s("a", "", "  ") == "a" and s("a (b)", "c") == "a (b). C"


def test_what_is_beside_an_average_claim_never_runs_on_from_its_pooled_reading():
    v = verdicts.Claim("X raises Y", average=True).tallied(
        tally(_average_claim_units()), "evidence", verdicts.TALLY_RULE, ". Beside, not tallied (min_k_pp): x"
    )
    assert (
        v.evidence.endswith("z -2.08: clearly opposite. Beside, not tallied (min_k_pp): x") and ".." not in v.evidence
    )
