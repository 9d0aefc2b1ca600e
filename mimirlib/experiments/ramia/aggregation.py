"""Tables III and IV and Figure 11 of the RaMIA chapter: per backbone, the MIA at the range centre
against RaMIA (the trimmed average with the trim chosen on the reference), GLRT and the Bayes
factor over each sampling iteration's draw, with the paired differences over the ranges the
verdicts rest on."""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from mimirlib.core import metrics, range_scores
from mimirlib.core.range_stats import paired_difference, range_auc, range_metrics
from mimirlib.display import plots, report
from mimirlib.display.range_plots import range_roc_panel
from mimirlib.experiments.ramia.game import RANGES_N, Game, Trims, ranges_n
from mimirlib.experiments.ramia.setting import Setting, label

BUDGETS = (0.01, 0.001)  # the FPR budgets of Table IV
MIA, RAMIA, GLRT, BAYES = "MIA (centre)", "RaMIA (trimmed average)", "GLRT (max)", "Bayes factor (mean)"
METHODS = [MIA, RAMIA, GLRT, BAYES]


def range_row(backbone: str, method: str, iteration: int, s, y, budgets=BUDGETS) -> dict:
    """One row: range AUC and range TPRs (%) at the FPR budgets, of range scores ``s``."""
    y = np.asarray(y, dtype=bool)
    return {
        "backbone": backbone,
        "method": method,
        "iteration": iteration,
        **range_metrics(s, y, budgets),
        "n_members": int(y.sum()),  # ranges around members / non-members the row rests on
        "n_nonmembers": int((~y).sum()),
    }


def ties_by_construction(n_samples: int, q_s: float, q_e: float) -> dict[str, bool]:
    """Whether the (q_s, q_e) trimmed average of n samples *is* another aggregate: every rank kept
    (the Bayes factor, the plain mean) or only the top one (GLRT, the maximum)."""
    lo, hi = range_scores.trim_window(n_samples, q_s, q_e)
    return {BAYES: (lo, hi) == (0, n_samples), GLRT: (lo, hi) == (n_samples - 1, n_samples)}


def iteration_rows(backbone: str, centre, pool, idx, trim: tuple[float, float], y) -> tuple[list[dict], dict]:
    """Table III/IV and Figure 11 for one backbone: the MIA row of the centre scores and, per sampling
    iteration, the trimmed average, GLRT and Bayes factor of that iteration's samples (``idx``).
    Returns (rows, {method: (n_iterations, n_ranges) range scores})."""
    subs = np.stack([np.take_along_axis(pool, idx[it], axis=1) for it in range(len(idx))])
    scores = {
        RAMIA: np.stack([range_scores.trimmed_average(s, *trim) for s in subs]),
        GLRT: np.stack([range_scores.glrt(s) for s in subs]),
        BAYES: np.stack([range_scores.bayes_factor(s) for s in subs]),
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


def compare_aggregators(setting: Setting, game: Game, trims: Trims) -> Aggregation:
    """Per backbone: MIA on the range centres, and per sampling iteration the trimmed average (with
    the trim chosen on the reference), GLRT and the Bayes factor of the iteration's draw of
    samples; the paired differences RaMIA - MIA and trimmed - GLRT / Bayes factor over the ranges."""
    p, y = setting.p, game.y
    rows, scores, gains, versus = [], {}, [], []
    for b in p.backbones:
        C, X = setting.point(b, game.cen_t, game.cen_r), setting.point(b, game.src_t, game.src_r)
        P = setting.point(b, game.pool_t, game.pool_r)
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
