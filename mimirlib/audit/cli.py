"""The audit's command line (``python -m mimirlib.audit``, ``mimir-audit``): its flags, and
:func:`main`, which prints the report or one ``error:`` line (exit status 2) and writes nothing."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from mimirlib.core.data import BenchmarkError, error_line
from mimirlib.audit.checks import DEFAULT_ATTACKS, audit_attacks
from mimirlib.audit.collection import CollectionReport, run_collection
from mimirlib.audit.inputs import AuditError, load_inputs, load_member_file
from mimirlib.audit.report import AuditReport, check_out_dir
from mimirlib.audit.run import run_audit

SOURCE = (
    " (.jsonl, .csv or .parquet), or a Hugging Face dataset: hf:NAME:SPLIT or hf:NAME:CONFIG:SPLIT "
    "(NAME a hub dataset or a folder saved with save_to_disk)"
)


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, like every other audit failure
        self.exit(2, f"error: {message} (see --help)\n")


def _add_input_arguments(p: argparse.ArgumentParser) -> None:
    """The model and the texts to audit."""
    p.add_argument("--model", required=True, help="target model: hub name or local folder (save_pretrained)")
    p.add_argument("--members", help="file of member texts" + SOURCE)
    p.add_argument("--nonmembers", help="file of non-member texts" + SOURCE)
    p.add_argument("--labeled", help="one file (or hf: dataset) with both, told apart by --label-column")
    p.add_argument(
        "--label-column",
        default="label",
        help="label column of --labeled: true/false, 1/0 or member/nonmember (default: label)",
    )
    p.add_argument("--text-column", default="text", help="column holding the texts (default: text)")
    p.add_argument(
        "--suspect",
        help="the collection question instead (dataset inference, with --validation): texts you suspect the "
        "model was trained on" + SOURCE,
    )
    p.add_argument(
        "--validation",
        help="texts of the same source and period as --suspect that the model cannot have seen (unpublished)",
    )


def _add_attack_arguments(p: argparse.ArgumentParser) -> None:
    """The reference model, the revision, the attacks and the inputs of those after the paper."""
    p.add_argument("--reference-model", help="reference model for the 'ref' attack (hub name or folder)")
    p.add_argument("--revision", help="revision of the target model (e.g. step99000)")
    p.add_argument(
        "--attacks",
        help=f"comma-separated attacks (default: {','.join(DEFAULT_ATTACKS)}, plus ref with a reference model); "
        f"known: {audit_attacks().replace('%', '%%')}. recall, dc_pdd and grad_norm are opt-in: recall needs "
        "--recall-prefix, dc_pdd --frequency-corpus, grad_norm a backward pass per text (its cost per text is printed)",
    )
    p.add_argument(
        "--recall-prefix",
        help="file of texts known NOT to be members, for the recall attack's prefix (same formats as --members); "
        "none of them may be among the audited texts",
    )
    p.add_argument("--recall-shots", type=int, default=3, help="texts of --recall-prefix in the prefix (default: 3)")
    p.add_argument(
        "--frequency-corpus", help="file of texts whose token frequencies calibrate dc_pdd (same formats as --members)"
    )
    p.add_argument(
        "--grad-params",
        help="grad_norm with respect to these parameters only (comma-separated globs, e.g. 'lm_head.*'); "
        "default: all weights",
    )


def _add_run_arguments(p: argparse.ArgumentParser) -> None:
    """The report folder, the dtype, the bootstrap, the scoring windows, the seed and the cache."""
    p.add_argument("--out", default="audit-report", help="report folder (default: audit-report)")
    p.add_argument(
        "--dtype",
        default="auto",
        help="auto (float32 on CPU, bfloat16 on GPU), fast (bfloat16 where native), float32, bfloat16",
    )
    p.add_argument("--n-bootstrap", type=int, default=1000, help="bootstrap resamples for AUC intervals")
    p.add_argument(
        "--window",
        type=int,
        default=None,
        help="tokens per scoring window (default: the model's trained context); longer texts are scored "
        "whole with sliding windows",
    )
    p.add_argument("--stride", type=int, default=None, help="tokens between windows (default: half the window)")
    p.add_argument("--batch-size", type=int, default=16, help="windows per forward pass")
    p.add_argument("--seed", type=int, default=0, help="seed for the bootstrap and the blind baseline")
    p.add_argument("--cache-dir", help="keep per-token signals here (default: no cache)")


def _add_corpus_and_engine_arguments(p: argparse.ArgumentParser) -> None:
    """The training corpus to check the non-members against, and where the forward passes run."""
    p.add_argument(
        "--training-corpus",
        help="the model's training corpus: a .txt/.jsonl/.parquet file, a folder of them or a glob "
        "(jsonl/parquet: the --text-column); each non-member's 13-gram overlap with it is reported "
        "first, with how many would fail MIMIR's decontamination (> 80%%)",
    )
    p.add_argument(
        "--corpus-index",
        default="bloom",
        choices=("bloom", "exact"),
        help="n-gram index of the training corpus: bloom (bounded memory, 1%% false positives; default) or exact",
    )
    p.add_argument(
        "--engine",
        default="local",
        choices=("local", "ray"),
        help="where forward passes run: local (this process) or ray (workers on a Ray cluster)",
    )
    p.add_argument(
        "--ray-address",
        help="with --engine ray: auto or host:port or ray://host:port of an existing cluster "
        "(default: $RAY_ADDRESS, else a local cluster on this machine)",
    )
    p.add_argument(
        "--ray-timeout",
        type=float,
        metavar="SECONDS",
        help="with --engine ray: seconds the cluster's head has to accept the connection, then to answer "
        "(default: 8); a bad address fails in about that time, in one line",
    )
    p.add_argument(
        "--ray-workers",
        type=int,
        metavar="N",
        help="with --engine ray: Ray workers, each loading the models once (default: one per GPU of the "
        "cluster, or one per CPU without GPUs)",
    )
    p.add_argument(
        "--ray-gpus-per-worker",
        type=float,
        metavar="G",
        help="with --engine ray: GPUs each worker holds (default: 1 on a cluster with GPUs, else 0; "
        "0.5 puts two workers on a GPU)",
    )


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="mimir-audit",
        description="Audit a language model with membership inference attacks on "
        "texts you supply (members vs non-members), or ask whether a collection was trained on "
        "(--suspect vs --validation: dataset inference).",
    )
    _add_input_arguments(p)
    _add_attack_arguments(p)
    _add_run_arguments(p)
    _add_corpus_and_engine_arguments(p)
    return p


def _engine(args: argparse.Namespace):
    """``"local"``, or the :class:`~mimirlib.core.engines.RayEngine` that ``--engine ray`` and the
    ``--ray-*`` flags set; a ``--ray-*`` flag beside the local engine, or a bad value, is one error line."""
    from mimirlib.core.engines import RAY_PARAMETERS, EngineParameterError, engine_from

    given = {"engine": args.engine, **{k: getattr(args, k) for k in RAY_PARAMETERS}}
    try:
        return engine_from(given)
    except EngineParameterError as e:
        flag = "--" + e.name.replace("_", "-")
        if args.engine == "local":
            raise AuditError(f"{flag}: needs --engine ray (the engine is 'local')") from None
        raise AuditError(f"{flag}: {e}") from None


def _options(args: argparse.Namespace):
    """The :class:`~mimirlib.core.signals.ScoringOptions` the flags set (window, batch, dtype, engine, cache)."""
    from mimirlib.core.signals import ScoringOptions, SignalCache

    return ScoringOptions(
        window=args.window,
        stride=args.stride,
        batch_size=args.batch_size,
        dtype=args.dtype,
        engine=_engine(args),
        cache=SignalCache(args.cache_dir) if args.cache_dir is not None else None,
    )


def _collection(args: argparse.Namespace, out: Path) -> CollectionReport:
    """The collection question (``--suspect``, ``--validation``): dataset inference, saved in ``out``."""
    per_text = [f"--{k.replace('_', '-')}" for k in ("members", "nonmembers", "labeled") if getattr(args, k)]
    if per_text:
        raise AuditError(f"--suspect/--validation ask the collection question; {', '.join(per_text)} the per-text one")
    if not (args.suspect and args.validation):
        raise AuditError("--suspect and --validation: dataset inference needs both sets")
    check_out_dir(out)
    suspect = load_member_file(args.suspect, args.text_column)
    validation = load_member_file(args.validation, args.text_column)
    options = _options(args)
    sources = {"suspect": args.suspect, "validation": args.validation}
    report = run_collection(
        args.model,
        suspect,
        validation,
        reference_model=args.reference_model,
        revision=args.revision,
        options=options,
        seed=args.seed,
        sources=sources,
    )
    report.save(out)
    return report


def _audit(args: argparse.Namespace, out: Path) -> AuditReport:
    """The audit the flags ask for, its report saved in ``out``; every cheap check first."""
    check_out_dir(out)
    mem, non = load_inputs(
        args.members, args.nonmembers, args.labeled, text_column=args.text_column, label_column=args.label_column
    )
    if args.recall_shots < 1:
        raise AuditError(f"--recall-shots: expected a positive integer, got {args.recall_shots}")
    prefix = load_member_file(args.recall_prefix, args.text_column)[: args.recall_shots] if args.recall_prefix else None
    corpus = load_member_file(args.frequency_corpus, args.text_column) if args.frequency_corpus else None
    import matplotlib

    matplotlib.use("Agg")
    options = _options(args)
    sources = ("members", "nonmembers", "labeled", "recall_prefix", "frequency_corpus")
    report = run_audit(
        args.model,
        mem,
        non,
        reference_model=args.reference_model,
        attacks=args.attacks,
        revision=args.revision,
        options=options,
        n_bootstrap=args.n_bootstrap,
        seed=args.seed,
        training_corpus=args.training_corpus,
        corpus_index=args.corpus_index,
        corpus_column=args.text_column,
        sources={k: getattr(args, k) for k in sources},
        recall_prefix=prefix,
        frequency_corpus=corpus,
        grad_params=args.grad_params,
    )
    report.save(out)
    return report


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from mimirlib.core.models import ModelLoadError

    try:
        out = Path(args.out)
        collection = args.suspect is not None or args.validation is not None
        report = _collection(args, out) if collection else _audit(args, out)
    except (AuditError, ModelLoadError, BenchmarkError) as e:
        print(f"error: {error_line(e)}", file=sys.stderr)
        return 2
    print(report.to_markdown())
    files = "features.csv" if collection else "metrics.csv, scores.csv, roc.png, scores.png"
    print(f"report written to {out / 'report.md'} (with {files})")
    return 0
