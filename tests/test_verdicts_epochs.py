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


def edge(*effects):
    return pd.DataFrame(
        [
            {
                "domain": f"d{i}",
                "a": "ref",
                "b": "loss",
                "estimate": e[0],
                "lo": e[1],
                "hi": e[2],
                "seed_sd": math.nan,
                "n_seeds": 1,
            }
            for i, e in enumerate(effects)
        ]
    )


def epochs_verdict(frame):
    return rules.more_epochs_more_leakage(frame, fewest=1, most=8, n="30 + 30 texts x 4 domains")


def ref_verdict(frame, edge_frame=None):
    edge_frame = edge() if edge_frame is None else edge_frame
    return rules.reference_gains_with_epochs(frame, edge_frame, fewest=1, most=8, n="30 + 30 texts x 4 domains")


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


# ---------------------------------------------------------------- the reference attack in the multi-epoch regime


def test_reference_rule_reproduced_when_ref_gains_and_is_not_below_loss():
    v = ref_verdict(
        gains(domains(CLEAR_UP, CLEAR_UP, CLEAR_UP, CLEAR_UP), attack="ref"), edge(NOISE, NOISE, CLEAR_UP, NOISE)
    )
    assert v.verdict == REPRODUCED
    assert_complete(v)


def test_reference_rule_partly_when_ref_gains_but_stays_clearly_below_loss():
    v = ref_verdict(
        gains(domains(CLEAR_UP, CLEAR_UP, CLEAR_UP, CLEAR_UP), attack="ref"),
        edge(CLEAR_DOWN, CLEAR_DOWN, CLEAR_DOWN, NOISE),
    )
    assert v.verdict == PARTLY
    assert "minus LOSS" in v.evidence


def test_reference_rule_partly_when_half_the_domains_gain():
    assert ref_verdict(gains(domains(CLEAR_UP, CLEAR_UP, NOISE, NOISE), attack="ref")).verdict == PARTLY


def test_reference_rule_not_reproduced_when_ref_loses_with_epochs():
    assert ref_verdict(gains(domains(CLEAR_DOWN, CLEAR_DOWN, NOISE, NOISE), attack="ref")).verdict == NOT_REPRODUCED


def test_reference_rule_inconclusive_when_inside_noise():
    v = ref_verdict(gains(domains(NOISE, NOISE, NOISE, NOISE), attack="ref"))
    assert v.verdict == INCONCLUSIVE
    assert "not measured" in v.evidence  # no LOSS scores: the edge over LOSS is said to be missing


def test_reference_rule_uses_only_the_reference_rows():
    frame = pd.concat(
        [gains(domains(CLEAR_UP, CLEAR_UP), attack="ref"), gains(domains(CLEAR_DOWN, CLEAR_DOWN), attack="loss")]
    )
    assert ref_verdict(frame).verdict == REPRODUCED


def test_reference_rule_not_tested_without_the_reference_attack():
    v = ref_verdict(gains(domains(CLEAR_UP, CLEAR_UP), attack="loss"))
    assert v.verdict == NOT_TESTED
    assert_complete(v)


# ---------------------------------------------------------------- SILO (Figure 10)


def test_silo_rule_not_tested_and_states_the_paper_finding():
    v = rules.silo_upsampled_domains()
    assert v.verdict == NOT_TESTED
    assert_complete(v)
    assert "plateau" in v.claim and "DM Mathematics" in v.claim and "drops" in v.paper_value


def test_effects_of_reads_nan_seed_sd_as_unknown():
    (e,) = rules.effects_of(gains(domains(CLEAR_UP)))
    assert e.seed_sd is None and e.label == "d0/loss" and e.sign() == 1
