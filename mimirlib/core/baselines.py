"""Model-free baselines: how well can members be told from non-members without the model?

MIMIR (section 5, temporal shift) and Das et al. ("blind" attacks) show that several MIA
benchmarks can be solved from the text alone, because members and non-members were drawn
from different distributions (e.g. before and after a cut-off date). ``blind_auc`` trains
a bag-of-n-grams classifier on the two sets and reports its cross-validated ROC AUC.

Each text is analysed (split into word and character n-grams) once per call, not once per fold:
:func:`blind_auc` counts every text's n-grams up front and gives each fold the counts of the terms
in its training texts, which is what refitting :func:`blind_classifier` on the fold would count
(same columns, same order, same values), so the scores equal ``cross_val_predict`` with that
pipeline (tests/test_baselines.py). The analysis (sklearn's Python n-gram loops) was ~70% of
the cross-validation's time, and each text was analysed once per fold.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import CountVectorizer, TfidfTransformer, TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import make_pipeline, make_union

# The classifier's two bags of n-grams (word unigrams+bigrams, character 3-5-grams within words),
# each TF-IDF weighted with sublinear tf, and its logistic regression.
_TERMS = (
    {"ngram_range": (1, 2), "token_pattern": r"(?u)\b\w+\b"},
    {"analyzer": "char_wb", "ngram_range": (3, 5)},
)
_TFIDF = {"sublinear_tf": True}


def _regression() -> LogisticRegression:
    return LogisticRegression(C=1.0, max_iter=1000)


def blind_classifier():
    """TF-IDF over word unigrams+bigrams and character 3-5-grams, then logistic regression (one
    sklearn pipeline: what :func:`blind_auc` fits on each fold, with the texts analysed once)."""
    return make_pipeline(make_union(*(TfidfVectorizer(**t, **_TFIDF) for t in _TERMS)), _regression())


def _out_of_fold_scores(texts: list[str], y: np.ndarray, cv) -> np.ndarray:
    """``cross_val_predict(blind_classifier(), texts, y, cv=cv, method="decision_function")``, with
    each text's n-grams counted once: a fold's vocabulary is the terms of its training texts, in
    the sorted order a fit on them gives, so its count matrices equal the pipeline's own."""
    counts = [CountVectorizer(**t).fit_transform(texts) for t in _TERMS]
    scores = np.empty(len(texts))
    for train, test in cv.split(texts, y):
        fit_parts, test_parts = [], []
        for c in counts:
            fit_rows = c[train]
            terms = np.flatnonzero(fit_rows.getnnz(axis=0))
            weights = TfidfTransformer(**_TFIDF)
            fit_parts.append(weights.fit_transform(fit_rows[:, terms]))
            test_parts.append(weights.transform(c[test][:, terms]))
        model = _regression().fit(sp.hstack(fit_parts).tocsr(), y[train])
        scores[test] = model.decision_function(sp.hstack(test_parts).tocsr())
    return scores


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
    scores = _out_of_fold_scores(texts, y, cv)
    return {
        "auc": float(roc_auc_score(y, scores)),
        "scores": np.asarray(scores, dtype=float),
        "n_members": len(members),
        "n_nonmembers": len(nonmembers),
    }


def blind_holdout_test(members: Sequence[str], nonmembers: Sequence[str], *, seed: int = 0) -> dict:
    """Can the blind classifier tell the two sets apart, as a test with a valid p-value? It is fit on a
    random half of each set and scores the other halves; the held-out AUC's one-sided Mann-Whitney
    p-value is exact under IID sets, because the scored texts played no part in the fit (the
    cross-validated AUC of :func:`blind_auc` swings far more than its bootstrap says: 0.30-0.77 for 20 +
    20 IID texts). Returns ``auc``, ``p_value`` and ``n_test`` (held-out texts per set, the smaller)."""
    from scipy.stats import mannwhitneyu

    rng = np.random.default_rng(seed)
    m, n = rng.permutation(len(members)), rng.permutation(len(nonmembers))
    fit_m, test_m = [members[i] for i in m[: len(m) // 2]], [members[i] for i in m[len(m) // 2 :]]
    fit_n, test_n = [nonmembers[i] for i in n[: len(n) // 2]], [nonmembers[i] for i in n[len(n) // 2 :]]
    if min(len(fit_m), len(fit_n), len(test_m), len(test_n)) < 2:
        raise ValueError("blind_holdout_test: needs at least 4 texts in each set")
    model = blind_classifier().fit(fit_m + fit_n, np.r_[np.ones(len(fit_m)), np.zeros(len(fit_n))])
    sm, sn = model.decision_function(test_m), model.decision_function(test_n)
    auc = float(roc_auc_score(np.r_[np.ones(len(sm)), np.zeros(len(sn))], np.r_[sm, sn]))
    p = float(mannwhitneyu(sm, sn, alternative="greater").pvalue)
    return {"auc": auc, "p_value": p, "n_test": min(len(sm), len(sn))}


def evaluate_blind(
    members: Sequence[str], nonmembers: Sequence[str], *, n_splits: int = 5, seed: int = 0, n_resamples: int = 1000
) -> dict:
    """The blind baseline's out-of-fold scores through the same metrics as every attack
    (:func:`mimirlib.core.metrics.evaluate`: AUC with its bootstrap interval, TPR at low FPR), so a
    chapter can put it in the attacks' tables as one more row."""
    from mimirlib.core.metrics import evaluate

    b = blind_auc(members, nonmembers, n_splits=n_splits, seed=seed)
    m, n = b["scores"][: b["n_members"]], b["scores"][b["n_members"] :]
    return evaluate(m, n, n_resamples=n_resamples, seed=seed)
