"""Verdict rules of the temporal-shift chapter (MIMIR §4; Tables 3 and 5, Figures 4, 6 and 8).

The benchmarks share their members and differ in their non-members, so every split-vs-split
comparison is an :class:`~mimirlib.verdicts.Effect` built from a paired AUC difference (shared
members resampled jointly, the two non-member sets independently) and, for targets the lab
trained several seeds of, the seed spread of that difference; the units (target x attack) are
then tallied (:func:`~mimirlib.verdicts.tally`, :func:`~mimirlib.verdicts.decide_tally`).
The Table 5 rule decides each cell on an exact exchangeability test (the threshold is estimated
from shifted non-members too, and the test carries its sampling error); the overlap rule on a
bootstrap interval of a difference of means.

Inputs are the tidy frames of :mod:`mimirlib.experiments.temporal_shift`.
"""

from __future__ import annotations

from collections.abc import Sequence

import dataclasses
import functools

import numpy as np
import pandas as pd
from scipy.stats import nhypergeom

from mimirlib.display.paper_tables import paper_table
from mimirlib.display.report import count_of, count_span

from mimirlib.verdicts import (
    INCONCLUSIVE,
    NOT_PAPER_ATTACK,
    NOT_REPRODUCED,
    PARTLY,
    REPRODUCED,
    split_paper_attacks,
    tally_outcomes,
    TALLY_RULE,
    Claim,
    Effect,
    Verdict,
    tally,
)

# Table 5's test, each side: a cell is clearly above (below) chance when the exact one-sided p is under
# this; the two sides together are the two-sided 5% of the book's 95% intervals.
ALPHA_ONE_SIDED = 0.025

KEY = "mimir-4"
# The units of the claims about the attacks (Tables 3 and 5, Figure 6) are MIMIR's five attacks; an attack after
# the paper (Min-K%++) is reported beside them (verdicts.split_paper_attacks).
BESIDE_NOTE = (
    "MIMIR's five attacks only: any other attack (Min-K%++, published after the paper) is reported beside, not tallied"
)

# The chapter's claims, each decided by the rule of the same name in lower case.

SHIFT_INFLATES_AUC = Claim(
    "\"The temporally shifted settings yield MIA performances significantly higher than when members and non-members "
    "are from the same temporal range\"",
    source="MIMIR §4, Table 3",
    key=f"{KEY}-shift-inflates-auc",
    paper_value="Pythia-dedup-12B: AUC .607-.796 on temporal Wikipedia (Table 3) vs .516-.579 on same-period "
    "Wikipedia (Table 1)",
    average=True,
)

AUC_GROWS_WITH_LATENESS = Claim(
    "\"MIA performance generally increases as non-members are further temporally shifted from member data\"",
    source="MIMIR §4 and §B.4, Figure 6",
    key=f"{KEY}-auc-grows-with-lateness",
    paper_value="ArXiv, Pythia-dedup-12B: AUC .723 (2020-08) -> .795 (2023-06)",
    paper_effect=0.072,  # .795 - .723, the AUC gain from earliest to latest shifted benchmark (§B.4)
    average=True,
)

SHIFTED_OVERLAP_LOWER = Claim(
    "\"The distribution of 7-gram overlap of such shifted data concentrates at lower overlap percentages compared to "
    "their natural counterparts\"",
    source="MIMIR §4 and §B.4, Figures 4 and 8",
    key=f"{KEY}-shifted-overlap-lower",
    paper_value="mean 7-gram overlap: natural 39.3% vs shifted 13.9% (Wikipedia); ArXiv 22.7% (2020-08), 20.5% "
    "(2023-06)",
    paper_effect=0.254,  # 39.3% - 13.9% (Wikipedia, §4), as the rule's drop: a fraction of n-grams
    average=True,
)

SHIFTED_THRESHOLDS_MISFIRE = Claim(
    "\"Decision thresholds derived using temporally-shifted non-members end up testing for temporal shift rather than "
    "membership\": natural FPRs well above the budget",
    source="MIMIR §4 and Appendix, Table 5",
    key=f"{KEY}-shifted-thresholds-misfire",
    paper_value="1% threshold on shifted ArXiv: 2.5-9.4% FPR on the Pile non-members; on temporal Wikipedia 7.5-10.3% "
    "(Pythia-dedup-12B)",
)

BLIND_BASELINE_SEPARATES = Claim(
    "A model-free text classifier separates the shifted benchmark as well as the attacks do",
    source="book (MIMIR §4 discusses the shift, but runs no model-free baseline)",
    key="book-temporal-blind-baseline",
    origin="book",
    paper_value="not measured in the paper",
)


def effects(
    frame: pd.DataFrame,
    label_cols: Sequence[str] = ("target", "attack"),
    estimate: str = "diff",
    lo: str = "lo",
    hi: str = "hi",
) -> list[Effect]:
    """One :class:`Effect` per row of a differences frame (``seed_sd`` NaN or absent: no seed spread)."""
    out = []
    for _, r in frame.iterrows():
        sd = r.get("seed_sd", np.nan)
        sd = None if sd is None or not np.isfinite(sd) else float(sd)
        out.append(
            Effect(
                float(r[estimate]),
                float(r[lo]),
                float(r[hi]),
                sd,
                int(r.get("n_seeds", 1)),
                " / ".join(str(r[c]) for c in label_cols),
            )
        )
    return out


def _spread(es: Sequence[Effect]) -> str:
    x = np.array([e.estimate for e in es])
    s = f"median {np.median(x):+.3f} (range {x.min():+.3f} to {x.max():+.3f})"
    sds = [e.seed_sd for e in es if e.seed_sd is not None]
    if sds:
        s += f"; seed sd median {np.median(sds):.3f} over {max(e.n_seeds for e in es if e.seed_sd is not None)} seeds"
    return s


def _units_n(frame: pd.DataFrame) -> str:
    reps = frame[frame.n_seeds > 1].target.nunique() if "n_seeds" in frame else 0
    s = (
        f"{int(frame.n_members.iloc[0])} shared members, {int(frame.n_nonmembers_a.iloc[0])} + "
        f"{int(frame.n_nonmembers_b.iloc[0])} non-members; {count_of(frame.target.nunique(), 'target')} x "
        f"{count_of(frame.attack.nunique(), 'attack')}"
    )
    if reps:
        s += f"; {int(frame.n_seeds.max())} seeds of {count_of(reps, 'target')}"
    if "paired" in frame and not frame.paired.all():
        s += " (no shared members: unpaired bootstrap)"
    return s


# ----------------------------------------------------------------------------- Table 3


@functools.lru_cache(maxsize=None)
def paper_shift_gain() -> float:
    """The paper's Table 3 effect in AUC units: Pythia-dedup-12B's AUC on temporal Wikipedia
    (Table 3) minus on same-period Wikipedia (Table 1), averaged over the five attacks both
    tables print (the same model as :data:`SHIFT_INFLATES_AUC`'s ``paper_value``)."""
    shifted, natural = paper_table("mimir", "3").loc["12B"], paper_table("mimir", "1")["Wikipedia"].loc["12B"]
    return float((shifted - natural[shifted.index]).mean())


def _beside(es: Sequence[Effect]) -> str:
    """The effects of the attacks that are not units (:data:`BESIDE_NOTE`), or nothing."""
    if not es:
        return ""
    return f". Beside, not tallied ({NOT_PAPER_ATTACK}): {tally(es, +1).text()}; " + "; ".join(e.describe() for e in es)


def _auc_gain(claim: Claim, frame: pd.DataFrame, b: str | None, units: str) -> Verdict:
    """Table 3 and Figure 6 alike: AUC(a) - AUC(b) per (target, attack) of an ``auc_differences``
    frame, claimed positive and tallied over MIMIR's five attacks (:data:`BESIDE_NOTE`); ``b`` names
    the subtracted benchmark (``None``: the frame's)."""
    paper, beside = split_paper_attacks(frame)
    if paper.empty:
        return claim.not_tested("none of MIMIR's five attacks was scored")
    es = effects(paper)
    t = tally(es, +1)
    a, b = frame.a.iloc[0], frame.b.iloc[0] if b is None else b
    return claim.tallied(
        t,
        f"AUC({a}) - AUC({b}), paired over shared members: {_spread(es)}; {t.text()}",
        f"units: {units}, {BESIDE_NOTE}; " + TALLY_RULE,
        _beside(effects(beside)),
        lab_value=f"AUC({a}) - AUC({b}): {_spread(es).split(';')[0]}; clearly higher in {t.n_for} of {t.n}",
        n=_units_n(paper) + (f"; {count_of(beside.attack.nunique(), 'attack')} beside" if not beside.empty else ""),
    )


def shift_inflates_auc(gains: pd.DataFrame) -> Verdict:
    """Table 3: AUC with the latest shifted non-members minus AUC with the natural ones, per
    (target, attack); claimed positive. ``gains`` is ``experiments.temporal_shift.auc_differences``
    with ``a`` the latest shifted benchmark and ``b`` the natural one."""
    if gains.empty:
        return SHIFT_INFLATES_AUC.not_tested("no shifted benchmark was scored")
    claim = dataclasses.replace(SHIFT_INFLATES_AUC, paper_effect=paper_shift_gain())
    return _auc_gain(claim, gains, "natural", "(target, attack)")


# ----------------------------------------------------------------------------- Figure 6


def auc_grows_with_lateness(trend: pd.DataFrame) -> Verdict:
    """Figure 6: AUC with the latest shifted non-members minus AUC with the earliest shifted ones
    (both past the cutoff), per (target, attack); claimed positive. Decided on these paired
    effects, not on a rank correlation of point estimates."""
    if trend.empty:
        return AUC_GROWS_WITH_LATENESS.not_tested("fewer than two shifted benchmarks: no earliest-to-latest comparison")
    return _auc_gain(AUC_GROWS_WITH_LATENESS, trend, None, "(target, attack), latest minus earliest shifted benchmark")


# ----------------------------------------------------------------------------- Figures 4 and 8


def shifted_overlap_lower(drops: pd.DataFrame, n: int) -> Verdict:
    """Figures 4 and 8: the natural non-members' mean ``n``-gram overlap with the training data
    minus each shifted benchmark's (``experiments.temporal_shift.overlap_drops``); claimed
    positive in every shifted benchmark. Different texts on each side: an unpaired bootstrap
    interval; no seeds (the overlap does not depend on a model)."""
    if drops.empty:
        return SHIFTED_OVERLAP_LOWER.not_tested("no shifted benchmark")
    es = effects(drops, label_cols=("benchmark",), estimate="drop")
    t = tally(es, +1)
    nat = float(drops.natural_mean.iloc[0])
    shifted = ", ".join(f"{r.benchmark} {r.shifted_mean:.1%}" for r in drops.itertuples())
    return SHIFTED_OVERLAP_LOWER.tallied(
        t,
        f"mean {n}-gram overlap: natural {nat:.1%}; {shifted}. Drops (as fractions: 0.100 is 10 points): "
        + "; ".join(e.describe() for e in es)
        + f". {t.text()}",
        "units: shifted benchmarks; clear: the 95% bootstrap interval of the drop in mean overlap "
        "(natural minus shifted, non-members resampled independently) excludes 0; "
        + tally_outcomes("benchmarks", "show a clear drop", "a clear rise"),
        lab_value=f"mean {n}-gram overlap: natural {nat:.1%}; {shifted}",
        n=f"{int(drops.n_natural.iloc[0])} natural + {count_span(drops.n_shifted, sep='-')} shifted "
        f"non-members x {len(drops)} shifted benchmarks",
    )


# ----------------------------------------------------------------------------- Table 5


@functools.lru_cache(maxsize=1024)
def exchangeable_counts(n_natural: int, n_shifted: int, shifted_above: int) -> np.ndarray:
    """Null law of the natural false positives of a threshold set on the shifted non-members.

    The threshold is the ``(shifted_above + 1)``-th largest of ``n_shifted`` shifted scores. If the
    shifted and natural non-members come from one distribution their pooled scores are
    exchangeable, so the count of natural scores above it is the number of natural draws before the
    ``(shifted_above + 1)``-th shifted one in a random ordering: negative hypergeometric, exact (no
    resampling; continuous scores assumed). Returns P(count = x) for x = 0 .. ``n_natural`` (read-only:
    cached, as every cell of one budget shares its law)."""
    n_nat, n_sh, above = int(n_natural), int(n_shifted), int(shifted_above)
    if n_nat < 1 or n_sh < 1 or not 0 <= above <= n_sh:
        raise ValueError(
            f"expected n_natural, n_shifted >= 1 and 0 <= shifted_above <= n_shifted, got {n_nat}, {n_sh}, {above}"
        )
    x = np.arange(n_nat + 1)
    if above == n_sh:  # no shifted score below the threshold (budget 1): every natural one is flagged
        pmf = (x == n_nat).astype(float)
    else:
        pmf = nhypergeom(n_nat + n_sh, n_nat, above + 1).pmf(x)
        pmf /= pmf.sum()
    pmf.flags.writeable = False
    return pmf


def misfire_effect(false_positives: int, n_natural: int, n_shifted: int, shifted_above: int, label: str = "") -> Effect:
    """One Table 5 cell as an :class:`Effect`: the natural FPR minus its expectation under
    exchangeability, with the null law's central band (:func:`exchangeable_counts`) as interval,
    shifted so that ``lo > 0`` exactly when P(count >= observed) < :data:`ALPHA_ONE_SIDED` and
    ``hi < 0`` exactly when P(count <= observed) < :data:`ALPHA_ONE_SIDED`."""
    pmf = exchangeable_counts(n_natural, n_shifted, shifted_above)
    x, k = np.arange(pmf.size), int(false_positives)
    at_least = np.cumsum(pmf[::-1])[::-1]  # P(count >= x)
    at_most = np.cumsum(pmf)  # P(count <= x)
    upper = int(x[at_least >= ALPHA_ONE_SIDED].max())  # the largest count chance still gives
    lower = int(x[at_most >= ALPHA_ONE_SIDED].min())  # the smallest
    n = int(n_natural)
    return Effect((k - float((x * pmf).sum())) / n, (k - upper) / n, (k - lower) / n, label=label)


def misfire_effects(t5: pd.DataFrame) -> list[Effect]:
    """One :func:`misfire_effect` per row of ``experiments.temporal_shift.table5``."""
    return [
        misfire_effect(
            r.false_positives, r.n_natural, r.n_shifted, r.shifted_above, f"{r.benchmark} / {r.attack} / {r.budget:.0%}"
        )
        for r in t5.itertuples()
    ]


@functools.lru_cache(maxsize=None)
def paper_misfire_excess() -> float:
    """The paper's effect in the rule's units: Table 5's natural FPR minus the budget, as a
    fraction, averaged over its 96 cells (8 benchmarks x 4 attacks x 3 budgets)."""
    t = paper_table("mimir", "5").stack(level=[0, 1], future_stack=True)
    return float(np.mean([v / 100 - float(str(b).rstrip("%")) / 100 for (_, b, _), v in t.items()]))


MISFIRE_RULE = (
    f"units: (shifted benchmark, attack, budget) cells, {BESIDE_NOTE}. Null: the shifted and natural "
    "non-members' scores are exchangeable (one distribution), so the count of natural non-members above a "
    "threshold set at the budget on the shifted ones (its r-th largest score) follows a negative hypergeometric "
    "law, exact, with the threshold's own sampling error in it (a binomial interval around a fixed threshold "
    "leaves it out and calls chance a misfire). A cell counts for the claim when P(count >= observed) < "
    f"{ALPHA_ONE_SIDED:g}, against when P(count <= observed) < {ALPHA_ONE_SIDED:g}, else it is inside the "
    "noise (the effect: the natural FPR minus its expectation under the null, about the budget); "
    + tally_outcomes("cells", "count for it", "against it")
)


def shifted_thresholds_misfire(t5: pd.DataFrame, target: str) -> Verdict:
    """Table 5: a threshold set at an FPR budget on a shifted benchmark's non-members, applied to
    the natural non-members, flags more than chance would if the two sets came from one
    distribution. Per cell (shifted benchmark, attack, budget) of ``experiments.temporal_shift.table5``
    an exact exchangeability test (:func:`misfire_effect`); cells tallied (:data:`MISFIRE_RULE`)."""
    if t5.empty:
        return SHIFTED_THRESHOLDS_MISFIRE.not_tested("no shifted benchmark")
    t5, beside = split_paper_attacks(t5)
    if t5.empty:
        return SHIFTED_THRESHOLDS_MISFIRE.not_tested("none of MIMIR's five attacks was scored")
    es = misfire_effects(t5)
    t = tally(es, +1)
    by_budget = []
    for f in sorted(t5.budget.unique()):
        cells = [(e, r) for e, r in zip(es, t5.itertuples()) if r.budget == f]
        sub = tally([e for e, _ in cells], +1)
        chance = np.median([r.fpr - e.lo for e, r in cells])  # the null's upper end, as an FPR
        by_budget.append(
            f"at {f:.0%}: median natural FPR {100 * np.median([r.fpr for _, r in cells]):.1f}% (chance alone "
            f"gives up to {100 * chance:.1f}%), clearly above chance in {sub.n_for} of {sub.n}, clearly below in "
            f"{sub.n_against}"
        )
    f0 = float(t5.budget.min())  # the lab value quotes the smallest budget, as the paper's Table 5 leads with 1%
    head = t5[t5.budget == f0]
    claim = dataclasses.replace(SHIFTED_THRESHOLDS_MISFIRE, paper_effect=paper_misfire_excess())
    return claim.tallied(
        t,
        f"{target}, exact exchangeability test per cell (one-sided p < {ALPHA_ONE_SIDED:g}; each unit's effect, "
        "and the MDE, is its natural FPR minus what exchangeability expects, near the budget, as a fraction: 0.050 is "
        "5 points); "
        + "; ".join(by_budget)
        + f". {t.text()}"
        + (
            ""
            if beside.empty
            else f". Beside, not tallied ({', '.join(dict.fromkeys(beside.attack))}, {NOT_PAPER_ATTACK}): "
            f"{tally(misfire_effects(beside)).text()}"
        ),
        MISFIRE_RULE,
        lab_value=f"at {f0:.0%}: natural FPR {100 * head.fpr.min():.1f}-{100 * head.fpr.max():.1f}% "
        f"(median {100 * head.fpr.median():.1f}%)",
        n=f"{int(t5.n_natural.iloc[0])} natural non-members per cell (thresholds from "
        f"{count_span(t5.n_shifted, sep='-')} shifted ones); {t5.benchmark.nunique()} benchmarks x "
        f"{t5.attack.nunique()} attacks x {t5.budget.nunique()} budgets, {target}",
    )


# ----------------------------------------------------------------------------- the blind baseline (book)


def blind_baseline_separates(cmp) -> Verdict:
    """The book's own finding (the paper ran no model-free baseline): a bag-of-words classifier
    that never sees the model separates members from the latest shifted non-members about as
    well as the best attack. ``cmp`` is ``experiments.temporal_shift.BlindComparison``: the
    baseline's rise from the natural to the latest benchmark (paired over shared members) and
    its AUC minus the best attack's on the latest benchmark (paired over the same texts).

    Outcomes: inconclusive when the rise is inside the noise; not reproduced when the baseline
    clearly falls; reproduced when it clearly rises and is not clearly below the best attack;
    partly when it clearly rises but the best attack clearly beats it."""
    rise = Effect(cmp.rise.point, cmp.rise.lo, cmp.rise.hi, label="baseline, latest - natural")
    vs = Effect(cmp.vs_best.point, cmp.vs_best.lo, cmp.vs_best.hi, label=f"baseline - {cmp.best_attack}")
    if rise.sign() == 0:
        verdict = INCONCLUSIVE
    elif rise.sign() < 0:
        verdict = NOT_REPRODUCED
    else:
        verdict = PARTLY if vs.sign() < 0 else REPRODUCED
    return BLIND_BASELINE_SEPARATES.verdict(
        verdict,
        f"blind baseline AUC: natural {cmp.blind_natural:.3f}, {cmp.latest} {cmp.blind_latest:.3f}; best "
        f"attack on {cmp.latest} ({cmp.target}): {cmp.best_attack} {cmp.best_latest:.3f}. Paired: "
        f"{rise.describe()}; {vs.describe()}",
        "inconclusive if the baseline's rise (latest minus natural, 95% paired bootstrap over shared "
        "members) contains 0; not reproduced if it is clearly negative; reproduced if it is clearly "
        "positive and the baseline minus the best attack on the latest benchmark (95% paired bootstrap "
        "over the same texts) is not clearly negative; partly if the best attack clearly beats it",
        lab_value=f"baseline {cmp.blind_latest:.3f} vs best attack {cmp.best_latest:.3f} on {cmp.latest}",
        n=f"{cmp.n_members} members + {cmp.n_nonmembers} non-members on the latest benchmark ({cmp.latest}; the "
        "rise pairs its members with the natural benchmark's), out-of-fold scores",
    )
