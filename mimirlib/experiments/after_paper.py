"""The attacks after the paper (ReCaLL, DC-PDD, gradient norm): the main-results chapter's second table.

:func:`make_plan` reads where the ReCaLL prefix and the DC-PDD frequency corpus come from (never
from a benchmark text) and which attacks can run, before any scoring; :func:`run` scores LOSS and
each planned attack on the one-epoch targets; the rest turns an :class:`AfterPaperRun` into the
second table, each attack against LOSS on the same texts, what each cost, and the prose's numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from mimirlib.core import metrics
from mimirlib.core.scoring import score_benchmark
from mimirlib.core.signals import SignalCache
from mimirlib.display import report
from mimirlib.experiments.main_scores import evaluate_columns, fmt, indexed
from mimirlib.experiments.params import Params
from mimirlib.experiments.suite import Suite
from mimirlib.verdicts import main_results as rules

BASELINE = "loss"  # the second table's yardstick: the cheapest attack, scored on the same texts


@dataclass
class AfterPaperPlan:
    """What the attacks after the paper will run with, read and checked before any scoring:
    ``attacks`` that can run, ``skipped`` (attack -> why not), the ReCaLL prefix per domain and the
    DC-PDD frequency corpus, with where each came from."""

    attacks: list[str]
    skipped: dict
    prefix: dict  # domain -> prefix texts (known non-members, disjoint from every benchmark text)
    corpus: list[str] | None
    prefix_source: str
    corpus_source: str
    prefix_tokens: int | None = None
    grad_params: str | None = None
    dc_pdd_a: float = 0.01


def make_plan(suite: Suite, p: Params) -> AfterPaperPlan:
    """The prefix and corpus the attacks after the paper (``p.after_attacks``) need. The lab's: its
    reference pool (the documents its disjoint reference model trained on, never a benchmark text),
    the first ``p.recall_shots`` of each domain as that domain's ReCaLL prefix, all of it as DC-PDD's
    corpus. Elsewhere: the texts of ``p.recall_prefix_file`` / ``p.frequency_corpus_file`` (jsonl,
    csv or parquet, column ``text``); an attack without its input is skipped, with the reason.
    Raises ValueError naming an unknown attack, a paper attack, or a bad count."""
    from mimirlib.audit.inputs import load_member_file
    from mimirlib.core.attacks import get_attack, needs_extra
    from mimirlib.core.scoring_extra import missing_input

    attacks, prefix_shots, prefix_tokens = list(p.after_attacks or []), p.recall_shots, p.recall_prefix_tokens
    for a in attacks:
        get_attack(a)  # KeyError naming it when unknown
        if not needs_extra(a):
            raise ValueError(f"after_attacks: {a!r} is one of the paper's attacks (the first table has it)")
    if isinstance(prefix_shots, bool) or not isinstance(prefix_shots, int) or prefix_shots < 1:
        raise ValueError(f"recall_shots must be a positive integer, got {prefix_shots!r}")
    kept = f"the last {prefix_tokens} tokens" if prefix_tokens else "the last half-window of tokens"
    if p.recall_prefix_file:
        shots = load_member_file(p.recall_prefix_file)[:prefix_shots]
        prefix, prefix_source = (
            {d: shots for d in suite.domains},
            f"{kept} of the first {len(shots)} texts of {p.recall_prefix_file}",
        )
    elif suite.lab is not None:
        prefix = {d: suite.lab.pool_texts("reference", [d])[:prefix_shots] for d in suite.domains}
        prefix_source = f"{kept} of the first {prefix_shots} documents of the domain's reference pool"
    else:
        prefix, prefix_source = {}, "none given"
    if p.frequency_corpus_file:
        corpus, corpus_source = load_member_file(p.frequency_corpus_file), str(p.frequency_corpus_file)
    elif suite.lab is not None:
        corpus = suite.lab.pool_texts("reference")
        corpus_source = f"the lab's reference pool ({len(corpus)} documents, every domain)"
    else:
        corpus, corpus_source = None, "none given"
    skipped, ok = {}, []
    for a in attacks:
        why = missing_input(a, prefix_texts=prefix.get(suite.domains[0]) if prefix else None, frequency_corpus=corpus)
        if why:
            skipped[a] = why
        else:
            ok.append(a)
    return AfterPaperPlan(
        ok, skipped, prefix, corpus, prefix_source, corpus_source, prefix_tokens, p.grad_params, p.dc_pdd_a
    )


@dataclass
class AfterPaperRun:
    """The attacks after the paper against the one-epoch targets: ``results`` one row per (target,
    domain, attack column, LOSS included) as :func:`evaluate_columns`; ``scores`` (target label,
    domain) -> an :func:`indexed` frame; ``costs`` one row per (target, domain, attack)."""

    plan: AfterPaperPlan
    results: pd.DataFrame
    scores: dict
    costs: pd.DataFrame
    targets: list[str]
    n_bootstrap: int = 1000
    seed: int = 0

    @property
    def largest(self) -> str:
        return self.targets[-1]


def run(suite: Suite, plan: AfterPaperPlan, p: Params) -> AfterPaperRun:
    """Score LOSS and each planned attack after the paper on the one-epoch targets (no replicates,
    no natural twin: the second table is the first table's companion), per domain, on the first
    ``p.after_samples`` pairs (None: ``p.n_samples``), with the chapter's scoring options (its
    engine included). ReCaLL's prefix is checked disjoint from the scored texts (it raises if not)."""
    from mimirlib.core.scoring_extra import score_extra

    options = p.scoring(cache=SignalCache.default())
    n_samples = p.after_samples if p.after_samples is not None else p.n_samples
    rows, costs, scores = [], [], {}
    for name in suite.targets:
        label, model = suite.label(name), suite.model(name)
        for domain in suite.domains:
            bench = suite.benchmark(domain, p.split).subset(n_samples)
            frame = score_benchmark(bench, model, [BASELINE], options=options)
            if plan.attacks:
                extra = score_extra(
                    bench.texts(),
                    model,
                    plan.attacks,
                    prefix_texts=plan.prefix.get(domain),
                    frequency_corpus=plan.corpus,
                    grad_params=plan.grad_params,
                    prefix_tokens=plan.prefix_tokens,
                    attack_params={"dc_pdd": {"a": plan.dc_pdd_a}},
                    options=options,
                    desc=f"{domain} {label}",
                )
                frame = pd.concat([frame, extra.scores], axis=1)
                costs.append(extra.costs.assign(target=label, domain=domain))
            frame = indexed(frame)
            scores[(label, domain)] = frame
            ev = evaluate_columns(frame, n_bootstrap=p.n_bootstrap, seed=p.seed)
            rows.append(ev.assign(target=label, domain=domain, params=suite.params(name)))
    cost = pd.concat(costs, ignore_index=True) if costs else pd.DataFrame()
    return AfterPaperRun(
        plan,
        pd.concat(rows, ignore_index=True),
        scores,
        cost,
        [suite.label(t) for t in suite.targets],
        p.n_bootstrap,
        p.seed,
    )


def table(after: AfterPaperRun) -> pd.DataFrame:
    """The second table: ``AUC [lo, hi]`` per (domain, target) of LOSS and each attack after the paper."""
    return report.auc_table(after.results, index=["domain", "target"])


def cost_table(after: AfterPaperRun) -> pd.DataFrame:
    """Per attack: milliseconds per computed text for each target, total seconds in this run, texts
    computed (0 when every input came from the cache), and what it runs."""
    if after.costs.empty:
        return pd.DataFrame()
    c = after.costs.groupby(["attack", "target"], sort=False)[["seconds", "computed"]].sum()
    per_text = (1000 * c.seconds / c.computed.where(c.computed > 0)).unstack("target")[after.targets]
    per_text.columns = [f"ms per text, {t}" for t in per_text.columns]
    total = after.costs.groupby("attack", sort=False).agg(
        seconds=("seconds", "sum"), computed=("computed", "sum"), what=("what", "first")
    )
    return per_text.join(total).round(1)


def vs_loss(after: AfterPaperRun) -> pd.DataFrame:
    """Per (domain, attack) against the largest target: AUC(attack) - AUC(LOSS) on the same texts with
    its paired 95% interval, and the reading (:func:`mimirlib.verdicts.main_results.versus_loss`)."""
    out = []
    for (label, domain), frame in after.scores.items():
        if label != after.largest:
            continue
        m = frame.index.get_level_values("is_member").to_numpy().astype(bool)
        base = frame[BASELINE].to_numpy(dtype=float)
        for attack in after.plan.attacks:
            s = frame[attack].to_numpy(dtype=float)
            d = metrics.paired_auc_difference(
                s[m], s[~m], base[m], base[~m], n_resamples=after.n_bootstrap, seed=after.seed
            )
            out.append(
                {
                    "domain": domain,
                    "attack": attack,
                    "AUC - AUC(loss)": f"{d.point:+.3f} [{d.lo:+.3f}, {d.hi:+.3f}]",
                    "estimate": d.point,
                    "lo": d.lo,
                    "hi": d.hi,
                    "reading": rules.versus_loss(d.lo, d.hi),
                }
            )
    return pd.DataFrame(out, columns=["domain", "attack", "AUC - AUC(loss)", "estimate", "lo", "hi", "reading"])


def prose_numbers(after: AfterPaperRun) -> dict:
    """The numbers the second table's prose states, formatted, by glue name: each attack's ms per
    computed text against the largest target (or why it did not run), the section's total seconds,
    and where the gradient norm is worth its backward pass."""
    out = {}
    costs = after.costs[after.costs.target == after.largest] if not after.costs.empty else after.costs
    for attack in ("recall", "dc_pdd", "grad_norm"):
        if attack in after.plan.skipped:
            out[f"after_{attack}_ms"] = f"not run ({after.plan.skipped[attack]})"
        elif attack not in after.plan.attacks:
            out[f"after_{attack}_ms"] = "not run (not asked for)"
        else:
            c = costs[costs.attack == attack]
            n = int(c.computed.sum())
            out[f"after_{attack}_ms"] = (
                f"{1000 * c.seconds.sum() / n:.1f} ms per text ({n} texts)" if n else "read from the cache (no pass)"
            )
    out["after_seconds"] = fmt(float(after.costs.seconds.sum()) if not after.costs.empty else 0.0, ".0f")
    vs = vs_loss(after)
    g = vs[vs.attack == "grad_norm"].set_index("domain").reading
    out["grad_norm_worth"] = rules.worth_its_cost(g) if len(g) else "not measured in this run"
    out["after_prefix_source"] = after.plan.prefix_source
    out["after_corpus_source"] = after.plan.corpus_source
    return out
