"""Verdict rules of the epochs chapter (MIMIR §3.2.1, Figure 2 right; appendix B.2; §C.2, Figure 10).

The epoch runs are scored on the same benchmark texts, so each comparison is a paired AUC
difference per (domain, attack) (``experiments.epochs.model_effects``): the most-epochs run minus
the 1-epoch run. The runs have one training seed each; their seed spread is that of the one-epoch
target of the same size (its replicates), x sqrt(2) for a difference of two trained models.
"""

from __future__ import annotations

import math

import pandas as pd

from mimirlib.verdicts import (
    NOT_REPRODUCED,
    PARTLY,
    REPRODUCED,
    TALLY_RULE,
    Claim,
    Effect,
    Verdict,
    decide_tally,
    tally,
)

# The claimed direction of every effect here: more epochs (or the calibrated attack) scores higher.
CLAIMED_SIGN = 1
# Units the effects frame is split into, named in evidence strings.
UNIT_COLUMNS = ("domain", "attack")

# The chapter's claims, each decided by the rule of the same name in lower case.

MORE_EPOCHS_MORE_LEAKAGE = Claim(
    "Increasing the number of effective epochs corresponds to an increase in attack performance",
    source="MIMIR §3.2.1, Figure 2 (right)",
    key="mimir-3.2.1-epochs",
    paper_value="AUC rises roughly linearly from 1 to 14 epochs (Datablations 2.8B; figure only)",
)

REFERENCE_GAINS_WITH_EPOCHS = Claim(
    "Reference-based attacks yield considerably higher MIA performance in the high effective epoch count setting",
    source="MIMIR appendix B.2 (on §3.2.1)",
    key="mimir-b.2-ref-epochs",
    paper_value="'considerably higher MIA performance' at high effective epoch counts (no number)",
)

SILO_UPSAMPLED_DOMAINS = Claim(
    "On SILO-PDSW, where training data grows with the upsampled domains' effective epochs, HackerNews AUC first "
    "increases, then plateaus or drops; DM Mathematics AUC drops as effective epochs increase",
    source="MIMIR §C.2, Figure 10",
    key="mimir-c.2-silo-epochs",
    paper_value="HackerNews rises, then plateaus or drops; DM Mathematics drops",
)


def effects_of(frame: pd.DataFrame) -> list[Effect]:
    """:class:`Effect` per row of a paired-effects frame (columns estimate, lo, hi, seed_sd, n_seeds
    and the unit columns present); a NaN ``seed_sd`` means no seed spread is known."""
    out = []
    for r in frame.itertuples(index=False):
        sd = getattr(r, "seed_sd", math.nan)
        sd = None if sd is None or not math.isfinite(float(sd)) else float(sd)
        label = "/".join(str(getattr(r, c)) for c in UNIT_COLUMNS if hasattr(r, c))
        out.append(Effect(float(r.estimate), float(r.lo), float(r.hi), sd, int(getattr(r, "n_seeds", 1) or 1), label))
    return out


def _epochs(k: int) -> str:
    return f"{k} epoch" if k == 1 else f"{k} epochs"


def _effects_text(effects: list[Effect]) -> str:
    return "; ".join(e.describe() for e in effects)


def more_epochs_more_leakage(gains: pd.DataFrame, *, fewest: int, most: int, n: str) -> Verdict:
    """MIMIR §3.2.1: more effective epochs, higher AUC. ``gains``: the most-epochs run minus the
    1-epoch run, paired per (domain, attack), with ``auc_a`` (most) and ``auc_b`` (fewest)."""
    if gains.empty:
        return MORE_EPOCHS_MORE_LEAKAGE.not_tested(
            "the run has fewer than two epoch runs", lab_value="not measured", n=n
        )
    eff = effects_of(gains)
    t = tally(eff, CLAIMED_SIGN)
    return MORE_EPOCHS_MORE_LEAKAGE.tallied(
        t,
        f"AUC({_epochs(most)}) - AUC({_epochs(fewest)}), paired per domain x attack: {t.text()}. {_effects_text(eff)}",
        f"units: domain x attack; {TALLY_RULE}. The shape of the rise (the paper: linear) is shown, not decided",
        lab_value=f"mean AUC {gains.auc_b.mean():.3f} ({_epochs(fewest)}) -> {gains.auc_a.mean():.3f} "
        f"({_epochs(most)}), clear gain in {t.n_for} of {t.n}",
        n=n,
    )


def reference_gains_with_epochs(
    gains: pd.DataFrame, edge: pd.DataFrame, *, fewest: int, most: int, n: str, attack: str = "ref"
) -> Verdict:
    """MIMIR appendix B.2: the reference-based attack yields considerably higher performance in the
    high-effective-epoch setting. ``gains`` as for :func:`more_epochs_more_leakage` (only the rows of
    ``attack`` are used); ``edge``: the reference attack minus LOSS on the most-epochs run, paired
    per domain (empty when LOSS was not run)."""
    g = gains[gains.attack == attack] if not gains.empty else gains
    if g.empty:
        return REFERENCE_GAINS_WITH_EPOCHS.not_tested(
            f"the run has no {attack!r} attack or fewer than two epoch runs", lab_value="not measured", n=n
        )
    eff = effects_of(g)
    t = tally(eff, CLAIMED_SIGN)
    outcome = decide_tally(t)
    evidence = (
        f"reference attack, AUC({_epochs(most)}) - AUC({_epochs(fewest)}) per domain: {t.text()}. {_effects_text(eff)}"
    )
    lab_value = f"reference attack AUC {g.auc_b.mean():.3f} -> {g.auc_a.mean():.3f}"
    if not edge.empty:
        e_eff = effects_of(edge.drop(columns=["attack"], errors="ignore"))
        te = tally(e_eff, CLAIMED_SIGN)
        evidence += f". Reference minus LOSS at {_epochs(most)}: {te.text()}. {_effects_text(e_eff)}"
        lab_value += f"; minus LOSS at {_epochs(most)} {edge.estimate.mean():+.3f}"
        if outcome == REPRODUCED and decide_tally(te) == NOT_REPRODUCED:
            outcome = PARTLY
    else:
        evidence += ". Reference minus LOSS: not measured (LOSS not run)"
    return REFERENCE_GAINS_WITH_EPOCHS.verdict(
        outcome,
        evidence,
        f"the reference attack's gain from {_epochs(fewest)} to {_epochs(most)}, units: domains; {TALLY_RULE}. "
        f"A reproduced gain becomes partly if, at {_epochs(most)}, the reference attack is clearly below LOSS (its "
        "uncalibrated counterpart) by the same tally rule: then it is not 'considerably higher'",
        lab_value=lab_value,
        n=n,
    )


def silo_upsampled_domains() -> Verdict:
    """MIMIR §C.2, Figure 10 (SILO-PDSW): the lab has no run that upsamples one domain inside a
    mixture that grows with the epochs, so the claim is recorded as not tested."""
    return SILO_UPSAMPLED_DOMAINS.not_tested(
        "the lab has no run that upsamples one domain k times inside a mixture that grows with k (the fixed-budget "
        "runs hold the token budget fixed instead)",
        lab_value="no such run in the lab",
        n="-",
    )
