"""The RaMIA chapter's distance curve: RaMIA minus the MIA at the centre as the range's samples are
restored towards the text the range was built around (a stand-in for a stronger sampler), and what
the verdict reads off it."""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from mimirlib.core import range_scores
from mimirlib.core.range_stats import paired_difference
from mimirlib.display import plots, report
from mimirlib.experiments.ramia.aggregation import Aggregation
from mimirlib.experiments.ramia.game import RANGES_N, Game, Trims
from mimirlib.experiments.ramia.setting import Setting, label
from mimirlib.progress import log
from mimirlib.samplers import ranges
from mimirlib.samplers.perturb import word_hamming

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


def distance_sweep(setting: Setting, game: Game, trims: Trims, agg: Aggregation) -> Distance:
    """The first ``distance_samples`` samples of every range's pool (``setting.check_distance_samples``),
    restored towards the range's source text with each probability in ``restore_ps`` (the same restorations for IN and
    OUT ranges: the attacker's sampler does not know which is which), scored by RaMIA with the chosen
    trims against the MIA at the centre, paired over the ranges. p = 0 is the chapter's sampler,
    p = 1 the source texts themselves; both are already scored (signal cache). The distance is the
    mean over the ranges around members of their samples' word distance to the member."""
    p, y, fm = setting.p, game.y, game.from_member
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
        t, o = (
            a.reshape(len(texts), k) for a in setting.logp([x for row in texts for x in row], f"restored (p {q:g})")
        )
        for b in p.backbones:
            per[(label(b), q)] = range_scores.trimmed_average(setting.point(b, t, o), *trims.q[b])
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
