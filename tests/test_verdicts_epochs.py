"""The epochs chapter's rules: one test per rule and outcome, on synthetic paired-effect frames."""

import math

import pandas as pd

from mimirlib.verdicts import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTED, OUTCOMES, PARTLY, REPRODUCED
from mimirlib.verdicts import epochs as rules

CLEAR_UP = (0.20, 0.10, 0.30)  # estimate, lo, hi: interval excludes 0, positive
CLEAR_DOWN = (-0.20, -0.30, -0.10)
NOISE = (0.02, -0.05, 0.09)  # interval covers 0


def gains(cells, attack="loss", seed_sd=math.nan):
    """One row per (domain, attack) unit; ``cells`` maps a domain to (estimate, lo, hi)."""
    rows = []
    for domain, (est, lo, hi) in cells.items():
        rows.append(
            {
                "domain": domain,
                "attack": attack,
                "auc_a": 0.6 + est,
                "auc_b": 0.6,
                "estimate": est,
                "lo": lo,
                "hi": hi,
                "seed_sd": seed_sd,
                "n_seeds": 3 if math.isfinite(seed_sd) else 1,
            }
        )
    return pd.DataFrame(rows)


def domains(*effects):
    return {f"d{i}": e for i, e in enumerate(effects)}


def edges(cells, seed_sd=math.nan, a="ref"):
    """The reference attack minus other attacks: ``cells`` maps (domain, other attack) to (estimate, lo, hi)."""
    return pd.DataFrame(
        [
            {
                "domain": d,
                "attack": other,
                "a": a,
                "b": other,
                "auc_a": 0.6 + e[0],
                "auc_b": 0.6,
                "estimate": e[0],
                "lo": e[1],
                "hi": e[2],
                "seed_sd": seed_sd,
                "n_seeds": 3 if math.isfinite(seed_sd) else 1,
            }
            for (d, other), e in cells.items()
        ]
    )


def units(*effects, attacks=("loss", "zlib")):
    """(domain, attack) cells in order d0/loss, d0/zlib, d1/loss, ... with the given effects."""
    keys = [(f"d{i // len(attacks)}", attacks[i % len(attacks)]) for i in range(len(effects))]
    return dict(zip(keys, effects))


def epochs_verdict(frame):
    return rules.more_epochs_more_leakage(frame, fewest=1, most=8, n="30 + 30 texts x 4 domains")


def ref_verdict(edge_frame, growth_frame=None):
    growth_frame = edges({}) if growth_frame is None else growth_frame
    return rules.reference_gains_with_epochs(edge_frame, growth_frame, fewest=1, most=8, n="30 + 30 texts x 4 domains")


def assert_complete(v):
    for f in ("claim", "verdict", "evidence", "rule", "source", "paper_value", "lab_value", "n", "origin", "key"):
        assert getattr(v, f), f
    assert v.verdict in OUTCOMES


# ---------------------------------------------------------------- more epochs, more leakage


def test_epochs_rule_reproduced_when_most_units_gain_clearly():
    v = epochs_verdict(gains(domains(CLEAR_UP, CLEAR_UP, CLEAR_UP, NOISE)))
    assert v.verdict == REPRODUCED
    assert_complete(v)
    assert "3 of 4" in v.evidence and v.origin == "paper"


def test_epochs_rule_partly_when_half_gain_clearly_and_none_drop():
    assert epochs_verdict(gains(domains(CLEAR_UP, CLEAR_UP, NOISE, NOISE))).verdict == PARTLY


def test_epochs_rule_not_reproduced_when_auc_clearly_drops():
    v = epochs_verdict(gains(domains(CLEAR_DOWN, CLEAR_DOWN, CLEAR_DOWN, NOISE)))
    assert v.verdict == NOT_REPRODUCED


def test_epochs_rule_inconclusive_when_inside_noise():
    assert epochs_verdict(gains(domains(NOISE, NOISE, NOISE, CLEAR_UP))).verdict == INCONCLUSIVE


def test_epochs_rule_inconclusive_when_gains_are_within_the_seed_spread():
    # every paired interval excludes 0, but a different training seed moves the AUC as much
    v = epochs_verdict(gains(domains(CLEAR_UP, CLEAR_UP, CLEAR_UP, CLEAR_UP), seed_sd=0.15))
    assert v.verdict == INCONCLUSIVE
    assert "seed sd 0.150" in v.evidence


def test_epochs_rule_not_tested_without_runs():
    v = epochs_verdict(gains({}))
    assert v.verdict == NOT_TESTED
    assert_complete(v)


def test_epochs_rule_counts_mimirs_attacks_and_reports_min_k_pp_beside():
    frame = pd.concat(
        [gains(domains(CLEAR_UP, CLEAR_UP, CLEAR_UP, NOISE)), gains(domains(*[CLEAR_DOWN] * 4), "min_k_pp")]
    )
    v = epochs_verdict(frame)
    assert v.verdict == REPRODUCED and "3 of 4" in v.evidence  # with Min-K%++'s four falls tallied: 3 for, 4 against
    assert "Beside, not tallied (not one of MIMIR's five attacks): Min-K%++, d0/min_k_pp: -0.200" in v.evidence
    assert "Min-K%++" in v.rule and "clear gain in 3 of 4" in v.lab_value
    assert epochs_verdict(gains(domains(CLEAR_UP), "min_k_pp")).verdict == NOT_TESTED  # no unit left


# ---------------------------------------------------------------- the reference attack in the multi-epoch regime


def test_reference_rule_reproduced_when_ref_clearly_beats_the_other_attacks_at_most_epochs():
    v = ref_verdict(edges(units(CLEAR_UP, CLEAR_UP, CLEAR_UP, CLEAR_UP)))
    assert v.verdict == REPRODUCED
    assert_complete(v)
    assert "AUC(Reference) - AUC(other attack) on the 8 epochs run" in v.evidence and "LOSS, zlib" in v.evidence
    assert "domain x each of MIMIR's other four attacks" in v.rule and "Min-K%++" in v.rule
    assert v.paper_effect is None and v.mde is not None


def test_reference_rule_reproduced_at_three_units_in_four_partly_below():
    assert ref_verdict(edges(units(CLEAR_UP, CLEAR_UP, CLEAR_UP, NOISE))).verdict == REPRODUCED
    assert ref_verdict(edges(units(CLEAR_UP, CLEAR_UP, NOISE, NOISE))).verdict == PARTLY


def test_reference_rule_not_reproduced_when_ref_is_clearly_below_the_others():
    assert ref_verdict(edges(units(CLEAR_DOWN, CLEAR_DOWN, CLEAR_UP, NOISE))).verdict == NOT_REPRODUCED


def test_reference_rule_inconclusive_when_most_units_are_inside_the_noise():
    v = ref_verdict(edges(units(NOISE, NOISE, NOISE, CLEAR_UP)))
    # no paper number: read against the book's smallest effect of interest (one AUC point), MDE ~0.1 above it
    assert v.verdict == INCONCLUSIVE and v.power == "underpowered" and v.effect_of_interest == 0.01
    assert "vs smallest effect of interest +0.010 (no number in the paper)" in v.power_text()
    assert "not measured" in v.evidence  # no growth frame: the margin's growth is said to be missing


def test_reference_rule_inconclusive_when_the_margins_are_within_the_seed_spread():
    v = ref_verdict(edges(units(CLEAR_UP, CLEAR_UP, CLEAR_UP, CLEAR_UP), seed_sd=0.15))
    assert v.verdict == INCONCLUSIVE and "seed sd 0.150" in v.evidence


def test_reference_rule_reports_min_k_pp_beside_and_does_not_tally_it():
    cells = units(CLEAR_UP, CLEAR_DOWN, CLEAR_UP, CLEAR_DOWN, attacks=("loss", "min_k_pp"))
    v = ref_verdict(edges(cells))
    assert v.verdict == REPRODUCED  # LOSS in both domains; Min-K%++ clearly above the reference does not count
    assert "in 2 of 2" in v.evidence and "not tallied" in v.evidence and "Min-K%++" in v.evidence
    only_after = ref_verdict(edges(units(CLEAR_UP, CLEAR_UP, attacks=("min_k_pp",))))
    assert only_after.verdict == NOT_TESTED


def test_reference_rule_reports_the_margins_growth_without_deciding_on_it():
    grown = edges(units(CLEAR_DOWN, CLEAR_DOWN, CLEAR_DOWN, CLEAR_DOWN)).assign(a="e8", b="e1")
    v = ref_verdict(edges(units(CLEAR_UP, CLEAR_UP, CLEAR_UP, CLEAR_UP)), grown)
    assert v.verdict == REPRODUCED
    assert "Supporting, not decided" in v.evidence and "clearly opposite in 4" in v.evidence
    assert "grows by -0.200" in v.lab_value


def test_reference_rule_ignores_rows_of_the_reference_against_itself():
    cells = units(CLEAR_UP, CLEAR_DOWN, attacks=("loss", "ref"))
    assert ref_verdict(edges(cells)).verdict == REPRODUCED


def test_reference_rule_reports_saturated_units_and_tallies_only_those_with_room():
    """Two clear units and two inside the noise: partly; when the two noisy units' other attack sits above
    AUC 0.99 (no room for the reference to be one AUC point higher) they are reported, not tallied."""
    frame = edges(units(CLEAR_UP, CLEAR_UP, NOISE, NOISE))
    assert ref_verdict(frame).verdict == PARTLY
    for auc_other, outcome in ((0.989, PARTLY), (0.995, REPRODUCED), (1.0, REPRODUCED)):
        near_one = frame.assign(auc_b=[0.6, 0.6, auc_other, auc_other])
        v = ref_verdict(near_one)
        assert v.verdict == outcome, auc_other
        assert ("Saturated, not tallied" in v.evidence) == (outcome == REPRODUCED)
    v = ref_verdict(frame.assign(auc_b=[0.6, 0.6, 1.0, 1.0]))
    assert "in 2 of 2" in v.evidence and "d1/loss AUC 1.000 (difference +0.020" in v.evidence
    assert "clearly higher in 2 of 2 with room (2 saturated)" in v.lab_value and "saturated" in v.rule
    assert rules.leaves_room(0.99) and not rules.leaves_room(0.991)


def test_reference_rule_is_decided_by_its_count_only_never_by_a_pooled_mean():
    # its units are chosen by their sign (a unit at the ceiling is tallied only when clearly against), so their
    # mean would lean against the claim: B.2 is not read on its pooled mean, though it is about an average
    v = ref_verdict(edges(units(NOISE, NOISE, NOISE, CLEAR_DOWN)))
    assert (v.verdict, v.decision) == (INCONCLUSIVE, "tally") and "Pooled" not in v.evidence


def test_a_saturated_unit_that_reads_clearly_against_stays_tallied():
    """At the ceiling a unit cannot read for the claim; reading clearly against it is still evidence."""
    assert rules.saturated_units([False, False, False, True], [1, 0, -1, 0]) == [True, True, False, False]
    frame = edges(units(CLEAR_UP, CLEAR_UP, CLEAR_DOWN, CLEAR_DOWN)).assign(auc_b=[0.6, 0.6, 0.995, 0.995])
    v = ref_verdict(frame)
    assert v.verdict == NOT_REPRODUCED and "clearly opposite in 2" in v.evidence and "Saturated" not in v.evidence
    mixed = edges(units(CLEAR_UP, CLEAR_UP, CLEAR_DOWN, NOISE)).assign(auc_b=[0.6, 0.6, 0.995, 0.995])
    v = ref_verdict(mixed)  # d1/loss (clearly below) tallied, d1/zlib (inside the noise at the ceiling) listed
    assert "in 2 of 3" in v.evidence and "d1/zlib AUC 0.995 (difference +0.020 [-0.050, +0.090])" in v.evidence
    assert v.verdict == PARTLY


def test_reference_rule_not_tested_when_every_other_attack_is_saturated():
    v = ref_verdict(edges(units(CLEAR_UP, NOISE)).assign(auc_b=1.0))
    assert v.verdict == NOT_TESTED and "saturated: d0/loss AUC 1.000 (difference +0.200" in v.evidence
    assert "every other attack above AUC 0.99" in v.lab_value
    assert_complete(v)


def test_reference_rule_not_tested_without_the_reference_attack():
    v = ref_verdict(edges({}))
    assert v.verdict == NOT_TESTED
    assert_complete(v)


# ---------------------------------------------------------------- SILO (Figure 10)


def test_silo_rule_not_tested_and_states_the_paper_finding():
    v = rules.silo_upsampled_domains()
    assert v.verdict == NOT_TESTED
    assert_complete(v)
    assert "plateau" in v.claim and "DM Mathematics" in v.claim and "drops" in v.paper_value


ATTACKS4 = ("loss", "ref", "zlib", "min_k")  # MIMIR's attacks the epochs chapter runs (no neighbourhood)


def silo_frames(early, bend, change, *, domain_hn="changelog", domain_dm="math", seed_sd=math.nan, auc_first=0.3):
    """The SILO rule's three frames: every paper attack and Min-K%++ of each upsampled domain gets the given
    (estimate, lo, hi) for its part (Min-K%++ the opposite cell, which must never count); AUC(e1) is
    ``auc_first`` (0.3 + 3 x 0.2 = 0.9: a linear rise has room below AUC 1 over four epoch ends)."""

    def frame(cells):
        parts = []
        for dom, cell in cells.items():
            for a in ATTACKS4:
                parts.append(gains({dom: cell}, attack=a, seed_sd=seed_sd))
            flipped = (-cell[0], -cell[2], -cell[1])
            parts.append(gains({dom: flipped}, attack="min_k_pp", seed_sd=seed_sd))
        out = pd.concat(parts, ignore_index=True)
        return out.assign(auc_b=auc_first, auc_a=auc_first + out.estimate)

    return (
        frame({domain_hn: early, domain_dm: NOISE}),
        frame({domain_hn: bend, domain_dm: NOISE}),
        frame({domain_hn: NOISE, domain_dm: change}),
    )


def silo_verdict(early, bend, change, **kw):
    return rules.silo_upsampled_domains(
        *silo_frames(early, bend, change, **kw), rises="changelog", drops="math", upsample=3, epochs=4, n="60 + 60"
    )


def test_silo_rule_reproduced_when_the_rise_bends_and_the_math_domain_drops():
    v = silo_verdict(CLEAR_UP, CLEAR_DOWN, CLEAR_DOWN)
    assert v.verdict == REPRODUCED
    assert_complete(v)
    assert "changelog (HackerNews): reproduced" in v.evidence and "math (DM Mathematics): reproduced" in v.evidence
    assert v.mde is not None and "e4" in v.rule and "seed sd is imputed" in v.rule


def test_silo_rule_not_reproduced_when_both_keep_rising():
    # a linear rise bends by 0: the bend clearly up (accelerating) counts against, and math rising is against
    v = silo_verdict(CLEAR_UP, CLEAR_UP, CLEAR_UP)
    assert v.verdict == NOT_REPRODUCED
    # the first change clearly down is against the HackerNews shape whatever the bend
    assert silo_verdict(CLEAR_DOWN, CLEAR_DOWN, CLEAR_UP).verdict == NOT_REPRODUCED


def test_silo_rule_partly_when_one_part_holds():
    assert silo_verdict(CLEAR_UP, CLEAR_DOWN, CLEAR_UP).verdict == PARTLY
    assert silo_verdict(CLEAR_UP, CLEAR_UP, CLEAR_DOWN).verdict == PARTLY
    assert silo_verdict(CLEAR_UP, CLEAR_DOWN, NOISE).verdict == PARTLY


def test_silo_rule_inconclusive_inside_the_noise_and_the_seed_guard_bites():
    v = silo_verdict(CLEAR_UP, NOISE, NOISE)  # a rise whose bend is inside the noise: neither for nor against
    assert v.verdict == INCONCLUSIVE and v.power
    # one part refuted, the other undecided: the conjunction is refuted (the undecided part gives no evidence)
    assert silo_verdict(CLEAR_UP, CLEAR_UP, NOISE).verdict == NOT_REPRODUCED
    # the same clear cells, but an imputed seed sd of 0.2 (2 sd = 0.4 > 0.2): nothing is clear any more
    assert silo_verdict(CLEAR_UP, CLEAR_DOWN, CLEAR_DOWN, seed_sd=0.2).verdict == INCONCLUSIVE


def test_silo_unit_reading_on_both_sides():
    from mimirlib.verdicts import Effect

    up, down, noise = Effect(*CLEAR_UP), Effect(*CLEAR_DOWN), Effect(*NOISE)
    assert rules.silo_unit(up, down) == 1
    assert rules.silo_unit(up, noise) == 0 and rules.silo_unit(noise, down) == 0
    assert rules.silo_unit(up, up) == -1 and rules.silo_unit(down, down) == -1 and rules.silo_unit(noise, up) == -1


def test_has_room_is_the_linear_rise_below_the_auc_ceiling():
    assert rules.has_room(0.4, 0.2, 4)  # 0.4 + 3 x 0.2 = 1.0: just fits
    assert not rules.has_room(0.41, 0.2, 4) and not rules.has_room(0.87, 0.094, 4)  # 1.01; 1.152 (seed 0's LOSS)
    assert rules.has_room(0.9, -0.1, 4)  # a fall always has room


def test_silo_rule_reports_saturated_units_and_tallies_only_those_with_room():
    # the same clear rise and bend, but from AUC 0.7: a linear rise would pass 1, so the plateau is forced
    v = silo_verdict(CLEAR_UP, CLEAR_DOWN, CLEAR_DOWN, auc_first=0.7)
    assert (
        "changelog (HackerNews): not tested" in v.evidence
        and "saturated, not tallied: loss, ref, zlib, min_k" in v.evidence
    )
    assert v.verdict == PARTLY  # the math part alone still holds
    # one unit with room (zlib from 0.3): the part is read on it alone; the saturated three do not dilute it
    early, bend, change = silo_frames(CLEAR_UP, CLEAR_DOWN, CLEAR_UP, auc_first=0.7)
    early.loc[early.attack == "zlib", "auc_b"] = 0.3
    v = rules.silo_upsampled_domains(early, bend, change, rises="changelog", drops="math", upsample=3, epochs=4, n="-")
    assert "changelog (HackerNews): reproduced, clear effect in the claimed direction in 1 of 1" in v.evidence
    assert "saturated, not tallied: loss, ref, min_k" in v.evidence
    assert v.verdict == PARTLY  # HackerNews's part holds, DM Mathematics' (a clear rise) does not
    # at the ceiling a bend clearly upward still reads against: those units stay tallied
    v = silo_verdict(CLEAR_UP, CLEAR_UP, CLEAR_DOWN, auc_first=0.7)
    assert "changelog (HackerNews): not reproduced, clear effect in the claimed direction in 0 of 4" in v.evidence
    assert "saturated" not in v.evidence


def test_combine_parts_covers_every_pair():
    c = rules.combine_parts
    assert c(REPRODUCED, REPRODUCED) == REPRODUCED
    assert c(REPRODUCED, NOT_REPRODUCED) == PARTLY and c(INCONCLUSIVE, PARTLY) == PARTLY
    assert c(REPRODUCED, NOT_TESTED) == PARTLY
    assert c(NOT_REPRODUCED, NOT_REPRODUCED) == NOT_REPRODUCED and c(NOT_TESTED, NOT_REPRODUCED) == NOT_REPRODUCED
    assert c(NOT_REPRODUCED, INCONCLUSIVE) == NOT_REPRODUCED  # an undecided part gives no evidence
    assert c(INCONCLUSIVE, INCONCLUSIVE) == INCONCLUSIVE and c(INCONCLUSIVE, NOT_TESTED) == INCONCLUSIVE
    assert c(NOT_TESTED, NOT_TESTED) == NOT_TESTED
    for a in OUTCOMES:
        for b in OUTCOMES:
            assert c(a, b) == c(b, a) in OUTCOMES


def test_silo_rule_with_one_part_only_decides_on_that_part():
    early, bend, change = silo_frames(CLEAR_UP, CLEAR_DOWN, CLEAR_DOWN)
    v = rules.silo_upsampled_domains(early, bend, change, rises=None, drops="math", upsample=3, epochs=4, n="-")
    assert v.verdict == PARTLY and "HackerNews" not in v.evidence
    assert rules.silo_upsampled_domains(early, bend, change, rises=None, drops=None).verdict == NOT_TESTED


def test_effects_of_reads_nan_seed_sd_as_unknown():
    (e,) = rules.effects_of(gains(domains(CLEAR_UP)))
    assert e.seed_sd is None and e.label == "d0/loss" and e.sign() == 1
