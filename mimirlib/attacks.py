"""Attacks: membership scores computed from signals, never from the model directly.

Direction convention (one for the whole project): **a higher score means "more likely a
member"**. The papers write every attack as a loss-like quantity where *lower* means member
(LOSS, Ref, zlib, Min-K%, Ne); here each is negated once, at its definition, so AUC > 0.5 always
means an attack beats chance and nothing downstream ever flips a sign.

Each attack is a small registered function of an :class:`AttackInputs` (one text's signals
under the target, optionally the reference model's and the neighbours'). ``score`` maps one
over many texts; :func:`score_benchmark` runs a whole benchmark with cached signals.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from .signals import TokenSignals


@dataclass(frozen=True)
class AttackInputs:
    """What an attack may read about one text."""

    text: str
    target: TokenSignals
    reference: TokenSignals | None = None
    neighbors: Sequence[TokenSignals] | None = None


@dataclass(frozen=True)
class Attack:
    name: str
    label: str
    fn: Callable[..., float]
    needs: frozenset = field(default_factory=frozenset)  # subset of {"reference", "neighbors"}
    params: dict = field(default_factory=dict)  # defaults, overridable per call


ATTACKS: dict[str, Attack] = {}


def register(name: str, label: str, needs: Sequence[str] = (), **params):
    """Decorator that adds an attack to :data:`ATTACKS` under ``name``."""

    def deco(fn):
        ATTACKS[name] = Attack(name, label, fn, frozenset(needs), dict(params))
        return fn

    return deco


def lowest_k(values: np.ndarray, k: float) -> np.ndarray:
    """The ``floor(k * len)`` smallest values, keeping at least one.

    The reference implementation keeps ``floor(k * len)`` with no minimum (NaN under 5 tokens at k = 0.2)."""
    if not 0 < k <= 1:
        raise ValueError(f"k must be in (0, 1], got {k}")
    n = max(1, math.floor(k * len(values)))
    return np.partition(values, n - 1)[:n]


def zlib_bytes(text: str) -> int:
    return len(zlib.compress(text.encode("utf-8")))


@register("loss", "LOSS")
def loss_score(x: AttackInputs) -> float:
    """Yeom et al.: -L(x), the mean token log-likelihood."""
    return float(x.target.logprob.mean())


@register("ref", "Reference", needs=("reference",))
def reference_score(x: AttackInputs) -> float:
    """Carlini et al.: -(L_target(x) - L_ref(x)); the reference calibrates intrinsic difficulty."""
    return float(x.target.logprob.mean() - x.reference.logprob.mean())


@register("zlib", "zlib")
def zlib_score(x: AttackInputs) -> float:
    """Carlini et al.: -L(x) / zlib(x), with zlib(x) the compressed size in bytes."""
    return float(x.target.logprob.mean() / zlib_bytes(x.text))


@register("min_k", "Min-K%", k=0.2)
def min_k_score(x: AttackInputs, k: float = 0.2) -> float:
    """Shi et al.: mean log-likelihood of the k% least likely tokens."""
    return float(lowest_k(x.target.logprob, k).mean())


@register("min_k_pp", "Min-K%++", k=0.2)
def min_k_pp_score(x: AttackInputs, k: float = 0.2) -> float:
    """Zhang et al.: Min-K% over z_t = (log p_t - mu_t) / sigma_t, normalised by the full distribution."""
    sigma = np.sqrt(np.maximum(x.target.var, 1e-12))
    z = (x.target.logprob - x.target.mean) / sigma
    return float(lowest_k(z, k).mean())


@register("ne", "Neighbourhood", needs=("neighbors",))
def neighborhood_score(x: AttackInputs) -> float:
    """Mattern et al.: -(L(x) - mean_i L(x~_i)); members sit in a loss dip relative to neighbours."""
    neigh_nll = np.mean([s.nll for s in x.neighbors])
    return float(neigh_nll - x.target.nll)


def get_attack(name: str) -> Attack:
    try:
        return ATTACKS[name]
    except KeyError:
        raise KeyError(f"unknown attack {name!r}; known: {sorted(ATTACKS)}") from None


def score(name: str, inputs: Sequence[AttackInputs], **params) -> np.ndarray:
    """Scores of attack ``name`` for each input (higher = more likely member)."""
    attack = get_attack(name)
    unknown = set(params) - set(attack.params)
    if unknown:
        raise TypeError(f"attack {name!r} takes no parameter(s) {sorted(unknown)}; it takes {sorted(attack.params)}")
    kwargs = {**attack.params, **params}
    for need in attack.needs:
        if any(getattr(x, need) is None for x in inputs):
            raise ValueError(f"attack {name!r} needs {need} signals")
    return np.array([attack.fn(x, **kwargs) for x in inputs], dtype=np.float64)
