"""Verdicts of the RaMIA chapter: Tables III/IV (RaMIA against MIA at the range centre), Figure 11
(trimmed average against GLRT and the Bayes factor), Figures 6 and 5 (range size, training-point
density), Figure 7 (MIA and RaMIA vulnerability correlated) and section V-H (redacted text).

Every comparison is made on the *same ranges* scored two ways, so each is decided on a paired
bootstrap over the ranges (``metrics.paired_auc_difference``, turned into :class:`Effect`s, one
per backbone) and the core's tally (:data:`TALLY_RULE`): an effect inside the paired interval is
noise, and a claim with most backbones inside the noise is "inconclusive". The lab trains one
multi-epoch target, so there is no seed spread here. Where a chapter averages over random subsets
of the samples, the subsets come from one pool drawn once per range: their spread says how the
choice of subset moves the AUC, not what a fresh draw of samples would give, so it is reported
but never used as a noise bar.

Input frames have one row per backbone with columns ``backbone``, ``estimate`` (AUC of side a
minus AUC of side b), ``lo``, ``hi`` (its paired 95% interval), ``auc_a``, ``auc_b`` and, where
the estimate is averaged over sampling subsets, ``spread`` (their standard deviation).
"""

from __future__ import annotations

import math

import pandas as pd

from . import (
    TALLY_DECIDED,
    TALLY_REPRODUCED,
    TALLY_RULE,
    Effect,
    Tally,
    Verdict,
    decide_tally,
    not_tested,
    tally,
)

# Pearson's r of Figure 7 counts as evidence only when its two-sided p-value is below the
# conventional 5% level: with a few dozen members a correlation of 0.2 is well within chance.
CORR_P = 0.05
# The paper's density sweep (Figure 5(a)) runs from 0% to 50% training points in the sampling
# space; the lab reads the density effect between its lowest density and its highest one up to
# this share (a share of 1 would turn RaMIA into the plain MIA on the exact members).
PAPER_MAX_DENSITY = 0.5

SUBSET_NOTE = ("± is the std over random subsets of one pool of samples drawn once per range: it shows how the "
               "choice of subset moves the AUC, not what a fresh draw of samples would give, and decides nothing")


def _pts(x: float) -> str:
    return f"{100 * x:+.1f}"


def _effects(frame: pd.DataFrame) -> list[Effect]:
    """One Effect per row; a row marked ``tie`` (the two scores are the same by construction) is an
    exact zero: it can be neither evidence for the claim nor against it."""
    out = []
    for r in frame.itertuples():
        label = str(getattr(r, "unit", r.backbone))
        if bool(getattr(r, "tie", False)):
            out.append(Effect(0.0, 0.0, 0.0, label=f"{label} (the same score by construction)"))
        else:
            out.append(Effect(float(r.estimate), float(r.lo), float(r.hi), label=label))
    return out


def _diff_text(r, with_spread: bool = True) -> str:
    s = f"{r.backbone} {_pts(r.estimate)} [{_pts(r.lo)}, {_pts(r.hi)}]"
    spread = getattr(r, "spread", float("nan"))
    if with_spread and spread is not None and math.isfinite(spread):
        s += f" ± {100 * spread:.1f}"
    return s


# ----------------------------------------------------------------------------- Tables III and IV


def ramia_beats_mia(gains: pd.DataFrame, n: str) -> Verdict:
    """RaMIA (trimmed average of the range's samples, side a) against MIA on the range centre
    (side b), both judged by range membership; one unit per backbone."""
    claim = ("Range membership inference (RaMIA) identifies ranges around training points better than MIA on "
             "the range centre, both judged by range membership")
    meta = dict(source="RaMIA §V-E, Tables III and IV, Figure 4(d)", key="ramia-table3-gain", n=n,
                paper_value="AG News: ΔAUC +1.20 ± 0.2 points with RMIA, +3.80 ± 0.20 with LiRA (Table III)")
    if gains.empty:
        return not_tested(claim, "no backbone ran", **meta)
    t = tally(_effects(gains))
    evidence = ("RaMIA minus MIA at the centre, AUC points [paired 95% CI over the ranges]: "
                + ", ".join(_diff_text(r) for r in gains.itertuples()) + f" ({SUBSET_NOTE}); " + t.text())
    lab_value = "ΔAUC " + ", ".join(f"{r.backbone} {_pts(r.estimate)}" for r in gains.itertuples()) + " points"
    return Verdict(claim, decide_tally(t), evidence, TALLY_RULE + "; one unit per backbone", lab_value=lab_value,
                   **meta)


# ----------------------------------------------------------------------------- Figure 11


def trimmed_beats_glrt_and_bayes(versus: pd.DataFrame, n: str) -> Verdict:
    """The trimmed average (side a) against GLRT and the Bayes factor (side b, column ``baseline``),
    one unit per (backbone, baseline). A row with ``tie`` True compares a score with itself (the
    trim chosen on the reference keeps every sample, which *is* the Bayes factor, or only the top
    one, which is GLRT): it counts as no effect, never for the claim."""
    claim = "The trimmed average beats GLRT (the maximum) and the Bayes factor (the plain mean)"
    meta = dict(source="RaMIA §IV-C, appendix C, Figure 11(d)", key="ramia-fig11-trimmed", n=n,
                paper_value="trimmed mean above GLRT and Bayes factor on all four datasets (bars only, "
                            "no numbers in the text)")
    if versus.empty:
        return not_tested(claim, "no backbone ran", **meta)
    v = versus.assign(unit=[f"{r.backbone} vs {r.baseline}" for r in versus.itertuples()])
    t = tally(_effects(v))
    ties = [u for u, tie in zip(v.unit, v.get("tie", [False] * len(v))) if tie]
    parts = [f"{r.unit} " + ("tie by construction" if bool(getattr(r, "tie", False)) else
                             f"{_pts(r.estimate)} [{_pts(r.lo)}, {_pts(r.hi)}]") for r in v.itertuples()]
    evidence = ("trimmed minus baseline, AUC points [paired 95% CI over the ranges]: " + ", ".join(parts) + "; "
                + t.text() + (f"; ties by construction (counted as no effect): {', '.join(ties)}" if ties else ""))
    rule = (TALLY_RULE + "; one unit per (backbone, baseline); a comparison whose two scores are identical by "
            "construction (the chosen trim keeps all samples, or only the top one) counts as no effect")
    lab_value = ", ".join(f"{r.backbone}: trimmed {r.auc_a:.3f} vs {r.baseline} {r.auc_b:.3f}" for r in v.itertuples())
    return Verdict(claim, decide_tally(t), evidence, rule, lab_value=lab_value, **meta)


# ----------------------------------------------------------------------------- Figures 6 and 5


def larger_range_lowers_auc(sizes: pd.DataFrame, n: str) -> Verdict:
    """RaMIA's AUC at the smallest range size (side a) minus at the largest (side b), on ranges around
    the same texts; one unit per backbone. Columns ``d_small``, ``d_large``, ``rho`` (Spearman's rho
    of d and AUC over every size, shown, not decisive)."""
    claim = ("Attack performance decreases when the range size d grows without introducing more training "
             "members")
    meta = dict(source="RaMIA §V-F, Figure 6", key="ramia-fig6-range-size", n=n,
                paper_value="monotonic decrease on Purchase-100 (ℓ1) and CIFAR-10 (ℓ2); no text panel")
    if sizes.empty:
        return not_tested(claim, "fewer than two range sizes", **meta)
    t = tally(_effects(sizes))
    evidence = ("RaMIA AUC at the smallest minus the largest d, points [paired 95% CI over the texts]: "
                + ", ".join(f"{r.backbone} {r.auc_a:.3f} (d {r.d_small:g}) to {r.auc_b:.3f} (d {r.d_large:g}): "
                            f"{_pts(r.estimate)} [{_pts(r.lo)}, {_pts(r.hi)}], Spearman rho(d, AUC) {r.rho:.2f}"
                            for r in sizes.itertuples()) + "; " + t.text())
    lab_value = ", ".join(f"{r.backbone} {r.auc_a:.3f} to {r.auc_b:.3f}" for r in sizes.itertuples())
    return Verdict(claim, decide_tally(t), evidence,
                   TALLY_RULE + "; one unit per backbone, the smallest against the largest d", lab_value=lab_value,
                   **meta)


def density_raises_auc(density: pd.DataFrame, n: str) -> Verdict:
    """RaMIA's AUC at the higher training-point density (side a, column ``density_hi``) minus at the
    lowest (side b, ``density_lo``), on the same ranges; one unit per backbone; ``rho`` shown."""
    claim = "Attack performance increases in tandem with the density of training points in the range"
    meta = dict(source="RaMIA §V-F, Figure 5(a)", key="ramia-fig5-density", n=n,
                paper_value="monotonically better as the density rises from 0% to 50% (CelebA)")
    if density.empty:
        return not_tested(claim, "fewer than two densities", **meta)
    t = tally(_effects(density))
    evidence = ("RaMIA AUC at the higher minus the lower density, points [paired 95% CI over the ranges]: "
                + ", ".join(f"{r.backbone} {r.auc_b:.3f} ({r.density_lo:.0%}) to {r.auc_a:.3f} ({r.density_hi:.0%}): "
                            f"{_diff_text(r)[len(r.backbone) + 1:]}, Spearman rho(density, AUC) {r.rho:.2f}"
                            for r in density.itertuples()) + f" ({SUBSET_NOTE}); " + t.text())
    rule = (TALLY_RULE + f"; one unit per backbone, the lowest density against the highest up to "
            f"{PAPER_MAX_DENSITY:.0%} (the paper's range)")
    lab_value = ", ".join(f"{r.backbone} {r.auc_b:.3f} to {r.auc_a:.3f}" for r in density.itertuples())
    return Verdict(claim, decide_tally(t), evidence, rule, lab_value=lab_value, **meta)


# ----------------------------------------------------------------------------- Figure 7


CORR_RULE = (f"per backbone, Pearson's r of members' MIA and RaMIA percentiles counts for the claim when r > 0 "
             f"with p < {CORR_P:g}, against when r < 0 with p < {CORR_P:g}, as noise otherwise; reproduced if "
             f">= {TALLY_REPRODUCED:.0%} of backbones count for it; inconclusive if fewer than {TALLY_DECIDED:.0%} "
             f"count either way; otherwise partly if more for than against, else not reproduced")


def vulnerability_correlated(corr: pd.DataFrame, n: str) -> Verdict:
    """Members' MIA percentile against their range's RaMIA percentile: columns ``backbone``, ``r``,
    ``p`` (NaN when a side is constant: counted as noise)."""
    claim = "The vulnerability to MIA is positively correlated with that to RaMIA"
    meta = dict(source="RaMIA §V-F, Figure 7", key="ramia-fig7-correlation", n=n,
                paper_value="positive Pearson r on Purchase-100, CIFAR-10 and AG News (values in the figure)")
    if corr.empty:
        return not_tested(claim, "no backbone ran", **meta)
    sig = [(r.r, r.p) for r in corr.itertuples() if math.isfinite(r.r) and math.isfinite(r.p) and r.p < CORR_P]
    t = Tally(sum(r > 0 for r, _ in sig), sum(r < 0 for r, _ in sig), len(corr) - len(sig))
    evidence = "Pearson r (p): " + ", ".join(f"{r.backbone} {r.r:.2f} ({r.p:.3g})" for r in corr.itertuples())
    evidence += f"; significantly positive in {t.n_for} of {t.n}, significantly negative in {t.n_against}"
    lab_value = "r " + ", ".join(f"{r.backbone} {r.r:.2f}" for r in corr.itertuples())
    return Verdict(claim, decide_tally(t), evidence, CORR_RULE, lab_value=lab_value, **meta)


# ----------------------------------------------------------------------------- section V-H


def redaction_beats_completion(red: pd.DataFrame, n: str) -> Verdict:
    """RaMIA on a redacted text's completions (side a) against MIA on one completion (side b, its AUC
    averaged over the completions, as the paper reports it), on the same texts; one unit per
    backbone. Optional columns ``auc_mean`` (the plain mean of the completions) and ``tie_mean``
    (RaMIA's trim keeps every completion, so it *is* that mean) are reported."""
    claim = "RaMIA identifies which redacted texts were trained on better than MIA on their completions"
    meta = dict(source="RaMIA §V-H, Figure 9", key="ramia-vh-redacted", n=n,
                paper_value="RaMIA above MIA on AG News with names redacted, 10 BERT completions; a smaller gap "
                            "than Figure 4(d)")
    if red.empty:
        return not_tested(claim, "no redacted text with something to redact", **meta)
    t = tally(_effects(red))
    parts = []
    for r in red.itertuples():
        s = (f"{r.backbone} RaMIA {r.auc_a:.3f} vs one completion {r.auc_b:.3f}: "
             + _diff_text(r, False)[len(r.backbone) + 1:])
        if hasattr(r, "auc_mean"):
            s += f" (mean of completions {r.auc_mean:.3f}" + (", the same score: no trim was chosen)"
                                                               if bool(getattr(r, "tie_mean", False)) else ")")
        parts.append(s)
    evidence = "AUC points [paired 95% CI over the texts]: " + ", ".join(parts) + "; " + t.text()
    lab_value = ", ".join(f"{r.backbone} {r.auc_a:.3f} vs {r.auc_b:.3f}" for r in red.itertuples())
    return Verdict(claim, decide_tally(t), evidence, TALLY_RULE + "; one unit per backbone", lab_value=lab_value,
                   **meta)
