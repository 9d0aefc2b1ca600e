"""The training-size chapter's design: which models, which windows of steps, which members and non-members, scored.

As the paper's: for the checkpoint at step *s*, members are documents seen once, entirely within
the last ``window_fraction`` of the steps before *s* (the paper: the last 100 of ~99,000 steps);
for recency, the final checkpoint is fixed and the window moves back. The non-members are the same
texts everywhere (the paper: 1,000 fixed): the first ``samples // domains`` held-out documents of
each domain's main benchmark. :func:`score_windows` scores every window's members and the fixed
non-members at the window's checkpoint.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np
import pandas as pd

from mimirlib.core.models import load_model
from mimirlib.core.scoring import score_texts
from mimirlib.core.signals import ScoringOptions
from mimirlib.experiments.window_auc import MEMBER, NONMEMBER, WINDOW
from mimirlib.lab.layout import MAIN_SPLIT, Lab, cut_words
from mimirlib.lab.train import DataOrder, ModelSize, TrainConfig, learning_rate

# Roles of the models a run scores: the chapter's targets, their seed replicates (only their seed
# spread is used), the recency control, and the control's target when the chapter's list lacks it.
TARGET, REPLICATE, CONTROL, CONTROL_TARGET = "target", "replicate", "control", "control's target"


def per_domain(samples: int, domains: Sequence[str]) -> int:
    """Members (at most) and non-members per domain in every window: ``samples`` spread evenly."""
    return max(1, int(samples) // len(domains))


def fixed_nonmembers(lab: Lab, samples: int, texts: dict[str, str] | None = None) -> pd.DataFrame:
    """The one non-member set of the chapter (columns id, domain, text): the first
    :func:`per_domain` held-out documents of each domain's main benchmark, as benchmark samples."""
    texts = lab.trained_texts() if texts is None else texts
    k = per_domain(samples, lab.config["domains"])
    ids = [(d, r["nonmember_id"]) for d in lab.config["domains"] for r in lab.ground_truth(d, MAIN_SPLIT)[:k]]
    rows = [{"id": i, "domain": d, "text": cut_words(texts[i], lab.config["sample_words"])} for d, i in ids]
    return pd.DataFrame(rows, columns=["id", "domain", "text"])


def window_members(
    lab: Lab, order: DataOrder, first: int, last: int, samples: int, seed: int = 0, texts: dict[str, str] | None = None
) -> pd.DataFrame:
    """Up to :func:`per_domain` documents of each domain seen once, entirely within steps
    ``first..last`` of ``order`` (a seeded draw), as benchmark samples (columns id, domain, text)."""
    texts = lab.trained_texts() if texts is None else texts
    ids = order.seen_in_window(max(int(first), 1), int(last))
    k = per_domain(samples, lab.config["domains"])
    rows = []
    for d in lab.config["domains"]:
        mine = [i for i in ids if i.startswith(f"{d}/")]
        mine = [mine[j] for j in np.random.default_rng(seed).permutation(len(mine))][:k]
        rows += [{"id": i, "domain": d, "text": cut_words(texts[i], lab.config["sample_words"])} for i in mine]
    return pd.DataFrame(rows, columns=["id", "domain", "text"])


def window_steps(order: DataOrder, window_fraction: float) -> int:
    """The window's width in steps: ``window_fraction`` of the run, at least one step."""
    return max(1, round(window_fraction * order.steps))


def checkpoint_windows(lab: Lab, model: str, window_fraction: float) -> pd.DataFrame:
    """For every checkpoint of ``model``: the window of steps just before it (cut at step 1)."""
    w = window_steps(lab.data_order(model), window_fraction)
    return pd.DataFrame(
        [{"model": model, "step": s, "first": max(1, s - w + 1), "last": s} for s in lab.checkpoints(model)]
    )


def recency_windows(lab: Lab, model: str, window_fraction: float, n_windows: int) -> pd.DataFrame:
    """At the final checkpoint of ``model``: ``n_windows`` successive windows of the same width, window
    *j* ending *j* widths before the last step (fewer when the run is too short)."""
    order = lab.data_order(model)
    w, final = window_steps(order, window_fraction), order.steps
    rows = [
        {
            "model": model,
            "step": final,
            "first": final - (j + 1) * w + 1,
            "last": final - j * w,
            "window": j,
            "steps_before_end": j * w,
        }
        for j in range(int(n_windows))
        if final - (j + 1) * w + 1 >= 1
    ]
    return pd.DataFrame(rows)


def roster(lab: Lab, targets: Sequence[str], seed_replicates: bool = True) -> pd.DataFrame:
    """The models a run scores (columns model, base, kind, by_step): ``targets``, their seed
    replicates (``base`` = the target), the recency control (``lab.recency_control()``) and its
    target, with their replicates too (the control's pair with its target's, seed by seed).
    ``by_step``: scored at every checkpoint (the recency analysis reads the final one)."""
    rows = []
    for t in targets:
        rows.append({"model": t, "base": t, "kind": TARGET, "by_step": True})
        if seed_replicates:
            rows += [{"model": r, "base": t, "kind": REPLICATE, "by_step": True} for r in lab.seed_replicates(t)[1:]]
    ctl = lab.recency_control()
    if ctl is not None:
        base = lab.recency_control_target()
        if base not in targets:
            rows.append({"model": base, "base": base, "kind": CONTROL_TARGET, "by_step": False})
            if seed_replicates:
                rows += [
                    {"model": r, "base": base, "kind": REPLICATE, "by_step": False}
                    for r in lab.seed_replicates(base)[1:]
                ]
        rows.append({"model": ctl, "base": ctl, "kind": CONTROL, "by_step": False})
        if seed_replicates:
            rows += [
                {"model": r, "base": ctl, "kind": REPLICATE, "by_step": False} for r in lab.seed_replicates(ctl)[1:]
            ]
    return pd.DataFrame(rows)


def final_lr_share(lab: Lab, model: str) -> float:
    """The learning rate at ``model``'s last step as a share of its peak (its recorded schedule)."""
    c = dict(lab.manifest["models"][model]["config"])
    fields = {f.name for f in dataclasses.fields(TrainConfig)}
    cfg = TrainConfig(size=ModelSize(**c.pop("size")), **{k: v for k, v in c.items() if k in fields})
    steps = lab.data_order(model).steps
    return learning_rate(cfg, steps, steps) / cfg.lr


def score_windows(
    lab: Lab,
    windows: pd.DataFrame,
    members: dict,
    nonmembers: pd.DataFrame,
    attacks: Sequence[str],
    *,
    options: ScoringOptions | None = None,
) -> pd.DataFrame:
    """Scores of each window's members and of the fixed non-members at the window's checkpoint: one
    row per (window, text, attack) with columns model, step, first, last, role, id, domain, attack,
    score. ``members[(model, first, last)]`` is that window's member frame. Each checkpoint is loaded
    once; the final one is the model itself (its signals are shared with the other chapters).
    ``options``: the dtype the checkpoints load in, and how their passes run."""
    options = options or ScoringOptions()
    dtype = options.dtype
    ref_name = lab.config["references"][0]["name"]
    needs_ref = "ref" in attacks
    reference = load_model(str(lab.model_dir(ref_name)), dtype=dtype) if needs_ref else None
    out = []
    for (model, step), ws in windows.drop_duplicates(WINDOW).groupby(["model", "step"], sort=False):
        final = step == lab.checkpoints(model)[-1]
        loaded = load_model(str(lab.model_dir(model)), None if final else f"step{step}", dtype=dtype)
        parts = {(r.first, r.last): members[(model, r.first, r.last)] for r in ws.itertuples()}
        texts = list(dict.fromkeys([t for m in parts.values() for t in m.text] + list(nonmembers.text)))
        s = score_texts(
            texts,
            loaded,
            attacks,
            references={"ref": reference} if needs_ref else None,
            options=options,
            desc=f"{model}@{step}",
        )
        s = s.rename(columns={"ref:ref": "ref"}).assign(text=texts)
        for (first, last), m in parts.items():
            both = pd.concat([m.assign(role=MEMBER), nonmembers.assign(role=NONMEMBER)], ignore_index=True)
            long = both.merge(s, on="text", how="left").melt(
                id_vars=["id", "domain", "role"], value_vars=list(attacks), var_name="attack", value_name="score"
            )
            out.append(long.assign(model=model, step=step, first=first, last=last))
    cols = WINDOW + ["role", "id", "domain", "attack", "score"]
    return pd.concat(out, ignore_index=True)[cols] if out else pd.DataFrame(columns=cols)
