"""Dataset inference (Maini et al., 2024, §5.1): was a *collection* of texts in the training data?

A per-text attack asks about one text; dataset inference asks about a *suspect set* against a
private *validation set* from the same distribution that the model cannot have seen. Each text has
a feature vector (the attacks' scores, each "higher = more member-like"). Both sets are split into
disjoint halves A and B:

- Stage 2, on A: the features standardised (A's mean and sd), each feature's top and bottom 2.5%
  in each set replaced by its mean, and a linear regression fit to output 0 for suspect and 1 for
  validation texts;
- Stage 3, on B: the regression's outputs of each set, their top and bottom 2.5% removed, and a
  one-sided Welch t-test, H1: the suspect texts' mean output is *below* the validation texts'. The
  direction is the one learned on A, so *any* systematic difference between the sets is flagged,
  member-like or not: why the paper requires the two sets to be IID;
- repeated over :data:`N_PARTITIONS` random A/B partitions, the p-values combined by the paper's
  Eq. 2, ``1 - prod(1 - p_i)`` (valid for dependent tests, and never below the largest p_i:
  conservative; :attr:`Inference.p_first` is one partition's plain p-value).

The paper's text ("Score Aggregation", §5.2) is followed where its code differs (the code trains a
logistic model, clips the outliers of each whole set, and tests with Student's t).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

N_PARTITIONS = 10  # "multiple t-tests using 10 different random seeds to obtain various splits" (§5.1)
OUTLIER_FRACTION = 0.05  # "replacing the top and bottom 2.5% of outlier values" (§5.2), 5% in all
ALPHA = 0.1  # the paper's significance level ("p-values ... always below 0.1", Figure 4)
MIN_PER_SIDE = 8  # texts per set: 4 per half, so that each t-test group has a variance to speak of
# The paper's features the book's attacks compute, name -> (attack, params), "higher = member-like":
# perplexity, Min-K% at k = 5%..60%, zlib ratio, reference ratio (not its perturbations nor Max-K%).
MIN_K_GRID = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6)
FEATURES: dict[str, tuple[str, dict]] = (
    {"loss": ("loss", {}), "zlib": ("zlib", {})}
    | {f"min_k_{k:g}": ("min_k", {"k": k}) for k in MIN_K_GRID}
    | {"ref": ("ref", {})}
)


@dataclass(frozen=True)
class Inference:
    """The outcome of :func:`infer` on one suspect and one validation set."""

    p_value: float  # the partitions' p-values combined by Eq. 2
    p_values: tuple[float, ...]  # one per A/B partition
    weights: tuple[float, ...]  # the regression's weight per feature (standardised), mean over partitions
    features: tuple[str, ...]
    n_suspect: int
    n_validation: int

    @property
    def p_first(self) -> float:
        """The first partition's p-value alone (the test without the combination)."""
        return self.p_values[0]

    def flagged(self, alpha: float = ALPHA) -> bool:
        return self.p_value < alpha

    def reading(self, alpha: float = ALPHA) -> str:
        """One plain-language sentence on the test's outcome."""
        if self.flagged(alpha):
            return (
                f"p = {self.p_value:.3g} < {alpha:g}: the model treats the {self.n_suspect} suspect texts as more "
                f"member-like than the {self.n_validation} validation texts; if both sets come from the same "
                "distribution, the suspect set (or text like it) was trained on."
            )
        return (
            f"p = {self.p_value:.3g} >= {alpha:g}: no evidence that the suspect set was trained on. This is "
            "not evidence that it was not: the test may lack the texts or the features to see it."
        )

    def weights_table(self) -> dict[str, float]:
        """Feature -> learned weight (negative: higher scores pull toward 'suspect', i.e. member-like)."""
        return dict(zip(self.features, self.weights))


def feature_spec(names: Sequence[str] | None, has_reference: bool) -> dict[str, tuple[str, dict]]:
    """The features to use: ``names`` from :data:`FEATURES` (None: all, the reference ratio only with a
    reference model). An unknown name raises, listing the known ones."""
    if names is None:
        return {k: v for k, v in FEATURES.items() if has_reference or k != "ref"}
    unknown = [n for n in names if n not in FEATURES]
    if unknown:
        raise ValueError(f"features: unknown {unknown}; known: {list(FEATURES)}")
    if "ref" in names and not has_reference:
        raise ValueError("features: 'ref' needs a reference model, and none was given")
    return {n: FEATURES[n] for n in names}


def tame_outliers(x: np.ndarray, fraction: float = OUTLIER_FRACTION) -> np.ndarray:
    """Each column's ``fraction`` most extreme values (half from each tail) set to the column's mean."""
    x = np.array(x, dtype=float, copy=True)
    k = int(len(x) * fraction / 2)
    if k == 0:
        return x
    order = np.argsort(x, axis=0, kind="stable")
    for j in range(x.shape[1]):
        mean = x[:, j].mean()
        x[np.r_[order[:k, j], order[-k:, j]], j] = mean
    return x


def combine(p_values: Sequence[float]) -> float:
    """Eq. 2 of the paper: ``1 - exp(sum log(1 - p_i))`` = ``1 - prod(1 - p_i)``."""
    p = np.clip(np.asarray(p_values, dtype=float), 0.0, 1.0)
    return float(-np.expm1(np.log1p(-p).sum())) if (p < 1).all() else 1.0


def halves(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A random partition of ``range(n)`` into A (the first n // 2 of a permutation) and B."""
    perm = rng.permutation(n)
    return perm[: n // 2], perm[n // 2 :]


def trim(x: np.ndarray, fraction: float = OUTLIER_FRACTION) -> np.ndarray:
    """``x`` without its ``fraction`` most extreme values (half from each tail): Stage 3's outlier step."""
    k = int(len(x) * fraction / 2)
    return np.sort(x)[k : len(x) - k]


def welch_less(x: np.ndarray, y: np.ndarray) -> float:
    """One-sided Welch t-test p-value, H1: mean(x) < mean(y) (``scipy.stats.ttest_ind(x, y,
    equal_var=False, alternative="less")``, without its per-call overhead: the chapter runs thousands)."""
    vx, vy = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    se2 = vx + vy
    if not se2 > 0:
        return 1.0
    df = se2**2 / (vx**2 / (len(x) - 1) + vy**2 / (len(y) - 1))
    return float(stats.t.cdf((x.mean() - y.mean()) / np.sqrt(se2), df))


def regress(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least squares with an intercept (sklearn's ``LinearRegression``): ``[intercept, weight per column]``."""
    return np.linalg.lstsq(np.c_[np.ones(len(x)), x], y, rcond=None)[0]


def one_partition(suspect: np.ndarray, validation: np.ndarray, rng: np.random.Generator) -> tuple[float, np.ndarray]:
    """Stages 2 and 3 on one random A/B partition: the t-test's p-value and the regression's weights."""
    sa, sb = halves(len(suspect), rng)
    va, vb = halves(len(validation), rng)
    a = np.vstack([suspect[sa], validation[va]])
    mean, sd = a.mean(axis=0), a.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    train = np.vstack([tame_outliers((suspect[sa] - mean) / sd), tame_outliers((validation[va] - mean) / sd)])
    coef = regress(train, np.r_[np.zeros(len(sa)), np.ones(len(va))])
    out_s = trim(coef[0] + ((suspect[sb] - mean) / sd) @ coef[1:])
    out_v = trim(coef[0] + ((validation[vb] - mean) / sd) @ coef[1:])
    return welch_less(out_s, out_v), coef[1:]


def as_matrix(x, name: str) -> np.ndarray:
    m = np.asarray(x, dtype=float)
    m = m.reshape(-1, 1) if m.ndim == 1 else m
    if m.ndim != 2 or len(m) < MIN_PER_SIDE:
        raise ValueError(f"{name}: dataset inference needs at least {MIN_PER_SIDE} texts, got {len(m)}")
    if not np.isfinite(m).all():
        raise ValueError(f"{name}: features hold NaN or infinite values")
    return m


def infer(
    suspect,
    validation,
    *,
    features: Sequence[str] | None = None,
    n_partitions: int = N_PARTITIONS,
    seed: int = 0,
) -> Inference:
    """Dataset inference on two feature matrices (texts x features, same columns, each feature
    "higher = more member-like"); ``features`` names the columns."""
    s, v = as_matrix(suspect, "suspect"), as_matrix(validation, "validation")
    if s.shape[1] != v.shape[1]:
        raise ValueError(f"suspect has {s.shape[1]} features and validation {v.shape[1]}")
    names = tuple(features) if features is not None else tuple(f"f{i}" for i in range(s.shape[1]))
    if len(names) != s.shape[1]:
        raise ValueError(f"features: {len(names)} names for {s.shape[1]} columns")
    rng = np.random.default_rng(seed)
    runs = [one_partition(s, v, rng) for _ in range(n_partitions)]
    p_values = tuple(p for p, _ in runs)
    weights = np.mean([w for _, w in runs], axis=0)
    return Inference(combine(p_values), p_values, tuple(float(w) for w in weights), names, len(s), len(v))
