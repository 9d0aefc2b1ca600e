"""Building the embedded lab: splits, tokenizer, target suite, reference models, benchmarks.

Every stage writes into ``<cache>/lab/<profile>-<key>/`` where ``key`` hashes the lab config,
so an unchanged config reuses everything and a changed one never mixes old artifacts in.
Stages are skipped when their output exists and resumed when interrupted (training keeps a
``.partial`` folder with a resume point). ``python -m mimirlib.lab.build --profile lab``
builds it; notebooks call :func:`ensure_lab`, which builds what is missing.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mimirlib.core import ngrams
from mimirlib.core.data import write_records
from mimirlib.paths import cache_root
from mimirlib.profiles import load_profile
from mimirlib.progress import log
from mimirlib.lab import corpus
from mimirlib.lab.layout import (
    MAIN_SPLIT,
    LOW_OVERLAP_SPLIT,
    Lab,
    config_key,
    cut_words,
    epochs_reference_name,
    epochs_run_name,
    expected_models,
    natural_name,
    recency_control_name,
    replicate_name,
    replicate_seeds,
    target_name,
)
from mimirlib.lab.tokenizer import train_tokenizer
from mimirlib.lab.train import ModelSize, TrainConfig, train


# ---------------------------------------------------------------- stages


def make_splits(cfg: dict) -> dict:
    """Per domain: training pool, held-out pool (non-members), disjoint reference pool, later-dated bins."""
    rng = np.random.default_rng(cfg["seed"])
    splits = {}
    for domain in cfg["domains"]:
        # Exact duplicates (flagged ``dup_of`` in the snapshot) are dropped, so no non-member is a
        # verbatim copy of a member; the "natural" variant re-adds repetition deliberately.
        docs = [d for d in corpus.load_domain(domain) if not d.get("dup_of")]
        temporal = cfg.get("temporal") or {}
        later = {}
        if temporal.get("domain") == domain:
            cutoff = temporal["cutoff"]
            dated = [d for d in docs if d.get("date")]
            docs = [d for d in dated if d["date"] < cutoff]
            for b in temporal["bins"]:
                inbin = [d["id"] for d in dated if b["start"] <= d["date"] < b["end"]]
                later[b["name"]] = sorted(inbin)
        ids = [d["id"] for d in docs]
        perm = [ids[i] for i in rng.permutation(len(ids))]
        n = cfg["per_domain"]
        need = n["train"] + n["heldout"] + n["reference"]
        if len(perm) < need:
            scale = len(perm) / need
            n = {k: int(v * scale) for k, v in n.items()}
            log(f"{domain}: {len(perm)} documents, fewer than {need}; pools scaled to {n}")
        a, b = n["train"], n["train"] + n["heldout"]
        splits[domain] = {
            "train": perm[:a],
            "heldout": perm[a:b],
            "reference": perm[b : b + n["reference"]],
            "later": later,
        }
    return splits


def natural_copies(train_ids: list[str], cfg: dict) -> dict[str, int]:
    """The "natural" (non-deduplicated) variant repeats a fraction of documents, as web data does."""
    nat = cfg["natural_duplication"]
    rng = np.random.default_rng(cfg["seed"] + 1)
    copies = {}
    for doc in train_ids:
        if rng.random() < nat["fraction"]:
            copies[doc] = int(rng.integers(2, nat["max_copies"] + 1))
    return copies


class StageLog:
    """Logs each stage on the terminal and records its time and the process's peak memory so far
    (a stage skipped on a resumed build keeps its first time)."""

    def __init__(self, profile: str, timings: dict[str, dict]):
        self.profile, self.timings = profile, timings

    @contextmanager
    def stage(self, name: str):
        log(f"lab[{self.profile}] stage: {name}")
        t = time.perf_counter()
        yield
        rec = {
            "seconds": round(time.perf_counter() - t, 1),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        }
        if name not in self.timings or rec["seconds"] >= 1.0:
            self.timings[name] = rec

    def record(self, name: str, seconds: float) -> None:
        """A stage run elsewhere (a training worker): its own time; peak memory is the largest child's."""
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        self.timings[name] = {"seconds": round(seconds, 1), "peak_rss_mb": round(rss)}
        log(f"lab[{self.profile}] done {name} in {seconds:.0f} s")


@dataclass
class Corpus:
    """The lab's documents as the models see them, tokenized: what every training stage reads."""

    splits: dict
    texts: dict[str, str]
    dates: dict[str, str | None]
    tokenizer_dir: Path
    tokenizer: object
    train_ids: list[str]
    train_tokens: list[list[int]]
    eval_windows: dict[str, np.ndarray]

    def encode(self, ids: list[str]) -> list[list[int]]:
        return self.tokenizer([self.texts[i] for i in ids], add_special_tokens=False)["input_ids"]

    def tokens(self, ids: list[str]) -> list[list[int]]:
        """Token lists of training-pool documents (repeats allowed), from the one encoding of the pool."""
        pos = {d: k for k, d in enumerate(self.train_ids)}
        return [self.train_tokens[pos[i]] for i in ids]

    def pool(self, name: str) -> list[str]:
        return [i for d in self.splits for i in self.splits[d][name]]


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


def prepare_corpus(lab: Lab, log_: StageLog) -> Corpus:
    """Stages "splits" and "tokenizer": the pools, the documents cut to ``doc_words``, the tokenizer
    trained on the training pool, the pool's tokens and the fixed evaluation windows."""
    cfg, root = lab.config, lab.root
    with log_.stage("splits"):
        splits_file = root / "splits.json"
        if not splits_file.exists():
            _atomic_json(splits_file, make_splits(cfg))
        splits = lab.splits()
        texts, dates = {}, {}
        for domain in cfg["domains"]:
            for d in corpus.load_domain(domain):
                texts[d["id"]] = cut_words(d["text"], cfg["doc_words"])
                dates[d["id"]] = d.get("date")
    train_ids = [i for dom in cfg["domains"] for i in splits[dom]["train"]]
    with log_.stage("tokenizer"):
        tok_dir = root / "tokenizer"
        if not tok_dir.exists():
            train_tokenizer((texts[i] for i in train_ids), tok_dir, cfg["tokenizer"]["vocab_size"])
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(str(tok_dir))
        c = Corpus(splits, texts, dates, tok_dir, tok, train_ids, [], {})
        c.train_tokens = c.encode(train_ids)
        for name, ids in (("train", train_ids), ("heldout", [i for d in cfg["domains"] for i in splits[d]["heldout"]])):
            sample = c.encode(ids[: cfg.get("eval_docs", 64)])
            flat = np.array([x for t in sample for x in t + [tok.eos_token_id]], dtype=np.int64)
            L = cfg["seq_len"]
            c.eval_windows[name] = flat[: (len(flat) // L) * L].reshape(-1, L)[:32]
    return c


def training_jobs(cfg: dict, c: Corpus, selection: dict) -> list[TrainJob]:
    """Every model of the lab, in training order: the one-epoch targets, the natural-data twin,
    the seed replicates, the recency control, the disjoint references, the epoch runs and their
    shadow reference. Names come from :mod:`mimirlib.lab.layout`; :func:`expected_models` lists
    the same set."""
    size_of = {s["name"]: s for s in cfg["targets"]}
    jobs = [TrainJob(target_name(s["name"]), s, c.train_ids) for s in cfg["targets"]]
    copies = natural_copies(c.train_ids, cfg)
    nat_ids = [i for i in c.train_ids for _ in range(copies.get(i, 1))]
    jobs.append(TrainJob(natural_name(cfg), size_of[cfg["natural_variant"]], nat_ids))
    # Seed replicates: the same recipe and data, another initialisation and data order.
    jobs += [
        TrainJob(replicate_name(j.name, seed), j.size, j.ids, seed=seed)
        for j in list(jobs)
        for seed in replicate_seeds(cfg, j.name)
    ]
    if cfg.get("recency_control"):
        rc = cfg["recency_control"]
        jobs.append(
            TrainJob(
                recency_control_name(cfg), size_of[rc["size"]], c.train_ids, schedule_fraction=rc["schedule_fraction"]
            )
        )
    for ref in cfg["references"]:
        if ref["kind"] == "disjoint":
            size = size_of[ref["size"]] if isinstance(ref["size"], str) else ref["size"]
            jobs.append(TrainJob(ref["name"], size, c.pool("reference"), from_pool=False))
    if cfg.get("epochs"):
        size = size_of[cfg["epochs"]["size"]]
        for e in cfg["epochs"]["runs"]:
            jobs.append(TrainJob(epochs_run_name(cfg, e), size, epoch_subset(cfg, c.splits, selection, e), epochs=e))
        e = max(cfg["epochs"]["runs"])
        jobs.append(
            TrainJob(
                epochs_reference_name(cfg), size, epoch_reference_subset(cfg, c.splits, e), epochs=e, from_pool=False
            )
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
        n_checkpoints=cfg["n_checkpoints"],
        bf16_autocast=cfg.get("train_dtype") == "bfloat16",
        schedule_fraction=job.schedule_fraction,
    )


def train_job(lab: Lab, c: Corpus, job: TrainJob) -> None:
    """Train one model unless its folder exists (an interrupted run resumes from its ``.partial``)."""
    out = lab.model_dir(job.name)
    if out.exists():
        return
    tokens = c.tokens(job.ids) if job.from_pool else c.encode(job.ids)
    train(train_config(lab.config, job), job.ids, tokens, c.tokenizer_dir, out, eval_windows=c.eval_windows)


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


def train_models(lab: Lab, c: Corpus, jobs: list[TrainJob], stages: StageLog, workers: int) -> None:
    """Train every job whose model folder is missing, and add the benchmarks' neighbours (which need
    no target model): in this process when ``workers`` is 1, else in ``workers`` processes (one
    thread each when there are as many cores), neighbours and largest models first. Each model's
    own time is recorded as its stage; the wall time as "train models"."""
    cfg = lab.config
    neighbours = cfg.get("n_neighbors", 0) > 0
    todo = [j for j in jobs if not lab.model_dir(j.name).exists()]
    if workers <= 1 or len(todo) + neighbours <= 1:
        for job in jobs:
            with stages.stage(f"train {job.name}"):
                train_job(lab, c, job)
        with stages.stage("neighbours"):
            if neighbours:
                add_neighbors(lab, c.splits, c.texts)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    threads = max(1, (os.cpu_count() or 1) // workers)
    todo.sort(key=lambda j: -train_cost(cfg, j))
    with stages.stage(f"train models ({len(todo)}, {workers} at once, {threads} thread(s) each)"):
        ctx = multiprocessing.get_context("spawn")  # no fork of a process holding torch's thread pools
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            futures = {}
            if neighbours:  # the longest single task: start it first
                futures["neighbours"] = pool.submit(_in_worker, threads, add_neighbors, lab, c.splits, c.texts)
            for job in todo:
                tokens = c.tokens(job.ids) if job.from_pool else c.encode(job.ids)
                args = (lab, job, tokens, c.tokenizer_dir, c.eval_windows)
                futures[f"train {job.name}"] = pool.submit(_in_worker, threads, _train_model, *args)
            for name, fut in futures.items():
                stages.record(name, fut.result())


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


def write_manifest(lab: Lab, profile: str, splits: dict, timings: dict) -> None:
    """``lab.json``: the config, its key, stage timings, the masked LM's and every model's record,
    and the pool sizes. Written last: a lab without it is incomplete."""
    cfg = lab.config
    models = lab.root / "models"
    manifest = {
        "profile": profile,
        "config": cfg,
        "key": config_key(cfg),
        "timings": timings,
        "mlm": json.loads((lab.masked_lm_dir() / "mlm_training.json").read_text())
        if cfg.get("n_neighbors", 0) > 0
        else None,
        "models": {
            p.name: json.loads((p / "lab_meta.json").read_text())
            for p in sorted(models.iterdir())
            if (p / "lab_meta.json").exists()
        },
        "pools": {
            d: {k: len(v) for k, v in splits[d].items() if k != "later"}
            | {f"later:{b}": len(v) for b, v in splits[d]["later"].items()}
            for d in cfg["domains"]
        },
    }
    _atomic_json(lab.root / "lab.json", manifest)


def build_lab(profile: str = "lab", cfg: dict | None = None, root: Path | None = None) -> Lab:
    """Build (or complete) the lab of ``profile``: corpus and tokenizer, benchmark selection, every
    model of :func:`training_jobs`, the benchmark files, the neighbours, then the manifest."""
    cfg = cfg or load_profile(profile)["lab"]
    root = root or cache_root() / "lab" / f"{profile}-{config_key(cfg)}"
    root.mkdir(parents=True, exist_ok=True)
    lab = Lab(root, cfg)
    old = lab.manifest if (root / "lab.json").exists() else None
    if old and old["config"] == cfg and all(lab.model_dir(m).exists() for m in expected_models(cfg)):
        return lab
    # A lab built by older code may lack a model that newer code adds: the stages below skip
    # whatever exists, so only the missing piece is built and the manifest rewritten.
    stages = StageLog(profile, dict(old["timings"]) if old and old["config"] == cfg else {})
    c = prepare_corpus(lab, stages)
    with stages.stage("select benchmarks"):
        sel_file = root / "selection.json"
        if not sel_file.exists():
            _atomic_json(sel_file, select_benchmarks(cfg, c.splits, c.texts))
        selection = json.loads(sel_file.read_text())
    with stages.stage("benchmarks"):
        export_benchmarks(lab, selection, c.texts)
    jobs = training_jobs(cfg, c, selection)
    doc_tokens = float(np.mean([len(t) + 1 for t in c.train_tokens])) if c.train_tokens else 0.0
    estimate = rebuild_estimate(lab, jobs, doc_tokens, lab_jobs())
    if estimate:
        log(f"lab[{profile}] {estimate}")
    train_models(lab, c, jobs, stages, lab_jobs())  # and the neighbours
    with stages.stage("ground truth"):
        export_ground_truth(lab, selection, c.dates, natural_copies(c.train_ids, cfg))
    write_manifest(lab, profile, c.splits, stages.timings)
    return lab


def select_benchmarks(cfg: dict, splits: dict, texts: dict) -> dict:
    """Which documents each benchmark uses, fixed before any training (epoch runs need them).

    Members: documents of the training pool. Non-members: held-out documents whose 13-gram
    overlap with the training pool is <= 80% (the paper's decontamination, appendix A.3);
    ``ngram_7_0.2`` keeps the same members and redraws non-members among held-out documents
    with 7-gram overlap <= 20% (Table 2), as many as survive; temporal splits draw
    non-members from the later-dated bins instead. The ``epochs``
    benchmark uses the first ``epochs.members`` members, which every epoch run trains on.
    """
    rng = np.random.default_rng(cfg["seed"] + 2)
    train_all = [texts[i] for d in cfg["domains"] for i in splits[d]["train"]]
    grams13 = ngrams.ngram_set(train_all, 13)
    grams7 = ngrams.ngram_set(train_all, 7)
    k = cfg["members"]
    out = {}
    for domain in cfg["domains"]:
        sp = splits[domain]
        member_ids = [sp["train"][i] for i in rng.permutation(len(sp["train"]))]
        member_ids = [i for i in member_ids if len(texts[i].split()) >= 100][:k]
        cands = [i for i in sp["heldout"] if len(texts[i].split()) >= 100]
        ov = ngrams.overlaps([cut_words(texts[i], cfg["sample_words"]) for i in cands], grams13, 13)
        non_ids = [i for i, o in zip(cands, ov) if o <= 0.8]
        non_ids = [non_ids[i] for i in rng.permutation(len(non_ids))][:k]
        n = min(len(member_ids), len(non_ids))
        if n == 0:
            raise ValueError(
                f"lab domain {domain!r}: no member/non-member pair of >= 100 words survives "
                f"(members {len(member_ids)}, decontaminated non-members {len(non_ids)}); "
                f"raise doc_words/sample_words (>= 100) or the pool sizes"
            )
        sets = {MAIN_SPLIT: (member_ids[:n], non_ids[:n])}
        ov7 = ngrams.overlaps([cut_words(texts[i], cfg["sample_words"]) for i in cands], grams7, 7)
        low = [i for i, o in zip(cands, ov7) if o <= 0.2]
        low = [low[i] for i in rng.permutation(len(low))][:n]
        if len(low) >= 10:  # a domain where almost nothing is that novel gets no such split (the chapter says so)
            sets[LOW_OVERLAP_SPLIT] = (member_ids[: len(low)], low)
        for b, ids in sp["later"].items():
            ids = [i for i in ids if len(texts[i].split()) >= 100]
            ids = [ids[j] for j in rng.permutation(len(ids))][:n]
            sets[f"temporal_{b}"] = (member_ids[: len(ids)], ids)
        if cfg.get("epochs"):
            e = min(cfg["epochs"]["members"], n)
            sets["epochs"] = (member_ids[:e], non_ids[:e])
        out[domain] = {split: {"members": m, "nonmembers": x} for split, (m, x) in sets.items()}
    return out


def epoch_reference_subset(cfg: dict, splits: dict, epochs: int) -> list[str]:
    """The RaMIA chapter's reference model trains like the most-epochs run, on documents of the
    disjoint reference pool only: an attacker's shadow model, whose own members it knows (it
    tunes the range attack on it, never on the target's labels)."""
    e_cfg = cfg["epochs"]
    per = e_cfg["members"]
    first = [i for d in cfg["domains"] for i in splits[d]["reference"][:per]]
    rest = [i for d in cfg["domains"] for i in splits[d]["reference"][per:]]
    size = max(len(first), e_cfg["budget_docs"] // epochs)
    return first + rest[: size - len(first)]


def epoch_subset(cfg: dict, splits: dict, selection: dict, epochs: int) -> list[str]:
    """The Datablations design: a fixed token budget spent as ``epochs`` passes over a subset
    of ``1/epochs`` of the budget's documents, always containing the epochs benchmark's members."""
    e_cfg = cfg["epochs"]
    must = [i for d in cfg["domains"] for i in selection[d]["epochs"]["members"]]
    rest = [i for d in cfg["domains"] for i in splits[d]["train"] if i not in set(must)]
    rest = [rest[j] for j in np.random.default_rng(cfg["seed"] + 3).permutation(len(rest))]
    size = max(len(must), e_cfg["budget_docs"] // epochs)
    return must + rest[: size - len(must)]


def export_benchmarks(lab: Lab, selection: dict, texts: dict) -> None:
    """MIMIR-schema benchmarks per domain and split (``member``/``nonmember`` pairs). A file that
    already holds the same pairs is kept as it is (with the neighbours a previous build added)."""
    from mimirlib.core.data import read_records

    cfg = lab.config
    for domain, sets in selection.items():
        for split, ids in sets.items():
            rows = [
                {
                    "member": cut_words(texts[a], cfg["sample_words"]),
                    "nonmember": cut_words(texts[b], cfg["sample_words"]),
                }
                for a, b in zip(ids["members"], ids["nonmembers"])
            ]
            path = lab.benchmarks_dir / domain / f"{split}.jsonl"
            if path.exists() and [{k: r[k] for k in ("member", "nonmember")} for r in read_records(path)] == rows:
                continue
            write_records(rows, path)


def export_ground_truth(lab: Lab, selection: dict, dates: dict, copies: dict) -> None:
    """A ground-truth file beside each benchmark: for each member, the steps at which every lab
    model saw it (one span per occurrence), and whether any model saw the non-member (it never should)."""
    orders = {}
    for p in sorted((lab.root / "models").iterdir()):
        if (p / "data_order.json").exists():
            orders[p.name] = json.loads((p / "data_order.json").read_text())["spans"]
    for domain, sets in selection.items():
        for split, ids in sets.items():
            truth = [
                {
                    "member_id": a,
                    "nonmember_id": b,
                    "member_date": dates.get(a),
                    "nonmember_date": dates.get(b),
                    "natural_copies": copies.get(a, 1),
                    "seen_steps": {model: spans.get(a, []) for model, spans in orders.items()},
                    "nonmember_seen": {model: len(spans.get(b, [])) for model, spans in orders.items()},
                }
                for a, b in zip(ids["members"], ids["nonmembers"])
            ]
            write_records(truth, lab.benchmarks_dir / domain / f"{split}.truth.jsonl")


def add_neighbors(lab: Lab, splits: dict, texts: dict) -> None:
    """Train the lab's small masked LM on the training pool and add neighbours to each benchmark."""
    from mimirlib.samplers import neighbors as nb
    from mimirlib.core.data import read_records

    cfg = lab.config
    mlm_dir = lab.masked_lm_dir()
    if not mlm_dir.exists():
        train_texts = [texts[i] for d in cfg["domains"] for i in splits[d]["train"]]
        nb.train_masked_lm(train_texts, mlm_dir, **cfg["mlm"])
    model, tok = nb.load_masked_lm(mlm_dir)
    for f in sorted(lab.benchmarks_dir.glob(f"*/{MAIN_SPLIT}.jsonl")):
        rows = read_records(f)
        if rows and "member_neighbors" in rows[0]:
            continue
        for side in ("member", "nonmember"):
            neigh = nb.generate_neighbors(
                [r[side] for r in rows], model, tok, n_neighbors=cfg["n_neighbors"], seed=cfg["seed"]
            )
            for r, nbrs in zip(rows, neigh):
                r[f"{side}_neighbors"] = nbrs
        write_records(rows, f)


def _atomic_json(path: Path, obj) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=1))
    os.replace(tmp, path)


def ensure_lab(profile: str = "lab") -> Lab:
    """The built lab for ``profile``, building whatever is missing."""
    return build_lab(profile)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Build the embedded lab (corpus splits, tokenizer, models, benchmarks).")
    ap.add_argument("--profile", default="lab", help="smoke (minutes, for tests) or lab (the book's default)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    lab = build_lab(args.profile)
    m = lab.manifest
    for name, t in m["timings"].items():
        print(f"{name:40s} {t['seconds']:8.1f} s  peak RSS {t['peak_rss_mb']:6d} MB")
    print(f"lab ready at {lab.root} ({time.perf_counter() - t0:.0f} s this run)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
