"""The lab page: what the embedded lab holds (corpus, pools, overlap, models, curves, cost) and its sanity check.

The chapter calls :func:`run` (the lab, built if missing, and its sanity check) and
:func:`verdicts`; its tables are the functions of a :class:`~mimirlib.lab.layout.Lab` below.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mimirlib.core import metrics, ngrams
from mimirlib.display import report
from mimirlib.core.data import Benchmark, load_benchmark
from mimirlib.lab import corpus
from mimirlib.lab.build import lab_for
from mimirlib.lab.layout import MAIN_SPLIT, Lab, epochs_reference_name, neighbour_share
from mimirlib.core.models import load_model
from mimirlib.core.scoring import evaluate_scores, member_nonmember, score_benchmark
from mimirlib.core.signals import ScoringOptions, SignalCache
from mimirlib.verdicts import Verdict, seed_sd
from mimirlib.verdicts import lab as rules
from mimirlib.verdicts import regime as fidelity
from mimirlib.verdicts.regime import Regime
from mimirlib.experiments import epochs as epochs_exp
from mimirlib.experiments.params import Params

OVERLAP_NS = (7, 13)  # n-gram sizes of the non-member overlap table (MIMIR's 7-gram and 13-gram splits)
SANITY_SPLIT = "epochs"  # the benchmark whose members every epoch run trained on
SANITY_ATTACK = "loss"


def corpus_table(lab: Lab) -> pd.DataFrame:
    """Per domain: documents in the snapshot, their median length in words, and the pool sizes."""
    pools = lab.manifest["pools"]
    rows = []
    for d in lab.config["domains"]:
        words = [len(x["text"].split()) for x in corpus.load_domain(d)]
        rows.append(
            {
                "domain": d,
                "documents in snapshot": len(words),
                "median words": int(np.median(words)),
                "training pool": pools[d]["train"],
                "held-out pool": pools[d]["heldout"],
                "reference pool": pools[d]["reference"],
            }
        )
    return pd.DataFrame(rows).set_index("domain")


def later_pools(lab: Lab) -> pd.DataFrame:
    """Documents dated after the cutoff, per domain (rows) and yearly bin (columns); domains
    without dates are left out."""
    pools = lab.manifest["pools"]
    later = {
        d: {k.removeprefix("later:"): v for k, v in pools[d].items() if k.startswith("later:")}
        for d in lab.config["domains"]
    }
    later = {d: v for d, v in later.items() if v}
    return pd.DataFrame(later).T.fillna(0).astype(int)


def nonmember_overlap(lab: Lab, ns: tuple[int, ...] = OVERLAP_NS, split: str = MAIN_SPLIT) -> pd.DataFrame:
    """Per domain: benchmark sizes and the mean n-gram overlap of the non-members with the
    training pool (share of a non-member's n-grams that occur in the pool), for each n."""
    train = lab.pool_texts("train")
    grams = {n: ngrams.ngram_set(train, n) for n in ns}
    rows = []
    for d in lab.config["domains"]:
        b = load_benchmark(lab.benchmarks_dir, d, split)
        rows.append(
            {
                "domain": d,
                "members": len(b.members),
                "non-members": len(b.nonmembers),
                **{f"mean {n}-gram overlap": float(ngrams.overlaps(b.nonmembers, grams[n], n).mean()) for n in ns},
            }
        )
    return pd.DataFrame(rows).set_index("domain")


def model_roles(lab: Lab) -> dict[str, str]:
    """What each trained model of the lab is for, in one sentence (the masked LM aside)."""
    cfg = lab.config
    roles: dict[str, str] = {}
    for t in lab.target_names():
        roles[t] = "one-epoch target over the whole training pool (a Pythia-dedup model)"
    natural = lab.natural_twin()
    if natural in lab.manifest["models"]:
        dup = cfg["natural_duplication"]
        roles[natural] = (
            f"the natural-data twin of target-{cfg['natural_variant']}: the same pool with about "
            f"{dup['fraction']:.0%} of documents repeated (up to {dup['max_copies']} copies), as Pythia "
            "is to Pythia-dedup"
        )
    for base in lab.target_names() + [natural]:
        common = set(lab.seed_replicates(base))
        for rep in lab.seed_replicates(base, dedup=True)[1:]:
            roles[rep] = f"seed replicate of {base} (another initialisation and data order, same data): " + (
                "gives the seed-to-seed spread of every AUC the book compares"
                if rep in common
                else "one more seed of the deduplication pair, averaged by the deduplication claims only"
            )
    rc = lab.recency_control()
    if rc:
        r = cfg["recency_control"]
        roles[rc] = (
            f"recency control: trained like target-{r['size']}, but its cosine schedule's horizon is "
            f"steps / {r['schedule_fraction']}, so it stops where Pythia's step 99,000 of 143,000 sits "
            "(learning rate ~30% of its peak): the training-size chapter's schedule control"
        )
        for rep, twin in lab.control_pairs()[1:]:
            roles[rep] = (
                f"seed replicate of {rc}: the initialisation and data order of {twin}, so the schedule control "
                "is read seed by seed"
            )
    for ref in cfg["references"]:
        if ref["kind"] == "disjoint":
            roles[ref["name"]] = "reference model, trained on the disjoint reference pool (never saw a member)"
    silo = lab.silo_run()
    if silo:
        s = cfg["silo"]
        roles[silo] = (
            f"SILO-style run of the epochs chapter: the epochs benchmark's members of {' and '.join(s['domains'])} "
            f"repeated {s['upsample']}x inside the other domains' whole pool, {s['epochs']} epochs, read at every "
            "half epoch"
        )
    if cfg.get("epochs"):
        for run in epochs_exp.epoch_runs(lab):
            e = epochs_exp.epochs_of(lab, run)
            roles[run] = (
                f"fixed-budget run of the epochs chapter: {e} epoch{'s' if e > 1 else ''} over 1/{e} of "
                "the budget's documents, always containing the epochs benchmark's members"
            )
            for rep in lab.seed_replicates(run)[1:]:
                roles[rep] = (
                    f"seed replicate of {run} (another initialisation and data order, same documents): the RaMIA "
                    "chapter reads its Table III game over the run's seeds"
                )
        roles[epochs_reference_name(cfg)] = (
            "trained like the most-epochs run on reference-pool documents: the "
            "RaMIA chapter's shadow model, and a control of the sanity check"
        )
    return roles


def model_suite(lab: Lab) -> pd.DataFrame:
    """The trained models from the manifest: size, schedule, training cost, and what each is for."""
    roles = model_roles(lab)
    rows = []
    for name, v in lab.manifest["models"].items():
        if "config" not in v:
            continue
        c = v["config"]
        rows.append(
            {
                "model": name,
                "parameters (M)": v["params"] / 1e6,
                "hidden": c["size"]["hidden"],
                "layers": c["size"]["layers"],
                "epochs": c["epochs"],
                "seed": c["seed"],
                "schedule fraction": c.get("schedule_fraction", 1.0),
                "steps": v["steps"],
                "tokens seen (M)": v["tokens_seen"] / 1e6,
                "train time (s)": v["train_seconds"],
                "tokens/s": v["tokens_per_second"],
                "role": roles.get(name, ""),
            }
        )
    return pd.DataFrame(rows).set_index("model")


# The masked LM's training record as the page names it (the record's other keys are bookkeeping).
MLM_FIELDS = {
    "n_texts": "training texts",
    "n_tokens": "training tokens",
    "vocab_size": "vocabulary",
    "hidden": "hidden size",
    "layers": "layers",
    "epochs": "epochs",
    "steps": "steps",
    "lr": "learning rate",
    "train_seconds": "training time (s)",
}


def mlm_summary(lab: Lab) -> pd.DataFrame | None:
    """The masked LM's training record in words (:data:`MLM_FIELDS`), with its last epoch's mean masked-token
    loss beside the loss of a model that guesses uniformly, ln(vocabulary); None when the lab trained none."""
    mlm = lab.manifest.get("mlm")
    if not mlm:
        return None
    rows = {label: mlm[k] for k, label in MLM_FIELDS.items() if k in mlm}
    if mlm.get("epoch_mean_loss"):
        rows["final masked-token loss (nats)"] = round(float(mlm["epoch_mean_loss"][-1]), 3)
    if mlm.get("vocab_size"):
        rows["uniform guess's loss, ln(vocabulary) (nats)"] = round(math.log(mlm["vocab_size"]), 3)
    return pd.DataFrame({"masked LM": pd.Series(rows, dtype=object)})


def training_curves(lab: Lab, replicates: bool = False) -> pd.DataFrame:
    """Tidy loss curves: one row per (model, evaluation, split) with ``tokens`` and ``loss``. Seed
    replicates are left out unless ``replicates`` (their curves lie on their base model's)."""
    bases = (
        lab.target_names()
        + [lab.natural_twin()]
        + epochs_exp.epoch_runs(lab)
        + [m for m in [lab.recency_control()] if m]
    )
    reps = {r for b in bases for r in lab.seed_replicates(b, dedup=True)[1:]}
    rows = []
    for name in lab.manifest["models"]:
        if name in reps and not replicates:
            continue
        for r in lab.training_curves(name):
            for split in ("train", "heldout"):
                if f"{split}_loss" in r:
                    rows.append({"model": name, "tokens": r["tokens"], "split": split, "loss": r[f"{split}_loss"]})
    return pd.DataFrame(rows, columns=["model", "tokens", "split", "loss"])


# The build's stage records as the page names them: memory is a running maximum (the build process's, or
# the largest training worker's), so a stage's row says how high memory had gone by its end.
BUILD_COST_COLUMNS = {"seconds": "seconds", "peak_rss_mb": "peak memory so far (MB)"}


def build_cost(lab: Lab) -> pd.DataFrame:
    """Seconds of each stage of the build that produced this lab, and the peak memory reached by its end
    (:data:`BUILD_COST_COLUMNS`)."""
    return pd.DataFrame(lab.manifest["timings"]).T.rename(columns=BUILD_COST_COLUMNS)


# ---------------------------------------------------------------- the sanity check


@dataclass
class SanityCheck:
    """Many-epoch versus one-epoch LOSS AUC on the pooled epochs benchmark."""

    table: pd.DataFrame  # one row per model: epochs, saw the members, documents, LOSS AUC and interval
    many: str  # the run with the most epochs that trained on the members
    gaps: pd.DataFrame  # AUC(many) - AUC(one-epoch target) per target, paired, with the seed sd of a difference
    n_members: int  # pooled over domains (as many non-members)

    @property
    def many_row(self) -> pd.Series:
        return self.table.loc[self.many]

    def one_epoch(self) -> pd.DataFrame:
        return self.table.loc[list(self.gaps.b)]

    def seed_spread(self) -> pd.DataFrame:
        """Per one-epoch target: its seeds' LOSS AUCs (mean, sd) beside the half-widths of the two
        bootstrap intervals a reader sees: one model's AUC, and the paired gap to the many-epoch run."""
        rows = []
        for g in self.gaps.itertuples(index=False):
            reps = self.table.loc[list(g.replicates)]
            one = self.table.loc[g.b]
            rows.append(
                {
                    "one-epoch target": g.b,
                    "seeds": len(reps),
                    "LOSS AUC, seed mean": reps["LOSS AUC"].mean(),
                    "seed sd": reps["LOSS AUC"].std(ddof=1) if len(reps) > 1 else math.nan,
                    "bootstrap 95% half-width": (one["95% CI high"] - one["95% CI low"]) / 2,
                    "paired 95% half-width of the gap": (g.hi - g.lo) / 2,
                }
            )
        return pd.DataFrame(rows).set_index("one-epoch target")

    def size_text(self) -> str:
        n_sd = int(self.gaps.n_seeds.max()) if len(self.gaps) else 1
        return f"{self.n_members} + {self.n_members} texts (all domains pooled), {len(self.gaps)} one-epoch targets" + (
            f", seed sd from up to {n_sd} seeds" if n_sd > 1 else ""
        )


def pooled_benchmark(lab: Lab, split: str = SANITY_SPLIT) -> Benchmark:
    """One benchmark of every domain's ``split`` texts (members first, as each domain lists them)."""
    parts = [load_benchmark(lab.benchmarks_dir, d, split) for d in lab.config["domains"]]
    return Benchmark(
        f"{split} (all domains)",
        tuple(t for b in parts for t in b.members),
        tuple(t for b in parts for t in b.nonmembers),
    )


def sanity_check(
    lab: Lab, options: ScoringOptions | None = None, *, n_bootstrap: int = 1000, seed: int = 0
) -> SanityCheck:
    """Score the pooled epochs benchmark with LOSS under every epoch run (and its shadow run) and
    every one-epoch target with its seed replicates; the paired gap between the most-epochs run and
    each target, with the seed sd of a difference (sqrt(2) x the target's seed sd of the AUC).
    ``options``: how the texts are scored (models loaded in its ``dtype``); by default with the
    signal cache."""
    options = options if options is not None else ScoringOptions(cache=SignalCache.default())
    bench = pooled_benchmark(lab)
    runs = epochs_exp.epoch_runs(lab)
    shadow = [epochs_reference_name(lab.config)] if lab.config.get("epochs") else []
    replicates = {t: lab.seed_replicates(t) for t in lab.target_names()}
    names = runs + shadow + [m for reps in replicates.values() for m in reps]
    scores, rows = {}, []
    for name in names:
        model = load_model(str(lab.model_dir(name)), dtype=options.dtype)
        s = score_benchmark(bench, model, [SANITY_ATTACK], options=options)
        scores[name] = member_nonmember(s, SANITY_ATTACK)
        ev = evaluate_scores(s, n_resamples=n_bootstrap, seed=seed).iloc[0]
        rows.append(
            {
                "model": name,
                "epochs": epochs_exp.epochs_of(lab, name),
                "saw the members": name not in shadow,
                "documents trained on": len(lab.data_order(name).spans),
                "LOSS AUC": ev.auc,
                "95% CI low": ev.auc_lo,
                "95% CI high": ev.auc_hi,
                report.n_column(["n_members", "n_nonmembers"]): f"{int(ev.n_members)} / {int(ev.n_nonmembers)}",
            }
        )
    table = pd.DataFrame(rows).set_index("model")
    many = runs[-1]
    return SanityCheck(table, many, paired_gaps(table, scores, many, replicates, n_bootstrap, seed), len(bench.members))


def paired_gaps(
    table: pd.DataFrame, scores: dict, many: str, replicates: dict, n_bootstrap: int, seed: int
) -> pd.DataFrame:
    """Per one-epoch target: AUC(``many``) minus its AUC, paired over the same texts, with the seed
    sd of a difference (sqrt(2) x the sd of the target's replicates' AUCs)."""
    gaps = []
    for t, reps in replicates.items():
        d = metrics.paired_auc_difference(*scores[many], *scores[t], n_resamples=n_bootstrap, seed=seed)
        sd = seed_sd([table.loc[r, "LOSS AUC"] for r in reps])
        gaps.append(
            {
                "a": many,
                "b": t,
                "auc_a": table.loc[many, "LOSS AUC"],
                "auc_b": table.loc[t, "LOSS AUC"],
                "estimate": d.point,
                "lo": d.lo,
                "hi": d.hi,
                "seed_sd": sd * math.sqrt(2) if sd is not None else math.nan,
                "n_seeds": len(reps),
                "replicates": tuple(reps),
            }
        )
    return pd.DataFrame(gaps)


# ---------------------------------------------------------------- the chapter


@dataclass
class LabRun:
    """What the lab page shows: the built lab (its tables are functions of it) and its sanity check."""

    lab: Lab
    check: SanityCheck
    overlap: pd.DataFrame  # nonmember_overlap: per domain, benchmark sizes and mean n-gram overlaps


def run(p: Params, lab: Lab | None = None) -> LabRun:
    """The chapter's computation: the lab of ``p.profile`` (built if missing; ``lab`` injects one),
    the sanity check, scored as ``p.scoring`` says with the signal cache, and the non-members' overlap."""
    lab = lab if lab is not None else lab_for(p)
    return LabRun(lab, sanity_check(lab, p.scoring(cache=SignalCache.default())), nonmember_overlap(lab))


def regime(run: LabRun) -> list[Regime]:
    """The lab page's fidelity rows: each domain's natural non-member overlap (:func:`regime.overlap`)."""
    o = run.overlap
    return [
        fidelity.overlap(d, o.loc[d, "mean 7-gram overlap"], o.loc[d, "mean 13-gram overlap"], corpus.PLAYS.get(d, ""))
        for d in o.index
    ]


def verdicts(run: LabRun) -> list[Verdict]:
    """The page's one verdict: is the lab informative (:func:`mimirlib.verdicts.lab.lab_is_informative`)?"""
    check = run.check
    many = check.many_row
    return [
        rules.lab_is_informative(
            many["LOSS AUC"], many["95% CI low"], many["95% CI high"], check.gaps, many=check.many, n=check.size_text()
        )
    ]


def prose_numbers(run: LabRun) -> dict:
    """Every number the page's prose states, by glue name: the lab's settings it names and the
    sanity check's (the many-epoch run, the one-epoch targets' range, the largest seed sd)."""
    cfg, check = run.lab.config, run.check
    many = check.many_row
    return {
        "sched_fraction": (cfg.get("recency_control") or {}).get("schedule_fraction", "none"),
        "doc_words": cfg["doc_words"],
        "cutoff": (cfg.get("temporal") or {}).get("cutoff", "none"),
        "seed_sd_max": float(check.seed_spread()["seed sd"].max()),
        "sanity_many_epochs": int(many.epochs),
        "sanity_many_auc": float(many["LOSS AUC"]),
        "sanity_many_lo": float(many["95% CI low"]),
        "sanity_one_min": float(check.gaps.auc_b.min()),
        "sanity_one_max": float(check.gaps.auc_b.max()),
        "sanity_n": check.n_members,
        "signal_floor": rules.SIGNAL_FLOOR,
        "train_dtype": cfg.get("train_dtype", "float32"),
        "lab_neighbours": neighbours_text(cfg),
    }


def neighbours_text(cfg: dict) -> str:
    """The lab's benchmark neighbours in words: how many per text and what each changes."""
    if not cfg.get("n_neighbors"):
        return "none"
    return f"{cfg['n_neighbors']} per text, {neighbour_share(cfg)}"


def curves_figure(curves: pd.DataFrame):
    """Training (solid) and held-out (dashed) loss against tokens seen: small multiples, one panel
    per family of models (the name before its first '-': targets, epoch runs, references), at most
    four models per panel, each model its own colour in its panel."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    from mimirlib.display import plots

    models = list(dict.fromkeys(curves.model))
    families: dict = {}
    for m in models:
        families.setdefault(m.split("-", 1)[0], []).append(m)
    panels = []
    for family, ms in families.items():
        chunks = [ms[i : i + 4] for i in range(0, len(ms), 4)]
        panels += [
            (f"{family} models" + (f" ({k}/{len(chunks)})" if len(chunks) > 1 else ""), c)
            for k, c in enumerate(chunks, 1)
        ]
    ncols = min(3, len(panels))
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.6 * ncols, 3.9 * nrows), sharey=True, squeeze=False)
    flat = axes.ravel()
    for ax, (title, names) in zip(flat, panels):
        for name, colour in zip(names, plots.series_colours(len(names))):
            for split, style in (("train", "-"), ("heldout", "--")):
                g = curves[(curves.model == name) & (curves.split == split)]
                if not g.empty:
                    label = name if split == "train" else "_" + name
                    ax.plot(g.tokens, g.loss, ls=style, marker="o", ms=3, color=colour, label=label)
        ax.set_xscale("log")
        plots.count_ticks(ax.xaxis)
        ax.set_xlabel(plots.axis_label("tokens"))
        ax.set_ylabel("mean token NLL (nats)")
        ax.set_title(title)
        ax.legend(fontsize="small", loc="best")
    for ax in flat[len(panels) :]:
        fig.delaxes(ax)
    styles = [
        Line2D([], [], color="0.3", ls="-", label="training data"),
        Line2D([], [], color="0.3", ls="--", label="held-out data"),
    ]
    fig.legend(handles=styles, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, fontsize="small")
    return plots.finish(fig)
