"""RaMIA beyond text: image and tabular ranges on data that ships with scikit-learn.

The RaMIA paper's image and tabular columns (CIFAR-10 with geometric transformations, Purchase-100
with missing columns) in miniature, on the 1,797 8x8 handwritten digits of ``load_digits``, which
need no download, and classifiers small enough to train in seconds on CPU:

- **data** (:func:`load_data`, :func:`split_data`): the digits as rows of 64 pixel values (0-16),
  split into the target's universe (``train_rows`` of it, by default half, are the target's training set,
  the rest its non-members), the attacker's pool (each shadow model trains on as many random rows of it) and a
  population z that no model trains on (offline RMIA's z);
- **models** (:func:`train_classifier`, :func:`log_prob`): a tiny CNN reads the rows as 8x8
  images, an MLP as 64 features; the membership signal is log Pr(true class | x);
- **ranges** (:class:`ImageRanges`, :class:`TableRanges`): a range is a centre and a range
  function; each class builds centres from source rows, samples inside a range, says whether a
  range contains any of a set of rows (the ground truth) and whether a sample lies in its range;
- **offline RMIA with per-row OUT references** (:func:`rmia_scores`) and its ``a`` tuned on the
  shadow models only (:func:`tune_rmia_a`): one shadow at a time plays the target, the others
  attack it, so nothing about the real target enters.

Range scores are aggregated by :func:`mimirlib.core.range_scores.trimmed_average` (equation 4), with the
trim chosen on a shadow model by :func:`mimirlib.core.range_scores.sweep_trim`.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mimirlib.core import metrics, range_scores

__all__ = [
    "SIDE",
    "N_CLASSES",
    "MAX_VALUE",
    "N_ROWS",
    "load_data",
    "Split",
    "split_data",
    "ARCHITECTURES",
    "one_thread",
    "train_classifier",
    "log_prob",
    "accuracy",
    "RangeSet",
    "ImageRanges",
    "TableRanges",
    "rmia_scores",
    "tune_rmia_a",
]

SIDE = 8  # the digits are 8x8 images
N_CLASSES = 10
N_ROWS = 1797  # rows of the digits (load_data)
MAX_VALUE = 16.0  # pixel values run from 0 to 16 (4x4 blocks of a 32x32 bitmap, counted)


# --------------------------------------------------------------------------- data


def load_data() -> tuple[np.ndarray, np.ndarray]:
    """The digits bundled with scikit-learn: (X (1797, 64) float pixel values 0-16, y (1797,) int)."""
    from sklearn.datasets import load_digits

    d = load_digits()
    return np.asarray(d.data, dtype=np.float64), np.asarray(d.target, dtype=np.int64)


@dataclass(frozen=True)
class Split:
    """Row indices of one experiment. ``target_members`` / ``target_nonmembers``: the target's
    universe, halved; ``pool``: the attacker's data, ``shadow_keep[j, i]`` True iff shadow j
    trains on ``pool[i]``; ``population``: offline RMIA's z, in no model's training set."""

    target_members: np.ndarray
    target_nonmembers: np.ndarray
    pool: np.ndarray
    shadow_keep: np.ndarray
    population: np.ndarray

    @property
    def n_shadows(self) -> int:
        return int(self.shadow_keep.shape[0])

    def shadow_rows(self, j: int) -> np.ndarray:
        """Row indices shadow ``j`` trains on."""
        return self.pool[self.shadow_keep[j]]

    def swapped(self) -> "Split":
        """The same split with the target's members and non-members exchanged (the attacker's part
        unchanged): what the attacker computes must not change (tests use it)."""
        return Split(self.target_nonmembers, self.target_members, self.pool, self.shadow_keep, self.population)


def split_data(
    n_rows: int, *, n_population: int, n_shadows: int, seed: int = 0, train_rows: int | None = None
) -> Split:
    """Split ``n_rows`` rows at random (seeded): ``n_population`` rows for z, the rest in two equal
    parts, the target's universe (its training set ``train_rows`` of it, the rest its non-members) and the
    attacker's pool (each of ``n_shadows`` shadows trains on ``train_rows`` of it), so that the target and every
    shadow train on the same number of rows; ``train_rows`` None: half of each part. No shadow ever sees a row
    of the target's universe: every shadow is an OUT reference for every target query."""
    for name, v, low in (("n_population", n_population, 1), ("n_shadows", n_shadows, 2)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {v!r}")
    if n_rows - n_population < 8:
        raise ValueError(f"n_population={n_population} leaves {n_rows - n_population} of {n_rows} rows for the models")
    half = (n_rows - n_population) // 2
    k = half // 2 if train_rows is None else train_rows
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= half // 2:
        raise ValueError(f"train_rows must be an integer in [1, {half // 2}] (half the target's universe), got {k!r}")
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n_rows)
    population, rest = perm[:n_population], perm[n_population:]
    universe, pool = rest[:half], rest[half : 2 * half]
    members, nonmembers = universe[:k], universe[k:]
    keep = np.zeros((n_shadows, len(pool)), dtype=bool)
    for j in range(n_shadows):
        keep[j, rng.permutation(len(pool))[:k]] = True
    return Split(np.sort(members), np.sort(nonmembers), pool, keep, np.sort(population))


# --------------------------------------------------------------------------- models


def _build(arch: str):
    import torch.nn as nn

    if arch == "cnn":  # images: two 3x3 convolutions, one pooling, a linear read-out
        return nn.Sequential(
            nn.Unflatten(1, (1, SIDE, SIDE)),
            nn.Conv2d(1, 16, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(32 * (SIDE // 2) ** 2, N_CLASSES),
        )
    if arch == "mlp":  # tables: the paper's Purchase-100 MLP, scaled to 64 features
        return nn.Sequential(
            nn.Linear(SIDE * SIDE, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, N_CLASSES)
        )
    raise ValueError(f"unknown architecture {arch!r}; use one of {ARCHITECTURES}")


ARCHITECTURES = ("cnn", "mlp")


@contextmanager
def one_thread():
    """Torch on one thread for the block, restored after: these models are so small that a second
    thread only adds synchronisation, and on a loaded machine spinning threads cost minutes."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def train_classifier(X, y, *, arch: str, epochs: int, lr: float = 1e-3, batch_size: int = 32, seed: int = 0):
    """A classifier of ``arch`` trained with Adam (the paper's optimiser and learning rate) on rows
    ``X`` (values 0-16) and labels ``y``; no augmentation, no weight decay, so it memorises its
    training rows as the paper's targets do. Deterministic in ``seed``."""
    import torch

    if arch not in ARCHITECTURES:
        raise ValueError(f"unknown architecture {arch!r}; use one of {ARCHITECTURES}")
    X = torch.as_tensor(np.asarray(X, dtype=np.float32) / MAX_VALUE)
    y = torch.as_tensor(np.asarray(y, dtype=np.int64))
    torch.manual_seed(seed)
    model = _build(arch)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    model.train()
    with one_thread():
        for _ in range(epochs):
            order = torch.randperm(len(X), generator=gen)
            for start in range(0, len(X), batch_size):
                idx = order[start : start + batch_size]
                opt.zero_grad()
                torch.nn.functional.cross_entropy(model(X[idx]), y[idx]).backward()
                opt.step()
    model.eval()
    return model


def log_prob(model, X, y, batch_size: int = 8192) -> np.ndarray:
    """log Pr(y | x) under ``model`` for rows ``X`` of any leading shape (..., 64) and labels ``y``
    broadcastable to it (one label per range for its samples): the membership signal (<= 0;
    LOSS is this value, = -cross-entropy)."""
    import torch

    X = np.asarray(X, dtype=np.float32)
    lead = X.shape[:-1]
    flat = X.reshape(-1, X.shape[-1])
    y = np.asarray(y, dtype=np.int64)
    labels = np.array(np.broadcast_to(y.reshape(y.shape + (1,) * (len(lead) - y.ndim)), lead)).reshape(-1)
    out = np.empty(len(flat), dtype=np.float64)
    with torch.no_grad(), one_thread():
        for s in range(0, len(flat), batch_size):
            xb = torch.as_tensor(flat[s : s + batch_size] / MAX_VALUE)
            lp = torch.log_softmax(model(xb), dim=1)
            out[s : s + batch_size] = (
                lp[torch.arange(len(xb)), torch.as_tensor(labels[s : s + batch_size])].double().numpy()
            )
    return np.minimum(out, 0.0).reshape(lead)


def accuracy(model, X, y) -> float:
    """Share of rows whose most likely class under ``model`` is their label."""
    import torch

    with torch.no_grad(), one_thread():
        pred = model(torch.as_tensor(np.asarray(X, dtype=np.float32) / MAX_VALUE)).argmax(dim=1).numpy()
    return float((pred == np.asarray(y)).mean())


# --------------------------------------------------------------------------- ranges


@dataclass
class RangeSet:
    """Ranges built from source rows: ``centres`` (n, 64), ``sources`` (n, 64) the rows they were
    made from, ``labels`` (n,) the class labels (a range keeps its source's class), and ``extra``:
    the range's own description (images: every image of the range, (n, |T|, 64); tables: the
    hidden-column mask, (n, 64) bool)."""

    centres: np.ndarray
    sources: np.ndarray
    labels: np.ndarray
    extra: np.ndarray

    def __len__(self) -> int:
        return len(self.centres)


def _keys(rows: np.ndarray) -> list[bytes]:
    """Hashable exact keys of rows (rounded to 1e-6, so -0.0 and 0.0 and float noise agree)."""
    r = np.round(np.asarray(rows, dtype=np.float64), 6) + 0.0
    return [row.tobytes() for row in r.reshape(-1, r.shape[-1])]


def _choose(keys: np.ndarray, n: int) -> np.ndarray:
    """Per row, the indices of the n smallest keys (inf = never chosen), in random order."""
    return np.argsort(keys, axis=1)[:, :n]


@dataclass(frozen=True)
class ImageRanges:
    """The CIFAR-10 column in miniature: a range is every image a fixed set T of geometric
    transforms makes of its centre, T = {optional horizontal flip} x {circular shift by
    -shift..shift pixels each way} x {rotation by each of ``angles`` degrees, and 0}, applied in
    that order. A centre is its source moved by a flip-and-shift t0 of T (never the identity,
    never an image equal to the source): flips and circular shifts are exactly invertible and
    the inverse of t0 is in T, so a range built around a training image contains it exactly,
    away from the centre (the paper's hardest setting: one training point per IN range, not at
    the centre)."""

    flips: bool = True
    shift: int = 1
    angles: tuple = (-15.0, 15.0)

    def __post_init__(self):
        if isinstance(self.shift, bool) or not isinstance(self.shift, (int, np.integer)) or not 0 <= self.shift < SIDE:
            raise ValueError(f"shift must be an integer in [0, {SIDE}), got {self.shift!r}")
        if any(not math.isfinite(float(a)) or float(a) == 0.0 for a in self.angles):
            raise ValueError(f"angles must be finite and non-zero (0 is always in T), got {list(self.angles)}")

    def transforms(self) -> list[tuple[bool, int, int, float]]:
        """T as (flip, dx, dy, angle) tuples; the identity first."""
        flips = (False, True) if self.flips else (False,)
        shifts = range(-self.shift, self.shift + 1)
        angles = (0.0,) + tuple(float(a) for a in self.angles)
        grid = [(f, dx, dy, a) for a in angles for f in flips for dx in shifts for dy in shifts]
        return sorted(grid, key=lambda t: (t[3] != 0.0, t[0], t[1] != 0 or t[2] != 0))

    @staticmethod
    def apply(images, t: tuple[bool, int, int, float]) -> np.ndarray:
        """Transform ``t`` of rows (n, 64): flip, then circular shift (dx columns, dy rows), then
        rotation about the centre (bilinear, zeros outside)."""
        from scipy import ndimage

        flip, dx, dy, angle = t
        im = np.asarray(images, dtype=np.float64).reshape(-1, SIDE, SIDE)
        if flip:
            im = im[:, :, ::-1]
        im = np.roll(im, (dy, dx), axis=(1, 2))
        if angle:
            im = ndimage.rotate(im, angle, axes=(2, 1), reshape=False, order=1, mode="constant", cval=0.0)
            im = np.clip(im, 0.0, MAX_VALUE)
        return np.ascontiguousarray(im).reshape(-1, SIDE * SIDE)

    def build(self, sources, labels, rng: np.random.Generator) -> RangeSet:
        """Ranges around ``sources`` (n, 64): centre = t0(source), t0 a random exact flip-and-shift of T."""
        sources = np.asarray(sources, dtype=np.float64)
        T = self.transforms()
        exact = [t for t in T[1:] if t[3] == 0.0]
        if not exact:
            raise ValueError("T has no flip or shift to move the centres with (flips=False and shift=0)")
        moved = np.stack([self.apply(sources, t) for t in exact], axis=1)  # (n, |exact|, 64)
        keys = rng.random(moved.shape[:2])
        keys[np.all(np.isclose(moved, sources[:, None, :]), axis=2)] = np.inf  # never the source itself
        pick = _choose(keys, 1)[:, 0]
        centres = moved[np.arange(len(sources)), pick]
        images = np.stack([self.apply(centres, t) for t in T], axis=1)  # (n, |T|, 64)
        return RangeSet(centres, sources, np.asarray(labels), images)

    def point_queries(self, rs: RangeSet) -> np.ndarray:
        """The MIA's query for each range: its centre (Table I: image x')."""
        return rs.centres

    def sample(self, rs: RangeSet, n: int, rng: np.random.Generator, *, exclude_source: bool) -> np.ndarray:
        """``n`` distinct images of each range, uniformly among its |T| images; with
        ``exclude_source`` never one equal to the range's source (for IN and OUT ranges alike).
        Returns (n_ranges, n, 64)."""
        keys = rng.random(rs.extra.shape[:2])
        if exclude_source:
            keys[np.all(np.isclose(rs.extra, rs.sources[:, None, :]), axis=2)] = np.inf
        if not 1 <= n <= keys.shape[1] or np.any(np.isinf(np.sort(keys, axis=1)[:, n - 1])):
            raise ValueError(f"n={n} samples: a range holds only {rs.extra.shape[1]} images (fewer without its source)")
        idx = _choose(keys, n)
        return np.take_along_axis(rs.extra, idx[:, :, None], axis=1)

    def contains(self, rs: RangeSet, rows) -> np.ndarray:
        """Ground truth: True for each range one of whose |T| images equals one of ``rows``."""
        known = set(_keys(rows))
        n, k, _ = rs.extra.shape
        hits = np.array([key in known for key in _keys(rs.extra)]).reshape(n, k)
        return hits.any(axis=1)

    def within(self, rs: RangeSet, samples) -> np.ndarray:
        """(n_ranges, n) True where a sample is one of its range's images."""
        samples = np.asarray(samples, dtype=np.float64)
        return np.array(
            [[key in set(_keys(rs.extra[i])) for key in _keys(samples[i])] for i in range(len(rs))], dtype=bool
        ).reshape(samples.shape[:2])


@dataclass(frozen=True)
class TableRanges:
    """The Purchase-100 column in miniature: the attacker holds a row with ``hidden`` columns
    missing; the range is every row equal to it on the observed columns whose hidden values lie
    within the population's range of each column (the paper's C_j bound). Hidden columns are
    drawn among the columns that vary in the attacker's population (a constant column would give
    its value away). Samples fill them by independent per-column draws from the population's
    empirical distribution (the paper's Bernoulli draws with the column means, for discrete
    values), and the first sample is the mode-imputed row, which is also the MIA's query."""

    population: np.ndarray
    hidden: int = 8

    def __post_init__(self):
        pop = np.asarray(self.population, dtype=np.float64)
        if pop.ndim != 2 or len(pop) < 2:
            raise ValueError(f"population must be a (rows, columns) array with >= 2 rows, got shape {pop.shape}")
        free = int((pop.max(axis=0) > pop.min(axis=0)).sum())
        if (
            isinstance(self.hidden, bool)
            or not isinstance(self.hidden, (int, np.integer))
            or not 1 <= self.hidden <= free
        ):
            raise ValueError(
                f"hidden must be an integer in [1, {free}] (columns that vary in the population), got {self.hidden!r}"
            )

    @property
    def varying(self) -> np.ndarray:
        pop = np.asarray(self.population)
        return np.flatnonzero(pop.max(axis=0) > pop.min(axis=0))

    @property
    def modes(self) -> np.ndarray:
        """The most frequent value of each column in the population (the smallest on ties)."""
        return np.array([pd.Series(c).mode().min() for c in np.asarray(self.population).T], dtype=np.float64)

    def build(self, sources, labels, rng: np.random.Generator) -> RangeSet:
        """Ranges around ``sources``: ``hidden`` random varying columns of each row masked."""
        sources = np.asarray(sources, dtype=np.float64)
        var = self.varying
        keys = rng.random((len(sources), len(var)))
        mask = np.zeros(sources.shape, dtype=bool)
        rows = np.repeat(np.arange(len(sources)), self.hidden)
        mask[rows, var[_choose(keys, self.hidden)].ravel()] = True
        centres = np.where(mask, np.nan, sources)  # the attacker's incomplete rows
        return RangeSet(centres, sources, np.asarray(labels), mask)

    def point_queries(self, rs: RangeSet) -> np.ndarray:
        """The MIA's query for each range: the mode-imputed row (Table I)."""
        return np.where(rs.extra, self.modes[None, :], rs.centres)

    def sample(self, rs: RangeSet, n: int, rng: np.random.Generator, *, exclude_source: bool) -> np.ndarray:
        """``n`` rows of each range: the mode-imputed row, then n - 1 rows whose hidden columns are
        drawn independently from the population's values of each column. With ``exclude_source``
        a row equal to the range's source is redrawn (the imputed row included), for IN and OUT
        ranges alike. Returns (n_ranges, n, 64)."""
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        pop = np.asarray(self.population, dtype=np.float64)
        base = np.where(rs.extra, 0.0, rs.centres)
        out = np.repeat(base[:, None, :], n, axis=1)
        out[:, 0] = self.point_queries(rs)
        draw = pop[rng.integers(0, len(pop), size=out.shape), np.arange(out.shape[2])]
        m = np.broadcast_to(rs.extra[:, None, :], out.shape)
        out[:, 1:][m[:, 1:]] = draw[:, 1:][m[:, 1:]]
        if exclude_source:
            for _ in range(100):
                same = np.all(out == rs.sources[:, None, :], axis=2)
                if not same.any():
                    break
                redraw = pop[rng.integers(0, len(pop), size=out.shape), np.arange(out.shape[2])]
                fix = same[:, :, None] & m
                out[fix] = redraw[fix]
            else:
                raise ValueError("could not draw samples different from their source in 100 tries")
        return out

    def contains(self, rs: RangeSet, rows) -> np.ndarray:
        """Ground truth: True for each range that some row of ``rows`` lies in (equal on every
        observed column, inside the population's bounds on the hidden ones: an observed value is the
        range's own, wherever it lies)."""
        rows = np.asarray(rows, dtype=np.float64)
        pop = np.asarray(self.population)
        lo, hi = pop.min(axis=0), pop.max(axis=0)
        bounded = (rows >= lo) & (rows <= hi)  # (n_rows, 64)
        out = np.zeros(len(rs), dtype=bool)
        for i in range(len(rs)):
            obs, hid = ~rs.extra[i], rs.extra[i]
            same = np.all(rows[:, obs] == rs.centres[i, obs], axis=1)
            out[i] = bool(np.any(same & np.all(bounded[:, hid], axis=1)))
        return out

    def within(self, rs: RangeSet, samples) -> np.ndarray:
        """(n_ranges, n) True where a sample equals its range's centre on the observed columns and
        lies inside the population's bounds on the hidden ones (as :meth:`contains`)."""
        samples = np.asarray(samples, dtype=np.float64)
        pop = np.asarray(self.population)
        lo, hi = pop.min(axis=0), pop.max(axis=0)
        obs = ~rs.extra[:, None, :]
        same = samples == np.nan_to_num(rs.centres)[:, None, :]
        bounded = (samples >= lo) & (samples <= hi)
        return np.all(np.where(obs, same, bounded), axis=2)


# --------------------------------------------------------------------------- offline RMIA


def rmia_scores(own, refs, out_mask, z_own, z_refs, *, a: float) -> np.ndarray:
    """Offline RMIA (:func:`mimirlib.core.range_scores.offline_rmia`) where each query uses only the
    reference models that did not train on it (the attacker knows what its shadows trained on).

    ``own`` (n,): log Pr(y|x) under the model attacked; ``refs`` (n, k) under the k references;
    ``out_mask`` (n, k) True where reference j is OUT for query i; ``z_own`` (m,), ``z_refs``
    (m, k): the population z, OUT for every reference. Queries are grouped by their set of OUT
    references; each group is scored against z under the same references."""
    own = np.asarray(own, dtype=np.float64).ravel()
    refs = np.asarray(refs, dtype=np.float64)
    mask = np.asarray(out_mask, dtype=bool)
    if refs.ndim != 2 or len(refs) != len(own) or mask.shape != refs.shape:
        raise ValueError(f"refs {refs.shape} and out_mask {mask.shape} must both be (n={len(own)}, k)")
    if not mask.any(axis=1).all():
        raise ValueError(f"{int((~mask.any(axis=1)).sum())} queries have no OUT reference model")
    out = np.empty(len(own))
    patterns, inverse = np.unique(mask, axis=0, return_inverse=True)
    z_refs = np.asarray(z_refs, dtype=np.float64)
    for p, cols in enumerate(patterns):
        rows = np.flatnonzero(inverse.ravel() == p)
        out[rows] = range_scores.offline_rmia(own[rows], refs[rows][:, cols], z_own, z_refs[:, cols], a=a)
    return out


def tune_rmia_a(pool_logps, shadow_keep, z_logps, grid=None) -> tuple[float, pd.DataFrame]:
    """Offline RMIA's ``a``, chosen as the paper does (appendix A): each shadow model in turn plays
    the target, its own training rows of the pool are the members and the rest non-members, the
    other shadows (those OUT for each row) attack it; the ``a`` with the highest mean AUC wins
    (the first on ties).

    Only the attacker's shadows enter: ``pool_logps`` (k, n_pool) log Pr(y|x) of the pool's rows
    under each shadow, ``shadow_keep`` (k, n_pool) which shadow trained on which row, ``z_logps``
    (k, m) of the population under each shadow. Returns (a, table of a and mean AUC)."""
    pool_logps = np.asarray(pool_logps, dtype=np.float64)
    keep = np.asarray(shadow_keep, dtype=bool)
    z = np.asarray(z_logps, dtype=np.float64)
    k = pool_logps.shape[0]
    if k < 2 or keep.shape != pool_logps.shape or z.shape[0] != k:
        raise ValueError(
            f"need >= 2 shadows with matching shapes: logps {pool_logps.shape}, keep {keep.shape}, z {z.shape}"
        )
    grid = [round(0.1 * i, 10) for i in range(11)] if grid is None else [float(a) for a in grid]
    rows = []
    for a in grid:
        aucs = []
        for j in range(k):
            others = [i for i in range(k) if i != j]
            out_mask = ~keep[others].T
            usable = out_mask.any(axis=1)
            s = rmia_scores(
                pool_logps[j, usable], pool_logps[others][:, usable].T, out_mask[usable], z[j], z[others].T, a=a
            )
            y = keep[j, usable]
            if y.any() and (~y).any():
                aucs.append(metrics.auc(s[y], s[~y]))
        rows.append({"a": a, "auc": float(np.mean(aucs)) if aucs else float("nan")})
    table = pd.DataFrame(rows)
    best = int(np.nanargmax(table["auc"].to_numpy()))
    return float(table.at[best, "a"]), table
