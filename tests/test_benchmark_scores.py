"""The scoring set-up the n-gram overlap and temporal shift chapters share: references loaded once,
the first reference's column shown as ``ref``, and the blind baseline's scores and record."""

import numpy as np
import pandas as pd
import pytest

from mimirlib.core import metrics
from mimirlib.core.data import Benchmark
from mimirlib.core.signals import ScoringOptions
from mimirlib.experiments import benchmark_scores as bs


class FakeSuite:
    references = {"ref-a": "path/a", "ref-b": "path/b"}

    def __init__(self):
        self.loaded = []

    def model(self, name):
        self.loaded.append(name)
        return f"model:{name}"


def test_scorer_loads_the_references_once_and_renames_the_first(monkeypatch):
    calls = []

    def fake_score_benchmark(bench, target, attacks, *, references, attack_params, options):
        calls.append((target, references, attack_params, options))
        return pd.DataFrame({"is_member": [1, 0], "loss": [1.0, 0.0], "ref:ref-a": [2.0, 0.0], "ref:ref-b": [3.0, 0.0]})

    monkeypatch.setattr(bs, "score_benchmark", fake_score_benchmark)
    suite, options = FakeSuite(), ScoringOptions(window=64)
    scorer = bs.SuiteScorer(suite, ["loss", "ref"], attack_params={"min_k": {"k": 0.1}}, options=options)
    assert suite.loaded == ["path/a", "path/b"]  # references first, when the scorer is made
    s = scorer(Benchmark("b", ("m",), ("n",)), "target")
    assert list(s.columns) == ["is_member", "loss", bs.REF, "ref:ref-b"]
    target, refs, params, opts = calls[0]
    assert target == "model:target" and list(refs) == ["ref-a", "ref-b"]
    assert params == {"min_k": {"k": 0.1}} and opts is options


def test_blind_scores_and_record_match_blind_auc_and_evaluate():
    rng = np.random.default_rng(0)
    members = tuple(f"alpha beta {w}" for w in rng.integers(0, 50, 12))
    nonmembers = tuple(f"gamma delta {w}" for w in rng.integers(0, 50, 12))
    frame = bs.blind_scores(Benchmark("b", members, nonmembers), folds=3, seed=0)
    assert list(frame.columns) == ["is_member", bs.BASELINE] and frame.is_member.tolist() == [1] * 12 + [0] * 12
    s = frame[bs.BASELINE].to_numpy()
    rec = bs.blind_record(frame, n_bootstrap=20, seed=0)
    assert rec == metrics.evaluate(s[:12], s[12:], n_resamples=20, seed=0)
    assert rec["auc"] == pytest.approx(1.0)
