"""The lab build's data stages: the pools, the tokenized corpus, the benchmark selection, the
benchmark and ground-truth files, the masked LM's neighbours and the manifest; with the stage log
that times them.

Every stage writes into the lab folder (:class:`mimirlib.lab.layout.Lab`) and skips what exists, so
a resumed build redoes nothing; :mod:`mimirlib.lab.build` runs them in order.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mimirlib.core import ngrams
from mimirlib.core.data import read_records, write_records
from mimirlib.progress import log
from mimirlib.lab import corpus, reuse
from mimirlib.lab.layout import (
    LAB_FORMAT,
    LOW_OVERLAP_SPLIT,
    MAIN_SPLIT,
    NEIGHBOUR_DEFAULTS,
    Lab,
    config_key,
    cut_words,
    neighbour_settings,
)
from mimirlib.lab.tokenizer import train_tokenizer


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


def prepare_corpus(lab: Lab, log_: StageLog) -> Corpus:
    """Stages "splits" and "tokenizer": the pools, the documents cut to ``doc_words``, the tokenizer
    trained on the training pool, the pool's tokens and the fixed evaluation windows."""
    cfg, root = lab.config, lab.root
    with log_.stage("splits"):
        splits_file = root / "splits.json"
        if not splits_file.exists():
            atomic_json(splits_file, make_splits(cfg))
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


def select_benchmarks(cfg: dict, splits: dict, texts: dict) -> dict:
    """Which documents each benchmark uses, fixed before any training (epoch runs need them).

    Members: documents of the training pool. Non-members: held-out documents whose 13-gram
    overlap with the training pool is <= 80% (the paper's decontamination, appendix A.3);
    ``ngram_7_0.2`` keeps the first of the same members and redraws non-members among held-out documents
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


def silo_subset(cfg: dict, splits: dict, selection: dict) -> list[str]:
    """SILO-PDSW in miniature (MIMIR §C.2): the whole training pool of every other domain, and of each
    ``silo.domains`` only the epochs benchmark's members, repeated ``silo.upsample`` times, so those domains
    are small shares of the mixture that one epoch shows ``upsample`` times (SILO upsamples its domains
    under 5% of the data 3x: HackerNews ends at 5.9%). Trained ``silo.epochs`` epochs, a member has been
    seen ``upsample`` x epochs times at the end."""
    s = cfg["silo"]
    unknown = [d for d in s["domains"] if d not in cfg["domains"]]
    if unknown or not cfg.get("epochs"):
        raise ValueError(
            f"lab config: silo.domains {unknown or s['domains']} must be lab domains and the lab needs an epochs "
            "section (the upsampled domains' members are the epochs benchmark's)"
        )
    ids = [i for d in cfg["domains"] if d not in s["domains"] for i in splits[d]["train"]]
    return ids + [i for d in s["domains"] for i in selection[d]["epochs"]["members"] for _ in range(s["upsample"])]


def pairs_of(rows: list[dict]) -> list[tuple[str, str]]:
    """A benchmark file's (member, non-member) pairs, without the neighbours a build may have added."""
    return [(r["member"], r["nonmember"]) for r in rows]


def export_benchmarks(lab: Lab, selection: dict, texts: dict) -> None:
    """MIMIR-schema benchmarks per domain and split (``member``/``nonmember`` pairs). A file that
    already holds the same pairs is kept as it is (with the neighbours a previous build added)."""
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
            if path.exists() and pairs_of(read_records(path)) == pairs_of(rows):
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
    """Train the lab's small masked LM on the training pool and add neighbours to each benchmark.

    ``benchmarks/neighbors.json`` records the settings each file's neighbours were made with (masked
    LM, count, seed, :func:`mimirlib.lab.layout.neighbour_settings`); a file whose neighbours were made
    otherwise gets new ones. A file with neighbours but no record predates it: made with the defaults.
    A file whose pairs and settings a sibling lab folder already has neighbours for, made by a masked
    LM of the same fingerprint, copies them (:func:`shared_neighbours`) instead of generating them."""
    from mimirlib.samplers import neighbors as nb

    cfg = lab.config
    settings = neighbour_settings(cfg)
    mlm_dir = lab.masked_lm_dir()
    train_ids = [i for d in cfg["domains"] for i in splits[d]["train"]]
    digest = hashlib.sha256("\n\x00".join(texts[i] for i in train_ids).encode()).hexdigest()
    fp = reuse.fingerprint({"mlm": cfg["mlm"], "texts": digest}, train_ids, [], None, {}, LAB_FORMAT)
    if not mlm_dir.exists() and reuse.reuse(lab.root, mlm_dir.name, fp, mlm_dir) is None:
        nb.train_masked_lm([texts[i] for i in train_ids], mlm_dir, **cfg["mlm"])
    reuse.record(lab.root, mlm_dir.name, fp)
    model, tok = nb.load_masked_lm(mlm_dir)
    base = {"mlm": mlm_dir.name, "seed": cfg["seed"]}
    wanted = base | {"n_neighbors": cfg["n_neighbors"]} | settings
    made_file = lab.benchmarks_dir / "neighbors.json"
    made = json.loads(made_file.read_text()) if made_file.exists() else {}
    for f in sorted(lab.benchmarks_dir.glob(f"*/{MAIN_SPLIT}.jsonl")):
        rel = f.relative_to(lab.benchmarks_dir).as_posix()
        rows = read_records(f)
        if rows and "member_neighbors" in rows[0]:
            legacy = base | {"n_neighbors": len(rows[0]["member_neighbors"])} | NEIGHBOUR_DEFAULTS
            if made.get(rel, legacy) == wanted:
                continue
        kw = dict(n_neighbors=cfg["n_neighbors"], seed=cfg["seed"], unit=settings["unit"], top_k=settings["top_k"])
        shared = shared_neighbours(lab, rel, rows, wanted, fp)
        if shared is not None:
            log(f"neighbours of {rel}: copied from {shared[0]}")
            rows = shared[1]
        else:
            for side in ("member", "nonmember"):
                sources = [r[side] for r in rows]
                neigh = nb.generate_neighbors(sources, model, tok, mask_fraction=settings["fraction"], **kw)
                for r, nbrs in zip(rows, neigh):
                    r[f"{side}_neighbors"] = nbrs
        write_records(rows, f)
        made[rel] = wanted
        atomic_json(made_file, made)


def shared_neighbours(lab: Lab, rel: str, rows: list[dict], wanted: dict, mlm_fp: str) -> tuple[Path, list] | None:
    """(the sibling lab folder, its rows) for benchmark file ``rel`` when a sibling's file holds the same
    member/non-member pairs as ``rows`` with neighbours made with the settings ``wanted`` by a masked
    LM of fingerprint ``mlm_fp`` (the same texts, settings and model give the same neighbours); else None."""
    sub, pairs = lab.benchmarks_dir.relative_to(lab.root), pairs_of(rows)
    for other in reuse.siblings(lab.root, wanted["mlm"], mlm_fp):
        try:
            if json.loads((other / sub / "neighbors.json").read_text()).get(rel) != wanted:
                continue
            theirs = read_records(other / sub / rel)
        except (OSError, ValueError):
            continue
        complete = all("member_neighbors" in r and "nonmember_neighbors" in r for r in theirs)
        if complete and pairs_of(theirs) == pairs:
            return other, theirs
    return None


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
    atomic_json(lab.root / "lab.json", manifest)


def atomic_json(path: Path, obj) -> None:
    """Write ``obj`` as JSON to ``path`` atomically (a temporary file, then ``os.replace``)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=1))
    os.replace(tmp, path)
