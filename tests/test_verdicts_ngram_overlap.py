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


ATTACKS = ("loss", "zlib", "min_k", "ne", "ref")  # MIMIR's five, in the order fx labels effects


def fx(*effects, domain="code"):
    return [dataclasses.replace(e, label=f"{domain}/{ATTACKS[i]}") for i, e in enumerate(effects)]


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

BAR = rules.HIGH_OVERLAP
HIGH_ = (0.40, 0.35, 0.45)  # (mean, lo, hi): the whole interval at or above the bar
LOW_ = (0.05, 0.03, 0.07)  # wholly below it
STRADDLE = (0.31, 0.27, 0.35)  # undecided


def means(per_domain: dict, n_texts: int = 150) -> pd.DataFrame:
    """One row per domain: ``per_domain``: domain -> (mean, lo, hi)."""
    return pd.DataFrame(
        [{"domain": d, "mean": m, "lo": lo, "hi": hi, "n_texts": n_texts} for d, (m, lo, hi) in per_domain.items()],
        columns=["domain", "mean", "lo", "hi", "n_texts"],
    )


@pytest.mark.parametrize(
    "lo,hi,reading",
    [
        (BAR, BAR + 0.05, rules.HIGH),  # the lower bound at the bar: high
        (BAR - 1e-9, BAR + 0.05, rules.UNDECIDED),  # just below: undecided
        (BAR - 0.05, BAR - 1e-9, rules.LOW),  # the upper bound just below the bar: low
        (BAR - 0.05, BAR, rules.UNDECIDED),  # the upper bound at the bar: undecided
    ],
)
def test_overlap_reading_on_both_sides_of_the_bar(lo, hi, reading):
    assert rules.overlap_reading(lo, hi) == reading


@pytest.mark.parametrize(
    "domain,value,says",
    [
        ("code", 0.769, "plays GitHub 76.9%"),
        ("licenses", 0.769, "GitHub 76.9%"),
        ("math", 0.728, "DM Mathematics 72.8%"),
        ("docs", (0.393 + 0.410) / 2, "ArXiv 39.3% / PubMed Central 41.0%"),
        ("encyclopedia", 0.325, "Wikipedia 32.5%"),
        ("changelog", 0.325, "not in Figure 3: the paper's lowest, Wikipedia 32.5%"),
        ("pubmed_central", 0.410, "PubMed Central 41.0%"),  # a MIMIR config on real data reads as itself
        ("pile_cc", 0.325, "not in Figure 3"),
    ],
)
def test_paper_counterpart_through_the_domain_each_lab_domain_plays(domain, value, says):
    text, x = rules.paper_counterpart(domain)
    assert x == pytest.approx(value) and says in text


def test_overlap_is_high_reproduced_when_three_in_four_domains_are_high():
    v = rules.overlap_is_high(means({"code": HIGH_, "licenses": HIGH_, "math": HIGH_, "docs": LOW_}))
    assert v.verdict == REPRODUCED
    assert "3 of 4 domains high, 1 low" in v.lab_value
    assert "150-150 natural non-members per domain x 4 domains" in v.n
    assert "code 0.400 [0.350, 0.450]: high (plays GitHub 76.9%)" in v.evidence
    assert_complete(v)


def test_overlap_is_high_partly_when_most_but_under_three_in_four_are_high():
    v = rules.overlap_is_high(means({"a": HIGH_, "b": HIGH_, "c": HIGH_, "d": LOW_, "e": LOW_}))  # 60% high
    assert v.verdict == PARTLY


def test_overlap_is_high_not_reproduced_when_as_many_are_low():
    v = rules.overlap_is_high(means({"a": HIGH_, "b": HIGH_, "c": LOW_, "d": LOW_}))
    assert v.verdict == NOT_REPRODUCED


def test_overlap_is_high_inconclusive_when_most_intervals_straddle_the_bar():
    v = rules.overlap_is_high(means({"a": HIGH_, "b": STRADDLE, "c": STRADDLE}))  # 1 of 3 decided
    assert v.verdict == INCONCLUSIVE
    assert "undecided in 2" in v.evidence


def test_overlap_is_high_one_high_domain_no_longer_counts_as_partly():
    # the lab's run: one domain a little above 30% (its interval straddles), five clearly below
    lab = {
        "code": (0.027, 0.020, 0.034),
        "math": (0.015, 0.010, 0.020),
        "docs": (0.018, 0.012, 0.024),
        "encyclopedia": (0.0, 0.0, 0.0),
        "licenses": (0.335, 0.29, 0.38),
        "changelog": (0.190, 0.16, 0.22),
    }
    v = rules.overlap_is_high(means(lab))
    assert v.verdict == NOT_REPRODUCED
    assert "high in 0 of 6 domains, low in 5, undecided in 1" in v.evidence and "lack the property" in v.evidence
    assert "changelog 0.190 [0.160, 0.220]: low (plays HackerNews" in v.evidence
    assert "licenses 0.335 [0.290, 0.380]: undecided" in v.evidence


def test_overlap_is_high_rule_states_the_interval_bar_and_the_tally():
    v = rules.overlap_is_high(means({"code": HIGH_}))
    for needle in (
        "lower bound >= 0.30",
        "upper bound < 0.30",
        "reproduced if >= 75%",
        "not reproduced if >= 50% are low",
        "32.5%",
    ):
        assert needle in v.rule


def test_overlap_is_high_not_tested_without_overlaps():
    v = rules.overlap_is_high(means({}))
    assert v.verdict == NOT_TESTED
    assert_complete(v)


# ----------------------------------------------------------------------------- the paper's effects


def test_paper_effects_are_the_transcribed_table_2_numbers():
    from mimirlib.display.paper_tables import paper_table

    t = paper_table("mimir", "2")
    gain = t.xs("7-gram", axis=1, level="column") - t.xs("Orig", axis=1, level="column")
    v = rules.low_overlap_is_easier({"code": fx(CLEAR_UP)}, shift({"code": 0.5}), "t")
    assert v.paper_effect == pytest.approx(round(float(gain.to_numpy().mean()), 3)) == 0.159
    assert "25 of 25 (domain, attack) cells, mean gain +0.159" in v.paper_value
    assert "Wikipedia LOSS .516 -> .666, GitHub zlib .690 -> .908" in v.paper_value
    gap = [gain.loc[a, d] - gain.loc["ref", d] for d in ("Github", "PubMed Central") for a in gain.index if a != "ref"]
    w = rules.reference_gains_less({"code": fx(CLEAR_UP)}, shift({"code": 0.5}), "t")
    assert w.paper_effect == pytest.approx(round(sum(gap) / len(gap), 3)) == 0.192
    assert "GitHub: ref +.056 vs others +.200 to +.218; PubMed Central: ref +.036 vs others +.240 to +.280" in (
        w.paper_value
    )
    assert "+0.192 on average over these 8" in w.paper_value
    assert v.mde is not None and w.mde is not None  # tallied: the MDE sits beside the paper's effect


def test_an_undecided_comparison_reads_its_power_against_the_paper_effect():
    v = rules.low_overlap_is_easier({"code": fx(NOISE, NOISE)}, shift({"code": 0.5}), "t")
    assert v.verdict == INCONCLUSIVE and v.power  # MDE ~0.07 below the paper's +0.159: not "no paper effect size"
    assert v.power != "no paper effect size"


# ----------------------------------------------------------------------------- low_overlap_is_easier


def test_low_overlap_is_easier_reproduced_on_clear_gains_in_informative_domains():
    v = rules.low_overlap_is_easier(
        {"code": fx(CLEAR_UP, CLEAR_UP), "licenses": fx(CLEAR_UP, domain="licenses")}, INFORMATIVE, "target-h256"
    )
    assert v.verdict == REPRODUCED
    assert "2 informative of 2 domains" in v.n and "; 150 shared members" in v.n
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
    assert "3 seeds" in v.n


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
    assert v.n.startswith("1 informative of 3 domains")


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
    assert "1 informative of 2 domains with a low-overlap split x 3" in v.n


def test_every_verdict_is_a_paper_claim_with_its_own_key():
    vs = [
        rules.overlap_is_high(means({"code": HIGH_})),
        rules.low_overlap_is_easier({"code": fx(CLEAR_UP)}, shift({"code": 0.5}), "t"),
        rules.redraw_drifts_towards_distribution_inference({"code": fx(CLEAR_UP)}, shift({"code": 0.5})),
        rules.reference_gains_less({"code": fx(CLEAR_UP)}, shift({"code": 0.5}), "t"),
    ]
    assert len({v.key for v in vs}) == 4
    assert all(v.origin == "paper" and v.source.startswith("MIMIR") for v in vs)


def test_informative_names_lists_the_informative_domains_in_order():
    assert rules.informative_names(shift({"math": 0.0, "code": 0.5, "licenses": 0.2})) == ["code", "licenses"]


# ----------------------------------------------------------------------------- Min-K%++ beside the paper's attacks


@pytest.mark.parametrize(
    "rule,label", [(rules.low_overlap_is_easier, "code/min_k_pp"), (rules.reference_gains_less, "code/min_k_pp - ref")]
)
def test_min_k_pp_is_reported_beside_the_tally_never_in_it(rule, label):
    effects = {"code": fx(CLEAR_UP, CLEAR_UP, CLEAR_UP) + [dataclasses.replace(CLEAR_DOWN, label=label)]}
    v = rule(effects, shift({"code": 0.5}), "t")
    assert v.verdict == REPRODUCED  # three of three paper attacks; with Min-K%++'s clear fall it would be 3 of 4
    assert "clear effect in the claimed direction in 3 of 3" in v.evidence
    assert (
        "Beside, not tallied (min_k_pp, not one of MIMIR's five attacks): clear in the claimed direction in 0 of 1"
        in (v.evidence)
    )
    assert "Min-K%++" in v.rule
    only = rule({"code": [dataclasses.replace(CLEAR_UP, label=label)]}, shift({"code": 0.5}), "t")
    assert only.verdict == NOT_TESTED  # no paper attack scored


def test_the_blind_baseline_is_not_filtered_as_an_attack():
    b = [dataclasses.replace(CLEAR_UP, label="code/baseline")]
    v = rules.redraw_drifts_towards_distribution_inference({"code": b}, shift({"code": 0.5}))
    assert v.verdict == REPRODUCED
