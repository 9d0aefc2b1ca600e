"""Statistics of range scores judged by range membership (RaMIA): the range AUC and TPRs, the paired
bootstrap of two range scores over the same ranges (and over fresh draws of the samples), rank and
linear correlations that stay quiet on constant inputs, and percentiles among non-members.

Whatever produced the scores (a point attack at the centre, a trimmed average of samples,
:mod:`mimirlib.core.range_scores`), a range score is higher for a range more likely IN, and ``y``
holds the IN labels (bool), one per range.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from mimirlib.core import metrics

__all__ = [
    "range_auc",
    "range_metrics",
    "paired_difference",
    "seed_averaged_difference",
    "spearman",
    "pearson",
    "percentile_among",
]


def range_auc(s, y) -> float:
    """AUC of range scores ``s`` with IN labels ``y`` (bool)."""
    s, y = np.asarray(s), np.asarray(y, dtype=bool)
    return metrics.auc(s[y], s[~y])


def range_metrics(s, y, budgets) -> dict:
    """Range AUC and range TPRs (%) at the FPR ``budgets`` (keys ``metrics.budget_key``) of range scores ``s``."""
    s, y = np.asarray(s), np.asarray(y, dtype=bool)
    return {
        "auc": range_auc(s, y),
        **{metrics.budget_key(f): 100 * metrics.tpr_at_fpr(s[y], s[~y], f).tpr for f in budgets},
    }


def paired_difference(a, b, y, *, n_bootstrap: int, seed: int) -> dict:
    """AUC(a) - AUC(b) on the same ranges, with a paired bootstrap over them.

    ``a`` and ``b``: range scores, (n_ranges,) or (n_iterations, n_ranges) for scores that vary
    with the sampling draw (a 1-d side is the same in every iteration); ``y``: IN labels. Each
    iteration gets ``metrics.paired_auc_difference`` with the same seed, hence the same
    resampled ranges; ``estimate``, ``lo`` and ``hi`` are their means over the iterations (the
    mean of the bounds is at least as wide as the bounds of the mean: conservative), ``spread``
    the standard deviation of the iterations' estimates (NaN for one), ``auc_a``/``auc_b`` the
    mean AUCs. (One seed of :func:`seed_averaged_difference`, which computes it.)
    """
    d = seed_averaged_difference([a], [b], y, n_bootstrap=n_bootstrap, seed=seed)
    return {k: d[k] for k in ("estimate", "lo", "hi", "spread", "auc_a", "auc_b", "n_in", "n_out")}


def _iterations(a, b, y) -> tuple[np.ndarray, np.ndarray]:
    """``a`` and ``b`` as (n_iterations, n_ranges) arrays over the ranges ``y`` (a side with one iteration is the
    same in every iteration); ValueError when their iterations or ranges do not match."""
    A, B = np.atleast_2d(np.asarray(a, dtype=float)), np.atleast_2d(np.asarray(b, dtype=float))
    k = max(len(A), len(B))
    if len(A) not in (1, k) or len(B) not in (1, k):
        raise ValueError(f"a has {len(A)} iterations and b {len(B)}: expected equal, or one of them 1")
    if A.shape[1] != len(y) or B.shape[1] != len(y):
        raise ValueError(f"a, b and y must cover the same ranges: {A.shape[1]}, {B.shape[1]}, {len(y)}")
    return np.broadcast_to(A, (k, len(y))), np.broadcast_to(B, (k, len(y)))


def seed_averaged_difference(a, b, y, *, n_bootstrap: int, seed: int) -> dict:
    """The mean over a target's training seeds of AUC(a) - AUC(b) on the same ranges.

    ``a`` and ``b``: one range score per seed (each as in :func:`paired_difference`: (n_ranges,) or
    (n_iterations, n_ranges)), every seed on the same ranges ``y``. Per sampling iteration,
    ``metrics.seed_averaged_auc_difference`` draws one resample of the ranges for every seed (the ranges are
    shared, so their variation is drawn once; the seed-to-seed spread is not in that interval; with one seed it is
    ``metrics.paired_auc_difference`` exactly); ``estimate``, ``lo`` and ``hi`` are the means over the iterations,
    ``spread`` the std of the iterations' estimates, ``seed_sd`` the std over the seeds of each seed's own estimate
    (NaN for one seed), ``n_seeds``, ``per_seed`` those estimates, ``auc_a``/``auc_b`` the means over seeds."""
    y = np.asarray(y, dtype=bool)
    if len(a) != len(b) or not len(a):
        raise ValueError(f"a and b: one range score per seed, got {len(a)} and {len(b)} seeds")
    pairs = [_iterations(sa, sb, y) for sa, sb in zip(a, b)]
    k = max(len(A) for A, _ in pairs)
    if any(len(A) not in (1, k) for A, _ in pairs):
        raise ValueError(f"every seed's scores must have 1 or {k} sampling iterations")
    pairs = [(np.broadcast_to(A, (k, len(y))), np.broadcast_to(B, (k, len(y)))) for A, B in pairs]
    per_iteration = [
        metrics.seed_averaged_auc_difference(
            [(A[i][y], A[i][~y], B[i][y], B[i][~y]) for A, B in pairs], n_resamples=n_bootstrap, seed=seed
        )
        for i in range(k)
    ]
    points = np.array([d.point for d in per_iteration])
    auc_a = np.array([np.mean([range_auc(x, y) for x in A]) for A, _ in pairs])  # each seed's, over iterations
    auc_b = np.array([np.mean([range_auc(x, y) for x in B]) for _, B in pairs])
    per_seed = [float(x) for x in auc_a - auc_b]
    return {
        "estimate": float(points.mean()),
        "lo": float(np.mean([d.lo for d in per_iteration])),
        "hi": float(np.mean([d.hi for d in per_iteration])),
        "spread": float(points.std(ddof=1)) if k > 1 else float("nan"),
        "seed_sd": float(np.std(per_seed, ddof=1)) if len(pairs) > 1 else float("nan"),
        "n_seeds": len(pairs),
        "per_seed": per_seed,
        "auc_a": float(auc_a.mean()),
        "auc_b": float(auc_b.mean()),
        "n_in": int(y.sum()),
        "n_out": int((~y).sum()),
    }


def spearman(x, v) -> float:
    """Spearman's rho, NaN (not a warning) when either side is constant."""
    x, v = np.asarray(x, dtype=float), np.asarray(v, dtype=float)
    return float(stats.spearmanr(x, v).statistic) if np.ptp(x) > 0 and np.ptp(v) > 0 else float("nan")


def pearson(x, v) -> tuple[float, float]:
    """Pearson's (r, p), NaNs when either side is constant."""
    x, v = np.asarray(x, dtype=float), np.asarray(v, dtype=float)
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(v) == 0:
        return float("nan"), float("nan")
    r = stats.pearsonr(x, v)
    return float(r.statistic), float(r.pvalue)


def percentile_among(values, reference) -> np.ndarray:
    """Percentile (0-100) of each value among `reference`: the share of reference values below
    it, ties counted half (RaMIA Figure 7: a member's score among the non-members' scores)."""
    v = np.asarray(values, dtype=np.float64).ravel()
    ref = np.sort(np.asarray(reference, dtype=np.float64).ravel())
    if ref.size == 0:
        raise ValueError("reference is empty")
    if np.isnan(v).any() or np.isnan(ref).any():
        raise ValueError("values and reference must not hold NaN")
    below = np.searchsorted(ref, v, side="left")
    upto = np.searchsorted(ref, v, side="right")
    return 100.0 * (below + upto) / (2.0 * ref.size)
