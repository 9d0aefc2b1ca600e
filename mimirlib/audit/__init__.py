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
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from mimirlib.core.data import Benchmark, BenchmarkError, Table, error_line, read_table
from mimirlib.fsutil import staged_dir
from mimirlib.core.hub import is_local_path

__all__ = [
    "AuditError",
    "AuditReport",
    "DEFAULT_ATTACKS",
    "OVERLAP_NS",
    "load_member_file",
    "load_labeled_file",
    "run_audit",
    "main",
]

DEFAULT_ATTACKS = ("loss", "zlib", "min_k", "min_k_pp")
OVERLAP_NS = (7, 13)
# MIMIR's decontamination keeps non-members whose 13-gram overlap with training data is <= 80%.
OVERLAP_THRESHOLD = 0.8
# A blind (model-free) AUC at or above this means the two sets differ visibly without the model.
BLIND_WARN_AUC = 0.6
REPORT_FILES = ("report.md", "metrics.csv", "scores.csv", "overlap.csv", "roc.png", "scores.png", "audit.json")
MARKER = "audit.json"  # an existing output folder is replaced only if it holds this (or is empty)

_TRUE = {"1", "true", "member", "yes"}
_FALSE = {"0", "false", "nonmember", "non-member", "non_member", "no"}


class AuditError(ValueError):
    """Bad audit input (file, column, label, empty set, model, output folder); one line naming it."""


# ----------------------------------------------------------------------------- reading texts


def _read_rows(source: str | Path) -> Table:
    """The rows of one input through the project's one reader (:func:`mimirlib.core.data.read_table`:
    a jsonl/csv/parquet file, or ``hf:NAME[:CONFIG]:SPLIT``), its errors as :class:`AuditError`."""
    try:
        return read_table(source)
    except BenchmarkError as e:  # the message already names the file (and line) and the problem
        raise AuditError(str(e)) from None


def _require_column(path, columns: Sequence[str], column: str, what: str) -> None:
    if column not in columns:
        raise AuditError(f"{path}: no {what} column {column!r}; columns present: {list(columns)}")


def _text_of(path, number: int, row: dict, column: str, unit: str) -> str:
    where = f"{path}: {unit} {number}"
    if column not in row:  # jsonl rows may lack a key other rows have
        raise AuditError(f"{where}: no {column!r} field")
    t = row[column]
    if not isinstance(t, str):
        kind = "null" if t is None else type(t).__name__
        raise AuditError(f"{where}: column {column!r} is {kind}, not text")
    if not t.strip():
        raise AuditError(f"{where}: column {column!r} is empty")
    return t


def parse_label(value) -> bool | None:
    """True for a member, False for a non-member, None if ``value`` is not a label we accept.

    Accepted: booleans, 0/1 (int, float or string), and the words member/nonmember,
    true/false, yes/no in any case (CSV has no booleans, so ``"True"`` must count).
    """
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return {1: True, 0: False}.get(int(value))
    if isinstance(value, (float, np.floating)):
        return {1.0: True, 0.0: False}.get(float(value)) if math.isfinite(value) else None
    if isinstance(value, str):
        v = value.strip().lower()
        if v in _TRUE:
            return True
        if v in _FALSE:
            return False
        try:
            return {1.0: True, 0.0: False}.get(float(v))
        except ValueError:
            return None
    return None


def load_member_file(path: str | Path, text_column: str = "text") -> list[str]:
    """The texts of one file (all members, or all non-members), validated.

    Raises :class:`AuditError` naming the file for a missing file, an unsupported or malformed
    file (a bad jsonl line by its number), a missing column (listing those present), no rows,
    or an empty / non-text value (by its row).
    """
    table = _read_rows(path)
    if not table.rows:
        raise AuditError(f"{path}: no rows (empty set)")
    _require_column(path, table.columns, text_column, "text")
    return [_text_of(path, n, r, text_column, table.unit) for n, r in table.numbered()]


def load_labeled_file(
    path: str | Path, text_column: str = "text", label_column: str = "label"
) -> tuple[list[str], list[str]]:
    """``(members, nonmembers)`` from one file whose ``label_column`` says which is which.

    Labels: booleans, 0/1 or member/nonmember (any case); anything else raises
    :class:`AuditError` naming the file, row, column and value. Either side empty raises too.
    """
    table = _read_rows(path)
    unit = table.unit
    if not table.rows:
        raise AuditError(f"{path}: no rows (empty set)")
    _require_column(path, table.columns, text_column, "text")
    _require_column(path, table.columns, label_column, "label")
    members, nonmembers = [], []
    for n, r in table.numbered():
        text = _text_of(path, n, r, text_column, unit)
        value = r.get(label_column)
        is_member = parse_label(value)
        if is_member is None:
            raise AuditError(
                f"{path}: {unit} {n}: column {label_column!r} has bad label {value!r}; "
                f"use true/false, 1/0 or member/nonmember"
            )
        (members if is_member else nonmembers).append(text)
    if not members:
        raise AuditError(f"{path}: no members (every row of column {label_column!r} is a non-member)")
    if not nonmembers:
        raise AuditError(f"{path}: no non-members (every row of column {label_column!r} is a member)")
    return members, nonmembers


# ----------------------------------------------------------------------------- the report


def _fmt(x, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    if isinstance(x, (float, np.floating)):
        return f"{x:.{digits}f}"
    return str(x)


def _budget_label(column: str) -> str:
    """'tpr@1%fpr' -> 'TPR@1% FPR' (metrics' column names, for display)."""
    return column.replace("tpr", "TPR").replace("fpr", " FPR")


def _md_table(df: pd.DataFrame) -> str:
    """A GitHub-flavoured markdown table (no extra dependency)."""
    cols = [str(c) for c in df.columns]
    esc = lambda s: str(s).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    lines = ["| " + " | ".join(esc(c) for c in cols) + " |", "| " + " | ".join("---" for _ in cols) + " |"]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(esc(_fmt(v)) for v in row) + " |")
    return "\n".join(lines)


@dataclass
class AuditReport:
    """What an audit found. ``metrics`` has one row per attack (``auc``, ``auc_lo``/``auc_hi``
    the bootstrap interval, ``tpr@1%fpr``, ``tpr@0.1%fpr``, ``min_resolvable_fpr``, sizes);
    ``scores`` one row per text (members first; ``is_member`` and one column per attack);
    ``overlap`` one row per n (non-members' word n-gram overlap with the members); ``blind`` the
    model-free baseline (``auc``...; or ``{"error": why}`` when it could not be computed)."""

    metrics: pd.DataFrame
    scores: pd.DataFrame
    overlap: pd.DataFrame
    blind: dict | None
    model: dict
    reference: dict | None = None
    settings: dict = field(default_factory=dict)
    nonmember_overlap: pd.DataFrame | None = None  # per non-member, one column per n
    corpus: dict | None = None  # non-members against a training corpus (ngrams.CorpusOverlap.summary)
    corpus_overlap: pd.DataFrame | None = None  # per non-member: its overlap with that corpus

    @property
    def attacks(self) -> list[str]:
        return [c for c in self.scores.columns if c != "is_member"]

    def metrics_table(self) -> pd.DataFrame:
        """The metrics for display: AUC with its interval, TPR at each FPR budget."""
        rows = []
        for _, rec in self.metrics.iterrows():
            row = {
                "attack": rec["attack"],
                "AUC [95% CI]": f"{rec['auc']:.3f} [{rec['auc_lo']:.3f}, {rec['auc_hi']:.3f}]",
            }
            for c in self.metrics.columns:
                if c.startswith("tpr@"):
                    row[_budget_label(c)] = f"{rec[c]:.3f}"
            rows.append(row)
        return pd.DataFrame(rows)

    def blind_line(self) -> str:
        b = self.blind
        if not b:
            return "Blind baseline: not computed."
        if "error" in b:
            return f"Blind baseline: not computed ({b['error']})."
        return (
            f"Blind baseline (model-free classifier on the texts alone, cross-validated): "
            f"AUC {_fmt(float(b['auc']))} on {b.get('n_members', '?')} members / "
            f"{b.get('n_nonmembers', '?')} non-members."
        )

    def findings(self) -> list[str]:
        """Short statements decided by rules on the numbers (the rule is part of each)."""
        out = []
        if len(self.metrics):
            best = self.metrics.sort_values("auc", ascending=False).iloc[0]
            out.append(
                f"Best attack: {best['attack']}, AUC {best['auc']:.3f} "
                f"[{best['auc_lo']:.3f}, {best['auc_hi']:.3f}]; "
                + (
                    "its interval excludes chance (0.5)."
                    if best["auc_lo"] > 0.5
                    else "its interval includes chance (0.5): no evidence of membership signal."
                )
            )
        b = self.blind
        if b and "error" not in b:
            ba = float(b["auc"])
            if ba >= BLIND_WARN_AUC:
                out.append(
                    f"Warning: the blind baseline reaches AUC {ba:.3f} (>= {BLIND_WARN_AUC}) without the "
                    f"model, so members and non-members differ in distribution; attack AUCs here can "
                    f"reflect that shift rather than membership."
                )
            elif len(self.metrics):
                bar = max(0.5, ba)
                beat = self.metrics[self.metrics.auc_lo > bar].attack.tolist()
                out.append(
                    f"Attacks whose AUC interval lies above both chance and the blind baseline "
                    f"(max(0.5, {ba:.3f})): {', '.join(beat) if beat else 'none'}."
                )
        if self.overlap is not None and len(self.overlap):
            for r in self.overlap.itertuples(index=False):
                if r.n == 13 and r.frac_above_80 > 0:
                    out.append(
                        f"{r.frac_above_80:.0%} of non-members share more than 80% of their 13-grams with "
                        f"the members (MIMIR would drop them as contaminated)."
                    )
        if len(self.metrics):
            mr = float(self.metrics.min_resolvable_fpr.iloc[0])
            small = [
                c
                for c in self.metrics.columns
                if c.startswith("tpr@") and float(c[4:].split("%")[0]) / 100 < mr - 1e-12
            ]
            if small:
                out.append(
                    f"With {int(self.metrics.n_nonmembers.iloc[0])} non-members the smallest measurable FPR "
                    f"is {mr:.2g}; read {', '.join(map(_budget_label, small))} as TPR at FPR 0."
                )
        return out

    def to_markdown(self, figures: bool = False) -> str:
        """The report as markdown; ``figures`` links ``roc.png`` / ``scores.png`` (as saved)."""
        m = self.model
        lines = [f"# Membership inference audit: {m.get('name')}", ""]
        lines.append(
            f"- model: `{m.get('name')}`"
            + (f" @ `{m['revision']}`" if m.get("revision") else "")
            + (f", {m['params']:,} parameters" if m.get("params") else "")
            + (f", {m['dtype']} on {m['device']}" if m.get("dtype") else "")
        )
        if self.reference:
            lines.append(f"- reference model: `{self.reference.get('name')}`")
        s = self.settings
        n_m = int(self.scores.is_member.sum())
        lines.append(
            f"- texts: {n_m} members, {len(self.scores) - n_m} non-members"
            + (
                f" (each scored whole, windows of {s['window']} tokens at stride {s['stride']})"
                if "window" in s
                else ""
            )
        )
        for k in ("members", "nonmembers", "labeled"):
            if s.get(k):
                lines.append(f"- {k} file: `{s[k]}`")
        lines += self.corpus_lines()
        lines += [
            "",
            "## Attacks",
            "",
            "Higher score = more likely a member; AUC 0.5 is chance. Intervals: stratified bootstrap"
            + (f" ({s['n_bootstrap']} resamples)." if "n_bootstrap" in s else "."),
            "",
            _md_table(self.metrics_table()),
            "",
            "## Blind baseline",
            "",
            self.blind_line(),
            "",
        ]
        if self.overlap is not None and len(self.overlap):
            lines += [
                "## N-gram overlap of non-members with members",
                "",
                (
                    "Fraction of each non-member's word n-grams found anywhere in the members "
                    "(only the members given here, not the model's whole training set)."
                ),
                "",
                _md_table(self.overlap),
                "",
            ]
        lines += ["## Findings", ""] + [f"- {f}" for f in self.findings()] + [""]
        if figures:
            lines += ["## Figures", "", "![ROC curves](roc.png)", "", "![Score distributions](scores.png)", ""]
        return "\n".join(lines)

    def corpus_lines(self, name_only: bool = False) -> list[str]:
        """The training-corpus check as markdown lines, shown before any attack number: how
        many non-members MIMIR's decontamination would drop (none without a corpus).
        ``name_only`` shows the corpus by its last path component (a page shows no machine path)."""
        c = self.corpus
        if not c:
            return []
        shown = Path(c["corpus"]).name if name_only else c["corpus"]
        fails = next(v for k, v in c.items() if k.startswith("fail decontamination"))
        total = c["non-members"]
        bloom = ""
        if c["index"] != "exact":
            bloom = (
                f" Index: {c['index']}, which can overstate an overlap (by about that rate on the "
                "absent n-grams), never understate it."
            )
        return [
            "",
            "## Non-members against the training corpus",
            "",
            f"Checked before any attack number. Training corpus `{shown}`: {c['corpus files']} file(s), "
            f"{c['corpus documents']:,} documents, {c['corpus n-grams']:,} word {c['n']}-grams.{bloom} "
            f"MIMIR keeps a non-member only if at most {OVERLAP_THRESHOLD:.0%} of its {c['n']}-grams occur "
            f"in the training data: **{fails} of {total} non-members "
            f"({fails / max(total, 1):.0%}) would fail that decontamination**"
            + (" (they are in part training data; read the attack numbers with that in mind)." if fails else "."),
            "",
            f"Overlap with the corpus: mean {c['mean overlap']:.3f}, max {c['max overlap']:.3f} "
            "(per non-member: `corpus_overlap.csv`).",
        ]

    # ---------------------------------------------------------------- figures and files

    def roc_figure(self):
        from mimirlib.core import metrics
        from mimirlib.display import plots

        curves = {}
        lab = self.scores.is_member.to_numpy().astype(bool)
        for a in self.attacks:
            s = self.scores[a].to_numpy()
            fpr, tpr, _ = metrics.roc(s[lab], s[~lab])
            curves[f"{a} (AUC {metrics.auc(s[lab], s[~lab]):.3f})"] = (fpr, tpr)
        b = self.blind
        if b and "error" not in b and b.get("scores") is not None:
            bs = np.asarray(b["scores"], dtype=float).ravel()
            if bs.size == lab.size and np.isfinite(bs).all():
                fpr, tpr, _ = metrics.roc(bs[lab], bs[~lab])
                curves[f"blind (AUC {float(b['auc']):.3f})"] = (fpr, tpr)
        return plots.plot_roc_panels(curves, title=f"ROC: {Path(str(self.model.get('name'))).name}")

    def scores_figure(self):
        import matplotlib.pyplot as plt

        from mimirlib.display import plots

        attacks = self.attacks
        ncol = min(3, len(attacks))
        nrow = math.ceil(len(attacks) / ncol)
        fig, axes = plt.subplots(nrow, ncol, figsize=(5.2 * ncol, 3.9 * nrow), squeeze=False)
        lab = self.scores.is_member.to_numpy().astype(bool)
        for ax, a in zip(axes.ravel(), attacks):
            s = self.scores[a].to_numpy()
            plots.plot_score_hist(
                {"members": s[lab], "non-members": s[~lab]}, ax=ax, xlabel=plots.score_label(a), title=a
            )
        for ax in axes.ravel()[len(attacks) :]:
            ax.set_visible(False)
        fig.tight_layout()
        return fig

    def save(self, out_dir: str | Path) -> Path:
        """Write the report folder atomically; returns ``out_dir``.

        Files: report.md, metrics.csv, scores.csv, overlap.csv, roc.png, scores.png, audit.json.
        Everything is written into a temporary folder beside ``out_dir`` and renamed into place
        at the end: a failure leaves nothing behind, and an earlier report stays until then.
        An existing ``out_dir`` is replaced only if it is empty or an earlier audit report.
        """
        import matplotlib
        import matplotlib.pyplot as plt

        from mimirlib.display import plots

        out = Path(out_dir)
        check_out_dir(out)
        with staged_dir(out) as tmp:
            (tmp / "report.md").write_text(self.to_markdown(figures=True), encoding="utf-8")
            self.metrics.to_csv(tmp / "metrics.csv", index=False)
            self.scores.to_csv(tmp / "scores.csv", index=False)
            self.overlap.to_csv(tmp / "overlap.csv", index=False)
            if self.corpus_overlap is not None:
                self.corpus_overlap.to_csv(tmp / "corpus_overlap.csv", index=False)
            with matplotlib.rc_context():
                plots.set_style()
                for name, make in (("roc.png", self.roc_figure), ("scores.png", self.scores_figure)):
                    fig = make()
                    try:
                        fig.savefig(tmp / name)
                    finally:
                        plt.close(fig)
            (tmp / MARKER).write_text(json.dumps(self._json(), indent=2, default=str) + "\n", encoding="utf-8")
        return out

    def _json(self) -> dict:
        blind = None
        if self.blind is not None:
            blind = {k: v for k, v in self.blind.items() if k != "scores"}
        return {
            "model": self.model,
            "reference": self.reference,
            "settings": self.settings,
            "blind": blind,
            "corpus": self.corpus,
            "files": list(REPORT_FILES),
        }


def check_out_dir(out: str | Path) -> None:
    """Refuse an output path that is a file, or a non-empty folder that is not an audit report
    (so ``--out .`` can never replace a folder of your own files)."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise AuditError(f"output {out}: exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise AuditError(f"output {out}: folder exists and is not an earlier audit report; choose another --out")


# ----------------------------------------------------------------------------- running an audit


def _check_model_name(name, role: str) -> None:
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


def _load(name, role: str, revision, dtype):
    from mimirlib.core.models import LoadedModel, ModelLoadError, load_model

    if isinstance(name, LoadedModel):
        return name
    s = str(Path(str(name)).expanduser()) if is_local_path(str(name)) else str(name)
    try:
        return load_model(s, revision, dtype=dtype)
    except ModelLoadError as e:
        msg = error_line(e)
        raise AuditError(msg if role == "model" else f"{role}: {msg}") from None
    except OSError as e:
        raise AuditError(f"{role} {s!r} could not be loaded: {error_line(e)}") from None


def _model_label(name) -> str:
    from mimirlib.core.models import LoadedModel

    s = name.name if isinstance(name, LoadedModel) else str(name)
    return Path(s).name if is_local_path(s) else s


def _check_attacks(attacks, has_reference: bool, has_prefix: bool = False, has_corpus: bool = False) -> tuple[str, ...]:
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


def _check_texts(members, nonmembers) -> Benchmark:
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


def overlap_summary(
    members: Sequence[str], nonmembers: Sequence[str], ns: Sequence[int] = OVERLAP_NS
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Word n-gram overlap of each non-member with the members: ``(summary per n, per text)``.

    Per text: :func:`mimirlib.core.ngrams.overlap_table` (exact mode; columns ``ngram_<n>``). A
    non-member shorter than n words has no n-grams; it counts as overlap 0 and in ``n_shorter``.
    """
    from mimirlib.core import ngrams

    per_text = ngrams.overlap_table(list(nonmembers), list(members), ns=tuple(ns), mode="exact")
    rows = []
    for n in ns:
        ov = per_text[f"ngram_{n}"].to_numpy(dtype=float)
        rows.append(
            {
                "n": int(n),
                "mean": float(ov.mean()),
                "median": float(np.median(ov)),
                "max": float(ov.max()),
                "frac_above_80": float((ov > OVERLAP_THRESHOLD).mean()),
                "n_nonmembers": int(ov.size),
                "n_shorter": int(sum(len(ngrams.words(t)) < n for t in nonmembers)),
            }
        )
    return pd.DataFrame(rows), per_text


def _check_corpus(training_corpus, corpus_index: str) -> list[Path]:
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


def _corpus_check(nonmembers, training_corpus, files, corpus_index: str, column: str):
    """``(summary, per non-member frame)`` of :func:`mimirlib.core.ngrams.corpus_overlap` at MIMIR's
    decontamination n, or ``(None, None)`` without a corpus; a bad file is an AuditError."""
    from mimirlib.core.ngrams import DECONTAMINATION_N, corpus_overlap

    if not files:
        return None, None
    try:
        res = corpus_overlap(list(nonmembers), files, n=DECONTAMINATION_N, mode=corpus_index, column=column)
    except (ValueError, OSError) as e:  # BenchmarkError is a ValueError: names file and line
        raise AuditError(error_line(e)) from None
    per_text = pd.DataFrame(
        {"nonmember": range(len(res.overlap)), f"ngram_{res.n}": res.overlap, "fails_decontamination": res.failing}
    )
    return {"corpus": str(training_corpus), **res.summary()}, per_text


def blind_baseline(members: Sequence[str], nonmembers: Sequence[str], *, seed: int = 0) -> dict:
    """``mimirlib.core.baselines.blind_auc`` with at most 5 folds (fewer for tiny sets); a failure is
    returned as ``{"error": why}`` so that it shows in the report instead of hiding it."""
    n_splits = min(5, len(members), len(nonmembers))
    if n_splits < 2:
        return {"error": "needs at least 2 members and 2 non-members for cross-validation"}
    from mimirlib.core.baselines import blind_auc

    try:
        return dict(blind_auc(list(members), list(nonmembers), n_splits=n_splits, seed=seed))
    except ValueError as e:
        return {"error": error_line(e)}


def run_audit(
    model,
    members: Sequence[str],
    nonmembers: Sequence[str],
    *,
    reference_model=None,
    attacks: Sequence[str] | str | None = None,
    revision: str | None = None,
    dtype: str = "auto",
    window: int | None = None,
    stride: int | None = None,
    batch_size: int = 16,
    n_bootstrap: int = 1000,
    seed: int = 0,
    cache_dir: str | Path | None = None,
    attack_params: dict | None = None,
    sources: dict | None = None,
    recall_prefix: Sequence[str] | None = None,
    frequency_corpus: Sequence[str] | None = None,
    grad_params: str | None = None,
    training_corpus: str | Path | None = None,
    corpus_index: str = "bloom",
    corpus_column: str = "text",
    engine="local",
    ray_address: str | None = None,
) -> AuditReport:
    """Audit ``model`` (hub name, local folder, or a loaded :class:`mimirlib.core.models.LoadedModel`)
    on ``members`` / ``nonmembers`` (lists of texts).

    ``attacks`` defaults to loss, zlib, min_k, min_k_pp, plus ``ref`` when ``reference_model``
    is given (its column is ``ref:<model name>``). ``revision`` applies to the target only.
    ``cache_dir`` keeps per-token signals on disk (a re-run does no forward pass); ``None``
    writes nothing. ``sources`` (e.g. the input file names) is recorded in the report. The attacks
    after the paper are opt-in: ``recall`` needs ``recall_prefix`` (known non-member texts, none of
    them among the audited texts), ``dc_pdd`` a ``frequency_corpus``; ``grad_norm`` takes the
    parameters to differentiate in ``grad_params`` (comma-separated globs; all weights for None).
    ``engine``/``ray_address``: where the forward passes run (:mod:`mimirlib.core.engines`); a Ray
    cluster is joined (or started) before any model is loaded, so an unreachable one fails first.
    ``training_corpus`` (a file, folder or glob of .txt/.jsonl/.parquet files, ``corpus_column``
    holding the text) is indexed (``corpus_index``: bloom or exact) before any model is loaded, and
    each non-member's 13-gram overlap with it is reported first (MIMIR's decontamination rule).
    Inputs, attacks and dtype are validated before any model is loaded; every problem raises
    :class:`AuditError` naming its culprit.
    """
    from mimirlib.core.models import ModelLoadError, describe, pick_dtype
    from mimirlib.core.attacks import needs_extra
    from mimirlib.core.scoring import evaluate_scores, score_benchmark
    from mimirlib.core.scoring_extra import score_extra
    from mimirlib.core.signals import SignalCache, resolve_window

    # 1. cheap checks, nothing loaded yet
    bench = _check_texts(members, nonmembers)
    attacks = _check_attacks(attacks, reference_model is not None, bool(recall_prefix), bool(frequency_corpus))
    if recall_prefix and "recall" in attacks:
        from mimirlib.core.extra_signals import check_disjoint

        try:
            check_disjoint(list(recall_prefix), bench.texts())
        except ValueError as e:
            raise AuditError(error_line(e)) from None
    try:
        pick_dtype(dtype, __import__("torch").device("cpu"))
    except ModelLoadError as e:
        raise AuditError(f"dtype: {e}") from None
    if isinstance(n_bootstrap, bool) or not isinstance(n_bootstrap, (int, np.integer)) or n_bootstrap < 1:
        raise AuditError(f"n_bootstrap: expected a positive integer, got {n_bootstrap!r}")
    for what, v, least in (("window", window, 2), ("stride", stride, 1), ("batch_size", batch_size, 1)):
        if v is None and what != "batch_size":
            continue  # the model's trained context, and half of it
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < least:
            raise AuditError(f"{what}: expected an integer >= {least}, got {v!r}")
    if window is not None and stride is not None and stride >= window:
        raise AuditError(f"stride: must be smaller than the window ({window}), got {stride}")
    _check_model_name(model, "model")
    corpus_files = _check_corpus(training_corpus, corpus_index)
    use_ref = reference_model is not None and any(a == "ref" for a in attacks)
    if use_ref:
        _check_model_name(reference_model, "reference model")
    from mimirlib.core.engines import EngineError, connect, resolve_engine

    try:
        runner = resolve_engine(engine, ray_address)
        if runner is not None:
            connect(runner)
    except (ValueError, EngineError) as e:
        raise AuditError(f"engine: {error_line(e)}") from None

    # 2. the training-corpus check (model-free), before any model
    corpus, corpus_df = _corpus_check(bench.nonmembers, training_corpus, corpus_files, corpus_index, corpus_column)

    # 2. models
    target = _load(model, "model", revision, dtype)
    refs = {}
    if use_ref:
        refs[_model_label(reference_model)] = _load(reference_model, "reference model", None, dtype)

    # 3. scores and metrics
    cache = SignalCache(cache_dir) if cache_dir is not None else None
    try:
        scores = score_benchmark(
            bench,
            target,
            [a for a in attacks if not needs_extra(a)],
            references=refs,
            cache=cache,
            window=window,
            stride=stride,
            batch_size=batch_size,
            attack_params=attack_params,
            engine=runner or "local",
        )
    except ValueError as e:  # e.g. a text with fewer than 2 tokens, named in the message
        raise AuditError(f"scoring: {error_line(e)}") from None
    except EngineError as e:  # a Ray worker lost for good: what finished is in the cache
        raise AuditError(f"engine: {error_line(e)}") from None
    extra = [a for a in attacks if needs_extra(a)]
    if extra:  # the attacks after the paper: their own passes (prefixed, backward), cached alike
        try:
            more = score_extra(
                bench.texts(),
                target,
                extra,
                prefix_texts=recall_prefix,
                frequency_corpus=frequency_corpus,
                grad_params=grad_params,
                cache=cache,
                window=window,
                stride=stride,
                batch_size=batch_size,
                attack_params=attack_params,
                desc="audit",
            )
        except ValueError as e:  # e.g. grad_params matching no parameter, named in the message
            raise AuditError(f"scoring: {error_line(e)}") from None
        scores = pd.concat([scores, more.scores], axis=1)
    metrics_df = evaluate_scores(scores, n_resamples=int(n_bootstrap), seed=seed)

    # 4. model-free checks
    overlap, per_text = overlap_summary(bench.members, bench.nonmembers)
    blind = blind_baseline(bench.members, bench.nonmembers, seed=seed)

    settings = {
        "attacks": list(attacks),
        **dict(zip(("window", "stride"), resolve_window(target, window, stride))),
        "batch_size": int(batch_size),
        "n_bootstrap": int(n_bootstrap),
        "seed": int(seed),
        "dtype": dtype,
        "attack_params": dict(attack_params or {}),
        "engine": "local" if runner is None else f"ray ({runner.target})",
        **{k: str(v) for k, v in (sources or {}).items() if v},
    }
    return AuditReport(
        metrics=metrics_df,
        scores=scores,
        overlap=overlap,
        blind=blind,
        model=describe(target),
        reference=describe(next(iter(refs.values()))) if refs else None,
        settings=settings,
        nonmember_overlap=per_text,
        corpus=corpus,
        corpus_overlap=corpus_df,
    )


# ----------------------------------------------------------------------------- command line


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, like every other audit failure
        self.exit(2, f"error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="mimir-audit",
        description="Audit a language model with membership inference attacks on "
        "texts you supply (members vs non-members).",
    )
    p.add_argument("--model", required=True, help="target model: hub name or local folder (save_pretrained)")
    source = (
        " (.jsonl, .csv or .parquet), or a Hugging Face dataset: hf:NAME:SPLIT or hf:NAME:CONFIG:SPLIT "
        "(NAME a hub dataset or a folder saved with save_to_disk)"
    )
    p.add_argument("--members", help="file of member texts" + source)
    p.add_argument("--nonmembers", help="file of non-member texts" + source)
    p.add_argument("--labeled", help="one file (or hf: dataset) with both, told apart by --label-column")
    p.add_argument(
        "--label-column",
        default="label",
        help="label column of --labeled: true/false, 1/0 or member/nonmember (default: label)",
    )
    p.add_argument("--text-column", default="text", help="column holding the texts (default: text)")
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
    p.add_argument("--out", default="audit-report", help="report folder (default: audit-report)")
    p.add_argument("--dtype", default="auto", help="auto (float32 on CPU, bfloat16 on GPU), float32, bfloat16")
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
    return p


def load_inputs(
    members=None, nonmembers=None, labeled=None, *, text_column: str = "text", label_column: str = "label"
) -> tuple[list[str], list[str]]:
    """Texts from either two files (``members`` and ``nonmembers``) or one ``labeled`` file."""
    if labeled and (members or nonmembers):
        raise AuditError("give either --labeled or --members/--nonmembers, not both")
    if labeled:
        return load_labeled_file(labeled, text_column, label_column)
    if not members or not nonmembers:
        missing = "--members" if not members else "--nonmembers"
        raise AuditError(f"{missing} is missing; give --members and --nonmembers, or one --labeled file")
    return load_member_file(members, text_column), load_member_file(nonmembers, text_column)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from mimirlib.core.models import ModelLoadError

    try:
        out = Path(args.out)
        check_out_dir(out)
        mem, non = load_inputs(
            args.members, args.nonmembers, args.labeled, text_column=args.text_column, label_column=args.label_column
        )
        if args.recall_shots < 1:
            raise AuditError(f"--recall-shots: expected a positive integer, got {args.recall_shots}")
        prefix = (
            load_member_file(args.recall_prefix, args.text_column)[: args.recall_shots] if args.recall_prefix else None
        )
        corpus = load_member_file(args.frequency_corpus, args.text_column) if args.frequency_corpus else None
        import matplotlib

        matplotlib.use("Agg")
        report = run_audit(
            args.model,
            mem,
            non,
            reference_model=args.reference_model,
            attacks=args.attacks,
            revision=args.revision,
            dtype=args.dtype,
            window=args.window,
            stride=args.stride,
            batch_size=args.batch_size,
            n_bootstrap=args.n_bootstrap,
            seed=args.seed,
            cache_dir=args.cache_dir,
            training_corpus=args.training_corpus,
            corpus_index=args.corpus_index,
            corpus_column=args.text_column,
            engine=args.engine,
            ray_address=args.ray_address,
            sources={
                "members": args.members,
                "nonmembers": args.nonmembers,
                "labeled": args.labeled,
                "recall_prefix": args.recall_prefix,
                "frequency_corpus": args.frequency_corpus,
            },
            recall_prefix=prefix,
            frequency_corpus=corpus,
            grad_params=args.grad_params,
        )
        report.save(out)
    except (AuditError, ModelLoadError, BenchmarkError) as e:
        print(f"error: {error_line(e)}", file=sys.stderr)
        return 2
    print(report.to_markdown())
    print(f"report written to {out / 'report.md'} (with metrics.csv, scores.csv, roc.png, scores.png)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
