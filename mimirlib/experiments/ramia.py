"""The RaMIA chapter's experiments: the range game on the lab's multi-epoch model with the
attacker's shadow model, the trim chosen on the shadow, Tables III/IV, Figures 5, 6, 7 and 11,
redacted text, and the benchmark's neighbours as ranges; each step returns tidy frames.

Point scores come from one registry (:data:`mimirlib.samplers.ranges.BACKBONES`: LOSS, reference, RMIA),
which fixes their direction (higher = member) once; every comparison is scored on the same ranges
both ways, and :func:`paired_difference` gives the paired bootstrap the verdicts rest on
(:mod:`mimirlib.verdicts.ramia`).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from scipy import stats

from mimirlib.core import metrics
from mimirlib.display import plots, report
from mimirlib.samplers import ranges
from mimirlib.experiments import params_from_namespace
from mimirlib.core.data import load_benchmark, read_records
from mimirlib.lab.build import ensure_lab
from mimirlib.lab.layout import cut_words, epochs_reference_name, epochs_run_name
from mimirlib.core.models import load_model
from mimirlib.samplers.mlm import load_masked_lm
from mimirlib.samplers.perturb import word_hamming
from mimirlib.progress import log
from mimirlib.core.scoring import score_texts
from mimirlib.core.signals import SignalCache
from mimirlib.verdicts import Verdict
from mimirlib.verdicts import ramia as rules

BUDGETS = (0.01, 0.001)  # the FPR budgets of Table IV
MIN_WORDS = 100  # a range's source text needs as many words as a benchmark sample
MIA, RAMIA, GLRT, BAYES = "MIA (centre)", "RaMIA (trimmed average)", "GLRT (max)", "Bayes factor (mean)"
METHODS = [MIA, RAMIA, GLRT, BAYES]


@dataclass(frozen=True)
class Params:
    """The chapter's parameters (its parameters cell documents each)."""

    profile: str
    alpha: int
    range_size: int
    n_ranges: int
    n_samples: int
    n_iterations: int
    ref_ranges: int
    trim_direction: str
    trim_step: float
    min_kept: int
    backbones: list
    rmia_a: float
    n_population: int
    range_sizes: list
    fig6_ranges: int
    fig6_samples: int
    densities: list
    restore_ps: list
    distance_samples: int
    n_redacted: int
    n_candidates: int
    beyond_target: str | None
    beyond_samples: int
    mlm_top_k: int
    n_bootstrap: int
    seed: int
    window: int | None
    stride: int | None
    batch_size: int
    engine: str = "local"

    @classmethod
    def from_namespace(cls, ns: dict) -> "Params":
        """The parameters of that name in ``ns`` (the notebook's globals after its parameters cell)."""
        return params_from_namespace(cls, ns)

    @property
    def max_d(self) -> int:
        return max([self.range_size, *self.range_sizes])

    @property
    def n_pool(self) -> int:
        """Samples drawn per range: a fresh draw of n_samples for each of the n_iterations."""
        return self.n_samples * self.n_iterations


# ----------------------------------------------------------------------------- small pure helpers


def label(b: str) -> str:
    """The backbone's display name (LOSS, RMIA, Reference)."""
    return ranges.get_backbone(b).label


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


def restored_words(source: str, centre: str, samples) -> list[int]:
    """Per sample: the words the centre had changed from the source that the sample puts back."""
    src, cen = source.split(), centre.split()
    moved = [i for i, (a, b) in enumerate(zip(src, cen)) if a != b]
    return [sum(s.split()[i] == src[i] for i in moved) if len(s.split()) == len(src) else 0 for s in samples]


def range_auc(s, y) -> float:
    """AUC of range scores ``s`` with IN labels ``y`` (bool)."""
    s, y = np.asarray(s), np.asarray(y, dtype=bool)
    return metrics.auc(s[y], s[~y])


def spearman(x, v) -> float:
    """Spearman's rho, NaN (not a warning) when either side is constant."""
    x, v = np.asarray(x, dtype=float), np.asarray(v, dtype=float)
    return float(stats.spearmanr(x, v).statistic) if np.ptp(x) > 0 and np.ptp(v) > 0 else float("nan")


def pearson(x, v) -> tuple[float, float]:
    """Pearson's (r, p), NaNs when either side is constant."""
    x, v = np.asarray(x, dtype=float), np.asarray(v, dtype=float)
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(v) == 0:
        return float("nan"), float("nan")
    r = stats.pearsonr(x, v)
    return float(r.statistic), float(r.pvalue)


def range_row(backbone: str, method: str, iteration: int, s, y, budgets=BUDGETS) -> dict:
    """One row: range AUC and range TPRs (%) at the FPR budgets, of range scores ``s``."""
    s, y = np.asarray(s), np.asarray(y, dtype=bool)
    return {
        "backbone": backbone,
        "method": method,
        "iteration": iteration,
        "auc": range_auc(s, y),
        **{metrics.budget_key(f): 100 * metrics.tpr_at_fpr(s[y], s[~y], f).tpr for f in budgets},
        "n_members": int(y.sum()),  # ranges around members / non-members the row rests on
        "n_nonmembers": int((~y).sum()),
    }


def paired_difference(a, b, y, *, n_bootstrap: int, seed: int) -> dict:
    """AUC(a) - AUC(b) on the same ranges, with a paired bootstrap over them.

    ``a`` and ``b``: range scores, (n_ranges,) or (n_iterations, n_ranges) for scores that vary
    with the sampling draw (a 1-d side is the same in every iteration); ``y``: IN labels. Each
    iteration gets ``metrics.paired_auc_difference`` with the same seed, hence the same
    resampled ranges; ``estimate``, ``lo`` and ``hi`` are their means over the iterations (the
    mean of the bounds is at least as wide as the bounds of the mean: conservative), ``spread``
    the standard deviation of the iterations' estimates (NaN for one), ``auc_a``/``auc_b`` the
    mean AUCs.
    """
    y = np.asarray(y, dtype=bool)
    A, B = np.atleast_2d(np.asarray(a, dtype=float)), np.atleast_2d(np.asarray(b, dtype=float))
    k = max(len(A), len(B))
    if len(A) not in (1, k) or len(B) not in (1, k):
        raise ValueError(f"a has {len(A)} iterations and b {len(B)}: expected equal, or one of them 1")
    if A.shape[1] != len(y) or B.shape[1] != len(y):
        raise ValueError(f"a, b and y must cover the same ranges: {A.shape[1]}, {B.shape[1]}, {len(y)}")
    A, B = np.broadcast_to(A, (k, len(y))), np.broadcast_to(B, (k, len(y)))
    d = [
        metrics.paired_auc_difference(A[i][y], A[i][~y], B[i][y], B[i][~y], n_resamples=n_bootstrap, seed=seed)
        for i in range(k)
    ]
    points = np.array([x.point for x in d])
    return {
        "estimate": float(points.mean()),
        "lo": float(np.mean([x.lo for x in d])),
        "hi": float(np.mean([x.hi for x in d])),
        "spread": float(points.std(ddof=1)) if k > 1 else float("nan"),
        "auc_a": float(np.mean([range_auc(x, y) for x in A])),
        "auc_b": float(np.mean([range_auc(x, y) for x in B])),
        "n_in": int(y.sum()),
        "n_out": int((~y).sum()),
    }


def ties_by_construction(n_samples: int, q_s: float, q_e: float) -> dict[str, bool]:
    """Whether the (q_s, q_e) trimmed average of n samples *is* another aggregate: every rank kept
    (the Bayes factor, the plain mean) or only the top one (GLRT, the maximum)."""
    lo, hi = ranges.trim_window(n_samples, q_s, q_e)
    return {BAYES: (lo, hi) == (0, n_samples), GLRT: (lo, hi) == (n_samples - 1, n_samples)}


def sweep_grid(p) -> list[tuple[float, float]]:
    """The trims swept on the reference: ``ranges.trim_grid`` at ``p.trim_step`` in ``p.trim_direction``,
    plus the paper's AG News setting (``ranges.paper_trim(20, 100)``: keep the lowest 20%), less the
    windows that keep fewer than ``p.min_kept`` of the ``p.n_samples`` samples (one kept sample is
    the minimum or the maximum, not an average)."""
    ag = ranges.PAPER_TRIMS["AG News"]
    grid = ranges.trim_grid(p.trim_direction, p.trim_step, extra=[ranges.paper_trim(ag["q_s"], ag["q_e"])])
    return ranges.feasible_grid(grid, p.n_samples, p.min_kept)


def trim_notations(n_samples: int) -> pd.DataFrame:
    """The paper's trims (section V-B) in its notation, the authors' code's and ours, with the samples
    kept at the paper's sample count and at ``n_samples`` (ours: ``ceil``; the code's ``int`` rounds
    (1 - ratio) n down in floating point)."""
    rows = []
    for name, t in ranges.PAPER_TRIMS.items():
        ours = ranges.paper_trim(t["q_s"], t["q_e"])
        direction, ratio = ranges.privacy_meter_trim(*ours)
        rows.append(
            {
                "dataset": name,
                "paper (q_s, q_e), outside kept": f"({t['q_s']}, {t['q_e']})",
                "authors' code (direction, ratio trimmed)": f"({direction}, {ratio:g})",
                "ours (q_s, q_e), window kept": f"({ours[0]:g}, {ours[1]:g})",
                "paper's samples kept": f"{ranges.kept(t['samples'], *ours)} of {t['samples']}"
                if t["samples"]
                else "all images (1 to 18)",
                "kept of the lab's samples": f"{ranges.kept(n_samples, *ours)} of {n_samples}",
            }
        )
    return pd.DataFrame(rows).set_index("dataset")


def sweep_rows(table: pd.DataFrame, backbone: str) -> list[dict]:
    """A trim sweep's grid (``ranges.sweep_trim``) as curves: the share dropped from the bottom (q_e = 1)
    and from the top (q_s = 0); the untrimmed point belongs to both."""
    rows = []
    for _, row in table.iterrows():
        for side, share in (
            ("drop the lowest", row.q_s if row.q_e == 1.0 else None),
            ("drop the highest", 1.0 - row.q_e if row.q_s == 0.0 else None),
        ):
            if share is not None:
                rows.append({"backbone": backbone, "trim": side, "share trimmed": round(share, 4), "auc": row.auc})
    return rows


def iteration_rows(backbone: str, centre, pool, idx, trim: tuple[float, float], y) -> tuple[list[dict], dict]:
    """Table III/IV and Figure 11 for one backbone: the MIA row of the centre scores and, per sampling
    iteration, the trimmed average, GLRT and Bayes factor of that iteration's samples (``idx``).
    Returns (rows, {method: (n_iterations, n_ranges) range scores})."""
    subs = np.stack([np.take_along_axis(pool, idx[it], axis=1) for it in range(len(idx))])
    scores = {
        RAMIA: np.stack([ranges.trimmed_average(s, *trim) for s in subs]),
        GLRT: np.stack([ranges.glrt(s) for s in subs]),
        BAYES: np.stack([ranges.bayes_factor(s) for s in subs]),
    }
    rows = [range_row(backbone, MIA, 0, centre, y)]
    for it in range(len(idx)):
        rows += [range_row(backbone, m, it, scores[m][it], y) for m in (RAMIA, GLRT, BAYES)]
    return rows, scores


def aggregate(res: pd.DataFrame, budgets=BUDGETS) -> pd.DataFrame:
    """Mean and std over iterations of AUC and TPRs, per (backbone, method)."""
    keys = [metrics.budget_key(f) for f in budgets]
    return (
        res.groupby(["backbone", "method"], sort=False)
        .agg(
            auc=("auc", "mean"),
            auc_std=("auc", "std"),
            **{k: (k, "mean") for k in keys},
            **{f"{k} std": (k, "std") for k in keys},
        )
        .fillna(0.0)
    )


TABLE_III_N = "n (ranges: members / non-members)"  # the Table III analogue's sample-size column


def table_iii(res: pd.DataFrame, gains: pd.DataFrame) -> pd.DataFrame:
    """Table III analogue: per backbone, MIA AUC at the centre, RaMIA's mean AUC, and the gain in AUC
    points (mean and std over the draws of samples, and its paired 95% interval over the ranges), and
    last the ranges around members / non-members it rests on."""
    rows = []
    for b, g in res.groupby("backbone", sort=False):
        mia = g[g.method == MIA].auc.iloc[0]
        ra = g[g.method == RAMIA].auc.to_numpy()
        p = gains.set_index("backbone").loc[b]
        rows.append(
            {
                "backbone": b,
                "MIA AUC": mia,
                "RaMIA AUC (mean)": ra.mean(),
                "ΔAUC (points, mean)": 100 * (ra - mia).mean(),
                "ΔAUC (points, std over draws)": 100 * (ra - mia).std(ddof=1),
                "ΔAUC 95% CI (points, paired over ranges)": f"[{100 * p.lo:+.2f}, {100 * p.hi:+.2f}]",
                TABLE_III_N: f"{int(g.n_members.iloc[0])} / {int(g.n_nonmembers.iloc[0])}",
            }
        )
    return pd.DataFrame(rows).set_index("backbone")


def density_pair(densities) -> tuple[float, float] | None:
    """The two densities the Figure 5 verdict compares: the lowest, and the highest up to the paper's
    largest (``rules.PAPER_MAX_DENSITY``), or the highest of all when none is in that range."""
    ds = sorted(set(float(d) for d in densities))
    if len(ds) < 2:
        return None
    inside = [d for d in ds[1:] if d <= rules.PAPER_MAX_DENSITY]
    return ds[0], (inside[-1] if inside else ds[-1])


def member_percentiles(mia, ramia_scores, from_member, y) -> tuple[np.ndarray, np.ndarray]:
    """Figure 7: for the members whose range is IN, the percentile of their MIA score (the exact text)
    among the non-members' and of their range's RaMIA score among the OUT ranges'."""
    mia, ramia_scores = np.asarray(mia, dtype=float), np.asarray(ramia_scores, dtype=float)
    from_member, y = np.asarray(from_member, dtype=bool), np.asarray(y, dtype=bool)
    mem_in = from_member & y
    return (
        ranges.percentile_among(mia[mem_in], mia[~from_member]),
        ranges.percentile_among(ramia_scores[mem_in], ramia_scores[~y]),
    )


def range_roc_panel(ax, y, mia, ramia, title: str) -> None:
    """One range-ROC panel (log-log): the MIA's scores and RaMIA's range scores against the IN labels
    ``y``, each labelled with its range AUC, coloured as methods (not as attacks)."""
    curves = {
        f"MIA (AUC {range_auc(mia, y):.3f})": metrics.roc(mia[y], mia[~y])[:2],
        f"RaMIA (AUC {range_auc(ramia, y):.3f})": metrics.roc(ramia[y], ramia[~y])[:2],
    }
    plots.plot_roc(curves, log=True, ax=ax, title=title)
    for line, colour in zip(ax.get_lines(), plots.series_colours(2)):
        line.set_color(colour)
    ax.legend(loc="lower right", fontsize="small")
    ax.set_xlabel("false positive rate (OUT ranges flagged)")
    ax.set_ylabel("true positive rate (IN ranges flagged)")


def glue_numbers(*steps) -> None:
    """Glue every number a step offers for the prose (its ``numbers()``)."""
    for s in steps:
        report.glue_values(s.numbers())


# ----------------------------------------------------------------------------- set-up


@dataclass
class Run:
    """The chapter's models, texts and population, with the scoring they share."""

    p: Params
    lab: object
    target_name: str
    ref_name: str
    epochs: int
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
        return score_texts(
            texts,
            model,
            ["loss"],
            desc=desc,
            cache=self.cache,
            window=self.p.window,
            stride=self.p.stride,
            batch_size=self.p.batch_size,
            engine=self.p.engine,
        )["loss"].to_numpy()

    def logp(self, texts, desc: str) -> tuple[np.ndarray, np.ndarray]:
        """Mean token log-probabilities under the target and under the attacker's reference."""
        return self.mean_logp(texts, self.target, desc), self.mean_logp(texts, self.reference, desc)

    def point(self, b: str, own, other, stand_in: bool = False) -> np.ndarray:
        """Backbone ``b``'s scores (higher = member) of texts of any shape against the target, or with
        ``stand_in`` against the reference (the target then calibrates, as the attacker's reference)."""
        z_own, z_other = (self.z_r, self.z_t) if stand_in else (self.z_t, self.z_r)
        return ranges.backbone_scores(b, own, other, z_own, z_other, a=self.p.rmia_a)

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
                    "trained on": f"{len(self.ref_train)} texts, {self.epochs} epochs",
                },
                {
                    "role": "masked LM (centres, samples, completions)",
                    "model": self.mlm_name,
                    "trained on": "the training pool",
                },
                {"role": "population z of RMIA", "model": "", "trained on": f"{len(self.population)} held-out texts"},
            ]
        ).set_index("role")

    def cache_report(self) -> str:
        return f"signal cache: {self.cache.hits} texts read from disk, {self.cache.misses} computed"

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


def setup(p: Params) -> Run:
    """Load the lab's multi-epoch target, the attacker's reference (shadow) model and the masked LM;
    pick the range game's members and non-members (long enough for the largest range), RMIA's
    population z and the reference's IN/OUT sources from held-out and reference-pool texts; score z."""
    for b in p.backbones:
        ranges.get_backbone(b)  # an unknown backbone fails here, naming the known ones
    plots.set_style()
    lab = ensure_lab(p.profile)
    cfg = lab.config
    sw, domains = cfg["sample_words"], list(cfg["domains"])
    epochs = max(cfg["epochs"]["runs"])
    target_name, ref_name = epochs_run_name(cfg, epochs), epochs_reference_name(cfg)
    target, reference = load_model(str(lab.model_dir(target_name))), load_model(str(lab.model_dir(ref_name)))
    mlm_dir = lab.masked_lm_dir()
    mlm, mlm_tok = load_masked_lm(mlm_dir)
    splits, all_texts = lab.splits(), lab.trained_texts()

    def usable(t):
        return len(t.split()) >= MIN_WORDS and replaceable_words(t, mlm_tok) >= p.max_d + p.alpha

    def trained_by(model_name):
        return [cut_words(all_texts[i], sw) for i in lab.data_order(model_name).spans]

    parts = {d: load_benchmark(lab.benchmarks_dir, d, "epochs") for d in domains}
    members = round_robin({d: [t for t in b.members if usable(t)] for d, b in parts.items()}, p.n_ranges)
    nonmembers = round_robin({d: [t for t in b.nonmembers if usable(t)] for d, b in parts.items()}, p.n_ranges)
    # population z and the reference's OUT ranges: held-out texts that are in no benchmark of the lab
    in_benchmarks = {
        r["nonmember"]
        for f in lab.benchmarks_dir.glob("*/*.jsonl")
        if not f.name.endswith(".truth.jsonl")
        for r in read_records(f)
        if r.get("nonmember")
    }
    rng = np.random.default_rng(p.seed)
    heldout = {}
    for d in domains:
        cand = [cut_words(all_texts[i], sw) for i in splits[d]["heldout"]]
        cand = [t for t in cand if usable(t) and t not in in_benchmarks]
        heldout[d] = [cand[j] for j in rng.permutation(len(cand))]
    free = round_robin(heldout)
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
    run = Run(
        p,
        lab,
        target_name,
        ref_name,
        epochs,
        sw,
        target,
        reference,
        mlm_dir.name,
        mlm,
        mlm_tok,
        SignalCache.default(),
        ranges.mlm_hamming_sampler(mlm, mlm_tok, top_k=p.mlm_top_k, progress=None),
        trained_by(target_name),
        ref_train,
        parts,
        members,
        nonmembers,
        free[: p.n_population],
        ref_in,
        free[p.n_population : p.n_population + p.ref_ranges],
    )
    log("ramia: scoring the population")
    run.z_t, run.z_r = run.logp(run.population, "population z")
    return run


# ----------------------------------------------------------------------------- the range game


RANGES_N = "n (IN / OUT ranges)"  # the sample-size column of the range tables


def ranges_n(y) -> str:
    """The sample-size cell of a range table: IN / OUT ranges of the labels ``y``."""
    y = np.asarray(y, bool)
    return f"{int(y.sum())} / {int((~y).sum())}"


@dataclass
class Game:
    """The range game on the target: ranges, IN labels, and the mean log-probabilities of every
    range's pool of samples, its centre and its source text under target (``_t``) and reference (``_r``)."""

    ranges: list
    y: np.ndarray
    from_member: np.ndarray
    pool_t: np.ndarray
    pool_r: np.ndarray
    cen_t: np.ndarray
    cen_r: np.ndarray
    src_t: np.ndarray
    src_r: np.ndarray
    idx: np.ndarray  # (n_iterations, n_ranges, n_samples): each iteration's fresh draw, a block of the pool
    n_target_train: int

    def counts(self) -> pd.DataFrame:
        fm, y = self.from_member, self.y
        return pd.DataFrame(
            {"ranges": [int(fm.sum()), int((~fm).sum())], "IN": [int(y[fm].sum()), int(y[~fm].sum())]},
            index=["centred near a member", "centred near a non-member"],
        )

    def example(self) -> pd.DataFrame:
        ex = self.ranges[0]

        def show(t):
            return " ".join(t.split()[:45]) + " ..."

        src, cen, one = ex.source, ex.centre, ex.samples[0]
        return pd.DataFrame(
            {
                "words changed from the source": [0, word_hamming(src, cen), word_hamming(src, one)],
                "words changed from the centre": [word_hamming(cen, src), 0, word_hamming(cen, one)],
                "beginning of the text": [show(src), show(cen), show(one)],
            },
            index=["source (a member)", "range centre", "one sample"],
        )

    def restored(self) -> np.ndarray:
        return np.array([np.mean(restored_words(r.source, r.centre, r.samples)) for r in self.ranges])

    def restored_table(self) -> pd.DataFrame:
        back, fm = self.restored(), self.from_member
        return pd.DataFrame(
            {"words put back per sample (mean)": [back[fm].mean(), back[~fm].mean()]},
            index=["ranges around members", "ranges around non-members"],
        ).round(3)

    def numbers(self) -> dict:
        back, fm, y = self.restored(), self.from_member, self.y
        dist = np.array([np.mean([word_hamming(r.source, x) for x in r.samples]) for r in self.ranges])
        return {
            "dist_sample": float(dist[fm].mean()),
            "restored_m": float(back[fm].mean()),
            "restored_n": float(back[~fm].mean()),
            "n_in": int(y.sum()),
            "n_out": int((~y).sum()),
            "n_out_in": int(y[~fm].sum()),
            "min_fpr": 1 / int((~y).sum()),
        }


def play_range_game(run: Run) -> Game:
    """IN ranges around members moved alpha words away, OUT ranges around non-members, each with
    n_iterations fresh draws of n_samples samples (``ranges.fresh_draws``: disjoint blocks of one
    independent draw of n_samples * n_iterations); labels against everything the target trained on."""
    p = run.p
    log("ramia: building the range game")
    game = ranges.range_game(
        run.members,
        run.nonmembers,
        alpha=p.alpha,
        size=p.range_size,
        n_samples=p.n_pool,
        perturb=run.perturb,
        sampler=run.sampler,
        seed=p.seed,
    )
    y = ranges.label_ranges(game, run.target_train)
    R = len(game)
    pool_t, pool_r = (a.reshape(R, p.n_pool) for a in run.logp([s for r in game for s in r.samples], "range samples"))
    cen_t, cen_r = run.logp([r.centre for r in game], "range centres")
    src_t, src_r = run.logp([r.source for r in game], "source texts")
    return Game(
        game,
        y,
        np.arange(R) < len(run.members),
        pool_t,
        pool_r,
        cen_t,
        cen_r,
        src_t,
        src_r,
        ranges.fresh_draws(R, p.n_samples, p.n_iterations),
        len(run.target_train),
    )


# ----------------------------------------------------------------------------- the trim


@dataclass
class Trims:
    """The trim chosen per backbone on the attacker's reference model, and the sweep behind it."""

    q: dict
    sweep: pd.DataFrame
    n_in: int
    n_out: int
    ref_name: str
    n_samples: int = 0  # samples per range the trims average (0: unknown)

    def chosen(self) -> pd.DataFrame:
        rows = []
        for b, q in self.q.items():
            s = self.sweep[self.sweep.backbone == label(b)]
            rows.append(
                {
                    "backbone": label(b),
                    "q_s": q[0],
                    "q_e": q[1],
                    "samples kept": f"{ranges.kept(self.n_samples, *q)} of {self.n_samples}" if self.n_samples else "",
                    "the authors' code": "trim_mia_scores(s, {1:g}, {0!r})".format(*ranges.privacy_meter_trim(*q)),
                    "reference AUC at the chosen trim": float(s.auc.max()),
                    "reference AUC untrimmed": float(s[s["share trimmed"] == 0].auc.iloc[0]),
                }
            )
        return pd.DataFrame(rows).set_index("backbone")

    def table(self) -> pd.DataFrame:
        return self.sweep.pivot_table(index="share trimmed", columns=["backbone", "trim"], values="auc").round(3)

    def figure(self):
        return plots.plot_metric_vs(
            self.sweep,
            x="share trimmed",
            hue="trim",
            col="backbone",
            lo=None,
            hi=None,
            title=f"trim sweep on the reference model ({self.ref_name})",
        )

    def numbers(self) -> dict:
        return {
            "n_ref_in": self.n_in,
            "n_ref_out": self.n_out,
            "trims_text": "; ".join(
                f"{label(b)}: q_s {q[0]:g}, q_e {q[1]:g}"
                + (f" (keeps {ranges.kept(self.n_samples, *q)} of {self.n_samples})" if self.n_samples else "")
                for b, q in self.q.items()
            ),
            "sweep_span": ", ".join(
                f"{b} {g.auc.min():.3f} to {g.auc.max():.3f}" for b, g in self.sweep.groupby("backbone", sort=False)
            ),
        }


def choose_trims(run: Run) -> Trims:
    """The range game against the reference model as a stand-in target (IN: its own training texts,
    OUT: held-out texts; the target calibrates RMIA), and per backbone the grid point with the best
    range AUC (``ranges.sweep_trim``). The target's labels never enter."""
    p = run.p
    log("ramia: the trim sweep on the reference model")
    ref_game = ranges.range_game(
        run.ref_in_sources,
        run.ref_out_sources,
        alpha=p.alpha,
        size=p.range_size,
        n_samples=p.n_samples,
        perturb=run.perturb,
        sampler=run.sampler,
        seed=p.seed + 1000,
    )
    ref_y = ranges.label_ranges(ref_game, run.ref_train)
    flat = [s for r in ref_game for s in r.samples]
    rs_t, rs_r = (a.reshape(len(ref_game), p.n_samples) for a in run.logp(flat, "reference's range samples"))
    grid = sweep_grid(p)
    q, rows = {}, []
    for b in p.backbones:
        s = run.point(b, rs_r, rs_t, stand_in=True)  # the reference is the stand-in target, the target its reference
        q_s, q_e, table = ranges.sweep_trim(s[ref_y], s[~ref_y], grid)
        q[b] = (q_s, q_e)
        rows += sweep_rows(table, label(b))
    return Trims(q, pd.DataFrame(rows), int(ref_y.sum()), int((~ref_y).sum()), run.ref_name, p.n_samples)


# ----------------------------------------------------------------------------- Tables III, IV and Figure 11


@dataclass
class Aggregation:
    """RaMIA against MIA at the centre (Tables III, IV) and the three aggregates (Figure 11)."""

    res: pd.DataFrame  # one row per (backbone, method, iteration)
    gains: pd.DataFrame  # RaMIA minus MIA, paired over ranges, per backbone
    versus: pd.DataFrame  # trimmed minus GLRT / Bayes factor, paired, per backbone
    scores: dict  # backbone -> {"centre", "source", "pool", "range", RAMIA, GLRT, BAYES}: range or text scores
    game: Game
    trims: Trims
    backbones: list

    @property
    def agg(self) -> pd.DataFrame:
        return aggregate(self.res)

    @property
    def t3(self) -> pd.DataFrame:
        return table_iii(self.res, self.gains)

    @property
    def t4(self) -> pd.DataFrame:
        a = self.agg
        return a[a.index.get_level_values("method").isin([MIA, RAMIA])].drop(columns=["auc", "auc_std"])

    def aggregators(self) -> pd.DataFrame:
        return report.with_size(
            self.agg[["auc", "auc_std"]].unstack("method").round(3), RANGES_N, ranges_n(self.game.y)
        )

    def roc_figure(self):
        """Range ROC curves (log-log) of MIA at the centre and of RaMIA, first sampling iteration."""
        fig, axes = plt.subplots(1, len(self.backbones), figsize=(5.5 * len(self.backbones), 4.6), squeeze=False)
        for ax, b in zip(axes[0], self.backbones):
            range_roc_panel(ax, self.game.y, self.scores[b]["centre"], self.scores[b][RAMIA][0], f"{label(b)} backbone")
        return plots.finish(fig)

    def aggregator_figure(self):
        """Bars: mean range AUC over iterations of each aggregate, per backbone; whiskers one std."""
        agg = self.agg
        fig, ax = plt.subplots(figsize=(7.5, 4.2))
        width = 0.8 / len(METHODS)
        colours = plots.series_colours(len(METHODS))
        for k, m in enumerate(METHODS):
            vals = [agg.loc[(label(b), m), "auc"] for b in self.backbones]
            errs = [agg.loc[(label(b), m), "auc_std"] for b in self.backbones]
            ax.bar(
                np.arange(len(self.backbones)) + (k - (len(METHODS) - 1) / 2) * width,
                vals,
                width,
                yerr=errs,
                capsize=3,
                label=m,
                color=colours[k % len(colours)],
            )
        ax.set_xticks(range(len(self.backbones)))
        ax.set_xticklabels([label(b) for b in self.backbones])
        ax.set_ylim(max(0.0, float(agg.auc.min()) - 0.1), min(1.0, float(agg.auc.max()) + 0.05))
        ax.axhline(0.5, ls="--", color="0.5", lw=1)
        ax.set_xlabel("backbone (the point score each aggregate combines)")
        ax.set_ylabel("range AUC (mean over iterations)")
        ax.legend(fontsize="small", loc="center left", bbox_to_anchor=(1.0, 0.5), title="aggregate")
        return plots.finish(fig)

    def numbers(self) -> dict:
        t3, agg, y = self.t3, self.agg, self.game.y
        best = max(self.backbones, key=lambda b: t3.loc[label(b), "ΔAUC (points, mean)"])
        return {
            "best_backbone": label(best),
            "best_mia": float(t3.loc[label(best), "MIA AUC"]),
            "best_ramia": float(t3.loc[label(best), "RaMIA AUC (mean)"]),
            "exact_auc": float(range_auc(self.scores[best]["source"], y)),
            "gain_text": ", ".join(
                f"{b} {r['ΔAUC (points, mean)']:+.2f} ± {r['ΔAUC (points, std over draws)']:.2f} "
                f"(paired 95% CI {r['ΔAUC 95% CI (points, paired over ranges)']})"
                for b, r in t3.iterrows()
            ),
            "agg_text": ", ".join(
                f"{label(b)} " + " / ".join(f"{agg.loc[(label(b), m), 'auc']:.3f}" for m in (RAMIA, GLRT, BAYES))
                for b in self.backbones
            ),
            "headroom_text": ", ".join(f"{b} {100 * (1 - r['MIA AUC']):.1f}" for b, r in t3.iterrows()),
        }


def compare_aggregators(run: Run, game: Game, trims: Trims) -> Aggregation:
    """Per backbone: MIA on the range centres, and per sampling iteration the trimmed average (with
    the trim chosen on the reference), GLRT and the Bayes factor of the iteration's draw of
    samples; the paired differences RaMIA - MIA and trimmed - GLRT / Bayes factor over the ranges."""
    p, y = run.p, game.y
    rows, scores, gains, versus = [], {}, [], []
    for b in p.backbones:
        C, X = run.point(b, game.cen_t, game.cen_r), run.point(b, game.src_t, game.src_r)
        P = run.point(b, game.pool_t, game.pool_r)
        r, s = iteration_rows(label(b), C, P, game.idx, trims.q[b], y)
        rows += r
        scores[b] = {"centre": C, "source": X, "pool": P, "range": s[RAMIA].mean(axis=0), **s}
        kw = dict(n_bootstrap=p.n_bootstrap, seed=p.seed)
        gains.append({"backbone": label(b), **paired_difference(s[RAMIA], C, y, **kw)})
        ties = ties_by_construction(p.n_samples, *trims.q[b])
        for base in (GLRT, BAYES):
            versus.append(
                {
                    "backbone": label(b),
                    "baseline": base,
                    "tie": ties[base],
                    **paired_difference(s[RAMIA], s[base], y, **kw),
                }
            )
    return Aggregation(
        pd.DataFrame(rows), pd.DataFrame(gains), pd.DataFrame(versus), scores, game, trims, list(p.backbones)
    )


# ----------------------------------------------------------------------------- Figure 6


@dataclass
class SizeSweep:
    """RaMIA and the exact texts' MIA against the range size d, ranges centred on the texts."""

    frame: pd.DataFrame  # backbone, method, range size d, auc, auc_lo, auc_hi
    paired: pd.DataFrame  # per backbone: smallest minus largest d, paired over the texts
    n_in: int
    n_out: int
    n_samples: int

    def table(self) -> pd.DataFrame:
        t = self.frame.pivot_table(index="range size d", columns=["backbone", "method"], values="auc").round(3)
        return report.with_size(t, RANGES_N, f"{self.n_in} / {self.n_out}")

    def figure(self):
        f6 = self.frame
        sizes = sorted(f6["range size d"].unique())
        backbones = list(dict.fromkeys(f6.backbone))
        fig, axes = plt.subplots(1, len(backbones), figsize=(4.6 * len(backbones), 3.8), sharey=True, squeeze=False)
        for ax, b in zip(axes[0], backbones):
            methods = zip(("RaMIA", "MIA (exact text)"), plots.series_colours(2), ("-", "--"))
            for method, colour, style in methods:
                g = f6[(f6.backbone == b) & (f6.method == method)].sort_values("range size d")
                ax.plot(g["range size d"], g.auc, marker="o", ms=4, color=colour, ls=style, label=method)
                ax.fill_between(g["range size d"], g.auc_lo, g.auc_hi, color=colour, alpha=0.15, lw=0)
            ax.axhline(0.5, ls=":", color="0.5", lw=1)
            ax.set_xticks(sizes)
            ax.set_xlabel(plots.axis_label("range size d"))
            ax.set_title(f"{b} backbone")
        axes[0][0].set_ylabel("range AUC")
        axes[0][-1].legend(fontsize="small", loc="lower left")
        return plots.finish(fig)

    def numbers(self) -> dict:
        return {
            "fig6_ranges": self.n_in,
            "fig6_samples": self.n_samples,
            "size_text": ", ".join(
                f"{r.backbone} from {r.auc_a:.3f} to {r.auc_b:.3f}" for r in self.paired.itertuples()
            ),
        }


def range_size_sweep(run: Run, trims: Trims) -> SizeSweep:
    """Figure 6 analogue: ranges of each size d centred on the exact members and non-members (alpha 0),
    scored by RaMIA (the trims chosen on the reference) and by the MIA on the texts themselves."""
    p = run.p
    m6, n6 = run.members[: p.fig6_ranges], run.nonmembers[: p.fig6_ranges]
    rows, by_d = [], {}
    for d in p.range_sizes:
        g6 = ranges.range_game(
            m6, n6, alpha=0, size=d, n_samples=p.fig6_samples, sampler=run.sampler, seed=p.seed + 2000 + d
        )
        y6 = ranges.label_ranges(g6, run.target_train)
        st, sr = (
            a.reshape(len(g6), p.fig6_samples)
            for a in run.logp([s for r in g6 for s in r.samples], f"Figure 6 samples (d {d})")
        )
        xt, xr = run.logp([r.centre for r in g6], "Figure 6 centres")
        for b in p.backbones:
            s = ranges.trimmed_average(run.point(b, st, sr), *trims.q[b])
            by_d[(b, d)] = (s, y6)
            for method, v in (("RaMIA", s), ("MIA (exact text)", run.point(b, xt, xr))):
                bs = metrics.bootstrap_auc(v[y6], v[~y6], n_resamples=p.n_bootstrap, seed=p.seed)
                rows.append(
                    {
                        "backbone": label(b),
                        "method": method,
                        "range size d": d,
                        "auc": bs.point,
                        "auc_lo": bs.lo,
                        "auc_hi": bs.hi,
                    }
                )
    frame = pd.DataFrame(rows)
    paired = []
    small, large = min(p.range_sizes), max(p.range_sizes)
    if small != large:
        for b in p.backbones:
            (a, ya), (c, yc) = by_d[(b, small)], by_d[(b, large)]
            same = ya == yc  # pair ranges around the same text only where both sizes agree on IN/OUT
            g = frame[(frame.backbone == label(b)) & (frame.method == "RaMIA")]
            paired.append(
                {
                    "backbone": label(b),
                    "d_small": small,
                    "d_large": large,
                    **paired_difference(a[same], c[same], ya[same], n_bootstrap=p.n_bootstrap, seed=p.seed),
                    "rho": spearman(g["range size d"], g.auc),
                }
            )
    return SizeSweep(frame, pd.DataFrame(paired), len(m6), len(n6), p.fig6_samples)


# ----------------------------------------------------------------------------- Figure 5


@dataclass
class Density:
    """RaMIA's range AUC as a share of each IN range's samples is replaced by its training text."""

    frame: pd.DataFrame  # backbone, training-text density, auc, auc_lo, auc_hi (mean ± std over iterations)
    paired: pd.DataFrame  # per backbone: the higher density minus the lowest, paired over ranges
    lift: float
    ends: pd.DataFrame | None = None  # per backbone: density_end (exact members vs OUT samples), exact_mia

    def figure(self):
        fig, ax = plt.subplots(figsize=(7.6, 4.5))
        plots.plot_metric_vs(self.frame, x="training-text density", hue="backbone", ax=ax)
        if self.ends is not None:
            colours = plots.attack_palette(list(pd.unique(self.frame.backbone)))
            for r in self.ends.itertuples():
                ax.axhline(
                    r.exact_mia, ls=":", lw=1.5, color=colours[r.backbone], label=f"{r.backbone}: MIA, exact texts"
                )
            ax.legend(fontsize="small", title="backbone", loc="upper left", bbox_to_anchor=(1.02, 1.0))
        return plots.finish(fig)

    def numbers(self) -> dict:
        ends = self.ends if self.ends is not None else pd.DataFrame(columns=["backbone", "density_end", "exact_mia"])
        return {
            "lift": self.lift,
            "density_end_text": ", ".join(
                f"{r.backbone} {r.density_end:.3f} against {r.exact_mia:.3f}" for r in ends.itertuples()
            ),
            "density_text": ", ".join(
                f"{b} {spearman(g['training-text density'], g.auc):+.2f}"
                for b, g in self.frame.groupby("backbone", sort=False)
            ),
        }


def density_sweep(run: Run, game: Game, trims: Trims, agg: Aggregation) -> Density:
    """Figure 5 analogue: in every iteration's draw, the first round(rate * n) samples of each IN
    range become its source text (a training text inside the range); OUT ranges are unchanged."""
    p, y, idx = run.p, game.y, game.idx
    pair = density_pair(p.densities)
    rows, paired = [], []
    for b in p.backbones:
        pool, src = agg.scores[b]["pool"], agg.scores[b]["source"]
        per_rate = {}
        for rate in p.densities:
            its = []
            for it in range(len(idx)):
                sub = np.take_along_axis(pool, idx[it], axis=1)
                sub[y] = ranges.mix_in(sub[y], src[y], rate)
                its.append(ranges.trimmed_average(sub, *trims.q[b]))
            per_rate[float(rate)] = np.stack(its)
            aucs = [range_auc(s, y) for s in its]
            rows.append(
                {
                    "backbone": label(b),
                    "training-text density": rate,
                    "auc": np.mean(aucs),
                    "auc_lo": np.mean(aucs) - np.std(aucs),
                    "auc_hi": np.mean(aucs) + np.std(aucs),
                }
            )
        if pair is not None:
            lo, hi = pair
            g = pd.DataFrame(rows[-len(p.densities) :])
            paired.append(
                {
                    "backbone": label(b),
                    "density_lo": lo,
                    "density_hi": hi,
                    **paired_difference(per_rate[hi], per_rate[lo], y, n_bootstrap=p.n_bootstrap, seed=p.seed),
                    "rho": spearman(g["training-text density"], g.auc),
                }
            )
    lift = float(np.mean(game.pool_t[y].mean(axis=1) - game.src_t[y]))
    return Density(pd.DataFrame(rows), pd.DataFrame(paired), lift, density_ends(game, agg, trims))


def density_ends(game: Game, agg: Aggregation, trims: Trims) -> pd.DataFrame:
    """What a density of 1 is, per backbone: every IN range's score becomes its source text's, so the
    AUC is the exact members' scores against the OUT ranges' trimmed averages of *samples*
    (``density_end``, mean over iterations), not the MIA on the exact texts, members against
    non-members (``exact_mia``): the OUT side differs, and where the sampler makes texts more likely
    than real ones (``Density.lift``), a LOSS score ranks the OUT samples above the exact members."""
    y, fm, rows = game.y, game.from_member, []
    for b in agg.backbones:
        src, pool = agg.scores[b]["source"], agg.scores[b]["pool"]
        out = [ranges.trimmed_average(np.take_along_axis(pool, it, axis=1)[~y], *trims.q[b]) for it in game.idx]
        rows.append(
            {
                "backbone": label(b),
                "density_end": float(np.mean([metrics.auc(src[y], o) for o in out])),
                "exact_mia": float(metrics.auc(src[fm], src[~fm])),
            }
        )
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- the distance curve

DIST = "mean distance to the source (words)"
GAIN = "RaMIA minus MIA (AUC points)"


def nearest_p(distance: pd.DataFrame, alpha: float) -> float | None:
    """The smallest restoration probability p whose samples sit on average no farther from their
    source text than the range centre does (``alpha`` words); None when no p gets that close."""
    close = distance[distance.distance <= alpha]
    return float(close.p.min()) if len(close) else None


def crossing_distance(distance, gain) -> float:
    """The sample distance at which RaMIA minus MIA turns from negative (far samples) to at least 0,
    interpolated linearly between the two grid points around the first such turn, walking from the
    farthest samples in; NaN when it never turns (always below, or never below, 0)."""
    d, g = np.asarray(distance, dtype=float), np.asarray(gain, dtype=float)
    order = np.argsort(-d, kind="stable")
    d, g = d[order], g[order]
    for i in range(len(d) - 1):
        if g[i] < 0 <= g[i + 1]:
            return float(d[i] + (d[i + 1] - d[i]) * (0 - g[i]) / (g[i + 1] - g[i]))
    return float("nan")


@dataclass
class Distance:
    """RaMIA minus MIA at the centre as the samples come closer to the text their range was built
    around (``ranges.restore_words``: each changed word put back with probability p)."""

    frame: pd.DataFrame  # backbone, p, distance, estimate (RaMIA - MIA), lo, hi, auc_a (RaMIA), auc_b (MIA)
    summary: pd.DataFrame  # per backbone: rise (RaMIA at p_near minus at p_far, paired) and the gain at p_near
    alpha: int
    n_samples: int
    n_in: int  # the IN / OUT ranges every point rests on
    n_out: int

    def figure(self):
        f = self.frame.assign(**{DIST: self.frame.distance, GAIN: 100 * self.frame.estimate})
        f = f.assign(gain_lo=100 * f.lo, gain_hi=100 * f.hi)
        fig, ax = plt.subplots(figsize=(7.6, 4.5))
        plots.plot_metric_vs(f, x=DIST, y=GAIN, lo="gain_lo", hi="gain_hi", hue="backbone", chance=0.0, ax=ax)
        ax.axvline(self.alpha, ls=":", lw=1.5, color="0.3", label=f"the centre ({self.alpha} words)")
        ax.invert_xaxis()  # closer samples to the right: a stronger sampler
        ax.legend(fontsize="small", title="backbone", loc="upper left", bbox_to_anchor=(1.02, 1.0))
        return plots.finish(fig)

    def table(self) -> pd.DataFrame:
        t = self.frame.assign(**{GAIN: 100 * self.frame.estimate, DIST: self.frame.distance.round(1)})
        t = t.pivot_table(index=["p", DIST], columns="backbone", values=GAIN, sort=False).round(2)
        return report.with_size(t, RANGES_N, f"{self.n_in} / {self.n_out}")

    def numbers(self) -> dict:
        f, s = self.frame, self.summary
        far = f[f.p == f.p.min()]
        return {
            "dist_far": float(far.distance.iloc[0]) if len(far) else float("nan"),
            "dist_samples": self.n_samples,
            "dist_text": "; ".join(
                f"{r.backbone} {100 * r.far_estimate:+.1f} at {r.d_far:.1f} words, {100 * r.near_estimate:+.1f} "
                f"[{100 * r.near_lo:+.1f}, {100 * r.near_hi:+.1f}] at {r.d_near:.1f} words (p {r.p_near:g})"
                for r in s.itertuples()
            ),
            "cross_text": ", ".join(
                f"{r.backbone} " + (f"{r.crossing:.0f} words" if np.isfinite(r.crossing) else "no crossing")
                for r in s.itertuples()
            ),
        }


def distance_sweep(run: Run, game: Game, trims: Trims, agg: Aggregation) -> Distance:
    """The first ``distance_samples`` samples of every range (from the first draw), restored towards
    the range's source text with each probability in ``restore_ps`` (the same restorations for IN and
    OUT ranges: the attacker's sampler does not know which is which), scored by RaMIA with the chosen
    trims against the MIA at the centre, paired over the ranges. p = 0 is the chapter's sampler,
    p = 1 the source texts themselves; both are already scored (signal cache). The distance is the
    mean over the ranges around members of their samples' word distance to the member."""
    p, y, fm = run.p, game.y, game.from_member
    k = p.distance_samples
    log("ramia: the distance curve")
    rows, per = [], {}
    for q in sorted(set(float(x) for x in p.restore_ps)):
        texts = [
            [ranges.restore_words(r.source, x, q, seed=p.seed, centre=r.centre, size=r.size) for x in r.samples[:k]]
            for r in game.ranges
        ]
        dist = float(
            np.mean([word_hamming(r.source, x) for r, row, m in zip(game.ranges, texts, fm) if m for x in row])
        )
        t, o = (a.reshape(len(texts), k) for a in run.logp([x for row in texts for x in row], f"restored (p {q:g})"))
        for b in p.backbones:
            per[(label(b), q)] = ranges.trimmed_average(run.point(b, t, o), *trims.q[b])
            diff = paired_difference(
                per[(label(b), q)], agg.scores[b]["centre"], y, n_bootstrap=p.n_bootstrap, seed=p.seed
            )
            rows.append({"backbone": label(b), "p": q, "distance": dist, **diff})
    frame = pd.DataFrame(rows)
    summary = distance_summary(frame, per, y, p.alpha, n_bootstrap=p.n_bootstrap, seed=p.seed)
    return Distance(frame, summary, p.alpha, k, int(y.sum()), int((~y).sum()))


def distance_summary(frame: pd.DataFrame, per: dict, y, alpha: float, *, n_bootstrap: int, seed: int) -> pd.DataFrame:
    """Per backbone, what the verdict reads off the curve: the gain over the MIA at the farthest samples
    (p_far, the chapter's sampler) and at the nearest p whose samples are as close as the centre
    (:func:`nearest_p`), the rise of RaMIA between them paired over the ranges (``estimate``, ``lo``,
    ``hi``: RaMIA at p_near minus at p_far), and the crossing distance. ``per``: (backbone label, p)
    -> RaMIA range scores. Backbones without a p as close as the centre are left out."""
    rows = []
    for b, g in frame.groupby("backbone", sort=False):
        g = g.sort_values("p")
        near = nearest_p(g, alpha)
        if near is None or len(g) < 2:
            continue
        far_row, near_row = g.iloc[0], g[g.p == near].iloc[0]
        rise = paired_difference(per[(b, near)], per[(b, float(far_row.p))], y, n_bootstrap=n_bootstrap, seed=seed)
        rows.append(
            {
                "backbone": b,
                "alpha": alpha,
                "p_far": float(far_row.p),
                "p_near": near,
                "d_far": float(far_row.distance),
                "d_near": float(near_row.distance),
                "far_estimate": float(far_row.estimate),
                "near_estimate": float(near_row.estimate),
                "near_lo": float(near_row.lo),
                "near_hi": float(near_row.hi),
                "crossing": crossing_distance(g.distance, g.estimate),
                **{key: rise[key] for key in ("estimate", "lo", "hi")},
            }
        )
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- Figure 7


@dataclass
class Correlation:
    """Members' MIA percentile against their range's RaMIA percentile, with Pearson's r."""

    frame: pd.DataFrame  # backbone, r, p, n
    points: dict  # backbone label -> (MIA percentiles, RaMIA percentiles)

    def table(self) -> pd.DataFrame:
        t = self.frame.set_index("backbone")[["r", "p"]].rename(columns={"r": "Pearson r", "p": "p-value"}).round(4)
        t["n (members)"] = [len(x) for x, _ in self.points.values()]
        return t

    def figure(self):
        fig, axes = plt.subplots(1, len(self.points), figsize=(5.0 * len(self.points), 4.4), squeeze=False)
        colour = plots.series_colours(1)[0]
        for ax, (b, (x, v)), r in zip(axes[0], self.points.items(), self.frame.r):
            ax.scatter(x, v, s=18, alpha=0.7, color=colour)
            ax.set_xlabel("MIA percentile among non-members (%)")
            ax.set_ylabel("RaMIA percentile among OUT ranges (%)")
            corr = f"Pearson r {r:.2f}" if np.isfinite(r) else "Pearson r undefined (a constant score)"
            ax.set_title(f"{b}: {corr}, {len(x)} members", fontsize="medium")
            ax.set_xlim(-2, 102)
            ax.set_ylim(-2, 102)
        return plots.finish(fig)

    def numbers(self) -> dict:
        return {"corr_text": ", ".join(f"{r.backbone} {r.r:.2f}" for r in self.frame.itertuples())}


def vulnerability(game: Game, agg: Aggregation) -> Correlation:
    """Figure 7 analogue on the range game's members (RaMIA: the range score averaged over iterations)."""
    rows, points = [], {}
    for b in agg.backbones:
        x, v = member_percentiles(agg.scores[b]["source"], agg.scores[b]["range"], game.from_member, game.y)
        r, pv = pearson(x, v)
        rows.append({"backbone": label(b), "r": r, "p": pv, "n": len(x)})
        points[label(b)] = (x, v)
    return Correlation(pd.DataFrame(rows), points)


# ----------------------------------------------------------------------------- section V-H


@dataclass
class Redaction:
    """Redacted texts (every word with a digit masked) and their masked-LM completions."""

    table: pd.DataFrame  # method x backbone AUCs
    paired: pd.DataFrame  # per backbone: RaMIA minus one completion, paired over the texts
    n_members: int
    n_nonmembers: int
    n_candidates: int
    share_redacted: float

    def numbers(self) -> dict:
        return {
            "n_red_m": self.n_members,
            "n_red_n": self.n_nonmembers,
            "n_candidates": self.n_candidates,
            "red_share": float(100 * self.share_redacted),
            "red_text": ", ".join(
                f"{r.backbone} {r.auc_a:.3f} against {r.auc_b:.3f}" for r in self.paired.itertuples()
            ),
        }


def has_numbers(text: str) -> bool:
    return any(ranges.has_digit(w) for w in text.split())


def redaction(run: Run, trims: Trims) -> Redaction:
    """Section V-H analogue: members and non-members with numbers are redacted, the masked LM proposes
    n_candidates completions; MIA scores one completion (AUC averaged over them), RaMIA their
    trimmed average."""
    p = run.p
    red_m = round_robin({d: [t for t in b.members if has_numbers(t)] for d, b in run.parts.items()}, p.n_redacted)
    red_n = round_robin({d: [t for t in b.nonmembers if has_numbers(t)] for d, b in run.parts.items()}, p.n_redacted)
    texts = red_m + red_n
    y = np.array([True] * len(red_m) + [False] * len(red_n))
    cands = ranges.fill_masked_words(
        texts,
        run.mlm,
        run.mlm_tok,
        select=ranges.has_digit,
        fill=ranges.has_digit,
        n_candidates=p.n_candidates,
        seed=p.seed,
        top_k=p.mlm_top_k,
        progress=None,
    )
    ct, cr = (a.reshape(len(texts), p.n_candidates) for a in run.logp([c for row in cands for c in row], "completions"))
    et, er = run.logp(texts, "redacted originals")
    rows, paired = [], []
    for b in p.backbones:
        C = run.point(b, ct, cr)
        tr = ranges.trimmed_average(C, *trims.q[b])
        mean = ranges.bayes_factor(C)
        one = float(np.mean([range_auc(C[:, j], y) for j in range(p.n_candidates)]))
        for method, auc in (
            ("MIA (one completion)", one),
            ("mean of completions", range_auc(mean, y)),
            ("RaMIA (trimmed average)", range_auc(tr, y)),
            ("GLRT (max)", range_auc(ranges.glrt(C), y)),
            ("MIA on the unredacted text", range_auc(run.point(b, et, er), y)),
        ):
            rows.append({"backbone": label(b), "method": method, "auc": auc})
        paired.append(
            {
                "backbone": label(b),
                **paired_difference(tr, C.T, y, n_bootstrap=p.n_bootstrap, seed=p.seed),
                "auc_mean": range_auc(mean, y),
                "tie_mean": ties_by_construction(p.n_candidates, *trims.q[b])[BAYES],
            }
        )
    table = pd.DataFrame(rows).pivot_table(index="method", columns="backbone", values="auc", sort=False)
    table = report.with_size(table, report.n_column(["n_members", "n_nonmembers"]), f"{len(red_m)} / {len(red_n)}")
    share = float(np.mean([sum(ranges.has_digit(w) for w in t.split()) / len(t.split()) for t in texts]))
    return Redaction(table, pd.DataFrame(paired), len(red_m), len(red_n), p.n_candidates, share)


# ----------------------------------------------------------------------------- beyond the papers


@dataclass
class Beyond:
    """A text and its benchmark neighbours as a range, on a one-epoch target."""

    frame: pd.DataFrame  # backbone, method, auc, auc_lo, auc_hi
    target_name: str
    n_members: int
    k: int

    def numbers(self) -> dict:
        f = self.frame.set_index(["backbone", "method"]).auc
        backbones = list(dict.fromkeys(self.frame.backbone))
        pt = np.array([f[(b, "point score of the text")] for b in backbones])
        rg = np.array([f[(b, "mean of text and neighbours")] for b in backbones])
        return {
            "beyond_text": ", ".join(f"{b} {a:.3f} to {c:.3f}" for b, a, c in zip(backbones, pt, rg)),
            "beyond_label": self.target_name,
            "n_beyond": self.n_members,
            "beyond_gain": float((rg - pt).mean()),
            "beyond_k": self.k,
        }


def beyond_the_papers(run: Run) -> Beyond:
    """The main benchmark's masked-LM neighbours as samples of a small range around each text, on the
    one-epoch target (RMIA with the lab's one-epoch reference): point score against mean and max."""
    p, lab = run.p, run.lab
    cfg = lab.config
    name = p.beyond_target or lab.target(cfg["epochs"]["size"])
    target = load_model(str(lab.model_dir(name)))
    ref = load_model(str(lab.model_dir(cfg["references"][0]["name"])))
    parts = [load_benchmark(lab.benchmarks_dir, d, "ngram_13_0.8").subset(p.beyond_samples) for d in cfg["domains"]]
    texts = [t for b in parts for t in b.members] + [t for b in parts for t in b.nonmembers]
    neigh = [list(n) for b in parts for n in b.member_neighbors] + [
        list(n) for b in parts for n in b.nonmember_neighbors
    ]
    y = np.array([True] * sum(len(b.members) for b in parts) + [False] * sum(len(b.nonmembers) for b in parts))
    k = min(len(n) for n in neigh)
    flat = [n[j] for n in neigh for j in range(k)]
    t_x, t_n, z_t = (
        run.mean_logp(x, target, d)
        for x, d in ((texts, "beyond texts"), (flat, "beyond neighbours"), (run.population, "beyond z"))
    )
    if any(ranges.get_backbone(b).needs_reference for b in p.backbones):
        r_x, r_n, z_r = (
            run.mean_logp(x, ref, d)
            for x, d in ((texts, "beyond texts"), (flat, "beyond neighbours"), (run.population, "beyond z"))
        )
    else:
        r_x, r_n, z_r = np.zeros_like(t_x), np.zeros_like(t_n), np.zeros_like(z_t)
    t_n, r_n = t_n.reshape(len(texts), k), r_n.reshape(len(texts), k)
    rows = []
    for b in p.backbones:
        x = ranges.backbone_scores(b, t_x, r_x, z_t, z_r, a=p.rmia_a)
        nb = ranges.backbone_scores(b, t_n, r_n, z_t, z_r, a=p.rmia_a)
        with_text = np.concatenate([x[:, None], nb], axis=1)
        for method, s in (
            ("point score of the text", x),
            ("mean of the neighbours", ranges.bayes_factor(nb)),
            ("mean of text and neighbours", ranges.bayes_factor(with_text)),
            ("max of text and neighbours (GLRT)", ranges.glrt(with_text)),
        ):
            bs = metrics.bootstrap_auc(s[y], s[~y], n_resamples=p.n_bootstrap, seed=p.seed)
            rows.append({"backbone": label(b), "method": method, "auc": bs.point, "auc_lo": bs.lo, "auc_hi": bs.hi})
    return Beyond(pd.DataFrame(rows), name, int(y.sum()), k)


# ----------------------------------------------------------------------------- verdicts


def verdicts(
    run: Run,
    game: Game,
    agg: Aggregation,
    sizes: SizeSweep,
    density: Density,
    corr: Correlation,
    red: Redaction,
    dist: Distance,
) -> list[Verdict]:
    """The chapter's seven verdicts, in the prose's order, each from its rule in :mod:`mimirlib.verdicts.ramia`."""
    p, y = run.p, game.y
    one = "one target (the lab has no seed replicates of the multi-epoch run)"
    size_n = (
        f"{sizes.n_in} + {sizes.n_out} ranges around the same texts at each of {len(p.range_sizes)} sizes, "
        f"{p.fig6_samples} samples each; {one}"
    )
    game_n = (
        f"{int(y.sum())} IN + {int((~y).sum())} OUT ranges, {p.n_iterations} fresh draws of {p.n_samples} "
        f"samples each; {one}"
    )
    return [
        rules.ramia_beats_mia(agg.gains, game_n),
        rules.trimmed_beats_glrt_and_bayes(agg.versus, game_n),
        rules.larger_range_lowers_auc(sizes.paired, size_n),
        rules.density_raises_auc(density.paired, game_n),
        rules.vulnerability_correlated(
            corr.frame,
            f"{int(corr.frame.n.max()) if len(corr.frame) else 0} members' "
            f"ranges against {int((~y).sum())} OUT ranges; {one}",
        ),
        rules.redaction_beats_completion(
            red.paired,
            f"{red.n_members} + {red.n_nonmembers} redacted texts, {red.n_candidates} completions each; {one}",
        ),
        rules.closer_samples_raise_gain(
            dist.summary,
            f"{int(y.sum())} IN + {int((~y).sum())} OUT ranges, {dist.n_samples} samples each restored at "
            f"p = {', '.join(f'{q:g}' for q in sorted(dist.frame.p.unique()))}; {one}",
        ),
    ]
