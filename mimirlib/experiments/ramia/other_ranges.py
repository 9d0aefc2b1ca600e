"""The RaMIA chapter's ranges built otherwise than by the range game: section V-H's redacted texts
(every word with a digit masked, completed by the masked LM) and, beyond both papers, a text with
its benchmark neighbours as a small range on a one-epoch target."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from mimirlib.core import metrics, range_scores
from mimirlib.core.data import load_benchmark
from mimirlib.core.range_stats import paired_difference, range_auc
from mimirlib.display import report
from mimirlib.experiments.ramia.aggregation import BAYES, ties_by_construction
from mimirlib.experiments.ramia.game import Trims
from mimirlib.experiments.ramia.setting import Setting, label, load_weights, round_robin
from mimirlib.lab.layout import neighbour_share
from mimirlib.samplers import ranges

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


def redaction(setting: Setting, trims: Trims) -> Redaction:
    """Section V-H analogue: members and non-members with numbers are redacted, the masked LM proposes
    n_candidates completions; MIA scores one completion (AUC averaged over them), RaMIA their
    trimmed average."""
    p = setting.p
    red_m = round_robin({d: [t for t in b.members if has_numbers(t)] for d, b in setting.parts.items()}, p.n_redacted)
    red_n = round_robin(
        {d: [t for t in b.nonmembers if has_numbers(t)] for d, b in setting.parts.items()}, p.n_redacted
    )
    texts = red_m + red_n
    y = np.array([True] * len(red_m) + [False] * len(red_n))
    cands = ranges.fill_masked_words(
        texts,
        setting.mlm,
        setting.mlm_tok,
        select=ranges.has_digit,
        fill=ranges.has_digit,
        n_candidates=p.n_candidates,
        seed=p.seed,
        top_k=p.mlm_top_k,
        progress=None,
    )
    ct, cr = (
        a.reshape(len(texts), p.n_candidates) for a in setting.logp([c for row in cands for c in row], "completions")
    )
    et, er = setting.logp(texts, "redacted originals")
    rows, paired = [], []
    for b in p.backbones:
        C = setting.point(b, ct, cr)
        tr = range_scores.trimmed_average(C, *trims.q[b])
        mean = range_scores.bayes_factor(C)
        one = float(np.mean([range_auc(C[:, j], y) for j in range(p.n_candidates)]))
        for method, auc in (
            ("MIA (one completion)", one),
            ("mean of completions", range_auc(mean, y)),
            ("RaMIA (trimmed average)", range_auc(tr, y)),
            ("GLRT (max)", range_auc(range_scores.glrt(C), y)),
            ("MIA on the unredacted text", range_auc(setting.point(b, et, er), y)),
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
    swapped: str  # what a neighbour changes, from the lab's settings: "10% of the words"

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
            "beyond_swapped": self.swapped,
        }


def beyond_the_papers(setting: Setting) -> Beyond:
    """The main benchmark's masked-LM neighbours as samples of a small range around each text, on the
    one-epoch target (RMIA with the lab's one-epoch reference): point score against mean and max."""
    p, lab = setting.p, setting.lab
    cfg = lab.config
    name = p.beyond_target or lab.target(cfg["epochs"]["size"])
    target, ref = load_weights(p, lab, name), load_weights(p, lab, cfg["references"][0]["name"])
    parts = [load_benchmark(lab.benchmarks_dir, d, "ngram_13_0.8").subset(p.beyond_samples) for d in cfg["domains"]]
    texts = [t for b in parts for t in b.members] + [t for b in parts for t in b.nonmembers]
    neigh = [list(n) for b in parts for n in b.member_neighbors] + [
        list(n) for b in parts for n in b.nonmember_neighbors
    ]
    y = np.array([True] * sum(len(b.members) for b in parts) + [False] * sum(len(b.nonmembers) for b in parts))
    k = min(len(n) for n in neigh)
    flat = [n[j] for n in neigh for j in range(k)]
    t_x, t_n, z_t = (
        setting.mean_logp(x, target, d)
        for x, d in ((texts, "beyond texts"), (flat, "beyond neighbours"), (setting.population, "beyond z"))
    )
    if any(range_scores.get_backbone(b).needs_reference for b in p.backbones):
        r_x, r_n, z_r = (
            setting.mean_logp(x, ref, d)
            for x, d in ((texts, "beyond texts"), (flat, "beyond neighbours"), (setting.population, "beyond z"))
        )
    else:
        r_x, r_n, z_r = np.zeros_like(t_x), np.zeros_like(t_n), np.zeros_like(z_t)
    t_n, r_n = t_n.reshape(len(texts), k), r_n.reshape(len(texts), k)
    rows = []
    for b in p.backbones:
        x = range_scores.backbone_scores(b, t_x, r_x, z_t, z_r, a=p.rmia_a)
        nb = range_scores.backbone_scores(b, t_n, r_n, z_t, z_r, a=p.rmia_a)
        with_text = np.concatenate([x[:, None], nb], axis=1)
        for method, s in (
            ("point score of the text", x),
            ("mean of the neighbours", range_scores.bayes_factor(nb)),
            ("mean of text and neighbours", range_scores.bayes_factor(with_text)),
            ("max of text and neighbours (GLRT)", range_scores.glrt(with_text)),
        ):
            bs = metrics.bootstrap_auc(s[y], s[~y], n_resamples=p.n_bootstrap, seed=p.seed)
            rows.append({"backbone": label(b), "method": method, "auc": bs.point, "auc_lo": bs.lo, "auc_hi": bs.hi})
    return Beyond(pd.DataFrame(rows), name, int(y.sum()), k, neighbour_share(cfg))
