"""The collection question in the audit: was this *set* of texts trained on? (dataset inference)

:func:`run_collection` checks what it can before any model is loaded (the sizes, the scoring options,
the model names, and the test's IID assumption by the model-free blind classifier between the suspect
and the validation texts: a validation set it tells apart is refused), then scores every text's
dataset-inference features (:data:`mimirlib.core.dataset_inference.FEATURES`) and runs the test;
:class:`CollectionReport` is the report, saved atomically like the per-text audit's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import pandas as pd

from mimirlib.core import dataset_inference as di
from mimirlib.core.data import error_line
from mimirlib.audit.checks import check_model_name, check_scoring, connect_engine
from mimirlib.audit.inputs import AuditError
from mimirlib.audit.report import MARKER, check_out_dir
from mimirlib.audit.run import load_checked, model_label
from mimirlib.fsutil import staged_dir

if TYPE_CHECKING:
    from mimirlib.core.signals import ScoringOptions

# The IID check refuses a validation set the blind classifier separates at this level: its held-out
# p-value is exact under IID sets, so a valid pair of sets is refused at most 1% of the time.
IID_P = 0.01


def check_sizes(suspect: Sequence[str], validation: Sequence[str]) -> None:
    for flag, texts in (("--suspect", suspect), ("--validation", validation)):
        if len(texts) < di.MIN_PER_SIDE:
            raise AuditError(f"{flag}: dataset inference needs at least {di.MIN_PER_SIDE} texts, got {len(texts)}")


def check_iid(suspect: Sequence[str], validation: Sequence[str], *, seed: int = 0) -> dict:
    """The blind classifier's held-out test between the two sets (:func:`mimirlib.core.baselines.blind_holdout_test`);
    raises when it tells them apart (p < IID_P): dataset inference would flag that difference."""
    from mimirlib.core.baselines import blind_holdout_test

    blind = blind_holdout_test(list(suspect), list(validation), seed=seed)
    if blind["p_value"] < IID_P:
        raise AuditError(
            f"--validation: a model-free classifier tells it from --suspect (held-out blind AUC {blind['auc']:.3f}, "
            f"p = {blind['p_value']:.2g} < {IID_P:g}): the sets are not IID, and dataset inference would flag that "
            "difference, not training; draw the validation texts from the same source and period as the suspect texts"
        )
    return blind


@dataclass
class CollectionReport:
    """Dataset inference on one suspect and one validation set: the test, the IID check, the features."""

    inference: di.Inference
    blind: dict
    features: pd.DataFrame  # one row per text: set ("suspect" / "validation") and one column per feature
    model: str
    reference: str | None
    settings: dict

    def to_markdown(self) -> str:
        inf, b = self.inference, self.blind
        weights = "\n".join(f"| {f} | {w:+.3f} |" for f, w in inf.weights_table().items())
        p_parts = ", ".join(f"{p:.3g}" for p in inf.p_values)
        return "\n".join(
            [
                f"# Dataset inference: {self.model}",
                "",
                f"**{inf.reading()}**",
                "",
                f"- suspect texts: {inf.n_suspect}; validation texts: {inf.n_validation}",
                f"- p-value {inf.p_value:.3g} (Eq. 2 over {len(inf.p_values)} A/B partitions: {p_parts})",
                f"- IID check: blind (model-free) held-out AUC {b['auc']:.3f} between the sets, p = {b['p_value']:.2g} "
                f"({b['n_test']} held-out texts per set)",
                f"- reference model: {self.reference or 'none (no ref feature)'}",
                "",
                "| feature | learned weight (negative: member-like) |",
                "| --- | --- |",
                weights,
            ]
        )

    def save(self, out_dir: str | Path) -> Path:
        """Write report.md, features.csv and audit.json into ``out_dir``, atomically."""
        out = Path(out_dir)
        check_out_dir(out)
        record = {
            "question": "collection",
            "model": self.model,
            "reference": self.reference,
            "p_value": self.inference.p_value,
            "p_values": list(self.inference.p_values),
            "weights": self.inference.weights_table(),
            "blind": self.blind,
            "settings": self.settings,
        }
        with staged_dir(out) as tmp:
            (tmp / "report.md").write_text(self.to_markdown() + "\n", encoding="utf-8")
            self.features.to_csv(tmp / "features.csv", index=False)
            (tmp / MARKER).write_text(json.dumps(record, indent=2, default=str) + "\n", encoding="utf-8")
        return out


def run_collection(
    model,
    suspect: Sequence[str],
    validation: Sequence[str],
    *,
    reference_model=None,
    revision: str | None = None,
    options: ScoringOptions | None = None,
    n_partitions: int = di.N_PARTITIONS,
    seed: int = 0,
    sources: dict | None = None,
) -> CollectionReport:
    """Dataset inference of ``model`` on ``suspect`` against ``validation`` (lists of texts); every
    cheap check, the IID one included, before any model is loaded."""
    from mimirlib.core.scoring import score_features
    from mimirlib.core.signals import ScoringOptions

    options = options if options is not None else ScoringOptions()
    check_sizes(suspect, validation)
    check_scoring(options, 1)
    check_model_name(model, "model")
    if reference_model is not None:
        check_model_name(reference_model, "reference model")
    blind = check_iid(suspect, validation, seed=seed)
    runner = connect_engine(options)
    weights = runner is None  # every feature comes from the signals: with Ray, the workers read the weights
    target = load_checked(model, "model", revision, options.dtype, weights)
    ref = load_checked(reference_model, "reference model", None, options.dtype, weights) if reference_model else None
    spec = di.feature_spec(None, ref is not None)
    texts = list(suspect) + list(validation)
    try:
        f = score_features(
            texts, target, spec, reference=ref, options=options.replace(engine=runner or "local", ray_address=None)
        )
    except ValueError as e:  # e.g. a text with fewer than 2 tokens, named in the message
        raise AuditError(f"scoring: {error_line(e)}") from None
    x = f.to_numpy()
    inference = di.infer(
        x[: len(suspect)], x[len(suspect) :], features=list(spec), n_partitions=n_partitions, seed=seed
    )
    f.insert(0, "set", ["suspect"] * len(suspect) + ["validation"] * len(validation))
    settings = {"n_partitions": n_partitions, "seed": seed, "dtype": options.dtype, **(sources or {})}
    label = model_label(reference_model) if reference_model else None
    return CollectionReport(inference, blind, f, model_label(model), label, settings)
