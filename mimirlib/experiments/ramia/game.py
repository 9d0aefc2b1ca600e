"""The RaMIA chapter's range game and its trim: IN ranges around the target's members moved alpha
words away, OUT ranges around non-members, each with fresh draws of samples; and the trim of the
trimmed average, chosen per backbone on the attacker's reference model as a stand-in target (the
target's labels never enter), with the trim's three notations."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from mimirlib.core import range_scores
from mimirlib.display import plots
from mimirlib.experiments.ramia.setting import Setting, label, n_pool
from mimirlib.progress import log
from mimirlib.samplers import ranges
from mimirlib.samplers.perturb import word_hamming

RANGES_N = "n (IN / OUT ranges)"  # the sample-size column of the range tables


def ranges_n(y) -> str:
    """The sample-size cell of a range table: IN / OUT ranges of the labels ``y``."""
    y = np.asarray(y, bool)
    return f"{int(y.sum())} / {int((~y).sum())}"


def restored_words(source: str, centre: str, samples) -> list[int]:
    """Per sample: the words the centre had changed from the source that the sample puts back."""
    src, cen = source.split(), centre.split()
    moved = [i for i, (a, b) in enumerate(zip(src, cen)) if a != b]
    return [sum(s.split()[i] == src[i] for i in moved) if len(s.split()) == len(src) else 0 for s in samples]


def sweep_grid(p) -> list[tuple[float, float]]:
    """The trims swept on the reference: ``range_scores.trim_grid`` at ``p.trim_step`` in ``p.trim_direction``,
    plus the paper's AG News setting (``range_scores.paper_trim(20, 100)``: keep the lowest 20%), less the
    windows that keep fewer than ``p.min_kept`` of the ``p.n_samples`` samples (one kept sample is
    the minimum or the maximum, not an average)."""
    ag = range_scores.PAPER_TRIMS["AG News"]
    grid = range_scores.trim_grid(p.trim_direction, p.trim_step, extra=[range_scores.paper_trim(ag["q_s"], ag["q_e"])])
    return range_scores.feasible_grid(grid, p.n_samples, p.min_kept)


def trim_notations(n_samples: int) -> pd.DataFrame:
    """The paper's trims (section V-B) in its notation, the authors' code's and ours, with the samples
    kept at the paper's sample count and at ``n_samples`` (ours: ``ceil``; the code's ``int`` rounds
    (1 - ratio) n down in floating point)."""
    rows = []
    for name, t in range_scores.PAPER_TRIMS.items():
        ours = range_scores.paper_trim(t["q_s"], t["q_e"])
        direction, ratio = range_scores.privacy_meter_trim(*ours)
        rows.append(
            {
                "dataset": name,
                "paper (q_s, q_e), outside kept": f"({t['q_s']}, {t['q_e']})",
                "authors' code (direction, ratio trimmed)": f"({direction}, {ratio:g})",
                "ours (q_s, q_e), window kept": f"({ours[0]:g}, {ours[1]:g})",
                "paper's samples kept": f"{range_scores.kept(t['samples'], *ours)} of {t['samples']}"
                if t["samples"]
                else f"{100 * (ours[1] - ours[0]):g}% of the identity's images (1 to 18 of them)",
                "kept of the lab's samples": f"{range_scores.kept(n_samples, *ours)} of {n_samples}",
            }
        )
    return pd.DataFrame(rows).set_index("dataset")


def sweep_rows(table: pd.DataFrame, backbone: str) -> list[dict]:
    """A trim sweep's grid (``range_scores.sweep_trim``) as curves: the share dropped from the bottom (q_e = 1)
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


def play_range_game(setting: Setting) -> Game:
    """IN ranges around members moved alpha words away, OUT ranges around non-members, each with
    n_iterations fresh draws of n_samples samples (``ranges.fresh_draws``: disjoint blocks of one
    independent draw of n_samples * n_iterations); labels against everything the target trained on."""
    p = setting.p
    log("ramia: building the range game")
    game = setting.range_game(setting.members, setting.nonmembers, n_samples=n_pool(p), seed=p.seed)
    y = ranges.label_ranges(game, setting.target_train)
    R = len(game)
    pool_t, pool_r = (
        a.reshape(R, n_pool(p)) for a in setting.logp([s for r in game for s in r.samples], "range samples")
    )
    cen_t, cen_r = setting.logp([r.centre for r in game], "range centres")
    src_t, src_r = setting.logp([r.source for r in game], "source texts")
    return Game(
        game,
        y,
        np.arange(R) < len(setting.members),
        pool_t,
        pool_r,
        cen_t,
        cen_r,
        src_t,
        src_r,
        ranges.fresh_draws(R, p.n_samples, p.n_iterations),
        len(setting.target_train),
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
    # the reference's ranges: a seed replicate of the target re-sweeps the trim on them
    ref_game: list | None = field(default=None, repr=False)

    def chosen(self) -> pd.DataFrame:
        rows = []
        for b, q in self.q.items():
            s = self.sweep[self.sweep.backbone == label(b)]
            rows.append(
                {
                    "backbone": label(b),
                    "q_s": q[0],
                    "q_e": q[1],
                    "samples kept": f"{range_scores.kept(self.n_samples, *q)} of {self.n_samples}"
                    if self.n_samples
                    else "",
                    "the authors' code": "trim_mia_scores(s, {1:g}, {0!r})".format(
                        *range_scores.privacy_meter_trim(*q)
                    ),
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
                + (f" (keeps {range_scores.kept(self.n_samples, *q)} of {self.n_samples})" if self.n_samples else "")
                for b, q in self.q.items()
            ),
            "sweep_span": ", ".join(
                # rounded as the tables beside it round (pandas' round), so the prose and the tables agree
                f"{b} {g.auc.min().round(3):.3f} to {g.auc.max().round(3):.3f}"
                for b, g in self.sweep.groupby("backbone", sort=False)
            ),
        }


def choose_trims(setting: Setting, ref_game: list | None = None) -> Trims:
    """The range game against the reference model as a stand-in target (IN: its own training texts,
    OUT: held-out texts; the target calibrates RMIA), and per backbone the grid point with the best
    range AUC (``range_scores.sweep_trim``). The target's labels never enter. ``ref_game``: the
    reference's ranges drawn already (another seed of the target re-sweeps the same ranges)."""
    p = setting.p
    log(f"ramia: the trim sweep on the reference model ({setting.target_name} calibrating)")
    if ref_game is None:
        ref_game = setting.range_game(
            setting.ref_in_sources, setting.ref_out_sources, n_samples=p.n_samples, seed=p.seed + 1000
        )
    ref_y = ranges.label_ranges(ref_game, setting.ref_train)
    flat = [s for r in ref_game for s in r.samples]
    rs_t, rs_r = (a.reshape(len(ref_game), p.n_samples) for a in setting.logp(flat, "reference's range samples"))
    grid = sweep_grid(p)
    q, rows = {}, []
    for b in p.backbones:
        s = setting.point(
            b, rs_r, rs_t, stand_in=True
        )  # the reference is the stand-in target, the target its reference
        q_s, q_e, table = range_scores.sweep_trim(s[ref_y], s[~ref_y], grid)
        q[b] = (q_s, q_e)
        rows += sweep_rows(table, label(b))
    return Trims(q, pd.DataFrame(rows), int(ref_y.sum()), int((~ref_y).sum()), setting.ref_name, p.n_samples, ref_game)
