"""Model-free baselines: how well can members be told from non-members without the model?

MIMIR (section 5, temporal shift) and Das et al. ("blind" attacks) show that several MIA
benchmarks can be solved from the text alone, because members and non-members were drawn
from different distributions (e.g. before and after a cut-off date). ``blind_auc`` trains
a bag-of-n-grams classifier on the two sets and reports its cross-validated ROC AUC.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.pipeline import make_pipeline, make_union


def blind_classifier():
    """TF-IDF over word unigrams+bigrams and character 3-5-grams, then logistic regression."""
    return make_pipeline(
        make_union(
            TfidfVectorizer(ngram_range=(1, 2), token_pattern=r"(?u)\b\w+\b", sublinear_tf=True),
            TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), sublinear_tf=True),
        ),
        LogisticRegression(C=1.0, max_iter=1000),
    )


def blind_auc(members: Sequence[str], nonmembers: Sequence[str], *, n_splits: int = 5, seed: int = 0) -> dict:
    """Cross-validated ROC AUC of a text classifier that never sees the target model.

    Each text is scored by a classifier trained on the other folds (StratifiedKFold,
    shuffled with ``seed``); the AUC is computed once over all out-of-fold scores. When this
    AUC matches or beats a membership inference attack on the same benchmark, the benchmark
    measures distribution shift between members and non-members, not membership.

    Returns ``auc``, ``scores`` (out-of-fold decision values, members first, higher = more
    member-like), ``n_members`` and ``n_nonmembers``.
    """
    members, nonmembers = list(members), list(nonmembers)
    if n_splits < 2:
        raise ValueError(f"blind_auc needs n_splits >= 2, got {n_splits}")
    for name, texts in (("members", members), ("nonmembers", nonmembers)):
        if len(texts) < n_splits:
            raise ValueError(
                f"blind_auc: {name} has {len(texts)} texts, fewer than n_splits={n_splits}"
                + (" (empty)" if not texts else "")
            )
    texts = members + nonmembers
    y = np.r_[np.ones(len(members), dtype=int), np.zeros(len(nonmembers), dtype=int)]
    cv = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=seed)
    scores = cross_val_predict(blind_classifier(), texts, y, cv=cv, method="decision_function")
    return {
        "auc": float(roc_auc_score(y, scores)),
        "scores": np.asarray(scores, dtype=float),
        "n_members": len(members),
        "n_nonmembers": len(nonmembers),
    }


def evaluate_blind(
    members: Sequence[str], nonmembers: Sequence[str], *, n_splits: int = 5, seed: int = 0, n_resamples: int = 1000
) -> dict:
    """The blind baseline's out-of-fold scores through the same metrics as every attack
    (:func:`mimirlib.metrics.evaluate`: AUC with its bootstrap interval, TPR at low FPR), so a
    chapter can put it in the attacks' tables as one more row."""
    from .metrics import evaluate

    b = blind_auc(members, nonmembers, n_splits=n_splits, seed=seed)
    m, n = b["scores"][: b["n_members"]], b["scores"][b["n_members"] :]
    return evaluate(m, n, n_resamples=n_resamples, seed=seed)
