"""The audit's report: :class:`AuditReport` (metrics, scores, overlaps, the blind baseline, the
findings), as markdown, figures and a report folder written atomically."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from mimirlib.display.report import count_of
from mimirlib.fsutil import staged_dir
from mimirlib.audit.inputs import AuditError
from mimirlib.audit.modelfree import OVERLAP_THRESHOLD

# A blind (model-free) AUC at or above this means the two sets differ visibly without the model.
BLIND_WARN_AUC = 0.6
REPORT_FILES = ("report.md", "metrics.csv", "scores.csv", "overlap.csv", "roc.png", "scores.png", "audit.json")
MARKER = "audit.json"  # an existing output folder is replaced only if it holds this (or is empty)


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
                    f"is {mr:.2%}; read {', '.join(map(_budget_label, small))} as TPR at FPR 0."
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
            f"Checked before any attack number. Training corpus `{shown}`: {count_of(c['corpus files'], 'file')}, "
            f"{c['corpus documents']:,} documents, {c['corpus n-grams']:,} word {c['n']}-grams.{bloom} "
            f"MIMIR keeps a non-member only if at most {OVERLAP_THRESHOLD:.0%} of its {c['n']}-grams occur "
            f"in the training data: **{fails} of {total} non-members "
            f"({fails / max(total, 1):.1%}) would fail that decontamination**"
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
