"""The audit's cheap checks, run before any model is loaded: texts, attacks, the recall prefix,
dtype and scoring options, model names, the training corpus's files and the engine; each failure
is one :class:`AuditError` line naming its culprit."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np

from mimirlib.core.data import Benchmark, BenchmarkError, error_line
from mimirlib.core.hub import is_local_path
from mimirlib.audit.inputs import AuditError

if TYPE_CHECKING:
    from mimirlib.core.signals import ScoringOptions

DEFAULT_ATTACKS = ("loss", "zlib", "min_k", "min_k_pp")


def check_texts(members, nonmembers) -> Benchmark:
    """The two lists of texts as a :class:`Benchmark` named ``audit``: neither empty, no empty text."""
    for what, texts in (("members", members), ("nonmembers", nonmembers)):
        if isinstance(texts, (str, bytes)) or not isinstance(texts, Sequence) and not hasattr(texts, "__iter__"):
            raise AuditError(f"{what}: expected a list of texts, got {type(texts).__name__}")
    members, nonmembers = list(members), list(nonmembers)
    if not members:
        raise AuditError("members: no texts (empty set)")
    if not nonmembers:
        raise AuditError("nonmembers: no texts (empty set)")
    try:
        return Benchmark("audit", tuple(members), tuple(nonmembers))
    except BenchmarkError as e:
        raise AuditError(str(e).replace("audit: ", "", 1)) from None


def check_attacks(attacks, has_reference: bool, has_prefix: bool = False, has_corpus: bool = False) -> tuple[str, ...]:
    """The attacks to run (a list or comma-separated; None for the defaults), each registered and
    with its inputs at hand; duplicates dropped, order kept."""
    from mimirlib.core.attacks import ATTACKS

    if attacks is None:
        return DEFAULT_ATTACKS + (("ref",) if has_reference else ())
    if isinstance(attacks, str):
        attacks = [a for a in attacks.split(",")]
    attacks = tuple(dict.fromkeys(a.strip() for a in attacks if a.strip()))
    if not attacks:
        raise AuditError("attacks: none given")
    for a in attacks:
        if a not in ATTACKS:
            raise AuditError(f"attack {a!r}: unknown; known: {sorted(ATTACKS)}")
        needs = ATTACKS[a].needs
        if "reference" in needs and not has_reference:
            raise AuditError(f"attack {a!r} needs a reference model (--reference-model)")
        if "neighbors" in needs:
            raise AuditError(f"attack {a!r} needs neighbours, which an audit does not generate")
        if "prefixed" in needs and not has_prefix:
            raise AuditError(f"attack {a!r} needs prefix texts known to be non-members (--recall-prefix FILE)")
        if "token_freq" in needs and not has_corpus:
            raise AuditError(f"attack {a!r} needs a corpus to count token frequencies in (--frequency-corpus FILE)")
    return attacks


def audit_attacks() -> str:
    """The attacks an audit can run, for ``--help``: every registered one but those needing neighbours."""
    from mimirlib.core.attacks import ATTACKS

    return ", ".join(f"{n} ({a.label})" for n, a in ATTACKS.items() if "neighbors" not in a.needs)


def check_recall_prefix(recall_prefix, attacks: Sequence[str], bench: Benchmark) -> None:
    """With the recall attack, none of its prefix texts may be one of the audited texts."""
    if recall_prefix and "recall" in attacks:
        from mimirlib.core.extra_signals import check_disjoint

        try:
            check_disjoint(list(recall_prefix), bench.texts())
        except ValueError as e:
            raise AuditError(error_line(e)) from None


def check_scoring(options: ScoringOptions, n_bootstrap) -> None:
    """The dtype, the bootstrap's resamples, and the window, stride and batch size of ``options``."""
    from mimirlib.core.models import ModelLoadError, pick_dtype

    try:
        pick_dtype(options.dtype, __import__("torch").device("cpu"))
    except ModelLoadError as e:
        raise AuditError(f"dtype: {e}") from None
    if isinstance(n_bootstrap, bool) or not isinstance(n_bootstrap, (int, np.integer)) or n_bootstrap < 1:
        raise AuditError(f"n_bootstrap: expected a positive integer, got {n_bootstrap!r}")
    window, stride = options.window, options.stride
    for what, v, least in (("window", window, 2), ("stride", stride, 1), ("batch_size", options.batch_size, 1)):
        if v is None and what != "batch_size":
            continue  # the model's trained context, and half of it
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < least:
            raise AuditError(f"{what}: expected an integer >= {least}, got {v!r}")
    if window is not None and stride is not None and stride >= window:
        raise AuditError(f"stride: must be smaller than the window ({window}), got {stride}")


def check_model_name(name, role: str) -> None:
    """A loaded model, a hub name, or a local folder that exists (not a file)."""
    from mimirlib.core.models import LoadedModel

    if isinstance(name, LoadedModel):
        return
    if not isinstance(name, (str, Path)) or not str(name).strip():
        raise AuditError(f"{role} {name!r}: expected a hub name or a local folder")
    s = str(name)
    if is_local_path(s):
        p = Path(s).expanduser()
        if not p.exists():
            raise AuditError(f"{role} {s!r}: no such folder")
        if not p.is_dir():
            raise AuditError(f"{role} {s!r}: is a file, expected a model folder saved with save_pretrained")


def check_corpus(training_corpus, corpus_index: str) -> list[Path]:
    """The training corpus's files (none without one), checked before anything is read."""
    from mimirlib.core.ngrams import MODES, corpus_files

    if training_corpus is None:
        return []
    if corpus_index not in MODES:
        raise AuditError(f"corpus index {corpus_index!r}: expected one of {', '.join(MODES)}")
    try:
        return corpus_files(training_corpus)
    except ValueError as e:
        raise AuditError(error_line(e)) from None


def connect_engine(options: ScoringOptions):
    """The Ray engine of ``options``, joined (or started) now, or None for the local engine; an
    unreachable cluster fails here, before any model is loaded."""
    from mimirlib.core.engines import EngineError, resolve_engine
    from mimirlib.core.ray_cluster import connect

    try:
        runner = resolve_engine(options.engine, options.ray_address)
        if runner is not None:
            connect(runner)
    except (ValueError, EngineError) as e:
        raise AuditError(f"engine: {error_line(e)}") from None
    return runner
