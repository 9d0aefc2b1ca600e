"""Running an audit: :func:`run_audit`, in named steps (cheap checks, the training-corpus check,
the models, the scores and metrics, the model-free checks), returning an :class:`AuditReport`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import pandas as pd

from mimirlib.core.data import Benchmark, error_line
from mimirlib.core.hub import is_local_path
from mimirlib.audit.checks import (
    check_attacks,
    check_corpus,
    check_model_name,
    check_recall_prefix,
    check_scoring,
    check_texts,
    connect_engine,
)
from mimirlib.audit.inputs import AuditError
from mimirlib.audit.modelfree import blind_baseline, corpus_check, overlap_summary
from mimirlib.audit.report import AuditReport

if TYPE_CHECKING:
    from mimirlib.core.signals import ScoringOptions


def load_checked(name, role: str, revision, dtype, weights: bool = True):
    """A model by name (or a loaded one), a load failure as one :class:`AuditError` line naming ``role``;
    ``weights=False``: only its tokenizer, config and identity now (the Ray engine's workers read the weights)."""
    from mimirlib.core.models import LoadedModel, ModelLoadError, load_model

    if isinstance(name, LoadedModel):
        return name
    s = str(Path(str(name)).expanduser()) if is_local_path(str(name)) else str(name)
    try:
        return load_model(s, revision, dtype=dtype, weights=weights)
    except ModelLoadError as e:
        msg = error_line(e)
        raise AuditError(msg if role == "model" else f"{role}: {msg}") from None
    except OSError as e:
        raise AuditError(f"{role} {s!r} could not be loaded: {error_line(e)}") from None


def model_label(name) -> str:
    from mimirlib.core.models import LoadedModel

    s = name.name if isinstance(name, LoadedModel) else str(name)
    return Path(s).name if is_local_path(s) else s


def _score(
    bench: Benchmark, attacks, target, refs: dict, options: ScoringOptions, runner, attack_params, extra_inputs
) -> pd.DataFrame:
    """One column per attack; the attacks after the paper (``extra_inputs``: their recall prefix,
    frequency corpus and gradient parameters) in their own passes, cached alike."""
    from mimirlib.core.attacks import needs_extra
    from mimirlib.core.engines import EngineError
    from mimirlib.core.scoring import score_benchmark
    from mimirlib.core.scoring_extra import score_extra

    try:
        scores = score_benchmark(
            bench,
            target,
            [a for a in attacks if not needs_extra(a)],
            references=refs,
            attack_params=attack_params,
            options=options.replace(engine=runner or "local", ray_address=None),  # connected by the checks
        )
    except ValueError as e:  # e.g. a text with fewer than 2 tokens, named in the message
        raise AuditError(f"scoring: {error_line(e)}") from None
    except EngineError as e:  # a Ray worker lost for good: what finished is in the cache
        raise AuditError(f"engine: {error_line(e)}") from None
    extra = [a for a in attacks if needs_extra(a)]
    if not extra:
        return scores
    recall_prefix, frequency_corpus, grad_params = extra_inputs
    try:
        more = score_extra(
            bench.texts(),
            target,
            extra,
            prefix_texts=recall_prefix,
            frequency_corpus=frequency_corpus,
            grad_params=grad_params,
            attack_params=attack_params,
            options=options.replace(engine="local", ray_address=None),  # these passes run in this process
            desc="audit",
        )
    except ValueError as e:  # e.g. grad_params matching no parameter, named in the message
        raise AuditError(f"scoring: {error_line(e)}") from None
    return pd.concat([scores, more.scores], axis=1)


def _settings(target, attacks, options: ScoringOptions, runner, n_bootstrap, seed, attack_params, sources) -> dict:
    """The report's record of how the audit ran (window and stride as resolved for ``target``)."""
    from mimirlib.core.signals import resolve_window

    return {
        "attacks": list(attacks),
        **dict(zip(("window", "stride"), resolve_window(target, options.window, options.stride))),
        "batch_size": int(options.batch_size),
        "n_bootstrap": int(n_bootstrap),
        "seed": int(seed),
        "dtype": options.dtype,
        "attack_params": dict(attack_params or {}),
        "engine": "local" if runner is None else f"ray ({runner.target})",
        **{k: str(v) for k, v in (sources or {}).items() if v},
    }


def _load_models(model, reference_model, revision, dtype, weights):
    """The target and, when given, the reference model as ``{label: model}``; load errors name which."""
    target = load_checked(model, "model", revision, dtype, weights)
    if reference_model is None:
        return target, {}
    return target, {
        model_label(reference_model): load_checked(reference_model, "reference model", None, dtype, weights)
    }


def run_audit(
    model,
    members: Sequence[str],
    nonmembers: Sequence[str],
    *,
    reference_model=None,
    attacks: Sequence[str] | str | None = None,
    revision: str | None = None,
    options: ScoringOptions | None = None,
    n_bootstrap: int = 1000,
    seed: int = 0,
    attack_params: dict | None = None,
    sources: dict | None = None,
    recall_prefix: Sequence[str] | None = None,
    frequency_corpus: Sequence[str] | None = None,
    grad_params: str | None = None,
    training_corpus: str | Path | None = None,
    corpus_index: str = "bloom",
    corpus_column: str = "text",
) -> AuditReport:
    """Audit ``model`` (hub name, local folder, or a loaded :class:`mimirlib.core.models.LoadedModel`)
    on ``members`` / ``nonmembers`` (lists of texts).

    ``attacks`` defaults to loss, zlib, min_k, min_k_pp, plus ``ref`` when ``reference_model``
    is given (its column is ``ref:<model name>``). ``revision`` applies to the target only.
    ``options`` (:class:`mimirlib.core.signals.ScoringOptions`; defaults without it): the window,
    stride, batch size and dtype, where the forward passes run (``engine``/``ray_address``, see
    :mod:`mimirlib.core.engines`; a Ray cluster is joined, or started, before any model is loaded,
    so an unreachable one fails first), and the signal ``cache`` (a re-run does no forward pass;
    ``None`` writes nothing). ``sources`` (e.g. the input file names) is recorded in the report. The
    attacks after the paper are opt-in: ``recall`` needs ``recall_prefix`` (known non-member texts,
    none of them among the audited texts), ``dc_pdd`` a ``frequency_corpus``; ``grad_norm`` takes the
    parameters to differentiate in ``grad_params`` (comma-separated globs; all weights for None).
    ``training_corpus`` (a file, folder or glob of .txt/.jsonl/.parquet files, ``corpus_column``
    holding the text) is indexed (``corpus_index``: bloom or exact) before any model is loaded, and
    each non-member's 13-gram overlap with it is reported first (MIMIR's decontamination rule).
    Inputs, attacks and dtype are validated before any model is loaded; every problem raises
    :class:`AuditError` naming its culprit.
    """
    from mimirlib.core.attacks import needs_extra
    from mimirlib.core.models import describe
    from mimirlib.core.scoring import evaluate_scores
    from mimirlib.core.signals import ScoringOptions

    options = options if options is not None else ScoringOptions()
    # 1. cheap checks, nothing loaded yet (in the order their errors are reported)
    bench = check_texts(members, nonmembers)
    attacks = check_attacks(attacks, reference_model is not None, bool(recall_prefix), bool(frequency_corpus))
    check_recall_prefix(recall_prefix, attacks, bench)
    check_scoring(options, n_bootstrap)
    check_model_name(model, "model")
    corpus_files = check_corpus(training_corpus, corpus_index)
    use_ref = reference_model is not None and any(a == "ref" for a in attacks)
    if use_ref:
        check_model_name(reference_model, "reference model")
    runner = connect_engine(options)
    # 2. the training-corpus check (model-free), before any model
    corpus, corpus_df = corpus_check(
        bench.nonmembers, training_corpus, corpus_files, corpus_index, corpus_column, runner
    )
    # 3. models (with a Ray engine and no pass of the driver's own, no weights on the driver)
    weights = runner is None or any(needs_extra(a) for a in attacks)
    target, refs = _load_models(model, reference_model if use_ref else None, revision, options.dtype, weights)
    # 4. scores and metrics
    extra_inputs = (recall_prefix, frequency_corpus, grad_params)
    scores = _score(bench, attacks, target, refs, options, runner, attack_params, extra_inputs)
    metrics_df = evaluate_scores(scores, n_resamples=int(n_bootstrap), seed=seed)
    # 5. model-free checks
    overlap, per_text = overlap_summary(bench.members, bench.nonmembers)
    blind = blind_baseline(bench.members, bench.nonmembers, seed=seed)
    return AuditReport(
        metrics=metrics_df,
        scores=scores,
        overlap=overlap,
        blind=blind,
        model=describe(target),
        reference=describe(next(iter(refs.values()))) if refs else None,
        settings=_settings(target, attacks, options, runner, n_bootstrap, seed, attack_params, sources),
        nonmember_overlap=per_text,
        corpus=corpus,
        corpus_overlap=corpus_df,
    )
