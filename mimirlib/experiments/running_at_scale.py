"""The "Running at scale" page: what a profile's chapters cost (forward passes, FLOPs, GPU-hours,
counted by :mod:`mimirlib.experiments.costs` from the profile's own parameters) and what the training
corpus's Bloom filter costs per n-gram. Nothing is scored and no model is loaded.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from mimirlib.experiments import costs
from mimirlib.core import bloom
from mimirlib.experiments.params import Params
from mimirlib.profiles import load_profile


@dataclass
class ScaleRun:
    """The cost model of ``params.cost_profile``: its work items, the per-chapter table (each
    chapter on its own) and the per-model table (all chapters with the shared signal cache, and a
    ``total`` row), at ``params.tokens_per_text`` tokens a text and ``params.utilisation``."""

    params: Params
    work: pd.DataFrame
    chapters: pd.DataFrame
    models: pd.DataFrame

    def total(self, utilisation: float | None = None) -> pd.Series:
        """The ``total`` row of the per-model table (at another ``utilisation`` when given)."""
        p = self.params
        models = self.models if utilisation is None else costs.model_table(self.work, p.tokens_per_text, utilisation)
        return models.set_index("model").loc["total"]


def run(p: Params) -> ScaleRun:
    """Count the work of every chapter of ``p.cost_profile`` and cost it (:mod:`mimirlib.experiments.costs`)."""
    work = costs.profile_work(load_profile(p.cost_profile))
    chapters = costs.chapter_table(work, p.tokens_per_text, p.utilisation)
    models = costs.model_table(work, p.tokens_per_text, p.utilisation)
    return ScaleRun(p, work, chapters, models)


def prose_numbers(run: ScaleRun) -> dict:
    """What the page's prose states, by glue name, formatted as it is read: the whole profile's
    passes, FLOPs and GPU-hours, the assumptions they rest on, and the Bloom filter's bytes per
    n-gram (and for 100 billion n-grams) at ``bloom_fpr``."""
    p, total = run.params, run.total()
    per_ngram = bloom.bloom_bytes_per_ngram(p.bloom_fpr)
    return {
        "cost_passes": f"{int(total['forward passes']):,}",
        "cost_flops": f"{total['FLOPs']:.2e}",
        "cost_a100": f"{total['GPU-hours, A100 (bf16)']:,.0f}",
        "cost_h100": f"{total['GPU-hours, H100 SXM (bf16)']:,.0f}",
        "cost_tokens": p.tokens_per_text,
        "cost_util": f"{p.utilisation:.0%}",
        "bloom_bytes": f"{per_ngram:.2f}",
        "bloom_fpr": f"{p.bloom_fpr:.0%}",
        "bloom_100g": f"{per_ngram * 100e9 / 1e9:,.0f}",
    }


def exercise_numbers(run: ScaleRun) -> dict:
    """The exercises' solutions: the A100-hours at half the utilisation, and the Bloom filter's
    bytes per n-gram at a tenth of the false-positive rate."""
    p = run.params
    return {
        "ex_a100_half": f"{run.total(p.utilisation / 2)['GPU-hours, A100 (bf16)']:,.0f}",
        "ex_bloom_bytes_tenth": f"{bloom.bloom_bytes_per_ngram(p.bloom_fpr / 10):.2f}",
    }
