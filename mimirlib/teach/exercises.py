"""What the chapters' exercises compute, and how their check cells judge a student's code.

Every exercise sits at the end of its chapter (``## Exercises``) and works on what the chapter
already holds: the same models, the same texts and therefore the same cached signals, so an
exercise adds no forward pass. "Predict, then run" solutions glue values computed here (e.g. an
attack with another ``k``); "Extend the library" exercises register an attack or a RaMIA backbone
through the registries' public API (:func:`mimirlib.core.attacks.register`,
:func:`mimirlib.core.range_scores.register_backbone`), and their check cells compare the student's registered
code with the instructor's key (:func:`load_keys`: the chapters' own solution regions, which the
package does not carry; a handout reads them from the file ``$MIMIR_KEYS`` names) on the same
signals. A handout whose solution is still ``raise NotImplementedError()`` registers nothing, so
its check fails with one line naming the missing attack.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

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

# The keys are the chapters' own solution regions: nothing in the package holds one. A handout's check
# finds them in the file ``$MIMIR_KEYS`` names (``handouts/keys/exercise_keys.py``, written with the keys).
KEYS_ENV = "MIMIR_KEYS"
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"  # nbgrader's markers
KEYS_PREAMBLE = (
    '"""The instructor\'s keys: the chapters\' solution cells (written by make handouts); never give out."""\n\n'
    "import numpy as np\nimport mimirlib.core.attacks\nfrom mimirlib.core import attacks, range_scores\n"
)


@dataclass(frozen=True)
class Keys:
    """The instructor's keys: each attack and RaMIA backbone a solution registers, by name."""

    attacks: dict
    backbones: dict
    source: str  # where they were read from, for the messages


def solution_regions(text: str) -> list[str]:
    """The code between nbgrader's markers in ``text`` (a chapter's source or a notebook's cell), in order."""
    regions, region = [], None
    for line in text.split("\n"):
        if BEGIN in line:
            region = []
        elif END in line and region is not None:
            regions.append("\n".join(region).strip("\n"))
            region = None
        elif region is not None:
            region.append(line)
    return regions


def keys_source(chapters: Mapping[str, str]) -> str:
    """A keys module (Python source) from ``chapter -> source text``: every distinct solution region once."""
    seen, parts = set(), [KEYS_PREAMBLE]
    for chapter, text in chapters.items():
        for region in solution_regions(text):
            if region not in seen:
                seen.add(region)
                parts.append(f"\n\n# {chapter}\n{region}\n")
    return "".join(parts)


@contextmanager
def _registries(attack_reg: dict, backbone_reg: dict):
    """The two registries swapped for ``attack_reg`` / ``backbone_reg`` while the block runs."""
    saved = attacks.ATTACKS, range_scores.BACKBONES
    attacks.ATTACKS, range_scores.BACKBONES = attack_reg, backbone_reg
    try:
        yield
    finally:
        attacks.ATTACKS, range_scores.BACKBONES = saved


def _checkout_chapters() -> dict[str, str] | None:
    from mimirlib.paths import project_root
    from mimirlib.runner import list_notebooks

    root = project_root()
    nb_dir = root / "notebooks" if root is not None else None
    if nb_dir is None or not (nb_dir / "ORDER").is_file():
        return None
    return {stem: (nb_dir / f"{stem}.py").read_text(encoding="utf-8") for stem in list_notebooks(nb_dir)}


def load_keys(path: str | os.PathLike | None = None) -> Keys:
    """The instructor's keys: from ``path``, else the file ``$MIMIR_KEYS`` names, else the solution
    regions of the chapters in this project's checkout (what the book's own run checks against).
    Where none is found, :class:`ExerciseCheckFailed` says in one line how to point at them."""
    path = path or os.environ.get(KEYS_ENV)
    if path:
        path = Path(path)
        if not path.is_file():
            raise ExerciseCheckFailed(f"no instructor keys at {path} (${KEYS_ENV}): `make handouts` writes them")
        src, where = path.read_text(encoding="utf-8"), str(path)
    else:
        chapters = _checkout_chapters()
        if chapters is None:
            raise ExerciseCheckFailed(
                f"no instructor keys: only the instructor checks this exercise ({KEYS_ENV}=keys/exercise_keys.py)"
            )
        src, where = keys_source(chapters), "the chapters' solution cells"
    found_attacks: dict = {}
    found_backbones: dict = {}
    try:
        with _registries(found_attacks, found_backbones):
            exec(compile(src, where, "exec"), {"__name__": "mimir_exercise_keys"})
    except Exception as e:  # a key that does not run: one line naming the file, not the key's traceback
        raise ExerciseCheckFailed(f"the instructor's keys ({where}) do not run: {type(e).__name__}: {e}") from None
    return Keys(found_attacks, found_backbones, where)


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
    the instructor's key of that name (:func:`load_keys`). ``options`` must be the chapter's
    (``p.scoring()``: its window and stride), so the signals come from its cache."""
    registry = attacks.ATTACKS
    if key:
        keys = load_keys()
        if attack not in keys.attacks:
            raise ExerciseCheckFailed(f"the instructor's keys ({keys.source}) hold no attack {attack!r}")
        registry = keys.attacks
        if "reference" in registry[attack].needs and reference is None:
            raise ValueError(f"attack {attack!r} needs a reference model")
    elif attack not in attacks.ATTACKS:
        raise ExerciseCheckFailed(f"no attack {attack!r} is registered: run your solution cell first")
    inputs = _inputs(model, texts, reference, options)
    with _registries(registry, range_scores.BACKBONES):
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
    registry = range_scores.BACKBONES
    if key:
        keys = load_keys()
        if name not in keys.backbones:
            raise ExerciseCheckFailed(f"the instructor's keys ({keys.source}) hold no backbone {name!r}")
        registry = keys.backbones
    elif name not in range_scores.BACKBONES:
        raise ExerciseCheckFailed(f"no backbone {name!r} is registered: run your solution cell first")
    with _registries(attacks.ATTACKS, registry):
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
