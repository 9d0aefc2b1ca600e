"""The lab's models: which it trains (one :class:`TrainJob` each), with which recipe, how many at
once, and about how long a rebuild will take (measured rates of earlier builds)."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mimirlib.lab import reuse
from mimirlib.lab.layout import (
    LAB_FORMAT,
    Lab,
    control_seeds,
    epochs_reference_name,
    epochs_run_name,
    natural_name,
    recency_control_name,
    silo_name,
    replicate_name,
    replicate_seeds,
    replicate_training_seed,
    target_name,
)
from mimirlib.lab.stages import (
    Corpus,
    StageLog,
    add_neighbors,
    epoch_reference_subset,
    epoch_subset,
    natural_copies,
    silo_subset,
)
from mimirlib.lab.train import ModelSize, TrainConfig, train
from mimirlib.progress import log


@dataclass(frozen=True)
class TrainJob:
    """One model of the lab: its name, size, documents (in order, repeats allowed) and recipe."""

    name: str
    size: dict
    ids: list[str]
    epochs: int = 1
    seed: int | None = None  # None: the lab's seed
    schedule_fraction: float = 1.0
    from_pool: bool = True  # tokens come from the training pool's encoding (else encoded afresh)
    n_checkpoints: int | None = None  # None: the lab's n_checkpoints


def training_jobs(cfg: dict, c: Corpus, selection: dict) -> list[TrainJob]:
    """Every model of the lab, in training order: the one-epoch targets, the natural-data twin,
    the seed replicates, the recency control (with its own), the disjoint references, the epoch runs (with their seed
    replicates, where ``replicates.epoch_runs`` names them) and their shadow reference, the SILO-style
    run. Names come from :mod:`mimirlib.lab.layout`; :func:`expected_models` lists the same set."""
    size_of = {s["name"]: s for s in cfg["targets"]}
    jobs = [TrainJob(target_name(s["name"]), s, c.train_ids) for s in cfg["targets"]]
    copies = natural_copies(c.train_ids, cfg)
    nat_ids = [i for i in c.train_ids for _ in range(copies.get(i, 1))]
    jobs.append(TrainJob(natural_name(cfg), size_of[cfg["natural_variant"]], nat_ids))
    # Seed replicates: the same recipe and data, another initialisation and data order.
    jobs += [
        TrainJob(replicate_name(j.name, seed), j.size, j.ids, seed=replicate_training_seed(cfg, seed))
        for j in list(jobs)
        for seed in replicate_seeds(cfg, j.name, dedup=True)
    ]
    if cfg.get("recency_control"):
        rc = cfg["recency_control"]
        ctl = TrainJob(
            recency_control_name(cfg), size_of[rc["size"]], c.train_ids, schedule_fraction=rc["schedule_fraction"]
        )
        # its replicates: seed k's initialisation and data order are its target's seed k's (layout.control_seeds)
        jobs += [ctl] + [
            dataclasses.replace(ctl, name=replicate_name(ctl.name, s), seed=replicate_training_seed(cfg, s))
            for s in control_seeds(cfg)
        ]
    for ref in cfg["references"]:
        if ref["kind"] == "disjoint":
            size = size_of[ref["size"]] if isinstance(ref["size"], str) else ref["size"]
            jobs.append(TrainJob(ref["name"], size, c.pool("reference"), from_pool=False))
    if cfg.get("epochs"):
        size = size_of[cfg["epochs"]["size"]]
        for e in cfg["epochs"]["runs"]:
            run = TrainJob(epochs_run_name(cfg, e), size, epoch_subset(cfg, c.splits, selection, e), epochs=e)
            jobs.append(run)
            # the same run's seed replicates (replicates.epoch_runs): same documents, another initialisation and order
            jobs += [
                dataclasses.replace(run, name=replicate_name(run.name, s), seed=replicate_training_seed(cfg, s))
                for s in replicate_seeds(cfg, run.name)
            ]
        e = max(cfg["epochs"]["runs"])
        jobs.append(
            TrainJob(
                epochs_reference_name(cfg), size, epoch_reference_subset(cfg, c.splits, e), epochs=e, from_pool=False
            )
        )
    if cfg.get("silo"):
        # Checkpoints: as many log-spaced early ones as regular ones, and the regular ones every half epoch
        # (mimirlib.lab.train.checkpoint_steps), so each epoch's end is one of them.
        s = cfg["silo"]
        ids = silo_subset(cfg, c.splits, selection)
        jobs.append(
            TrainJob(silo_name(cfg), size_of[s["size"]], ids, epochs=s["epochs"], n_checkpoints=4 * s["epochs"])
        )
    return jobs


def train_config(cfg: dict, job: TrainJob) -> TrainConfig:
    """The training recipe of ``job`` under the lab config ``cfg``."""
    return TrainConfig(
        size=ModelSize(**job.size),
        seq_len=cfg["seq_len"],
        batch_size=cfg["batch_size"],
        lr=cfg["lr"],
        epochs=job.epochs,
        seed=cfg["seed"] if job.seed is None else job.seed,
        n_checkpoints=cfg["n_checkpoints"] if job.n_checkpoints is None else job.n_checkpoints,
        bf16_autocast=cfg.get("train_dtype") == "bfloat16",
        schedule_fraction=job.schedule_fraction,
    )


def job_tokens(c: Corpus, job: TrainJob) -> list[list[int]]:
    """The tokens ``job`` trains on: the training pool's one encoding, or encoded afresh."""
    return c.tokens(job.ids) if job.from_pool else c.encode(job.ids)


def job_fingerprint(lab: Lab, c: Corpus, job: TrainJob) -> str:
    """``job``'s training fingerprint (:func:`mimirlib.lab.reuse.fingerprint`) under this lab's config."""
    recipe = dataclasses.asdict(train_config(lab.config, job))
    return reuse.fingerprint(recipe, job.ids, job_tokens(c, job), c.tokenizer_dir, c.eval_windows, LAB_FORMAT)


def reuse_trained(lab: Lab, c: Corpus, jobs: list[TrainJob]) -> dict[str, str]:
    """Every job's fingerprint; a job whose model is missing here is adopted from another lab folder
    that trained it (:func:`mimirlib.lab.reuse.reuse`), one already here is recorded."""
    prints = {j.name: job_fingerprint(lab, c, j) for j in jobs}
    for j in jobs:
        out = lab.model_dir(j.name)
        if out.exists():
            reuse.record(lab.root, j.name, prints[j.name])
        elif (src := reuse.reuse(lab.root, j.name, prints[j.name], out)) is not None:
            log(f"lab reused {j.name} from {src.parent.parent.name} (same training fingerprint)")
    return prints


def train_job(lab: Lab, c: Corpus, job: TrainJob) -> None:
    """Train one model unless its folder exists (an interrupted run resumes from its ``.partial``)."""
    out = lab.model_dir(job.name)
    if out.exists():
        return
    train(train_config(lab.config, job), job.ids, job_tokens(c, job), c.tokenizer_dir, out, eval_windows=c.eval_windows)


def lab_jobs() -> int:
    """Models trained at once: ``$MIMIR_LAB_JOBS``, else 2 on a machine with at least 2 cores.

    The lab's models are tiny: one model cannot keep two cores busy (the 8k-vocabulary output layer
    and per-step overhead dominate), so two models trained side by side, one thread each, finish
    sooner than the same two trained one after the other with two threads each.
    """
    value = os.environ.get("MIMIR_LAB_JOBS")
    if value is None:
        return min(2, os.cpu_count() or 1)
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"MIMIR_LAB_JOBS must be a positive integer, got {value!r}")
    return int(value)


def die_with_parent(parent_pid: int) -> None:
    """A worker's initializer: on Linux the worker gets SIGTERM when the build that started it dies (a
    killed ``make book``), instead of training on as an orphan that starves the next run (seen: two
    such workers for 50 minutes); it exits at once if that build is already gone."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1: PR_SET_PDEATHSIG
    if os.getppid() != parent_pid:
        os._exit(1)


def _in_worker(threads: int, fn, *args) -> float:
    """Run ``fn(*args)`` in a worker process with ``threads`` torch threads; its wall time."""
    import torch

    torch.set_num_threads(threads)
    t = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t


def _train_model(lab: Lab, job: TrainJob, tokens, tokenizer_dir: Path, eval_windows: dict) -> None:
    train(
        train_config(lab.config, job),
        job.ids,
        tokens,
        tokenizer_dir,
        lab.model_dir(job.name),
        eval_windows=eval_windows,
    )


def train_models(
    lab: Lab, c: Corpus, jobs: list[TrainJob], stages: StageLog, workers: int, prints: dict[str, str]
) -> None:
    """Train every job whose model folder is missing, and add the benchmarks' neighbours (which need
    no target model): in this process when ``workers`` is 1, else in ``workers`` processes (one
    thread each when there are as many cores), neighbours and largest models first. Each model's
    own time is recorded as its stage; the wall time as "train models". ``prints``: every job's
    training fingerprint (:func:`reuse_trained`, run first), recorded as each model finishes."""
    cfg = lab.config
    neighbours = cfg.get("n_neighbors", 0) > 0
    todo = [j for j in jobs if not lab.model_dir(j.name).exists()]
    if workers <= 1 or len(todo) + neighbours <= 1:
        for job in todo:
            with stages.stage(f"train {job.name}"):
                train_job(lab, c, job)
            reuse.record(lab.root, job.name, prints[job.name])
        with stages.stage("neighbours"):
            if neighbours:
                add_neighbors(lab, c.splits, c.texts)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    threads = max(1, (os.cpu_count() or 1) // workers)
    todo.sort(key=lambda j: -train_cost(cfg, j))
    each = f"{threads} thread" + ("" if threads == 1 else "s")  # the lab sits below display (report.count_of)
    with stages.stage(f"train models ({len(todo)}, {workers} at once, {each} each)"):
        ctx = multiprocessing.get_context("spawn")  # no fork of a process holding torch's thread pools
        pool_kw = dict(mp_context=ctx, initializer=die_with_parent, initargs=(os.getpid(),))
        with ProcessPoolExecutor(max_workers=workers, **pool_kw) as pool:
            futures = {}
            if neighbours:  # the longest single task: start it first
                futures["neighbours"] = pool.submit(_in_worker, threads, add_neighbors, lab, c.splits, c.texts)
            for job in todo:
                args = (lab, job, job_tokens(c, job), c.tokenizer_dir, c.eval_windows)
                futures[f"train {job.name}"] = pool.submit(_in_worker, threads, _train_model, *args)
            for name, fut in futures.items():
                stages.record(name, fut.result())
                trained = name.removeprefix("train ")
                if trained in prints:
                    reuse.record(lab.root, trained, prints[trained])


def train_cost(cfg: dict, job: TrainJob) -> float:
    """Relative cost of a training job: tokens seen x (non-embedding parameters + output layer)."""
    h, layers = job.size["hidden"], job.size["layers"]
    return len(job.ids) * job.epochs * (12 * layers * h * h + h * cfg["tokenizer"]["vocab_size"])


def rebuild_estimate(lab: Lab, jobs: list[TrainJob], doc_tokens: float, workers: int) -> str | None:
    """One line saying what a (re)build will train and about how long it takes; None if nothing.

    How it is derived: each missing model's tokens (documents x epochs x ``doc_tokens``, the mean
    tokens of a training document plus EOS) times a seconds-per-token rate *measured*: every trained
    model records its own ``train_seconds`` and ``tokens_seen`` (``lab_meta.json``), so the rate of a
    shape (hidden, layers, seq_len, batch, bf16) is the median over the models of that shape in any
    lab under the same cache folder. A shape never measured borrows the median rate of the measured
    shapes with the same seq_len/batch/bf16, scaled by :func:`train_cost`'s per-token cost
    (``12 L h^2 + h V``). Models train ``workers`` at a time, so the wall time is the sum / workers.
    The masked LM and neighbours (a separate stage) are not in the estimate.
    """
    todo = [j for j in jobs if not lab.model_dir(j.name).exists()]
    if not todo:
        return None
    cfg = lab.config
    recipe = (cfg["seq_len"], cfg["batch_size"], cfg.get("train_dtype") == "bfloat16")
    vocab = cfg["tokenizer"]["vocab_size"]

    def per_token(h: int, layers: int) -> float:
        return 12 * layers * h * h + h * vocab

    rates: dict[tuple, list[float]] = {}
    for meta_file in sorted(lab.root.parent.glob("*/models/*/lab_meta.json")):
        try:
            meta = json.loads(meta_file.read_text())
            c, secs, toks = meta["config"], float(meta["train_seconds"]), float(meta["tokens_seen"])
            key = (c["size"]["hidden"], c["size"]["layers"], c["seq_len"], c["batch_size"], bool(c["bf16_autocast"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if toks > 0 and secs > 0:
            rates.setdefault(key, []).append(secs / toks)
    same_recipe = {k[:2]: float(np.median(v)) for k, v in rates.items() if k[2:] == recipe}
    total, scaled = 0.0, 0
    for job in todo:
        h, layers = job.size["hidden"], job.size["layers"]
        tokens = len(job.ids) * job.epochs * doc_tokens
        if (h, layers) in same_recipe:
            rate = same_recipe[(h, layers)]
        elif same_recipe:
            # a measured rate per unit of cost, scaled to this shape
            unit = np.median([r / per_token(*shape) for shape, r in same_recipe.items()])
            rate, scaled = float(unit) * per_token(h, layers), scaled + 1
        else:
            rate = None
        if rate is None:
            total = None
            break
        total += tokens * rate
    n_tokens = sum(len(j.ids) * j.epochs * doc_tokens for j in todo)
    what = f"rebuild: {len(todo)} of {len(jobs)} models to train, {n_tokens / 1e6:.2f}M tokens"
    if total is None:
        return f"{what}; no trained model of this recipe measured yet under {lab.root.parent}, so no time estimate"
    basis = f"seconds per token measured on {sum(len(v) for k, v in rates.items() if k[2:] == recipe)} model(s)"
    if scaled:
        basis += f", {scaled} shape(s) scaled by cost from the measured ones"
    return (
        f"{what}: estimate ~{total / max(workers, 1) / 60:.1f} min on {workers} worker(s) "
        f"({basis}; the neighbours stage comes on top)"
    )
