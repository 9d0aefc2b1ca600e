"""Verdicts of the main-results chapter (MIMIR §3.1: Table 1, Figures 1 and 12).

Six claims: near-random AUCs; the size trend of the reference attack (Figure 1) and of the other
attacks (Figure 12); deduplication's effect, likewise split (those four decided by one rule,
:func:`model_difference`); and the reference attack as the best one. The comparative rules read a
frame of paired effects (one row per unit: ``domain``, ``attack``, ``estimate``, ``lo``, ``hi``,
``seed_sd``, ``n_seeds``, ``seed_sd_from``, ``n_members``, ``n_nonmembers``; see
``experiments.main_scores``) and decide by
:func:`mimirlib.verdicts.decide_tally`. The paper's numbers come from its transcribed tables.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace
from typing import NamedTuple

import numpy as np
import pandas as pd

from mimirlib.display.paper_tables import paper_table
from mimirlib.verdicts import NOT_REPRODUCED, PARTLY, REPRODUCED, TALLY_RULE, Claim, Effect, Verdict, tally

REFERENCE = "ref"  # the reference-based attack's name among the shown attacks (and in the paper's tables)

# The paper's own bound for "near random": "MIA methods perform near random (<.6) in most domains"
# (Table 1 caption).
NEAR_RANDOM_AUC = 0.6
# "In most domains": at least three in four AUCs under the bound, the book's usual "most".
NEAR_RANDOM_REPRODUCED = 0.75
# At least two in five under the bound: near random in a large minority of settings, not most.
NEAR_RANDOM_PARTLY = 0.4
# The paper's size range: §3 lists Pythia-dedup from 160M to 12B (Table 1 also prints a 70M row,
# which the text does not list); its size effects are read between these two rows.
PAPER_SMALLEST = "160M"
PAPER_LARGEST = "12B"
# Evidence strings list every unit's effect up to this many units, else the clear ones only (a
# table of 30 intervals in one cell helps nobody; the chapter shows them all in a table).
MAX_LISTED = 8

SEED_NOTE = (
    "where a model has no seed replicates, its seed sd is estimated from the seed sd measured on "
    "the replicated sizes for the same (domain, attack)"
)


# ----------------------------------------------------------------------------- the paper's numbers


@functools.lru_cache(maxsize=None)
def _table(number: str) -> pd.DataFrame:
    return paper_table("mimir", number)


def _paper_near_random() -> str:
    row = _table("1").loc[PAPER_LARGEST]
    above = row[row >= NEAR_RANDOM_AUC]
    where = sorted(set(above.index.get_level_values(0)))
    return (
        f"{int((row < NEAR_RANDOM_AUC).sum())} of {row.size} AUCs below {NEAR_RANDOM_AUC} at {PAPER_LARGEST} "
        f"(Table 1); the others: {', '.join(where) or 'none'}"
    )


def _paper_size(ref: bool) -> str:
    t = _table("1")
    d = t.loc[PAPER_LARGEST] - t.loc[PAPER_SMALLEST]
    d = d[(d.index.get_level_values(1) == REFERENCE) == ref]
    unit = "domains" if ref else "(domain, attack) pairs"
    return (
        f"AUC({PAPER_LARGEST}) - AUC({PAPER_SMALLEST}) > 0 in {int((d > 0).sum())} of {d.size} {unit}, "
        f"mean {d.mean():+.3f} (Table 1, no intervals)"
    )


def _paper_dedup(ref: bool) -> str:
    dedup, natural = _table("1"), _table("12")
    rows = [r for r in natural.index if r in dedup.index]
    cols = [c for c in natural.columns if c in dedup.columns and (c[1] == REFERENCE) == ref]
    d = (natural.loc[rows, cols] - dedup.loc[rows, cols]).to_numpy().ravel()
    return (
        f"non-deduped Pythia above Pythia-dedup in {int((d > 0).sum())} of {d.size} (domain, size"
        f"{'' if ref else ', attack'}) cells, mean {d.mean():+.3f} (Tables 12 vs 1)"
    )


def _paper_best() -> str:
    row = _table("1").loc[PAPER_LARGEST]
    best = row.groupby(level=0).idxmax().map(lambda ix: ix[1])
    return (
        f"ref has the highest AUC at {PAPER_LARGEST} in {int((best == REFERENCE).sum())} of {best.size} domains "
        "(Table 1); 'marginal differences'"
    )


# ----------------------------------------------------------------------------- shared pieces


def effects_of(frame: pd.DataFrame) -> list[Effect]:
    """One :class:`Effect` per row of a paired-effects frame, labelled ``domain/attack``."""
    out = []
    for r in frame.itertuples():
        sd = None if r.seed_sd is None or not np.isfinite(r.seed_sd) else float(r.seed_sd)
        out.append(Effect(float(r.estimate), float(r.lo), float(r.hi), sd, int(r.n_seeds), f"{r.domain}/{r.attack}"))
    return out


def _count(k: int, noun: str) -> str:
    return f"{k} {noun}" + ("" if k == 1 else "s")


def _texts(frame: pd.DataFrame) -> str:
    sizes = frame.groupby(["n_members", "n_nonmembers"]).attack.unique()
    parts = [
        f"{m} + {n} texts" + (f" ({', '.join(map(str, a))})" if len(sizes) > 1 else "") for (m, n), a in sizes.items()
    ]
    return "; ".join(parts) + " per domain"


def _seeds(frame: pd.DataFrame) -> str:
    src = set(frame.seed_sd_from.fillna("none"))
    k = int(frame.n_seeds.max())
    if src == {"measured"}:
        return f"{k} seeds per model"
    if "measured" in src or "estimated" in src:
        return f"{k} seeds of the replicated sizes (seed sd estimated for the others)"
    return "1 seed (no replicates: paired bootstrap only)"


def _listing(effects: list[Effect], claimed_sign: int) -> str:
    if len(effects) <= MAX_LISTED:
        return "; ".join(e.describe() for e in effects)
    clear = [e for e in effects if e.sign() != 0]
    noise = [e.label for e in effects if e.sign() == 0]
    listed = "; ".join(e.describe() for e in clear) or "none clear"
    return listed + (f"; inside the noise: {', '.join(noise)}" if noise else "")


def _tally_verdict(
    claim: Claim, frame: pd.DataFrame, *, what: str, unit: str, missing: str, claimed_sign: int = 1
) -> Verdict:
    """The claim decided on the tally of ``frame``'s paired effects (:func:`effects_of`), one unit a
    row: ``what`` is measured per ``unit``; not tested (``missing`` says why) when the frame is empty."""
    if frame.empty:
        return claim.not_tested(missing, lab_value="-", n="0 units")
    effects = effects_of(frame)
    t = tally(effects, claimed_sign)
    seeds = set(frame.seed_sd_from.fillna("none"))
    rule = f"per {unit}, {what}, paired on the same texts; {TALLY_RULE}" + (
        f"; {SEED_NOTE}" if "estimated" in seeds else ""
    )
    direction = "up" if claimed_sign > 0 else "down"
    lab = (
        f"mean {np.mean([e.estimate for e in effects]):+.3f}; clearly {direction} (as claimed) in {t.n_for} "
        f"of {t.n}, clearly opposite in {t.n_against}"
    )
    n = f"{_count(t.n, unit)}; {_texts(frame)}; {_seeds(frame)}"
    return claim.tallied(t, f"{t.text()}. {_listing(effects, claimed_sign)}", rule, lab_value=lab, n=n)


def _split_by_reference(claim: Claim, effects: pd.DataFrame, reference: bool, difference: str, missing: str) -> Verdict:
    """A claim about the reference attack (one unit per domain) or about every other attack (one
    unit per (domain, attack) pair), decided on its rows of ``effects``: ``difference`` per unit."""
    rows = effects if effects.empty else effects[(effects.attack == REFERENCE) == reference]
    if reference:
        attacks, unit = "the reference attack", "domain"
    else:
        attacks, unit = "each attack but ref", "(domain, attack) pair"
    return _tally_verdict(claim, rows, what=f"{difference} of {attacks}", unit=unit, missing=missing)


# ----------------------------------------------------------------------------- rules

# Each claim is decided by the rule of its name in lower case (those about two models by
# model_difference); the paper's value is read from the transcribed tables when the rule runs.

NEAR_RANDOM = Claim(
    "MIAs perform near random (AUC < 0.6) in most domains",
    source="MIMIR §3.1, Table 1",
    key="mimir-3.1-near-random",
)

SIZE_TREND_REFERENCE = Claim(
    "Increasing model size slightly boosts MIA performance (reference-based attack)",
    source="MIMIR §3.1, Figure 1",
    key="mimir-3.1-size-ref",
)

SIZE_TREND_OTHER_ATTACKS = Claim(
    "Other attacks follow similar trends: AUC rises slightly with model size",
    source="MIMIR §3.1, Figure 12",
    key="mimir-3.1-size-others",
)

DEDUP_REFERENCE = Claim(
    "Deduplication of the training data decreases MIA performance (reference-based attack)",
    source="MIMIR §3.1, Figure 1",
    key="mimir-3.1-dedup-ref",
)

DEDUP_OTHER_ATTACKS = Claim(
    "Deduplication decreases MIA performance for the other attacks too",
    source="MIMIR §3.1, Figure 12",
    key="mimir-3.1-dedup-others",
)

BEST_ATTACK = Claim(
    "The reference-based attack performs best overall (marginal differences)",
    source="MIMIR §3.1, Table 1",
    key="mimir-3.1-best-attack",
)


def near_random(aucs: pd.DataFrame, model: str) -> Verdict:
    """MIMIR §3.1: MIAs perform near random (AUC < 0.6) in most domains. ``aucs``: one row per
    (domain, attack) of the largest target, with ``auc``, ``n_members``, ``n_nonmembers``."""
    claim = replace(NEAR_RANDOM, paper_value=_paper_near_random())
    if aucs.empty:
        return claim.not_tested("no AUCs", lab_value="-", n="0 AUCs")
    below = aucs.auc < NEAR_RANDOM_AUC
    frac = float(below.mean())
    v = REPRODUCED if frac >= NEAR_RANDOM_REPRODUCED else PARTLY if frac >= NEAR_RANDOM_PARTLY else NOT_REPRODUCED
    above = aucs[~below].sort_values("auc", ascending=False)
    listed = ", ".join(f"{r.domain}/{r.attack} {r.auc:.3f}" for r in above.itertuples()) or "none"
    n = (
        f"{len(aucs)} AUCs of {model} ({_count(aucs.domain.nunique(), 'domain')} x "
        f"{_count(aucs.attack.nunique(), 'attack')}); "
        f"{_texts(aucs)}; seed 0"
    )
    return claim.verdict(
        v,
        f"{frac:.0%} of {len(aucs)} (domain, attack) AUCs of {model} are below "
        f"{NEAR_RANDOM_AUC}; at or above it: {listed}",
        f"reproduced if >= {NEAR_RANDOM_REPRODUCED:.0%} of the (domain, attack) AUCs of the largest "
        f"target are below {NEAR_RANDOM_AUC} (the paper's bound); partly if >= "
        f"{NEAR_RANDOM_PARTLY:.0%}; else not reproduced",
        lab_value=f"{int(below.sum())} of {len(aucs)} below {NEAR_RANDOM_AUC} ({frac:.0%})",
        n=n,
    )


class ModelDifference(NamedTuple):
    """How a claim decided on AUC(model a) - AUC(model b) is read (:func:`model_difference`)."""

    reference: bool  # the reference attack's rows (one unit per domain), else every other attack's
    paper: Callable[[bool], str]  # the paper's value from its transcribed tables, given ``reference``
    missing: str  # why the claim is not tested when no row is left


# The four claims about two models (Figure 1: the reference attack; Figure 12: the others): the
# size trend (AUC(largest) - AUC(smallest)) and deduplication (AUC(natural twin) - AUC(deduplicated)).
MODEL_DIFFERENCES = {
    SIZE_TREND_REFERENCE.key: ModelDifference(True, _paper_size, "fewer than two target sizes, or no reference attack"),
    SIZE_TREND_OTHER_ATTACKS.key: ModelDifference(
        False, _paper_size, "fewer than two target sizes, or no attack besides ref"
    ),
    DEDUP_REFERENCE.key: ModelDifference(True, _paper_dedup, "no natural-data twin among these models"),
    DEDUP_OTHER_ATTACKS.key: ModelDifference(False, _paper_dedup, "no natural-data twin among these models"),
}


def model_difference(claim: Claim, effects: pd.DataFrame, *, a: str, b: str) -> Verdict:
    """MIMIR §3.1, Figures 1 and 12: ``claim`` (one of :data:`MODEL_DIFFERENCES`: a larger model, or
    the natural-data twin, has the higher AUC) decided on ``effects``, AUC(model ``a``) - AUC(model
    ``b``) per (domain, attack) on the same texts: on the ``ref`` rows for the reference attack's
    claims, on every other attack's rows for the others."""
    how = MODEL_DIFFERENCES[claim.key]
    return _split_by_reference(
        replace(claim, paper_value=how.paper(how.reference)),
        effects,
        how.reference,
        f"AUC({a}) - AUC({b})",
        missing=how.missing,
    )


def best_attack(effects: pd.DataFrame, *, model: str) -> Verdict:
    """MIMIR §3.1: the reference-based attack performs best overall, by marginal differences.
    ``effects``: AUC(ref) - AUC(other attack) against the largest target, per (domain, other attack)."""
    return _tally_verdict(
        replace(BEST_ATTACK, paper_value=_paper_best()),
        effects,
        what=f"AUC(ref) - AUC(other attack) against {model}",
        unit="(domain, other attack) pair",
        missing="no reference attack, or no other attack, in this run",
    )


# ----------------------------------------------------------------------------- attacks after the paper
# No claim of the paper concerns them: these rules only read the chapter's second table.

ABOVE, BELOW, WITHIN = "above LOSS", "below LOSS", "within the noise"


def versus_loss(lo: float, hi: float) -> str:
    """Where an attack stands against LOSS on the same texts, from the paired 95% interval of
    AUC(attack) - AUC(LOSS): above when it lies above zero, below when below, else within the noise."""
    if lo > 0:
        return ABOVE
    if hi < 0:
        return BELOW
    return WITHIN


def worth_its_cost(readings: pd.Series) -> str:
    """When an extra-cost attack is worth running, from its per-domain :func:`versus_loss` readings
    against the largest target: where it is clearly above LOSS, which costs no extra pass."""
    above = sorted(readings.index[readings == ABOVE])
    if not above:
        return (
            f"nowhere in this run: it is never clearly above LOSS ({readings.size} domains), which needs no extra pass"
        )
    where = ", ".join(map(str, above))
    return f"only in {where} ({len(above)} of {readings.size} domains), where it is clearly above LOSS"
