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
    INCONCLUSIVE,
    NOT_PAPER_ATTACK,
    NOT_REPRODUCED,
    NOT_TESTED,
    PAPER_ATTACKS,
    PARTLY,
    REPRODUCED,
    SEED_Z,
    TALLY_RULE,
    Claim,
    Effect,
    Tally,
    Verdict,
    decide_tally,
    split_paper_attacks,
    tally,
    tally_outcomes,
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
    average=True,
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
    effect_of_interest=SMALLEST_EFFECT_OF_INTEREST,  # figure only: the book's bound (power)
    paper_value="HackerNews rises, then plateaus or drops; DM Mathematics drops (Figure 10, no number)",
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
    paper, beside = split_paper_attacks(gains)
    if paper.empty:
        return MORE_EPOCHS_MORE_LEAKAGE.not_tested(
            f"none of MIMIR's five attacks in the run ({', '.join(ATTACKS[a].label for a in PAPER_ATTACKS)})",
            lab_value="not measured",
            n=n,
        )
    eff = effects_of(paper)
    t = tally(eff, CLAIMED_SIGN)
    evidence = f"AUC({_epochs(most)}) - AUC({_epochs(fewest)}), paired per domain x attack: {t.text()}. " + (
        _effects_text(eff)
    )
    return MORE_EPOCHS_MORE_LEAKAGE.tallied(
        t,
        evidence,
        f"units: domain x attack, MIMIR's attacks in the run (Min-K%++, published after the paper, reported beside, "
        f"not tallied); {TALLY_RULE}. The shape of the rise (the paper: linear) is shown, not decided",
        _beside(beside),
        lab_value=f"mean AUC {paper.auc_b.mean():.3f} ({_epochs(fewest)}) -> {paper.auc_a.mean():.3f} "
        f"({_epochs(most)}), clear gain in {t.n_for} of {t.n}",
        n=n,
    )


def _beside(beside: pd.DataFrame) -> str:
    """The effects of the attacks that are not units (Min-K%++: :data:`NOT_PAPER_ATTACK`), or nothing."""
    if beside.empty:
        return ""
    names = ", ".join(_attack_label(a) for a in pd.unique(beside.attack))
    return f". Beside, not tallied ({NOT_PAPER_ATTACK}): {names}, {_effects_text(effects_of(beside))}"


def _attack_label(attack: str) -> str:
    return ATTACKS[attack].label if attack in ATTACKS else attack


def leaves_room(auc_other: float) -> bool:
    """Whether another attack's AUC leaves the reference attack room to score higher by the book's smallest
    effect of interest (one AUC point): ``1 - auc_other >= SMALLEST_EFFECT_OF_INTEREST``. Where it does not, the
    reference cannot be clearly higher: such a unit can only read inside the noise (forced by the ceiling, not
    evidence) or clearly lower (evidence against, kept: see :func:`saturated_units`)."""
    return 1.0 - float(auc_other) >= SMALLEST_EFFECT_OF_INTEREST


def saturated_units(rooms, signs) -> list[bool]:
    """Which units leave the tally: those without room (``rooms`` False) that do not read clearly against the
    claim (``signs`` in the claimed direction: +1, 0, -1). At the ceiling a unit cannot read *for*, so its
    *inside the noise* is forced; a clear reading against it is still evidence and stays tallied."""
    return [not r and s != -1 for r, s in zip(rooms, signs)]


def reference_gains_with_epochs(
    edges: pd.DataFrame, growth: pd.DataFrame, *, fewest: int, most: int, n: str, reference: str = "ref"
) -> Verdict:
    """MIMIR appendix B.2: "reference-based attacks yielded considerably higher MIA performance in low
    training data size and high effective epoch count settings" (than the calibration-free attacks,
    its context says). Decided at the highest epoch count against every other MIMIR attack. ``edges``:
    AUC(reference) - AUC(other attack) on the most-epochs run, paired per (domain, attack) on the
    same texts (``experiments.epochs.reference_edges``; ``attack`` names the other attack, ``auc_b``
    its AUC). A unit whose other attack leaves no room above it (:func:`leaves_room`) is reported,
    not tallied. ``growth``: that margin on the most-epochs run minus on the fewest-epochs run, per
    (domain, attack) (``experiments.epochs.margin_growth``): reported as support, not decided. The
    rule is :func:`reference_rule`."""
    others = edges[edges.attack != reference] if not edges.empty else edges
    paper, beside = split_paper_attacks(others)
    if paper.empty:
        return REFERENCE_GAINS_WITH_EPOCHS.not_tested(
            f"the run has no {reference!r} attack or none of MIMIR's other attacks ({', '.join(OTHER_LABELS)})",
            lab_value="not measured",
            n=n,
        )
    paper_eff = effects_of(paper)
    out = pd.Series(
        saturated_units(paper.auc_b.map(leaves_room), [e.sign() * CLAIMED_SIGN for e in paper_eff]), index=paper.index
    )
    tallied, saturated = paper[~out], paper[out]
    sat_text = ", ".join(
        f"{r.domain}/{r.attack} AUC {r.auc_b:.3f} (difference {r.estimate:+.3f} [{r.lo:+.3f}, {r.hi:+.3f}])"
        for r in saturated.itertuples(index=False)
    )
    if tallied.empty:
        return REFERENCE_GAINS_WITH_EPOCHS.not_tested(
            f"every other attack's AUC on the {_epochs(most)} run leaves the reference less than "
            f"{SMALLEST_EFFECT_OF_INTEREST:g} AUC to gain (saturated: {sat_text})",
            lab_value=f"at {_epochs(most)}: every other attack above AUC {1 - SMALLEST_EFFECT_OF_INTEREST:g}",
            n=n,
        )
    eff = [e for e, o in zip(paper_eff, out) if not o]
    t = tally(eff, CLAIMED_SIGN)
    names = [_attack_label(a) for a in pd.unique(tallied.attack)]
    evidence = (
        f"AUC(Reference) - AUC(other attack) on the {_epochs(most)} run, paired per domain x attack "
        f"({', '.join(names)}): {t.text()}. {_effects_text(eff)}"
    )
    if not saturated.empty:
        evidence += (
            f". Saturated, not tallied (the other attack leaves less than {SMALLEST_EFFECT_OF_INTEREST:g} AUC of room "
            f"above it, and the reference is not clearly below it): {sat_text}"
        )
    evidence += _beside(beside)
    lab_value = (
        f"at {_epochs(most)}: Reference AUC {paper.auc_a.mean():.3f} vs the others' {paper.auc_b.mean():.3f}, "
        f"mean paired difference {paper.estimate.mean():+.3f}, clearly higher in {t.n_for} of {t.n}"
        + (f" with room ({len(saturated)} saturated)" if not saturated.empty else "")
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
        f"one-epoch target of that size; claimed positive; a unit whose other attack scores AUC above "
        f"{1 - SMALLEST_EFFECT_OF_INTEREST:g} is saturated (the reference cannot be higher by one AUC point): "
        f"reported, not tallied, unless the reference is clearly below it (evidence against, tallied); the claim "
        f"not tested if every unit is saturated; {TALLY_RULE}. The paper gives no size for "
        "'considerably': any clear positive difference counts (the MDE is shown). Attacks after MIMIR (Min-K%++) "
        f"are reported beside, not tallied; the growth of the margin from {_epochs(fewest)} to {_epochs(most)} "
        "(a paired gain difference, seed sd x sqrt(2)) is reported as support, not decided"
    )


def has_room(auc_first: float, early: float, epochs: int) -> bool:
    """Whether a linear rise from the first epoch end, ``early`` AUC per epoch, stays at or below AUC 1
    until the last of ``epochs`` ends: else the bend a ceiling forces says nothing about a plateau."""
    return auc_first + (epochs - 1) * early <= 1.0


def silo_unit(early: Effect, bend: Effect) -> int:
    """The HackerNews part's reading of one unit: +1 when the AUC clearly rises between the first two epoch
    ends and the rise clearly bends down later (a smaller gain, a plateau or a drop: a linear rise bends by
    0), -1 when the bend is clearly upward or the first change clearly downward, else 0. Without room
    (:func:`has_room`) a plateau is forced, not found: the unit leaves the tally unless it reads -1
    (:func:`saturated_units`)."""
    if early.sign() < 0 or bend.sign() > 0:
        return -1
    return 1 if early.sign() > 0 and bend.sign() < 0 else 0


def combine_parts(first: str, second: str) -> str:
    """One outcome from the claim's two parts, a conjunction. A part that gives no evidence (inconclusive,
    not tested) is left out: reproduced if both parts are, partly if one is reproduced or partly, not
    reproduced if every part that decides is not; inconclusive (not tested) when neither decides."""
    parts = {first, second}
    decided = parts - {INCONCLUSIVE, NOT_TESTED}
    if not decided:
        return NOT_TESTED if parts == {NOT_TESTED} else INCONCLUSIVE
    if parts == {REPRODUCED}:
        return REPRODUCED
    if decided & {REPRODUCED, PARTLY}:
        return PARTLY
    return NOT_REPRODUCED


def silo_rule(upsample: int, epochs: int) -> str:
    """The text of :func:`silo_upsampled_domains`' rule."""
    last = f"e{epochs}"
    return (
        "units: each upsampled domain x each of MIMIR's attacks the run has (Min-K%++ beside, not tallied), read at "
        f"the checkpoints closest to each epoch's end e1 ... {last} (effective epochs {upsample} x the epoch). "
        f"HackerNews's counterpart: a unit is for when AUC(e2) - AUC(e1) is clearly positive and the bend "
        f"[AUC({last}) - AUC(e{epochs - 1})] - [AUC(e2) - AUC(e1)] clearly negative (the rise slows, plateaus or "
        "turns down over the same number of effective epochs; a linear rise bends by 0), against when the bend is "
        f"clearly positive or AUC(e2) - AUC(e1) clearly negative; a unit where a linear rise from e1 at that pace "
        f"would pass AUC 1 by {last} is saturated (a ceiling forces the plateau): reported, not tallied unless it "
        "reads clearly against (the part not tested if every unit is saturated). DM Mathematics' counterpart: "
        f"AUC({last}) - AUC(e1), claimed negative. Each part: {tally_outcomes()}. The claim, a conjunction: "
        "reproduced if both parts are, partly if one is reproduced or partly, not reproduced if every part that "
        "decides is not (an inconclusive part gives no evidence), otherwise inconclusive. Clear: "
        f"the paired 95% bootstrap interval excludes 0 and the effect exceeds {SEED_Z:g} seed sd; the run has one "
        "training seed, so its seed sd is imputed from the one-epoch target of its size (its replicates' AUC sd x "
        "sqrt(2) for a difference of two checkpoints, x 2 for the bend): conservative, as checkpoints of one run "
        "are not independently trained models"
    )


def silo_upsampled_domains(
    early: pd.DataFrame | None = None,
    bend: pd.DataFrame | None = None,
    change: pd.DataFrame | None = None,
    *,
    rises: str | None = None,
    drops: str | None = None,
    upsample: int = 3,
    epochs: int = 4,
    n: str = "-",
) -> Verdict:
    """MIMIR §C.2, Figure 10 (SILO-PDSW): read on the lab's SILO-style run (``experiments.silo``):
    ``early`` AUC(e2) - AUC(e1), ``bend`` the later gain minus that one, ``change`` AUC(last) - AUC(e1),
    each per (domain, attack), paired on the same texts; ``rises`` / ``drops`` name the upsampled lab
    domains that play HackerNews and DM Mathematics (None: not upsampled). Without a run (``early``
    None) the claim is not tested. The rule is :func:`silo_rule`."""
    if early is None or (rises is None and drops is None):
        return SILO_UPSAMPLED_DOMAINS.not_tested(
            "the lab has no run that upsamples HackerNews's or DM Mathematics' counterpart inside a mixture that "
            "grows with the epochs (the fixed-budget runs hold the token budget fixed instead)",
            lab_value="no such run in the lab",
            n=n,
        )
    if epochs < 3:
        raise ValueError(f"the SILO-style run has {epochs} epochs; the rule reads three epoch ends at least")
    evidence, lab_value, deciding = [], [], []
    hn = dm = NOT_TESTED
    if rises is not None:
        e_rows, _ = split_paper_attacks(early[early.domain == rises])
        b_rows, _ = split_paper_attacks(bend[bend.domain == rises])
        b_rows = b_rows.set_index("attack").loc[e_rows.attack].reset_index()
        rooms = [has_room(a, x, epochs) for a, x in zip(e_rows.auc_b, e_rows.estimate)]
        e_eff, b_eff = effects_of(e_rows), effects_of(b_rows)
        read = [silo_unit(e, b) for e, b in zip(e_eff, b_eff)]
        out = saturated_units(rooms, read)
        signs = [s for s, o in zip(read, out) if not o]
        t = Tally(signs.count(1), signs.count(-1), signs.count(0), (), 1)
        hn = decide_tally(t)
        deciding += [e for e, o in zip(b_eff, out) if not o]
        saturated = [a for a, o in zip(e_rows.attack, out) if o]
        evidence.append(
            f"{rises} (HackerNews): {hn}, {t.text()}"
            + (f" (saturated, not tallied: {', '.join(saturated)})" if saturated else "")
            + f". AUC(e2) - AUC(e1): {_effects_text(e_eff)}. Bend: {_effects_text(b_eff)}"
        )
        lab_value.append(
            f"{rises}: AUC {e_rows.auc_b.mean():.3f} (e1) -> {e_rows.auc_a.mean():.3f} (e2), bend "
            f"{b_rows.estimate.mean():+.3f}"
        )
    if drops is not None:
        c_rows, _ = split_paper_attacks(change[change.domain == drops])
        t = tally(effects_of(c_rows), -1)
        dm = decide_tally(t)
        deciding += effects_of(c_rows)
        evidence.append(
            f"{drops} (DM Mathematics): {dm}, AUC(e{epochs}) - AUC(e1): {t.text()}. {_effects_text(effects_of(c_rows))}"
        )
        lab_value.append(f"{drops}: AUC {c_rows.auc_b.mean():.3f} (e1) -> {c_rows.auc_a.mean():.3f} (e{epochs})")
    outcome = combine_parts(hn, dm)
    if not deciding:  # every unit saturated: no effect to read the power of
        return SILO_UPSAMPLED_DOMAINS.verdict(
            outcome, ". ".join(evidence), silo_rule(upsample, epochs), lab_value="; ".join(lab_value), n=n
        )
    reading = SILO_UPSAMPLED_DOMAINS.read_power(deciding, -1)
    return SILO_UPSAMPLED_DOMAINS.with_power(
        outcome, reading, ". ".join(evidence), silo_rule(upsample, epochs), lab_value="; ".join(lab_value), n=n
    )
