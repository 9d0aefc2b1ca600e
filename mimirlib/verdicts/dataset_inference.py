"""Verdicts of the dataset-inference chapter (Maini et al., 2024, §5.4 and Figure 4).

Each rule reads flag rates: per group, ``draws`` tests on random suspect / validation draws, the share
flagged at p < 0.1 (``share``) and its exact 95% interval (``share_lo``, ``share_hi``;
``metrics.proportion_interval``). Draws of one group share their texts, so the interval speaks for
the draws of these texts, not for new texts of the distribution; the evidence says how many.
"""

from __future__ import annotations

import pandas as pd

from mimirlib.core import metrics
from mimirlib.verdicts import INCONCLUSIVE, NOT_REPRODUCED, PARTLY, REPRODUCED, Claim, Verdict

ALPHA = 0.1  # the paper's level (Figure 4: p-values "always below 0.1" on train vs validation)
# A domain counts as separated when at least this share of its draws reaches p < ALPHA: one p-value
# per subset in the paper, so a lab domain must do it in nearly every draw of its texts.
SEPARATED_SHARE = 0.9

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


def separates_train_from_validation(rates: pd.DataFrame, *, model: str) -> Verdict:
    """``rates``: one row per domain (the largest model, the largest members set). Reproduced when every
    domain reaches p < ALPHA in at least SEPARATED_SHARE of its draws, partly when some do, not
    reproduced when none does."""
    rule = (
        f"a domain is separated when >= {SEPARATED_SHARE:.0%} of its draws reach p < {ALPHA:g} (members as the "
        "suspect set, non-members as validation); reproduced if every domain is, partly if some are, "
        "else not reproduced"
    )
    if rates.empty:
        return SEPARATES.not_tested("no members-set draws in the run")
    ok = rates[rates.share >= SEPARATED_SHARE]
    outcome = REPRODUCED if len(ok) == len(rates) else PARTLY if len(ok) else NOT_REPRODUCED
    evidence = f"{model}: separated in {len(ok)} of {len(rates)} domains; " + "; ".join(
        f"{r.domain} {rate_text(r)}" for r in rates.itertuples()
    )
    n = f"{int(rates.n.iloc[0])} + {int(rates.n.iloc[0])} texts per draw" if "n" in rates else ""
    return SEPARATES.verdict(outcome, evidence, rule, lab_value=f"{len(ok)} of {len(rates)} domains", n=n)


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
    return NO_FALSE_POSITIVES.verdict(outcome, evidence, rule, lab_value=f"{k / draws:.1%}", n=f"{draws} draws")


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
    return SHIFT.verdict(outcome, evidence, rule, lab_value=f"{k / draws:.1%}", n=f"{draws} draws")
