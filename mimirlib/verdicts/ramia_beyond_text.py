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

With several replicates (a ``replicate`` column: each a new split of the digits with its own target and shadows,
ranges and samplings), :func:`over_replicates` reads each backbone's gain over them as a one-sample t test: the
mean of the replicates' gains and its 95% interval, mean +/- t(0.975, R - 1) sd / sqrt(R), where sd, the spread
between replicates, holds the split, the training, the ranges and the samplings at once (each replicate's own
paired interval is then not needed: its noise is in that spread). Clear: the interval excludes 0; no second
bar. The replicates draw their splits from the same 1,797 digits, so they are close to, not exactly, independent.

Input frames have one row per backbone with columns ``backbone``, ``estimate`` (RaMIA's AUC minus
the MIA's, mean over samplings), ``lo``, ``hi``, ``spread`` (std over samplings, NaN for one),
``auc_a`` (RaMIA) and ``auc_b`` (MIA), and ``n_iterations`` optionally; with a ``replicate`` column, one
row per replicate and backbone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from mimirlib.core.metrics import mean_t_interval
from mimirlib.core.power import RANGES
from mimirlib.verdicts import SEED_Z, TALLY_RULE, Claim, Effect, Verdict, tally, tally_outcomes
from mimirlib.verdicts.regime import Regime

IMAGES_GAIN = Claim(
    "RaMIA identifies ranges of geometrically transformed images around training images better than MIA on the "
    "range centre, both judged by range membership",
    source="RaMIA §V-E, Table III, Figure 4(c)",
    key="ramia-table3-images",
    paired_over=RANGES,
    paper_value="CIFAR-10: ΔAUC +2.13 ± 0.06 points with RMIA, +1.10 ± 0.00 with LiRA (Table III)",
    paper_effect=0.0213,  # RMIA's gain in AUC units (the lab runs RMIA, not LiRA)
    average=True,
)

TABLES_GAIN = Claim(
    "RaMIA identifies ranges of rows with missing columns around training rows better than MIA on the mode-imputed "
    "row, both judged by range membership",
    source="RaMIA §V-E, Table III, Figure 4(a)",
    key="ramia-table3-tables",
    paired_over=RANGES,
    paper_value="Purchase-100 (m = 10): ΔAUC +2.62 ± 0.04 points with RMIA, +0.90 ± 0.03 with LiRA (Table III)",
    paper_effect=0.0262,  # RMIA's gain in AUC units
    average=True,
)

UNITS = "units: backbones (LOSS, RMIA)"
NOISE = (
    f"clear also needs |mean gain| > {SEED_Z:g} standard errors of that mean over the k fresh samplings of every "
    "range (std of the gain over the samplings / sqrt(k): the sampling spread stands where the core rule has a "
    "seed spread)"
)
NOISE_REPLICATES = (
    "each backbone's gain read over R replicates (each a new split of the digits with its own target, shadows, "
    "ranges and samplings) as a one-sample t test: clear when the 95% interval mean +/- t(0.975, R - 1) sd / sqrt(R) "
    "excludes 0, sd the spread of the gain between replicates (it holds the split, the training, the ranges and "
    "the samplings at once)"
)


def over_replicates(gains: pd.DataFrame) -> pd.DataFrame:
    """``gains`` with a ``replicate`` column (one row per replicate and backbone) as one row per backbone: the
    mean gain and AUCs, the t interval over the replicates (module docstring) as ``lo`` and ``hi``,
    ``replicate_sd`` the spread between replicates, ``spread`` NaN (no second noise bar: the interval holds it),
    ``n_iterations`` the number of replicates and ``over`` "replicates". A frame of one replicate (or without the
    column) is returned as it is, ``over`` "samplings"."""
    if "replicate" not in gains or gains.replicate.nunique() < 2:
        return gains.assign(over="samplings")
    rows = []
    for backbone, g in gains.groupby("backbone", sort=False):
        if g.replicate.duplicated().any():
            raise ValueError(f"over_replicates: {backbone} has a replicate twice")
        mean, lo, hi, sd = mean_t_interval(g.estimate)
        rows.append(
            {
                "backbone": backbone,
                "estimate": mean,
                "lo": lo,
                "hi": hi,
                "spread": math.nan,
                "replicate_sd": sd,
                "auc_a": float(g.auc_a.mean()),
                "auc_b": float(g.auc_b.mean()),
                "n_iterations": len(g),
                "over": "replicates",
            }
        )
    return pd.DataFrame(rows)


def spread_of(row) -> float:
    """The spread a gains row shows beside its mean: between replicates when ``over`` is "replicates", else over
    the samplings (NaN when unknown)."""
    over = getattr(row, "over", "samplings")
    return float(getattr(row, "replicate_sd" if over == "replicates" else "spread", math.nan))


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
    over = gains.over.iloc[0]  # over_replicates set it
    mean = f", mean of {int(gains.n_iterations.iloc[0])} replicates" if over == "replicates" else ""
    for r in gains.itertuples(index=False):
        s = (
            f"{r.backbone}: AUC {r.auc_b:.3f} -> {r.auc_a:.3f}{mean}, "
            f"{100 * r.estimate:+.2f} points [{100 * r.lo:+.2f}, {100 * r.hi:+.2f}]"
        )
        sd = spread_of(r)
        if math.isfinite(sd):
            s += f" ± {100 * sd:.2f} over {over}"
        parts.append(s)
    return "; ".join(parts)


def _gain(claim: Claim, gains: pd.DataFrame, n: str, what: str, regime: Sequence[Regime]) -> Verdict:
    if gains is None or gains.empty:
        return claim.not_tested(f"the {what} modality was not run", lab_value="not measured", n=n)
    keys = ",".join(r.key for r in regime)
    barred = claim.out_of_regime(regime, lab_value="not counted: the target is out of the paper's regime", n=n)
    if barred is not None:
        return barred
    gains = over_replicates(gains)
    replicated = gains.over.iloc[0] == "replicates"
    noise = NOISE_REPLICATES if replicated else NOISE
    how = (
        f"on the same ranges, read over {int(gains.n_iterations.iloc[0])} replicates"
        if replicated
        else "paired over the ranges"
    )
    t = tally(effects_of(gains))
    return claim.tallied(
        t,
        f"RaMIA minus MIA at the {'centre' if what == 'images' else 'mode-imputed row'}, {how}: "
        f"{t.text()}. {_describe(gains)}",
        # over replicates the t interval alone says what is clear: the core's bootstrap-and-seed bar would be a second
        f"{tally_outcomes() if replicated else TALLY_RULE}; {UNITS}; {noise}",
        points=True,
        lab_value="; ".join(f"{r.backbone} {100 * r.estimate:+.2f} points" for r in gains.itertuples(index=False)),
        n=n,
        regime=keys,
    )


def images_gain(gains: pd.DataFrame, *, n: str, regime: Sequence[Regime] = ()) -> Verdict:
    """RaMIA Table III, CIFAR-10 column: ranges of flips, shifts and rotations of the digits (``gains``: one
    row per backbone, or per replicate and backbone: :func:`over_replicates`). *Not tested* when a ``regime``
    row (the targets' generalisation, :func:`mimirlib.verdicts.regime.generalisation`) is out of the paper's regime."""
    return _gain(IMAGES_GAIN, gains, n, "images", regime)


def tables_gain(gains: pd.DataFrame, *, n: str, regime: Sequence[Regime] = ()) -> Verdict:
    """RaMIA Table III, Purchase-100 column: the digits as 64 features with hidden columns (``regime``: as
    :func:`images_gain`)."""
    return _gain(TABLES_GAIN, gains, n, "tables", regime)
