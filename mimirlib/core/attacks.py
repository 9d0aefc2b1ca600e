"""Attacks: membership scores computed from signals, never from the model directly.

Direction convention (one for the whole project): **a higher score means "more likely a
member"**. The papers write every attack as a loss-like quantity where *lower* means member
(LOSS, Ref, zlib, Min-K%, Ne); here each is negated once, at its definition, so AUC > 0.5 always
means an attack beats chance and nothing downstream ever flips a sign.

Each attack is a small registered function of an :class:`AttackInputs` (one text's signals
under the target, optionally the reference model's and the neighbours'). ``score`` maps one
over many texts; :func:`score_benchmark` runs a whole benchmark with cached signals.

The attacks published after the paper (ReCaLL, DC-PDD, gradient norm: :data:`AFTER_PAPER`) read
inputs the plain forward pass does not give (a prefix-conditioned pass, token ids with a corpus's
token frequencies, a backward pass); :mod:`mimirlib.core.extra_signals` computes them and
:mod:`mimirlib.core.scoring_extra` joins them with these attacks.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from mimirlib.core.signals import TokenSignals


@dataclass(frozen=True)
class AttackInputs:
    """What an attack may read about one text."""

    text: str
    target: TokenSignals
    reference: TokenSignals | None = None
    neighbors: Sequence[TokenSignals] | None = None
    # ReCaLL: the text's signals after the non-member prefix, and without it on the same windows
    prefixed: TokenSignals | None = None
    unprefixed: TokenSignals | None = None
    # DC-PDD: the ids of the scored tokens (aligned with ``target``) and the smoothed frequency of
    # every vocabulary id in a reference corpus
    token_ids: np.ndarray | None = None
    token_freq: np.ndarray | None = None
    grad_norm: float | None = None  # the norm of the loss gradient w.r.t. the chosen weights


@dataclass(frozen=True)
class Attack:
    name: str
    label: str
    fn: Callable[..., float]
    needs: frozenset = field(default_factory=frozenset)  # names of AttackInputs fields it reads beyond the target
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


@register("recall", "ReCaLL", needs=("prefixed", "unprefixed"))
def recall_score(x: AttackInputs) -> float:
    """Xie et al. (2024): LL(x | P) / LL(x), LL the mean token log-likelihood and P a prefix of known
    non-member text, both over the same tokens and windows. Conditioning on non-member text lowers a
    member's likelihood more than a non-member's, so a larger ratio means member (the paper's form, and
    the reference implementation's up to its sign convention)."""
    return float(x.prefixed.logprob.mean() / x.unprefixed.logprob.mean())


def first_occurrences(ids: np.ndarray) -> np.ndarray:
    """Positions of the first occurrence of each distinct id, in text order."""
    _, first = np.unique(np.asarray(ids), return_index=True)
    return np.sort(first)


@register("dc_pdd", "DC-PDD", needs=("token_ids", "token_freq"), a=0.01)
def dc_pdd_score(x: AttackInputs, a: float = 0.01) -> float:
    """Zhang et al. (2024), DC-PDD: mean over each distinct token's first occurrence of
    ``min(p(x_i) * log(1 / f(x_i)), a)``, with ``p`` the target's probability of the token and ``f`` its
    smoothed frequency in a reference corpus: a likely token is evidence of membership in proportion to
    how rare it is in general text, capped at ``a`` (the reference implementation's default 0.01).
    The text's first token is not scored (nothing predicts it; the reference implementation prepends
    an end-of-text token to score it)."""
    if not a > 0:
        raise ValueError(f"a must be > 0, got {a}")
    ids = np.asarray(x.token_ids)
    if len(ids) != len(x.target):
        raise ValueError(f"{len(ids)} token ids for {len(x.target)} scored tokens")
    first = first_occurrences(ids)
    p = np.exp(x.target.logprob[first].astype(np.float64))
    alpha = p * -np.log(x.token_freq[ids[first]])
    return float(np.minimum(alpha, a).mean())


@register("grad_norm", "Gradient norm", needs=("grad_norm",))
def grad_norm_score(x: AttackInputs) -> float:
    """-||grad_theta L(x)||_2, the L2 norm of the mean token loss's gradient over the chosen weights:
    training drove members' gradients toward zero. (The reference implementation returns the mean of
    per-tensor infinity norms, with its sign giving members the larger norm.)"""
    return -float(x.grad_norm)


# The attacks published after the paper, each needing more than the plain forward pass (opt-in:
# in no default attack list).
AFTER_PAPER = ("recall", "dc_pdd", "grad_norm")
# The attacks whose score is a mean per-token log-likelihood or a difference of two: in nats per token.
NATS_PER_TOKEN = frozenset({"loss", "ref", "min_k", "ne"})
# The AttackInputs fields only :mod:`mimirlib.core.scoring_extra` fills.
EXTRA_NEEDS = frozenset({"prefixed", "unprefixed", "token_ids", "token_freq", "grad_norm"})


def needs_extra(name: str) -> bool:
    """Whether attack ``name`` reads inputs beyond the plain pass, the reference and the neighbours."""
    return bool(get_attack(name).needs & EXTRA_NEEDS)


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


def min_k_params(k: float) -> dict[str, dict]:
    """The ``attack_params`` that set k for Min-K% and Min-K%++ (one k for both, as every chapter uses)."""
    return {"min_k": {"k": k}, "min_k_pp": {"k": k}}
