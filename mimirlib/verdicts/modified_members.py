"""Verdict rules of the modified-members chapter (MIMIR §5, Table 4, Figure 5).

The paper's claim is about where modified members fall around a threshold: at thresholds giving
1, 5 or 10% FPR on real non-members, members with a few tokens replaced are flagged at 0-0.7%
(Table 4), i.e. the attacks call them non-members "often more definitively than actual
non-members" (§1). So each cell (attack, kind of modification, target FPR) of the lab's Table 4 is
placed, at that one threshold, against *both* reference rates: the FPR on the real non-members and
the TPR on the real members, using the intervals of ``experiments.modified_members_rates.flag_rates``
(the flagged share's exact interval counts the edited *members*, so 0 of 36 flagged spans 0-9.7%,
not a bootstrap's [0, 0]; Wilson for the others; each difference combines the two intervals):

- ``below non-members``: flagged - FPR has an interval below 0 (more definitively non-member);
- ``like non-members``: flagged - FPR inside the noise, flagged clearly below the TPR;
- ``between``: flagged clearly above the FPR and clearly below the TPR;
- ``like members``: flagged clearly above the FPR and not clearly below the TPR (the opposite
  of the claim: the attack treats the edited copies as it treats members);
- ``inside the noise``: neither difference clear (the attack cannot tell the sets apart there).

Paraphrases (MIMIR appendix D, Table 10) get a gate first: the lab's generator is a 135M instruct
model, not GPT-4, so the cells only speak about paraphrases when most of its outputs are
paraphrases (close in meaning *and* reworded, :func:`is_paraphrase`); otherwise the claim is not
tested and the evidence says why, with the numbers.

Why the thresholds below. The claim is that the attacks call edited members non-members; a cell
where they are flagged as often as real members contradicts it outright, so more than
:data:`MAX_LIKE_MEMBER_CELLS` such cells means "not reproduced", whatever the other cells say. The
lexical claim is "as low as n = 1", and Table 4 gives n = 1 at every threshold: the cells of the
smallest edit count must themselves be decided, all of them (:data:`HEADLINE_SIDE_SHARE`); with
fewer on the non-member side (and none above the FPR) the lab cannot say what one-token edits do at
some threshold: inconclusive, whatever larger edits show. (The lab's case: one-token edits barely move a
200-word text's score, so they are flagged about as often as members, 10.8% at 10% FPR with TPR 13.1%:
too close to both rates to place with 180 edited members; it must not pass as support. With 720, LOSS's
12.9% [10.6, 15.6] is clearly above the FPR: like members, as the claim's opposite.) Power comes
from members, not trials: 0 of 36 flagged has an exact upper bound of 9.7%, so no 1% or 5% cell could
be below the non-members; 0 of 180 has 2.0%, which clears 5% and 10% but still not 1%. A
near-copy is a neighbour, not a paraphrase (the masked-LM neighbours change about 5% of tokens),
hence :data:`MIN_PARAPHRASE_CHANGE_PCT`; and below :data:`PARAPHRASE_USABLE_SHARE` (the book's
"three in four") the flagged rate would be about whatever else the model wrote: not tested.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mimirlib.core import metrics, power
from mimirlib.core.attacks import NATS_PER_TOKEN
from mimirlib.verdicts import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    NOT_TESTED,
    PARTLY,
    REPRODUCED,
    TALLY_DECIDED,
    TALLY_REPRODUCED,
    TALLY_RULE,
    Claim,
    Effect,
    Verdict,
    tally,
)

# Where a Table 4 cell sits, at one threshold, against the real non-members' FPR and the members' TPR.
POSITIONS = (BELOW, LIKE_NONMEMBERS, BETWEEN, LIKE_MEMBERS, NOISE) = (
    "below non-members",
    "like non-members",
    "between non-members and members",
    "like members",
    "inside the noise",
)

# A claim about the cells holds when at least this share of them sits on the non-member side
# (below or like non-members): the book's usual "three in four" bar (verdicts.TALLY_REPRODUCED).
NONMEMBER_SIDE_SHARE = TALLY_REPRODUCED
# "Often more definitively than actual non-members" (MIMIR §1) for the lexical edits: at least
# half of the cells must be clearly *below* the non-members' FPR, not merely like it.
LEXICAL_BELOW_SHARE = 0.5
# When fewer than this share of the cells is placed (the rest inside the noise) the lab cannot
# tell: inconclusive (verdicts.TALLY_DECIDED).
DECIDED_SHARE = TALLY_DECIDED
# Cells where edited members are flagged like real members (clearly above the FPR, not clearly below
# the TPR) contradict the claim outright: more than this many means "not reproduced" (module docstring).
MAX_LIKE_MEMBER_CELLS = 0
# Share of the smallest edit count's cells ("as low as n = 1") that must sit on the non-member side,
# none above the FPR; otherwise inconclusive, whatever larger edits show (module docstring).
HEADLINE_SIDE_SHARE = 1.0
# A generated text is a paraphrase of its member when its MiniLM cosine to it is at least this (same
# meaning) ...
MIN_PARAPHRASE_COSINE = 0.8
# ... and at least this share of its words changed (perturb.words_changed): the paper's paraphrases
# have "significant lexical difference" (module docstring).
MIN_PARAPHRASE_CHANGE_PCT = 20.0
# The paraphrase cells are judged only when at least this share of the generated texts are paraphrases
# by the two bars above (verdicts.TALLY_REPRODUCED); below it: not tested (module docstring).
PARAPHRASE_USABLE_SHARE = TALLY_REPRODUCED

# The chapter's claims, decided by lexical_rule, semantic_rule and closer_rule.

LEXICAL = Claim(
    "Members with as few as n = 1 random tokens replaced are classified as non-members by the MIA, \"often more "
    "definitively than actual non-members\"",
    source="MIMIR §5 (Lexical Distance) and §1, Table 4 left, Figure 5 top",
    key="mimir-5-lexical-edits",
    paper_value="Ref attack flags 0.0-0.7% of edited members at thresholds giving 1/5/10% FPR, n = 1, 10, 25 (ArXiv, "
    "Wikipedia); LOSS flags 0% everywhere",
)

SEMANTIC = Claim(
    "Semantically close members (masked-LM neighbours, ~5% of tokens replaced) \"would be classified as "
    "non-members\": their false positive rates are \"still low\"",
    source="MIMIR §5 (Semantic Distance), Table 4 right, Figure 5 bottom",
    key="mimir-5-semantic-neighbours",
    paper_value="flagged at thresholds giving 1/5/10% FPR: LOSS 0.0-2.5%, Ref 0.4-8.2% (ArXiv, Wikipedia)",
)

CLOSER = Claim(
    "\"Semantically close neighbors have MIA scores more similar to actual member samples than randomly-replaced "
    "tokens\"",
    source="MIMIR §5 (end), Figure 5",
    key="mimir-5-semantic-closer",
    paper_value="qualitative (Figure 5: 5% semantic replacements vs n = 25 random tokens); closer especially for Ref",
    paper_effect=None,  # Figure 5 only: the paper gives no number for the score distance
    average=True,
)

PARAPHRASED = Claim(
    "Paraphrased members (GPT-4, \"in a different style\", details kept) \"are likely to be classified as "
    "non-members\" in high-confidence settings",
    source="MIMIR appendix D, Table 10, Figure 11",
    key="mimir-d-paraphrases",
    paper_value="flagged at thresholds giving 1/5/10% FPR: LOSS 0.0-1.7%, Ref 0.0-1.7% (ArXiv, Wikipedia, "
    "HackerNews; 5 GPT-4 paraphrases per member)",
)

CELL_RULE = (
    "each (attack, edit, target FPR) cell is placed at the threshold set on the real non-members: below "
    "non-members if flagged - FPR has a 95% interval below 0; like non-members if that interval holds 0 and "
    "flagged - TPR is clearly below 0; between if clearly above the FPR and below the TPR; like members if "
    "clearly above the FPR and not clearly below the TPR; else inside the noise (intervals: exact "
    "Clopper-Pearson for the flagged share on one trial per edited member, Wilson for the FPR and TPR, "
    "differences by Newcombe's method from the two)"
)


def place(row) -> str:
    """Where one cell's modified members fall between the non-members' FPR and the members' TPR
    (row: a record of ``flag_rates`` with ``vs_fpr_lo/hi`` and ``vs_tpr_lo/hi``)."""
    if row["vs_fpr_hi"] < 0:
        return BELOW
    above_fpr = row["vs_fpr_lo"] > 0
    below_tpr = row["vs_tpr_hi"] < 0
    if above_fpr:
        return BETWEEN if below_tpr else LIKE_MEMBERS
    return LIKE_NONMEMBERS if below_tpr else NOISE


def can_be_below(row) -> bool:
    """Whether a cell could be placed below the non-members at all: with none of its ``n_groups``
    members flagged, would the interval of flagged - FPR lie below 0? (Its power, in one bit.)"""
    none = metrics.proportion_interval(0, int(row["n_groups"]))
    return metrics.difference_interval(0.0, none, row["fpr"], (row["fpr_lo"], row["fpr_hi"]))[1] < 0


def can_be_placed(row) -> bool:
    """Whether a cell could be placed on the non-member side at all: flagged exactly at the FPR
    (its exact interval on ``n_groups`` members), would flagged - TPR be clearly below 0? Where the
    TPR at a threshold is about its FPR (a weak attack at a small budget), no flagged rate can tell
    edited members from real ones, whatever the edits do. (The semantic claim's power, in one bit.)"""
    n = int(row["n_groups"])
    at_fpr = metrics.proportion_interval(round(row["fpr"] * n), n)
    return metrics.difference_interval(row["fpr"], at_fpr, row["tpr"], (row["tpr_lo"], row["tpr_hi"]))[1] < 0


POWER_NOTE = (
    "; an inconclusive result is underpowered when fewer than that share of cells could be shown below the "
    "non-members even with no member flagged (too few members for the FPR budget)"
)


SEMANTIC_POWER_NOTE = (
    "; an inconclusive result is underpowered when fewer than that share of cells could be placed on the "
    "non-member side even if flagged exactly at the FPR (the members' TPR there is not clearly above the FPR)"
)


def _cells_power(placed: pd.DataFrame, could_decide, share: float) -> tuple[int, str]:
    """How many cells ``could_decide`` (:func:`can_be_below`, :func:`can_be_placed`), and the reading of
    an inconclusive result: underpowered when fewer than ``share`` of the cells could, else unresolved."""
    count = int(sum(could_decide(r) for _, r in placed.iterrows()))
    return count, power.UNDERPOWERED if count < share * len(placed) else power.UNRESOLVED


def placements(rates: pd.DataFrame) -> pd.DataFrame:
    """``rates`` with a ``position`` column (:func:`place`)."""
    return rates.assign(position=[place(r) for _, r in rates.iterrows()]) if len(rates) else rates.assign(position=[])


def decide_cells(positions, below_share: float, headline=None) -> str:
    """The outcome from the cells' positions (rule text: :func:`cells_rule`). ``headline``: the
    positions of the cells the claim is about first (the smallest edit count: "as low as n = 1").
    One bar per side, as :func:`mimirlib.verdicts.decide_tally`: the old rule's "inconclusive if
    fewer than half the cells are placed" counted cells against the claim toward deciding it (7 on
    the non-member side and 1 above the FPR of 18 was inconclusive, 7 and 2 partly). Now a cell moved
    from the noise to the non-member side never lowers the outcome, nor one moved above the FPR raises
    it (tested over every count of up to 12 cells)."""
    positions = list(positions)
    n = len(positions)
    if n == 0:
        return NOT_TESTED
    count = {p: positions.count(p) for p in POSITIONS}
    side = count[BELOW] + count[LIKE_NONMEMBERS]
    against = count[BETWEEN] + count[LIKE_MEMBERS]
    head = list(headline) if headline is not None else []
    head_side = sum(p in (BELOW, LIKE_NONMEMBERS) for p in head)
    if count[LIKE_MEMBERS] > MAX_LIKE_MEMBER_CELLS or any(p == BETWEEN for p in head):
        return NOT_REPRODUCED
    if against >= DECIDED_SHARE * n and against >= side:
        return NOT_REPRODUCED
    if head and head_side < HEADLINE_SIDE_SHARE * len(head):
        return INCONCLUSIVE
    if against == 0 and side >= NONMEMBER_SIDE_SHARE * n and count[BELOW] >= below_share * n:
        return REPRODUCED
    if side >= DECIDED_SHARE * n and side > against:
        return PARTLY
    return INCONCLUSIVE


def cells_rule(below_share: float, headline: bool = False) -> str:
    """The rule of :func:`decide_cells` in words."""
    like = "any cell is" if MAX_LIKE_MEMBER_CELLS == 0 else f"more than {MAX_LIKE_MEMBER_CELLS} cells are"
    below = f", at least {below_share:.0%} of cells below non-members" if below_share > 0 else ""
    head = " or any cell of the smallest edit count is above the FPR" if headline else ""
    share = (
        "a cell of the smallest edit count is inside the noise"
        if HEADLINE_SIDE_SHARE >= 1
        else f"fewer than {HEADLINE_SIDE_SHARE:.0%} of the smallest edit count's cells are on the non-member side"
    )
    head_inc = f"; inconclusive if {share} (the claim's \"as low as n = 1\" undecided)" if headline else ""
    return (
        f"{CELL_RULE}. Not reproduced if {like} like members{head}, or if at least {DECIDED_SHARE:.0%} of cells "
        f"are above the FPR and they are at least as many as the cells on the non-member side (below or like "
        f"non-members){head_inc}; reproduced if >= {NONMEMBER_SIDE_SHARE:.0%} of cells are on the non-member "
        f"side{below} and none is above the FPR; partly if at least {DECIDED_SHARE:.0%} are on the non-member "
        f"side and more than above the FPR; otherwise inconclusive"
    )


def _cell(r) -> str:
    return (
        f"{r['attack']} {r['kind']} @{r['fpr_target']:.0%}: {100 * r['flagged']:.1f}% "
        f"[{100 * r['flagged_lo']:.1f}, {100 * r['flagged_hi']:.1f}] vs TPR {100 * r['tpr']:.1f}%, "
        f"FPR {100 * r['fpr']:.1f}%"
    )


def _evidence(placed: pd.DataFrame, headline: pd.DataFrame) -> str:
    counts = placed.position.value_counts()
    parts = [f"{counts.get(p, 0)} of {len(placed)} cells {p}" for p in POSITIONS if counts.get(p, 0)]
    s = "; ".join(parts)
    s += ". At the largest target FPR: " + "; ".join(_cell(r) for _, r in headline.iterrows())
    bad = placed[placed.position.isin([LIKE_MEMBERS, BETWEEN]) & ~placed.index.isin(headline.index)]
    if len(bad):
        s += ". Also above the FPR: " + "; ".join(_cell(r) for _, r in bad.iterrows())
    return s


def _lab_value(headline: pd.DataFrame) -> str:
    return "; ".join(
        f"{r['attack']} {r['kind']} @{r['fpr_target']:.0%}: {100 * r['flagged']:.1f}% flagged "
        f"(TPR {100 * r['tpr']:.1f}%, FPR {100 * r['fpr']:.1f}%)"
        for _, r in headline.iterrows()
    )


def lexical_rule(rates: pd.DataFrame, n: str) -> Verdict:
    """Table 4 left: random-token edits flagged below the non-members' FPR (and below the TPR)."""
    placed = placements(rates[rates.kind.str.startswith("lexical")])
    if not len(placed):
        return LEXICAL.not_tested("the run made no random-token edits", n=n)
    head = placed[placed.edits == placed.edits.min()]
    first = head[head.fpr_target == head.fpr_target.max()]
    outcome = decide_cells(placed.position, LEXICAL_BELOW_SHARE, headline=head.position)
    evidence = (
        _evidence(placed, first)
        + f". Cells of the smallest edit count (n = {head.edits.iloc[0]:g}): "
        + ", ".join(f"{v} {k}" for k, v in head.position.value_counts().items())
    )
    reading = ""
    if outcome == INCONCLUSIVE:
        decidable, reading = _cells_power(placed, can_be_below, LEXICAL_BELOW_SHARE)
        evidence += (
            f". Power: {decidable} of {len(placed)} cells could be shown below the non-members even with no "
            f"member flagged (0 of {int(placed.n_groups.min())} members has an exact upper bound of "
            f"{metrics.proportion_interval(0, int(placed.n_groups.min()))[1]:.1%})"
        )
    return LEXICAL.verdict(
        outcome,
        evidence,
        cells_rule(LEXICAL_BELOW_SHARE, headline=True) + POWER_NOTE,
        lab_value=_lab_value(first),
        n=n,
        power=reading,
    )


def semantic_rule(rates: pd.DataFrame, n: str) -> Verdict:
    """Table 4 right: masked-LM neighbours of members flagged at most like non-members."""
    placed = placements(rates[rates.kind.str.startswith("semantic")])
    if not len(placed):
        return SEMANTIC.not_tested("the benchmark carries no neighbours", n=n)
    top = placed[placed.fpr_target == placed.fpr_target.max()]
    outcome = decide_cells(placed.position, 0.0)
    evidence = _evidence(placed, top)
    reading = ""
    if outcome == INCONCLUSIVE:
        placeable, reading = _cells_power(placed, can_be_placed, DECIDED_SHARE)
        evidence += (
            f". Power: {placeable} of {len(placed)} cells could be shown on the non-member side even if flagged "
            f"exactly at the FPR (that needs the members' TPR clearly above the FPR, on "
            f"{int(placed.n_groups.min())} edited members)"
        )
    return SEMANTIC.verdict(
        outcome, evidence, cells_rule(0.0) + SEMANTIC_POWER_NOTE, lab_value=_lab_value(top), n=n, power=reading
    )


def score_units(attacks) -> str:
    """The units of score distances of ``attacks`` (the closeness effects): nats per token when each is in
    :data:`mimirlib.core.attacks.NATS_PER_TOKEN`, else each attack's own scale (pooling them then mixes scales)."""
    return "nats per token" if set(attacks) <= NATS_PER_TOKEN else "each attack's own score scale"


def closer_rule(effects: pd.DataFrame, n: str) -> Verdict:
    """Figure 5: neighbours' scores stay nearer their member's own score than random-token edits of
    about the same size (paired by member, one effect per attack, tallied)."""
    if not len(effects):
        return CLOSER.not_tested("the benchmark carries no neighbours", n=n)
    es = [Effect(r.estimate, r.lo, r.hi, label=r.attack) for r in effects.itertuples()]
    t = tally(es)
    r0, units = effects.iloc[0], score_units(effects.attack)
    evidence = (
        f"mean |score - own member's score| ({units}) of {r0.lexical} edits ({r0.words_changed_lexical:.1f}% of words "
        f"changed) minus that of neighbours ({r0.words_changed_semantic:.1f}%), per member: "
        + "; ".join(e.describe() for e in es)
        + f". {t.text()}"
    )
    rule = (
        "per attack, the paired effect (positive: neighbours closer to their member) over the members having both, "
        "against the random-token edit count whose share of changed words is nearest the neighbours'; " + TALLY_RULE
    )
    lab = "; ".join(f"{e.label} {e.estimate:+.3f}" for e in es) + f" {units} (vs {r0.lexical})"
    return CLOSER.tallied(t, evidence, rule, lab_value=lab, n=n)


def is_paraphrase(cosine, words_changed_pct) -> np.ndarray:
    """Which generated texts count as paraphrases of their member: MiniLM cosine to it at least
    :data:`MIN_PARAPHRASE_COSINE` and at least :data:`MIN_PARAPHRASE_CHANGE_PCT` % of its words
    changed (NaN: not measured, not a paraphrase)."""
    cos = np.asarray(cosine, dtype=float)
    changed = np.asarray(words_changed_pct, dtype=float)
    return (cos >= MIN_PARAPHRASE_COSINE) & (changed >= MIN_PARAPHRASE_CHANGE_PCT)


PARAPHRASE_GATE = (
    f"a generated text is a paraphrase if its MiniLM cosine to its member is >= {MIN_PARAPHRASE_COSINE} and >= "
    f"{MIN_PARAPHRASE_CHANGE_PCT:.0f}% of its words changed; not tested unless >= {PARAPHRASE_USABLE_SHARE:.0%} of "
    "the generated texts are paraphrases"
)


def paraphrase_rule(rates: pd.DataFrame, paraphrases: pd.DataFrame, n: str) -> Verdict:
    """Table 10: paraphrased members flagged at most like non-members, judged only when the
    generator did paraphrase (``paraphrases``: one row per generated text with ``cosine`` and
    ``words changed (%)``; ``rates``: ``flag_rates`` rows, the paraphrase kind's label starting
    with "paraphrase")."""
    placed = placements(rates[rates.kind.str.startswith("paraphrase")])
    if not len(placed) or not len(paraphrases):
        return PARAPHRASED.not_tested("the run made no paraphrases", n=n)
    measured = {"cosine", "words changed (%)"} <= set(paraphrases.columns)
    if not measured or paraphrases["cosine"].isna().all():
        return PARAPHRASED.not_tested("the paraphrases' similarity to their members was not measured", n=n)
    cos, changed = paraphrases["cosine"].to_numpy(float), paraphrases["words changed (%)"].to_numpy(float)
    ok = is_paraphrase(cos, changed)
    top = placed[placed.fpr_target == placed.fpr_target.max()]
    quality = (
        f"{len(ok)} generated texts: MiniLM cosine to the member {np.nanmean(cos):.3f} on average (lowest "
        f"{np.nanmin(cos):.3f}), {np.nanmean(changed):.1f}% of words changed on average; {int(ok.sum())} of "
        f"{len(ok)} ({ok.mean():.0%}) are paraphrases by the rule"
    )
    if ok.mean() < PARAPHRASE_USABLE_SHARE:
        evidence = (
            quality + ", too few for the flagged rate to be about paraphrases (the model could not paraphrase "
            "these texts). Flagged anyway, at the largest target FPR: " + _lab_value(top)
        )
        return PARAPHRASED.verdict(NOT_TESTED, evidence, PARAPHRASE_GATE, lab_value=_lab_value(top), n=n)
    return PARAPHRASED.verdict(
        decide_cells(placed.position, 0.0),
        quality + ". " + _evidence(placed, top),
        PARAPHRASE_GATE + "; then " + cells_rule(0.0),
        lab_value=_lab_value(top),
        n=n,
    )
