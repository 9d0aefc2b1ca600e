"""The main-results run (:class:`MainRun`) and what is read off its scores on the same texts.

:func:`indexed` gives a score frame the (side, position) index that pairs a text across frames;
the rest turns pairs into paired AUC differences (:func:`paired`), their seed spread (measured
over seed replicates, or estimated from the replicated sizes) and the effect frames the verdicts
decide on. Shared by the chapter's module (:mod:`mimirlib.experiments.main_results`) and its
second table (:mod:`mimirlib.experiments.after_paper`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from mimirlib.core import metrics
from mimirlib.experiments.suite import Suite
from mimirlib.verdicts import effect_from_paired, seed_sd
from mimirlib.verdicts import main_results as rules
from mimirlib.core.signals import cache_note

REF = rules.REFERENCE  # the shown name of the reference attack with the main (first) reference model
NE = "ne"  # the neighbourhood attack, scored on the first ``ne_samples`` pairs only


@dataclass
class MainRun:
    """Everything the chapter shows, from one scoring pass.

    ``results``: one row per (model, domain, attack column): AUC with its bootstrap interval,
    TPR at 1% and 0.1% FPR, ``min_resolvable_fpr``, sizes; ``target`` is the model's label,
    ``base`` the label of the model it replicates (itself for seed 0), ``seed_index`` 0, 1, 2...
    ``scores``: (model label, domain) -> scores indexed by (is_member, position within its side),
    one column per attack (``ne`` is NaN outside its subset), so two columns pair on the same texts.
    """

    results: pd.DataFrame
    scores: dict
    targets: list[str]  # the one-epoch targets' labels, smallest first
    natural: tuple[str, str] | None  # (deduplicated target, its natural-data twin), labels
    replicates: dict[str, list[str]]  # base label -> [base, seed replicate labels...]
    main_ref: str | None  # the score column of the reference attack shown as ``ref``
    attacks: list[str]  # shown attack names, in the order asked for
    n_bootstrap: int = 1000
    seed: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    scale: dict = field(default_factory=dict)  # largest target's params and tokens seen (lab only)
    memo: dict = field(default_factory=dict, repr=False)  # paired effects, computed once per run
    suite: Suite | None = field(default=None, repr=False)  # the models and benchmarks it ran on
    # The attacks after the paper (an ``after_paper.AfterPaperPlan``), read and checked before any scoring.
    after_plan: object = field(default=None, repr=False)

    @property
    def smallest(self) -> str:
        return self.targets[0]

    @property
    def largest(self) -> str:
        return self.targets[-1]

    def column(self, attack: str) -> str:
        """The score column behind a shown attack name."""
        return self.main_ref if attack == REF and self.main_ref else attack

    @property
    def cache_note(self) -> str:
        return cache_note(self.cache_hits, self.cache_misses)


def fmt(x, spec: str, missing: str = "n/a") -> str:
    """``x`` formatted for the prose, ``missing`` when it is None or not finite."""
    return missing if x is None or (isinstance(x, float) and not np.isfinite(x)) else format(x, spec)


# ----------------------------------------------------------------------------- score frames


def indexed(scores: pd.DataFrame) -> pd.DataFrame:
    """A ``score_benchmark`` frame (``is_member`` column, members first) indexed by
    (is_member, position within its side), the key that pairs the same text across frames."""
    member = scores["is_member"].astype(bool)
    pos = member.groupby(member).cumcount()
    out = scores.drop(columns="is_member")
    out.index = pd.MultiIndex.from_arrays([member.to_numpy(), pos.to_numpy()], names=["is_member", "pos"])
    return out


def evaluate_columns(frame: pd.DataFrame, *, n_bootstrap: int, seed: int) -> pd.DataFrame:
    """``metrics.evaluate`` of each column of an :func:`indexed` frame, on the texts it scored."""
    member = frame.index.get_level_values("is_member").to_numpy().astype(bool)
    rows = []
    for col in frame.columns:
        s = frame[col].to_numpy(dtype=float)
        ok = np.isfinite(s)
        rec = metrics.evaluate(s[member & ok], s[~member & ok], n_resamples=n_bootstrap, seed=seed)
        rows.append({"attack": col, **rec})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- paired effects and seeds


def _pair(run: MainRun, domain: str, a: tuple[str, str], b: tuple[str, str]) -> pd.DataFrame:
    """Columns ``a`` and ``b``: the two (model, attack) scores on the texts both scored."""
    x = run.scores[(a[0], domain)][run.column(a[1])]
    y = run.scores[(b[0], domain)][run.column(b[1])]
    return pd.concat([x.rename("a"), y.rename("b")], axis=1).dropna()


def paired(run: MainRun, domain: str, a: tuple[str, str], b: tuple[str, str]) -> metrics.PairedDifference:
    """AUC(a) - AUC(b), each a (model label, attack), paired on the texts both scored."""
    return _paired_mean(run, domain, [(a, b)])


def _paired_mean(run: MainRun, domain: str, comparisons: list) -> metrics.PairedDifference:
    """The mean of AUC(a) - AUC(b) over ``comparisons`` ((a, b) pairs), on the texts every one scored,
    with one paired bootstrap over those texts (``metrics.seed_averaged_auc_difference``)."""
    frames = [_pair(run, domain, a, b) for a, b in comparisons]
    common = frames[0].index
    for f in frames[1:]:
        common = common.intersection(f.index, sort=False)
    m = common.get_level_values("is_member").to_numpy().astype(bool)
    aligned = [f.loc[common] for f in frames]
    seeds = [(f.a[m], f.a[~m], f.b[m], f.b[~m]) for f in aligned]
    return metrics.seed_averaged_auc_difference(seeds, n_resamples=run.n_bootstrap, seed=run.seed)


def point_difference(run: MainRun, domain: str, a: tuple[str, str], b: tuple[str, str]) -> float:
    """AUC(a) - AUC(b) on the texts both scored (no bootstrap)."""
    both = _pair(run, domain, a, b)
    m = both.index.get_level_values("is_member").to_numpy().astype(bool)
    return metrics.auc(both.a[m], both.a[~m]) - metrics.auc(both.b[m], both.b[~m])


def has_spread(seeds) -> bool:
    """Whether a model's trained seeds (its replicates) give a seed spread: at least two of them."""
    return len(seeds) >= 2


def replicated_targets(run: MainRun) -> list[str]:
    """The one-epoch targets trained with more than one seed."""
    return [t for t in run.targets if has_spread(run.replicates.get(t, []))]


def pooled_sd(sds) -> float | None:
    """The root-mean-square of several seed sds (their variances averaged), or None if none."""
    v = [s for s in sds if s is not None]
    return float(np.sqrt(np.mean(np.square(v)))) if v else None


def auc_seed_sd(run: MainRun, model: str, domain: str, attack: str) -> tuple[float | None, int, str]:
    """(seed sd of AUC, seeds, "measured" | "estimated" | "none"). A model without replicates gets
    the pooled seed sd of the replicated one-epoch targets for the same (domain, attack)."""
    reps = run.replicates.get(model, [model])
    if has_spread(reps):
        return seed_sd([_auc(run, r, domain, attack) for r in reps]), len(reps), "measured"
    others = replicated_targets(run)
    if not others:
        return None, 1, "none"
    sds = [auc_seed_sd(run, t, domain, attack)[0] for t in others]
    return pooled_sd(sds), len(run.replicates[others[0]]), "estimated"


def _auc(run: MainRun, model: str, domain: str, attack: str) -> float:
    r = run.results
    row = r[(r.target == model) & (r.domain == domain) & (r.attack == run.column(attack))]
    return float(row.auc.iloc[0])


def models_seed_sd(run: MainRun, domain: str, attack: str, a: str, b: str) -> tuple[float | None, int, str]:
    """Seed sd of AUC(a) - AUC(b) for one attack: measured (seed i of a against seed i of b) when both
    models have replicates, else sqrt(sd_a^2 + sd_b^2) with each sd from :func:`auc_seed_sd`."""
    ra, rb = run.replicates.get(a, [a]), run.replicates.get(b, [b])
    if has_spread(ra) and has_spread(rb):
        k = min(len(ra), len(rb))
        d = [point_difference(run, domain, (ra[i], attack), (rb[i], attack)) for i in range(k)]
        return seed_sd(d), k, "measured"
    (sa, na, _), (sb, nb, _) = auc_seed_sd(run, a, domain, attack), auc_seed_sd(run, b, domain, attack)
    if sa is None or sb is None:
        return None, 1, "none"
    return float(np.hypot(sa, sb)), max(na, nb), "estimated"


def attacks_seed_sd(run: MainRun, domain: str, model: str, a: str, b: str) -> tuple[float | None, int, str]:
    """Seed sd of AUC(attack a) - AUC(attack b) on one model: measured over its replicates, else the
    pooled seed sd of the same difference on the replicated one-epoch targets."""
    reps = run.replicates.get(model, [model])
    if has_spread(reps):
        return seed_sd([point_difference(run, domain, (r, a), (r, b)) for r in reps]), len(reps), "measured"
    others = replicated_targets(run)
    if not others:
        return None, 1, "none"
    sds = [attacks_seed_sd(run, domain, t, a, b)[0] for t in others]
    return pooled_sd(sds), len(run.replicates[others[0]]), "estimated"


def seed_pairs(run: MainRun, a: tuple[str, str], b: tuple[str, str]) -> list[tuple[tuple[str, str], tuple[str, str]]]:
    """The (a, b) comparisons an effect averages: seed i of a's model against seed i of b's when both
    models have seed replicates (each replicate against itself when a and b are attacks on one
    model), else the one comparison ``(a, b)``."""
    ra, rb = run.replicates.get(a[0], [a[0]]), run.replicates.get(b[0], [b[0]])
    if a[0] == b[0]:
        return [((r, a[1]), (r, b[1])) for r in ra]
    if has_spread(ra) and has_spread(rb):
        return [((x, a[1]), (y, b[1])) for x, y in zip(ra, rb)]
    return [(a, b)]


def seed_averaged(run: MainRun, domain: str, a: tuple[str, str], b: tuple[str, str]) -> tuple:
    """(``metrics.PairedDifference`` of the mean over :func:`seed_pairs` of AUC(a) - AUC(b), how many
    seeds it averages): one bootstrap over the texts every comparison scored."""
    comparisons = seed_pairs(run, a, b)
    return _paired_mean(run, domain, comparisons), len(comparisons)


def _effect_row(run, domain, attack, a, b, sd_info) -> dict:
    d, averaged = seed_averaged(run, domain, a, b)
    sd, n_seeds, source = sd_info
    unreplicated = [m for m in dict.fromkeys((a[0], b[0])) if len(run.replicates.get(m, [m])) < 2]
    e = effect_from_paired(d, seed_sd=sd, n_seeds=n_seeds, label=f"{domain}/{attack}", averaged=averaged)
    return {
        "domain": domain,
        "attack": attack,
        "a": f"{a[0]}:{a[1]}",
        "b": f"{b[0]}:{b[1]}",
        "estimate": e.estimate,
        "lo": e.lo,
        "hi": e.hi,
        "seed_sd": sd,
        "n_seeds": n_seeds,
        "averaged": e.averaged,
        "seed_sd_from": source,
        "seed_sd_imputed_for": ", ".join(unreplicated) if source == "estimated" else "",
        "n_members": d.n_members,
        "n_nonmembers": d.n_nonmembers,
    }


EFFECT_COLUMNS = [
    "domain",
    "attack",
    "a",
    "b",
    "estimate",
    "lo",
    "hi",
    "seed_sd",
    "n_seeds",
    "averaged",  # over how many seeds the estimate is the mean (1: seed 0's alone; verdicts.Effect)
    "seed_sd_from",
    "seed_sd_imputed_for",  # the models whose seed sd was imputed from the replicated sizes ("" when measured)
    "n_members",
    "n_nonmembers",
]


def domains_of(run: MainRun) -> list[str]:
    """The domains of the run, in the order they were scored."""
    return list(dict.fromkeys(run.results.domain))


def has_scores(run: MainRun, model: str, domain: str, attack: str) -> bool:
    """Whether ``model`` was scored on ``domain`` with ``attack`` (a shown name)."""
    return (model, domain) in run.scores and run.column(attack) in run.scores[(model, domain)].columns


def size_effects(run: MainRun) -> pd.DataFrame:
    """Per (domain, attack): AUC(largest target) - AUC(smallest target) on the same texts, with the
    paired bootstrap interval and the seed sd of that difference. Empty with one target."""
    if "size_effects" not in run.memo:
        run.memo["size_effects"] = _size_effects(run)
    return run.memo["size_effects"].copy()


def _size_effects(run: MainRun) -> pd.DataFrame:
    if len(run.targets) < 2:
        return pd.DataFrame(columns=EFFECT_COLUMNS)
    rows = [
        _effect_row(
            run, d, att, (run.largest, att), (run.smallest, att), models_seed_sd(run, d, att, run.largest, run.smallest)
        )
        for d in domains_of(run)
        for att in run.attacks
        if has_scores(run, run.largest, d, att) and has_scores(run, run.smallest, d, att)
    ]
    return pd.DataFrame(rows, columns=EFFECT_COLUMNS)


def dedup_effects(run: MainRun) -> pd.DataFrame:
    """Per (domain, attack): AUC(natural-data twin) - AUC(its deduplicated twin) on the same texts
    (positive = deduplication lowers the AUC). Empty without a natural-data twin."""
    if "dedup_effects" not in run.memo:
        run.memo["dedup_effects"] = _dedup_effects(run)
    return run.memo["dedup_effects"].copy()


def _dedup_effects(run: MainRun) -> pd.DataFrame:
    if run.natural is None:
        return pd.DataFrame(columns=EFFECT_COLUMNS)
    dd, nat = run.natural
    rows = [
        _effect_row(run, d, att, (nat, att), (dd, att), models_seed_sd(run, d, att, nat, dd))
        for d in domains_of(run)
        for att in run.attacks
        if has_scores(run, nat, d, att) and has_scores(run, dd, d, att)
    ]
    return pd.DataFrame(rows, columns=EFFECT_COLUMNS)


def best_attack_effects(run: MainRun) -> pd.DataFrame:
    """Per (domain, other attack): AUC(ref) - AUC(other) against the largest target, paired on the
    texts both scored (the neighbourhood attack's subset for ``ne``). Empty without ``ref``."""
    if "best_attack_effects" not in run.memo:
        run.memo["best_attack_effects"] = _best_attack_effects(run)
    return run.memo["best_attack_effects"].copy()


def _best_attack_effects(run: MainRun) -> pd.DataFrame:
    if REF not in run.attacks or not run.main_ref:
        return pd.DataFrame(columns=EFFECT_COLUMNS)
    m = run.largest
    rows = [
        _effect_row(run, d, att, (m, REF), (m, att), attacks_seed_sd(run, d, m, REF, att))
        for d in domains_of(run)
        for att in run.attacks
        if att != REF and has_scores(run, m, d, att) and has_scores(run, m, d, REF)
    ]
    return pd.DataFrame(rows, columns=EFFECT_COLUMNS)
