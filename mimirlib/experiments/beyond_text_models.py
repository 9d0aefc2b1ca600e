"""The models of the "RaMIA beyond text" chapter (:mod:`mimirlib.experiments.ramia_beyond_text`): one
modality's target and shadow models trained on a split of the digits (:class:`Models`), and the point scores of a
model attacked with its OUT references, LOSS and offline RMIA (:class:`Scorer`)."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mimirlib.experiments.params import Params
from mimirlib.samplers import modalities


@dataclass
class Models:
    """One modality's target and shadows, and the data they were trained on."""

    target: object
    shadows: list
    X: np.ndarray
    y: np.ndarray
    split: modalities.Split
    seconds: float
    arch: str  # the architecture both were built with (modalities.ARCHITECTURES)

    def held_out(self) -> np.ndarray:
        """Every row the target did not train on (its non-members, the attacker's pool and the population)."""
        return np.setdiff1d(np.arange(len(self.y)), self.split.target_members)

    def test_accuracy(self) -> float:
        """The target's accuracy on :meth:`held_out` (the regime row's input: the paper gives test accuracies)."""
        rows = self.held_out()
        return modalities.accuracy(self.target, self.X[rows], self.y[rows])

    def table(self, modality: str) -> pd.DataFrame:
        """Train and test accuracy of the target and (mean of) the shadows."""
        X, y, sp = self.X, self.y, self.split

        def acc(model, rows):
            return modalities.accuracy(model, X[rows], y[rows])

        test = sp.population
        shadow_train = [acc(s, sp.shadow_rows(j)) for j, s in enumerate(self.shadows)]
        return pd.DataFrame(
            [
                {
                    "modality": modality,
                    "model": "target",
                    "architecture": self.arch,
                    "training rows": len(sp.target_members),
                    "train accuracy": acc(self.target, sp.target_members),
                    "test accuracy (z)": acc(self.target, test),
                },
                {
                    "modality": modality,
                    "model": f"{len(self.shadows)} shadows (mean)",
                    "architecture": self.arch,
                    "training rows": int(sp.shadow_keep.sum(axis=1).mean()),
                    "train accuracy": float(np.mean(shadow_train)),
                    "test accuracy (z)": float(np.mean([acc(s, test) for s in self.shadows])),
                },
            ]
        )


def train_models(arch: str, p: Params, X, y, split: modalities.Split) -> Models:
    """The target of architecture ``arch`` on its members and each shadow on its half of the pool (seeded per
    model; ``p``: the chapter's ``epochs``, ``lr``, ``train_batch`` and ``seed``)."""
    t0 = time.monotonic()
    kw = dict(arch=arch, epochs=p.epochs, lr=p.lr, batch_size=p.train_batch)
    target = modalities.train_classifier(X[split.target_members], y[split.target_members], seed=p.seed, **kw)
    shadows = [
        modalities.train_classifier(X[split.shadow_rows(j)], y[split.shadow_rows(j)], seed=p.seed + 1 + j, **kw)
        for j in range(split.n_shadows)
    ]
    return Models(target, shadows, X, y, split, time.monotonic() - t0, arch)


@dataclass
class Scorer:
    """Point scores of one model attacked (``own``) with its OUT references (``refs``): LOSS and
    offline RMIA with ``a``; ``z_*``: the population's log-probabilities under each."""

    own: object
    refs: list
    z_own: np.ndarray
    z_refs: np.ndarray
    a: float

    @classmethod
    def of(cls, own, refs, X_z, y_z, a: float) -> "Scorer":
        z_own = modalities.log_prob(own, X_z, y_z)
        z_refs = np.stack([modalities.log_prob(r, X_z, y_z) for r in refs], axis=1)
        return cls(own, list(refs), z_own, z_refs, a)

    def scores(self, rows, labels, out_mask=None) -> dict[str, np.ndarray]:
        """{backbone: scores} for ``rows`` (R, ..., 64) with one label per range (R,); ``out_mask``
        (R, k): which references are OUT for each range's source (None: all of them)."""
        rows = np.asarray(rows, dtype=np.float64)
        lead = rows.shape[:-1]
        own = modalities.log_prob(self.own, rows, labels)
        refs = np.stack([modalities.log_prob(r, rows, labels) for r in self.refs], axis=-1)
        mask = np.ones((lead[0], len(self.refs)), dtype=bool) if out_mask is None else np.asarray(out_mask, bool)
        mask = np.broadcast_to(mask.reshape((lead[0],) + (1,) * (len(lead) - 1) + (len(self.refs),)), refs.shape)
        rmia = modalities.rmia_scores(
            own.ravel(),
            refs.reshape(-1, len(self.refs)),
            mask.reshape(-1, len(self.refs)),
            self.z_own,
            self.z_refs,
            a=self.a,
        )
        return {"loss": own, "rmia": rmia.reshape(lead)}
