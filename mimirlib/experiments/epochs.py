"""The epochs chapter (MIMIR §3.2.1, Figure 2 right): fixed-budget multi-epoch runs, their AUCs and paired gains.

:func:`run` scores every epoch run of the chapter's lab (and the seed replicates its seed spread is
borrowed from); :func:`verdicts` decides the chapter's claims on the run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Sequence

import pandas as pd

from mimirlib.core import metrics
from mimirlib.core.data import Benchmark, load_benchmark
from mimirlib.core.scoring import member_nonmember
from mimirlib.core.signals import ScoringOptions, SignalCache, cache_note
from mimirlib.display import report
from mimirlib.experiments.model_scores import (
    REFERENCE_KEY,
    attacks_in,
    auc_table,
    model_effects,
    paired_row,
    score_targets,
    texts_of,
)
from mimirlib.experiments import silo as silo_exp
from mimirlib.experiments.params import Params
from mimirlib.lab.build import lab_for
from mimirlib.lab.layout import Lab, epochs_run_name
from mimirlib.verdicts import Verdict
from mimirlib.verdicts import epochs as rules

SPLIT = "epochs"  # the lab's benchmark whose members every epoch run trained on
EDGE_COLUMNS = ["domain", "attack", "a", "b", "auc_a", "auc_b", "estimate", "lo", "hi", "seed_sd", "n_seeds"]


def epoch_runs(lab: Lab) -> list[str]:
    """The fixed-budget runs that trained on the epochs benchmark's members, fewest epochs first
    (the shadow run ``epochs-*-ref``, which never saw them, and a run's seed replicates excluded)."""
    models = lab.manifest["models"]
    names = [epochs_run_name(lab.config, e) for e in (lab.config.get("epochs") or {}).get("runs", [])]
    return sorted((m for m in names if m in models), key=lambda m: models[m]["config"]["epochs"])


def epochs_of(lab: Lab, model: str) -> int:
    return int(lab.manifest["models"][model]["config"]["epochs"])


def benchmarks(lab: Lab, n_samples: int | None = None, split: str = SPLIT) -> dict[str, Benchmark]:
    """The benchmark of each lab domain, capped at ``n_samples`` members (and non-members)."""
    return {d: load_benchmark(lab.benchmarks_dir, d, split).subset(n_samples) for d in lab.config["domains"]}


def score_models(
    lab: Lab,
    models: Sequence[str],
    benches: dict[str, Benchmark],
    attacks: Sequence[str],
    *,
    options: ScoringOptions | None = None,
    attack_params: dict | None = None,
) -> pd.DataFrame:
    """Per-text scores of lab ``models`` (final weights), one row per (model, domain, text), as
    :func:`mimirlib.experiments.model_scores.score_targets` returns."""
    targets = {name: (name, None) for name in models}
    return score_targets(lab, targets, benches, attacks, options=options, attack_params=attack_params)


def attack_effects(
    scores: pd.DataFrame,
    model: str,
    attack_a: str,
    attack_b: str,
    *,
    replicates: pd.DataFrame | None = None,
    n_bootstrap: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """AUC(``attack_a``) - AUC(``attack_b``) of one model per domain, paired over the shared texts.
    ``replicates`` (scores of seed replicates of a comparable model, as from :func:`score_models`)
    adds ``seed_sd``: the seed-to-seed sd of the same attack difference. Empty if an attack was
    not run."""
    if attack_a not in scores.columns or attack_b not in scores.columns:
        return pd.DataFrame(columns=["domain", "a", "b", "estimate", "lo", "hi", "seed_sd", "n_seeds"])
    rows = [
        paired_row(scores, (model, attack_a), (model, attack_b), d, n_bootstrap, seed) for d in pd.unique(scores.domain)
    ]
    out = pd.DataFrame(rows).assign(a=attack_a, b=attack_b, model=model)
    return out.merge(attack_spread(replicates, attack_a, attack_b), on="domain", how="left").fillna({"n_seeds": 1})


def attack_spread(replicates: pd.DataFrame | None, attack_a: str, attack_b: str) -> pd.DataFrame:
    """Seed-to-seed sd of AUC(``attack_a``) - AUC(``attack_b``) per domain over ``replicates`` (as
    from :func:`score_models`): columns domain, seed_sd, n_seeds; no row with fewer than two seeds."""
    empty = pd.DataFrame({"domain": pd.Series(dtype=object), "seed_sd": float(), "n_seeds": int()})
    if replicates is None or replicates.empty:
        return empty
    aucs = seed_aucs(replicates).pivot_table(index=["domain", "model"], columns="attack", values="auc")
    diff = (aucs[attack_a] - aucs[attack_b]).groupby(level="domain")
    spread = pd.DataFrame({"seed_sd": diff.std(ddof=1), "n_seeds": diff.count()}).reset_index()
    return spread[spread.n_seeds >= 2].reset_index(drop=True)


def reference_edges(
    scores: pd.DataFrame,
    model: str,
    *,
    replicates: pd.DataFrame | None = None,
    n_bootstrap: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """AUC(reference attack) - AUC(each other attack) of ``model`` per (domain, attack), paired on
    the same texts (:func:`attack_effects`); ``attack`` names the other attack, ``auc_a`` is the
    reference attack's AUC and ``auc_b`` the other's. Empty when the reference attack was not run."""
    others = [c for c in attacks_in(scores) if c != REFERENCE_KEY]
    if REFERENCE_KEY not in scores.columns or not others:
        return pd.DataFrame(columns=EDGE_COLUMNS)
    kw = dict(replicates=replicates, n_bootstrap=n_bootstrap, seed=seed)
    frames = [attack_effects(scores, model, REFERENCE_KEY, o, **kw).assign(attack=o) for o in others]
    return pd.concat(frames, ignore_index=True)[EDGE_COLUMNS + ["n_members", "n_nonmembers"]]


def margin_growth(
    scores: pd.DataFrame,
    most: str,
    fewest: str,
    *,
    replicates: pd.DataFrame | None = None,
    n_bootstrap: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """How much the reference attack's margin over each other attack grows from run ``fewest`` to
    run ``most``: [AUC(ref) - AUC(other)] on ``most`` minus the same on ``fewest``, per (domain,
    attack), by ``metrics.paired_gain_difference`` (members resampled once for all four AUCs; the
    two runs' non-members, the same texts here, are resampled independently, which can only widen
    the interval). Seed sd: sqrt(2) x that of the attack difference (two trained models)."""
    others = [c for c in attacks_in(scores) if c != REFERENCE_KEY]
    if REFERENCE_KEY not in scores.columns or not others:
        return pd.DataFrame(columns=EDGE_COLUMNS)
    rows = []
    for d in pd.unique(scores.domain):
        new, old = texts_of(scores, most, d), texts_of(scores, fewest, d)
        if len(new) != len(old) or not (new.pos.to_numpy() == old.pos.to_numpy()).all():
            raise ValueError(f"{most} and {fewest} were not scored on the same {d} texts")
        for o in others:
            g = metrics.paired_gain_difference(
                member_nonmember(new, REFERENCE_KEY),
                member_nonmember(old, REFERENCE_KEY),
                member_nonmember(new, o),
                member_nonmember(old, o),
                n_resamples=n_bootstrap,
                seed=seed,
            )
            rows.append({"domain": d, "attack": o, "estimate": g.point, "lo": g.lo, "hi": g.hi})
    out = pd.DataFrame(rows).assign(a=most, b=fewest)
    spread = pd.concat([attack_spread(replicates, REFERENCE_KEY, o).assign(attack=o) for o in others])
    spread = spread.assign(seed_sd=spread.seed_sd * math.sqrt(2))
    return out.merge(spread, on=["domain", "attack"], how="left").fillna({"n_seeds": 1})


def seed_aucs(scores: pd.DataFrame) -> pd.DataFrame:
    """The AUC of every (domain, model, attack) of a :func:`score_models` frame, one row each."""
    rows = []
    for (d, m), g in scores.groupby(["domain", "model"], sort=False):
        for c in attacks_in(scores):
            rows.append({"domain": d, "model": m, "attack": c, "auc": metrics.auc(*member_nonmember(g, c))})
    return pd.DataFrame(rows)


def seed_spread(scores: pd.DataFrame) -> pd.DataFrame:
    """Seed-to-seed sd of the AUC per (domain, attack) over the models of ``scores`` (seed
    replicates of one recipe, scored on the same texts): ``auc_seed_sd``, ``n_seeds``."""
    aucs = seed_aucs(scores)
    out = (
        aucs.groupby(["domain", "attack"], sort=False)
        .auc.agg(auc_seed_sd=lambda x: x.std(ddof=1), n_seeds="count")
        .reset_index()
    )
    return out[out.n_seeds >= 2].reset_index(drop=True)


@dataclass
class EpochsRun:
    """What the chapter shows: AUCs pooled and per domain, and the paired effects its verdicts use."""

    runs: list[str]  # the epoch runs, fewest epochs first
    pooled: pd.DataFrame  # AUC per (model, attack), domains pooled, with epochs and tokens seen
    by_domain: pd.DataFrame  # AUC per (model, domain, attack)
    gains: pd.DataFrame  # most-epochs run minus 1-epoch run, per (domain, attack), paired
    ref_edges: pd.DataFrame  # reference attack minus each other attack on the most-epochs run, per (domain,
    #                          attack), paired (seed sd of the same difference from the seed proxy's replicates)
    ref_growth: pd.DataFrame  # that margin on the most-epochs run minus on the 1-epoch run, per (domain, attack)
    spread: pd.DataFrame  # seed sd of the AUC per (domain, attack), from the seed-proxy's replicates
    seed_models: list[str]  # the replicates the seed spread comes from
    n_members: int  # per domain (as many non-members)
    domains: list[str] = field(default_factory=list)
    budget_tokens: float = 0.0  # median tokens seen per run
    cache_hits: int = 0
    cache_misses: int = 0
    lab: Lab | None = field(default=None, repr=False)  # the lab it ran on
    silo: silo_exp.SiloRun | None = None  # the SILO-style run, or None when the lab has none

    @property
    def cache_note(self) -> str:
        return cache_note(self.cache_hits, self.cache_misses)

    @property
    def fewest(self) -> int:
        return int(self.pooled.epochs.min())

    @property
    def most(self) -> int:
        return int(self.pooled.epochs.max())

    def size_text(self) -> str:
        """The sample size the verdicts rest on, in words."""
        seeds = (
            f"seed sd from {len(self.seed_models)} seeds of {self.seed_models[0]}"
            if len(self.seed_models) > 1
            else "no seed replicates"
        )
        return (
            f"{self.n_members} + {self.n_members} texts x {len(self.domains)} domains, one training seed per "
            f"run ({seeds})"
        )


def seed_proxy(lab: Lab) -> list[str]:
    """The one-epoch target of the epoch runs' size and its seed replicates: the epoch runs have one
    seed each, so the seed spread of their AUCs is borrowed from the same-size target."""
    return lab.seed_replicates(lab.target(lab.config["epochs"]["size"]))


def run(p: Params, lab: Lab | None = None) -> EpochsRun:
    """Score every epoch run (and the seed proxy's replicates) on the epochs benchmark; AUCs and
    the paired effects: most-epochs minus 1-epoch per (domain, attack), the reference attack minus
    each other attack on the most-epochs run, and the growth of that margin from the 1-epoch run.
    ``lab``: the chapter's (``p.profile``, built if missing) unless given."""
    lab = lab or lab_for(p)
    cache = SignalCache.default()
    runs = epoch_runs(lab)
    if len(runs) < 2:
        raise ValueError(f"the lab has {len(runs)} epoch run(s); the chapter compares at least two")
    benches = benchmarks(lab, p.n_samples)
    kw = dict(options=p.scoring(cache=cache), attack_params=p.attack_params())
    scores = score_models(lab, runs, benches, p.attacks, **kw)
    proxies = seed_proxy(lab)
    replicates = score_models(lab, proxies, benches, p.attacks, **kw) if len(proxies) > 1 else None
    spread = seed_spread(replicates) if replicates is not None else None
    meta = pd.DataFrame(
        [{"model": m, "epochs": epochs_of(lab, m), "tokens": lab.manifest["models"][m]["tokens_seen"]} for m in runs]
    )
    boot = dict(n_bootstrap=p.n_bootstrap, seed=p.seed)
    pooled = auc_table(scores, ("model",), **boot).merge(meta, on="model")
    by_domain = auc_table(scores, ("model", "domain"), **boot).merge(meta, on="model")
    gains = model_effects(scores, runs[-1], runs[0], spread=spread, **boot)
    edges = reference_edges(scores, runs[-1], replicates=replicates, **boot)
    growth = margin_growth(scores, runs[-1], runs[0], replicates=replicates, **boot)
    seeds = f"seed sd imputed from {len(proxies)} seeds of {proxies[0]}" if len(proxies) > 1 else "no seed replicates"
    silo = silo_exp.run(lab, benches, list(p.attacks), split=SPLIT, spread=spread, seed_note=seeds, **kw, **boot)
    return EpochsRun(
        runs,
        pooled,
        by_domain,
        gains,
        edges,
        growth,
        spread if spread is not None else pd.DataFrame(),
        proxies if len(proxies) > 1 else [],
        min(len(b.members) for b in benches.values()),
        list(benches),
        float(meta.tokens.median()),
        cache.hits,
        cache.misses,
        lab,
        silo,
    )


def verdicts(run: EpochsRun) -> list[Verdict]:
    """The chapter's verdicts, in the order the prose refers to them (verdict_0 ... verdict_2)."""
    return [
        rules.more_epochs_more_leakage(run.gains, fewest=run.fewest, most=run.most, n=run.size_text()),
        rules.reference_gains_with_epochs(
            run.ref_edges, run.ref_growth, fewest=run.fewest, most=run.most, n=run.size_text()
        ),
        silo_verdict(run.silo),
    ]


def silo_verdict(silo: silo_exp.SiloRun | None) -> Verdict:
    """The SILO claim decided on the chapter's SILO-style run (not tested without one)."""
    if silo is None:
        return rules.silo_upsampled_domains()
    n = (
        f"{silo.n_members} + {silo.n_members} texts per upsampled domain, {len(silo.ends)} epoch ends of one run "
        f"({silo.seed_note})"
    )
    rows = silo.regime()
    keys = ",".join(r.key for r in rows)
    out = rules.SILO_UPSAMPLED_DOMAINS.out_of_regime(rows, lab_value="-", n=n)
    if out is not None:
        return out
    verdict = rules.silo_upsampled_domains(
        silo.early,
        silo.bend,
        silo.change,
        rises=silo.rises,
        drops=silo.drops,
        upsample=silo.upsample,
        epochs=silo.epochs,
        n=n,
    )
    return replace(verdict, regime=keys)


def regime(run: EpochsRun) -> list:
    """The chapter's fidelity rows: the SILO-style run's upsampled domains' shares (none without the run)."""
    return run.silo.regime() if run.silo is not None else []


def auc_pivot(run: EpochsRun) -> pd.DataFrame:
    """The pooled AUCs, epochs down and attacks across (the numbers behind the figure), with the
    members / non-members each row rests on as the last column."""
    table = run.pooled.pivot_table(index="epochs", columns="attack", values="auc").round(3)
    return report.with_n(table, run.pooled, ["epochs"])


def gains_table(run: EpochsRun) -> pd.DataFrame:
    """The paired gains per (domain, attack) for display: AUCs at both ends, the difference and
    its interval, and the seed sd of a difference."""
    g = run.gains
    fewest = f"AUC {run.fewest} epoch" + ("" if run.fewest == 1 else "s")
    out = pd.DataFrame(
        {
            "domain": g.domain,
            "attack": g.attack,
            fewest: g.auc_b,
            f"AUC {run.most} epochs": g.auc_a,
            "gain": g.estimate,
            "95% CI low": g.lo,
            "95% CI high": g.hi,
            "seed sd": g.seed_sd,
            report.n_column(["n_members", "n_nonmembers"]): [f"{m} / {n}" for m, n in zip(g.n_members, g.n_nonmembers)],
        }
    )
    return out.set_index(["domain", "attack"]).round(3)
