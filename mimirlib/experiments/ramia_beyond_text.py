"""The "RaMIA beyond text" chapter: the paper's image and tabular columns in miniature, on the
digits bundled with scikit-learn (:mod:`mimirlib.samplers.modalities`), each step returning tidy frames.

Per modality (``images``: a tiny CNN, ranges of flips, shifts and rotations, the CIFAR-10
column; ``tables``: an MLP, ranges of rows with hidden columns, the Purchase-100 column): a
target and ``n_shadows`` shadow models are trained; offline RMIA's ``a`` is tuned on the shadows
alone, the trim on a shadow used as a stand-in target; then every sampling iteration draws
*fresh* samples in every range of the target, so the reported spread is the sampling spread.
The MIA scores the range's point query (Table I: the image x', the mode-imputed row), RaMIA the
trimmed average of the range's samples; both are judged by range membership (Table II), and
:func:`mimirlib.core.range_stats.paired_difference` gives the paired bootstrap the verdicts rest
on (:mod:`mimirlib.verdicts.ramia_beyond_text`).

``replicates`` repeats the whole experiment on independent splits (:func:`replicate_seed`: a new split,
target, shadows, ranges and samplings each); the verdicts read the replicates' gains by a t test over them, so
their noise is the spread between whole replicates, not only between samplings. The tables and figures show replicate 0,
which is the run of ``seed`` itself; the other replicates skip the Figure 5 sweeps, which no verdict reads, and
draw ``replicate_iterations`` samplings (their gain's spread over samplings is not read: the spread between
replicates holds it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from mimirlib.core import metrics, range_scores
from mimirlib.core.range_stats import paired_difference, range_auc, range_metrics
from mimirlib.samplers import modalities
from mimirlib.display import plots
from mimirlib.display.range_plots import range_roc_panel
from mimirlib.experiments.params import Params
from mimirlib.display.paper_tables import load_paper_tables
from mimirlib.experiments.beyond_text_models import Models, Scorer, train_models
from mimirlib.progress import log
from mimirlib.verdicts import Verdict
from mimirlib.verdicts import ramia_beyond_text as rules
from mimirlib.verdicts import regime as fidelity
from mimirlib.verdicts.regime import Regime

BUDGETS = (0.01, 0.001)  # the FPR budgets of Table IV
BACKBONES = ("loss", "rmia")
BACKBONE_LABELS = {"loss": "LOSS", "rmia": "RMIA"}
MIA, RAMIA = "MIA (point query)", "RaMIA (trimmed average)"
# modality -> (model architecture, the paper's dataset it stands in for, what a range is)
MODALITIES = {
    "images": ("cnn", "CIFAR-10", "geometric transforms of an image"),
    "tables": ("mlp", "Purchase-100", "a row with hidden columns"),
}


def check(p: Params) -> Params:
    """Raise ValueError naming the first bad parameter; nothing is trained before this passes."""
    unknown = [m for m in p.modalities if m not in MODALITIES]
    if unknown or not p.modalities:
        raise ValueError(f"modalities: {list(p.modalities)!r}; choose among {list(MODALITIES)}")
    for name, low in (
        ("n_ranges", 2),
        ("image_samples", 1),
        ("table_samples", 1),
        ("n_iterations", 2),
        ("n_shadows", 2),
        ("n_population", 2),
        ("hidden_columns", 1),
        ("shift", 0),
        ("epochs", 1),
        ("train_batch", 1),
        ("ref_ranges", 2),
        ("min_kept", 1),
        ("n_bootstrap", 10),
        ("replicates", 1),
        ("replicate_iterations", 1),
        ("train_rows", 1),
    ):
        v = getattr(p, name)
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {v!r}")
    if not isinstance(p.flips, bool):
        raise ValueError(f"flips must be true or false, got {p.flips!r}")
    if not p.lr > 0:
        raise ValueError(f"lr must be positive, got {p.lr!r}")
    if not 0 < p.trim_step <= 1:
        raise ValueError(f"trim_step must be in (0, 1], got {p.trim_step!r}")
    if not p.a_grid or any(not 0 <= a <= 1 for a in p.a_grid):
        raise ValueError(f"a_grid must be a non-empty list of values in [0, 1], got {p.a_grid!r}")
    if not p.densities or any(not 0 <= d <= 1 for d in p.densities):
        raise ValueError(f"densities must be a non-empty list of shares in [0, 1], got {p.densities!r}")
    if not p.sample_counts or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in p.sample_counts):
        raise ValueError(f"sample_counts must be a non-empty list of integers >= 1, got {p.sample_counts!r}")
    if p.min_kept > min(p.image_samples, p.table_samples):
        raise ValueError(f"min_kept={p.min_kept} exceeds the samples per range")
    most = (modalities.N_ROWS - p.n_population) // 4  # half the target's universe (modalities.split_data)
    if p.train_rows > most:
        raise ValueError(f"train_rows must be at most {most} (half the target's universe), got {p.train_rows!r}")
    image_range = image_ranges(p)  # checks shift and angles
    if "images" in p.modalities:
        size = len(image_range.transforms())
        for name, n in [("image_samples", p.image_samples)] + [("sample_counts", n) for n in p.sample_counts]:
            if n > size - 1:
                raise ValueError(
                    f"{name}: {n} samples, but an image range holds {size} images (one of them the source)"
                )
    if not 1 <= p.hidden_columns <= modalities.SIDE**2:
        raise ValueError(f"hidden_columns must be in [1, {modalities.SIDE**2}], got {p.hidden_columns!r}")
    return p


def image_ranges(p: Params) -> modalities.ImageRanges:
    """The image range function of the parameters ``flips``, ``shift`` and ``angles``."""
    return modalities.ImageRanges(flips=p.flips, shift=p.shift, angles=tuple(float(a) for a in p.angles))


def samples_per_range(p: Params, modality: str) -> int:
    """Samples per range of ``modality``."""
    return p.image_samples if modality == "images" else p.table_samples


def label(b: str) -> str:
    return BACKBONE_LABELS.get(b, b)


def range_row(modality: str, backbone: str, method: str, iteration: int, s, y) -> dict:
    """One row: range AUC and range TPRs (%) at the FPR budgets, of range scores ``s``."""
    return {
        "modality": modality,
        "backbone": label(backbone),
        "method": method,
        "iteration": iteration,
        **range_metrics(s, y, BUDGETS),
    }


def mean_band(keys: dict, aucs) -> dict:
    """``keys`` with the AUC's mean and a band of one std over iterations (the figures' bars)."""
    a = np.asarray(aucs, dtype=float)
    sd = float(a.std(ddof=1)) if len(a) > 1 else 0.0
    return keys | {"auc": float(a.mean()), "auc_lo": float(a.mean()) - sd, "auc_hi": float(a.mean()) + sd}


# ----------------------------------------------------------------------------- one modality


@dataclass
class ModalityRun:
    """Everything one modality's section shows."""

    modality: str
    models: Models
    n_samples: int
    a: float
    a_table: pd.DataFrame  # a, mean AUC over the shadows as stand-in targets
    trims: dict  # backbone -> (q_s, q_e), chosen on shadow 0
    trim_table: pd.DataFrame  # backbone, q_s, q_e, auc: the sweep on shadow 0
    y: np.ndarray  # range labels (IN = True), ground truth
    n_out_relabelled: int  # ranges around non-members that contain a training row
    mia: dict  # backbone -> (R,) scores of the point query
    exact: dict  # backbone -> (R,) scores of the source rows themselves (standard MIA, for reference)
    ramia: dict  # backbone -> (n_iterations, R) RaMIA scores, fresh samples each iteration
    rows: pd.DataFrame  # range_row per backbone x method x iteration
    gains: pd.DataFrame  # per backbone: RaMIA minus MIA, paired over ranges (paired_difference)
    density: pd.DataFrame  # Figure 5(a) analogue
    counts: pd.DataFrame  # Figure 5(b) analogue
    seconds: float

    @property
    def column(self) -> str:
        return MODALITIES[self.modality][1]


def _stand_in_sources(split: modalities.Split, cap: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Positions in the pool of IN and OUT sources for shadow 0 as stand-in target: rows it trained
    on / did not, each with at least one other shadow OUT for it (offline RMIA needs one)."""
    keep = split.shadow_keep
    usable = (~keep[1:]).any(axis=0)
    ins, outs = np.flatnonzero(keep[0] & usable), np.flatnonzero(~keep[0] & usable)
    return rng.permutation(ins)[:cap], rng.permutation(outs)[:cap]


def make_ranges(modality: str, p: Params, X, split: modalities.Split):
    """The modality's range function; for tables the population is the attacker's own data (pool and z)."""
    if modality == "images":
        return image_ranges(p)
    return modalities.TableRanges(X[np.concatenate([split.pool, split.population])], hidden=p.hidden_columns)


def choose_trim(modality: str, p: Params, models: Models, R, a: float, rng) -> tuple[dict, pd.DataFrame]:
    """The trim per backbone, swept (:func:`mimirlib.core.range_scores.sweep_trim`) on shadow 0 as a stand-in
    target whose ranges' labels the attacker knows; the other shadows are its references."""
    X, y, sp = models.X, models.y, models.split
    ins, outs = _stand_in_sources(sp, p.ref_ranges, rng)
    pos = np.concatenate([ins, outs])
    rows = sp.pool[pos]
    rs = R.build(X[rows], y[rows], rng)
    lab = R.contains(rs, X[sp.shadow_rows(0)])
    if lab.all() or not lab.any():
        raise ValueError(f"{modality}: the stand-in's ranges are all {'IN' if lab.all() else 'OUT'}; raise ref_ranges")
    scorer = Scorer.of(models.shadows[0], models.shadows[1:], X[sp.population], y[sp.population], a)
    samples = R.sample(rs, samples_per_range(p, modality), rng, exclude_source=True)
    scores = scorer.scores(samples, rs.labels, out_mask=~sp.shadow_keep[1:, pos].T)
    n = samples_per_range(p, modality)
    grid = [q for q in range_scores.trim_grid("both", p.trim_step) if range_scores.kept(n, *q) >= p.min_kept]
    trims, tables = {}, []
    for b in BACKBONES:
        q_s, q_e, table = range_scores.sweep_trim(scores[b][lab], scores[b][~lab], grid)
        trims[b] = (q_s, q_e)
        tables.append(table.assign(backbone=label(b), modality=modality))
    return trims, pd.concat(tables, ignore_index=True)


def run_modality(modality: str, p: Params, X, y, split: modalities.Split, R, sweeps: bool = True) -> ModalityRun:
    """One modality end to end (see the module docstring); ``R``: its range function (:func:`make_ranges`);
    ``sweeps``: also the Figure 5 sweeps (density and samples per range; empty frames without)."""
    t0 = time.monotonic()
    rng = np.random.default_rng([p.seed, list(MODALITIES).index(modality)])
    log(f"{modality}: training the target and {split.n_shadows} shadows")
    models = train_models(MODALITIES[modality][0], p, X, y, split)
    # offline RMIA's a: the shadows only
    pool_lp = np.stack([modalities.log_prob(s, X[split.pool], y[split.pool]) for s in models.shadows])
    z_lp = np.stack([modalities.log_prob(s, X[split.population], y[split.population]) for s in models.shadows])
    a, a_table = modalities.tune_rmia_a(pool_lp, split.shadow_keep, z_lp, p.a_grid)
    trims, trim_table = choose_trim(modality, p, models, R, a, rng)
    # the target's ranges: up to n_ranges around members, and up to n_ranges around non-members
    n_in, n_out = min(p.n_ranges, len(split.target_members)), min(p.n_ranges, len(split.target_nonmembers))
    src = np.concatenate(
        [rng.permutation(split.target_members)[:n_in], rng.permutation(split.target_nonmembers)[:n_out]]
    )
    rs = R.build(X[src], y[src], rng)
    lab = R.contains(rs, X[split.target_members])
    scorer = Scorer.of(models.target, models.shadows, X[split.population], y[split.population], a)
    mia = scorer.scores(R.point_queries(rs), rs.labels)
    exact = scorer.scores(rs.sources, rs.labels)
    k = samples_per_range(p, modality)
    log(f"{modality}: {n_in} + {n_out} ranges, {p.n_iterations} sampling iterations of {k} samples")
    per_it = [scorer.scores(R.sample(rs, k, rng, exclude_source=True), rs.labels) for _ in range(p.n_iterations)]
    rows, ramia, gains, density = [], {}, [], []
    for b in BACKBONES:
        rows.append(range_row(modality, b, MIA, 0, mia[b], lab))
        ramia[b] = np.stack([range_scores.trimmed_average(s[b], *trims[b]) for s in per_it])
        rows += [range_row(modality, b, RAMIA, it, ramia[b][it], lab) for it in range(p.n_iterations)]
        gains.append(
            {"modality": modality, "backbone": label(b), "n_iterations": p.n_iterations}
            | paired_difference(ramia[b], mia[b], lab, n_bootstrap=p.n_bootstrap, seed=p.seed)
        )
        for rate in p.densities if sweeps else ():  # Figure 5(a): a share of each IN range's samples become its source
            aucs = []
            for s in per_it:
                sub = s[b].copy()
                sub[lab] = range_scores.mix_in(sub[lab], exact[b][lab], rate)
                aucs.append(range_auc(range_scores.trimmed_average(sub, *trims[b]), lab))
            density.append(
                mean_band({"modality": modality, "backbone": label(b), "training-point density": rate}, aucs)
            )
    counts = []
    for c in p.sample_counts if sweeps else ():  # Figure 5(b): more samples over the whole range (the source too)
        its = [scorer.scores(R.sample(rs, c, rng, exclude_source=False), rs.labels) for _ in range(p.n_iterations)]
        for b in BACKBONES:
            aucs = [range_auc(range_scores.trimmed_average(s[b], *trims[b]), lab) for s in its]
            counts.append(mean_band({"modality": modality, "backbone": label(b), "samples per range": c}, aucs))
    src_in = np.isin(src, split.target_members)
    return ModalityRun(
        modality,
        models,
        k,
        a,
        a_table,
        trims,
        trim_table,
        lab,
        int((lab & ~src_in).sum()),
        mia,
        exact,
        ramia,
        pd.DataFrame(rows),
        pd.DataFrame(gains),
        pd.DataFrame(density),
        pd.DataFrame(counts),
        time.monotonic() - t0,
    )


# ----------------------------------------------------------------------------- the chapter


def _paper(table: str, column: str, **match) -> tuple[float, float]:
    """One printed number (value, std) of RaMIA's Table III or IV."""
    df = load_paper_tables()
    sel = df[(df.paper == "ramia") & (df.table == table) & (df.column == column)]
    for k, v in match.items():
        sel = sel[sel[k] == v]
    if len(sel) != 1:
        return float("nan"), float("nan")
    return float(sel.value.iloc[0]), float(sel["std"].iloc[0])


def _pm(value: float, std: float, digits: int = 2) -> str:
    if not np.isfinite(value):
        return "-"
    return f"{value:+.{digits}f}" + (f" ± {std:.{digits}f}" if np.isfinite(std) else "")


@dataclass
class Run:
    """The chapter: one :class:`ModalityRun` per modality (replicate 0), and every replicate's gains."""

    p: Params
    runs: list
    replicate_gains: pd.DataFrame  # the gains frames of every replicate (0 included), a ``replicate`` column
    replicate_seconds: float  # the other replicates' seconds (replicate 0's are in its runs)
    accuracy: pd.DataFrame  # replicate, modality, test accuracy (Models.test_accuracy), n_test: the regime rows' input

    def models_table(self) -> pd.DataFrame:
        return pd.concat([r.models.table(r.modality) for r in self.runs], ignore_index=True)

    def setup_table(self) -> pd.DataFrame:
        """Per modality: ranges, labels, samples, tuned a and trims, and the seconds it took."""
        out = []
        for r in self.runs:
            out.append(
                {
                    "modality": r.modality,
                    "stands in for": r.column,
                    "a range is": MODALITIES[r.modality][2],
                    "IN ranges": int(r.y.sum()),
                    "OUT ranges": int((~r.y).sum()),
                    "non-member ranges relabelled IN": r.n_out_relabelled,
                    "samples per range": r.n_samples,
                    "RMIA a (tuned on shadows)": r.a,
                    **{f"trim {label(b)} (q_s, q_e)": str(r.trims[b]) for b in BACKBONES},
                    "seconds": round(r.seconds, 1),
                }
            )
        return pd.DataFrame(out).set_index("modality")

    @property
    def gains(self) -> pd.DataFrame:
        return pd.concat([r.gains for r in self.runs], ignore_index=True)

    def gains_of(self, modality: str) -> pd.DataFrame:
        """Every replicate's gains of ``modality``, one row per replicate and backbone (the verdict's input)."""
        return self.replicate_gains[self.replicate_gains.modality == modality]

    def pooled_gains(self, modality: str) -> pd.DataFrame:
        """The gains the verdict of ``modality`` reads, one row per backbone (:func:`rules.over_replicates`)."""
        return rules.over_replicates(self.gains_of(modality))

    def replicates_table(self) -> pd.DataFrame:
        """Per modality and backbone: RaMIA's gain in each replicate and over them (the verdicts' input: the mean,
        the spread between replicates and the t interval), beside the paper's gain on the dataset the modality
        stands in for. With one replicate: its mean over the samplings, their spread and its paired interval."""
        out = []
        for r in self.runs:
            each = self.gains_of(r.modality).set_index("backbone")
            for g in self.pooled_gains(r.modality).itertuples(index=False):
                pv, ps = _paper("III", r.column, row=g.backbone.lower())
                gains = 100 * each.loc[[g.backbone], "estimate"]
                out.append(
                    {
                        "modality": r.modality,
                        "backbone": g.backbone,
                        "replicates": len(gains),
                        "ΔAUC points per replicate": " ".join(f"{v:+.1f}" for v in gains),
                        f"ΔAUC points (mean ± std over {g.over})": _pm(100 * g.estimate, 100 * rules.spread_of(g)),
                        "ΔAUC 95% CI (the verdict's)": f"[{100 * g.lo:+.2f}, {100 * g.hi:+.2f}]",
                        "paper ΔAUC points": _pm(pv, ps),
                    }
                )
        return pd.DataFrame(out).set_index(["modality", "backbone"])

    def table_iii(self) -> pd.DataFrame:
        """Table III analogue: AUC of the MIA at the point query, of RaMIA, and the gain in AUC
        points (mean ± std over fresh sampling; its paired 95% interval over the ranges), beside the
        paper's gain on the dataset this modality stands in for."""
        out = []
        for r in self.runs:
            for b in BACKBONES:
                g = r.gains.set_index("backbone").loc[label(b)]
                pv, ps = _paper("III", r.column, row=b)
                out.append(
                    {
                        "modality": r.modality,
                        "backbone": label(b),
                        "MIA AUC (exact source, for reference)": range_auc(r.exact[b], r.y),
                        "MIA AUC (point query)": g.auc_b,
                        "RaMIA AUC (mean)": g.auc_a,
                        "ΔAUC points (mean ± std over sampling)": _pm(100 * g.estimate, 100 * g.spread),
                        "ΔAUC 95% CI (paired over ranges)": f"[{100 * g.lo:+.2f}, {100 * g.hi:+.2f}]",
                        "paper dataset": r.column,
                        "paper ΔAUC points": _pm(pv, ps),
                    }
                )
        return pd.DataFrame(out).set_index(["modality", "backbone"])

    def table_iv(self) -> pd.DataFrame:
        """Table IV analogue: range TPR (%) at 1% and 0.1% range FPR, mean ± std over sampling, beside
        the paper's. With fewer than 1,000 OUT ranges, 0.1% FPR reads as FPR 0."""
        out = []
        for r in self.runs:
            for b in BACKBONES:
                for m, block in ((MIA, "MIA"), (RAMIA, "RaMIA")):
                    g = r.rows[(r.rows.backbone == label(b)) & (r.rows.method == m)]
                    rec = {"modality": r.modality, "backbone": label(b), "method": m, "paper dataset": r.column}
                    for f in BUDGETS:
                        key = metrics.budget_key(f)
                        sd = float(g[key].std(ddof=1)) if len(g) > 1 else float("nan")
                        rec[f"TPR@{f * 100:g}%FPR (%)"] = f"{g[key].mean():.2f}" + (
                            f" ± {sd:.2f}" if np.isfinite(sd) else ""
                        )
                        pv, ps = _paper("IV", r.column, block=block, row=b, metric=f"{key}_pct")
                        rec[f"paper TPR@{f * 100:g}%FPR (%)"] = "-" if not np.isfinite(pv) else _pm(pv, ps).lstrip("+")
                    out.append(rec)
        return pd.DataFrame(out).set_index(["modality", "backbone", "method"])

    def a_table(self) -> pd.DataFrame:
        return pd.concat([r.a_table.assign(modality=r.modality) for r in self.runs], ignore_index=True).pivot(
            index="a", columns="modality", values="auc"
        )

    def roc_figure(self):
        """Figure 4 analogue: range ROC curves (log-log) of the MIA and of RaMIA (first sampling
        iteration), one panel per modality and backbone."""
        fig, axes = plt.subplots(
            len(self.runs), len(BACKBONES), figsize=(5.2 * len(BACKBONES), 4.4 * len(self.runs)), squeeze=False
        )
        for row, r in zip(axes, self.runs):
            for ax, b in zip(row, BACKBONES):
                range_roc_panel(ax, r.y, r.mia[b], r.ramia[b][0], f"{r.modality} ({r.column} analogue), {label(b)}")
        return plots.finish(fig)

    def density_figure(self):
        """Figure 5(a) analogue: RaMIA's AUC as a share of each IN range's samples is its training row."""
        frame = pd.concat([r.density for r in self.runs], ignore_index=True)
        return plots.plot_metric_vs(frame, x="training-point density", hue="backbone", col="modality")

    def counts_figure(self):
        """Figure 5(b) analogue: RaMIA's AUC against the number of samples drawn over the whole range."""
        frame = pd.concat([r.counts for r in self.runs], ignore_index=True)
        return plots.plot_metric_vs(frame, x="samples per range", hue="backbone", col="modality")

    def numbers(self) -> dict:
        """Numbers the prose quotes (glued)."""
        out = {
            "n_shadows": self.p.n_shadows,
            "n_iterations": self.p.n_iterations,
            "n_population": self.p.n_population,
            "replicates": self.p.replicates,
            "train_rows": self.p.train_rows,
            "replicate_iterations": self.p.replicate_iterations,
            "seconds": round(sum(r.seconds for r in self.runs), 1),
            "all_seconds": round(sum(r.seconds for r in self.runs) + self.replicate_seconds, 1),
        }
        for r in self.runs:
            g = r.gains.set_index("backbone")
            for b in BACKBONES:
                out[f"{r.modality}_gain_{b}"] = 100 * float(g.loc[label(b), "estimate"])
                out[f"{r.modality}_spread_{b}"] = 100 * float(g.loc[label(b), "spread"])
                out[f"{r.modality}_mia_{b}"] = float(g.loc[label(b), "auc_b"])
                out[f"{r.modality}_exact_{b}"] = range_auc(r.exact[b], r.y)
            out[f"{r.modality}_a"] = r.a
            out[f"{r.modality}_test_accuracy"] = float(
                self.accuracy.loc[self.accuracy.modality == r.modality, "test accuracy"].mean()
            )
            out[f"{r.modality}_samples"] = r.n_samples
            pooled = {g.backbone: g for g in self.pooled_gains(r.modality).itertuples(index=False)}
            for b in BACKBONES:
                out[f"{r.modality}_pooled_{b}"] = 100 * float(pooled[label(b)].estimate)
                out[f"{r.modality}_pooled_sd_{b}"] = 100 * rules.spread_of(pooled[label(b)])
        return out


def replicate_seed(seed: int, replicate: int) -> int:
    """The seed of one replicate: ``seed`` itself for replicate 0 (the chapter's own run), else one drawn from
    (seed, replicate), so that replicates of one seed almost surely never coincide with another seed's run (a
    32-bit draw)."""
    if replicate == 0:
        return int(seed)
    return int(np.random.SeedSequence([int(seed), int(replicate)]).generate_state(1)[0])


def run_replicate(p: Params, X, y, sweeps: bool) -> list[ModalityRun]:
    """Every modality of ``p`` on the split of ``p.seed``."""
    split = modalities.split_data(
        len(X), n_population=p.n_population, n_shadows=p.n_shadows, seed=p.seed, train_rows=p.train_rows
    )
    range_functions = {m: make_ranges(m, p, X, split) for m in p.modalities}  # checks hidden_columns before training
    return [run_modality(m, p, X, y, split, range_functions[m], sweeps=sweeps) for m in p.modalities]


def run(p: Params) -> Run:
    """The whole chapter: check the parameters, load the digits, run each modality on ``replicates`` independent
    splits (replicate 0 with every table and figure; the others for the verdicts' gains)."""
    check(p)
    X, y = modalities.load_data()
    runs = run_replicate(p, X, y, sweeps=True)
    gains, t0 = [pd.concat([r.gains for r in runs]).assign(replicate=0)], time.monotonic()
    accuracy = [_accuracy(runs, 0)]
    for i in range(1, p.replicates):
        log(f"replicate {i + 1} of {p.replicates}")
        q = p.replace(seed=replicate_seed(p.seed, i), n_iterations=p.replicate_iterations)
        others = run_replicate(q, X, y, sweeps=False)
        gains.append(pd.concat([r.gains for r in others]).assign(replicate=i))
        accuracy.append(_accuracy(others, i))
    return Run(p, runs, pd.concat(gains, ignore_index=True), time.monotonic() - t0, pd.concat(accuracy))


def _accuracy(runs: list[ModalityRun], replicate: int) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "replicate": replicate,
                "modality": r.modality,
                "test accuracy": r.models.test_accuracy(),
                "n_test": len(r.models.held_out()),
            }
            for r in runs
        ]
    )


def regime(run: Run) -> list[Regime]:
    """The chapter's fidelity rows: per modality, its targets' test accuracy over the replicates against the
    paper's (:func:`mimirlib.verdicts.regime.generalisation`)."""
    out = []
    for r in run.runs:
        acc = run.accuracy[run.accuracy.modality == r.modality]
        out.append(fidelity.generalisation(r.modality, r.column, acc["test accuracy"], int(acc.n_test.iloc[0])))
    return out


def regime_table(run: Run) -> pd.DataFrame:
    """The fidelity rows of :func:`regime` as a table for the chapter's page (the lab page's table has them too)."""
    rows = [
        {"property": r.property, "lab": r.lab_value, "paper": r.paper_value, "in regime?": r.status}
        for r in regime(run)
    ]
    return pd.DataFrame(rows).set_index("property")


def verdicts(run: Run) -> list[Verdict]:
    """One verdict per modality the chapter knows, ``not tested`` for a modality not run or whose targets are out
    of the paper's regime (:func:`regime`)."""
    by = {r.modality: r for r in run.runs}
    rows = dict(zip((r.modality for r in run.runs), regime(run)))  # regime's rows follow run.runs
    out = []
    for modality, rule in (("images", rules.images_gain), ("tables", rules.tables_gain)):
        r = by.get(modality)
        if r is None:
            out.append(rule(pd.DataFrame(), n="not run"))
        else:
            n = (
                f"{int(r.y.sum())} IN + {int((~r.y).sum())} OUT ranges, {run.p.n_iterations} samplings, targets "
                f"trained on {len(r.models.split.target_members)} rows"
            )
            if run.p.replicates > 1:
                n = (
                    f"{run.p.replicates} replicates (splits, models, ranges); replicate 0: {n}, the others "
                    f"{run.p.replicate_iterations} samplings each"
                )
            out.append(rule(run.gains_of(modality), n=n, regime=[rows[modality]]))
    return out
