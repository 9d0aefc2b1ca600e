"""Main results (MIMIR §3.1: Tables 1, 6 and 11, Figures 1 and 12): every attack against the one-epoch
suite, its natural-data twin and their seed replicates, and the paired effects the verdicts decide on.

:func:`run` resolves the chapter's suite, checks the attacks after the paper
(:mod:`mimirlib.experiments.after_paper`, the second table), scores every model once (signals
cached on disk) and evaluates every attack; the other functions turn a
:class:`~mimirlib.experiments.main_scores.MainRun` into the chapter's tables, figures, seed spread
and verdicts (its paired effects are in :mod:`mimirlib.experiments.main_scores`). Attack names in
the tables are the shown ones: the reference attack with the first reference model is ``ref``; the
other references keep their ``ref:<name>`` column.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from mimirlib.core import metrics
from mimirlib.core.scoring import score_benchmark
from mimirlib.core.signals import ScoringOptions, SignalCache
from mimirlib.display import plots, report
from mimirlib.experiments import after_paper
from mimirlib.experiments.main_scores import (
    NE,
    REF,
    MainRun,
    auc_seed_sd,
    best_attack_effects,
    dedup_effects,
    domains_of,
    evaluate_columns,
    fmt,
    has_spread,
    has_scores,
    indexed,
    pooled_sd,
    replicated_targets,
    size_effects,
)
from mimirlib.experiments.params import Params
from mimirlib.experiments.suite import Suite, suite_for
from mimirlib.verdicts import SEED_Z, Verdict
from mimirlib.verdicts import main_results as rules
from mimirlib.verdicts import regime as fidelity
from mimirlib.verdicts.regime import Regime

# Parameters of Pythia-dedup-12B, the paper's largest target (MIMIR §3, "Target models"): the
# yardstick for how much smaller the lab's models are.
PYTHIA_LARGEST_PARAMS = 12e9


# ----------------------------------------------------------------------------- scoring


def run(p: Params, suite: Suite | None = None) -> MainRun:
    """Score every one-epoch target, the natural-data twin and every seed replicate of them on each
    domain's benchmark (:func:`score_suite`), and evaluate each attack. ``suite``: the chapter's
    (:func:`mimirlib.experiments.suite.suite_for`) unless given. The attacks after the paper are
    planned, and their inputs checked, before any scoring."""
    suite = suite or suite_for(p)
    plan = after_paper.make_plan(suite, p)
    cache = SignalCache.default()
    hits0, misses0 = cache.hits, cache.misses
    scores, results, replicates = score_suite(suite, p, p.scoring(cache=cache))
    attacks = list(p.attacks)
    main_ref = f"ref:{next(iter(suite.references))}" if REF in attacks and suite.references else None
    natural = None
    if suite.natural_twin:
        dd, nat = next(iter(suite.natural_twin.items()))
        natural = (suite.label(dd), suite.label(nat))
    return MainRun(
        results,
        scores,
        [suite.label(t) for t in suite.targets],
        natural,
        replicates,
        main_ref,
        attacks,
        p.n_bootstrap,
        p.seed,
        cache.hits - hits0,
        cache.misses - misses0,
        scale_of(suite),
        suite=suite,
        after_plan=plan,
    )


def score_suite(suite: Suite, p: Params, options: ScoringOptions) -> tuple[dict, pd.DataFrame, dict]:
    """(scores, results, replicates) of :class:`MainRun`: every one-epoch target, the natural-data
    twin and their seed replicates (the deduplication pair with its extra seeds, ``Lab.seed_replicates``)
    scored (:func:`score_model`) and evaluated. The reference attack
    runs with each reference of the suite; seed-0 lab targets other than the smallest also get the
    smallest target as a reference (the paper's Pythia-1.4B ablation); replicates get the suite's
    references only."""
    refs = {label: suite.model(r) for label, r in suite.references.items()}
    smallest = suite.targets[0]
    small_ref = "small-" + suite.label(smallest).replace("target-", "")
    scores, rows, replicates = {}, [], {}
    for base in list(suite.targets) + list(suite.natural_twin.values()):
        names = [base] + suite.replicates(base, dedup=True)
        replicates[suite.label(base)] = [suite.label(n) for n in names]
        for i, name in enumerate(names):
            model_refs = dict(refs)
            if i == 0 and suite.lab is not None and base != smallest:
                model_refs[small_ref] = suite.model(smallest)
            for domain, frame in score_model(suite, name, model_refs, p, options).items():
                scores[(suite.label(name), domain)] = frame
                ev = evaluate_columns(frame, n_bootstrap=p.n_bootstrap, seed=p.seed)
                rows.append(
                    ev.assign(
                        target=suite.label(name),
                        base=suite.label(base),
                        seed_index=i,
                        domain=domain,
                        params=suite.params(name),
                    )
                )
    results = pd.concat(rows, ignore_index=True)
    lead = ["target", "base", "seed_index", "domain", "attack"]
    return scores, results[lead + [c for c in results.columns if c not in lead]], replicates


def score_model(suite: Suite, name: str, references: dict, p: Params, options: ScoringOptions) -> dict:
    """Domain -> the :func:`indexed` scores of model ``name`` on the first ``p.n_samples`` pairs of
    the domain's benchmark: every attack but the neighbourhood one (the reference attack with each
    of ``references``), and the neighbourhood attack on the first ``p.ne_samples`` pairs where the
    benchmark has neighbours (NaN beyond them)."""
    point = [a for a in p.attacks if a != NE]
    out = {}
    for domain in suite.domains:
        bench = suite.benchmark(domain, p.split).subset(p.n_samples)
        frame = indexed(
            score_benchmark(
                bench, suite.model(name), point, references=references, attack_params=p.attack_params(), options=options
            )
        )
        if NE in p.attacks and bench.has_neighbors:
            ne = indexed(score_benchmark(bench.subset(p.ne_samples), suite.model(name), [NE], options=options))
            frame = frame.join(ne[NE])
        out[domain] = frame
    return out


def scale_of(suite: Suite) -> dict:
    """The largest target's parameter count, how many times smaller it is than Pythia-12B and, for a
    lab model, the tokens it saw in training (from the lab manifest) and the share of training
    documents the natural-data twin saw several times (from the lab config)."""
    largest = suite.targets[-1]
    p = suite.params(largest)
    out = {"params": int(p), "pythia_ratio": PYTHIA_LARGEST_PARAMS / p, "tokens_seen": None, "natural_fraction": None}
    if suite.lab is not None:
        meta = suite.lab.manifest["models"].get(Path(largest).name, {})
        out["tokens_seen"] = meta.get("tokens_seen")
        out["natural_fraction"] = (suite.lab.config.get("natural_duplication") or {}).get("fraction")
    return out


# ----------------------------------------------------------------------------- tables and figures


def shown(run: MainRun, *, replicas: bool = False) -> pd.DataFrame:
    """The one-epoch targets' rows with the main reference renamed ``ref`` and the other reference
    columns dropped (seed 0 only unless ``replicas``)."""
    r = run.results[run.results.base.isin(run.targets)]
    if not replicas:
        r = r[r.seed_index == 0]
    r = r[~r.attack.str.startswith("ref:") | (r.attack == run.main_ref)].copy()
    if run.main_ref:
        r["attack"] = r.attack.replace({run.main_ref: REF})
    return r


def auc_table(run: MainRun) -> pd.DataFrame:
    """Table 1 analogue: ``AUC [lo, hi]`` per (domain, target) and attack."""
    return report.auc_table(shown(run), index=["domain", "target"])


def tpr_table(run: MainRun) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 11 analogue: TPR at 1% FPR per (domain, target) and attack, and beside it the smallest
    FPR each attack can resolve per domain (1 / its number of non-members: the neighbourhood
    attack runs on fewer texts). The TPR table's last column: the members / non-members per row."""
    s = shown(run)
    tpr = s.pivot_table(index=["domain", "target"], columns="attack", values="tpr@1%fpr", sort=False)
    resolvable = s.pivot_table(index="domain", columns="attack", values="min_resolvable_fpr", aggfunc="max", sort=False)
    return report.with_n(tpr.round(3), s, ["domain", "target"]), resolvable.round(4)


def figure_auc_vs_size(run: MainRun):
    """Figure 1 / 12 analogue: AUC against parameters, one panel per domain."""
    return plots.plot_metric_vs(shown(run), x="params", hue="attack", col="domain", logx=True)


def roc_curves(run: MainRun, target: str, domain: str) -> dict:
    """``{attack: (fpr, tpr)}`` of the shown attacks for one model and domain."""
    frame = run.scores[(target, domain)]
    member = frame.index.get_level_values("is_member").to_numpy().astype(bool)
    curves = {}
    for attack in run.attacks:
        col = run.column(attack)
        if col not in frame.columns:
            continue
        s = frame[col].to_numpy(dtype=float)
        ok = np.isfinite(s)
        fpr, tpr, _ = metrics.roc(s[member & ok], s[~member & ok])
        curves[attack] = (fpr, tpr)
    return curves


def figure_roc(run: MainRun, domain: str | None = None):
    """Linear and log-log ROC of every attack against the largest target on one domain (the first)."""
    domain = domain or run.results.domain.iloc[0]
    return plots.plot_roc_panels(roc_curves(run, run.largest, domain), title=f"{run.largest} on {domain}")


def reference_table(run: MainRun) -> pd.DataFrame:
    """Table 6 analogue: AUC of the reference attack with each reference, per (domain, target)."""
    r = run.results[(run.results.seed_index == 0) & run.results.attack.str.startswith("ref:")]
    return r.pivot_table(index=["domain", "target"], columns="attack", values="auc", sort=False).round(3)


def figure_reference_ablation(run: MainRun):
    """Mean AUC over domains of the reference attack with each reference, against target size."""
    r = run.results[
        (run.results.seed_index == 0) & run.results.attack.str.startswith("ref:") & run.results.target.isin(run.targets)
    ]
    mean = r.groupby(["attack", "params"], as_index=False)[["auc", "auc_lo", "auc_hi"]].mean()
    mean["reference model"] = mean.attack.str.removeprefix("ref:")
    fig, ax = plt.subplots(figsize=(7, 4))
    plots.plot_metric_vs(mean, x="params", hue="reference model", ax=ax, logx=True)
    ax.set_ylabel("AUC, mean over domains")
    ax.set_title("Reference-based attack, by reference model")
    return plots.finish(fig)


def dedup_table(run: MainRun) -> pd.DataFrame:
    """AUC of the deduplicated target and its natural-data twin per (domain, attack), their first seed's,
    with the paired difference (natural - dedup: its mean over the seeds ``seeds averaged`` counts, as the
    verdicts read it), its interval and seed sd, and the texts each row rests on."""
    eff = dedup_effects(run)
    if eff.empty:
        return eff
    s = run.results[run.results.seed_index == 0]
    dd, nat = run.natural
    out = eff.set_index(["domain", "attack"])
    pair = s[s.target.isin([dd, nat])]
    pair = pair.assign(attack=pair.attack.replace({run.main_ref: REF})) if run.main_ref else pair
    aucs = [f"{label}, seed 0" for label in (dd, nat)]
    for label, col in zip((dd, nat), aucs):
        out[col] = pair[pair.target == label].set_index(["domain", "attack"]).auc
    out["natural - dedup"] = [f"{e:+.3f} [{lo:+.3f}, {hi:+.3f}]" for e, lo, hi in zip(out.estimate, out.lo, out.hi)]
    out = out.rename(columns={"averaged": "seeds averaged", "seed_sd": "seed sd"})
    cols = [*aucs, "natural - dedup", "seeds averaged", "seed sd"]
    return report.with_n(out[cols].round(3), pair, ["domain", "attack"], "target")


def seed_spread(run: MainRun) -> pd.DataFrame:
    """Per (domain, attack): the AUC seed sd of each replicated model, their pooled value over the
    replicated one-epoch targets, the typical (median) bootstrap half-width of one AUC, and the
    half-width of the paired size difference (largest - smallest target on the same texts), and the
    texts each row rests on. Empty when no model has replicates."""
    replicated = [b for b, reps in run.replicates.items() if has_spread(reps)]
    if not replicated:
        return pd.DataFrame()
    base = shown(run)
    size = size_effects(run).set_index(["domain", "attack"])
    rows = []
    for d in domains_of(run):
        for att in run.attacks:
            if not has_scores(run, run.largest, d, att):
                continue
            row = {"domain": d, "attack": att}
            for b in replicated:
                row[f"seed sd {b}"] = auc_seed_sd(run, b, d, att)[0] if has_scores(run, b, d, att) else np.nan
            row["seed sd (pooled)"] = pooled_sd([auc_seed_sd(run, t, d, att)[0] for t in replicated_targets(run)])
            g = base[(base.domain == d) & (base.attack == att)]
            row["bootstrap half-width"] = float(((g.auc_hi - g.auc_lo) / 2).median())
            if (d, att) in size.index:
                e = size.loc[(d, att)]
                row["paired half-width (size)"] = float((e.hi - e.lo) / 2)
            rows.append(row)
    table = pd.DataFrame(rows).set_index(["domain", "attack"]).astype(float).round(4)
    return report.with_n(table, base, ["domain", "attack"], "target")


# ----------------------------------------------------------------------------- verdicts and prose


def regime(run: MainRun) -> list[Regime]:
    """The chapter's fidelity rows: per domain, the benchmark's size and the paired 95% half-width
    of the reference attack's size effect (the smallest effect the paper reports is of that kind)."""
    size = size_effects(run)
    size = size[size.attack == rules.REFERENCE]
    what = f"ref's AUC({run.largest}) - AUC({run.smallest})"
    return [
        fidelity.power(r.domain, int(r.n_members), int(r.n_nonmembers), (r.hi - r.lo) / 2, what)
        for r in size.itertuples()
    ]


def verdicts(run: MainRun) -> list[Verdict]:
    """The chapter's verdicts, in the order the prose refers to them (verdict_0 ... verdict_5); the
    comparative ones link the chapter's power rows (:func:`regime`)."""
    largest = shown(run)
    largest = largest[largest.target == run.largest]
    size, dedup, best = size_effects(run), dedup_effects(run), best_attack_effects(run)
    dd, nat = run.natural or ("", "")
    keys = ",".join(r.key for r in regime(run))
    return [rules.near_random(largest, model=run.largest)] + [
        replace(v, regime=keys)
        for v in (
            rules.model_difference(rules.SIZE_TREND_REFERENCE, size, a=run.largest, b=run.smallest),
            rules.model_difference(rules.SIZE_TREND_OTHER_ATTACKS, size, a=run.largest, b=run.smallest),
            rules.model_difference(rules.DEDUP_REFERENCE, dedup, a=nat, b=dd),
            rules.model_difference(rules.DEDUP_OTHER_ATTACKS, dedup, a=nat, b=dd),
            rules.best_attack(best, model=run.largest),
        )
    ]


def seed_setup(replicates: dict[str, list[str]]) -> str:
    """How many trained seeds each replicated model has, e.g. "3 trained seeds each of a, b and 5 of
    c" (the deduplication pair may have more: ``Lab.seed_replicates``)."""
    by_count: dict[int, list[str]] = {}
    for base, reps in replicates.items():
        if has_spread(reps):
            by_count.setdefault(len(reps), []).append(base)
    if not by_count:
        return "one trained seed of each model (no replicates, so no seed spread to show)"
    (k, first), *rest = by_count.items()
    return f"{k} trained seeds each of {', '.join(first)}" + "".join(f" and {n} of {', '.join(b)}" for n, b in rest)


def prose_numbers(run: MainRun) -> dict:
    """The numbers the chapter's prose states, formatted, by glue name."""
    s = shown(run)
    units = rules.near_random_units(s[s.target == run.largest])
    units = units[units.tallied]
    top = units.sort_values("auc", ascending=False).iloc[0]  # the strongest on a full benchmark
    spread = seed_spread(run)
    per_model = (
        spread[[c for c in spread.columns if c.startswith("seed sd ") and "pooled" not in c]]
        if not spread.empty
        else pd.DataFrame()
    )
    tokens = run.scale.get("tokens_seen")
    return {
        "largest": run.largest,
        "largest_params_m": fmt(run.scale.get("params", np.nan) / 1e6, ".2f"),
        "pythia_ratio": fmt(run.scale.get("pythia_ratio"), ",.0f"),
        "tokens_seen_m": fmt(tokens / 1e6 if tokens else None, ".2f", "unknown (not a lab model)"),
        "near_random_bound": f"{rules.NEAR_RANDOM_AUC:g}",
        "seed_z": f"{SEED_Z:g}",
        "natural_fraction": fmt(
            100 * run.scale["natural_fraction"] if run.scale.get("natural_fraction") else None, ".0f"
        ),
        "frac_below_06": fmt(100 * float((units.reading == rules.BELOW_BOUND).mean()) if len(units) else None, ".0f"),
        "n_near_random_units": str(len(units)),
        # the full benchmarks: 236-300 where decontamination cut
        "n_members": report.count_span(units.n_members, sep="-"),
        "best_attack": str(top.attack),
        "best_domain": str(top.domain),
        "best_auc": fmt(float(top.auc), ".3f"),
        "seed_setup": seed_setup(run.replicates),
        "seed_sd_median": fmt(float(spread["seed sd (pooled)"].median()) if not spread.empty else None, ".4f"),
        "seed_sd_max": fmt(float(np.nanmax(per_model.to_numpy())) if not per_model.empty else None, ".3f"),
        "boot_hw_median": fmt(float(s.eval("(auc_hi - auc_lo) / 2").median()), ".3f"),
        "paired_hw_median": fmt(
            float(spread["paired half-width (size)"].median()) if "paired half-width (size)" in spread else None, ".3f"
        ),
    }


# ----------------------------------------------------------------------------- off-the-shelf reference


def offline_reference(run: MainRun, p: Params) -> pd.DataFrame:
    """The reference attack with SmolLM2-135M (the only off-the-shelf reference available offline)
    beside the lab's own references, on the first ``p.offline_reference_samples`` pairs of each
    domain, for every one-epoch lab target, with the chapter's scoring options at 8 texts per batch.
    Empty when that count is 0 or the run's suite is not the lab's."""
    suite, samples = run.suite, p.offline_reference_samples
    if not samples or suite.lab is None:
        return pd.DataFrame()
    from mimirlib.core.models import load_model
    from mimirlib.core.offline_models import smollm2_reference
    from mimirlib.core.scoring import evaluate_scores

    options = p.scoring(cache=SignalCache.default()).replace(batch_size=8)
    smol = load_model(str(smollm2_reference()), dtype="fast")  # bfloat16 only where native
    rows = []
    for target in suite.targets:
        refs = {label: suite.model(r) for label, r in suite.references.items()} | {"smollm2-135m": smol}
        for domain in suite.domains:
            bench = suite.benchmark(domain, p.split).subset(samples)
            s = score_benchmark(bench, suite.model(target), ["ref"], references=refs, options=options)
            ev = evaluate_scores(s, n_resamples=p.n_bootstrap, seed=p.seed)
            rows.append(ev.assign(domain=domain, target=suite.label(target)))
    return pd.concat(rows, ignore_index=True)


def offline_tables(offline: pd.DataFrame) -> list[pd.DataFrame]:
    """AUC per (domain, target) and reference, and the mean per reference; [] when skipped."""
    if offline.empty:
        return []
    pivot = offline.pivot_table(index=["domain", "target"], columns="attack", values="auc", sort=False).round(3)
    return [pivot, offline.groupby("attack")[["auc"]].mean().round(3).rename(columns={"auc": "mean AUC"})]
