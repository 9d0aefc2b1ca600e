"""Power and equivalence (mimirlib.core.power), against hand-worked cases."""

import math

import pytest

from mimirlib.core import power
from mimirlib.verdicts import INCONCLUSIVE, REPRODUCED, Claim, Effect, tally


def test_se_from_a_95_interval_and_a_seed_sd_by_hand():
    assert power.se_of(-0.0196, 0.0196) == pytest.approx(0.01, rel=1e-4)  # 0.0392 / 3.92
    assert power.se_of(-0.0196, 0.0196, 0.01) == pytest.approx(math.sqrt(2) * 0.01, rel=1e-4)
    with pytest.raises(ValueError):
        power.se_of(0.1, 0.0)


def test_z_score_by_hand_and_with_an_exact_estimate():
    assert power.z_score(0.04, 0.0195) == pytest.approx(2.0513, rel=1e-4)
    assert power.z_score(-0.01, 0.0) == -math.inf and power.z_score(0.0, 0.0) == 0.0


def test_mde_is_2_80_standard_errors():
    # (1.960 + 0.842) x 0.02 = 0.05604
    assert power.mde(0.02) == pytest.approx(0.05604, abs=1e-4)


def test_below_the_paper_is_one_sided_on_both_sides_of_the_bound():
    # bound 0.05, se 0.01: the one-sided 95% upper bound is estimate + 0.01645
    assert power.below(0.03, 0.01, 0.05)  # 0.0465 < 0.05
    assert not power.below(0.034, 0.01, 0.05)  # 0.0505 >= 0.05
    assert power.below(-0.034, 0.01, 0.05)  # may be opposite: still below the paper's effect
    assert not power.below(-0.5, 0.01, 0.0)  # no size to be below


def test_a_possibly_opposite_effect_reads_smaller_than_the_papers_not_underpowered():
    # seed-3 dedup (ref): -0.007, se 0.0054, paper +0.013, MDE 0.0151; -0.007 + 1.645 x 0.0054 = +0.0019 < 0.013
    # rejects the paper's effect (TOST's lower test, -0.0159 > -0.013, fails: it read "underpowered")
    r = power.read([(-0.007, 0.0054)], 0.013)
    assert r.mde > 0.013 and r.reading == power.SMALLER
    assert power.read([(0.0, 0.0054)], 0.0175).reading == power.SMALLER  # 0.0089 < 0.0175
    assert power.read([(0.0, 0.0054)], 0.0085).reading == power.UNDERPOWERED  # 0.0089 >= 0.0085, MDE 0.0151


def test_the_pooled_reading_by_hand():
    # two units, se 0.01 and 0.03: pooled se = sqrt((1e-4 + 9e-4) / 2) = 0.02236; MDE 0.0627
    r = power.read([(0.0, 0.01), (0.01, 0.03)], 0.2)
    assert r.estimate == pytest.approx(0.005) and r.se == pytest.approx(0.022361, abs=1e-6)
    assert r.mde == pytest.approx(0.06266, abs=1e-4)
    assert r.reading == power.SMALLER  # 0.005 + 1.645 x 0.0224 = 0.0418 < 0.2
    # paper 0.03: not below (0.005 + 0.0368 > 0.03) and the MDE 0.063 > 0.03
    assert power.read([(0.0, 0.01), (0.01, 0.03)], 0.03).reading == power.UNDERPOWERED
    # paper 0.043: below (0.0418 < 0.043) although the MDE is larger: the one-sided test decides
    assert power.read([(0.0, 0.01), (0.01, 0.03)], 0.043).reading == power.SMALLER
    # paper 0.03: MDE 0.028 < 0.03, but 0.015 + 0.01645 > 0.03: neither test decides
    assert power.read([(0.015, 0.01)], 0.03).reading == power.UNRESOLVED
    assert power.read([(0.0, 0.01)], None).reading == power.NO_PAPER_EFFECT
    assert "MDE 0.063 vs paper +0.043" == power.read([(0.0, 0.01), (0.01, 0.03)], 0.043).text()


def test_a_tallied_inconclusive_verdict_carries_its_mde_and_reading():
    claim = Claim("c", key="k", paper_effect=0.043)
    noise = [Effect(0.0, -0.08, 0.08, label=f"u{i}") for i in range(4)]
    v = claim.tallied(tally(noise), "e", "r")
    assert v.verdict == INCONCLUSIVE and v.power == power.UNDERPOWERED
    assert v.mde == pytest.approx(2.8016 * 0.08 / 1.96, abs=1e-3) and v.paper_effect == 0.043
    assert (
        v.outcome_label == "inconclusive (underpowered)" and "MDE 0.114 vs paper +0.043" in v.as_row()["lab evidence"]
    )
    tight = [Effect(0.001, -0.004, 0.006, label=f"u{i}") for i in range(4)]
    assert claim.tallied(tally(tight), "e", "r").power == power.SMALLER
    clear = [Effect(0.1, 0.05, 0.15, label=f"u{i}") for i in range(4)]
    done = claim.tallied(tally(clear), "e", "r")
    assert done.verdict == REPRODUCED and done.power == "" and done.mde is not None


def test_the_reading_is_in_the_claimed_direction():
    claim = Claim("c", key="k", paper_effect=0.02)
    down = [Effect(-0.01, -0.012, -0.008, label="u")]  # clearly opposite, small
    r = claim.read_power(down, claimed_sign=-1)
    assert r.estimate == pytest.approx(0.01)


def test_the_floor_is_the_mde_that_more_texts_cannot_lower():
    r = power.read([(0.0, 0.05), (0.0, 0.05)], 0.043, [0.02, None])
    # the se's seed part: a unit without a seed sd adds no seed variance, so sqrt(0.02^2 / 2), not 0.02
    assert r.floor == pytest.approx(power.mde(0.02 / 2**0.5)) and r.mde > r.floor
    assert power.read([(0.0, 0.05)], 0.043).floor is None
    claim = Claim("c", key="k", paper_effect=0.043)
    effects = [Effect(0.0, -0.09, 0.09, seed_sd=0.021, n_seeds=3, label=f"u{i}") for i in range(4)]
    v = claim.tallied(tally(effects), "e", "r")
    assert v.mde_floor == pytest.approx(2.8016 * 0.021, abs=1e-3)  # 0.059 > 0.043: only more seeds can help
    assert "(0.059 with unlimited texts) vs paper +0.043" in v.power_text()


def test_the_text_part_pools_independently_across_groups_by_hand():
    # two domains, one unit each, text se 0.03, no seed part: se = sqrt(2 x 0.03^2) / 2 = 0.02121
    r = power.read([(0.0, 0.03), (0.0, 0.03)], 0.05, None, ["code", "math"])
    assert r.se == pytest.approx(0.03 / math.sqrt(2), rel=1e-6)
    # the same two units in one domain: fully correlated, as without groups
    assert power.read([(0.0, 0.03), (0.0, 0.03)], 0.05, None, ["code", "code"]).se == pytest.approx(0.03)
    # with a seed sd of 0.02 in each (total se sqrt(0.03^2 + 0.02^2)): the seed part stays correlated:
    # text 0.03^2 x 2 / 4 = 0.00045, seed 0.0004 -> se sqrt(0.00085) = 0.029155
    total = math.hypot(0.03, 0.02)
    g = power.read([(0.0, total), (0.0, total)], 0.05, [0.02, 0.02], ["code", "math"])
    assert g.se == pytest.approx(math.sqrt(0.00085), rel=1e-6) and g.floor == pytest.approx(power.mde(0.02))
    # two domains of two attacks each, text se 0.03 and 0.01 in code, 0.02 in math:
    # (2 x sqrt((9e-4 + 1e-4) / 2))^2 + (2 x 0.02)^2 = 0.002 + 0.0016 over 16 -> se 0.015
    four = power.read([(0, 0.03), (0, 0.01), (0, 0.02), (0, 0.02)], 0.05, None, ["c", "c", "m", "m"])
    assert four.se == pytest.approx(0.015, rel=1e-6)
    with pytest.raises(ValueError, match="groups"):
        power.read([(0.0, 0.03)], 0.05, None, ["a", "b"])


def test_a_claim_pools_by_group_only_when_every_effect_names_one():
    grouped = [Effect(0.0, -0.0588, 0.0588, label=d, group=d) for d in ("code", "math")]
    assert Claim("c", paper_effect=0.05).read_power(grouped).se == pytest.approx(0.03 / math.sqrt(2), rel=1e-3)
    mixed = [grouped[0], Effect(0.0, -0.0588, 0.0588, label="x")]
    assert Claim("c", paper_effect=0.05).read_power(mixed).se == pytest.approx(0.03, rel=1e-3)


def test_without_a_paper_number_the_smallest_effect_of_interest_reads_on_both_sides():
    bound = power.SMALLEST_EFFECT_OF_INTEREST
    assert bound == 0.01
    # se 0.003: MDE 0.0084 < 0.01; -0.002 + 1.645 x 0.003 = 0.0029 < 0.01: below the bound
    r = power.read([(-0.002, 0.003)], None, of_interest=bound)
    assert r.reading == power.NEGLIGIBLE and r.of_interest == bound and r.paper_effect is None
    # 0.006 + 0.0049 = 0.0109 >= 0.01, MDE 0.0084 < 0.01: neither test decides
    assert power.read([(0.006, 0.003)], None, of_interest=bound).reading == power.UNRESOLVED
    # se 0.02: MDE 0.056 > 0.01 and 0.0 + 0.0329 >= 0.01: the lab cannot tell an effect of one AUC point
    assert power.read([(0.0, 0.02)], None, of_interest=bound).reading == power.UNDERPOWERED
    # a paper number wins over the book's bound (and the reading names the paper's)
    both = power.read([(-0.002, 0.003)], 0.013, of_interest=bound)
    assert both.reading == power.SMALLER and both.of_interest is None
    assert power.read([(0.0, 0.02)], None, of_interest=bound).text() == (
        "MDE 0.056 vs smallest effect of interest +0.010 (no number in the paper); about 31x the texts behind each "
        "effect (the same seeds) would reach it"  # (0.056 / 0.010)^2 = 31.4
    )


def test_a_claim_with_a_smallest_effect_of_interest_carries_it_and_never_as_the_papers():
    claim = Claim("c", key="k", effect_of_interest=power.SMALLEST_EFFECT_OF_INTEREST)
    noise = [Effect(0.0, -0.08, 0.08, label=f"u{i}") for i in range(4)]
    v = claim.tallied(tally(noise), "e", "r")
    assert v.power == power.UNDERPOWERED and v.paper_effect is None and v.effect_of_interest == 0.01
    assert "vs smallest effect of interest +0.010 (no number in the paper)" in v.power_text()
    tight = [Effect(-0.001, -0.004, 0.002, label=f"u{i}") for i in range(4)]
    assert claim.tallied(tally(tight), "e", "r").outcome_label == (
        "inconclusive (smaller than the smallest effect of interest)"
    )
    # a claim with the paper's number records no bound of its own
    both = Claim("c", paper_effect=0.02, effect_of_interest=0.01)
    assert both.verdict("reproduced", "e", "r").effect_of_interest is None


def test_texts_to_reach_the_bound_by_hand():
    # mde^2 = text part^2 + floor^2; the text part shrinks as 1 / sqrt(k): k = (mde^2 - floor^2) / (bound^2 - floor^2)
    assert power.texts_to_reach(0.0128, 0.01) == pytest.approx(1.6384)  # no seed spread: (mde / bound)^2
    assert power.texts_to_reach(0.2, 0.16, floor=0.12) == pytest.approx(2.285714, rel=1e-5)
    assert power.texts_to_reach(0.008, 0.01) < 1  # reached already
    assert math.isinf(power.texts_to_reach(0.22, 0.01, floor=0.156))  # the seeds' floor alone is above the bound
    assert math.isinf(power.texts_to_reach(0.22, 0.156, floor=0.156))  # at the floor: never below it
    # k times the texts: each unit's text se / sqrt(k), the seed part unchanged, gives exactly the bound
    se_text, seed = 0.05, 0.02
    k = power.texts_to_reach(power.mde(math.hypot(se_text, seed)), 0.1, floor=power.mde(seed))
    assert power.mde(math.hypot(se_text / math.sqrt(k), seed)) == pytest.approx(0.1)
    for bad in ((0.1, 0.0), (0.0, 0.1), (0.1, -0.01)):
        with pytest.raises(ValueError, match="texts_to_reach: expected an MDE and a bound above 0"):
            power.texts_to_reach(*bad)


def test_an_underpowered_reading_says_what_would_reach_its_bound():
    more = power.describe(0.0128, None, of_interest=0.01, points=True, reading=power.UNDERPOWERED)
    assert more == (
        "MDE 1.28 points vs smallest effect of interest +1.00 points (no number in the paper); about 1.6x the texts "
        "behind each effect (the same seeds) would reach it"
    )
    seeds = power.describe(0.22, None, floor=0.156, of_interest=0.01, reading=power.UNDERPOWERED)
    assert seeds == (
        "MDE 0.220 (0.156 with unlimited texts) vs smallest effect of interest +0.010 (no number in the paper); no "
        "number of texts reaches it (the MDE with unlimited texts is at or above it); only more training seeds can"
    )
    assert power.reach_text(0.5, 0.043) == "about 135x the texts behind each effect (the same seeds) would reach it"
    # named by what the effects are paired over: RaMIA's range games pair over ranges
    assert power.reach_text(0.5, 0.043, paired_over="ranges") == (
        "about 135x the ranges behind each effect (the same seeds) would reach it"
    )
    on_ranges = power.describe(0.22, None, 0.156, 0.01, reading=power.UNDERPOWERED, paired_over="ranges")
    assert "(0.156 with unlimited ranges)" in on_ranges and "no number of ranges reaches it" in on_ranges
    assert "texts" not in on_ranges
    # only an underpowered reading says it; the others read as before
    for other in ("", power.UNRESOLVED, power.SMALLER):
        assert power.describe(0.05, 0.043, reading=other) == "MDE 0.050 vs paper +0.043"
    v = Claim("c", key="k", paper_effect=0.043).verdict(INCONCLUSIVE, "e", "r")
    under = type(v)(**{**v.__dict__, "mde": 0.0866, "power": power.UNDERPOWERED})
    assert under.power_text() == (
        "MDE 0.087 vs paper +0.043; about 4.1x the texts behind each effect (the same seeds) would reach it"
    )
    # a claim's paired_over reaches its verdicts' power text
    r = Claim("c", key="k", paper_effect=0.043, paired_over="ranges").verdict(INCONCLUSIVE, "e", "r")
    assert r.paired_over == "ranges"
    r_under = type(r)(**{**r.__dict__, "mde": 0.0866, "power": power.UNDERPOWERED})
    assert "about 4.1x the ranges behind each effect" in r_under.power_text()
