"""Verdicts of the main-results chapter (MIMIR §3.1: Table 1, Figures 1 and 12).

Six claims: near-random AUCs (:func:`near_random`, each AUC read by its bootstrap interval); the
size trend of the reference attack (Figure 1) and of the other attacks (Figure 12); deduplication's
effect, likewise split (those four decided by one rule, :func:`model_difference`); and the reference
attack as the best one. The units of every claim about "the attacks" are MIMIR's five attacks
(:data:`PAPER_ATTACKS`) scored on the domain's full benchmark (:func:`is_unit`); the neighbourhood
attack on its ``ne_samples`` subset and any other attack (Min-K%++) are reported beside them. The
comparative rules read a frame of paired effects (one row per unit: ``domain``, ``attack``,
``estimate``, ``lo``, ``hi``, ``seed_sd``, ``n_seeds``, ``seed_sd_from``, ``seed_sd_imputed_for``,
``n_members``, ``n_nonmembers``; see ``experiments.main_scores``) and decide by
:func:`mimirlib.verdicts.decide_pooled` (the tally of units clear one by one; when it is
inconclusive, the pooled mean against its se: these claims are about average effects). The
paper's numbers, and its effect sizes in AUC, come from its transcribed tables.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace
from typing import NamedTuple

import numpy as np
import pandas as pd

from mimirlib.display.paper_tables import paper_table
from mimirlib.display.report import count_of, count_span
from mimirlib.verdicts import (
    NOT_PAPER_ATTACK,
    PAPER_ATTACKS,
    POOLED_RULE,
    SEED_MEAN_BAR,
    TALLY_RULE,
    Claim,
    Effect,
    Tally,
    Verdict,
    tally,
    tally_outcomes,
)

REFERENCE = "ref"  # the reference-based attack's name among the shown attacks (and in the paper's tables)
NEIGHBOURHOOD = "ne"  # the neighbourhood attack's name (scored on a subset of the texts where that is asked)

# The paper's own bound for "near random": "MIA methods perform near random (<.6) in most domains"
# (Table 1 caption).
NEAR_RANDOM_AUC = 0.6
BELOW_BOUND, ABOVE_BOUND, UNDECIDED = "below", "at or above", "undecided"  # an AUC's near_random_reading
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
AVERAGED_NOTE = (
    "where both models (or the one model of an attack comparison) have r seed replicates, a unit's effect is "
    f"the mean of the r seeds' paired differences (one bootstrap over the texts for all seeds) and {SEED_MEAN_BAR}"
)
CORRELATED_NOTE = (
    "the units share their texts and models (every attack reads the same texts), so they are correlated, "
    "not independent: the tally counts them one by one, and the power reading pools their standard errors as "
    "fully correlated within a domain (root mean square, never narrower than one unit's) and, for the part "
    "from the texts, independent across domains (each domain's texts are their own sample; the seed part, "
    "the same models, stays fully correlated)"
)
BESIDE_NOTE = (
    "only MIMIR's five attacks (LOSS, reference, zlib, Min-K%, neighbourhood) scored on the domain's full benchmark "
    "are units; an attack scored on fewer texts (the neighbourhood attack on its ne_samples pairs, whose few texts "
    "would weigh as much as a full benchmark in the pooled mean and its se if it were a unit) and any other attack "
    "(Min-K%++, published after the paper) are reported beside them, neither tallied nor pooled"
)
NEAR_RANDOM_RULE = (
    f"per (domain, attack) AUC of the largest target: below {NEAR_RANDOM_AUC} when its 95% bootstrap "
    f"interval's upper bound < {NEAR_RANDOM_AUC}, at or above when its lower bound >= {NEAR_RANDOM_AUC}, else "
    f"undecided. Units: the AUCs; {BESIDE_NOTE}; {tally_outcomes('the units', 'are below', 'at or above')}; "
    f"{CORRELATED_NOTE}. Power: each unit's margin below "
    f"{NEAR_RANDOM_AUC} (its interval's se) against the paper's margin, {NEAR_RANDOM_AUC} minus the median AUC "
    f"at 12B in Table 1"
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


def _paper_margin() -> float:
    """How far below the bound the paper's AUCs sit: the bound minus the median AUC at 12B (Table 1),
    the margin an AUC interval must clear to show "below" (the near-random rule's power reading)."""
    return round(float(NEAR_RANDOM_AUC - _table("1").loc[PAPER_LARGEST].median()), 3)


def _paper_size(ref: bool) -> tuple[str, float]:
    """(paper value, paper effect): AUC(12B) - AUC(160M) in Table 1, the reference attack's or the others'."""
    t = _table("1")
    d = t.loc[PAPER_LARGEST] - t.loc[PAPER_SMALLEST]
    d = d[(d.index.get_level_values(1) == REFERENCE) == ref]
    unit = "domains" if ref else "(domain, attack) pairs"
    mean = round(float(d.mean()), 3)
    return (
        f"AUC({PAPER_LARGEST}) - AUC({PAPER_SMALLEST}) > 0 in {int((d > 0).sum())} of {d.size} {unit}, "
        f"mean {mean:+.3f} (Table 1, no intervals)",
        mean,
    )


def _paper_dedup(ref: bool) -> tuple[str, float]:
    """(paper value, paper effect): non-deduplicated Pythia (Table 12) minus Pythia-dedup (Table 1)."""
    dedup, natural = _table("1"), _table("12")
    rows = [r for r in natural.index if r in dedup.index]
    cols = [c for c in natural.columns if c in dedup.columns and (c[1] == REFERENCE) == ref]
    d = (natural.loc[rows, cols] - dedup.loc[rows, cols]).to_numpy().ravel()
    mean = round(float(d.mean()), 3)
    return (
        f"non-deduped Pythia above Pythia-dedup in {int((d > 0).sum())} of {d.size} (domain, size"
        f"{'' if ref else ', attack'}) cells, mean {mean:+.3f} (Tables 12 vs 1)",
        mean,
    )


def _paper_best() -> tuple[str, float]:
    """(paper value, paper effect): how often ref is best at 12B, and its mean margin over the others."""
    row = _table("1").loc[PAPER_LARGEST]
    best = row.groupby(level=0).idxmax().map(lambda ix: ix[1])
    margins = [row[(d, REFERENCE)] - row[(d, a)] for d, a in row.index if a != REFERENCE]
    mean = round(float(np.mean(margins)), 3)
    return (
        f"ref has the highest AUC at {PAPER_LARGEST} in {int((best == REFERENCE).sum())} of {best.size} domains "
        f"(Table 1); AUC(ref) - AUC(other) {mean:+.3f} on average over {len(margins)} (domain, other attack) "
        "cells; 'marginal differences'",
        mean,
    )


# ----------------------------------------------------------------------------- shared pieces


def effects_of(frame: pd.DataFrame) -> list[Effect]:
    """One :class:`Effect` per row of a paired-effects frame, labelled ``domain/attack``."""
    out = []
    for r in frame.itertuples():
        sd = None if r.seed_sd is None or not np.isfinite(r.seed_sd) else float(r.seed_sd)
        k = getattr(r, "averaged", 1)
        k = 1 if k is None or not np.isfinite(k) else int(k)
        label = f"{r.domain}/{r.attack}"
        out.append(Effect(float(r.estimate), float(r.lo), float(r.hi), sd, int(r.n_seeds), label, k, str(r.domain)))
    return out


def is_paper_attack(attacks: pd.Series) -> pd.Series:
    """Whether each attack is one of MIMIR's five (:data:`PAPER_ATTACKS`), the units of its claims."""
    return attacks.isin(PAPER_ATTACKS)


# An attack reads its domain's full benchmark with at least this share of the best-covered attack's texts there: a
# subset asked for (ne's 25 + 25 of 236-300 a side) is far below it, a few texts lost to a missing score are not.
FULL_BENCHMARK_SHARE = 0.5


def is_unit(frame: pd.DataFrame) -> pd.Series:
    """Whether each row (``domain``, ``attack``, ``n_members``, ``n_nonmembers``) is a unit of a claim
    (:data:`BESIDE_NOTE`): one of MIMIR's five attacks scored on its domain's full benchmark, at least
    :data:`FULL_BENCHMARK_SHARE` of the texts of the frame's best-covered attack in that domain (the
    neighbourhood attack on its ``ne_samples`` pairs is not). Give it every attack's rows (the reference
    attack's too) before keeping some: a frame of subset-scored rows alone has nothing to compare them with."""
    if frame.empty:
        return pd.Series(dtype=bool, index=frame.index)
    texts = frame.n_members + frame.n_nonmembers
    full = texts >= FULL_BENCHMARK_SHARE * texts.groupby(frame.domain).transform("max")
    return is_paper_attack(frame.attack) & full


def _why_beside(attack: str, rows: pd.DataFrame) -> str:
    """Why ``attack`` (its ``rows``) is reported beside the units: fewer texts, or not one of MIMIR's five."""
    if attack in PAPER_ATTACKS:
        return f"on {_texts(rows).removesuffix(' per domain')} per domain, fewer than the full benchmark"
    return NOT_PAPER_ATTACK


def _texts(frame: pd.DataFrame) -> str:
    """The texts behind ``frame``'s rows in a few words: members + non-members per domain as their span over
    the domains (``"236-300 + 236-300 texts per domain"``), the attacks named only where some were scored
    on other texts than the rest (``"150 + 150 texts (loss, zlib); 25 + 25 texts (ne) per domain"``)."""
    groups: dict[str, list[str]] = {}
    for attack, rows in frame.groupby("attack", sort=False):
        span = f"{count_span(rows.n_members, sep='-')} + {count_span(rows.n_nonmembers, sep='-')} texts"
        groups.setdefault(span, []).append(str(attack))
    parts = [span + (f" ({', '.join(a)})" if len(groups) > 1 else "") for span, a in groups.items()]
    return "; ".join(parts) + " per domain"


def _units(labels: list[str]) -> str:
    return ", ".join(labels) if len(labels) <= MAX_LISTED else f"{', '.join(labels[:MAX_LISTED])}, ..."


def _seeds(frame: pd.DataFrame) -> str:
    """Which units' seed sd is measured over seed replicates and which is imputed (:data:`SEED_NOTE`),
    by name, and for which models (the ``seed_sd_imputed_for`` column, where the frame has it)."""
    src = frame.seed_sd_from.fillna("none")
    k, n = int(frame.n_seeds.max()), len(frame)
    if set(src) == {"none"}:
        return "1 seed (no replicates: paired bootstrap only)"
    labels = (frame.domain.astype(str) + "/" + frame.attack.astype(str)).to_numpy()
    measured, imputed = list(labels[(src == "measured").to_numpy()]), list(labels[(src == "estimated").to_numpy()])
    averaged = frame.get("averaged", pd.Series(1, index=frame.index)).fillna(1)
    mean = f"; effects are the mean of {int(averaged.max())} seeds" if (averaged > 1).any() else ""
    if not imputed:
        return f"seed sd measured for all {n} units ({k} seeds of each model){mean}"
    models = sorted(
        {m for x in frame.get("seed_sd_imputed_for", pd.Series(dtype=object)).dropna() for m in x.split(", ") if m}
    )
    whose = f" ({', '.join(models)} without seed replicates)" if models else ""
    head = f"seed sd imputed{whose} for " + ("all " if len(imputed) == n else "") + f"{len(imputed)} of {n} units"
    parts = [head + ("" if len(imputed) == n else f" ({_units(imputed)})")]
    if measured:
        parts.append(f"measured for {len(measured)} ({_units(measured)})")
    none = n - len(measured) - len(imputed)
    if none:
        parts.append(f"none for {none}")
    return "; ".join(parts) + f"; {k} seeds of the replicated sizes{mean}"


def _listing(effects: list[Effect], claimed_sign: int) -> str:
    if len(effects) <= MAX_LISTED:
        return "; ".join(e.describe() for e in effects)
    clear = [e for e in effects if e.sign() != 0]
    noise = [e.label for e in effects if e.sign() == 0]
    listed = "; ".join(e.describe() for e in clear) or "none clear"
    return listed + (f"; inside the noise: {', '.join(noise)}" if noise else "")


def _beside(frame: pd.DataFrame, claimed_sign: int) -> str:
    """The effects of the attacks that are not units (:data:`BESIDE_NOTE`), one line per attack."""
    lines = []
    for attack, rows in frame.groupby("attack", sort=False):
        es = effects_of(rows)
        t = tally(es, claimed_sign)
        lines.append(
            f" Beside, not tallied ({attack}, {_why_beside(attack, rows)}): {t.text()}, mean "
            f"{np.mean([e.estimate for e in es]):+.3f}. {_listing(es, claimed_sign)}."
        )
    return "".join(lines)


def _tally_verdict(
    claim: Claim,
    frame: pd.DataFrame,
    *,
    what: str,
    unit: str,
    missing: str,
    claimed_sign: int = 1,
    unit_rows: pd.Series | None = None,
) -> Verdict:
    """The claim decided on the tally of the paired effects of ``frame``'s units (``unit_rows``, by default
    :func:`is_unit` of ``frame``: MIMIR's five attacks on the full benchmark; :func:`effects_of`), one unit a
    row, the other rows reported beside: ``what`` is measured per ``unit``; not tested (``missing`` says
    why, and what is beside) when no unit is left."""
    unit_rows = is_unit(frame) if unit_rows is None else unit_rows
    units, others = frame[unit_rows], frame[~unit_rows]
    if units.empty:
        return claim.not_tested(missing + _beside(others, claimed_sign), lab_value="-", n="0 units")
    effects = effects_of(units)
    t = tally(effects, claimed_sign)
    seeds = set(units.seed_sd_from.fillna("none"))
    rule = (
        f"per {unit}, {what}, paired on the same texts; {BESIDE_NOTE}; {TALLY_RULE}; {POOLED_RULE}; {CORRELATED_NOTE}"
        + (f"; {SEED_NOTE}" if "estimated" in seeds else "")
    )
    if any(e.averaged > 1 for e in effects):
        rule += f"; {AVERAGED_NOTE}"
    direction = "up" if claimed_sign > 0 else "down"
    lab = (
        f"mean {np.mean([e.estimate for e in effects]):+.3f}; clearly {direction} (as claimed) in {t.n_for} "
        f"of {t.n}, clearly opposite in {t.n_against}"
    )
    n = f"{count_of(t.n, unit)}; {_texts(units)}; {_seeds(units)}" + (
        f"; {count_of(len(others), unit)} beside" if len(others) else ""
    )
    evidence = f"{t.text()}. {_listing(effects, claimed_sign)}."
    return claim.tallied(t, evidence, rule, _beside(others, claimed_sign), lab_value=lab, n=n)


def _split_by_reference(claim: Claim, effects: pd.DataFrame, reference: bool, difference: str, missing: str) -> Verdict:
    """A claim about the reference attack (one unit per domain) or about every other attack (one
    unit per (domain, attack) pair), decided on its rows of ``effects``: ``difference`` per unit."""
    keep = (effects.attack == REFERENCE) == reference if not effects.empty else pd.Series(dtype=bool)
    units = is_unit(effects)[keep]  # read on every attack's rows: the reference attack's set the full benchmark too
    rows = effects[keep]
    if reference:
        attacks, unit = "the reference attack", "domain"
    else:
        attacks, unit = "each of MIMIR's attacks but ref", "(domain, attack) pair"
    return _tally_verdict(claim, rows, what=f"{difference} of {attacks}", unit=unit, missing=missing, unit_rows=units)


# ----------------------------------------------------------------------------- rules

# Each claim is decided by the rule of its name in lower case (those about two models by
# model_difference); the paper's value and effect are read from the transcribed tables when the rule runs.

NEAR_RANDOM = Claim(
    "MIAs perform near random (AUC < 0.6) in most domains",
    source="MIMIR §3.1, Table 1",
    key="mimir-3.1-near-random",
)

SIZE_TREND_REFERENCE = Claim(
    "Increasing model size slightly boosts MIA performance (reference-based attack)",
    source="MIMIR §3.1, Figure 1",
    key="mimir-3.1-size-ref",
    average=True,
)

SIZE_TREND_OTHER_ATTACKS = Claim(
    "Other attacks follow similar trends: AUC rises slightly with model size",
    source="MIMIR §3.1, Figure 12",
    key="mimir-3.1-size-others",
    average=True,
)

DEDUP_REFERENCE = Claim(
    "Deduplication of the training data decreases MIA performance (reference-based attack)",
    source="MIMIR §3.1, Figure 1",
    key="mimir-3.1-dedup-ref",
    average=True,
)

DEDUP_OTHER_ATTACKS = Claim(
    "Deduplication decreases MIA performance for the other attacks too",
    source="MIMIR §3.1, Figure 12",
    key="mimir-3.1-dedup-others",
    average=True,
)

BEST_ATTACK = Claim(
    "The reference-based attack performs best overall (marginal differences)",
    source="MIMIR §3.1, Table 1",
    key="mimir-3.1-best-attack",
    average=True,
)


def near_random_reading(lo: float, hi: float) -> str:
    """An AUC against the paper's bound, from its 95% bootstrap interval: :data:`BELOW_BOUND` when the
    upper bound is below :data:`NEAR_RANDOM_AUC`, :data:`ABOVE_BOUND` when the lower bound is at or
    above it, else :data:`UNDECIDED`."""
    if hi < NEAR_RANDOM_AUC:
        return BELOW_BOUND
    if lo >= NEAR_RANDOM_AUC:
        return ABOVE_BOUND
    return UNDECIDED


def near_random_units(aucs: pd.DataFrame) -> pd.DataFrame:
    """``aucs`` with ``reading`` (:func:`near_random_reading`) and ``tallied``: a unit (:func:`is_unit`,
    one of MIMIR's five attacks scored on its domain's full benchmark)."""
    if aucs.empty:
        return aucs.assign(reading=pd.Series(dtype=object), tallied=pd.Series(dtype=bool))
    readings = [near_random_reading(lo, hi) for lo, hi in zip(aucs.auc_lo, aucs.auc_hi)]
    return aucs.assign(reading=readings, tallied=is_unit(aucs).to_numpy())


def _auc_line(rows: pd.DataFrame) -> str:
    return "; ".join(f"{r.domain}/{r.attack} {r.auc:.3f} [{r.auc_lo:.3f}, {r.auc_hi:.3f}]" for r in rows.itertuples())


def _near_random_beside(units: pd.DataFrame) -> str:
    """One line per attack that is not a unit: the subset-scored paper attacks, then the others."""
    lines = []
    for attack, rows in units[~units.tallied].groupby("attack", sort=False):
        counts = rows.reading.value_counts()
        lines.append(
            f" Beside, not tallied ({attack}, {_why_beside(attack, rows)}): below in {counts.get(BELOW_BOUND, 0)} "
            f"of {len(rows)}, at or above in {counts.get(ABOVE_BOUND, 0)}. {_auc_line(rows)}."
        )
    return "".join(lines)


def near_random(aucs: pd.DataFrame, model: str) -> Verdict:
    """MIMIR §3.1: MIAs perform near random (AUC < 0.6) in most domains (:data:`NEAR_RANDOM_RULE`).
    ``aucs``: one row per (domain, attack) of the largest target, with ``auc``, ``auc_lo``, ``auc_hi``
    (its 95% bootstrap interval), ``n_members``, ``n_nonmembers``."""
    claim = replace(NEAR_RANDOM, paper_value=_paper_near_random(), paper_effect=_paper_margin())
    if aucs.empty:
        return claim.not_tested("no AUCs", lab_value="-", n="0 AUCs")
    units = near_random_units(aucs)
    tallied = units[units.tallied]
    if tallied.empty:
        return claim.not_tested("no AUC of MIMIR's five attacks on a full benchmark", lab_value="-", n="0 AUCs")
    counts = tallied.reading.value_counts()
    margins = [  # 0.6 - AUC per unit: clear for exactly when below, against when at or above (but on the bound)
        Effect(
            NEAR_RANDOM_AUC - r.auc,
            NEAR_RANDOM_AUC - r.auc_hi,
            NEAR_RANDOM_AUC - r.auc_lo,
            label=f"{r.domain}/{r.attack}",
            group=str(r.domain),
        )
        for r in tallied.itertuples()
    ]
    t = Tally(counts.get(BELOW_BOUND, 0), counts.get(ABOVE_BOUND, 0), counts.get(UNDECIDED, 0), tuple(margins))
    not_below = tallied[tallied.reading != BELOW_BOUND].sort_values("auc", ascending=False)
    n = (
        f"{t.n} AUCs of {model} ({count_of(tallied.domain.nunique(), 'domain')} x "
        f"{count_of(tallied.attack.nunique(), 'attack')}); {_texts(tallied)}; seed 0; "
        f"{count_of(len(units) - t.n, 'AUC')} beside"
    )
    return claim.tallied(
        t,
        f"of {t.n} (domain, attack) AUCs of {model} (MIMIR's attacks on every text), below {NEAR_RANDOM_AUC} "
        f"with their whole interval: {t.n_for}, at or above: {t.n_against}, undecided: {t.n_noise}; not below: "
        f"{_auc_line(not_below) or 'none'}.{_near_random_beside(units)}",
        NEAR_RANDOM_RULE,
        lab_value=f"{t.n_for} of {t.n} below {NEAR_RANDOM_AUC}, {t.n_against} at or above, {t.n_noise} undecided",
        n=n,
    )


class ModelDifference(NamedTuple):
    """How a claim decided on AUC(model a) - AUC(model b) is read (:func:`model_difference`)."""

    reference: bool  # the reference attack's rows (one unit per domain), else every other attack's
    paper: Callable[[bool], tuple[str, float]]  # (paper value, paper effect) from the tables, given ``reference``
    missing: str  # why the claim is not tested when no row is left


# The four claims about two models (Figure 1: the reference attack; Figure 12: the others): the
# size trend (AUC(largest) - AUC(smallest)) and deduplication (AUC(natural twin) - AUC(deduplicated)).
MODEL_DIFFERENCES = {
    SIZE_TREND_REFERENCE.key: ModelDifference(True, _paper_size, "fewer than two target sizes, or no reference attack"),
    SIZE_TREND_OTHER_ATTACKS.key: ModelDifference(
        False, _paper_size, "fewer than two target sizes, or none of MIMIR's attacks besides ref"
    ),
    DEDUP_REFERENCE.key: ModelDifference(True, _paper_dedup, "no natural-data twin among these models"),
    DEDUP_OTHER_ATTACKS.key: ModelDifference(False, _paper_dedup, "no natural-data twin among these models"),
}


def model_difference(claim: Claim, effects: pd.DataFrame, *, a: str, b: str) -> Verdict:
    """MIMIR §3.1, Figures 1 and 12: ``claim`` (one of :data:`MODEL_DIFFERENCES`: a larger model, or
    the natural-data twin, has the higher AUC) decided on ``effects``, AUC(model ``a``) - AUC(model
    ``b``) per (domain, attack) on the same texts: on the ``ref`` rows for the reference attack's
    claims, on the rows of MIMIR's other attacks for the others (:func:`is_unit`: the neighbourhood attack on
    fewer texts, and Min-K%++, beside). The paper's effect
    is the mean of the same difference in its tables."""
    how = MODEL_DIFFERENCES[claim.key]
    value, effect = how.paper(how.reference)
    return _split_by_reference(
        replace(claim, paper_value=value, paper_effect=effect),
        effects,
        how.reference,
        f"AUC({a}) - AUC({b})",
        missing=how.missing,
    )


def best_attack(effects: pd.DataFrame, *, model: str) -> Verdict:
    """MIMIR §3.1: the reference-based attack performs best overall, by marginal differences.
    ``effects``: AUC(ref) - AUC(other attack) against the largest target, per (domain, other attack);
    MIMIR's other four attacks scored on every text are the units (:func:`is_unit`); the neighbourhood
    attack on its subset and Min-K%++ are reported beside."""
    value, effect = _paper_best()
    return _tally_verdict(
        replace(BEST_ATTACK, paper_value=value, paper_effect=effect),
        effects,
        what=f"AUC(ref) - AUC(other attack) against {model}",
        unit="(domain, other attack) pair",
        missing="no reference attack, or none of MIMIR's other attacks, in this run",
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
