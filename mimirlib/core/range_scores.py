"""RaMIA's range scores (Tao & Shokri): a range's point scores aggregated by equation 4's trimmed
average (and by GLRT and the Bayes factor), the trim (its three notations, its grid and its sweep on
a reference model), training-point density, and the point attacks RaMIA aggregates (offline RMIA,
the backbone registry). Statistics over scores, whatever sampled the ranges
(:mod:`mimirlib.samplers.ranges` for texts, :mod:`mimirlib.samplers.modalities` for images and rows).

Trimmed average, precisely: a range's n scores are sorted, s_(0) <= ... <= s_(n-1), and the
mean is taken over ranks i with floor(q_s n) <= i < ceil(q_e n) (at least one rank is kept:
an empty window keeps rank min(floor(q_s n), n-1)). Here (q_s, q_e) are fractions in [0, 1]
naming the window that is KEPT.

Three notations for the same trim (:func:`paper_trim`, :func:`privacy_meter_trim`):

- the paper's equation 4 averages the samples *outside* the [q_s, q_e]-th percentiles (q in
  0..100): section V-B's AG News setting q_s = 20, q_e = 100 removes the 20th to 100th
  percentiles, i.e. keeps the lowest 20% ("for synthetic data ... q_e = 100 to remove the
  largest points"), and CelebA's q_s = 0, q_e = 25 keeps the highest 75%;
- the authors' code (privacy meter, ``modules/ramia/ramia_scores.py``) takes a direction and a
  ratio: ``trim_mia_scores(s, r, "top")`` keeps the lowest ``int((1 - r) n)`` scores and
  ``"bottom"`` the highest ``int((1 - r) n)``, so r is the share trimmed (an older version of
  the same file kept ``int(r n)``: r was the share kept);
- ours keeps the window between q_s and q_e: AG News is (0, 0.2), CelebA (0.25, 1).

So AG News reads: paper (20, 100) = code ("top", 0.8) = ours (0, 0.2). The code's ``int`` also
rounds down in floating point: (1 - 0.8) * 10 is 1.999..., so on 10 samples it keeps one
score where ours keeps two (ceil(0.2 * 10) = 2).

The trim is a hyperparameter chosen on a *reference* model used as a stand-in target whose
IN/OUT ranges the attacker knows (section IV-C, appendix A): :func:`sweep_trim` only ever
receives that reference model's range scores, so the target's labels cannot leak into it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np
import pandas as pd

from mimirlib.core import metrics

__all__ = [
    "trim_window",
    "trimmed_average",
    "glrt",
    "bayes_factor",
    "trim_grid",
    "PAPER_TRIMS",
    "paper_trim",
    "privacy_meter_trim",
    "kept",
    "feasible_grid",
    "sweep_trim",
    "ramia",
    "mix_in",
    "offline_rmia",
    "Backbone",
    "BACKBONES",
    "register_backbone",
    "get_backbone",
    "backbone_scores",
]

_EPS = 1e-9  # q * n is a float product: 0.29 * 100 = 28.999999999999996 must count as 29


# --------------------------------------------------------------------------- aggregation


def _score_matrix(scores, name: str = "scores") -> tuple[np.ndarray, bool]:
    arr = np.asarray(scores, dtype=np.float64)
    single = arr.ndim == 1
    if single:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise ValueError(f"{name} must have shape (n_ranges, n_samples) or (n_samples,), got {arr.shape}")
    if arr.shape[1] == 0:
        raise ValueError(f"{name}: every range needs at least one sample score")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} holds NaN or infinite values")
    return arr, single


def _check_q(q_s: float, q_e: float) -> None:
    for name, q in (("q_s", q_s), ("q_e", q_e)):
        if not 0.0 <= q <= 1.0:
            hint = " (a fraction: RaMIA's q_s=20 is 0.2)" if 1.0 < q <= 100.0 else ""
            raise ValueError(f"{name} must be in [0, 1], got {q!r}{hint}")
    if q_s > q_e:
        raise ValueError(f"q_s ({q_s}) must not exceed q_e ({q_e})")


def trim_window(n: int, q_s: float, q_e: float) -> tuple[int, int]:
    """Ranks [lo, hi) of n sorted scores that the (q_s, q_e) trimmed average keeps."""
    _check_q(q_s, q_e)
    lo = min(math.floor(q_s * n + _EPS), n - 1)
    hi = min(max(math.ceil(q_e * n - _EPS), lo + 1), n)
    return lo, hi


def trimmed_average(scores, q_s: float, q_e: float):
    """Equation 4: per range, the mean of the scores ranked between the q_s and q_e quantiles.

    `scores`: (n_ranges, n_samples) point scores (higher = member); returns (n_ranges,), or a
    float for a 1-d input (one range). (0, 1) is the plain mean (:func:`bayes_factor`);
    q_s -> 1 with q_e = 1 keeps ever fewer top scores and reaches the max (:func:`glrt`).
    """
    arr, single = _score_matrix(scores)
    lo, hi = trim_window(arr.shape[1], q_s, q_e)
    out = np.sort(arr, axis=1)[:, lo:hi].mean(axis=1)
    return float(out[0]) if single else out


def glrt(scores):
    """Generalised likelihood ratio test (equation 2): the best-scoring sample of each range."""
    arr, single = _score_matrix(scores)
    out = arr.max(axis=1)
    return float(out[0]) if single else out


def bayes_factor(scores):
    """Bayes factor with a uniform prior over the samples (equation 3): the plain mean."""
    arr, single = _score_matrix(scores)
    out = arr.mean(axis=1)
    return float(out[0]) if single else out


# --------------------------------------------------------------------------- choosing the trim


def trim_grid(
    direction: str = "bottom", step: float = 0.05, extra: Iterable[tuple[float, float]] = ()
) -> list[tuple[float, float]]:
    """RaMIA's one-sided grids (Algorithm 1). "bottom": q_e = 1 and q_s in [0, 1) (drop the
    lowest scores; real in-distribution samples); "top": q_s = 0 and q_e in (0, 1] (drop the
    highest; synthetic samples); "both": the union. (0, 1), no trimming, is always included.
    `extra` windows (e.g. ``paper_trim(20, 100)``, the paper's AG News setting) are appended
    where the step misses them, so the sweep always weighs them too."""
    if not 0 < step <= 1:
        raise ValueError(f"step must be in (0, 1], got {step!r}")
    qs = [round(i * step, 10) for i in range(math.floor(1 / step + _EPS) + 1)]
    bottom = [(q, 1.0) for q in qs if q < 1.0]
    top = [(0.0, round(1.0 - q, 10)) for q in qs if q < 1.0]
    grids = {"bottom": bottom, "top": top, "both": bottom + top}
    if direction not in grids:
        raise ValueError(f"direction must be 'bottom', 'top' or 'both', got {direction!r}")
    more = [(float(a), float(b)) for a, b in extra]
    for q in more:
        _check_q(*q)
    return list(dict.fromkeys(grids[direction] + more))


# Section V-B's settings in the paper's notation (percentiles, the samples OUTSIDE [q_s, q_e] kept)
# and the samples each range had there; CelebA took every image of the identity (1 to 18).
PAPER_TRIMS = {
    "Purchase-100": {"q_s": 45, "q_e": 100, "samples": 20},
    "CIFAR-10": {"q_s": 40, "q_e": 100, "samples": 10},
    "CelebA": {"q_s": 0, "q_e": 25, "samples": None},
    "AG News": {"q_s": 20, "q_e": 100, "samples": 50},
}


def paper_trim(q_s: float, q_e: float) -> tuple[float, float]:
    """Equation 4's (q_s, q_e), percentiles whose OUTSIDE is averaged, as our kept window (fractions).

    (20, 100) -> (0, 0.2): keep the lowest 20%; (0, 25) -> (0.25, 1): keep the highest 75%;
    q_s = q_e trims nothing -> (0, 1). A pair with 0 < q_s and q_e < 100 would keep both tails,
    which is not one window: a ValueError says so."""
    for name, q in (("q_s", q_s), ("q_e", q_e)):
        if not 0.0 <= q <= 100.0:
            raise ValueError(f"{name} must be a percentile in [0, 100], got {q!r}")
    if q_s > q_e:
        raise ValueError(f"q_s ({q_s}) must not exceed q_e ({q_e})")
    if q_s == q_e:
        return 0.0, 1.0
    if q_e == 100.0:
        return 0.0, round(q_s / 100.0, 10)
    if q_s == 0.0:
        return round(q_e / 100.0, 10), 1.0
    raise ValueError(f"paper trim ({q_s}, {q_e}) keeps both tails; only q_s = 0 or q_e = 100 is one window")


def privacy_meter_trim(q_s: float, q_e: float) -> tuple[str, float]:
    """Our kept window as the authors' code's (direction, trim ratio): ``trim_mia_scores(s, ratio,
    direction)`` of privacy meter's ``modules/ramia/ramia_scores.py`` (ratio = the share trimmed)."""
    _check_q(q_s, q_e)
    if (q_s, q_e) == (0.0, 1.0):
        return "none", 0.0
    if q_s == 0.0:
        return "top", round(1.0 - q_e, 10)
    if q_e == 1.0:
        return "bottom", round(q_s, 10)
    raise ValueError(f"window ({q_s}, {q_e}) trims both ends; the authors' code trims one")


def kept(n: int, q_s: float, q_e: float) -> int:
    """How many of n sorted samples the (q_s, q_e) window averages."""
    lo, hi = trim_window(n, q_s, q_e)
    return hi - lo


def feasible_grid(grid: Iterable[tuple[float, float]], n: int, min_kept: int) -> list[tuple[float, float]]:
    """The grid points whose window keeps at least `min_kept` of n samples. A window of one sample
    is no average: the top one is the maximum (GLRT, equation 2), the bottom one the minimum."""
    if isinstance(min_kept, bool) or not isinstance(min_kept, (int, np.integer)) or not 1 <= min_kept <= n:
        raise ValueError(f"min_kept must be an integer in [1, n={n}], got {min_kept!r}")
    out = [(float(a), float(b)) for a, b in grid if kept(n, a, b) >= min_kept]
    if not out:
        raise ValueError(f"no grid point keeps {min_kept} of {n} samples")
    return out


def sweep_trim(ref_in_scores, ref_out_scores, grid: Iterable[tuple[float, float]]):
    """Choose (q_s, q_e) by grid search on a reference model used as a stand-in target.

    `ref_in_scores` / `ref_out_scores`: (n_ranges, n_samples) point scores, under the reference
    model, of the samples of ranges that do / do not contain one of *the reference model's*
    training texts. The target model's scores and labels are deliberately not parameters.
    Returns (q_s, q_e, table): the grid point with the highest range AUC (ties: the first in
    grid order) and a DataFrame with columns q_s, q_e, auc, one row per grid point.
    """
    ins, _ = _score_matrix(ref_in_scores, "ref_in_scores")
    outs, _ = _score_matrix(ref_out_scores, "ref_out_scores")
    if ins.shape[1] != outs.shape[1]:
        raise ValueError(f"IN ranges have {ins.shape[1]} samples each but OUT ranges {outs.shape[1]}")
    rows = []
    for point in grid:
        q_s, q_e = (float(q) for q in point)
        rows.append(
            {
                "q_s": q_s,
                "q_e": q_e,
                "auc": metrics.auc(trimmed_average(ins, q_s, q_e), trimmed_average(outs, q_s, q_e)),
            }
        )
    if not rows:
        raise ValueError("grid is empty")
    table = pd.DataFrame(rows)
    best = int(np.argmax(table["auc"].to_numpy()))  # argmax returns the first maximum
    return float(table.at[best, "q_s"]), float(table.at[best, "q_e"]), table


def ramia(target_scores, *, ref_in_scores, ref_out_scores, grid: Iterable[tuple[float, float]] | None = None):
    """RaMIA range scores for the target: the trim swept on the reference (:func:`sweep_trim`),
    then applied to the target's (n_ranges, n_samples) scores. Returns (scores, q_s, q_e, table)."""
    grid = trim_grid("both") if grid is None else grid
    q_s, q_e, table = sweep_trim(ref_in_scores, ref_out_scores, grid)
    return trimmed_average(target_scores, q_s, q_e), q_s, q_e, table


# --------------------------------------------------------------------------- training-point density


def mix_in(sample_scores, point_scores, rate: float) -> np.ndarray:
    """Training-point density (RaMIA Figure 5): a copy of the (n_ranges, n) sample scores in which
    the first round(rate * n) samples of each range are replaced by that range's point score
    (`point_scores`, shape (n_ranges,), e.g. the score of the text the range was built around)."""
    arr, _ = _score_matrix(sample_scores, "sample_scores")
    pts = np.asarray(point_scores, dtype=np.float64).ravel()
    if pts.shape != (arr.shape[0],):
        raise ValueError(f"point_scores has shape {pts.shape}, expected ({arr.shape[0]},)")
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"rate must be in [0, 1], got {rate!r}")
    k = math.floor(rate * arr.shape[1] + 0.5 + _EPS)
    out = arr.copy()
    out[:, :k] = pts[:, None]
    return out


# --------------------------------------------------------------------------- offline RMIA


def _log_px(ref_logps: np.ndarray, a: float) -> np.ndarray:
    """log Pr(x) from OUT reference models, offline: ((1+a)/2) mean_ref Pr(x|ref) + (1-a)/2."""
    m = ref_logps.shape[1]
    log_mean = np.logaddexp.reduce(ref_logps, axis=1) - math.log(m)
    if a == 1.0:
        return log_mean
    return np.logaddexp(math.log((1 + a) / 2) + log_mean, math.log((1 - a) / 2))


def offline_rmia(target_logp, ref_logps, z_target_logp, z_ref_logps, a: float = 1.0, gamma: float = 1.0) -> np.ndarray:
    """Offline RMIA (Zarifzadeh et al., 2024), RaMIA's point-score backbone (appendix A).

    score(x) = fraction of population texts z with
    [Pr(x|θ) / Pr(x)] / [Pr(z|θ) / Pr(z)] >= gamma, in [0, 1], higher = member.
    Pr(·) is estimated from reference models that did not train on x (offline):
    Pr(x) = ((1+a)/2) mean_ref Pr(x|ref) + (1-a)/2, the linear approximation of the missing
    IN models; a = 1 trusts the references as is (RaMIA's AG News setting), smaller a pulls
    Pr(x) towards 1/2.

    Inputs are per-text log-likelihoods: `target_logp` (n,), `ref_logps` (n, n_refs),
    `z_target_logp` (m,), `z_ref_logps` (m, n_refs). Recommended: the *mean* token
    log-probability (= -loss), so Pr(x|θ) = exp(mean log p) is the geometric-mean token
    probability in (0, 1], on the same scale as the class probabilities RMIA was designed for,
    and the (1-a)/2 term stays meaningful; a summed log-likelihood makes Pr tiny, and only
    a = 1 is then sensible. With a = 1 the score is the same for sum and mean only if all
    texts have the same length. Everything is computed in log space.
    """
    if not 0.0 <= a <= 1.0:
        raise ValueError(f"a must be in [0, 1], got {a!r}")
    if not gamma > 0:
        raise ValueError(f"gamma must be positive, got {gamma!r}")
    tx = np.asarray(target_logp, dtype=np.float64).ravel()
    tz = np.asarray(z_target_logp, dtype=np.float64).ravel()
    rx = np.asarray(ref_logps, dtype=np.float64)
    rz = np.asarray(z_ref_logps, dtype=np.float64)
    rx = rx[:, None] if rx.ndim == 1 else rx
    rz = rz[:, None] if rz.ndim == 1 else rz
    if rx.shape[0] != len(tx):
        raise ValueError(f"ref_logps has {rx.shape[0]} rows for {len(tx)} target texts (expected (n, n_refs))")
    if rz.shape[0] != len(tz):
        raise ValueError(f"z_ref_logps has {rz.shape[0]} rows for {len(tz)} population texts (expected (m, n_refs))")
    if rx.shape[1] != rz.shape[1]:
        raise ValueError(f"{rx.shape[1]} reference models for x but {rz.shape[1]} for z")
    if len(tz) == 0:
        raise ValueError("at least one population text z is needed")
    for name, v in (("target_logp", tx), ("ref_logps", rx), ("z_target_logp", tz), ("z_ref_logps", rz)):
        if np.isnan(v).any() or (v > 1e-9).any():
            raise ValueError(f"{name} must hold log-probabilities (<= 0, no NaN)")
    ratio_x = tx - _log_px(rx, a)
    ratio_z = np.sort(tz - _log_px(rz, a))
    # count z with ratio_x - ratio_z >= log gamma, i.e. ratio_z <= ratio_x - log gamma
    counts = np.searchsorted(ratio_z, ratio_x - math.log(gamma) + 1e-12, side="right")
    return counts / len(ratio_z)


# --------------------------------------------------------------------------- backbones: point attacks under RaMIA


@dataclass(frozen=True)
class Backbone:
    """A point attack that RaMIA aggregates (its *membership tester*, section IV-D), computed from
    per-text mean token log-probabilities. ``fn(own, other, z_own, z_other, a)`` returns scores with
    the project's direction, **higher = member**, fixed here once: `own` are the texts' mean token
    log-probabilities under the model attacked (higher = more likely), `other` under the attacker's
    reference model, `z_own` / `z_other` those of a population of non-member texts (RMIA's z)."""

    name: str
    label: str
    fn: Callable[..., np.ndarray]
    needs_reference: bool = False
    needs_population: bool = False


BACKBONES: dict[str, Backbone] = {}


def register_backbone(name: str, label: str, needs_reference: bool = False, needs_population: bool = False):
    """Decorator that adds a backbone to :data:`BACKBONES` under ``name``."""

    def deco(fn):
        BACKBONES[name] = Backbone(name, label, fn, needs_reference, needs_population)
        return fn

    return deco


@register_backbone("loss", "LOSS")
def loss_backbone(own, other, z_own, z_other, a: float = 1.0) -> np.ndarray:
    """LOSS (Yeom et al.): the mean token log-probability itself (= -loss)."""
    return own


@register_backbone("ref", "Reference", needs_reference=True)
def reference_backbone(own, other, z_own, z_other, a: float = 1.0) -> np.ndarray:
    """Reference attack (Carlini et al.): log-probability under the model minus under the reference."""
    return own - other


@register_backbone("rmia", "RMIA", needs_reference=True, needs_population=True)
def rmia_backbone(own, other, z_own, z_other, a: float = 1.0) -> np.ndarray:
    """Offline RMIA (:func:`offline_rmia`) with the reference as its one OUT model and the population z."""
    return offline_rmia(own.ravel(), other.ravel(), z_own, z_other, a=a).reshape(own.shape)


def get_backbone(name: str) -> Backbone:
    """The registered backbone ``name``; a ValueError names the known ones."""
    try:
        return BACKBONES[name]
    except KeyError:
        raise ValueError(f"unknown backbone {name!r}; use {sorted(BACKBONES)}") from None


def backbone_scores(name: str, own, other=None, z_own=None, z_other=None, *, a: float = 1.0) -> np.ndarray:
    """Scores (higher = member) of backbone ``name`` for texts of any array shape, e.g. a range game's
    (n_ranges, n_samples) samples. `own`/`other`: mean token log-probabilities of the texts under the
    model attacked and the reference (same shape; `other` may be None for LOSS); `z_own`/`z_other`:
    the population's, needed by RMIA only. `a` is offline RMIA's a."""
    backbone = get_backbone(name)
    own = np.asarray(own, dtype=np.float64)
    if other is None:
        if backbone.needs_reference:
            raise ValueError(f"backbone {name!r} needs the reference model's log-probabilities (other)")
        other = np.zeros_like(own)
    other = np.asarray(other, dtype=np.float64)
    if other.shape != own.shape:
        raise ValueError(f"other has shape {other.shape}, own {own.shape}: they must score the same texts")
    if backbone.needs_population and (z_own is None or z_other is None):
        raise ValueError(f"backbone {name!r} needs the population's log-probabilities (z_own, z_other)")
    return np.asarray(backbone.fn(own, other, z_own, z_other, a), dtype=np.float64)
