"""The SILO-style run of the epochs chapter (MIMIR §C.2, Figure 10): small domains upsampled inside a mixture.

SILO-PDSW upsamples its domains under 5% of the data 3x and trains several epochs, so the training
data grows with the upsampled domains' effective epochs; the paper reads its intermediate checkpoints.
The lab's run (``silo`` in the lab profile, :func:`mimirlib.lab.stages.silo_subset`) trains on the
whole pool of the other domains and on the epochs benchmark's members of the upsampled ones, repeated
``upsample`` times per epoch. :func:`run` scores every checkpoint on the epochs benchmark of every
domain and measures each checkpoint's *effective epochs* per domain from the recorded data order (how
many times the domain's members had been trained on, on average); the verdict reads the checkpoints
closest to each epoch's end (:func:`mimirlib.verdicts.epochs.silo_upsampled_domains`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from mimirlib.core import metrics
from mimirlib.core.data import Benchmark
from mimirlib.core.scoring import member_nonmember
from mimirlib.core.signals import ScoringOptions
from mimirlib.experiments import model_scores
from mimirlib.lab import corpus
from mimirlib.lab.layout import Lab
from mimirlib.verdicts import regime as fidelity

if TYPE_CHECKING:
    from mimirlib.lab.train import DataOrder

# The Pile domain each part of the claim is about, as mimirlib.lab.corpus.PLAYS names the lab's counterpart.
RISES = "HackerNews"  # first increases, then plateaus or drops
DROPS = "DM Mathematics"  # drops as effective epochs increase


def step_name(step: int) -> str:
    """A checkpoint's name in the scores frame's ``model`` column."""
    return f"step{step}"


def epoch_ends(checkpoints: list[int], steps: int, epochs: int) -> list[int]:
    """The checkpoint closest to the end of each of ``epochs`` epochs of a ``steps``-step run, one per
    epoch, in order; a ValueError when two epochs share one (too few checkpoints to read the curve)."""
    ends = [min(checkpoints, key=lambda c: abs(c - steps * k / epochs)) for k in range(1, epochs + 1)]
    if len(set(ends)) < len(ends):
        raise ValueError(f"checkpoints {checkpoints} cannot tell the ends of {epochs} epochs of {steps} steps apart")
    return ends


def playing(domains: list[str], role: str) -> str | None:
    """The lab domain among ``domains`` that plays the Pile domain ``role`` (:data:`corpus.PLAYS`), or None."""
    return next((d for d in domains if corpus.PLAYS.get(d, "").startswith(role)), None)


@dataclass
class SiloRun:
    """What the chapter shows of the SILO-style run, and the paired effects its verdict reads."""

    model: str
    upsampled: list[str]  # the upsampled domains, as the lab profile lists them
    upsample: int  # times per epoch
    epochs: int
    shares: dict  # each upsampled domain's share of the training documents (repeats counted)
    curve: pd.DataFrame  # AUC per (checkpoint, domain, attack): step, effective_epochs, auc, auc_lo, auc_hi
    ends: list[int]  # the checkpoint closest to each epoch's end
    early: pd.DataFrame  # AUC(end of epoch 2) - AUC(end of epoch 1) per (domain, attack), paired
    bend: pd.DataFrame  # [AUC(last end) - AUC(the end before)] - early per (domain, attack), paired
    change: pd.DataFrame  # AUC(last end) - AUC(end of epoch 1) per (domain, attack), paired
    n_members: int = 0  # per domain (as many non-members)
    seed_note: str = ""
    rises: str | None = None  # the upsampled domain playing HackerNews
    drops: str | None = None  # the upsampled domain playing DM Mathematics
    distinct: dict | None = None  # each upsampled domain's share of the distinct documents (before upsampling)

    def regime(self) -> list:
        """The fidelity rows the verdict rests on: each upsampled domain's share (:func:`regime.upsampled_share`)."""
        return [fidelity.upsampled_share(d, self.distinct[d], self.shares[d], self.upsample) for d in self.upsampled]

    def effective(self, step: int, domain: str) -> float:
        c = self.curve
        return float(c[(c.step == step) & (c.domain == domain)].effective_epochs.iloc[0])


def score_checkpoints(
    lab: Lab, model: str, benches: dict[str, Benchmark], attacks: list[str], options: ScoringOptions, **kw
) -> pd.DataFrame:
    """Per-text scores of every checkpoint of ``model`` (``model`` column: :func:`step_name`), as
    :func:`mimirlib.experiments.model_scores.score_targets` returns."""
    targets = {step_name(s): (model, step_name(s)) for s in lab.checkpoints(model)}
    return model_scores.score_targets(lab, targets, benches, attacks, options=options, **kw)


def effective_epochs(lab: Lab, model: str, order: DataOrder, domains: list[str], split: str) -> pd.DataFrame:
    """Per (checkpoint, domain): how many times the domain's benchmark members had been trained on, on average
    (``order``: ``model``'s data order)."""
    rows = []
    for d in domains:
        ids = [t["member_id"] for t in lab.ground_truth(d, split)]
        for step in lab.checkpoints(model):
            rows.append(
                {
                    "model": step_name(step),
                    "domain": d,
                    "effective_epochs": float(np.mean([order.seen_by(i, step) for i in ids])),
                }
            )
    return pd.DataFrame(rows)


def bends(scores: pd.DataFrame, ends: list[int], spread: pd.DataFrame | None, *, n_bootstrap: int, seed: int):
    """[AUC(last end) - AUC(the end before)] - [AUC(second end) - AUC(first end)] per (domain, attack), by
    ``metrics.paired_gain_difference`` on the same texts; seed sd 2 x the AUC's (four AUCs; imputed)."""
    a_new, a_old, b_new, b_old = (step_name(s) for s in (ends[-1], ends[-2], ends[1], ends[0]))
    rows = []
    for d in pd.unique(scores.domain):
        at = {m: model_scores.texts_of(scores, m, d) for m in (a_new, a_old, b_new, b_old)}
        for c in model_scores.attacks_in(scores):
            g = metrics.paired_gain_difference(
                *(member_nonmember(at[m], c) for m in (a_new, a_old, b_new, b_old)), n_resamples=n_bootstrap, seed=seed
            )
            rows.append({"domain": d, "attack": c, "estimate": g.point, "lo": g.lo, "hi": g.hi})
    return model_scores.with_spread(pd.DataFrame(rows), spread, factor=2.0)


def run(
    lab: Lab,
    benches: dict[str, Benchmark],
    attacks: list[str],
    *,
    split: str,
    options: ScoringOptions,
    spread: pd.DataFrame | None,
    seed_note: str,
    attack_params: dict | None = None,
    n_bootstrap: int = 1000,
    seed: int = 0,
) -> SiloRun | None:
    """Score the lab's SILO-style run (None when the lab has none) at every checkpoint; its AUC curve per
    domain against effective epochs, and the paired effects between epoch ends. ``spread``: the AUC's seed
    sd per (domain, attack) of a comparable model (:func:`mimirlib.experiments.epochs.seed_spread`), imputed
    to the run's differences (one training seed); ``benches``: the ``split`` benchmark of each domain, whose
    members the run upsampled."""
    model = lab.silo_run()
    if model is None:
        return None
    cfg = lab.config["silo"]
    meta = lab.manifest["models"][model]
    ends = epoch_ends(lab.checkpoints(model), meta["steps"], cfg["epochs"])
    scores = score_checkpoints(lab, model, benches, attacks, options, attack_params=attack_params)
    boot = dict(n_bootstrap=n_bootstrap, seed=seed)
    curve = model_scores.auc_table(scores, ("model", "domain"), **boot)
    order = lab.data_order(model)
    curve = curve.merge(effective_epochs(lab, model, order, list(benches), split), on=["model", "domain"])
    curve.insert(0, "step", curve.model.str.removeprefix("step").astype(int))
    first, second, last = (step_name(s) for s in (ends[0], ends[1], ends[-1]))
    spans = order.spans  # document -> one span per time it was trained on
    seen = sum(len(v) for v in spans.values())
    shares = {d: sum(len(v) for k, v in spans.items() if k.startswith(f"{d}/")) / seen for d in cfg["domains"]}
    distinct = {d: sum(k.startswith(f"{d}/") for k in spans) / len(spans) for d in cfg["domains"]}
    return SiloRun(
        model,
        list(cfg["domains"]),
        int(cfg["upsample"]),
        int(cfg["epochs"]),
        shares,
        curve.drop(columns="model"),
        ends,
        model_scores.model_effects(scores, second, first, spread=spread, **boot),
        bends(scores, ends, spread, **boot),
        model_scores.model_effects(scores, last, first, spread=spread, **boot),
        min(len(b.members) for b in benches.values()),
        seed_note,
        playing(list(cfg["domains"]), RISES),
        playing(list(cfg["domains"]), DROPS),
        distinct,
    )


def glue_values(silo: SiloRun | None) -> dict:
    """The values the chapter's SILO section names (``silo_*``), in words where the lab has no such run."""
    if silo is None:
        none = "(no SILO-style run in this lab)"
        return {k: none for k in ("silo_domains", "silo_upsample", "silo_epochs", "silo_shares", "silo_ends")}
    return {
        "silo_domains": " and ".join(f"{d} ({corpus.PLAYS.get(d, d).split(' (')[0]})" for d in silo.upsampled),
        "silo_upsample": silo.upsample,
        "silo_epochs": silo.epochs,
        "silo_shares": ", ".join(f"{d} {s:.1%}" for d, s in silo.shares.items()),
        "silo_ends": ", ".join(
            f"{k} ({', '.join(f'{d} {silo.effective(e, d):.1f}' for d in silo.upsampled)})"
            for k, e in enumerate(silo.ends, 1)
        ),
    }


def figure(silo: SiloRun | None):
    """AUC of each attack against effective epochs, one line per upsampled domain (every checkpoint after
    the first half epoch: the early log-spaced ones sit near 0 effective epochs; of two with the same effective
    epochs, the later); a note without a run."""
    import matplotlib.pyplot as plt

    from mimirlib.display import plots

    if silo is None:
        fig, ax = plt.subplots(figsize=(5, 1))
        ax.axis("off")
        ax.text(0.5, 0.5, "this lab has no SILO-style run (lab profile: silo)", ha="center", va="center")
        return fig
    c = silo.curve[silo.curve.domain.isin(silo.upsampled) & (silo.curve.step >= silo.ends[0] // 2)]
    # two checkpoints with no member of a domain trained on in between share its effective epochs: the later stands
    c = c.sort_values("step").drop_duplicates(["domain", "attack", "effective_epochs"], keep="last")
    return plots.plot_metric_vs(c, x="effective_epochs", hue="domain", col="attack", col_wrap=5)


def effects_table(silo: SiloRun | None) -> pd.DataFrame:
    """Per upsampled domain and attack: the AUC at the first, second and last epoch ends, the early change,
    the bend and the whole change, each with its paired 95% interval, and the imputed seed sd of a
    two-checkpoint difference."""
    if silo is None:
        return pd.DataFrame()
    k = silo.epochs
    key = ["domain", "attack"]
    e, b, c = (f[f.domain.isin(silo.upsampled)].set_index(key) for f in (silo.early, silo.bend, silo.change))
    out = pd.DataFrame(
        {
            "AUC e1": e.auc_b,
            "AUC e2": e.auc_a,
            f"AUC e{k}": c.auc_a,
            "e2 - e1": _with_interval(e),
            "bend": _with_interval(b),
            f"e{k} - e1": _with_interval(c),
            "seed sd (imputed)": e.seed_sd,
        }
    )
    return out.round(3)


def _with_interval(effects: pd.DataFrame) -> list[str]:
    return [f"{x:+.3f} [{lo:+.3f}, {hi:+.3f}]" for x, lo, hi in zip(effects.estimate, effects.lo, effects.hi)]
