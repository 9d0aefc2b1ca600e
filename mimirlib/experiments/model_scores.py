"""Per-text scores of lab models or checkpoints on shared benchmarks: AUC tables and paired differences.

The epochs chapter and its SILO-style run (:mod:`mimirlib.experiments.epochs`,
:mod:`mimirlib.experiments.silo`) score several models, or checkpoints of one, on the same texts; a
frame of scores has ``model``, ``domain``, ``pos`` (the text's position in its benchmark, members
first), ``is_member`` and one column per attack. Two models' AUCs are compared text by text
(``metrics.paired_auc_difference``).
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import pandas as pd

from mimirlib.core import metrics
from mimirlib.core.attacks import get_attack
from mimirlib.core.data import Benchmark
from mimirlib.core.models import load_model
from mimirlib.core.scoring import attack_columns, evaluate_scores, member_nonmember, score_benchmark
from mimirlib.core.signals import ScoringOptions
from mimirlib.lab.layout import Lab

REFERENCE_KEY = "ref"  # the reference attack's column ("ref:ref" from scoring, renamed)


def reference_models(lab: Lab, attacks: Sequence[str], options: ScoringOptions) -> dict:
    """The reference models ``attacks`` need, by the name their score column takes: the lab's first
    reference model as :data:`REFERENCE_KEY` (its column ``ref:ref`` is renamed ``ref``); empty if none needs one."""
    if not any("reference" in get_attack(a).needs for a in attacks):
        return {}
    ref_name = lab.config["references"][0]["name"]
    return {REFERENCE_KEY: load_model(str(lab.model_dir(ref_name)), dtype=options.dtype)}


def score_targets(
    lab: Lab,
    targets: Mapping[str, tuple[str, str | None]],
    benches: Mapping[str, Benchmark],
    attacks: Sequence[str],
    *,
    options: ScoringOptions | None = None,
    attack_params: dict | None = None,
) -> pd.DataFrame:
    """Per-text scores, one row per (target, domain, text): columns ``model`` (the target's label in
    ``targets``, which maps it to a lab model and a revision, None for its final weights), ``domain``, ``pos``
    (the text's position in its benchmark, members first), ``is_member`` and one per attack. The reference
    attack uses the lab's first reference model and its column is named ``ref``. ``options``: how every
    model is loaded (its dtype) and scored; ``attack_params`` as for :func:`mimirlib.core.scoring.score_benchmark`.
    Targets are loaded one at a time."""
    options = options or ScoringOptions()
    references = reference_models(lab, attacks, options)
    frames = []
    for label, (model, revision) in targets.items():
        target = load_model(str(lab.model_dir(model)), revision=revision, dtype=options.dtype)
        for domain, bench in benches.items():
            s = score_benchmark(
                bench, target, attacks, references=references, attack_params=attack_params, options=options
            )
            s = s.rename(columns={f"ref:{REFERENCE_KEY}": REFERENCE_KEY})
            s.insert(0, "pos", range(len(s)))
            s.insert(0, "domain", domain)
            s.insert(0, "model", label)
            frames.append(s)
    return pd.concat(frames, ignore_index=True)


def texts_of(scores: pd.DataFrame, model: str, domain: str) -> pd.DataFrame:
    """One target's rows of one domain, in benchmark order."""
    return scores[(scores.model == model) & (scores.domain == domain)].sort_values("pos")


def attacks_in(scores: pd.DataFrame) -> list[str]:
    """The attack columns of a :func:`score_models` frame."""
    return [c for c in attack_columns(scores) if c not in ("model", "domain", "pos")]


def auc_table(
    scores: pd.DataFrame, by: Sequence[str] = ("model",), *, n_bootstrap: int = 1000, seed: int = 0
) -> pd.DataFrame:
    """AUC with its bootstrap interval per group of ``by`` and attack, one row each (texts of the
    group pooled: ``by=("model",)`` pools the domains, as the chapter's figure does)."""
    cols = attacks_in(scores)
    rows = []
    for key, g in scores.groupby(list(by), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        ev = evaluate_scores(g[["is_member"] + cols], n_resamples=n_bootstrap, seed=seed)
        rows.append(ev.assign(**dict(zip(by, key))))
    out = pd.concat(rows, ignore_index=True)
    return out[list(by) + [c for c in out.columns if c not in by]]


def paired_row(
    scores: pd.DataFrame, a: tuple[str, str], b: tuple[str, str], domain: str, n_bootstrap: int, seed: int
) -> dict:
    """AUC(model a, attack a) - AUC(model b, attack b) on one domain's texts, paired: both AUCs, the
    difference and its interval, and the texts it rests on (``a``, ``b``: (model, attack) pairs)."""
    (ma, ca), (mb, cb) = a, b
    ga, gb = texts_of(scores, ma, domain), texts_of(scores, mb, domain)
    if len(ga) != len(gb) or not (ga.pos.to_numpy() == gb.pos.to_numpy()).all():
        raise ValueError(f"{ma} and {mb} were not scored on the same {domain} texts")
    am, an = member_nonmember(ga, ca)
    bm, bn = member_nonmember(gb, cb)
    d = metrics.paired_auc_difference(am, an, bm, bn, n_resamples=n_bootstrap, seed=seed)
    return {
        "domain": domain,
        "auc_a": metrics.auc(am, an),
        "auc_b": metrics.auc(bm, bn),
        "estimate": d.point,
        "lo": d.lo,
        "hi": d.hi,
        "n_members": d.n_members,
        "n_nonmembers": d.n_nonmembers,
    }


def model_effects(
    scores: pd.DataFrame, a: str, b: str, *, spread: pd.DataFrame | None = None, n_bootstrap: int = 1000, seed: int = 0
) -> pd.DataFrame:
    """AUC(model ``a``) - AUC(model ``b``) per (domain, attack), paired over the shared texts.

    ``spread`` (from :func:`seed_spread`) adds ``seed_sd``: the seed-to-seed sd of a *difference*
    of two independently trained models, sqrt(2) x the AUC's seed sd (NaN where unknown)."""
    rows = [
        {"attack": c, **paired_row(scores, (a, c), (b, c), d, n_bootstrap, seed)}
        for d in pd.unique(scores.domain)
        for c in attacks_in(scores)
    ]
    out = pd.DataFrame(rows).assign(a=a, b=b)
    return with_spread(out, spread)


def with_spread(effects: pd.DataFrame, spread: pd.DataFrame | None, factor: float = math.sqrt(2)) -> pd.DataFrame:
    """``effects`` (per domain and attack) with ``seed_sd``: ``factor`` x the AUC's seed sd in ``spread``
    (sqrt(2) for a difference of two AUCs, 2 for a difference of two differences), NaN where unknown."""
    if spread is None or spread.empty:
        return effects.assign(seed_sd=math.nan, n_seeds=1)
    s = spread.assign(seed_sd=spread.auc_seed_sd * factor)[["domain", "attack", "seed_sd", "n_seeds"]]
    return effects.merge(s, on=["domain", "attack"], how="left").fillna({"n_seeds": 1})
