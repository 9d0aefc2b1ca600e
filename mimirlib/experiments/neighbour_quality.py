"""Are the masked-LM neighbours semantic? Each neighbour against a random edit of exactly its size.

A neighbour that replaces k whole words of its member (word Hamming distance k,
:func:`mimirlib.samplers.perturb.word_hamming`) is paired with a *control*: the same member with k
random whole words replaced by random words (:func:`mimirlib.samplers.perturb.replace_random_words`),
the words drawn from the member texts of the neighbour's domain in proportion to their frequency
there (:func:`mimirlib.samplers.perturb.word_pool`), so the control is as large as the neighbour and
speaks the domain's words without the masked LM's choice. Both are embedded (MiniLM) and compared
by :func:`mimirlib.experiments.modified_members.neighbour_cosines`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mimirlib.samplers import perturb

__all__ = ["CONTROL_TEXT", "CONTROL_COSINE", "size_matched_controls", "add_control_cosines"]

CONTROL_TEXT = "control"  # the size-matched random-word edit of a neighbour's member
CONTROL_COSINE = "control cosine"  # its MiniLM cosine to the member


def size_matched_controls(originals, variants, pools, seed: int = 0) -> list[str]:
    """For each (original, variant) pair, ``original`` with as many whole words replaced as
    ``variant`` differs from it by (word Hamming distance; at most the original's replaceable
    words) by words drawn from ``pools`` (one word pool per pair, :func:`perturb.word_pool`).
    One generator seeded with ``seed`` draws every control, in order."""
    rng = np.random.default_rng([seed, 0x5EED])
    out = []
    for original, variant, pool in zip(originals, variants, pools, strict=True):
        k = min(perturb.word_hamming(original, variant), len(perturb.word_pool([original])))
        out.append(perturb.replace_random_words(original, k, pool, rng))
    return out


def add_control_cosines(mods: pd.DataFrame, original: pd.DataFrame, kind: str, seed: int = 0) -> pd.DataFrame:
    """Add :data:`CONTROL_TEXT` and :data:`CONTROL_COSINE` to the rows of ``mods`` of ``kind`` that
    have a ``cosine`` (in place): each row's size-matched random-word control, drawn from the
    members of its domain in ``original`` (the run's scored benchmark: ``domain``, ``is_member``,
    ``text``), and the control's MiniLM cosine to the row's ``original``."""
    mods[CONTROL_TEXT] = None
    mods[CONTROL_COSINE] = np.nan
    if "cosine" not in mods.columns:
        return mods
    rows = mods[(mods.kind == kind) & mods.cosine.notna()]
    if not len(rows):
        return mods
    members = original[original.is_member == 1]
    pools = {d: perturb.word_pool(list(members.text[members.domain == d])) for d in set(rows.domain)}
    controls = size_matched_controls(list(rows.original), list(rows.text), [pools[d] for d in rows.domain], seed)
    from mimirlib.samplers import embeddings

    mods.loc[rows.index, CONTROL_TEXT] = controls
    mods.loc[rows.index, CONTROL_COSINE] = embeddings.cosine_to_original(list(rows.original), controls)
    return mods
