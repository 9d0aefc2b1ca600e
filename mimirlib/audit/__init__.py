"""Audit your own model: every attack, the metrics and the sanity checks, on texts you supply.

Give a model (hub name or local folder) and the texts you believe it was trained on (members)
and texts it was not (non-members), as two files or one file with a label column, in
``.jsonl``, ``.csv`` or ``.parquet``, or as Hugging Face datasets written
``hf:NAME[:CONFIG]:SPLIT`` (a hub name, or a folder saved with ``save_to_disk``); all are read by
:func:`mimirlib.core.data.read_table`. :func:`run_audit` scores them with the book's attacks and
returns an :class:`AuditReport`: AUC with bootstrap intervals, TPR at low FPR, ROC and score
distributions, the n-gram overlap of non-members with members, and the model-free *blind
baseline*, which says whether the two sets can be told apart without the model at all (then
the attack AUCs measure distribution shift, not membership).

From a shell (also installed as ``mimir-audit``)::

    python -m mimirlib.audit --model EleutherAI/pythia-160m --members in.jsonl --nonmembers out.jsonl
    python -m mimirlib.audit --model ./my-model --labeled all.csv --label-column label --out report/
    python -m mimirlib.audit --model ./my-model --members hf:owner/name:cfg:train --nonmembers hf:./saved:test

Cheap failures come first: files, columns, labels, emptiness, attacks, dtype and the output
folder are all checked before any model is loaded; each failure is one line naming the
culprit (exit status 2) and writes nothing. The report folder is written beside its final
place and renamed into it at the end, so an earlier report stays until the new one is whole.

The package: :mod:`~mimirlib.audit.inputs` (reading the texts), :mod:`~mimirlib.audit.checks`
(the checks before any model), :mod:`~mimirlib.audit.modelfree` (overlaps, blind baseline),
:mod:`~mimirlib.audit.report` (:class:`AuditReport`), :mod:`~mimirlib.audit.run`
(:func:`run_audit`) and :mod:`~mimirlib.audit.cli` (the command line).
"""

from mimirlib.audit.checks import DEFAULT_ATTACKS
from mimirlib.audit.cli import build_parser, main
from mimirlib.audit.inputs import AuditError, load_inputs, load_labeled_file, load_member_file, parse_label
from mimirlib.audit.modelfree import OVERLAP_NS, blind_baseline, overlap_summary
from mimirlib.audit.report import AuditReport, check_out_dir
from mimirlib.audit.run import run_audit

__all__ = [
    "AuditError",
    "AuditReport",
    "DEFAULT_ATTACKS",
    "OVERLAP_NS",
    "blind_baseline",
    "build_parser",
    "check_out_dir",
    "load_inputs",
    "load_labeled_file",
    "load_member_file",
    "main",
    "overlap_summary",
    "parse_label",
    "run_audit",
]
