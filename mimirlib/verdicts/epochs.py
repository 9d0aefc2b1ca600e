"""Verdict rules of the epochs chapter (MIMIR §3.2.1, Figure 2 right; appendix B.2; §C.2, Figure 10).

The epoch runs are scored on the same benchmark texts, so each comparison is a paired AUC
difference per (domain, attack): the most-epochs run minus the 1-epoch run
(``experiments.epochs.model_effects``), or, on the most-epochs run, the reference attack minus
another attack (``experiments.epochs.reference_edges``). The runs have one training seed each;
their seed spread is that of the one-epoch target of the same size (its replicates), x sqrt(2) for
a difference of two trained models.
"""

from __future__ import annotations

import math

import pandas as pd

from mimirlib.core.attacks import ATTACKS
from mimirlib.core.power import SMALLEST_EFFECT_OF_INTEREST
from mimirlib.verdicts import (
    NOT_PAPER_ATTACK,
    PAPER_ATTACKS,
    TALLY_RULE,
    Claim,
    Effect,
    Verdict,
    split_paper_attacks,
    tally,
)

# The claimed direction of every effect here: more epochs (or the calibrated attack) scores higher.
CLAIMED_SIGN = 1
# Units the effects frame is split into, named in evidence strings.
UNIT_COLUMNS = ("domain", "attack")
# The reference attack is compared with MIMIR's other four attacks (verdicts.PAPER_ATTACKS); an
# attack after the paper (Min-K%++) is reported beside them, never tallied.
OTHER_LABELS = tuple(ATTACKS[a].label for a in PAPER_ATTACKS if a != "ref")

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
    effect_of_interest=SMALLEST_EFFECT_OF_INTEREST,  # figure only: the book's bound (power)
    paper_value="'considerably higher MIA performance' than the other attacks at high effective epoch counts "
    "(no number)",
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


def _attack_label(attack: str) -> str:
    return ATTACKS[attack].label if attack in ATTACKS else attack


def reference_gains_with_epochs(
    edges: pd.DataFrame, growth: pd.DataFrame, *, fewest: int, most: int, n: str, reference: str = "ref"
) -> Verdict:
    """MIMIR appendix B.2: "reference-based attacks yielded considerably higher MIA performance in low
    training data size and high effective epoch count settings" (than the calibration-free attacks,
    its context says). Decided at the highest epoch count against every other MIMIR attack. ``edges``:
    AUC(reference) - AUC(other attack) on the most-epochs run, paired per (domain, attack) on the
    same texts (``experiments.epochs.reference_edges``; ``attack`` names the other attack).
    ``growth``: that margin on the most-epochs run minus on the fewest-epochs run, per (domain,
    attack) (``experiments.epochs.margin_growth``): reported as support, not decided. The rule is
    :func:`reference_rule`."""
    others = edges[edges.attack != reference] if not edges.empty else edges
    tallied, beside = split_paper_attacks(others)
    if tallied.empty:
        return REFERENCE_GAINS_WITH_EPOCHS.not_tested(
            f"the run has no {reference!r} attack or none of MIMIR's other attacks ({', '.join(OTHER_LABELS)})",
            lab_value="not measured",
            n=n,
        )
    eff = effects_of(tallied)
    t = tally(eff, CLAIMED_SIGN)
    names = [_attack_label(a) for a in pd.unique(tallied.attack)]
    evidence = (
        f"AUC(Reference) - AUC(other attack) on the {_epochs(most)} run, paired per domain x attack "
        f"({', '.join(names)}): {t.text()}. {_effects_text(eff)}"
    )
    if not beside.empty:
        b_eff = effects_of(beside)
        evidence += (
            f". Beside, not tallied ({NOT_PAPER_ATTACK}): "
            f"{', '.join(_attack_label(a) for a in pd.unique(beside.attack))}, {_effects_text(b_eff)}"
        )
    lab_value = (
        f"at {_epochs(most)}: Reference AUC {tallied.auc_a.mean():.3f} vs the others' {tallied.auc_b.mean():.3f}, "
        f"mean paired difference {tallied.estimate.mean():+.3f}, clearly higher in {t.n_for} of {t.n}"
    )
    g = growth[growth.attack.isin(PAPER_ATTACKS) & (growth.attack != reference)] if not growth.empty else growth
    if g.empty:
        evidence += f". Growth of the margin from {_epochs(fewest)}: not measured"
    else:
        tg = tally(effects_of(g), CLAIMED_SIGN)
        evidence += (
            f". Supporting, not decided: the margin on the {_epochs(most)} run minus on the {_epochs(fewest)} "
            f"run (paired gain difference): {tg.text()}. {_effects_text(effects_of(g))}"
        )
        lab_value += f"; the margin grows by {g.estimate.mean():+.3f} from {_epochs(fewest)} (mean)"
    return REFERENCE_GAINS_WITH_EPOCHS.tallied(t, evidence, reference_rule(fewest, most), lab_value=lab_value, n=n)


def reference_rule(fewest: int, most: int) -> str:
    """The text of :func:`reference_gains_with_epochs`' rule."""
    return (
        f"units: domain x each of MIMIR's other four attacks ({', '.join(OTHER_LABELS)}) that the run has; effect: "
        f"AUC(Reference) - AUC(that attack) on the {_epochs(most)} run (the highest effective epoch count), "
        "paired on the same texts, seed sd of the same attack difference over the seed replicates of the "
        f"one-epoch target of that size; claimed positive; {TALLY_RULE}. The paper gives no size for "
        "'considerably': any clear positive difference counts (the MDE is shown). Attacks after MIMIR (Min-K%++) "
        f"are reported beside, not tallied; the growth of the margin from {_epochs(fewest)} to {_epochs(most)} "
        "(a paired gain difference, seed sd x sqrt(2)) is reported as support, not decided"
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
