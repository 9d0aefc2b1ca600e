"""Range membership inference (RaMIA, Tao & Shokri): ranges, range scores, the trim sweep,
offline RMIA as the point-score backbone, and the range game of Definition 2.

A *range* is a centre text, a range function and a size: with word-level Hamming distance,
"every text within k word substitutions of the centre". It is IN when it contains at least
one training text. RaMIA scores a range by sampling n points in it, scoring each with a point
attack (higher = more likely member, the project's convention), and aggregating the n scores
of each range with a trimmed average (equation 4).

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
import re
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Sequence

import numpy as np
import pandas as pd

from mimirlib.core import metrics

__all__ = [
    "Range",
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
    "offline_rmia",
    "score_ranges",
    "range_game",
    "range_labels",
    "mlm_hamming_sampler",
    "label_ranges",
    "subset_indices",
    "fresh_draws",
    "restore_words",
    "percentile_among",
    "mix_in",
    "has_digit",
    "fill_masked_words",
    "Backbone",
    "BACKBONES",
    "get_backbone",
    "backbone_scores",
]

_EPS = 1e-9  # q * n is a float product: 0.29 * 100 = 28.999999999999996 must count as 29


@dataclass
class Range:
    """One range query: centre, range function ("hamming", "semantic", ...), size, samples.

    `label`: True for an IN range (it contains a training text), False for OUT, None unknown.
    `source`: the original text the centre was perturbed from (range game only) and `alpha`
    the centre's distance to it.
    """

    centre: str
    function: str
    size: float
    samples: list[str] = field(default_factory=list)
    label: bool | None = None
    source: str | None = None
    alpha: float | None = None


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


# --------------------------------------------------------------------------- ranges in practice


def score_ranges(ranges: Sequence[Range], point_scores: Callable[[list[str]], np.ndarray]) -> np.ndarray:
    """(n_ranges, n_samples) point scores of every range's samples, one call to `point_scores`
    (texts -> scores, higher = member) on the flattened samples."""
    widths = {len(r.samples) for r in ranges}
    if len(widths) != 1 or 0 in widths:
        raise ValueError(f"every range needs the same, non-zero number of samples, got {sorted(widths)}")
    n = widths.pop()
    flat = [s for r in ranges for s in r.samples]
    scores = np.asarray(point_scores(flat), dtype=np.float64)
    if scores.shape != (len(flat),):
        raise ValueError(f"point_scores returned shape {scores.shape} for {len(flat)} texts")
    return scores.reshape(len(ranges), n)


def range_labels(ranges: Sequence[Range]) -> np.ndarray:
    """Ground-truth IN (True) / OUT (False) of each range, as a bool array."""
    if any(r.label is None for r in ranges):
        raise ValueError("some ranges have no label")
    return np.array([bool(r.label) for r in ranges])


def mlm_hamming_sampler(mlm_model, mlm_tokenizer, **kwargs) -> Callable[[list[str], int, int, int], list[list[str]]]:
    """A sampler `(texts, size, n, seed) -> n texts per text at word Hamming distance size`,
    by masked-LM word substitution (:func:`mimirlib.samplers.perturb.substitute_words`; kwargs go there)."""
    from mimirlib.samplers.perturb import substitute_words

    def sample(texts, size, n, seed):
        return substitute_words(list(texts), mlm_model, mlm_tokenizer, k=int(size), n_samples=n, seed=seed, **kwargs)

    return sample


def range_game(
    members: Sequence[str],
    nonmembers: Sequence[str],
    *,
    alpha: int,
    size: int,
    n_samples: int,
    perturb: Callable[[list[str], int, int], list[str]] | None = None,
    sampler: Callable[[list[str], int, int, int], list[list[str]]],
    seed: int = 0,
    function: str = "hamming",
    within: Callable[[str, str, float], bool] | None = None,
) -> list[Range]:
    """RaMIA's range game (Definition 2, setup of V-A4): IN ranges centred on members moved
    `alpha` words away, OUT ranges centred on non-members moved the same way; each range gets
    `n_samples` points at distance `size` from its centre. Members' ranges come first.

    `perturb(texts, alpha, seed) -> one centre per text` (alpha = 0: the text itself);
    `sampler(centres, size, n, seed) -> n samples per centre`; e.g. both from
    :func:`mlm_hamming_sampler` (``perturb = lambda t, a, s: [v[0] for v in sampler(t, a, 1, s)]``).
    Ground truth: a range is IN iff some text of `members` lies within `size` of its centre,
    checked with `within(centre, text, size)` (default: word Hamming,
    :func:`mimirlib.samplers.perturb.within_hamming`); so a member's range with alpha > size is OUT,
    and a non-member's range that happens to reach a member is IN. `members` should be the
    whole training set of interest: texts outside it are not checked.
    """
    from mimirlib.samplers.perturb import within_hamming

    members, nonmembers = list(members), list(nonmembers)
    if not isinstance(alpha, int) or alpha < 0:
        raise ValueError(f"alpha must be an integer >= 0, got {alpha!r}")
    if not isinstance(n_samples, int) or n_samples < 1:
        raise ValueError(f"n_samples must be an integer >= 1, got {n_samples!r}")
    if alpha > 0 and perturb is None:
        raise ValueError("alpha > 0 needs a perturb callable to move the centres")
    within = within_hamming if within is None else within
    sources = members + nonmembers
    centres = list(sources) if alpha == 0 else list(perturb(sources, alpha, seed))
    if len(centres) != len(sources):
        raise ValueError(f"perturb returned {len(centres)} centres for {len(sources)} texts")
    samples = sampler(centres, size, n_samples, seed + 1)
    if len(samples) != len(centres):
        raise ValueError(f"sampler returned {len(samples)} sample lists for {len(centres)} centres")
    # index members by word count: a Hamming range only holds texts of its centre's length
    by_len: dict[int, list[str]] = {}
    for t in members:
        by_len.setdefault(len(t.split()), []).append(t)
    out = []
    for i, (src, centre, s) in enumerate(zip(sources, centres, samples)):
        pool = by_len.get(len(centre.split()), []) if within is within_hamming else members
        s = list(s)
        if len(s) != n_samples:
            raise ValueError(f"sampler returned {len(s)} samples for centre {i}, expected {n_samples}")
        out.append(
            Range(
                centre=centre,
                function=function,
                size=size,
                samples=s,
                label=any(within(centre, t, size) for t in pool),
                source=src,
                alpha=alpha,
            )
        )
    return out


# --------------------------------------------------------------------------- experiment helpers


def label_ranges(
    ranges: Sequence[Range], training_texts: Iterable[str], within: Callable[[str, str, float], bool] | None = None
) -> np.ndarray:
    """Range ground truth from a whole training set: each range's `label` is set to True iff
    some text of `training_texts` lies within `size` of its centre (``within(centre, text,
    size)``, default word Hamming, :func:`mimirlib.samplers.perturb.within_hamming`, checked only
    against texts with the centre's word count). Returns the labels as a bool array.

    :func:`range_game` checks only the members it is given; this re-checks every range
    against everything the model trained on, so an OUT range that reaches a near-duplicate
    of a training text (two MIT licences a few words apart) counts as IN.
    """
    from mimirlib.samplers.perturb import within_hamming

    within = within_hamming if within is None else within
    pool = list(training_texts)
    by_len: dict[int, list[str]] = {}
    for t in pool:
        by_len.setdefault(len(t.split()), []).append(t)
    out = []
    for r in ranges:
        cands = by_len.get(len(r.centre.split()), []) if within is within_hamming else pool
        r.label = any(within(r.centre, t, r.size) for t in cands)
        out.append(r.label)
    return np.array(out, dtype=bool)


def subset_indices(n_ranges: int, n_pool: int, n: int, n_iterations: int, seed: int = 0) -> np.ndarray:
    """Repeated sampling from a pool drawn once: an int array (n_iterations, n_ranges, n) whose
    row [it, r] is a random n-subset (without replacement, ascending) of range(n_pool).
    Index each backbone's (n_ranges, n_pool) scores with ``np.take_along_axis(s, idx[it], 1)``
    so that every backbone sees the same samples in an iteration."""
    for name, v, low in (
        ("n_ranges", n_ranges, 0),
        ("n_pool", n_pool, 1),
        ("n", n, 1),
        ("n_iterations", n_iterations, 1),
    ):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {v!r}")
    if n > n_pool:
        raise ValueError(f"cannot draw {n} samples per range from a pool of {n_pool}")
    rng = np.random.default_rng(seed)
    keys = rng.random((n_iterations, n_ranges, n_pool))
    return np.sort(np.argsort(keys, axis=2)[:, :, :n], axis=2)


def fresh_draws(n_ranges: int, n: int, n_iterations: int) -> np.ndarray:
    """Repeated sampling with a fresh draw each time: an int array (n_iterations, n_ranges, n) whose
    row [it, r] is it*n ... (it+1)*n - 1, the it-th block of n samples of a pool of n * n_iterations
    drawn independently per range. Disjoint blocks of independent draws are independent draws, so
    the spread over iterations is the sampling spread (subsets of one pool share samples and
    understate it). Index (n_ranges, n * n_iterations) scores with ``np.take_along_axis``."""
    for name, v, low in (("n_ranges", n_ranges, 0), ("n", n, 1), ("n_iterations", n_iterations, 1)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {v!r}")
    blocks = np.arange(n_iterations * n).reshape(n_iterations, 1, n)
    return np.repeat(blocks, n_ranges, axis=1)


def _words(text: str) -> tuple[list[str], list[tuple[int, int]]]:
    spans = [m.span() for m in re.finditer(r"\S+", text)]
    return [text[a:b] for a, b in spans], spans


def restore_words(
    source: str, sample: str, p: float, *, seed: int = 0, centre: str | None = None, size: int | None = None
) -> str:
    """A stand-in for a stronger masked LM: `sample` with each word that differs from `source`
    (the text the range was built around: the centre's alpha changes and the sample's own) put
    back to the source's word with probability p. p = 0 is `sample`, p = 1 is `source` (when their
    whitespace agrees, as the substitution samplers guarantee), and the expected distance to the
    source shrinks linearly in p: (1 - p) times the sample's.

    Each differing word draws one key from a generator seeded by (source, sample, seed), and is
    put back iff its key < p: the same sample restored at a larger p is a superset. With `centre`
    and `size`, a restoration that moves the sample away from the centre (a word the centre had
    changed and the sample kept) is undone, largest key first, while the sample would lie more
    than `size` words from the centre: the result stays in its range. Whitespace and every
    other byte come from `sample`; a sample with another word count than `source` is returned as is.
    """
    from mimirlib.samplers.mlm.sampling import salted_rng

    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be in [0, 1], got {p!r}")
    src, _ = _words(source)
    words, spans = _words(sample)
    if len(src) != len(words):
        return sample
    diff = [i for i, (a, b) in enumerate(zip(src, words)) if a != b]
    keys = salted_rng(source + "\x00" + sample, seed, "restore-words", len(diff)).random(len(diff))
    put_back = {i: k for i, k in zip(diff, keys) if k < p}
    if centre is not None and size is not None:
        cen, _ = _words(centre)
        if len(cen) == len(src):
            dist = sum((src[i] if i in put_back else w) != c for i, (w, c) in enumerate(zip(words, cen)))
            away = sorted((k, i) for i, k in put_back.items() if words[i] == cen[i])
            while dist > size and away:
                _, i = away.pop()
                del put_back[i]
                dist -= 1
    out, last = [], 0
    for i, (a, b) in enumerate(spans):
        out += [sample[last:a], src[i] if i in put_back else words[i]]
        last = b
    return "".join(out) + sample[last:]


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


def has_digit(word: str) -> bool:
    """True iff the string contains a decimal digit (the numbers that section V-H's analogue redacts)."""
    return any(ch.isdigit() for ch in word)


def fill_masked_words(
    texts: Sequence[str],
    mlm_model,
    mlm_tokenizer,
    *,
    select: Callable[[str], bool],
    n_candidates: int,
    seed: int = 0,
    fill: Callable[[str], bool] | None = None,
    top_k: int | None = 20,
    batch_size: int = 32,
    max_length: int = 512,
    progress=False,
) -> list[list[str]]:
    """Redacted text and its completions (RaMIA V-H): every word whose core satisfies `select`
    (e.g. :func:`has_digit`) is masked, and the masked LM fills all of them in one forward
    pass per candidate; `n_candidates` candidates per text (not necessarily distinct).

    Words, cores and splicing are those of :mod:`mimirlib.samplers.mlm.words`, as in
    :func:`mimirlib.samplers.perturb.substitute_words`: only the selected words' cores change, everything
    else stays byte-identical, and only words inside the MLM's first window are redacted. Unlike
    the substitution sampler, a fill may equal the original word (the attacker does not know it).
    `fill`: if given, fills are restricted to vocabulary words it accepts (``fill=has_digit``:
    numbers are completed with numbers). A text with no selected word gets `n_candidates`
    copies of itself. Deterministic in (text, seed, n_candidates, parameters, model).
    """
    import torch

    from mimirlib.samplers.mlm.inputs import as_text_list
    from mimirlib.samplers.mlm.sampling import eval_mode, salted_rng
    from mimirlib.samplers.mlm.words import fill_rows, masked_lm_setup
    from mimirlib.progress import progress_factory

    texts = as_text_list(texts)
    for name, value in (("n_candidates", n_candidates), ("batch_size", batch_size)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    setup = masked_lm_setup(texts, mlm_model, mlm_tokenizer, max_length, "fill_masked_words")
    if setup is None:
        return []
    fill_ok = setup.fill_ok
    if fill is not None:
        fill_ok = fill_ok.clone()
        for i in fill_ok.nonzero().squeeze(1).tolist():
            if not fill(setup.vocab.core[i]):
                fill_ok[i] = False
        if not fill_ok.any():
            raise ValueError("no word of the masked LM's vocabulary passes `fill`")
    cores = [[(s, e) for s, e in spans if select(text[s:e])] for text, spans in zip(texts, setup.cores)]
    setup = replace(setup, fill_ok=fill_ok, cores=cores)
    rows = []
    for i, text in enumerate(texts):
        if not cores[i]:
            continue
        rng = salted_rng(text, seed, "fill-masked-words", n_candidates)
        pos = np.arange(len(cores[i]))
        rows += [(i, pos, rng.random(len(pos))) for _ in range(n_candidates)]
    out: list[list[str]] = [[] if cores[i] else [t] * n_candidates for i, t in enumerate(texts)]
    bar = progress_factory(progress)(total=None, desc="masked-word fill")
    try:
        with eval_mode(mlm_model), torch.inference_mode():
            variants = fill_rows(setup, rows, mlm_model, mlm_tokenizer, top_k=top_k, batch_size=batch_size, bar=bar)
    finally:
        bar.close()
    for (i, _, _), variant in zip(rows, variants):
        out[i].append(variant)
    return out


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
