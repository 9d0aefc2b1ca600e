"""The embedded lab's read side: where each artifact of a built lab lives and what every model is called.

One place owns the lab's layout and naming (:class:`Lab` and the ``*_name`` functions); the
build (:mod:`mimirlib.lab.build`) writes what this module names, and chapters read a lab only
through it, never by assembling a path or a model name themselves.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from mimirlib.lab import corpus

MAIN_SPLIT = "ngram_13_0.8"  # MIMIR's default: non-members with 13-gram overlap <= 80%
LOW_OVERLAP_SPLIT = "ngram_7_0.2"  # MIMIR's stricter split: non-members with 7-gram overlap <= 20%


# Settings that only change the neighbours: changing them regenerates neighbours, never models.
NEIGHBOUR_SETTINGS = ("mlm", "n_neighbors", "neighbors")
# The ``neighbors`` key's fields, and their values when absent: the lab's neighbours before the
# key existed (generate_neighbors' token unit at 5%), so older labs' neighbours stay valid.
NEIGHBOUR_DEFAULTS = {"unit": "token", "fraction": 0.05, "top_k": None}
NEIGHBOUR_UNITS = ("token", "word")  # mimirlib.samplers.neighbors.UNITS
# Bump when a code change alters what the lab builds (splits, selection, training): a lab built
# by older code then gets a new folder instead of being silently reused.
LAB_FORMAT = 2


def resolve_train_dtype(cfg: dict) -> dict:
    """``cfg`` with ``train_dtype: fast`` resolved for this machine (``bfloat16`` where the CPU computes it
    natively, else ``float32``; :func:`mimirlib.core.models.native_bf16`), so the lab's key and folder
    name what was trained."""
    if cfg.get("train_dtype") != "fast":
        return cfg
    import torch

    from mimirlib.core.models import native_bf16

    return cfg | {"train_dtype": "bfloat16" if native_bf16(torch.device("cpu")) else "float32"}


def config_key(cfg: dict) -> str:
    """Key of the lab folder: every setting except the neighbours' (those key the masked LM), and the
    sha256 of each domain's snapshot file, so a rebuilt corpus snapshot makes a new lab."""
    files = corpus.snapshot_manifest()["domains"]
    texts = {d: (files.get(d) or {}).get("sha256") for d in cfg.get("domains") or []}
    core = {k: v for k, v in cfg.items() if k not in NEIGHBOUR_SETTINGS} | {"lab_format": LAB_FORMAT, "texts": texts}
    return hashlib.sha256(json.dumps(core, sort_keys=True).encode()).hexdigest()[:10]


def neighbour_settings(cfg: dict) -> dict:
    """The lab's neighbour settings: its ``neighbors`` mapping (``unit``, ``fraction``, ``top_k``;
    see :func:`mimirlib.samplers.neighbors.generate_neighbors`) over :data:`NEIGHBOUR_DEFAULTS`.
    A bad value raises a one-line ValueError naming the key."""
    raw = cfg.get("neighbors")
    raw = {} if raw is None else raw
    if not isinstance(raw, dict):
        raise ValueError(f"lab config: neighbors must be a mapping (unit, fraction, top_k), got {raw!r}")
    unknown = sorted(set(raw) - set(NEIGHBOUR_DEFAULTS))
    if unknown:
        raise ValueError(f"lab config: neighbors has unknown key(s) {unknown}; expected unit, fraction, top_k")
    s = NEIGHBOUR_DEFAULTS | raw
    frac, top_k = s["fraction"], s["top_k"]
    if s["unit"] not in NEIGHBOUR_UNITS:
        raise ValueError(f"lab config: neighbors.unit must be one of {list(NEIGHBOUR_UNITS)}, got {s['unit']!r}")
    if isinstance(frac, bool) or not isinstance(frac, (int, float)) or not 0 < frac <= 1:
        raise ValueError(f"lab config: neighbors.fraction must be a number in (0, 1], got {frac!r}")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
        raise ValueError(f"lab config: neighbors.top_k must be an integer >= 1 or null, got {top_k!r}")
    if top_k is not None and s["unit"] != "word":
        raise ValueError(f"lab config: neighbors.top_k applies to unit 'word' only, got unit {s['unit']!r}")
    return s


def neighbour_share(cfg: dict) -> str:
    """What each of the lab's neighbours changes, in words (:func:`neighbour_settings`): "10% of the words"."""
    s = neighbour_settings(cfg)
    return f"{100 * s['fraction']:g}% of the {s['unit']}s"


def settings_key(obj) -> str:
    """A short stable hash of some settings (names the masked LM's folder)."""
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

    def __post_init__(self):
        neighbour_settings(self.config)  # a bad neighbours setting fails before anything is built

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

    def seed_replicates(self, model: str, dedup: bool = False) -> list[str]:
        """``model`` and its independently trained seed replicates (other initialisation and data
        order, same recipe), in seed order; just ``[model]`` when the lab trained none. ``dedup``:
        with the deduplication pair's extra seeds too (:func:`replicate_seeds`)."""
        return [model] + [replicate_name(model, s) for s in replicate_seeds(self.config, model, dedup)]

    def recency_control(self) -> str | None:
        """The model trained like its size's target but read at Pythia's point of the cosine
        schedule (``schedule_fraction``), or None when the lab has no such control."""
        rc = self.config.get("recency_control")
        return recency_control_name(self.config) if rc else None

    def recency_control_target(self) -> str | None:
        """The one-epoch target whose data and recipe the recency control shares (None without one)."""
        rc = self.config.get("recency_control")
        return target_name(rc["size"]) if rc else None

    def control_pairs(self) -> list[tuple[str, str]]:
        """(recency control, its target) seed by seed: the two lab-seed models, then each of the control's
        replicates with its target's of the same seed (:func:`control_seeds`); empty without a control."""
        ctl, target = self.recency_control(), self.recency_control_target()
        if ctl is None:
            return []
        return [(ctl, target)] + [
            (replicate_name(ctl, s), replicate_name(target, s)) for s in control_seeds(self.config)
        ]

    def ground_truth(self, domain: str, split: str = MAIN_SPLIT) -> list[dict]:
        return [json.loads(line) for line in (self.benchmarks_dir / domain / f"{split}.truth.jsonl").open()]

    def data_order(self, model: str):
        """Which document ``model`` saw at which step (:class:`mimirlib.lab.train.DataOrder`)."""
        from mimirlib.lab.train import DataOrder

        return DataOrder.from_json(json.loads((self.model_dir(model) / "data_order.json").read_text()))

    def trained_texts(self) -> dict[str, str]:
        """Every document of the lab's domains as the models saw it (cut to ``doc_words``)."""
        return {
            d["id"]: cut_words(d["text"], self.config["doc_words"])
            for dom in self.config["domains"]
            for d in corpus.load_domain(dom)
        }

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

    def silo_run(self) -> str | None:
        """The SILO-style run (small domains upsampled inside a mixture read at every epoch), or None."""
        return silo_name(self.config) if self.config.get("silo") else None

    def checkpoints(self, model: str) -> list[int]:
        return self.manifest["models"][model]["checkpoints"]

    def training_curves(self, model: str) -> list[dict]:
        """The losses ``model`` logged while training, one record per evaluation (``step``,
        ``tokens``, ``train_loss``, ``heldout_loss``, ...); empty if it logged none (the masked LM)."""
        f = self.model_dir(model) / "curves.json"
        return json.loads(f.read_text()) if f.exists() else []


def expected_models(cfg: dict) -> list[str]:
    """Every model folder a complete lab of this config has (the masked LM aside)."""
    names = [target_name(s["name"]) for s in cfg["targets"]] + [natural_name(cfg)]
    names += [replicate_name(b, s) for b in names for s in replicate_seeds(cfg, b, dedup=True)]
    if cfg.get("recency_control"):
        ctl = recency_control_name(cfg)
        names += [ctl] + [replicate_name(ctl, s) for s in control_seeds(cfg)]
    names += [r["name"] for r in cfg["references"] if r["kind"] == "disjoint"]
    if cfg.get("epochs"):
        names += [epochs_run_name(cfg, e) for e in cfg["epochs"]["runs"]] + [epochs_reference_name(cfg)]
        names += [replicate_name(r, s) for r in epoch_run_replicated(cfg) for s in replicate_seeds(cfg, r)]
    if cfg.get("silo"):
        names.append(silo_name(cfg))
    return names


# ---------------------------------------------------------------- model names (the lab's only naming rules)


def target_name(size: str) -> str:
    return f"target-{size}"


def natural_name(cfg: dict) -> str:
    return f"{target_name(cfg['natural_variant'])}-natural"


def masked_lm_name(cfg: dict) -> str:
    """The masked LM's folder name, keyed by its own settings (changing them retrains only it)."""
    return f"mlm-{settings_key(cfg['mlm'])}"


def replicate_seeds(cfg: dict, model: str, dedup: bool = False) -> list[int]:
    """Training seeds of ``model``'s replicates besides the lab's own seed (config ``replicates``:
    ``sizes`` of the one-epoch targets that get them, ``natural`` for the natural-data twin too,
    ``epoch_runs`` for those epoch runs: :func:`epoch_run_replicated`).
    ``dedup``: the deduplication pair (the ``natural_variant`` target and its natural-data twin)
    also gets ``replicates.dedup_seeds``, which only the deduplication claims average over (every
    other chapter reads the common ``seeds``: the extra models cost nothing there)."""
    if cfg.get("recency_control") and model == recency_control_name(cfg):
        return control_seeds(cfg)
    rep = cfg.get("replicates") or {}
    bases = [target_name(s) for s in rep.get("sizes", [])]
    if rep.get("natural"):
        bases.append(natural_name(cfg))
    bases += epoch_run_replicated(cfg)
    seeds = list(rep.get("seeds", [])) if model in bases else []
    if dedup and model in (target_name(cfg["natural_variant"]), natural_name(cfg)):
        seeds += [s for s in rep.get("dedup_seeds", []) if s not in seeds]
    return seeds


def control_seeds(cfg: dict) -> list[int]:
    """Training seeds of the recency control's replicates (config ``recency_control.seeds``). Each is one of its
    target's replicate seeds, so the control's seed k starts from the weights and sees the documents in the order of
    its target's seed k, and the schedule comparison pairs the two seed by seed; ValueError naming a seed the
    target has no replicate of."""
    rc = cfg["recency_control"]
    seeds = list(rc.get("seeds") or [])
    target = target_name(rc["size"])
    bad = [s for s in seeds if s not in replicate_seeds(cfg, target)]
    if bad:
        raise ValueError(
            f"lab config: recency_control.seeds {bad} are not replicate seeds of {target} "
            f"(replicates.seeds {replicate_seeds(cfg, target)}): the control pairs each seed with its target's"
        )
    return seeds


def epoch_run_replicated(cfg: dict) -> list[str]:
    """The epoch runs that get seed replicates (config ``replicates.epoch_runs``, epochs of ``epochs.runs``: the
    RaMIA chapter attacks one, and reads its Table III game over them); ValueError naming a run the lab lacks."""
    wanted = (cfg.get("replicates") or {}).get("epoch_runs") or []
    runs = (cfg.get("epochs") or {}).get("runs", [])
    bad = [e for e in wanted if e not in runs]
    if bad:
        raise ValueError(f"lab config: replicates.epoch_runs {bad} are not epoch runs of this lab (epochs.runs {runs})")
    return [epochs_run_name(cfg, e) for e in wanted]


def replicate_name(model: str, seed: int) -> str:
    return f"{model}-seed{seed}"


def replicate_training_seed(cfg: dict, seed: int) -> int:
    """The seed replicate ``seed`` (named ``<model>-seed<seed>``) trains with: the lab's draw plus ``seed``.
    So a replicate never repeats the lab's own model, whatever the draw (a lab drawn with seed 3 would
    otherwise train its ``-seed3`` replicate exactly as its target); the book's draw 0 trains with ``seed``.
    ValueError for a replicate seed below 1 (0 would be the lab's own model)."""
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 1:
        raise ValueError(
            f"replicate seed {seed!r}: replicates.seeds and dedup_seeds are integers >= 1 (0 is the lab's own)"
        )
    return int(cfg["seed"]) + seed


def recency_control_name(cfg: dict) -> str:
    rc = cfg["recency_control"]
    return f"{target_name(rc['size'])}-sched{round(100 * rc['schedule_fraction'])}"


def epochs_run_name(cfg: dict, epochs: int) -> str:
    return f"epochs-{epochs}x-{cfg['epochs']['size']}"


def epochs_reference_name(cfg: dict) -> str:
    return epochs_run_name(cfg, max(cfg["epochs"]["runs"])) + "-ref"


def silo_name(cfg: dict) -> str:
    s = cfg["silo"]
    return f"silo-{s['upsample']}x-{s['epochs']}ep-{s['size']}"
