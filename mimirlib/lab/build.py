"""Building the embedded lab: splits, tokenizer, target suite, reference models, benchmarks.

Every stage writes into ``<cache>/lab/<profile>-<key>/`` where ``key`` hashes the lab config,
so an unchanged config reuses everything and a changed one never mixes old artifacts in.
Stages are skipped when their output exists and resumed when interrupted (training keeps a
``.partial`` folder with a resume point). ``python -m mimirlib.lab.build --profile lab``
builds it; notebooks call :func:`ensure_lab`, which builds what is missing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import ngrams
from ..data import write_records
from ..paths import cache_root
from ..profiles import load_profile
from ..progress import log
from . import corpus
from .tokenizer import train_tokenizer
from .train import DataOrder, ModelSize, TrainConfig, train

MAIN_SPLIT = "ngram_13_0.8"  # MIMIR's default: non-members with 13-gram overlap <= 80%
LOW_OVERLAP_SPLIT = "ngram_7_0.2"  # MIMIR's stricter split: non-members with 7-gram overlap <= 20%


# Settings that only change the neighbours: changing them regenerates neighbours, never models.
NEIGHBOUR_SETTINGS = ("mlm", "n_neighbors")
# Bump when a code change alters what the lab builds (splits, selection, training): a lab built
# by older code then gets a new folder instead of being silently reused.
LAB_FORMAT = 2


def config_key(cfg: dict) -> str:
    """Key of the lab folder: every setting except the neighbours' (those key the masked LM)."""
    core = {k: v for k, v in cfg.items() if k not in NEIGHBOUR_SETTINGS} | {"lab_format": LAB_FORMAT}
    return hashlib.sha256(json.dumps(core, sort_keys=True).encode()).hexdigest()[:10]


def _key(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:10]


def cut_words(text: str, n: int) -> str:
    """The first ``n`` whitespace words (line breaks kept), as MIMIR cuts samples to 200 words."""
    out, count = [], 0
    for line in text.split("\n"):
        w = line.split(" ")
        keep = []
        for tok in w:
            if tok:
                if count >= n:
                    break
                count += 1
            keep.append(tok)
        out.append(" ".join(keep))
        if count >= n:
            break
    return "\n".join(out).strip()


@dataclass
class Lab:
    """A built lab: paths to its artifacts and its manifest."""

    root: Path
    config: dict

    @property
    def manifest(self) -> dict:
        return json.loads((self.root / "lab.json").read_text())

    def model_dir(self, name: str) -> Path:
        return self.root / "models" / name

    @property
    def benchmarks_dir(self) -> Path:
        return self.root / "benchmarks"

    def target_names(self) -> list[str]:
        return [target_name(s["name"]) for s in self.config["targets"]]

    def target(self, size: str) -> str:
        """The one-epoch target of a size name (e.g. ``h64``)."""
        return target_name(size)

    def natural_twin(self) -> str:
        """The natural-data (non-deduplicated) twin of the ``natural_variant`` target."""
        return natural_name(self.config)

    def seed_replicates(self, model: str) -> list[str]:
        """``model`` and its independently trained seed replicates (other initialisation and data
        order, same recipe), in seed order; just ``[model]`` when the lab trained none."""
        return [model] + [replicate_name(model, s) for s in replicate_seeds(self.config, model)]

    def recency_control(self) -> str | None:
        """The model trained like its size's target but read at Pythia's point of the cosine
        schedule (``schedule_fraction``), or None when the lab has no such control."""
        rc = self.config.get("recency_control")
        return recency_control_name(self.config) if rc else None

    def recency_control_target(self) -> str | None:
        """The one-epoch target whose data and recipe the recency control shares (None without one)."""
        rc = self.config.get("recency_control")
        return target_name(rc["size"]) if rc else None

    def ground_truth(self, domain: str, split: str = MAIN_SPLIT) -> list[dict]:
        return [json.loads(line) for line in (self.benchmarks_dir / domain / f"{split}.truth.jsonl").open()]

    def data_order(self, model: str) -> DataOrder:
        return DataOrder.from_json(json.loads((self.model_dir(model) / "data_order.json").read_text()))

    def trained_texts(self) -> dict[str, str]:
        """Every document of the lab's domains as the models saw it (cut to ``doc_words``)."""
        return {d["id"]: cut_words(d["text"], self.config["doc_words"])
                for dom in self.config["domains"] for d in corpus.load_domain(dom)}

    def pool_texts(self, pool: str = "train", domains: list[str] | None = None) -> list[str]:
        """The texts of one pool ("train", "heldout" or "reference") as the models saw them:
        the corpus that n-gram overlap is measured against."""
        splits = self.splits()
        texts = self.trained_texts()
        return [texts[i] for d in (domains or self.config["domains"]) for i in splits[d][pool]]

    def splits(self) -> dict:
        """Per domain, the document ids of each pool: ``train``, ``heldout``, ``reference`` and the
        later-dated bins under ``later``."""
        return json.loads((self.root / "splits.json").read_text())

    def masked_lm_dir(self) -> Path:
        """The lab's masked LM (the neighbourhood attack's and the range samplers' perturber)."""
        return self.model_dir(masked_lm_name(self.config))

    def checkpoints(self, model: str) -> list[int]:
        return self.manifest["models"][model]["checkpoints"]

    def training_curves(self, model: str) -> list[dict]:
        """The losses ``model`` logged while training, one record per evaluation (``step``,
        ``tokens``, ``train_loss``, ``heldout_loss``, ...); empty if it logged none (the masked LM)."""
        f = self.model_dir(model) / "curves.json"
        return json.loads(f.read_text()) if f.exists() else []


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
        splits[domain] = {"train": perm[:a], "heldout": perm[a:b], "reference": perm[b:b + n["reference"]],
                          "later": later}
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


def build_lab(profile: str = "lab", cfg: dict | None = None, root: Path | None = None) -> Lab:
    cfg = cfg or load_profile(profile)["lab"]
    root = root or cache_root() / "lab" / f"{profile}-{config_key(cfg)}"
    root.mkdir(parents=True, exist_ok=True)
    lab = Lab(root, cfg)
    old = lab.manifest if (root / "lab.json").exists() else None
    if old and old["config"] == cfg and all((root / "models" / m).exists() for m in expected_models(cfg)):
        return lab
    # A lab built by older code may lack a model that newer code adds: the stages below skip
    # whatever exists, so only the missing piece is built and the manifest rewritten.
    timings: dict[str, dict] = dict(old["timings"]) if old and old["config"] == cfg else {}

    @contextmanager
    def stage(name):
        """Log the stage on the terminal; record its time and the process's peak memory so far."""
        log(f"lab[{profile}] stage: {name}")
        t = time.perf_counter()
        yield
        rec = {"seconds": round(time.perf_counter() - t, 1),
               "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}
        if name not in timings or rec["seconds"] >= 1.0:  # a stage skipped on a resumed build keeps its first time
            timings[name] = rec

    with stage("splits"):
        splits_file = root / "splits.json"
        if not splits_file.exists():
            _atomic_json(splits_file, make_splits(cfg))
        splits = json.loads(splits_file.read_text())
        texts, dates = {}, {}
        for domain in cfg["domains"]:
            for d in corpus.load_domain(domain):
                texts[d["id"]] = cut_words(d["text"], cfg["doc_words"])
                dates[d["id"]] = d.get("date")
    train_ids = [i for dom in cfg["domains"] for i in splits[dom]["train"]]
    idx = {i: k for k, i in enumerate(train_ids)}
    ref_ids = [i for dom in cfg["domains"] for i in splits[dom]["reference"]]

    with stage("tokenizer"):
        tok_dir = root / "tokenizer"
        if not tok_dir.exists():
            train_tokenizer((texts[i] for i in train_ids), tok_dir, cfg["tokenizer"]["vocab_size"])
        from transformers import AutoTokenizer
        tok = AutoTokenizer.from_pretrained(str(tok_dir))
        encode = lambda ids: tok([texts[i] for i in ids], add_special_tokens=False)["input_ids"]  # noqa: E731
        train_tokens = encode(train_ids)
        eval_windows = {}
        for name, ids in (("train", train_ids), ("heldout", [i for d in cfg["domains"] for i in splits[d]["heldout"]])):
            sample = [t for t in encode(ids[: cfg.get("eval_docs", 64)])]
            flat = np.array([x for t in sample for x in t + [tok.eos_token_id]], dtype=np.int64)
            L = cfg["seq_len"]
            eval_windows[name] = flat[: (len(flat) // L) * L].reshape(-1, L)[:32]

    def train_model(name: str, size: dict, ids: list[str], tokens: list[list[int]], epochs: int = 1,
                    seed: int | None = None, schedule_fraction: float = 1.0):
        out = root / "models" / name
        if out.exists():
            return
        tc = TrainConfig(size=ModelSize(**size), seq_len=cfg["seq_len"], batch_size=cfg["batch_size"], lr=cfg["lr"],
                         epochs=epochs, seed=cfg["seed"] if seed is None else seed, n_checkpoints=cfg["n_checkpoints"],
                         bf16_autocast=cfg.get("train_dtype") == "bfloat16", schedule_fraction=schedule_fraction)
        train(tc, ids, tokens, tok_dir, out, eval_windows=eval_windows)

    with stage("select benchmarks"):
        sel_file = root / "selection.json"
        if not sel_file.exists():
            _atomic_json(sel_file, select_benchmarks(cfg, splits, texts))
        selection = json.loads(sel_file.read_text())

    for size in cfg["targets"]:
        with stage(f"train target-{size['name']}"):
            train_model(target_name(size["name"]), size, train_ids, train_tokens)

    nat_size = next(s for s in cfg["targets"] if s["name"] == cfg["natural_variant"])
    copies = natural_copies(train_ids, cfg)
    nat_name = natural_name(cfg)
    with stage(f"train {nat_name}"):
        nat_ids = [i for i in train_ids for _ in range(copies.get(i, 1))]
        train_model(nat_name, nat_size, nat_ids, [train_tokens[idx[i]] for i in nat_ids])

    # Seed replicates: the same recipe and data, another initialisation and data order.
    recipes = {target_name(s["name"]): (s, train_ids, train_tokens) for s in cfg["targets"]}
    recipes[nat_name] = (nat_size, nat_ids, [train_tokens[idx[i]] for i in nat_ids])
    for base, (size, ids, toks) in recipes.items():
        for seed in replicate_seeds(cfg, base):
            with stage(f"train {replicate_name(base, seed)}"):
                train_model(replicate_name(base, seed), size, ids, toks, seed=seed)

    if cfg.get("recency_control"):
        rc = cfg["recency_control"]
        with stage(f"train {recency_control_name(cfg)}"):
            train_model(recency_control_name(cfg), next(s for s in cfg["targets"] if s["name"] == rc["size"]),
                        train_ids, train_tokens, schedule_fraction=rc["schedule_fraction"])

    for ref in cfg["references"]:
        if ref["kind"] == "disjoint":
            with stage(f"train {ref['name']}"):
                size = ref["size"]
                if isinstance(size, str):
                    size = next(s for s in cfg["targets"] if s["name"] == size)
                train_model(ref["name"], size, ref_ids, encode(ref_ids))

    if cfg.get("epochs"):
        e_cfg = cfg["epochs"]
        size = next(s for s in cfg["targets"] if s["name"] == e_cfg["size"])
        for e in e_cfg["runs"]:
            with stage(f"train {epochs_run_name(cfg, e)}"):
                ids = epoch_subset(cfg, splits, selection, e)
                train_model(epochs_run_name(cfg, e), size, ids, [train_tokens[idx[i]] for i in ids], epochs=e)
        e = max(e_cfg["runs"])
        with stage(f"train {epochs_reference_name(cfg)}"):
            ids = epoch_reference_subset(cfg, splits, e)
            train_model(epochs_reference_name(cfg), size, ids, encode(ids), epochs=e)

    with stage("benchmarks"):
        export_benchmarks(lab, selection, texts, dates, copies)

    with stage("neighbours"):
        if cfg.get("n_neighbors", 0) > 0:
            add_neighbors(lab, splits, texts)

    manifest = {"profile": profile, "config": cfg, "key": config_key(cfg), "timings": timings,
                "mlm": json.loads((lab.masked_lm_dir() / "mlm_training.json").read_text())
                if cfg.get("n_neighbors", 0) > 0 else None,
                "models": {p.name: json.loads((p / "lab_meta.json").read_text())
                           for p in sorted((root / "models").iterdir()) if (p / "lab_meta.json").exists()},
                "pools": {d: {k: len(v) for k, v in splits[d].items() if k != "later"} |
                          {f"later:{b}": len(v) for b, v in splits[d]["later"].items()} for d in cfg["domains"]}}
    _atomic_json(root / "lab.json", manifest)
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
            raise ValueError(f"lab domain {domain!r}: no member/non-member pair of >= 100 words survives "
                             f"(members {len(member_ids)}, decontaminated non-members {len(non_ids)}); "
                             f"raise doc_words/sample_words (>= 100) or the pool sizes")
        sets = {MAIN_SPLIT: (member_ids[:n], non_ids[:n])}
        ov7 = ngrams.overlaps([cut_words(texts[i], cfg["sample_words"]) for i in cands], grams7, 7)
        low = [i for i, o in zip(cands, ov7) if o <= 0.2]
        low = [low[i] for i in rng.permutation(len(low))][:n]
        if len(low) >= 10:  # a domain where almost nothing is that novel gets no such split (the chapter says so)
            sets[LOW_OVERLAP_SPLIT] = (member_ids[:len(low)], low)
        for b, ids in sp["later"].items():
            ids = [i for i in ids if len(texts[i].split()) >= 100]
            ids = [ids[j] for j in rng.permutation(len(ids))][:n]
            sets[f"temporal_{b}"] = (member_ids[:len(ids)], ids)
        if cfg.get("epochs"):
            e = min(cfg["epochs"]["members"], n)
            sets["epochs"] = (member_ids[:e], non_ids[:e])
        out[domain] = {split: {"members": m, "nonmembers": x} for split, (m, x) in sets.items()}
    return out


def expected_models(cfg: dict) -> list[str]:
    """Every model folder a complete lab of this config has (the masked LM aside)."""
    names = [target_name(s["name"]) for s in cfg["targets"]] + [natural_name(cfg)]
    names += [replicate_name(b, s) for b in names for s in replicate_seeds(cfg, b)]
    if cfg.get("recency_control"):
        names.append(recency_control_name(cfg))
    names += [r["name"] for r in cfg["references"] if r["kind"] == "disjoint"]
    if cfg.get("epochs"):
        names += [epochs_run_name(cfg, e) for e in cfg["epochs"]["runs"]] + [epochs_reference_name(cfg)]
    return names


# ---------------------------------------------------------------- model names (the lab's only naming rules)


def target_name(size: str) -> str:
    return f"target-{size}"


def natural_name(cfg: dict) -> str:
    return f"{target_name(cfg['natural_variant'])}-natural"


def masked_lm_name(cfg: dict) -> str:
    """The masked LM's folder name, keyed by its own settings (changing them retrains only it)."""
    return f"mlm-{_key(cfg['mlm'])}"


def replicate_seeds(cfg: dict, model: str) -> list[int]:
    """Training seeds of ``model``'s replicates besides the lab's own seed (config ``replicates``:
    ``sizes`` of the one-epoch targets that get them, ``natural`` for the natural-data twin too)."""
    rep = cfg.get("replicates") or {}
    bases = [target_name(s) for s in rep.get("sizes", [])]
    if rep.get("natural"):
        bases.append(natural_name(cfg))
    return list(rep.get("seeds", [])) if model in bases else []


def replicate_name(model: str, seed: int) -> str:
    return f"{model}-seed{seed}"


def recency_control_name(cfg: dict) -> str:
    rc = cfg["recency_control"]
    return f"{target_name(rc['size'])}-sched{round(100 * rc['schedule_fraction'])}"


def epochs_run_name(cfg: dict, epochs: int) -> str:
    return f"epochs-{epochs}x-{cfg['epochs']['size']}"


def epochs_reference_name(cfg: dict) -> str:
    return epochs_run_name(cfg, max(cfg["epochs"]["runs"])) + "-ref"


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


def export_benchmarks(lab: Lab, selection: dict, texts: dict, dates: dict, copies: dict) -> None:
    """MIMIR-schema benchmarks per domain and split, with a ground-truth file beside each.

    The ground truth records, for each member, the steps at which every lab model saw it
    (one span per occurrence), and whether any model saw the non-member (it never should).
    """
    cfg = lab.config
    orders = {}
    for p in sorted((lab.root / "models").iterdir()):
        if (p / "data_order.json").exists():
            orders[p.name] = json.loads((p / "data_order.json").read_text())["spans"]
    for domain, sets in selection.items():
        for split, ids in sets.items():
            pairs = list(zip(ids["members"], ids["nonmembers"]))
            rows = [{"member": cut_words(texts[a], cfg["sample_words"]),
                     "nonmember": cut_words(texts[b], cfg["sample_words"])} for a, b in pairs]
            write_records(rows, lab.benchmarks_dir / domain / f"{split}.jsonl")
            truth = [{"member_id": a, "nonmember_id": b, "member_date": dates.get(a), "nonmember_date": dates.get(b),
                      "natural_copies": copies.get(a, 1),
                      "seen_steps": {model: spans.get(a, []) for model, spans in orders.items()},
                      "nonmember_seen": {model: len(spans.get(b, [])) for model, spans in orders.items()}}
                     for a, b in pairs]
            write_records(truth, lab.benchmarks_dir / domain / f"{split}.truth.jsonl")


def add_neighbors(lab: Lab, splits: dict, texts: dict) -> None:
    """Train the lab's small masked LM on the training pool and add neighbours to each benchmark."""
    from .. import neighbors as nb
    from ..data import read_records

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
            neigh = nb.generate_neighbors([r[side] for r in rows], model, tok, n_neighbors=cfg["n_neighbors"],
                                          seed=cfg["seed"])
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
