"""Verdicts of the RaMIA chapter: Tables III/IV (RaMIA against MIA at the range centre), Figure 11
(trimmed average against GLRT and the Bayes factor), Figures 6 and 5 (range size, training-point
density), Figure 7 (MIA and RaMIA vulnerability correlated), section V-H (redacted text), and the
book's own test of whether the text result hinges on the samples' distance (the distance curve).

Every comparison is made on the *same ranges* scored two ways, so each is decided on a paired
bootstrap over the ranges (``metrics.paired_auc_difference``, turned into :class:`Effect`s, one
per backbone) and the core's tally (:data:`TALLY_RULE`): an effect inside the paired interval is
noise, and a claim with most backbones inside the noise is "inconclusive". Table III and Figure 11
are read over the attacked run's seed replicates where the lab trains them (a frame with ``n_seeds``
above 1, ``seed_sd`` and ``per_seed``: the mean of the seeds' paired differences, held to the seed bar,
:data:`SEEDS_NOTE`); the other claims rest on one target, without a seed spread. Where a chapter
averages over repeated draws of the samples, each iteration draws its samples afresh: their spread
is the sampling spread of the estimate, reported beside it; the decision rests on the paired interval over the ranges.

Input frames have one row per backbone with columns ``backbone``, ``estimate`` (AUC of side a
minus AUC of side b), ``lo``, ``hi`` (its paired 95% interval), ``auc_a``, ``auc_b`` and, where
the estimate is averaged over sampling subsets, ``spread`` (their standard deviation).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from mimirlib.core.power import RANGES, SMALLEST_EFFECT_OF_INTEREST
from mimirlib.verdicts import (
    SEED_MEAN_BAR,
    TALLY_RULE,
    Claim,
    Effect,
    Tally,
    Verdict,
    decide_tally,
    tally,
    tally_outcomes,
)
from mimirlib.verdicts.regime import Regime, centre_key

REGIME_NOTE = (
    "a backbone whose MIA at the range centre is out of the paper's regime (saturated: lab page, fidelity "
    "table) is not counted; with none left the claim is not tested"
)

# Pearson's r of Figure 7 counts as evidence only when its two-sided p-value is below the
# conventional 5% level: with a few dozen members a correlation of 0.2 is well within chance.
CORR_P = 0.05
# The paper's density sweep (Figure 5(a)) runs to 50% training points in the sampling space; the lab
# reads the effect up to this share (at 1, RaMIA would be the plain MIA on the exact members).
PAPER_MAX_DENSITY = 0.5

SUBSET_NOTE = (
    "± is the std over fresh draws of the samples, the sampling spread; the paired interval over the ranges decides"
)
SEEDS_NOTE = (
    "with r seeds of the target (the same ranges scored under each), a backbone's effect is the mean of the r seeds' "
    f"paired differences (one bootstrap over the ranges for all seeds) and {SEED_MEAN_BAR}"
)

# The chapter's claims, each decided by the rule of the same name in lower case.

RAMIA_BEATS_MIA = Claim(
    "Range membership inference (RaMIA) identifies ranges around training points better than MIA on the range centre, "
    "both judged by range membership",
    source="RaMIA §V-E, Tables III and IV, Figure 4(d)",
    key="ramia-table3-gain",
    paired_over=RANGES,
    paper_value="AG News: ΔAUC +1.20 ± 0.2 points with RMIA, +3.80 ± 0.20 with LiRA (Table III)",
    paper_effect=0.012,  # RMIA's gain in AUC units (the lab's backbones are LOSS, RMIA and the reference)
    average=True,
)

TRIMMED_BEATS_GLRT_AND_BAYES = Claim(
    "The trimmed average beats GLRT (the maximum) and the Bayes factor (the plain mean)",
    source="RaMIA §IV-C, appendix C, Figure 11(d)",
    key="ramia-fig11-trimmed",
    paired_over=RANGES,
    effect_of_interest=SMALLEST_EFFECT_OF_INTEREST,  # figure only: the book's bound (power)
    paper_value="trimmed mean above GLRT and Bayes factor on all four datasets (bars only, no numbers in the text)",
    average=True,
)

LARGER_RANGE_LOWERS_AUC = Claim(
    "Attack performance decreases when the range size d grows without introducing more training members",
    source="RaMIA §V-F, Figure 6",
    key="ramia-fig6-range-size",
    paired_over=RANGES,
    effect_of_interest=SMALLEST_EFFECT_OF_INTEREST,  # figure only: the book's bound (power)
    paper_value="monotonic decrease on Purchase-100 (ℓ1) and CIFAR-10 (ℓ2); no text panel",
    average=True,
)

DENSITY_RAISES_AUC = Claim(
    "Attack performance increases in tandem with the density of training points in the range",
    source="RaMIA §V-F, Figure 5(a)",
    key="ramia-fig5-density",
    paired_over=RANGES,
    paper_value="monotonically better as the density rises from 0% to 50% (CelebA)",
    average=True,
)

VULNERABILITY_CORRELATED = Claim(
    "The vulnerability to MIA is positively correlated with that to RaMIA",
    source="RaMIA §V-F, Figure 7",
    key="ramia-fig7-correlation",
    paper_value="positive Pearson r on Purchase-100, CIFAR-10 and AG News (values in the figure)",
)

REDACTION_BEATS_COMPLETION = Claim(
    "RaMIA identifies which redacted texts were trained on better than MIA on their completions",
    source="RaMIA §V-H, Figure 9",
    key="ramia-vh-redacted",
    effect_of_interest=SMALLEST_EFFECT_OF_INTEREST,  # figure only: the book's bound (power)
    paper_value="RaMIA above MIA on AG News with names redacted, 10 BERT completions; a smaller gap than Figure 4(d)",
    average=True,
)


CLOSER_SAMPLES_RAISE_GAIN = Claim(
    "The text result hinges on how close the samples fall to the text: RaMIA's gain over the MIA at the range "
    "centre rises as the samples come closer, and samples no farther from the text than the centre do not lose to it",
    source="the book (RaMIA chapter, distance curve): why the lab's Table III text column differs from the paper's",
    key="ramia-distance-curve",
    paired_over=RANGES,
    paper_value="no paper claim; the paper's BERT samples gain 1.2 points with RMIA on AG News (Table III) and "
    "do not report their distance to the training text",
    origin="book",
    effect_of_interest=SMALLEST_EFFECT_OF_INTEREST,  # no paper number: the rise is read against the book's bound
)


def _pts(x: float) -> str:
    return f"{100 * x:+.1f}"


def _effects(frame: pd.DataFrame) -> list[Effect]:
    """One Effect per row; a row marked ``tie`` (the two scores are the same by construction) is an
    exact zero: it can be neither evidence for the claim nor against it."""
    out = []
    for r in frame.itertuples():
        label = str(getattr(r, "unit", r.backbone))
        k = int(getattr(r, "n_seeds", 1))
        if bool(getattr(r, "tie", False)):
            out.append(Effect(0.0, 0.0, 0.0, label=f"{label} (the same score by construction)"))
        elif k > 1:  # the mean of k seeds' paired differences: held to the seed bar (SEEDS_NOTE)
            out.append(Effect(float(r.estimate), float(r.lo), float(r.hi), float(r.seed_sd), k, label, averaged=k))
        else:
            out.append(Effect(float(r.estimate), float(r.lo), float(r.hi), label=label))
    return out


def _seeded(frame: pd.DataFrame) -> int:
    """Over how many seeds of the target ``frame``'s effects are means (1 without an ``n_seeds`` column)."""
    return int(frame.n_seeds.max()) if "n_seeds" in frame and len(frame) else 1


def in_regime(frame: pd.DataFrame, rows: Sequence[Regime]) -> tuple[pd.DataFrame, list[Regime]]:
    """``frame``'s rows whose backbone's centre MIA is in the paper's regime (row key
    ``centre-<backbone>``; a backbone without a row is kept), and the out-of-regime rows dropped."""
    by = {r.key: r for r in rows}
    out = [by[centre_key(b)] for b in dict.fromkeys(frame.backbone) if by.get(centre_key(b))]
    out = [r for r in out if r.in_regime is False]
    dropped = {r.key for r in out}
    keep = frame[[centre_key(b) not in dropped for b in frame.backbone]] if len(frame) else frame
    return keep, out


def not_counted(out: Sequence[Regime]) -> str:
    """The evidence's note on the backbones :func:`in_regime` dropped (empty when none)."""
    return (
        "; not counted, out of the paper's regime: " + "; ".join(r.why_not().removeprefix("not tested: ") for r in out)
        if out
        else ""
    )


def _tallied(
    claim: Claim,
    frame: pd.DataFrame,
    n: str,
    evidence: str,
    units: str,
    lab_value: str,
    after: str = "",
    regime: Sequence[Regime] = (),
) -> Verdict:
    """The claim decided on the tally of ``frame``'s effects (:func:`_effects`, the core's
    :data:`TALLY_RULE` with ``units`` named); the evidence reads ``evidence``, the tally, ``after``.
    Backbones out of the paper's regime (``regime``: the chapter's centre rows) are not counted."""
    keys = ",".join(r.key for r in regime)
    kept, out = in_regime(frame, regime)
    if out and kept.empty:
        return claim.out_of_regime(out, lab_value=lab_value, n=n, regime=keys)
    t = tally(_effects(kept))
    after += not_counted(out)
    rule = f"{TALLY_RULE}; {units}" + (f"; {SEEDS_NOTE}" if _seeded(frame) > 1 else "")
    rule += f"; {REGIME_NOTE}" if regime else ""
    return claim.tallied(t, f"{evidence}; {t.text()}", rule, after, points=True, lab_value=lab_value, n=n, regime=keys)


def _diff_text(r, with_spread: bool = True) -> str:
    """A row's effect in AUC points with its paired interval (and the subset spread, where known); a mean over
    seeds of the target (column ``n_seeds`` above 1) also gives the seeds' own estimates and their sd."""
    s = f"{_pts(r.estimate)} [{_pts(r.lo)}, {_pts(r.hi)}]"
    spread = getattr(r, "spread", float("nan"))
    if with_spread and spread is not None and math.isfinite(spread):
        s += f" ± {100 * spread:.1f}"
    k = int(getattr(r, "n_seeds", 1))
    if k > 1:
        s += f" (seeds {', '.join(_pts(x) for x in r.per_seed)}; seed sd {100 * r.seed_sd:.1f})"
    return s


def _sweep_text(r, low: tuple[float, str], high: tuple[float, str], param: str, with_spread: bool) -> str:
    """One backbone of a sweep over ``param``: the AUC at its lowest and at its highest value (each
    with the value as shown), the effect (:func:`_diff_text`) and Spearman's rho of ``param`` and AUC."""
    return (
        f"{r.backbone} {low[0]:.3f} ({low[1]}) to {high[0]:.3f} ({high[1]}): {_diff_text(r, with_spread)}, "
        f"Spearman rho({param}, AUC) {r.rho:.2f}"
    )


# ----------------------------------------------------------------------------- Tables III and IV


def ramia_beats_mia(gains: pd.DataFrame, n: str, regime: Sequence[Regime] = ()) -> Verdict:
    """RaMIA (trimmed average of the range's samples, side a) against MIA on the range centre
    (side b), both judged by range membership; one unit per backbone."""
    if gains.empty:
        return RAMIA_BEATS_MIA.not_tested("no backbone ran", n=n)
    return _tallied(
        RAMIA_BEATS_MIA,
        gains,
        n,
        (
            "RaMIA minus MIA at the centre, the mean over the target's seeds"
            if _seeded(gains) > 1
            else "RaMIA minus MIA at the centre"
        )
        + ", AUC points [paired 95% CI over the ranges]: "
        + ", ".join(f"{r.backbone} {_diff_text(r)}" for r in gains.itertuples())
        + f" ({SUBSET_NOTE}); room left above the MIA at the centre (100 × (1 - its AUC"
        + (", the seeds' mean" if _seeded(gains) > 1 else "")
        + ")): "
        + ", ".join(f"{r.backbone} {100 * (1 - r.auc_b):.1f}" for r in gains.itertuples()),
        "one unit per backbone",
        "ΔAUC " + ", ".join(f"{r.backbone} {_pts(r.estimate)}" for r in gains.itertuples()) + " points",
        regime=regime,
    )


# ----------------------------------------------------------------------------- Figure 11


def trimmed_beats_glrt_and_bayes(versus: pd.DataFrame, n: str, regime: Sequence[Regime] = ()) -> Verdict:
    """The trimmed average (side a) against GLRT and the Bayes factor (side b, column ``baseline``),
    one unit per (backbone, baseline). A row with ``tie`` True compares a score with itself (the
    trim chosen on the reference keeps every sample, which *is* the Bayes factor, or only the top
    one, which is GLRT): it counts as no effect, never for the claim."""
    if versus.empty:
        return TRIMMED_BEATS_GLRT_AND_BAYES.not_tested("no backbone ran", n=n)
    v = versus.assign(unit=[f"{r.backbone} vs {r.baseline}" for r in versus.itertuples()])
    ties = [u for u, tie in zip(v.unit, v.get("tie", [False] * len(v))) if tie]
    parts = [
        f"{r.unit} " + ("tie by construction" if bool(getattr(r, "tie", False)) else _diff_text(r, False))
        for r in v.itertuples()
    ]
    return _tallied(
        TRIMMED_BEATS_GLRT_AND_BAYES,
        v,
        n,
        ("trimmed minus baseline, the mean over the target's seeds" if _seeded(v) > 1 else "trimmed minus baseline")
        + ", AUC points [paired 95% CI over the ranges]: "
        + ", ".join(parts),
        "one unit per (backbone, baseline); a comparison whose two scores are identical by construction "
        "(the chosen trim keeps all samples, or only the top one) counts as no effect",
        ("the seeds' mean AUCs: " if _seeded(v) > 1 else "")
        + ", ".join(f"{r.backbone}: trimmed {r.auc_a:.3f} vs {r.baseline} {r.auc_b:.3f}" for r in v.itertuples()),
        f"; ties by construction (counted as no effect): {', '.join(ties)}" if ties else "",
        regime=regime,
    )


# ----------------------------------------------------------------------------- Figures 6 and 5


def larger_range_lowers_auc(sizes: pd.DataFrame, n: str, regime: Sequence[Regime] = ()) -> Verdict:
    """RaMIA's AUC at the smallest range size (side a) minus at the largest (side b), on ranges around
    the same texts; one unit per backbone. Columns ``d_small``, ``d_large``, ``rho`` (Spearman's rho
    of d and AUC over every size, shown, not decisive)."""
    if sizes.empty:
        return LARGER_RANGE_LOWERS_AUC.not_tested("fewer than two range sizes", n=n)
    return _tallied(
        LARGER_RANGE_LOWERS_AUC,
        sizes,
        n,
        "RaMIA AUC at the smallest minus the largest d, points [paired 95% CI over the texts]: "
        + ", ".join(
            _sweep_text(r, (r.auc_a, f"d {r.d_small:g}"), (r.auc_b, f"d {r.d_large:g}"), "d", False)
            for r in sizes.itertuples()
        ),
        "one unit per backbone, the smallest against the largest d",
        ", ".join(f"{r.backbone} {r.auc_a:.3f} to {r.auc_b:.3f}" for r in sizes.itertuples()),
        regime=regime,
    )


def density_raises_auc(density: pd.DataFrame, n: str, regime: Sequence[Regime] = ()) -> Verdict:
    """RaMIA's AUC at the higher training-point density (side a, column ``density_hi``) minus at the
    lowest (side b, ``density_lo``), on the same ranges; one unit per backbone; ``rho`` shown."""
    if density.empty:
        return DENSITY_RAISES_AUC.not_tested("fewer than two densities", n=n)
    return _tallied(
        DENSITY_RAISES_AUC,
        density,
        n,
        "RaMIA AUC at the higher minus the lower density, points [paired 95% CI over the ranges]: "
        + ", ".join(
            _sweep_text(r, (r.auc_b, f"{r.density_lo:.0%}"), (r.auc_a, f"{r.density_hi:.0%}"), "density", True)
            for r in density.itertuples()
        )
        + f" ({SUBSET_NOTE})",
        f"one unit per backbone, the lowest density against the highest up to {PAPER_MAX_DENSITY:.0%} "
        "(the paper's range)",
        ", ".join(f"{r.backbone} {r.auc_b:.3f} to {r.auc_a:.3f}" for r in density.itertuples()),
        regime=regime,
    )


# ----------------------------------------------------------------------------- Figure 7


CORR_RULE = (
    f"per backbone, Pearson's r of members' MIA and RaMIA percentiles counts for the claim when r > 0 "
    f"with p < {CORR_P:g}, against when r < 0 with p < {CORR_P:g}, as noise otherwise; "
    + tally_outcomes("backbones", "count for it", "against it")
)


def vulnerability_correlated(corr: pd.DataFrame, n: str) -> Verdict:
    """Members' MIA percentile against their range's RaMIA percentile: columns ``backbone``, ``r``,
    ``p`` (NaN when a side is constant: counted as noise)."""
    if corr.empty:
        return VULNERABILITY_CORRELATED.not_tested("no backbone ran", n=n)
    sig = [(r.r, r.p) for r in corr.itertuples() if math.isfinite(r.r) and math.isfinite(r.p) and r.p < CORR_P]
    t = Tally(sum(r > 0 for r, _ in sig), sum(r < 0 for r, _ in sig), len(corr) - len(sig))
    evidence = "Pearson r (p): " + ", ".join(f"{r.backbone} {r.r:.2f} ({r.p:.3g})" for r in corr.itertuples())
    evidence += f"; significantly positive in {t.n_for} of {t.n}, significantly negative in {t.n_against}"
    lab_value = "r " + ", ".join(f"{r.backbone} {r.r:.2f}" for r in corr.itertuples())
    return VULNERABILITY_CORRELATED.tallied(t, evidence, CORR_RULE, lab_value=lab_value, n=n)


# ----------------------------------------------------------------------------- section V-H


def redaction_beats_completion(red: pd.DataFrame, n: str, regime: Sequence[Regime] = ()) -> Verdict:
    """RaMIA on a redacted text's completions (side a) against MIA on one completion (side b, its AUC
    averaged over the completions, as the paper reports it), on the same texts; one unit per
    backbone. Optional columns ``auc_mean`` (the plain mean of the completions) and ``tie_mean``
    (RaMIA's trim keeps every completion, so it *is* that mean) are reported."""
    if red.empty:
        return REDACTION_BEATS_COMPLETION.not_tested("no redacted text with something to redact", n=n)
    parts = []
    for r in red.itertuples():
        s = f"{r.backbone} RaMIA {r.auc_a:.3f} vs one completion {r.auc_b:.3f}: " + _diff_text(r, False)
        if hasattr(r, "auc_mean"):
            s += f" (mean of completions {r.auc_mean:.3f}" + (
                ", the same score: no trim was chosen)" if bool(getattr(r, "tie_mean", False)) else ")"
            )
        parts.append(s)
    return _tallied(
        REDACTION_BEATS_COMPLETION,
        red,
        n,
        "AUC points [paired 95% CI over the texts]: " + ", ".join(parts),
        "one unit per backbone",
        ", ".join(f"{r.backbone} {r.auc_a:.3f} vs {r.auc_b:.3f}" for r in red.itertuples()),
        regime=regime,
    )


# ----------------------------------------------------------------------------- the distance curve


DISTANCE_RULE = (
    "per backbone, against the chapter's sampler (p_far) and the nearest restoration p whose samples sit on "
    "average no farther from their text than the centre (p_near): for the claim when RaMIA at p_near minus at "
    "p_far has a paired 95% interval above 0 and RaMIA minus MIA at p_near is not clearly negative (its interval "
    "reaches 0 or above); against when the rise is clearly negative, or RaMIA stays clearly below the MIA at p_near; "
    "noise otherwise. " + tally_outcomes("backbones", "count for it", "against it") + "; power: the rise's "
    "MDE (the backbones read the same ranges: their se pooled as fully correlated) against the book's smallest "
    "effect of interest, one AUC point"
)


def _distance_sign(r) -> int:
    """+1, -1 or 0 for one backbone's row of :func:`closer_samples_raise_gain` (:data:`DISTANCE_RULE`)."""
    if r.hi < 0 or r.near_hi < 0:
        return -1
    if r.lo > 0:
        return 1
    return 0


def closer_samples_raise_gain(summary: pd.DataFrame, n: str, regime: Sequence[Regime] = ()) -> Verdict:
    """The distance curve, one row per backbone (``experiments.ramia.distance.distance_summary``): ``estimate``,
    ``lo``, ``hi`` (RaMIA at p_near minus at p_far, paired over the ranges), ``near_estimate``,
    ``near_lo``, ``near_hi`` (RaMIA minus MIA at the centre at p_near), ``far_estimate``, ``d_far``,
    ``d_near``, ``p_near``, ``alpha`` and ``crossing`` (the distance where the gain turns >= 0)."""
    if summary.empty:
        return CLOSER_SAMPLES_RAISE_GAIN.not_tested(
            "no restoration probability brings the samples as close to their text as the centre", n=n
        )
    keys = ",".join(r.key for r in regime)
    kept, out = in_regime(summary, regime)
    if out and kept.empty:
        return CLOSER_SAMPLES_RAISE_GAIN.out_of_regime(out, lab_value="-", n=n, regime=keys)
    signs = [_distance_sign(r) for r in kept.itertuples()]
    t = Tally(signs.count(1), signs.count(-1), signs.count(0))
    # the power reading is the rise's; the tally is not of these effects' own signs (a unit also needs RaMIA not
    # clearly below the MIA at p_near), so the verdict is not re-read over lab draws from them
    rises = [Effect(r.estimate, r.lo, r.hi, label=r.backbone) for r in kept.itertuples()]
    reading = CLOSER_SAMPLES_RAISE_GAIN.read_power(rises)
    parts = [
        f"{r.backbone}: RaMIA minus MIA {_pts(r.far_estimate)} at {r.d_far:.1f} words (the chapter's sampler), "
        f"{_pts(r.near_estimate)} [{_pts(r.near_lo)}, {_pts(r.near_hi)}] at {r.d_near:.1f} words (p {r.p_near:g}; "
        f"the centre: {r.alpha:g}); RaMIA rises {_diff_text(r, False)}"
        + (f"; it overtakes the MIA at {r.crossing:.0f} words" if math.isfinite(r.crossing) else "")
        for r in summary.itertuples()
    ]
    evidence = "AUC points [paired 95% CI over the ranges]: " + "; ".join(parts) + f"; {t.text()}" + not_counted(out)
    lab_value = ", ".join(
        f"{r.backbone} {_pts(r.far_estimate)} to {_pts(r.near_estimate)} points" for r in summary.itertuples()
    )
    rule = DISTANCE_RULE + (f"; {REGIME_NOTE}" if regime else "")
    return CLOSER_SAMPLES_RAISE_GAIN.with_power(
        decide_tally(t), reading, evidence, rule, points=True, lab_value=lab_value, n=n, regime=keys
    )
