"""The RaMIA chapter's setting: the lab's multi-epoch target, the attacker's reference (shadow) model
and the masked LM; the range game's members and non-members, RMIA's population z and the reference's
IN/OUT sources; and the scoring every step shares (mean token log-probabilities, backbone scores)."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from mimirlib.core import range_scores
from mimirlib.core.data import load_benchmark
from mimirlib.core.models import load_model
from mimirlib.core.scoring import score_texts
from mimirlib.core.signals import SignalCache, cache_note
from mimirlib.experiments.params import Params
from mimirlib.lab.build import lab_for
from mimirlib.lab.layout import cut_words, epochs_reference_name, epochs_run_name
from mimirlib.progress import log
from mimirlib.samplers import ranges
from mimirlib.samplers.mlm import load_masked_lm

MIN_WORDS = 100  # a range's source text needs as many words as a benchmark sample


def max_d(p: Params) -> int:
    """The largest range size the chapter samples (the range game's or the Figure 6 sweep's)."""
    return max([p.range_size, *p.range_sizes])


def n_pool(p: Params) -> int:
    """Samples drawn per range: a fresh draw of n_samples for each of the n_iterations."""
    return p.n_samples * p.n_iterations


def check_distance_samples(p: Params) -> int:
    """``distance_samples`` when the distance curve can take that many of each range's pool
    (1 to :func:`n_pool`); otherwise ValueError naming it (one line)."""
    k, pool = p.distance_samples, n_pool(p)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= pool:
        raise ValueError(
            f"distance_samples: {k!r}; the distance curve restores 1 to n_samples x n_iterations ({pool}) samples "
            "of each range's pool"
        )
    return k


def load_weights(p: Params, lab, name: str):
    """The lab's model ``name`` in the chapter's precision (``dtype``; "auto" where a caller's parameters have none)."""
    return load_model(str(lab.model_dir(name)), dtype=p.get("dtype", "auto"))


def label(b: str) -> str:
    """The backbone's display name (LOSS, RMIA, Reference)."""
    return range_scores.get_backbone(b).label


def round_robin(per_domain: dict, n: int | None = None) -> list:
    """Interleave the domains' lists (first of each, then second of each, ...), so that any cap keeps
    every domain."""
    out = [x for row in itertools.zip_longest(*per_domain.values()) for x in row if x is not None]
    return out if n is None else out[:n]


def replaceable_words(text: str, tokenizer, max_length: int = 512) -> int:
    """Words with a letter or digit inside the masked LM's window (``max_length`` tokens, the range
    samplers' default): the ones a sampler may refill."""
    offsets = tokenizer(text, truncation=True, max_length=max_length, return_offsets_mapping=True)["offset_mapping"]
    limit = max((e for _, e in offsets), default=0)
    return sum(1 for m in re.finditer(r"\S+", text) if m.end() <= limit and re.search(r"\w", m.group()))


@dataclass
class Setting:
    """The chapter's models, texts and population, with the scoring they share."""

    p: Params
    lab: object
    target_name: str
    ref_name: str
    epochs: int
    ref_epochs: int
    sample_words: int
    target: object
    reference: object
    mlm_name: str
    mlm: object
    mlm_tok: object
    cache: SignalCache
    sampler: object
    target_train: list
    ref_train: list
    parts: dict
    members: list
    nonmembers: list
    population: list
    ref_in_sources: list
    ref_out_sources: list
    z_t: np.ndarray = field(default=None, repr=False)
    z_r: np.ndarray = field(default=None, repr=False)

    def mean_logp(self, texts, model, desc: str) -> np.ndarray:
        """Mean token log-probability (the LOSS score) of each text under ``model``."""
        return score_texts(texts, model, ["loss"], desc=desc, options=self.p.scoring(cache=self.cache))[
            "loss"
        ].to_numpy()

    def range_game(self, in_sources, out_sources, *, n_samples: int, seed: int) -> list:
        """IN ranges around ``in_sources``, OUT ranges around ``out_sources``, with the chapter's
        alpha, range size, perturbation and sampler (:func:`mimirlib.samplers.ranges.range_game`)."""
        p = self.p
        return ranges.range_game(
            in_sources,
            out_sources,
            alpha=p.alpha,
            size=p.range_size,
            n_samples=n_samples,
            perturb=self.perturb,
            sampler=self.sampler,
            seed=seed,
        )

    def logp(self, texts, desc: str) -> tuple[np.ndarray, np.ndarray]:
        """Mean token log-probabilities under the target and under the attacker's reference."""
        return self.mean_logp(texts, self.target, desc), self.mean_logp(texts, self.reference, desc)

    def point(self, b: str, own, other, stand_in: bool = False) -> np.ndarray:
        """Backbone ``b``'s scores (higher = member) of texts of any shape against the target, or with
        ``stand_in`` against the reference (the target then calibrates, as the attacker's reference)."""
        z_own, z_other = (self.z_r, self.z_t) if stand_in else (self.z_t, self.z_r)
        return range_scores.backbone_scores(b, own, other, z_own, z_other, a=self.p.rmia_a)

    def perturb(self, texts, alpha: int, seed: int) -> list[str]:
        """Range centres: each text with alpha words refilled by the masked LM."""
        return [v[0] for v in self.sampler(texts, alpha, 1, seed)]

    def models_table(self) -> pd.DataFrame:
        return pd.DataFrame(
            [
                {
                    "role": "target",
                    "model": self.target_name,
                    "trained on": f"{len(self.target_train)} texts, {self.epochs} epochs",
                },
                {
                    "role": "attacker's reference",
                    "model": self.ref_name,
                    "trained on": f"{len(self.ref_train)} texts, {self.ref_epochs} epochs",
                },
                {
                    "role": "masked LM (centres, samples, completions)",
                    "model": self.mlm_name,
                    "trained on": "the training pool",
                },
                {"role": "population z of RMIA", "model": "", "trained on": f"{len(self.population)} held-out texts"},
            ]
        ).set_index("role")

    @property
    def cache_note(self) -> str:
        return cache_note(self.cache.hits, self.cache.misses)

    def numbers(self) -> dict:
        p = self.p
        return {
            "target_name": self.target_name,
            "ref_name": self.ref_name,
            "epochs": self.epochs,
            "sample_words": self.sample_words,
            "n_population": len(self.population),
            "alpha": p.alpha,
            "range_size": p.range_size,
            "n_samples": p.n_samples,
            "n_iterations": p.n_iterations,
            "min_kept": p.min_kept,
            "n_target_train": len(self.target_train),
        }


def target_epochs(p: Params, runs) -> int:
    """The epoch run the chapter attacks: ``p.target_epochs``, or the most epochs the lab trained."""
    wanted = p.get("target_epochs")
    if wanted is None:
        return max(runs)
    if wanted not in runs:
        raise ValueError(f"target_epochs: {wanted!r} is not an epoch run of this lab; it has {sorted(runs)}")
    return int(wanted)


def load_setting(p: Params, lab=None) -> Setting:
    """Load the lab's multi-epoch target, the attacker's reference (shadow) model and the masked LM;
    pick the texts (:func:`choose_texts`); score RMIA's population z. ``lab``: the built lab
    (default: ``lab_for(p)``)."""
    for b in p.backbones:
        range_scores.get_backbone(b)  # an unknown backbone fails here, naming the known ones
    check_distance_samples(p)
    lab = lab_for(p) if lab is None else lab
    cfg = lab.config
    epochs = target_epochs(p, cfg["epochs"]["runs"])
    target_name, ref_name = epochs_run_name(cfg, epochs), epochs_reference_name(cfg)
    target, reference = load_weights(p, lab, target_name), load_weights(p, lab, ref_name)
    mlm_dir = lab.masked_lm_dir()
    mlm, mlm_tok = load_masked_lm(mlm_dir)
    setting = Setting(
        p=p,
        lab=lab,
        target_name=target_name,
        ref_name=ref_name,
        epochs=epochs,
        ref_epochs=max(cfg["epochs"]["runs"]),
        sample_words=cfg["sample_words"],
        target=target,
        reference=reference,
        mlm_name=mlm_dir.name,
        mlm=mlm,
        mlm_tok=mlm_tok,
        cache=SignalCache.default(),
        sampler=ranges.mlm_hamming_sampler(mlm, mlm_tok, top_k=p.mlm_top_k, progress=None),
        **choose_texts(p, lab, mlm_tok, target_name, ref_name),
    )
    log("ramia: scoring the population")
    setting.z_t, setting.z_r = setting.logp(setting.population, "population z")
    return setting


def split_free(free: list, n_population: int | None, ref_ranges: int) -> tuple[list, list]:
    """(RMIA's population z, the reference's OUT sources) from the held-out texts outside the range game:
    the first ``ref_ranges`` are the OUT sources, the next ``n_population`` the population (None: all the
    rest, as RaMIA compares with all available population data), so the population's size never changes the
    texts the trim is chosen on. ValueError naming ``n_population`` when the lab has too few."""
    n = len(free) - ref_ranges if n_population is None else n_population
    if n < 1 or ref_ranges + n > len(free):
        raise ValueError(
            f"n_population: {n_population} population texts and the reference's {ref_ranges} OUT ranges need "
            f"more held-out texts outside the range game than the lab has ({len(free)})"
        )
    return free[ref_ranges : ref_ranges + n], free[:ref_ranges]


def choose_texts(p: Params, lab, mlm_tok, target_name: str, ref_name: str) -> dict:
    """The range game's members and non-members (long enough for the largest range, from the epochs
    benchmark), RMIA's population z and the reference's OUT sources (held-out texts that are not in
    that benchmark, shuffled with ``p.seed``; other chapters' non-members may serve), the reference's
    IN sources (its own training texts from the reference pool), and what target and reference
    trained on: :class:`Setting`'s text fields."""
    cfg = lab.config
    sw, domains = cfg["sample_words"], list(cfg["domains"])
    splits, all_texts = lab.splits(), lab.trained_texts()

    def usable(t):
        return len(t.split()) >= MIN_WORDS and replaceable_words(t, mlm_tok) >= max_d(p) + p.alpha

    def trained_by(model_name):
        return [cut_words(all_texts[i], sw) for i in lab.data_order(model_name).spans]

    parts = {d: load_benchmark(lab.benchmarks_dir, d, "epochs") for d in domains}
    members = round_robin({d: [t for t in b.members if usable(t)] for d, b in parts.items()}, p.n_ranges)
    nonmembers = round_robin({d: [t for t in b.nonmembers if usable(t)] for d, b in parts.items()}, p.n_ranges)
    # population z and the reference's OUT ranges: held-out texts outside the game's own benchmark (the
    # other chapters' benchmarks may take every held-out text: members 300 leaves math none)
    in_game = {t for b in parts.values() for t in b.nonmembers}
    rng = np.random.default_rng(p.seed)
    heldout = {}
    for d in domains:
        cand = [cut_words(all_texts[i], sw) for i in splits[d]["heldout"]]
        cand = [t for t in cand if usable(t) and t not in in_game]
        heldout[d] = [cand[j] for j in rng.permutation(len(cand))]
    population, ref_out = split_free(round_robin(heldout), p.n_population, p.ref_ranges)
    ref_train = trained_by(ref_name)
    ref_train_set = set(ref_train)
    ref_in = round_robin(
        {
            d: [
                t
                for t in (cut_words(all_texts[i], sw) for i in splits[d]["reference"])
                if usable(t) and t in ref_train_set
            ]
            for d in domains
        },
        p.ref_ranges,
    )
    return dict(
        target_train=trained_by(target_name),
        ref_train=ref_train,
        parts=parts,
        members=members,
        nonmembers=nonmembers,
        population=population,
        ref_in_sources=ref_in,
        ref_out_sources=ref_out,
    )
