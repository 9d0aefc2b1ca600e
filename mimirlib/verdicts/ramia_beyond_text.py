"""Verdicts of the "RaMIA beyond text" chapter: Table III's gain of RaMIA over the MIA at the
range's point query, on the image column (CIFAR-10) and the tabular column (Purchase-100), each
reproduced in miniature on the digits bundled with scikit-learn.

Each modality is decided on the tally (:data:`TALLY_RULE`) of one :class:`Effect` per backbone
(LOSS, RMIA): RaMIA's range AUC minus the MIA's, paired over the same ranges
(``core.range_stats.paired_difference``: the paired 95% bootstrap interval of a typical sampling
draw, averaged over the draws) and, as the second noise bar, the standard deviation of the gain
over *fresh* samplings of every range (the spread the paper reports in Table III). An effect is
clear only when the interval excludes 0 and the mean gain exceeds :data:`SEED_Z` standard errors
of that mean over the samplings (the sampling sd / sqrt(iterations): ``Effect.averaged``), the
core's rule with the sampling spread in the place of a seed spread.

Input frames have one row per backbone with columns ``backbone``, ``estimate`` (RaMIA's AUC minus
the MIA's, mean over samplings), ``lo``, ``hi``, ``spread`` (std over samplings, NaN for one),
``auc_a`` (RaMIA) and ``auc_b`` (MIA), and ``n_iterations`` optionally.
"""

from __future__ import annotations

import math

import pandas as pd

from mimirlib.verdicts import SEED_Z, TALLY_RULE, Claim, Effect, Verdict, tally

IMAGES_GAIN = Claim(
    "RaMIA identifies ranges of geometrically transformed images around training images better than MIA on the "
    "range centre, both judged by range membership",
    source="RaMIA §V-E, Table III, Figure 4(c)",
    key="ramia-table3-images",
    paper_value="CIFAR-10: ΔAUC +2.13 ± 0.06 points with RMIA, +1.10 ± 0.00 with LiRA (Table III)",
    paper_effect=0.0213,  # RMIA's gain in AUC units (the lab runs RMIA, not LiRA)
)

TABLES_GAIN = Claim(
    "RaMIA identifies ranges of rows with missing columns around training rows better than MIA on the mode-imputed "
    "row, both judged by range membership",
    source="RaMIA §V-E, Table III, Figure 4(a)",
    key="ramia-table3-tables",
    paper_value="Purchase-100 (m = 10): ΔAUC +2.62 ± 0.04 points with RMIA, +0.90 ± 0.03 with LiRA (Table III)",
    paper_effect=0.0262,  # RMIA's gain in AUC units
)

UNITS = "units: backbones (LOSS, RMIA)"
NOISE = (
    f"clear also needs |mean gain| > {SEED_Z:g} standard errors of that mean over the k fresh samplings of every "
    "range (std of the gain over the samplings / sqrt(k): the sampling spread stands where the core rule has a "
    "seed spread)"
)


def effects_of(gains: pd.DataFrame) -> list[Effect]:
    """One :class:`Effect` per backbone; the sampling spread takes the seed spread's place (NaN: unknown),
    and the estimate, a mean over ``n_iterations`` samplings, is averaged over that many."""
    out = []
    for r in gains.itertuples(index=False):
        sd = getattr(r, "spread", math.nan)
        sd = None if sd is None or not math.isfinite(float(sd)) else float(sd)
        k = int(getattr(r, "n_iterations", 1) or 1)
        out.append(Effect(float(r.estimate), float(r.lo), float(r.hi), sd, k, str(r.backbone), k))
    return out


def _describe(gains: pd.DataFrame) -> str:
    parts = []
    for r in gains.itertuples(index=False):
        s = (
            f"{r.backbone}: AUC {r.auc_b:.3f} -> {r.auc_a:.3f}, "
            f"{100 * r.estimate:+.2f} points [{100 * r.lo:+.2f}, {100 * r.hi:+.2f}]"
        )
        if math.isfinite(float(getattr(r, "spread", math.nan))):
            s += f" ± {100 * r.spread:.2f} over samplings"
        parts.append(s)
    return "; ".join(parts)


def _gain(claim: Claim, gains: pd.DataFrame, n: str, what: str) -> Verdict:
    if gains is None or gains.empty:
        return claim.not_tested(f"the {what} modality was not run", lab_value="not measured", n=n)
    t = tally(effects_of(gains))
    return claim.tallied(
        t,
        f"RaMIA minus MIA at the {'centre' if what == 'images' else 'mode-imputed row'}, paired over the ranges: "
        f"{t.text()}. {_describe(gains)}",
        f"{TALLY_RULE}; {UNITS}; {NOISE}",
        lab_value="; ".join(f"{r.backbone} {100 * r.estimate:+.2f} points" for r in gains.itertuples(index=False)),
        n=n,
    )


def images_gain(gains: pd.DataFrame, *, n: str) -> Verdict:
    """RaMIA Table III, CIFAR-10 column: ranges of flips, shifts and rotations of the digits."""
    return _gain(IMAGES_GAIN, gains, n, "images")


def tables_gain(gains: pd.DataFrame, *, n: str) -> Verdict:
    """RaMIA Table III, Purchase-100 column: the digits as 64 features with hidden columns."""
    return _gain(TABLES_GAIN, gains, n, "tables")
