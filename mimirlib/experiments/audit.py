"""The audit chapter's run: which model and files to audit (the user's, or the lab's demonstration),
the audit itself and where its report was saved."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mimirlib import paths
from mimirlib.audit import AuditReport, load_inputs, run_audit
from mimirlib.core.data import load_benchmark, write_records
from mimirlib.core.hub import is_local_path
from mimirlib.core.signals import SignalCache
from mimirlib.experiments.params import Params
from mimirlib.lab.build import ensure_lab
from mimirlib.lab.layout import MAIN_SPLIT
from mimirlib.paths import audit_demo_dir

__all__ = ["Params", "Run", "run", "demo_or_user_inputs", "demo_training_corpus", "summary_lines"]


def demo_or_user_inputs(
    profile: str, model, reference_model, members, nonmembers, labeled, demo_domain: str, draw: int | None = None
):
    """``(model, reference_model, sources)`` for :func:`mimirlib.audit.run_audit`.

    With ``model`` given, the user's own inputs pass through unchanged. Without it, the lab's
    largest one-epoch target (of the lab drawn with ``draw``; None: the profile's) is audited on its
    ``demo_domain`` benchmark, written to two jsonl files exactly as a user would provide theirs (and its
    reference is used unless one is named).
    """
    sources = {"members": members, "nonmembers": nonmembers, "labeled": labeled}
    if model is not None:
        return model, reference_model, sources
    lab = ensure_lab(profile, draw)
    if demo_domain not in lab.config["domains"]:
        raise ValueError(f"demo_domain {demo_domain!r} is not a lab domain; choose from {lab.config['domains']}")
    model = str(lab.model_dir(lab.target_names()[-1]))
    if reference_model is None:
        reference_model = str(lab.model_dir(lab.config["references"][0]["name"]))
    bench = load_benchmark(lab.benchmarks_dir, demo_domain, MAIN_SPLIT)
    demo = audit_demo_dir(demo_domain, draw)
    write_records([{"text": t} for t in bench.members], demo / "members.jsonl")
    write_records([{"text": t} for t in bench.nonmembers], demo / "nonmembers.jsonl")
    return (
        model,
        reference_model,
        {"members": str(demo / "members.jsonl"), "nonmembers": str(demo / "nonmembers.jsonl"), "labeled": None},
    )


def summary_lines(rep) -> list[str]:
    """What was audited, in two lines: the model (revision, size, reference) and the text counts."""
    m = rep.model

    def shown(name) -> str:  # a local folder by its name only: no machine path on the page
        return Path(str(name)).name if is_local_path(str(name)) else str(name)

    model = (
        f"model: {shown(m.get('name'))}"
        + (f" @ {m['revision']}" if m.get("revision") else "")
        + (f", {m['params']:,} parameters" if m.get("params") else "")
        + (f"; reference: {shown(rep.reference.get('name'))}" if rep.reference else "; no reference model")
    )
    n_mem = int(rep.scores.is_member.sum())
    return [model, f"texts: {n_mem} members, {len(rep.scores) - n_mem} non-members"]


def demo_training_corpus(profile: str, model, training_corpus, draw: int | None = None):
    """The training corpus to check the non-members against: the user's (or none) when a model is
    given; for the demonstration, the lab's whole training pool, written to a jsonl file as a user
    would provide theirs (the lab chose its non-members by the same 13-gram rule, so none should fail)."""
    if model is not None or training_corpus is not None:
        return training_corpus
    lab = ensure_lab(profile, draw)
    path = write_records(
        [{"text": t} for t in lab.pool_texts("train")], audit_demo_dir("training-corpus", draw) / "train.jsonl"
    )
    return str(path)


@dataclass
class Run:
    """What the audit chapter shows: the report, the model audited (the lab's largest target in the
    demonstration), the texts it was audited on, and the folder the report was saved in."""

    p: Params
    report: AuditReport
    model: str
    members: list[str]
    nonmembers: list[str]
    saved: Path


def run(p: Params) -> Run:
    """The chapter's audit: the inputs (the user's, or the lab's demonstration written to files), the
    audit with the signal cache, the report saved to ``out_dir`` (or the cache folder)."""
    training_corpus = demo_training_corpus(p.profile, p.model, p.training_corpus, p.draw)
    model, reference_model, sources = demo_or_user_inputs(
        p.profile, p.model, p.reference_model, p.members, p.nonmembers, p.labeled, p.demo_domain, p.draw
    )
    mem, non = load_inputs(
        sources["members"],
        sources["nonmembers"],
        sources["labeled"],
        text_column=p.text_column,
        label_column=p.label_column,
    )
    report = run_audit(
        model,
        mem,
        non,
        reference_model=reference_model,
        attacks=p.attacks,
        revision=p.revision,
        options=p.scoring(cache=SignalCache.default()),
        n_bootstrap=p.n_bootstrap,
        seed=p.seed,
        sources=sources,
        training_corpus=training_corpus,
        corpus_index=p.corpus_index,
        corpus_column=p.text_column,
    )
    saved = report.save(Path(p.out_dir) if p.out_dir else paths.audit_report_dir(p.draw))
    return Run(p=p, report=report, model=model, members=mem, nonmembers=non, saved=saved)
