"""The dataset-inference chapter's rules, each outcome on both sides of its threshold."""

from types import SimpleNamespace

import pandas as pd
import pytest

from mimirlib.core import metrics

from mimirlib.verdicts import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTED, PARTLY, REPRODUCED
from mimirlib.verdicts import dataset_inference as rules


def rates(shares, draws=100, n=150, key="domain"):
    rows = []
    for i, share in enumerate(shares):
        k = round(share * draws)
        lo, hi = metrics.proportion_interval(k, draws)
        rows.append(
            {key: f"d{i}", "n": n, "draws": draws, "flagged": k, "share": k / draws, "share_lo": lo, "share_hi": hi}
        )
    return pd.DataFrame(rows)


@pytest.mark.parametrize(
    "lo, hi, reading",
    [
        (0.90, 1.0, "separated"),  # the interval's floor on the bar
        (0.8999, 1.0, "undecided"),
        (0.80, 0.90, "undecided"),  # the ceiling on the bar
        (0.80, 0.8999, "not separated"),
    ],
)
def test_a_domain_is_read_by_its_interval_on_both_sides_of_ninety_percent(lo, hi, reading):
    assert rules.domain_reading(SimpleNamespace(share_lo=lo, share_hi=hi)) == reading


@pytest.mark.parametrize(
    "shares, n, outcome, power",
    [
        ([1.0, 1.0, 1.0], 150, REPRODUCED, ""),  # 100 of 100: [96%, 100%]
        ([1.0, 1.0, 0.95], 150, PARTLY, ""),  # 95 of 100 [89%, 98%] straddles: undecided
        ([0.95, 0.88, 0.1], 150, INCONCLUSIVE, "underpowered"),  # none separated with 150 of the paper's 1,000
        ([0.5, 0.2, 0.1], 150, INCONCLUSIVE, "underpowered"),  # even every domain clearly short
        ([0.5, 0.2, 0.1], 1000, NOT_REPRODUCED, ""),  # the paper's set size: clearly short counts against
        ([0.95, 0.2, 0.1], 1000, INCONCLUSIVE, "unresolved"),
    ],
)
def test_separates_needs_every_domain_at_ninety_percent(shares, n, outcome, power):
    v = rules.separates_train_from_validation(rates(shares, n=n), model="h256")
    assert (v.verdict, v.power) == (outcome, power) and v.key == "di-separates"
    assert f"{n} + {n}" in v.n and "h256" in v.evidence
    assert ("the paper's test had 1,000" in v.evidence) == (n < rules.PAPER_TEXTS)


def test_separates_without_draws_is_not_tested():
    assert rules.separates_train_from_validation(pd.DataFrame(), model="x").verdict == NOT_TESTED


# Exact (Clopper-Pearson) 95% intervals of k flagged out of 1000 draws: 76/1000 is [6.0%, 9.4%]
# (at or below 0.1), 100/1000 straddles it, 125/1000 is [10.5%, 14.7%] (above).
@pytest.mark.parametrize("k, outcome", [(76, REPRODUCED), (100, INCONCLUSIVE), (125, NOT_REPRODUCED)])
def test_iid_level_is_decided_by_the_exact_interval(k, outcome):
    r = rates([k / 1000], draws=1000, key="scenario")
    v = rules.no_false_positives_under_iid(r)
    assert v.verdict == outcome, v.evidence
    assert f"{k} of 1000" in v.evidence


def test_iid_pools_the_rows():
    v = rules.no_false_positives_under_iid(rates([0.0, 0.3], draws=100, key="scenario"))
    assert "30 of 200" in v.evidence and v.verdict == NOT_REPRODUCED


@pytest.mark.parametrize("k, outcome", [(125, REPRODUCED), (100, INCONCLUSIVE), (76, NOT_REPRODUCED)])
def test_shift_finding_is_decided_at_the_largest_size(k, outcome):
    small = rates([0.0], draws=1000, n=10, key="scenario")
    big = rates([k / 1000], draws=1000, n=75, key="scenario")
    v = rules.shift_makes_false_positives(pd.concat([small, big]), domain="changelog")
    assert v.verdict == outcome and v.origin == "book"
    assert "75 + 75" in v.evidence and f"{k} of 1000" in v.evidence


def test_level_reading_by_hand():
    assert rules.level_reading(0.11, 0.2) == "above"
    assert rules.level_reading(0.0, 0.1) == "at or below"
    assert rules.level_reading(0.09, 0.11) == "straddles"


def test_the_flag_rate_lab_values_say_what_share_they_are():
    rates = pd.DataFrame({"n": [50], "flagged": [0], "draws": [36]})
    v = rules.no_false_positives_under_iid(rates)
    assert v.lab_value == "0.0% of 36 draws flagged"
