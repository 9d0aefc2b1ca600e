"""Metrics for membership inference: AUC with a bootstrap interval, ROC, TPR at a fixed FPR,
and thresholds transferred from one set of scores to another.

Convention (see CONTRIBUTING.md): every score is "higher = more likely a member", so nothing
here negates scores. Scores of members are the positives, scores of non-members the negatives.

Threshold rule used everywhere in this module: a sample is *predicted a member when
``score > threshold``* (strict). With this rule a threshold can always be an observed
non-member score, and ``fpr_at_threshold``, ``threshold_at_fpr``, ``roc`` and ``tpr_at_fpr``
agree with one another exactly.

Defects of the reference implementation that this module avoids (tests pin them down):
- its bootstrap re-negated the already-negated scores, so its "bootstrap mean" was 1 - AUC;
- its TPR@FPR took the last ROC point with FPR *strictly* below the budget, so with 1,000
  non-members "TPR@0.1%FPR" was TPR at 0% FPR. Here FPR <= budget is allowed, and the smallest
  resolvable FPR (1 / n_nonmembers) is reported next to every TPR.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy import stats

__all__ = [
    "BootstrapResult",
    "TprAtFpr",
    "auc",
    "bootstrap_auc",
    "roc",
    "tpr_at_fpr",
    "threshold_at_fpr",
    "fpr_at_threshold",
    "evaluate",
    "budget_key",
    "PairedDifference",
    "paired_auc_difference",
    "seed_averaged_auc_difference",
    "proportion_interval",
]

# Upper bound on the number of int64 cells one bootstrap chunk holds (~64 MB); keeps memory flat
# for 10,000 + 10,000 scores while still vectorising over hundreds of resamples at once.
_CHUNK_CELLS = 8_000_000


class BootstrapResult(NamedTuple):
    """Point AUC and its stratified percentile-bootstrap summary."""

    point: float
    mean: float
    lo: float
    hi: float
    std: float
    n_resamples: int


class TprAtFpr(NamedTuple):
    """TPR at an FPR budget, with the FPR actually achieved and whether the budget is resolvable."""

    tpr: float
    fpr_achieved: float
    threshold: float
    fpr_budget: float
    min_resolvable_fpr: float
    resolvable: bool


# ----------------------------------------------------------------------------- validation


def _scores(x, name: str) -> np.ndarray:
    """1-d finite float array, or a ValueError naming the set."""
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: cannot convert to a float array ({exc})") from None
    if arr.ndim == 0:
        raise ValueError(f"{name}: expected a 1-d array of scores, got a scalar")
    if arr.ndim != 1:
        if arr.ndim > 1 and sum(s > 1 for s in arr.shape) <= 1:
            arr = arr.ravel()  # (n, 1) or (1, n) columns are unambiguous
        else:
            raise ValueError(f"{name}: expected a 1-d array of scores, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name}: empty; need at least one score")
    bad = ~np.isfinite(arr)
    if bad.any():
        idx = np.flatnonzero(bad)
        raise ValueError(f"{name}: {idx.size} non-finite score(s) (NaN/inf), first at index {idx[:5].tolist()}")
    return arr


def _budget(fpr_budget, name: str = "fpr_budget") -> float:
    try:
        b = float(fpr_budget)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a number in [0, 1], got {fpr_budget!r}") from None
    if not (0.0 <= b <= 1.0):
        raise ValueError(f"{name}: expected a number in [0, 1], got {fpr_budget!r}")
    return b


def _resampling(n_resamples, confidence) -> tuple[int, float]:
    """A bootstrap's settings, checked: a positive whole number of resamples and a confidence level
    strictly between 0 and 1 (the interval is the central ``confidence`` share of the resamples)."""
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1:
        raise ValueError(f"n_resamples: expected a positive integer, got {n_resamples!r}")
    try:
        confidence = float(confidence)
    except (TypeError, ValueError):
        raise ValueError(f"confidence: expected a number in (0, 1), got {confidence!r}") from None
    if not (0.0 < confidence < 1.0):
        raise ValueError(f"confidence: expected a number in (0, 1), got {confidence!r}")
    return int(n_resamples), confidence


def _allowed_false_positives(fpr_budget: float, n: int) -> int:
    """Largest k with k / n <= budget (guarding against 0.01 * 1000 = 9.999... style rounding)."""
    k = int(math.floor(fpr_budget * n + 1e-9))
    k = min(max(k, 0), n)
    while k > 0 and k / n > fpr_budget:
        k -= 1
    return k


# ----------------------------------------------------------------------------- AUC


def _auc_sorted(m: np.ndarray, nm_sorted: np.ndarray) -> float:
    """Mann-Whitney AUC: P(member > non-member) + 0.5 P(tie); nm_sorted ascending."""
    less = np.searchsorted(nm_sorted, m, side="left")
    leq = np.searchsorted(nm_sorted, m, side="right")
    return float((less.sum() + leq.sum()) / (2.0 * m.size * nm_sorted.size))


def auc(member_scores, nonmember_scores) -> float:
    """ROC AUC with ties counted half (equals sklearn's roc_auc_score, members as positives).

    Rank-based, O((m + n) log n); no negation: AUC > 0.5 means the attack beats chance.
    """
    m = _scores(member_scores, "member_scores")
    nm = _scores(nonmember_scores, "nonmember_scores")
    return _auc_sorted(m, np.sort(nm))


def bootstrap_auc(
    member_scores,
    nonmember_scores,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> BootstrapResult:
    """Stratified bootstrap of the AUC with a percentile interval.

    Members and non-members are resampled independently with replacement (so every resample has
    the original class sizes). A resample is represented by its multiplicity counts: the AUC of a
    resample is sum_i c_i * (#resampled non-members below m_i + half the ties) / (m n), and the
    inner count is a cumulative sum of non-member counts in sorted order, so all resamples of a
    chunk are evaluated at once in O(B (m + n)) with no per-resample sorting. Scores are used as
    given (higher = member): unlike the reference implementation nothing is re-negated, so the
    bootstrap mean sits next to the point AUC, not next to 1 - AUC.
    """
    m = _scores(member_scores, "member_scores")
    nm = _scores(nonmember_scores, "nonmember_scores")
    n_resamples, confidence = _resampling(n_resamples, confidence)

    nm_sorted = np.sort(nm)
    point = _auc_sorted(m, nm_sorted)
    n_m, n_n = m.size, nm.size
    # Positions of each member among sorted non-members: strictly-below and at-or-below counts.
    lo_pos = np.searchsorted(nm_sorted, m, side="left")
    hi_pos = np.searchsorted(nm_sorted, m, side="right")

    rng = np.random.default_rng(seed)
    chunk = max(1, min(n_resamples, _CHUNK_CELLS // (2 * (n_m + n_n) + 1)))
    out = np.empty(n_resamples, dtype=float)
    for start in range(0, n_resamples, chunk):  # loop over chunks, not resamples
        b = min(chunk, n_resamples - start)
        rows = np.arange(b)[:, None]
        # Multiplicities of members / of *sorted* non-members per resample (bincount with row offsets);
        # indices into the sorted array give the same bootstrap, which does not depend on order.
        idx_m = rng.integers(0, n_m, size=(b, n_m)) + rows * n_m
        c_m = np.bincount(idx_m.ravel(), minlength=b * n_m).reshape(b, n_m)
        idx_n = rng.integers(0, n_n, size=(b, n_n)) + rows * n_n
        c_n = np.bincount(idx_n.ravel(), minlength=b * n_n).reshape(b, n_n)
        cum = np.zeros((b, n_n + 1), dtype=np.int64)
        np.cumsum(c_n, axis=1, out=cum[:, 1:])
        twice_wins = cum[:, lo_pos] + cum[:, hi_pos]  # 2 * (#below + 0.5 #ties), per member
        out[start : start + b] = np.einsum("ij,ij->i", c_m, twice_wins) / (2.0 * n_m * n_n)

    alpha = 1.0 - confidence
    lo, hi = np.quantile(out, [alpha / 2.0, 1.0 - alpha / 2.0])
    return BootstrapResult(
        point=point,
        mean=float(out.mean()),
        lo=float(lo),
        hi=float(hi),
        std=float(out.std(ddof=1)) if n_resamples > 1 else 0.0,
        n_resamples=n_resamples,
    )


# ----------------------------------------------------------------------------- ROC and thresholds


def roc(member_scores, nonmember_scores):
    """Full-resolution ROC curve ``(fpr, tpr, thresholds)``, rule "member iff score > threshold".

    thresholds run from the largest distinct score (giving the point (0, 0)) down to ``-inf``
    (giving (1, 1)); one point per distinct score, none dropped, so small-FPR regions are exact.
    The point set equals sklearn's ``roc_curve(..., drop_intermediate=False)`` (which uses >=
    and therefore lists each threshold one step earlier).
    """
    m = _scores(member_scores, "member_scores")
    nm = _scores(nonmember_scores, "nonmember_scores")
    thresholds = np.concatenate([np.unique(np.concatenate([m, nm]))[::-1], [-np.inf]])
    m_sorted, nm_sorted = np.sort(m), np.sort(nm)
    tpr = (m.size - np.searchsorted(m_sorted, thresholds, side="right")) / m.size
    fpr = (nm.size - np.searchsorted(nm_sorted, thresholds, side="right")) / nm.size
    return fpr, tpr, thresholds


def fpr_at_threshold(scores, threshold: float) -> float:
    """Fraction of ``scores`` flagged as members, i.e. with ``score > threshold``.

    Used with a threshold fixed on another set: e.g. the 1%-FPR threshold of temporally shifted
    non-members applied to natural non-members (their FPR) or to modified members (their TPR).
    """
    s = _scores(scores, "scores")
    t = float(threshold)
    if math.isnan(t):
        raise ValueError("threshold: NaN")
    return float(np.count_nonzero(s > t) / s.size)


def threshold_at_fpr(nonmember_scores, fpr_budget: float) -> float:
    """Smallest threshold whose FPR on ``nonmember_scores`` is <= ``fpr_budget`` (rule ``>``).

    It is the (k+1)-th largest non-member score with k = floor(budget * n); at most k non-members
    exceed it (fewer if it is tied). Below 1/n the budget is not resolvable and the threshold is
    the largest non-member score (FPR 0). A budget of 1 gives ``-inf`` (everything flagged).
    Hence ``fpr_at_threshold(nonmember_scores, threshold_at_fpr(nonmember_scores, b)) <= b``.
    """
    nm = _scores(nonmember_scores, "nonmember_scores")
    b = _budget(fpr_budget)
    k = _allowed_false_positives(b, nm.size)
    if k >= nm.size:
        return float("-inf")
    # k-th index of the descending order = (n-1-k)-th of the ascending order.
    return float(np.partition(nm, nm.size - 1 - k)[nm.size - 1 - k])


def tpr_at_fpr(member_scores, nonmember_scores, fpr_budget: float) -> TprAtFpr:
    """TPR at an FPR budget, defined as the largest TPR over thresholds whose empirical FPR on the
    non-members is <= ``fpr_budget`` (rule: member iff ``score > threshold``).

    The FPR achieved never exceeds the budget (ties among non-members can make it smaller).
    ``min_resolvable_fpr = 1 / n_nonmembers``; a budget below it is not resolvable
    (``resolvable=False``) and the TPR reported is then the TPR at FPR 0. Unlike the reference
    implementation, FPR equal to the budget is allowed, so "TPR@0.1%FPR" with 1,000 non-members
    really allows one false positive.
    """
    m = _scores(member_scores, "member_scores")
    nm = _scores(nonmember_scores, "nonmember_scores")
    b = _budget(fpr_budget)
    k = _allowed_false_positives(b, nm.size)
    t = threshold_at_fpr(nm, b)
    return TprAtFpr(
        tpr=float(np.count_nonzero(m > t) / m.size),
        fpr_achieved=float(np.count_nonzero(nm > t) / nm.size),
        threshold=t,
        fpr_budget=b,
        min_resolvable_fpr=1.0 / nm.size,
        resolvable=bool(k >= 1),  # == (budget >= 1/n), robust to float rounding
    )


# ----------------------------------------------------------------------------- summary record


def budget_key(fpr_budget: float) -> str:
    """Column name for a TPR at a budget: 0.01 -> 'tpr@1%fpr', 0.001 -> 'tpr@0.1%fpr'."""
    return f"tpr@{float(fpr_budget) * 100:g}%fpr"


def evaluate(
    member_scores,
    nonmember_scores,
    n_resamples: int = 1000,
    seed: int = 0,
    fpr_budgets=(0.01, 0.001),
) -> dict:
    """One flat record per (attack, split, model): AUC + bootstrap CI, TPR at each budget, sizes.

    Keys: auc, auc_mean, auc_lo, auc_hi, auc_std, tpr@<budget%>fpr for each budget,
    min_resolvable_fpr, n_members, n_nonmembers. Read a TPR at a budget below
    min_resolvable_fpr as TPR at FPR 0.
    """
    m = _scores(member_scores, "member_scores")
    nm = _scores(nonmember_scores, "nonmember_scores")
    bs = bootstrap_auc(m, nm, n_resamples=n_resamples, seed=seed)
    rec = {
        "auc": bs.point,
        "auc_mean": bs.mean,
        "auc_lo": bs.lo,
        "auc_hi": bs.hi,
        "auc_std": bs.std,
    }
    for b in fpr_budgets:
        rec[budget_key(b)] = tpr_at_fpr(m, nm, b).tpr
    rec["min_resolvable_fpr"] = 1.0 / nm.size
    rec["n_members"] = int(m.size)
    rec["n_nonmembers"] = int(nm.size)
    return rec


# ----------------------------------------------------------------------------- paired comparison


class PairedDifference(NamedTuple):
    """AUC(a) - AUC(b) on the same texts, with a paired percentile-bootstrap interval."""

    point: float
    lo: float
    hi: float
    n_members: int
    n_nonmembers: int
    n_resamples: int


def paired_auc_difference(
    a_members,
    a_nonmembers,
    b_members,
    b_nonmembers,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    paired_nonmembers: bool = True,
) -> PairedDifference:
    """AUC(a) - AUC(b) with a *paired* stratified bootstrap: each resample draws one set of member
    indices and one set of non-member indices and scores both a and b on them, so the text-to-text
    variation that a and b share cancels. Two models (or attacks) scored on the same texts give a
    much narrower interval for their difference than their two separate intervals suggest.

    ``a_members[i]`` and ``b_members[i]`` must be scores of the same text (likewise non-members).
    With ``paired_nonmembers=False`` the two non-member sets are different texts (e.g. two
    benchmark splits sharing their members): they are then resampled independently.
    """
    am, an = _scores(a_members, "a_members"), _scores(a_nonmembers, "a_nonmembers")
    bm, bn = _scores(b_members, "b_members"), _scores(b_nonmembers, "b_nonmembers")
    if am.size != bm.size:
        raise ValueError(
            f"b_members: {bm.size} scores, but a_members has {am.size}; a paired "
            "comparison needs the same texts on both sides"
        )
    if paired_nonmembers and an.size != bn.size:
        raise ValueError(
            f"b_nonmembers: {bn.size} scores, but a_nonmembers has {an.size}; pass "
            "paired_nonmembers=False if they are different texts"
        )
    return _paired_bootstrap([(am, an, bm, bn)], n_resamples, seed, confidence, paired_nonmembers)


def seed_averaged_auc_difference(
    seeds, n_resamples: int = 1000, seed: int = 0, confidence: float = 0.95
) -> PairedDifference:
    """The mean over training seeds of AUC(a) - AUC(b), all on the same texts, with one paired
    bootstrap for all seeds: each resample draws one set of member and one of non-member indices
    and scores every seed's a and b on them (the texts are shared, so their variation is drawn once;
    the seed-to-seed spread is not in this interval: it is the seed sd's, divided by sqrt(k)).

    ``seeds``: one ``(a_members, a_nonmembers, b_members, b_nonmembers)`` per seed, index-aligned
    across seeds and sides. With one seed this is :func:`paired_auc_difference` exactly.
    """
    seeds = list(seeds)
    if not seeds:
        raise ValueError("seeds: expected at least one (a_members, a_nonmembers, b_members, b_nonmembers)")
    arrays = []
    for k, four in enumerate(seeds):
        if not isinstance(four, (tuple, list)) or len(four) != 4:
            raise ValueError(f"seeds[{k}]: expected (a_members, a_nonmembers, b_members, b_nonmembers)")
        names = ("a_members", "a_nonmembers", "b_members", "b_nonmembers")
        arrays.append(tuple(_scores(x, f"seeds[{k}].{name}") for x, name in zip(four, names)))
    m, n = arrays[0][0].size, arrays[0][1].size
    for k, (am, an, bm, bn) in enumerate(arrays):
        if am.size != m or bm.size != m or an.size != n or bn.size != n:
            raise ValueError(
                f"seeds[{k}]: {am.size}/{bm.size} member and {an.size}/{bn.size} non-member scores, but seeds[0] "
                f"has {m} and {n}; every seed must score the same texts"
            )
    return _paired_bootstrap(arrays, n_resamples, seed, confidence, True)


def _paired_bootstrap(arrays, n_resamples, seed, confidence, paired_nonmembers) -> PairedDifference:
    """The mean over ``arrays`` (checked (am, an, bm, bn) tuples on the same texts) of AUC(a) - AUC(b),
    with a stratified bootstrap drawing one member and one non-member index set per resample for all."""
    n_resamples, confidence = _resampling(n_resamples, confidence)
    rng = np.random.default_rng(seed)
    m, n, nb = arrays[0][0].size, arrays[0][1].size, arrays[0][3].size
    diffs = np.empty(n_resamples)
    for r in range(n_resamples):
        im = rng.integers(0, m, m)
        ia = rng.integers(0, n, n)
        ib = ia if paired_nonmembers else rng.integers(0, nb, nb)
        diffs[r] = np.mean(
            [_auc_sorted(am[im], np.sort(an[ia])) - _auc_sorted(bm[im], np.sort(bn[ib])) for am, an, bm, bn in arrays]
        )
    alpha = 1.0 - confidence
    lo, hi = np.quantile(diffs, [alpha / 2.0, 1.0 - alpha / 2.0])
    point = np.mean([_auc_sorted(am, np.sort(an)) - _auc_sorted(bm, np.sort(bn)) for am, an, bm, bn in arrays])
    return PairedDifference(float(point), float(lo), float(hi), m, n, n_resamples)


def paired_gain_difference(
    a_new, a_old, b_new, b_old, n_resamples: int = 1000, seed: int = 0, confidence: float = 0.95
) -> PairedDifference:
    """How much more score a gains than score b when the non-members are swapped:
    ``[AUC(a_new) - AUC(a_old)] - [AUC(b_new) - AUC(b_old)]``, with a paired stratified bootstrap.

    Each argument is a ``(member_scores, nonmember_scores)`` pair. The members are the same texts
    in all four (index-aligned); the ``new`` non-members are the same texts for a and b, and so
    are the ``old`` ones (two benchmark splits sharing their members, scored by two attacks).
    Each resample draws one set of member indices, one of new and one of old non-member
    indices, and uses them for all four AUCs. ``n_nonmembers`` reports the new set's size.
    """
    pairs = {}
    for name, pair in (("a_new", a_new), ("a_old", a_old), ("b_new", b_new), ("b_old", b_old)):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(f"{name}: expected a (member_scores, nonmember_scores) pair")
        pairs[name] = (_scores(pair[0], f"{name} members"), _scores(pair[1], f"{name} nonmembers"))
    n_m = {k: v[0].size for k, v in pairs.items()}
    if len(set(n_m.values())) != 1:
        raise ValueError(f"members: sizes {n_m} differ; the four AUCs must share their member texts")
    for x, y in (("a_new", "b_new"), ("a_old", "b_old")):
        if pairs[x][1].size != pairs[y][1].size:
            raise ValueError(
                f"{y}: {pairs[y][1].size} non-member scores, but {x} has {pairs[x][1].size}; "
                "a and b must score the same non-member texts"
            )
    n_resamples, confidence = _resampling(n_resamples, confidence)
    (anm, ann), (aom, aon), (bnm, bnn), (bom, bon) = pairs.values()

    def contrast(im, inew, iold):
        return (_auc_sorted(anm[im], np.sort(ann[inew])) - _auc_sorted(aom[im], np.sort(aon[iold]))) - (
            _auc_sorted(bnm[im], np.sort(bnn[inew])) - _auc_sorted(bom[im], np.sort(bon[iold]))
        )

    rng = np.random.default_rng(seed)
    m, new, old = anm.size, ann.size, aon.size
    diffs = np.array(
        [
            contrast(rng.integers(0, m, m), rng.integers(0, new, new), rng.integers(0, old, old))
            for _ in range(n_resamples)
        ]
    )
    alpha = 1.0 - confidence
    lo, hi = np.quantile(diffs, [alpha / 2.0, 1.0 - alpha / 2.0])
    point = contrast(np.arange(m), np.arange(new), np.arange(old))
    return PairedDifference(float(point), float(lo), float(hi), int(m), int(new), n_resamples)


# ----------------------------------------------------------------------------- proportions

PROPORTION_METHODS = ("clopper-pearson", "wilson")


def mean_t_interval(values) -> tuple[float, float, float, float]:
    """The mean of ``values`` (at least two), its 95% one-sample t interval mean +/- t(0.975, k - 1) sd / sqrt(k)
    and sd (ddof 1): ``(mean, lo, hi, sd)``; the interval over independent replicates of one experiment."""
    v = np.asarray(values, dtype=float)
    if v.ndim != 1 or len(v) < 2 or not np.isfinite(v).all():
        raise ValueError(f"values: expected at least two finite numbers, got {values!r}")
    k, mean, sd = len(v), float(v.mean()), float(v.std(ddof=1))
    half = float(stats.t.ppf(0.975, k - 1)) * sd / math.sqrt(k)
    return mean, mean - half, mean + half, sd


def proportion_interval(k, n, confidence: float = 0.95, method: str = "clopper-pearson") -> tuple[float, float]:
    """Interval of a proportion ``k / n`` that stays sensible at 0 and at ``n`` (a percentile
    bootstrap of 0 of 36 collapses to ``[0, 0]``).

    ``clopper-pearson``: exact (beta quantiles), never shorter than the binomial needs; 0 of n has
    upper bound ``1 - (alpha/2)^(1/n)``. ``wilson``: the score interval, closer to nominal on
    average. ``k`` may be fractional (an effective count, e.g. a share of flagged edits times the
    number of members); the beta quantiles and Wilson's formula extend to it unchanged.
    """
    try:
        k, n = float(k), float(n)
    except (TypeError, ValueError):
        raise ValueError(f"k, n: expected numbers, got {k!r} and {n!r}") from None
    if not (math.isfinite(n) and n > 0) or not (math.isfinite(k) and 0.0 <= k <= n):
        raise ValueError(f"k, n: expected 0 <= k <= n and n > 0, got k={k!r}, n={n!r}")
    _, confidence = _resampling(1, confidence)
    alpha = 1.0 - confidence
    if method == "clopper-pearson":
        lo = 0.0 if k == 0 else float(stats.beta.ppf(alpha / 2.0, k, n - k + 1.0))
        hi = 1.0 if k == n else float(stats.beta.ppf(1.0 - alpha / 2.0, k + 1.0, n - k))
        return lo, hi
    if method == "wilson":
        z = float(stats.norm.ppf(1.0 - alpha / 2.0))
        p = k / n
        centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n)
        half = z * math.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n)) / (1.0 + z * z / n)
        lo = 0.0 if k == 0 else max(0.0, centre - half)
        hi = 1.0 if k == n else min(1.0, centre + half)
        return float(lo), float(hi)
    raise ValueError(f"method: expected one of {PROPORTION_METHODS}, got {method!r}")


def difference_interval(
    p1: float, ci1: tuple[float, float], p2: float, ci2: tuple[float, float]
) -> tuple[float, float]:
    """Interval of ``p1 - p2`` for two independent proportions from each one's own interval
    (Newcombe's hybrid score method, MOVER: Zou and Donner 2008); it inherits their behaviour at 0
    and 1, where a bootstrap of 0 of n is a point."""
    (l1, u1), (l2, u2) = ci1, ci2
    d = p1 - p2
    lo, hi = d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2), d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return max(-1.0, lo), min(1.0, hi)
