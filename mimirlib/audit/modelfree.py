"""The audit's model-free checks: the non-members' n-gram overlap with the members and with a
training corpus, and the blind baseline (can the two sets be told apart without the model?)."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from mimirlib.core.data import error_line
from mimirlib.audit.inputs import AuditError

OVERLAP_NS = (7, 13)
# MIMIR's decontamination keeps non-members whose 13-gram overlap with training data is <= 80%.
OVERLAP_THRESHOLD = 0.8


def overlap_summary(
    members: Sequence[str], nonmembers: Sequence[str], ns: Sequence[int] = OVERLAP_NS
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Word n-gram overlap of each non-member with the members: ``(summary per n, per text)``.

    Per text: :func:`mimirlib.core.ngrams.overlap_table` (exact mode; columns ``ngram_<n>``). A
    non-member shorter than n words has no n-grams; it counts as overlap 0 and in ``n_shorter``.
    """
    from mimirlib.core import ngrams

    per_text = ngrams.overlap_table(list(nonmembers), list(members), ns=tuple(ns), mode="exact")
    rows = []
    for n in ns:
        ov = per_text[f"ngram_{n}"].to_numpy(dtype=float)
        rows.append(
            {
                "n": int(n),
                "mean": float(ov.mean()),
                "median": float(np.median(ov)),
                "max": float(ov.max()),
                "frac_above_80": float((ov > OVERLAP_THRESHOLD).mean()),
                "n_nonmembers": int(ov.size),
                "n_shorter": int(sum(len(ngrams.words(t)) < n for t in nonmembers)),
            }
        )
    return pd.DataFrame(rows), per_text


def corpus_check(nonmembers, training_corpus, files, corpus_index: str, column: str, runner=None):
    """``(summary, per non-member frame)`` of :func:`mimirlib.core.ngrams.corpus_overlap` at MIMIR's
    decontamination n, or ``(None, None)`` without a corpus; a bad file is an AuditError. ``runner``:
    the audit's Ray engine (the index is built on its cluster), or None (built here)."""
    from mimirlib.core.engines import EngineError
    from mimirlib.core.ngrams import DECONTAMINATION_N, corpus_overlap

    if not files:
        return None, None
    try:
        res = corpus_overlap(
            list(nonmembers), files, n=DECONTAMINATION_N, mode=corpus_index, column=column, engine=runner
        )
    except (ValueError, OSError) as e:  # BenchmarkError is a ValueError: names file and line
        raise AuditError(error_line(e)) from None
    except EngineError as e:
        raise AuditError(f"engine: {error_line(e)}") from None
    per_text = pd.DataFrame(
        {"nonmember": range(len(res.overlap)), f"ngram_{res.n}": res.overlap, "fails_decontamination": res.failing}
    )
    return {"corpus": str(training_corpus), **res.summary()}, per_text


def blind_baseline(members: Sequence[str], nonmembers: Sequence[str], *, seed: int = 0) -> dict:
    """``mimirlib.core.baselines.blind_auc`` with at most 5 folds (fewer for tiny sets); a failure is
    returned as ``{"error": why}`` so that it shows in the report instead of hiding it."""
    n_splits = min(5, len(members), len(nonmembers))
    if n_splits < 2:
        return {"error": "needs at least 2 members and 2 non-members for cross-validation"}
    from mimirlib.core.baselines import blind_auc

    try:
        return dict(blind_auc(list(members), list(nonmembers), n_splits=n_splits, seed=seed))
    except ValueError as e:
        return {"error": error_line(e)}
