"""Figures 6, 5 and 7 of the RaMIA chapter: RaMIA against the range size around the exact texts,
against the density of training texts among an IN range's samples, and members' exposure to MIA
against their range's exposure to RaMIA."""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from mimirlib.core import metrics, range_scores
from mimirlib.core.range_stats import paired_difference, pearson, percentile_among, range_auc, spearman
from mimirlib.display import plots, report
from mimirlib.experiments.ramia.aggregation import Aggregation
from mimirlib.experiments.ramia.game import RANGES_N, Game, Trims
from mimirlib.experiments.ramia.setting import Setting, label
from mimirlib.samplers import ranges
from mimirlib.verdicts import ramia as rules


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
        percentile_among(mia[mem_in], mia[~from_member]),
        percentile_among(ramia_scores[mem_in], ramia_scores[~y]),
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


def range_size_sweep(setting: Setting, trims: Trims) -> SizeSweep:
    """Figure 6 analogue: ranges of each size d centred on the exact members and non-members (alpha 0),
    scored by RaMIA (the trims chosen on the reference) and by the MIA on the texts themselves."""
    p = setting.p
    m6, n6 = setting.members[: p.fig6_ranges], setting.nonmembers[: p.fig6_ranges]
    rows, by_d = [], {}
    for d in p.range_sizes:
        g6 = ranges.range_game(
            m6, n6, alpha=0, size=d, n_samples=p.fig6_samples, sampler=setting.sampler, seed=p.seed + 2000 + d
        )
        y6 = ranges.label_ranges(g6, setting.target_train)
        st, sr = (
            a.reshape(len(g6), p.fig6_samples)
            for a in setting.logp([s for r in g6 for s in r.samples], f"Figure 6 samples (d {d})")
        )
        xt, xr = setting.logp([r.centre for r in g6], "Figure 6 centres")
        for b in p.backbones:
            s = range_scores.trimmed_average(setting.point(b, st, sr), *trims.q[b])
            by_d[(b, d)] = (s, y6)
            for method, v in (("RaMIA", s), ("MIA (exact text)", setting.point(b, xt, xr))):
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


def density_sweep(setting: Setting, game: Game, trims: Trims, agg: Aggregation) -> Density:
    """Figure 5 analogue: in every iteration's draw, the first round(rate * n) samples of each IN
    range become its source text (a training text inside the range); OUT ranges are unchanged."""
    p, y, idx = setting.p, game.y, game.idx
    pair = density_pair(p.densities)
    rows, paired = [], []
    for b in p.backbones:
        pool, src = agg.scores[b]["pool"], agg.scores[b]["source"]
        per_rate = {}
        for rate in p.densities:
            its = []
            for it in range(len(idx)):
                sub = np.take_along_axis(pool, idx[it], axis=1)
                sub[y] = range_scores.mix_in(sub[y], src[y], rate)
                its.append(range_scores.trimmed_average(sub, *trims.q[b]))
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
        out = [range_scores.trimmed_average(np.take_along_axis(pool, it, axis=1)[~y], *trims.q[b]) for it in game.idx]
        rows.append(
            {
                "backbone": label(b),
                "density_end": float(np.mean([metrics.auc(src[y], o) for o in out])),
                "exact_mia": float(metrics.auc(src[fm], src[~fm])),
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
