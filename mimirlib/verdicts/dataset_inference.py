"""Verdicts of the dataset-inference chapter (Maini et al., 2024, §5.4 and Figure 4).

Each rule reads flag rates: per group, ``draws`` tests on random suspect / validation draws, the share
flagged at p < 0.1 (``share``) and its exact 95% interval (``share_lo``, ``share_hi``;
``metrics.proportion_interval``). Draws of one group share their texts, so the interval speaks for
the draws of these texts, not for new texts of the distribution; the evidence says how many.
"""

from __future__ import annotations

import pandas as pd

from mimirlib.core import metrics, power
from mimirlib.verdicts import INCONCLUSIVE, NOT_REPRODUCED, PARTLY, REPRODUCED, Claim, Verdict

ALPHA = 0.1  # the paper's level (Figure 4: p-values "always below 0.1" on train vs validation)
# A domain counts as separated when at least this share of its draws reaches p < ALPHA: one p-value
# per subset in the paper, so a lab domain must do it in nearly every draw of its texts.
SEPARATED_SHARE = 0.9
# Texts per side in the paper's test (Figure 4: 1,000 suspect and 1,000 validation per subset). With fewer, a
# domain not separated says the lab cannot tell (the test gains power with every text), not that the paper's fails.
PAPER_TEXTS = 1000

SEPARATES = Claim(
    "Dataset inference tells a model's training subset from a held-out subset of the same distribution, "
    "with p < 0.1 in every domain",
    source="Maini et al. §5.4, Figure 4",
    key="di-separates",
    paper_value="p < 0.1 on all 20 Pile subsets, below 0.001 on 19 (Pythia-12B, 1,000 texts per side; Figure 4)",
)
NO_FALSE_POSITIVES = Claim(
    "Dataset inference does not flag a suspect set the model never saw when the validation set is IID with it",
    source="Maini et al. §5.4, Figure 4",
    key="di-no-false-positives",
    paper_value="two validation halves (500 texts each): p > 0.1 on all 20 Pile subsets (0.58 to 1.00; Figure 4)",
)
SHIFT = Claim(
    "A validation set from a later period makes dataset inference flag a suspect set the model never saw",
    source="Maini et al. §5.2, assumption 1 (the sets must be IID); the lab's temporal split",
    key="di-shift-false-positives",
    origin="book",
    paper_value="the paper requires IID sets and names temporal shift as what breaks them (§5.2)",
)


def rate_text(r) -> str:
    return f"{r.share:.0%} of {r.draws} draws [{r.share_lo:.0%}, {r.share_hi:.0%}]"


def domain_reading(r) -> str:
    """Where a domain's flag share lies against SEPARATED_SHARE, by its exact interval: "separated" (at or
    above), "not separated" (below), or "undecided" (straddles)."""
    if r.share_lo >= SEPARATED_SHARE:
        return "separated"
    return "not separated" if r.share_hi < SEPARATED_SHARE else "undecided"


def separates_train_from_validation(rates: pd.DataFrame, *, model: str) -> Verdict:
    """``rates``: one row per domain (the largest model, the largest members set, ``n`` texts per side).
    Each domain is read by its share's exact interval against SEPARATED_SHARE (:func:`domain_reading`).
    Reproduced when every domain is separated, partly when some are. When none is: not reproduced if
    every domain is clearly not separated with sets as large as the paper's; with smaller sets the
    lab cannot tell (inconclusive, underpowered: the test gains power with every text); otherwise
    inconclusive (unresolved)."""
    rule = (
        f"a domain is separated when the exact 95% interval of the share of its draws reaching p < {ALPHA:g} "
        f"(members as the suspect set, non-members as validation) lies at or above {SEPARATED_SHARE:.0%}, not "
        f"separated when it lies below; reproduced if every domain is separated, partly if some are; if none is, "
        f"not reproduced when every domain is clearly not separated with sets of the paper's {PAPER_TEXTS:,} texts "
        "per side or more, else inconclusive (underpowered when the sets are smaller than the paper's)"
    )
    if rates.empty:
        return SEPARATES.not_tested("no members-set draws in the run")
    readings = [domain_reading(r) for r in rates.itertuples()]
    n_texts = int(rates.n.iloc[0]) if "n" in rates else 0
    separated, clearly_not = readings.count("separated"), readings.count("not separated")
    label = ""
    if separated == len(rates):
        outcome = REPRODUCED
    elif separated:
        outcome = PARTLY
    elif n_texts >= PAPER_TEXTS and clearly_not == len(rates):
        outcome = NOT_REPRODUCED
    else:
        outcome, label = INCONCLUSIVE, power.UNDERPOWERED if n_texts < PAPER_TEXTS else power.UNRESOLVED
    evidence = f"{model}: separated in {separated} of {len(rates)} domains, clearly not in {clearly_not}; " + "; ".join(
        f"{r.domain} {rate_text(r)} ({reading})" for r, reading in zip(rates.itertuples(), readings)
    )
    n = ""
    if n_texts:
        n = f"{n_texts} + {n_texts} texts per draw"
        if n_texts < PAPER_TEXTS:
            evidence += f" ({n_texts} texts per side: the paper's test had {PAPER_TEXTS:,})"
    lab_value = f"{separated} of {len(rates)} domains"
    return SEPARATES.verdict(outcome, evidence, rule, lab_value=lab_value, n=n, power=label)


def pooled_rate(rates: pd.DataFrame) -> tuple[int, int, float, float]:
    """Flagged draws, draws, and the exact 95% interval of the share, pooled over the rows of ``rates``."""
    k, draws = int(rates.flagged.sum()), int(rates.draws.sum())
    lo, hi = metrics.proportion_interval(k, draws)
    return k, draws, lo, hi


def level_reading(lo: float, hi: float) -> str:
    """Where a flag rate's interval lies against ALPHA: "above", "at or below", or "straddles"."""
    return "above" if lo > ALPHA else "at or below" if hi <= ALPHA else "straddles"


def _rate_evidence(what: str, k: int, draws: int, lo: float, hi: float) -> str:
    return f"{what}: flagged in {k} of {draws} draws, {k / draws:.1%} [{lo:.1%}, {hi:.1%}] (exact 95%)"


def no_false_positives_under_iid(rates: pd.DataFrame) -> Verdict:
    """``rates``: flag rates of the IID scenario (non-members against other non-members). Reproduced when
    the pooled share's exact interval lies at or below ALPHA, not reproduced when it lies above."""
    rule = (
        f"pooled share of IID draws flagged at p < {ALPHA:g}, exact 95% interval: reproduced if it lies at or "
        f"below {ALPHA:g} (the test keeps its level), not reproduced if it lies above, else inconclusive"
    )
    if rates.empty:
        return NO_FALSE_POSITIVES.not_tested("no IID draws in the run")
    k, draws, lo, hi = pooled_rate(rates)
    reading = level_reading(lo, hi)
    outcome = {"at or below": REPRODUCED, "above": NOT_REPRODUCED}.get(reading, INCONCLUSIVE)
    evidence = _rate_evidence("non-members against other non-members", k, draws, lo, hi)
    return NO_FALSE_POSITIVES.verdict(
        outcome, evidence, rule, lab_value=f"{k / draws:.1%} of {draws} draws flagged", n=f"{draws} draws"
    )


def shift_makes_false_positives(rates: pd.DataFrame, *, domain: str | None) -> Verdict:
    """``rates``: flag rates of the shift scenario (same-period non-members against later ones), one row
    per suspect-set size; decided at the largest size. The finding holds when the share's exact interval
    lies above ALPHA, and not when it lies at or below it."""
    rule = (
        f"share of draws flagged at p < {ALPHA:g} at the largest suspect set, exact 95% interval: holds if it "
        f"lies above {ALPHA:g}, does not if it lies at or below, else inconclusive"
    )
    if rates.empty:
        return SHIFT.not_tested("no temporally shifted split in the run (the lab's dated domain or shift_split)")
    at = rates[rates.n == rates.n.max()]
    k, draws, lo, hi = pooled_rate(at)
    reading = level_reading(lo, hi)
    outcome = {"above": REPRODUCED, "at or below": NOT_REPRODUCED}.get(reading, INCONCLUSIVE)
    what = f"{domain}: same-period non-members against later ones, {int(at.n.iloc[0])} + {int(at.n.iloc[0])} texts"
    evidence = _rate_evidence(what, k, draws, lo, hi)
    return SHIFT.verdict(
        outcome, evidence, rule, lab_value=f"{k / draws:.1%} of {draws} draws flagged", n=f"{draws} draws"
    )
