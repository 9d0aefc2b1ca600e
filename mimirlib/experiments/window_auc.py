"""Within-domain AUC of windows of members against one fixed non-member set, and its joint bootstrap.

The training-size chapter's metric. AUC is computed *within each domain* and averaged with the
members' domain shares (:func:`stratified_auc`): an early window holds few members (9 at the lab's
first checkpoint), and a window that happens to hold mostly one domain would otherwise be scored
on the loss gap between domains, not on membership. Uncertainty comes from one joint bootstrap
(:func:`auc_draws`): members are resampled as a whole (the AUC is a mean over members of each
one's within-domain win rate, so a domain with one member in a window still varies), once per
distinct member set; the fixed non-members are resampled within domain, once per draw for every
model, checkpoint and window. So any difference of two AUCs is paired on whatever texts the two
share: the non-members always, the members too when the windows hold the same documents (a
target and its recency control read the same data in the same order).

A checkpoint chosen on its own AUC (the peak of a curve) is chosen partly for its noise; the texts
are therefore split into two seeded halves (:func:`split_halves`): one to choose on, the other to
measure on (:func:`point_aucs` gives the first half's AUCs without bootstrap).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

MEMBER, NONMEMBER = "member", "nonmember"
WINDOW = ["model", "step", "first", "last"]  # one window of members at one checkpoint of one model
CONFIDENCE = 0.95  # percentile intervals of every AUC and effect
MIN_MEMBERS = 2  # a window with fewer members has no AUC (the first steps of a tiny lab may hold one)
SELECTION, TEST = "selection", "test"  # the halves of :func:`split_halves`: choose on one, measure on the other


def _set_rng(seed: int, ids: Sequence[str], salt: str) -> np.random.Generator:
    """One generator per distinct text set: the same set always gets the same resamples."""
    h = int(hashlib.sha256((salt + "\n" + "\n".join(map(str, ids))).encode()).hexdigest()[:15], 16)
    return np.random.default_rng([int(seed), h])


def stratified_counts(domains: Sequence[str], n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap multiplicities ``(n_resamples, len(domains))``, resampling within each domain, so
    every resample keeps each domain's count."""
    dom = np.asarray(domains)
    counts = np.zeros((int(n_resamples), dom.size), dtype=np.int64)
    rows = np.arange(int(n_resamples))[:, None]
    for d in pd.unique(dom):
        idx = np.flatnonzero(dom == d)
        draw = rng.integers(0, idx.size, size=(int(n_resamples), idx.size)) + rows * idx.size
        counts[:, idx] = np.bincount(draw.ravel(), minlength=int(n_resamples) * idx.size).reshape(-1, idx.size)
    return counts


def stratified_auc(
    member_scores,
    member_domains,
    nonmember_scores,
    nonmember_domains,
    member_counts: np.ndarray | None = None,
    nonmember_counts: np.ndarray | None = None,
):
    """AUC within each domain (members against the non-members of their own domain, ties half),
    averaged with the members' domain shares: the mean over members of each one's share of
    same-domain non-members it outscores. With bootstrap multiplicities (rows of
    :func:`stratified_counts`; the non-members' must keep each domain's count), one AUC per row;
    without, the point AUC (a float)."""
    ms, ns = np.asarray(member_scores, float), np.asarray(nonmember_scores, float)
    md, nd = np.asarray(member_domains), np.asarray(nonmember_domains)
    point = member_counts is None
    cm = np.ones((1, ms.size)) if point else np.asarray(member_counts, float)
    cn = np.ones((1, ns.size)) if point else np.asarray(nonmember_counts, float)
    out = np.zeros(cm.shape[0])
    for d in pd.unique(md):
        i, j = md == d, nd == d
        if not j.any():
            raise ValueError(f"domain {d!r} has members but no non-members: a within-domain AUC needs both")
        c = (ms[i][:, None] > ns[j][None, :]) + 0.5 * (ms[i][:, None] == ns[j][None, :])
        out += np.einsum("bi,bi->b", cm[:, i], cn[:, j] @ c.T) / j.sum()
    out /= cm.sum(axis=1)
    return float(out[0]) if point else out


@dataclass
class AucDraws:
    """Point AUCs and joint bootstrap draws: ``table`` has one row per (model, step, first, last,
    attack) with auc, auc_lo, auc_hi, n_members, n_nonmembers; ``draws[:, i]`` are row *i*'s AUCs."""

    table: pd.DataFrame
    draws: np.ndarray

    def index(self, model: str, step: int, first: int, last: int, attack: str) -> int:
        t = self.table
        hit = np.flatnonzero(
            (t.model == model) & (t.step == step) & (t["first"] == first) & (t["last"] == last) & (t.attack == attack)
        )
        if hit.size != 1:
            raise KeyError(f"no AUC for {model}@{step} window {first}..{last}, attack {attack!r}")
        return int(hit[0])

    def difference(self, a: int, b: int) -> tuple[float, float, float]:
        """AUC(row a) - AUC(row b): point and percentile interval from the joint draws."""
        return interval(self.table.auc.iat[a] - self.table.auc.iat[b], self.draws[:, a] - self.draws[:, b])


def interval(point: float, draws: np.ndarray) -> tuple[float, float, float]:
    alpha = 1.0 - CONFIDENCE
    lo, hi = np.quantile(draws, [alpha / 2, 1 - alpha / 2])
    return float(point), float(lo), float(hi)


def auc_draws(scores: pd.DataFrame, n_resamples: int = 1000, seed: int = 0) -> AucDraws:
    """Within-domain AUC of every (window, attack) of ``scores`` (as :func:`score_windows` returns)
    and its draws in one joint bootstrap: the non-members (one fixed set, checked) are resampled
    within domain once per draw for all rows; each distinct member set is resampled (as a whole)
    once per draw for all rows that hold it."""
    groups = list(scores.groupby(WINDOW + ["attack"], sort=False))
    fixed = groups[0][1][groups[0][1].role == NONMEMBER] if groups else scores
    non_ids = list(fixed.id)
    cn = stratified_counts(list(fixed.domain), n_resamples, _set_rng(seed, non_ids, NONMEMBER))
    member_counts: dict[tuple, np.ndarray] = {}
    rows, cols = [], []
    for key, g in groups:
        m, n = g[g.role == MEMBER], g[g.role == NONMEMBER]
        if list(n.id) != non_ids:
            raise ValueError(f"{key}: the non-members differ from the fixed set; every window must share them")
        if len(m) < MIN_MEMBERS:
            continue
        ids = tuple(m.id)
        if ids not in member_counts:
            # members resampled as one stratum: a mean over members of their within-domain win rates
            member_counts[ids] = stratified_counts([MEMBER] * len(ids), n_resamples, _set_rng(seed, ids, MEMBER))
        point = stratified_auc(m.score, m.domain, n.score, n.domain)
        d = stratified_auc(m.score, m.domain, n.score, n.domain, member_counts[ids], cn)
        _, lo, hi = interval(point, d)
        rows.append(
            dict(zip(WINDOW + ["attack"], key))
            | {"auc": point, "auc_lo": lo, "auc_hi": hi, "n_members": len(m), "n_nonmembers": len(n)}
        )
        cols.append(d)
    table = pd.DataFrame(rows, columns=WINDOW + ["attack", "auc", "auc_lo", "auc_hi", "n_members", "n_nonmembers"])
    return AucDraws(table, np.column_stack(cols) if cols else np.zeros((int(n_resamples), 0)))


def split_halves(scores: pd.DataFrame, seed: int = 0) -> pd.Series:
    """The half (:data:`SELECTION` or :data:`TEST`) of every row's text, a seeded random split
    stratified by role, domain and the first window (in :data:`WINDOW` order) that holds the text:
    each stratum's ids, permuted, go alternately to the test and the selection half (the test half
    takes an odd one out). So each window's own members split evenly, and a text sits in the same
    half in every window, checkpoint and model (early windows overlap, the non-members are fixed)."""
    texts = scores[WINDOW + ["role", "domain", "id"]].drop_duplicates().sort_values(WINDOW + ["role", "id"])
    texts = texts.drop_duplicates(["role", "id"])  # each text at the first window that holds it
    half = {}
    for key, g in texts.groupby(["role", "domain"] + WINDOW, sort=True):
        ids = list(g.id)
        order = _set_rng(seed, ids, "split/" + "/".join(map(str, key))).permutation(len(ids))
        half |= {(key[0], ids[j]): TEST if rank % 2 == 0 else SELECTION for rank, j in enumerate(order)}
    return pd.Series([half[k] for k in zip(scores.role, scores.id)], index=scores.index, name="half")


def point_aucs(scores: pd.DataFrame) -> pd.DataFrame:
    """The point within-domain AUC of every (window, attack) of ``scores`` with at least
    :data:`MIN_MEMBERS` members (no bootstrap: for choosing, not for intervals). Members of a domain
    without non-members in ``scores`` (a half of a one-per-domain set) are left out."""
    rows = []
    for key, g in scores.groupby(WINDOW + ["attack"], sort=False):
        m, n = g[g.role == MEMBER], g[g.role == NONMEMBER]
        m = m[m.domain.isin(set(n.domain))]
        if len(m) >= MIN_MEMBERS:
            auc = stratified_auc(m.score, m.domain, n.score, n.domain)
            rows.append(dict(zip(WINDOW + ["attack"], key)) | {"auc": auc, "n_members": len(m)})
    return pd.DataFrame(rows, columns=WINDOW + ["attack", "auc", "n_members"])
