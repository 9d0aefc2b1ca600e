"""Verdict rules of the n-gram overlap chapter (MIMIR §3.2.2, Table 2, Figure 3, appendix B.2).

Four claims: non-members overlap the training data a lot (:func:`overlap_is_high`); non-members
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

from typing import Callable, Mapping, Sequence

import pandas as pd

from mimirlib.verdicts import (
    NOT_REPRODUCED,
    NOT_TESTED,
    PARTLY,
    REPRODUCED,
    TALLY_RULE,
    Claim,
    Effect,
    Tally,
    Verdict,
    tally,
)

# A domain's non-member overlap is "high" from this mean 7-gram overlap: the lowest domain the
# paper names, Wikipedia, has 32.5%, and its introduction speaks of "over 30%".
HIGH_OVERLAP = 0.30
# overlap_is_high: reproduced when at least this share of domains is high. The paper gives means
# for six domains, all above 30%, and calls Pile CC "naturally low" (appendix B.2): most, not all.
HIGH_OVERLAP_SHARE = 0.5
# Informative about the <= 20% claims: the redraw lowered the non-members' mean exact 7-gram overlap by
# this much (the paper's Table 2 domains fall by 12 points or more, from 32-77% to at most 20%).
MIN_OVERLAP_DROP = 0.10

INFORMATIVE_RULE = (
    f"only domains where the redraw lowered the non-members' mean 7-gram overlap by >= "
    f"{MIN_OVERLAP_DROP:.2f} count; the others are not informative for this claim"
)

# The chapter's claims, each decided by the rule of the same name in lower case.

OVERLAP_IS_HIGH = Claim(
    "Non-members have high n-gram overlap with the training data (mean 7-gram overlap 32.5-76.9% across the Pile's "
    "domains)",
    source="MIMIR §3.2.2, Figure 3",
    key="mimir-3.2.2-overlap",
    paper_value="mean 7-gram overlap: Wikipedia 32.5%, ArXiv 39.3%, PubMed Central 41.0%, FreeLaw 62.3%, "
    "DM Math 72.8%, GitHub 76.9%",
)

LOW_OVERLAP_IS_EASIER = Claim(
    "Non-members with <= 20% 7-gram overlap are more distinguishable by existing MIAs",
    source="MIMIR §3.2.2, Table 2",
    key="mimir-3.2.2-low-overlap",
    paper_value="AUC rises in all 25 (domain, attack) cells, e.g. Wikipedia LOSS .516 -> .666, "
    "GitHub zlib .690 -> .908",
)

REDRAW_DRIFTS_TOWARDS_DISTRIBUTION_INFERENCE = Claim(
    "Resampling non-members to low overlap introduces an explicit drift between member and non-member distributions "
    "(closer to distribution inference)",
    source="MIMIR §3.2.2",
    key="mimir-3.2.2-drift",
    paper_value="stated, not measured (the paper ran no model-free baseline)",
)

REFERENCE_GAINS_LESS = Claim(
    "Reference-based MIAs have a noticeably smaller increase in performance than the others under n-gram overlap "
    "thresholding",
    source="MIMIR appendix B.2, Table 2",
    key="mimir-b.2-ref-gains-less",
    paper_value="GitHub: ref +.056 vs others +.200 to +.218; PubMed Central: ref +.036 vs others +.240 to +.280",
)


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
        n=f"0 informative of {len(shift)} domain(s) with a low-overlap split",
    )


def _sizes(shift: pd.DataFrame, used: Sequence[str], per_domain: str, effects) -> str:
    rows = shift.set_index("domain").loc[list(used)]
    seeds = max((e.n_seeds for d in used for e in effects[d]), default=1)
    n_dom = len(shift)
    return (
        f"{len(used)} informative of {n_dom} domain(s) with a low-overlap split x {per_domain}; "
        f"{int(rows['n_members'].min())}-{int(rows['n_members'].max())} shared members, "
        f"{int(rows['n_natural_nonmembers'].min())}-{int(rows['n_natural_nonmembers'].max())} natural and "
        f"{int(rows['n_low_nonmembers'].min())}-{int(rows['n_low_nonmembers'].max())} low-overlap non-members "
        f"per domain; {seeds} seed(s)"
    )


def _listing(effects: Mapping[str, Sequence[Effect]], used: Sequence[str]) -> str:
    return "; ".join(e.describe() for d in used for e in effects[d])


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
) -> Verdict:
    """A comparison of the two splits, decided on the informative domains only: their effects
    tallied (claimed positive) and averaged. ``lab`` makes the lab value from the tally and the
    mean; ``who`` heads the evidence; ``per_domain`` names what a domain contributes (``{n}``: the
    first informative domain's number of effects). Not tested without an informative domain with
    effects (``missing`` is added to the reason)."""
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
        lab_value=lab(t, mean),
        n=_sizes(shift, used, per_domain.format(n=len(effects[used[0]])), effects),
    )


def overlap_is_high(overlaps: pd.DataFrame) -> Verdict:
    """Non-members share many n-grams with the training data: the mean 7-gram overlap of each
    domain's natural non-members (``overlaps``: one row per non-member, columns ``domain`` and
    ``overlap``) against :data:`HIGH_OVERLAP`."""
    rule = (
        f"reproduced if >= {HIGH_OVERLAP_SHARE:.0%} of the domains have a mean 7-gram overlap >= "
        f"{HIGH_OVERLAP:.2f}; partly if any does; not reproduced if none"
    )
    by = overlaps.dropna().groupby("domain", sort=False).overlap
    m, counts = by.mean(), by.size()
    if m.empty:
        return OVERLAP_IS_HIGH.verdict(
            NOT_TESTED, "no domain's overlap was measured", rule, lab_value="no overlap measured", n="0 texts"
        )
    high = m >= HIGH_OVERLAP
    share = float(high.mean())
    verdict = REPRODUCED if share >= HIGH_OVERLAP_SHARE else PARTLY if high.any() else NOT_REPRODUCED
    return OVERLAP_IS_HIGH.verdict(
        verdict,
        "mean exact 7-gram overlap of the natural non-members: " + ", ".join(f"{d} {x:.3f}" for d, x in m.items()),
        rule,
        lab_value=f"{int(high.sum())} of {len(m)} domains >= {HIGH_OVERLAP:.2f} (range {m.min():.3f}-{m.max():.3f})",
        n=f"{counts.min()}-{counts.max()} natural non-members per domain x {len(m)} domains",
    )


def low_overlap_is_easier(effects: Mapping[str, Sequence[Effect]], shift: pd.DataFrame, target: str) -> Verdict:
    """Table 2: AUC(<= 20% 7-gram non-members) - AUC(natural non-members) per (domain, attack)
    of ``target`` (``effects``: domain -> one Effect per attack), on informative domains only."""
    return _informative_verdict(
        LOW_OVERLAP_IS_EASIER,
        effects,
        shift,
        f"effect per (domain, attack): paired AUC(<= 20%) - AUC(natural); {INFORMATIVE_RULE}; {TALLY_RULE}",
        lab=lambda t, mean: f"{target}: clear gain in {t.n_for} of {t.n} (domain, attack), mean {mean:+.3f}",
        who=target,
        per_domain="{n} attacks",
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
    return _informative_verdict(
        REFERENCE_GAINS_LESS,
        effects,
        shift,
        f"effect per (domain, other attack): paired [AUC_other(<= 20%) - AUC_other(natural)] - [AUC_ref(<= 20%) - "
        f"AUC_ref(natural)], > 0 when the reference attack gains less; {INFORMATIVE_RULE}; {TALLY_RULE}",
        lab=lambda t, mean: (
            f"{target}: other attacks gain more than ref by {mean:+.3f} on average, clearly in {t.n_for} of {t.n}"
        ),
        who=f"{target}, gain(other) - gain(ref)",
        per_domain="{n} other attacks",
        mean_label="mean",
        missing="" if effects else "; the comparison needs the reference attack's scores",
    )
