"""The n-gram overlap chapter's verdict rules, one test per rule and outcome, on synthetic frames."""

import dataclasses

import pandas as pd
import pytest

from mimirlib.verdicts import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTED, PARTLY, REPRODUCED, Effect
from mimirlib.verdicts import ngram_overlap as rules

CLEAR_UP = Effect(0.10, 0.05, 0.15)
CLEAR_DOWN = Effect(-0.10, -0.15, -0.05)
NOISE = Effect(0.02, -0.03, 0.07)


def shift(drops: dict) -> pd.DataFrame:
    """One row per domain with a low-overlap split; ``drops``: domain -> natural minus low overlap."""
    return pd.DataFrame(
        [
            {
                "domain": d,
                "natural_overlap": 0.05 + x,
                "low_overlap": 0.05,
                "overlap_drop": x,
                "n_members": 150,
                "n_natural_nonmembers": 150,
                "n_low_nonmembers": 120,
            }
            for d, x in drops.items()
        ]
    )


INFORMATIVE = shift({"code": 0.5, "licenses": 0.4})


def fx(*effects, domain="code"):
    return [dataclasses.replace(e, label=f"{domain}/{i}") for i, e in enumerate(effects)]


def assert_complete(v):
    for f in ("claim", "verdict", "evidence", "rule", "source", "paper_value", "lab_value", "n", "origin", "key"):
        assert getattr(v, f), f"{f} is empty"
    assert v.rule != "-", "the rule is stated even when the claim could not be tested"


# ----------------------------------------------------------------------------- informative domains


def test_informative_domains_needs_the_stated_overlap_drop():
    s = shift({"code": rules.MIN_OVERLAP_DROP, "math": rules.MIN_OVERLAP_DROP - 0.01, "docs": 0.0})
    info = rules.informative_domains(s)
    assert info.to_dict() == {"code": True, "math": False, "docs": False}


def test_informative_domains_of_an_empty_shift_is_empty():
    assert rules.informative_domains(shift({})).empty


# ----------------------------------------------------------------------------- overlap_is_high


def overlaps(means: dict) -> pd.DataFrame:
    return pd.DataFrame([{"domain": d, "overlap": m + dx} for d, m in means.items() for dx in (-0.01, 0.0, 0.01)])


def test_overlap_is_high_reproduced_when_half_the_domains_are_high():
    v = rules.overlap_is_high(overlaps({"code": 0.7, "licenses": 0.35, "math": 0.02, "docs": 0.03}))
    assert v.verdict == REPRODUCED
    assert "2 of 4" in v.lab_value and "3-3 natural non-members per domain x 4 domains" in v.n
    assert_complete(v)


def test_overlap_is_high_partly_when_some_domain_is_high():
    v = rules.overlap_is_high(overlaps({"code": 0.7, "math": 0.02, "docs": 0.03}))
    assert v.verdict == PARTLY


def test_overlap_is_high_not_reproduced_just_below_the_threshold():
    v = rules.overlap_is_high(overlaps({"code": rules.HIGH_OVERLAP - 0.02, "math": 0.02}))
    assert v.verdict == NOT_REPRODUCED


def test_overlap_is_high_not_tested_without_overlaps():
    v = rules.overlap_is_high(pd.DataFrame(columns=["domain", "overlap"]))
    assert v.verdict == NOT_TESTED
    assert_complete(v)


# ----------------------------------------------------------------------------- low_overlap_is_easier


def test_low_overlap_is_easier_reproduced_on_clear_gains_in_informative_domains():
    v = rules.low_overlap_is_easier(
        {"code": fx(CLEAR_UP, CLEAR_UP), "licenses": fx(CLEAR_UP, domain="licenses")}, INFORMATIVE, "target-h256"
    )
    assert v.verdict == REPRODUCED
    assert "2 informative of 2 domain(s)" in v.n and "150-150 shared members" in v.n
    assert_complete(v)


def test_low_overlap_is_easier_partly_when_half_decided_and_more_for():
    v = rules.low_overlap_is_easier(
        {"code": fx(CLEAR_UP, NOISE), "licenses": fx(CLEAR_UP, NOISE, domain="licenses")}, INFORMATIVE, "t"
    )
    assert v.verdict == PARTLY


def test_low_overlap_is_easier_not_reproduced_when_auc_clearly_falls():
    v = rules.low_overlap_is_easier(
        {"code": fx(CLEAR_DOWN, CLEAR_DOWN), "licenses": fx(CLEAR_UP, domain="licenses")}, INFORMATIVE, "t"
    )
    assert v.verdict == NOT_REPRODUCED


def test_low_overlap_is_easier_inconclusive_when_inside_noise():
    v = rules.low_overlap_is_easier(
        {"code": fx(NOISE, NOISE), "licenses": fx(NOISE, domain="licenses")}, INFORMATIVE, "t"
    )
    assert v.verdict == INCONCLUSIVE


def test_low_overlap_is_easier_inconclusive_when_gain_is_inside_the_seed_spread():
    seedy = Effect(0.01, 0.005, 0.015, seed_sd=0.01, n_seeds=3)  # bootstrap says clear, seeds say noise
    v = rules.low_overlap_is_easier({"code": fx(seedy, seedy)}, shift({"code": 0.5}), "t")
    assert v.verdict == INCONCLUSIVE
    assert "3 seed(s)" in v.n


def test_low_overlap_is_easier_ignores_domains_the_redraw_did_not_change():
    # clear gains where the overlap barely moved do not count; the informative domain is in the noise
    s = shift({"code": 0.5, "math": 0.02, "docs": 0.01})
    v = rules.low_overlap_is_easier(
        {
            "code": fx(NOISE, NOISE),
            "math": fx(CLEAR_UP, CLEAR_UP, domain="math"),
            "docs": fx(CLEAR_UP, CLEAR_UP, domain="docs"),
        },
        s,
        "t",
    )
    assert v.verdict == INCONCLUSIVE
    assert "not informative for this claim: math (drop +0.020), docs (drop +0.010)" in v.evidence
    assert v.n.startswith("1 informative of 3 domain(s)")


def test_low_overlap_is_easier_not_tested_when_no_domain_is_informative():
    s = shift({"math": 0.02, "docs": 0.03})
    v = rules.low_overlap_is_easier({"math": fx(CLEAR_UP, domain="math"), "docs": fx(CLEAR_UP, domain="docs")}, s, "t")
    assert v.verdict == NOT_TESTED
    assert "not informative for this claim" in v.evidence and v.n.startswith("0 informative of 2")
    assert_complete(v)


# ----------------------------------------------------------------------------- drift (blind baseline)


def test_drift_reproduced_when_the_blind_baseline_clearly_gains():
    v = rules.redraw_drifts_towards_distribution_inference(
        {"code": fx(CLEAR_UP), "licenses": fx(CLEAR_UP)}, INFORMATIVE
    )
    assert v.verdict == REPRODUCED
    assert "blind" in v.rule and "did not make" in v.rule
    assert_complete(v)


def test_drift_partly_when_one_of_two_domains_clearly_gains():
    v = rules.redraw_drifts_towards_distribution_inference({"code": fx(CLEAR_UP), "licenses": fx(NOISE)}, INFORMATIVE)
    assert v.verdict == PARTLY


def test_drift_not_reproduced_when_the_blind_baseline_clearly_loses():
    v = rules.redraw_drifts_towards_distribution_inference(
        {"code": fx(CLEAR_DOWN), "licenses": fx(CLEAR_DOWN)}, INFORMATIVE
    )
    assert v.verdict == NOT_REPRODUCED


def test_drift_inconclusive_when_inside_noise():
    v = rules.redraw_drifts_towards_distribution_inference({"code": fx(NOISE), "licenses": fx(NOISE)}, INFORMATIVE)
    assert v.verdict == INCONCLUSIVE


def test_drift_not_tested_without_informative_domains():
    v = rules.redraw_drifts_towards_distribution_inference({"math": fx(CLEAR_UP)}, shift({"math": 0.0}))
    assert v.verdict == NOT_TESTED


# ----------------------------------------------------------------------------- reference_gains_less


def test_reference_gains_less_reproduced_when_others_clearly_gain_more():
    v = rules.reference_gains_less(
        {"code": fx(CLEAR_UP, CLEAR_UP, CLEAR_UP), "licenses": fx(CLEAR_UP)}, INFORMATIVE, "t"
    )
    assert v.verdict == REPRODUCED
    assert "gain(other) - gain(ref)" in v.evidence
    assert_complete(v)


def test_reference_gains_less_partly_when_half_decided_and_more_for():
    v = rules.reference_gains_less({"code": fx(CLEAR_UP, NOISE, NOISE, CLEAR_UP)}, shift({"code": 0.5}), "t")
    assert v.verdict == PARTLY


def test_reference_gains_less_not_reproduced_when_ref_clearly_gains_more():
    v = rules.reference_gains_less({"code": fx(CLEAR_DOWN, CLEAR_DOWN, CLEAR_UP)}, shift({"code": 0.5}), "t")
    assert v.verdict == NOT_REPRODUCED


def test_reference_gains_less_inconclusive_when_inside_noise():
    # the old rule called +0.027 vs +0.035 a reproduction; a difference of gains inside the noise is not one
    small = Effect(0.008, -0.02, 0.036)
    v = rules.reference_gains_less({"code": fx(small, small, small, small)}, shift({"code": 0.5}), "t")
    assert v.verdict == INCONCLUSIVE


def test_reference_gains_less_not_tested_without_the_reference_attack():
    v = rules.reference_gains_less({}, INFORMATIVE, "t")
    assert v.verdict == NOT_TESTED
    assert "reference attack" in v.evidence
    assert_complete(v)


@pytest.mark.parametrize("rule", [rules.low_overlap_is_easier, rules.reference_gains_less])
def test_comparative_rules_say_how_many_units_they_rest_on(rule):
    v = rule({"code": fx(CLEAR_UP, CLEAR_UP, NOISE)}, shift({"code": 0.5, "math": 0.0}), "t")
    assert "clear effect in the claimed direction in 2 of 3" in v.evidence
    assert "1 informative of 2 domain(s) with a low-overlap split x 3" in v.n


def test_every_verdict_is_a_paper_claim_with_its_own_key():
    vs = [
        rules.overlap_is_high(overlaps({"code": 0.5})),
        rules.low_overlap_is_easier({"code": fx(CLEAR_UP)}, shift({"code": 0.5}), "t"),
        rules.redraw_drifts_towards_distribution_inference({"code": fx(CLEAR_UP)}, shift({"code": 0.5})),
        rules.reference_gains_less({"code": fx(CLEAR_UP)}, shift({"code": 0.5}), "t"),
    ]
    assert len({v.key for v in vs}) == 4
    assert all(v.origin == "paper" and v.source.startswith("MIMIR") for v in vs)


def test_informative_names_lists_the_informative_domains_in_order():
    assert rules.informative_names(shift({"math": 0.0, "code": 0.5, "licenses": 0.2})) == ["code", "licenses"]
