"""Scoring a benchmark: signals from the cache (or one forward pass), then every attack.

This is the one place that joins :mod:`signals` (what models say) with :mod:`attacks` (how a
score is made). Notebooks call :func:`score_benchmark` and :func:`evaluate_scores`.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from mimirlib.core import metrics
from mimirlib.core.attacks import AttackInputs, get_attack, score
from mimirlib.core.data import Benchmark
from mimirlib.core.signals import ScoringOptions, compute_signals


def score_benchmark(
    bench: Benchmark,
    target,
    attacks: Sequence[str],
    *,
    references: Mapping[str, object] | None = None,
    attack_params: Mapping[str, dict] | None = None,
    options: ScoringOptions | None = None,
) -> pd.DataFrame:
    """One row per text (members first), one column per attack; reference attacks get one
    column per reference model, named ``ref:<name>``. Higher = more likely member.

    ``target`` and each reference are :class:`mimirlib.core.models.LoadedModel`. Attacks whose inputs
    are missing (no reference given, no neighbours in the benchmark) raise, naming the attack.
    ``options``: window, stride, batch size, engine and cache of every pass (:class:`ScoringOptions`).
    """
    attack_params = dict(attack_params or {})
    references = dict(references or {})
    for name in attacks:
        a = get_attack(name)
        if "reference" in a.needs and not references:
            raise ValueError(f"attack {name!r} needs at least one reference model")
        if "neighbors" in a.needs and not bench.has_neighbors:
            raise ValueError(f"attack {name!r} needs neighbours, and benchmark {bench.name!r} has none")
    texts = bench.texts()
    kw = (options or ScoringOptions()).signal_kwargs()
    tgt = compute_signals(target, texts, desc=f"{bench.name} target", **kw)
    neigh = None
    if any("neighbors" in get_attack(a).needs for a in attacks):
        rows = list(bench.member_neighbors) + list(bench.nonmember_neighbors)
        flat = [t for row in rows for t in row]
        flat_sigs = compute_signals(target, flat, desc=f"{bench.name} neighbours", **kw)
        neigh, i = [], 0
        for row in rows:
            neigh.append(flat_sigs[i : i + len(row)])
            i += len(row)
    base = [AttackInputs(t, s, None, neigh[j] if neigh else None) for j, (t, s) in enumerate(zip(texts, tgt))]
    out = _attack_columns(base, attacks, references, attack_params, desc=bench.name, **kw)
    out.insert(0, "is_member", bench.labels)
    return out


def score_texts(
    texts: Sequence[str],
    target,
    attacks: Sequence[str],
    *,
    references: Mapping[str, object] | None = None,
    attack_params: Mapping[str, dict] | None = None,
    options: ScoringOptions | None = None,
    desc: str = "texts",
) -> pd.DataFrame:
    """Scores of unlabelled texts (modified members, range samples): one row per text, one column
    per attack (``ref:<name>`` per reference), as :func:`score_benchmark` without the labels.
    Neighbourhood-style attacks are not available here (they need a benchmark's neighbours)."""
    for name in attacks:
        a = get_attack(name)
        if "neighbors" in a.needs:
            raise ValueError(f"attack {name!r} needs neighbours; score_texts takes plain texts")
        if "reference" in a.needs and not references:
            raise ValueError(f"attack {name!r} needs at least one reference model")
    kw = (options or ScoringOptions()).signal_kwargs()
    tgt = compute_signals(target, list(texts), desc=f"{desc} target", **kw)
    base = [AttackInputs(t, s) for t, s in zip(texts, tgt)]
    return _attack_columns(base, attacks, dict(references or {}), dict(attack_params or {}), desc=desc, **kw)


def score_features(
    texts: Sequence[str],
    target,
    features: Mapping[str, tuple[str, Mapping]],
    *,
    reference=None,
    options: ScoringOptions | None = None,
    desc: str = "texts",
) -> pd.DataFrame:
    """One column per named feature, ``name -> (attack, params)``: several settings of one attack side
    by side (dataset inference's feature vector), each model's signals fetched once. ``reference``:
    the one reference model of the features that need one (a missing one raises, naming the feature)."""
    needing = [n for n, (a, _) in features.items() if "reference" in get_attack(a).needs]
    if needing and reference is None:
        raise ValueError(f"feature(s) {needing} need a reference model, and none was given")
    kw = (options or ScoringOptions()).signal_kwargs()
    texts = list(texts)
    tgt = compute_signals(target, texts, desc=f"{desc} target", **kw)
    ref = compute_signals(reference, texts, desc=f"{desc} ref", **kw) if needing else [None] * len(texts)
    inputs = [AttackInputs(t, s, r) for t, s, r in zip(texts, tgt, ref)]
    return pd.DataFrame({name: score(a, inputs, **dict(params)) for name, (a, params) in features.items()})


def _attack_columns(
    base: list[AttackInputs], attacks, references: Mapping, attack_params: Mapping, *, desc: str, **kw
) -> pd.DataFrame:
    texts = [x.text for x in base]
    out = pd.DataFrame(index=range(len(base)))
    for name in attacks:
        if "reference" in get_attack(name).needs:
            for ref_name, ref_model in references.items():
                ref_sigs = compute_signals(ref_model, texts, desc=f"{desc} ref {ref_name}", **kw)
                inputs = [AttackInputs(x.text, x.target, r, x.neighbors) for x, r in zip(base, ref_sigs)]
                out[f"ref:{ref_name}"] = score(name, inputs, **attack_params.get(name, {}))
        else:
            out[name] = score(name, base, **attack_params.get(name, {}))
    return out


def evaluate_scores(
    scores: pd.DataFrame, *, n_resamples: int = 1000, seed: int = 0, fpr_budgets: Sequence[float] = (0.01, 0.001)
) -> pd.DataFrame:
    """One row per attack column of ``scores``: AUC with bootstrap interval, TPR at low FPR."""
    labels = scores["is_member"].to_numpy().astype(bool)
    rows = []
    for col in scores.columns:
        if col == "is_member":
            continue
        s = scores[col].to_numpy()
        rec = metrics.evaluate(s[labels], s[~labels], n_resamples=n_resamples, seed=seed, fpr_budgets=fpr_budgets)
        rows.append({"attack": col, **rec})
    return pd.DataFrame(rows)


def attack_columns(scores: pd.DataFrame) -> list[str]:
    return [c for c in scores.columns if c != "is_member"]


def member_nonmember(scores: pd.DataFrame, column: str) -> tuple[np.ndarray, np.ndarray]:
    labels = scores["is_member"].to_numpy().astype(bool)
    s = scores[column].to_numpy()
    return s[labels], s[~labels]
