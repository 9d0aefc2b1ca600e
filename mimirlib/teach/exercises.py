"""What the chapters' exercises compute, and how their check cells judge a student's code.

Every exercise sits at the end of its chapter (``## Exercises``) and works on what the chapter
already holds: the same models, the same texts and therefore the same cached signals, so an
exercise adds no forward pass. "Predict, then run" solutions glue values computed here (e.g. an
attack with another ``k``); "Extend the library" exercises register an attack or a RaMIA backbone
through the registries' public API (:func:`mimirlib.core.attacks.register`,
:func:`mimirlib.core.range_scores.register_backbone`), and their check cells compare the student's registered
code with the instructor's key below (:data:`ATTACK_KEYS`, :data:`BACKBONE_KEYS`) on the same
signals. A handout whose solution is still ``raise NotImplementedError()`` registers nothing, so
its check fails with one line naming the missing attack.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from mimirlib.core import attacks, metrics, range_scores
from mimirlib.core.attacks import AttackInputs
from mimirlib.core.signals import ScoringOptions, SignalCache, compute_signals

# A correct student attack reproduces the key's AUC to float rounding; any real difference moves an AUC
# (a fraction of member/non-member pairs) by at least 1 / (m * n), far above this.
TOLERANCE = 1e-9


class ExerciseCheckFailed(AssertionError):
    """A check cell's verdict on a student's answer (one line, naming what differs)."""


# ----------------------------------------------------------------------------- the instructor's keys


def loss_ratio_score(x: AttackInputs) -> float:
    """Ratio of losses: -(L_target(x) / L_ref(x)). Like the reference attack it calibrates a text's
    intrinsic difficulty with a reference model, by division instead of subtraction."""
    return float(-x.target.nll / x.reference.nll)


def percentile_score(x: AttackInputs, q: float = 10.0) -> float:
    """The q-th percentile of the token log-likelihoods: Min-K%'s idea with one token's value
    instead of the mean of the lowest k%."""
    return float(np.percentile(x.target.logprob, q))


def median_score(x: AttackInputs) -> float:
    """The median token log-likelihood: LOSS, robust to a few very surprising tokens."""
    return float(np.median(x.target.logprob))


def ratio_backbone(own, other, z_own=None, z_other=None, a: float = 1.0) -> np.ndarray:
    """RaMIA backbone: -(own / other) with own, other the mean token log-probabilities under the
    target and the reference (both negative): the ratio of losses, higher = member."""
    return -(np.asarray(own, dtype=float) / np.asarray(other, dtype=float))


# name -> (key function, inputs it needs): the attack a student registers under that name
ATTACK_KEYS: dict[str, tuple[Callable[..., float], tuple[str, ...]]] = {
    "loss_ratio": (loss_ratio_score, ("reference",)),
    "token_percentile": (percentile_score, ()),
    "median_logprob": (median_score, ()),
}
BACKBONE_KEYS: dict[str, Callable[..., np.ndarray]] = {"loss_ratio": ratio_backbone}


# ----------------------------------------------------------------------------- scores and AUCs


def _inputs(model, texts, reference, options: ScoringOptions | None) -> list[AttackInputs]:
    """Signals of ``texts`` (and under ``reference``), from the project's cache unless ``options`` name one."""
    options = options or ScoringOptions()
    kw = options.replace(cache=options.cache or SignalCache.default()).signal_kwargs()
    target = compute_signals(model, list(texts), desc="exercise target", **kw)
    refs = compute_signals(reference, list(texts), desc="exercise reference", **kw) if reference else None
    return [AttackInputs(t, s, refs[i] if refs else None) for i, (t, s) in enumerate(zip(texts, target))]


def text_scores(
    model,
    texts: Sequence[str],
    attack: str,
    *,
    reference=None,
    key: bool = False,
    options: ScoringOptions | None = None,
    **params,
) -> np.ndarray:
    """Scores (higher = member) of the registered attack ``attack`` on ``texts``, or with ``key`` of
    the instructor's key of that name (:data:`ATTACK_KEYS`). ``options`` must be the chapter's
    (``p.scoring()``: its window and stride), so the signals come from its cache."""
    if key:
        fn, needs = ATTACK_KEYS[attack]
        if "reference" in needs and reference is None:
            raise ValueError(f"attack {attack!r} needs a reference model")
    elif attack not in attacks.ATTACKS:
        raise ExerciseCheckFailed(f"no attack {attack!r} is registered: run your solution cell first")
    inputs = _inputs(model, texts, reference, options)
    if key:
        return np.array([fn(x, **params) for x in inputs], dtype=np.float64)
    return attacks.score(attack, inputs, **params)


def texts_auc(model, members: Sequence[str], nonmembers: Sequence[str], attack: str, **kw) -> float:
    """AUC of ``attack`` (see :func:`text_scores` for the keywords) on members against non-members."""
    s = text_scores(model, list(members) + list(nonmembers), attack, **kw)
    return metrics.auc(s[: len(members)], s[len(members) :])


def split_texts(frame: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(member texts, non-member texts) of a frame with ``is_member`` and ``text`` columns."""
    member = frame["is_member"].astype(bool).to_numpy()
    text = frame["text"].to_numpy()
    return list(text[member]), list(text[~member])


def pooled_texts(benches: Mapping[str, object]) -> tuple[list[str], list[str]]:
    """(member texts, non-member texts) of several benchmarks (e.g. one per domain), pooled in order."""
    members = [t for b in benches.values() for t in b.members]
    return members, [t for b in benches.values() for t in b.nonmembers]


def flagged_share(model, nonmembers: Sequence[str], texts: Sequence[str], attack: str, fpr: float, **kw) -> float:
    """Share of ``texts`` an attack calls members at the threshold that flags a share ``fpr`` of the
    non-members (:func:`mimirlib.core.metrics.threshold_at_fpr`, rule ``score > threshold``)."""
    s = text_scores(model, list(nonmembers) + list(texts), attack, **kw)
    threshold = metrics.threshold_at_fpr(s[: len(nonmembers)], fpr)
    return float(np.mean(s[len(nonmembers) :] > threshold))


def frame_auc(frame: pd.DataFrame, column: str) -> float:
    """AUC of one score column of a per-text frame with an ``is_member`` column, texts pooled."""
    member = frame["is_member"].astype(bool).to_numpy()
    s = frame[column].to_numpy(dtype=float)
    return metrics.auc(s[member], s[~member])


def final_checkpoint_auc(by_step: pd.DataFrame, target: str, attack: str) -> float:
    """The AUC of ``attack`` at ``target``'s last scored checkpoint (a training-size ``by_step`` frame)."""
    rows = by_step[(by_step.target == target) & (by_step.attack == attack)]
    if rows.empty:
        raise ValueError(f"no AUC of {attack!r} for target {target!r} in this run")
    return float(rows.loc[rows.step.idxmax(), "auc"])


def trimmed_range_auc(pool_scores, y, q_s: float, q_e: float) -> float:
    """Range AUC of the (q_s, q_e) trimmed average of every sample in each range's pool
    (:func:`mimirlib.core.range_scores.trimmed_average`), IN ranges ``y`` against OUT ranges."""
    s = range_scores.trimmed_average(pool_scores, q_s, q_e)
    y = np.asarray(y, dtype=bool)
    return metrics.auc(s[y], s[~y])


def backbone_auc(name: str, own, other, y, z_own=None, z_other=None, *, a: float = 1.0, key: bool = False) -> float:
    """AUC of the point scores of RaMIA backbone ``name`` (registered, or with ``key`` the
    instructor's key) on texts with log-probabilities ``own`` / ``other``, IN labels ``y``."""
    if key:
        s = BACKBONE_KEYS[name](own, other, z_own, z_other, a=a)
    elif name not in range_scores.BACKBONES:
        raise ExerciseCheckFailed(f"no backbone {name!r} is registered: run your solution cell first")
    else:
        s = range_scores.backbone_scores(name, own, other, z_own, z_other, a=a)
    y = np.asarray(y, dtype=bool)
    s = np.asarray(s, dtype=float)
    return metrics.auc(s[y], s[~y])


# ----------------------------------------------------------------------------- check cells


def check_close(what: str, got: float, expected: float, tol: float = TOLERANCE) -> float:
    """``got`` if it is within ``tol`` of ``expected``; else one line naming ``what`` and both values."""
    if not (np.isfinite(got) and abs(got - expected) <= tol):
        raise ExerciseCheckFailed(f"{what}: got {got!r}, expected {expected!r} (tolerance {tol:g})")
    return float(got)


def check_attack(name: str, model, members: Sequence[str], nonmembers: Sequence[str], **kw) -> float:
    """The AUC of the student's registered attack ``name``, checked against the key's on the same
    texts and signals (keywords as :func:`text_scores`); returns it."""
    got = texts_auc(model, members, nonmembers, name, **kw)
    expected = texts_auc(model, members, nonmembers, name, key=True, **kw)
    return check_close(f"AUC of attack {name!r}", got, expected)


def check_backbone(name: str, own, other, y, z_own=None, z_other=None, *, a: float = 1.0) -> float:
    """The AUC of the student's registered backbone ``name``, checked against the key's; returns it."""
    got = backbone_auc(name, own, other, y, z_own, z_other, a=a)
    expected = backbone_auc(name, own, other, y, z_own, z_other, a=a, key=True)
    return check_close(f"AUC of backbone {name!r}", got, expected)


def iterations_auc(scores, y) -> tuple[float, float]:
    """(mean over iterations of each iteration's range AUC, AUC of the scores averaged over the
    iterations) for ``scores`` of shape (n_iterations, n_ranges): what one sampling gives on
    average, and what pooling every sampling's samples gives."""
    s = np.asarray(scores, dtype=float)
    y = np.asarray(y, dtype=bool)
    one = float(np.mean([metrics.auc(row[y], row[~y]) for row in s]))
    pooled = s.mean(axis=0)
    return one, metrics.auc(pooled[y], pooled[~y])
