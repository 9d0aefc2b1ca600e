"""Verdict rules of the n-gram overlap chapter (MIMIR §3.2.2, Table 2, Figure 3, appendix B.2).

Four claims: non-members overlap the training data a lot (:func:`overlap_is_high`, decided per
domain with an interval over texts, each lab domain beside the Pile domain it plays); non-members
redrawn to <= 20% 7-gram overlap are easier to tell from members (:func:`low_overlap_is_easier`);
that redraw drifts towards distribution inference (:func:`redraw_drifts_towards_distribution_inference`);
the reference attack gains less from it than the others (:func:`reference_gains_less`).

The last three compare the two benchmark splits, which share their members and differ in their
non-members. They rest only on *informative* domains (:func:`informative_domains`): those where the
redraw actually lowered the non-members' 7-gram overlap by :data:`MIN_OVERLAP_DROP`. In a domain
whose natural non-members were already below 20%, the redraw is just another draw from the same
population, so whatever its AUC does says nothing about overlap; such domains are listed as
"not informative for this claim". Each comparison is a paired effect per (domain, attack)
(members shared, non-members resampled independently), counted with :func:`verdicts.tally` and
decided by :func:`verdicts.decide_tally` (``inconclusive`` when most effects are inside the noise).
"""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Callable, Mapping, Sequence

import pandas as pd

from mimirlib.display.paper_tables import paper_table
from mimirlib.display.report import count_of, count_span
from mimirlib.lab.corpus import PLAYS
from mimirlib.verdicts import (
    NOT_PAPER_ATTACK,
    PAPER_ATTACKS,
    NOT_REPRODUCED,
    NOT_TESTED,
    tally_outcomes,
    TALLY_RULE,
    Claim,
    Effect,
    Tally,
    Verdict,
    decide_tally,
    tally,
)

# A domain's non-member overlap is "high" from this mean 7-gram overlap: the lowest domain the
# paper names, Wikipedia, has 32.5%, and its introduction speaks of "over 30%".
HIGH_OVERLAP = 0.30
# MIMIR §3.2.2 (Figure 3): the mean 7-gram overlap of the Pile's non-members per domain, as the
# text prints it. Shown beside the lab domain that plays each (mimirlib.lab.corpus.PLAYS).
PAPER_OVERLAP = {
    "Wikipedia": 0.325,
    "ArXiv": 0.393,
    "PubMed Central": 0.410,
    "FreeLaw": 0.623,
    "DM Mathematics": 0.728,
    "GitHub": 0.769,
}
# A domain whose Pile counterpart the paper gives no value for (the lab's changelog plays
# HackerNews) is shown beside the paper's lowest value, the most lenient reading of the claim.
NO_COUNTERPART = min(PAPER_OVERLAP, key=PAPER_OVERLAP.get)
HIGH, LOW, UNDECIDED = "high", "low", "undecided"  # a domain's reading (overlap_reading)

OVERLAP_RULE = (
    f"per domain: the mean exact 7-gram overlap of its natural non-members with its 95% percentile "
    f"bootstrap interval over the texts; high if the interval's lower bound >= {HIGH_OVERLAP:.2f} (the "
    f"floor of the paper's range, 32.5-76.9%, and its 'over 30%'), low if its upper bound < "
    f"{HIGH_OVERLAP:.2f}, else undecided; the paper's value for the Pile domain the lab domain plays is "
    f"shown beside (for one Figure 3 does not give, the paper's lowest, {NO_COUNTERPART} "
    f"{PAPER_OVERLAP[NO_COUNTERPART]:.1%}). Over the domains: " + tally_outcomes("domains", "are high", "low")
)
# Informative about the <= 20% claims: the redraw lowered the non-members' mean exact 7-gram overlap by
# this much (the paper's Table 2 domains fall by 12 points or more, from 32-77% to at most 20%).
MIN_OVERLAP_DROP = 0.10

# The paper's attacks are the units of the claims about "existing MIAs"; Min-K%++ is reported beside.
PAPER_RULE = (
    "only MIMIR's five attacks (LOSS, reference, zlib, Min-K%, neighbourhood; Table 2's rows) are units; "
    "any other attack (Min-K%++, published after the paper) is reported beside, not tallied"
)

INFORMATIVE_RULE = (
    f"only domains where the redraw lowered the non-members' mean 7-gram overlap by >= "
    f"{MIN_OVERLAP_DROP:.2f} count; the others are not informative for this claim"
)

# Table 2's spelling of the domains the appendix names for the reference attack's smaller gain
# ("for domains such as GitHub or PubMed Central").
REF_GAIN_DOMAINS = ("Github", "PubMed Central")

# The chapter's claims, each decided by the rule of the same name in lower case; the paper's
# values of the last three are read from the transcribed Table 2 when the rule runs.

OVERLAP_IS_HIGH = Claim(
    "Non-members have high n-gram overlap with the training data (mean 7-gram overlap 32.5-76.9% across the Pile's "
    "domains)",
    source="MIMIR §3.2.2, Figure 3",
    key="mimir-3.2.2-overlap",
    paper_value="mean 7-gram overlap: " + ", ".join(f"{d} {x:.1%}" for d, x in PAPER_OVERLAP.items()),
)

LOW_OVERLAP_IS_EASIER = Claim(
    "Non-members with <= 20% 7-gram overlap are more distinguishable by existing MIAs",
    source="MIMIR §3.2.2, Table 2",
    key="mimir-3.2.2-low-overlap",
    average=True,
)

REDRAW_DRIFTS_TOWARDS_DISTRIBUTION_INFERENCE = Claim(
    "Resampling non-members to low overlap introduces an explicit drift between member and non-member distributions "
    "(closer to distribution inference)",
    source="MIMIR §3.2.2",
    key="mimir-3.2.2-drift",
    paper_value="stated, not measured (the paper ran no model-free baseline)",
    average=True,
)

REFERENCE_GAINS_LESS = Claim(
    "Reference-based MIAs have a noticeably smaller increase in performance than the others under n-gram overlap "
    "thresholding",
    source="MIMIR appendix B.2, Table 2",
    key="mimir-b.2-ref-gains-less",
    average=True,
)


# ----------------------------------------------------------------------------- the paper's numbers


@functools.lru_cache(maxsize=None)
def _table2() -> pd.DataFrame:
    return paper_table("mimir", "2")


def paper_gains() -> pd.DataFrame:
    """Table 2's AUC gains, AUC(7-gram <= 20%) - AUC(Orig): attacks (rows) by domains (columns)."""
    t = _table2()
    return t.xs("7-gram", axis=1, level="column") - t.xs("Orig", axis=1, level="column")


def _auc(x: float) -> str:
    return f"{x:.3f}".removeprefix("0")


def _signed(x: float) -> str:
    return ("+" if x >= 0 else "-") + _auc(abs(x))


def paper_low_overlap_gain() -> tuple[str, float]:
    """(paper value, paper effect) of :data:`LOW_OVERLAP_IS_EASIER`: the mean gain over Table 2's cells."""
    t, g = _table2(), paper_gains()
    cells = g.to_numpy().ravel()
    text = (
        f"AUC rises in {int((cells > 0).sum())} of {cells.size} (domain, attack) cells, mean gain "
        f"{cells.mean():+.3f} (Table 2, Pythia-dedup-12B, no intervals), e.g. Wikipedia LOSS "
        f"{_auc(t.loc['loss', ('Wikipedia', 'Orig')])} -> {_auc(t.loc['loss', ('Wikipedia', '7-gram')])}, "
        f"GitHub zlib {_auc(t.loc['zlib', ('Github', 'Orig')])} -> {_auc(t.loc['zlib', ('Github', '7-gram')])}"
    )
    return text, round(float(cells.mean()), 3)


def paper_ref_gain_gap() -> tuple[str, float]:
    """(paper value, paper effect) of :data:`REFERENCE_GAINS_LESS`: gain(other) - gain(ref) averaged
    over the (domain, other attack) cells of the domains the appendix names (:data:`REF_GAIN_DOMAINS`)."""
    g = paper_gains()
    parts, gaps = [], []
    for d in REF_GAIN_DOMAINS:
        ref, others = g.loc["ref", d], g[d].drop("ref")
        gaps.extend(others - ref)
        name = "GitHub" if d == "Github" else d
        parts.append(f"{name}: ref {_signed(ref)} vs others {_signed(others.min())} to {_signed(others.max())}")
    mean = float(sum(gaps) / len(gaps))
    return (
        "; ".join(parts) + f"; gain(other) - gain(ref) {mean:+.3f} on average over these {len(gaps)} "
        f"(domain, other attack) cells (Table 2)",
        round(mean, 3),
    )


# ----------------------------------------------------------------------------- shared pieces


def informative_domains(shift: pd.DataFrame) -> pd.Series:
    """Domain -> whether the redraw lowered the non-members' mean 7-gram overlap by at least
    :data:`MIN_OVERLAP_DROP`. ``shift`` has one row per domain with a low-overlap split and
    columns ``domain`` and ``overlap_drop`` (natural mean minus low-overlap mean)."""
    if shift.empty:
        return pd.Series(dtype=bool)
    return pd.Series((shift["overlap_drop"] >= MIN_OVERLAP_DROP).to_numpy(), index=shift["domain"].to_numpy())


def informative_names(shift: pd.DataFrame) -> list[str]:
    """The informative domains (:func:`informative_domains`), in order."""
    info = informative_domains(shift)
    return [d for d in info.index if info[d]]


def _split_domains(shift: pd.DataFrame, effects: Mapping[str, Sequence[Effect]]):
    info = informative_domains(shift)
    used = [d for d in info.index if info[d] and effects.get(d)]
    drop = dict(zip(shift["domain"], shift["overlap_drop"])) if not shift.empty else {}
    skipped = [f"{d} (drop {drop[d]:+.3f})" for d in info.index if not info[d]]
    missing = [d for d in info.index if info[d] and not effects.get(d)]
    note = ("; not informative for this claim: " + ", ".join(skipped)) if skipped else ""
    note += ("; informative but not scored: " + ", ".join(missing)) if missing else ""
    return used, note


def _untestable(claim: Claim, shift: pd.DataFrame, note: str, rule: str) -> Verdict:
    why = f"no informative domain with paired scores (overlap drop >= {MIN_OVERLAP_DROP:.2f}){note}"
    return claim.verdict(
        NOT_TESTED,
        why,
        rule,
        lab_value="no informative domain",
        n=f"0 informative of {count_of(len(shift), 'domain')} with a low-overlap split",
    )


def _sizes(shift: pd.DataFrame, used: Sequence[str], per_domain: str, effects) -> str:
    rows = shift.set_index("domain").loc[list(used)]
    seeds = max((e.n_seeds for d in used for e in effects[d]), default=1)
    n_dom = len(shift)
    return (
        f"{len(used)} informative of {count_of(n_dom, 'domain')} with a low-overlap split x {per_domain}; "
        f"{count_span(rows['n_members'], sep='-')} shared members, "
        f"{count_span(rows['n_natural_nonmembers'], sep='-')} natural and "
        f"{count_span(rows['n_low_nonmembers'], sep='-')} low-overlap non-members per domain; {count_of(seeds, 'seed')}"
    )


def _listing(effects: Mapping[str, Sequence[Effect]], used: Sequence[str]) -> str:
    return "; ".join(e.describe() for d in used for e in effects[d])


def _attack_of(e: Effect) -> str:
    """The attack of an effect labelled ``domain/attack`` or ``domain/attack - ref``."""
    return e.label.split("/", 1)[-1].split(" - ")[0]


def paper_attacks_only(effects: Mapping[str, Sequence[Effect]]) -> tuple[dict, dict]:
    """``(units, beside)``: each domain's effects of MIMIR's five attacks (:data:`PAPER_ATTACKS`, those
    of Table 2), and those of the others (Min-K%++), which are reported beside the tally, never in it."""
    units = {d: [e for e in es if _attack_of(e) in PAPER_ATTACKS] for d, es in effects.items()}
    beside = {d: [e for e in es if _attack_of(e) not in PAPER_ATTACKS] for d, es in effects.items()}
    return units, {d: es for d, es in beside.items() if es}


def _beside_note(beside: Mapping[str, Sequence[Effect]], used: Sequence[str]) -> str:
    es = [e for d in used for e in beside.get(d, [])]
    if not es:
        return ""
    attacks = ", ".join(dict.fromkeys(_attack_of(e) for e in es))
    t = tally(es, claimed_sign=+1)
    return (
        f". Beside, not tallied ({attacks}, {NOT_PAPER_ATTACK}): clear in the claimed direction in "
        f"{t.n_for} of {t.n}, clearly opposite in {t.n_against} ({'; '.join(e.describe() for e in es)})"
    )


def _informative_verdict(
    claim: Claim,
    effects: Mapping[str, Sequence[Effect]],
    shift: pd.DataFrame,
    rule: str,
    *,
    lab: Callable[[Tally, float], str],
    who: str,
    per_domain: str,
    mean_label: str = "mean AUC gain",
    missing: str = "",
    beside: Mapping[str, Sequence[Effect]] | None = None,
) -> Verdict:
    """A comparison of the two splits, decided on the informative domains only: their effects
    tallied (claimed positive) and averaged. ``lab`` makes the lab value from the tally and the
    mean; ``who`` heads the evidence; ``per_domain`` names what a domain contributes (``{n}``: the
    first informative domain's number of effects). Not tested without an informative domain with
    effects (``missing`` is added to the reason). ``beside``: effects listed after the tally, not in it."""
    used, note = _split_domains(shift, effects)
    if not used:
        return _untestable(claim, shift, note + missing, rule)
    es = [e for d in used for e in effects[d]]
    t = tally(es, claimed_sign=+1)
    mean = sum(e.estimate for e in es) / t.n
    return claim.tallied(
        t,
        f"{who}: {t.text()}; {mean_label} {mean:+.3f} ({_listing(effects, used)}){note}",
        rule,
        _beside_note(beside or {}, used),
        lab_value=lab(t, mean),
        n=_sizes(shift, used, per_domain.format(n=len(effects[used[0]])), effects),
    )


def paper_counterpart(domain: str) -> tuple[str, float]:
    """(what the paper gives for it, the value shown beside) of a lab domain, through the Pile domain
    it plays (:data:`mimirlib.lab.corpus.PLAYS`; a MIMIR config name such as ``pubmed_central`` is
    read as itself); the mean of several counterparts; :data:`NO_COUNTERPART`'s value without one."""
    plays = PLAYS.get(domain, domain)
    names = [n for n in PAPER_OVERLAP if n.lower() in plays.replace("_", " ").lower()]
    if not names:
        x = PAPER_OVERLAP[NO_COUNTERPART]
        return f"plays {plays}, not in Figure 3: the paper's lowest, {NO_COUNTERPART} {x:.1%}", x
    x = sum(PAPER_OVERLAP[n] for n in names) / len(names)
    return "plays " + " / ".join(f"{n} {PAPER_OVERLAP[n]:.1%}" for n in names), x


def overlap_reading(lo: float, hi: float) -> str:
    """A domain's reading from the 95% interval of its mean overlap: :data:`HIGH` when the lower bound is
    at least :data:`HIGH_OVERLAP`, :data:`LOW` when the upper bound is below it, else :data:`UNDECIDED`."""
    if lo >= HIGH_OVERLAP:
        return HIGH
    if hi < HIGH_OVERLAP:
        return LOW
    return UNDECIDED


def overlap_is_high(means: pd.DataFrame) -> Verdict:
    """Non-members share many n-grams with the training data (:data:`OVERLAP_RULE`). ``means``: one row
    per domain with ``domain``, ``mean``, ``lo``, ``hi`` (the 95% interval of the mean exact 7-gram
    overlap of its natural non-members over the texts) and ``n_texts``
    (``experiments.ngram_overlap_study.mean_intervals``)."""
    if means.empty:
        return OVERLAP_IS_HIGH.verdict(
            NOT_TESTED, "no domain's overlap was measured", OVERLAP_RULE, lab_value="no overlap measured", n="0 texts"
        )
    rows = list(means.itertuples())
    readings = [overlap_reading(r.lo, r.hi) for r in rows]
    t = Tally(readings.count(HIGH), readings.count(LOW), readings.count(UNDECIDED))
    per_domain = "; ".join(
        f"{r.domain} {r.mean:.3f} [{r.lo:.3f}, {r.hi:.3f}]: {x} ({paper_counterpart(r.domain)[0]})"
        for r, x in zip(rows, readings)
    )
    gist = (
        f"; the lab's non-members lack the property: no more domains clearly at or above {HIGH_OVERLAP:.0%} "
        f"than clearly below it"
        if decide_tally(t) == NOT_REPRODUCED
        else ""
    )
    paper = [paper_counterpart(r.domain)[1] for r in rows]
    return OVERLAP_IS_HIGH.tallied(
        t,
        f"mean exact 7-gram overlap of the natural non-members, 95% bootstrap interval over texts: high in "
        f"{t.n_for} of {t.n} domains, low in {t.n_against}, undecided in {t.n_noise}{gist}. {per_domain}",
        OVERLAP_RULE,
        lab_value=f"{t.n_for} of {t.n} domains high, {t.n_against} low (means "
        f"{means['mean'].min():.3f}-{means['mean'].max():.3f}; the paper's counterparts "
        f"{min(paper):.3f}-{max(paper):.3f})",
        n=f"{int(means.n_texts.min())}-{int(means.n_texts.max())} natural non-members per domain x {t.n} domains "
        f"(each domain one unit)",
    )


def low_overlap_is_easier(effects: Mapping[str, Sequence[Effect]], shift: pd.DataFrame, target: str) -> Verdict:
    """Table 2: AUC(<= 20% 7-gram non-members) - AUC(natural non-members) per (domain, attack)
    of ``target`` (``effects``: domain -> one Effect per attack), on informative domains only."""
    paper_value, paper_effect = paper_low_overlap_gain()
    units, beside = paper_attacks_only(effects)
    return _informative_verdict(
        replace(LOW_OVERLAP_IS_EASIER, paper_value=paper_value, paper_effect=paper_effect),
        units,
        shift,
        f"effect per (domain, attack): paired AUC(<= 20%) - AUC(natural); {PAPER_RULE}; {INFORMATIVE_RULE}; "
        f"{TALLY_RULE}",
        lab=lambda t, mean: f"{target}: clear gain in {t.n_for} of {t.n} (domain, attack), mean {mean:+.3f}",
        who=target,
        per_domain="{n} attacks",
        beside=beside,
    )


def redraw_drifts_towards_distribution_inference(
    effects: Mapping[str, Sequence[Effect]], shift: pd.DataFrame
) -> Verdict:
    """The redraw moves the benchmark towards distribution inference: a model-free text classifier
    (the book's blind baseline; the paper ran none) tells the low-overlap non-members from the
    members better than the natural ones. ``effects``: domain -> [Effect of its AUC gain]."""
    return _informative_verdict(
        REDRAW_DRIFTS_TOWARDS_DISTRIBUTION_INFERENCE,
        effects,
        shift,
        f"effect per domain: paired AUC(<= 20%) - AUC(natural) of the book's blind (model-free) baseline, the "
        f"measurement the paper did not make; {INFORMATIVE_RULE}; {TALLY_RULE}",
        lab=lambda t, mean: f"blind baseline's AUC gain {mean:+.3f} on average, clear in {t.n_for} of {t.n} domains",
        who="blind baseline",
        per_domain="1 classifier (cross-validated)",
    )


def reference_gains_less(effects: Mapping[str, Sequence[Effect]], shift: pd.DataFrame, target: str) -> Verdict:
    """Appendix B.2: the reference attack gains less from the redraw than the other attacks.
    ``effects``: domain -> one Effect per other attack of ``gain(other) - gain(ref)`` (paired)."""
    paper_value, paper_effect = paper_ref_gain_gap()
    units, beside = paper_attacks_only(effects)
    return _informative_verdict(
        replace(REFERENCE_GAINS_LESS, paper_value=paper_value, paper_effect=paper_effect),
        units,
        shift,
        f"effect per (domain, other attack): paired [AUC_other(<= 20%) - AUC_other(natural)] - [AUC_ref(<= 20%) - "
        f"AUC_ref(natural)], > 0 when the reference attack gains less; {PAPER_RULE}; {INFORMATIVE_RULE}; "
        f"{TALLY_RULE}",
        lab=lambda t, mean: (
            f"{target}: other attacks gain more than ref by {mean:+.3f} on average, clearly in {t.n_for} of {t.n}"
        ),
        who=f"{target}, gain(other) - gain(ref)",
        per_domain="{n} other attacks",
        mean_label="mean",
        missing="" if effects else "; the comparison needs the reference attack's scores",
        beside=beside,
    )
