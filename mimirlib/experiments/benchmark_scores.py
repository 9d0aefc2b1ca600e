"""Scoring several benchmarks of one suite, for the chapters that compare them (n-gram overlap, temporal shift).

Both chapters score each benchmark with every target and all of the suite's reference models,
show the first reference's column as ``ref``, and run the blind (model-free) baseline beside the
attacks. :class:`SuiteScorer` is that set-up, made once per run; :func:`blind_scores` and
:func:`blind_record` are the baseline's out-of-fold scores and their AUC record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from mimirlib.core import metrics
from mimirlib.core.baselines import blind_auc
from mimirlib.core.data import Benchmark
from mimirlib.core.scoring import member_nonmember, score_benchmark
from mimirlib.core.signals import ScoringOptions

REF = "ref"  # the first reference model's column (``ref:<name>`` in scoring) is renamed to this
BASELINE = "baseline"  # the blind (model-free) classifier's column and "attack" name


class SuiteScorer:
    """Scores a benchmark with one model of ``suite`` and all of its references (loaded once, when
    the scorer is made), the first reference's column renamed ``ref``."""

    def __init__(
        self,
        suite,
        attacks: Sequence[str],
        *,
        attack_params: Mapping[str, dict] | None = None,
        options: ScoringOptions | None = None,
    ):
        self.suite, self.attacks = suite, attacks
        self.attack_params, self.options = attack_params, options
        self.references = {label: suite.model(r) for label, r in suite.references.items()}
        self.main_ref = f"ref:{next(iter(self.references))}" if self.references else None

    def __call__(self, bench: Benchmark, model: str) -> pd.DataFrame:
        """One row per text of ``bench`` (members first): ``is_member`` and one column per attack."""
        s = score_benchmark(
            bench,
            self.suite.model(model),
            self.attacks,
            references=self.references,
            attack_params=self.attack_params,
            options=self.options,
        )
        return s.rename(columns={self.main_ref: REF}) if self.main_ref else s


def blind_scores(bench: Benchmark, folds: int, seed: int) -> pd.DataFrame:
    """The blind baseline's out-of-fold scores of ``bench`` (members first): ``is_member`` and ``baseline``."""
    r = blind_auc(bench.members, bench.nonmembers, n_splits=folds, seed=seed)
    return pd.DataFrame({"is_member": bench.labels, BASELINE: r["scores"]})


def blind_record(scores: pd.DataFrame, n_bootstrap: int, seed: int) -> dict:
    """:func:`mimirlib.core.metrics.evaluate` of the baseline's scores (AUC with its bootstrap interval)."""
    m, n = member_nonmember(scores, BASELINE)
    return metrics.evaluate(m, n, n_resamples=n_bootstrap, seed=seed)
