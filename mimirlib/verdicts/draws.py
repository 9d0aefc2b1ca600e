"""Verdicts read over several lab draws: the rule that decided each draw, on each unit's effect pooled over them.

One lab draw (``seed:`` in the lab profile: splits, selection, initialisation and data order) decides a
claim on its units' effects (:attr:`Verdict.units`). A claim whose effect sits near its bar is decided on
one draw and not on another; built again with other seeds, the lab gives independent draws of every unit,
and this module reads the claim over all of them by the rule that decided each
(:attr:`Verdict.decision`: :func:`decide_tally` or :func:`decide_pooled`, through the same
:class:`Claim` methods, so the MDE and the power reading come with it).

Pooling a unit (:func:`pool_unit`) present in K draws:

- estimate: the mean of the K estimates (every draw has the same design: equal weights);
- interval: each draw's interval is the text part of its noise, independent across draws (other texts, other
  splits), so each side's half-width pools as ``sqrt(sum h_k^2) / K`` (the two sides apart: a bootstrap
  interval need not be centred on its estimate; one draw keeps its own interval);
- seed spread: the seed replicates of every draw, ``averaged`` and ``n_seeds`` their sums, and ``seed_sd`` set so
  that the rule's own seed bar, ``seed_sd / sqrt(averaged)``, is the mean's seed part,
  ``sqrt(sum seed_sd_k^2 / averaged_k) / K`` (a draw without replicates counts with the others' root mean square;
  None when no draw has any).

Units are matched across draws by label and group (a draw with the same unit twice is not read over the draws).

A unit that some draws did not tally (a unit at the AUC ceiling is listed there, not counted) is pooled
over the draws that did. A claim is read over the draws only when every draw decided it on its units
by the same decision; otherwise :func:`read_over_draws` says why not.

Where the draws differ more than their own noise predicts (Q / df > 1, below), every unit's pooled interval and
seed spread are widened by sqrt(Q / df) (:func:`widening`, the Birge ratio), so that a spread the per-draw
intervals do not show cannot make the reading over the draws overconfident.

Replication (:func:`replication`): from one draw alone, the chance that another draw decides a claim as this one
did, if draws differed only as the units' own noise says. The unit's true effect is unknown, so a new draw's estimate
scatters about this draw's with this draw's noise and its own: 2 se^2 (the predictive spread under a flat prior); its
interval moves with it (the seed sd unchanged). The units are correlated as the claim's power reading pools them
(``power.read``): their text parts fully within a group of texts (all units one group unless every unit names one)
and independent across groups, their seed parts fully. The claim is decided on them by its own rule. A claim at its
bar reads about 0.5.

Heterogeneity (:func:`heterogeneity`): Cochran's Q, over the units, of the draws' estimates about their
mean, each weighted by its draw's full se (text and seed), against its degrees of freedom, the sum over
units of (draws - 1). Q / df near 1: the draws differ as their own intervals predict, so the per-draw noise
model holds across draws; well above 1: a draw adds spread its intervals do not show. One draw's units
share their texts, so the chi-square p-value is approximate (the mean of Q is not affected).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from scipy import stats

from mimirlib.verdicts import DECISIONS, Claim, Effect, Verdict, tally


def effects_of_record(record: dict) -> list[Effect]:
    """The units a verdict record was decided on, as :class:`Effect` values (empty when none were published)."""
    return [Effect(**u) for u in record.get("units") or ()]


def pool_unit(effects: list[Effect], widen: float = 1.0) -> Effect:
    """One unit's effects from several draws as one :class:`Effect` (the module docstring's rule), its interval
    and seed spread multiplied by ``widen`` (>= 1: :func:`widening`). One draw pools to itself."""
    if not effects:
        raise ValueError("pool_unit: no effects to pool")
    if not widen >= 1.0:
        raise ValueError(f"pool_unit: widen must be >= 1, got {widen!r}")
    k = len(effects)
    estimate = float(np.mean([e.estimate for e in effects]))
    # each side of the interval apart: a draw's bootstrap interval need not be centred on its estimate
    down = widen * float(np.sqrt(sum(max(e.estimate - e.lo, 0.0) ** 2 for e in effects))) / k
    up = widen * float(np.sqrt(sum(max(e.hi - e.estimate, 0.0) ** 2 for e in effects))) / k
    averaged = sum(e.averaged for e in effects)
    known = [e.seed_sd for e in effects if e.seed_sd is not None]
    seed_sd = None
    if known:  # the mean's seed variance, sum(sd_k^2 / a_k) / K^2, written as seed_sd^2 / sum(a_k)
        fill = float(np.sqrt(np.mean(np.square(known))))  # a draw without replicates: the others' spread
        var = sum((e.seed_sd if e.seed_sd is not None else fill) ** 2 / e.averaged for e in effects)
        seed_sd = widen * float(np.sqrt(averaged * var)) / k
    return Effect(
        estimate,
        estimate - down,
        estimate + up,
        seed_sd,
        sum(e.n_seeds for e in effects),
        effects[0].label,
        averaged,
        effects[0].group,
    )


def repeated_units(record: dict) -> list[str]:
    """Labels of the units that appear more than once in one draw's record (a unit is its label and group)."""
    keys = [(e.label, e.group) for e in effects_of_record(record)]
    return sorted({f"{label or '(no label)'}" for label, group in keys if keys.count((label, group)) > 1})


def _by_unit(records: list[dict]) -> dict[tuple[str, str], list[Effect]]:
    units: dict[tuple[str, str], list[Effect]] = {}
    for r in records:
        for e in effects_of_record(r):
            units.setdefault((e.label, e.group), []).append(e)
    return units


def heterogeneity(records: list[dict]) -> tuple[float, int, float]:
    """(Q, df, p): Cochran's Q of the draws' unit effects about each unit's mean (module docstring), its
    degrees of freedom, and its approximate chi-square p-value (NaN when df is 0)."""
    q, df = 0.0, 0
    for effects in _by_unit(records).values():
        if len(effects) < 2 or any(e.se == 0 for e in effects):  # an exact value (a tie by construction): no noise
            continue
        est = np.array([e.estimate for e in effects])
        w = 1.0 / np.array([e.se**2 for e in effects])
        mean = float((w * est).sum() / w.sum())
        q += float((w * (est - mean) ** 2).sum())
        df += len(effects) - 1
    return q, df, float(stats.chi2.sf(q, df)) if df else float("nan")


def widening(q: float, df: int) -> float:
    """How much a claim's pooled units are widened: sqrt(Q / df) when the draws differ more than their own noise
    predicts (Q > df; the Birge ratio), else 1: a spread the per-draw intervals do not show must not make the
    reading over the draws overconfident, and draws that agree closely never narrow it."""
    return float(np.sqrt(q / df)) if df and q > df else 1.0


def claim_of(record: dict) -> Claim:
    """The :class:`Claim` a verdict record was decided for (its fields that do not depend on the run)."""
    return Claim(
        record["claim"],
        source=record.get("source", ""),
        paper_value=record.get("paper_value", ""),
        key=record.get("key", ""),
        origin=record.get("origin", "paper"),
        paper_effect=record.get("paper_effect"),
        effect_of_interest=record.get("effect_of_interest"),
    )


@dataclass(frozen=True)
class OverDraws:
    """A claim read over several draws: ``verdict`` (None when it cannot be: ``why``), the Q test's numbers."""

    key: str
    draws: int
    verdict: Verdict | None
    why: str = ""
    q: float = float("nan")
    df: int = 0
    p: float = float("nan")

    def q_text(self) -> str:
        return q_text(self.q, self.df, self.p)


def q_text(q: float, df: int, p: float) -> str:
    """Q, its degrees of freedom, Q/df and p in words ("" when df is 0)."""
    return f"Q {q:.1f} on {df} df (Q/df {q / df:.2f}, p {p:.2f})" if df else ""


def read_over_draws(records: list[dict]) -> OverDraws:
    """The claim of ``records`` (one verdict record of the same claim per draw) decided over all the draws
    by the rule that decided each (:attr:`Verdict.decision`) on its pooled units (:func:`pool_unit`)."""
    key = records[0].get("key", "") if records else ""
    decisions = {r.get("decision") or "" for r in records}
    if not records:
        return OverDraws(key, 0, None, "no draw")
    if decisions == {""}:
        return OverDraws(key, len(records), None, "its rule does not tally unit effects")
    missing = [f"draw {i}: {r['verdict']}" for i, r in enumerate(records) if not (r.get("decision") and r.get("units"))]
    if missing:
        return OverDraws(key, len(records), None, f"not decided on its units in every draw ({', '.join(missing)})")
    if len(decisions) > 1 or not decisions <= set(DECISIONS[1:]):
        return OverDraws(key, len(records), None, f"the draws decided it differently ({', '.join(sorted(decisions))})")
    repeated = sorted({u for r in records for u in repeated_units(r)})
    if repeated:
        return OverDraws(key, len(records), None, f"a draw has the same unit twice ({', '.join(repeated)})")
    signs = {r.get("claimed_sign", 1) for r in records}
    if len(signs) > 1:
        return OverDraws(key, len(records), None, "the draws read it in opposite directions")
    q, df, p = heterogeneity(records)
    widen = widening(q, df)
    pooled = [pool_unit(effects, widen) for effects in _by_unit(records).values()]
    t = tally(pooled, signs.pop())
    k = len(records)
    evidence = f"read over {k} lab draws, each unit's effect pooled: {t.text()}. " + "; ".join(
        e.describe() for e in pooled
    )
    if df:
        evidence += f". Across the draws: {q_text(q, df, p)}"
        if widen > 1:
            evidence += f"; every unit's interval and seed spread widened {widen:.2f}x (sqrt(Q/df))"
    rule = f"{records[0]['rule']}. Read over {k} lab draws: each unit's effect pooled (mimirlib.verdicts.draws)"
    n = f"{k} draws: " + "; ".join(dict.fromkeys(str(r.get("n", "")) for r in records))
    lab = f"over {k} draws: clear for in {t.n_for} of {t.n}, against in {t.n_against}"
    verdict = decide_as(records[0], t, evidence, rule, lab_value=lab, n=n, regime=records[0].get("regime") or "")
    return OverDraws(key, k, verdict, q=q, df=df, p=p)


def decide_as(record: dict, t, evidence: str, rule: str, **run) -> Verdict:
    """The claim of ``record`` decided on the tally ``t`` by the rule that decided the record (its ``decision``)."""
    claim = claim_of(record)
    decide = claim.pooled if record.get("decision") == "pooled" else claim.tallied
    return decide(t, evidence, rule, **run)


REPLICATIONS = 1000  # simulated draws per claim in replication()


def repeat_text(shares, what: str) -> str:
    """``about 78% of the 23 <what>``: the mean of :func:`replication` shares and how many there are."""
    return f"about {float(np.mean(shares)):.0%} of the {len(shares)} {what}"


def replication(record: dict, n_sim: int = REPLICATIONS, seed: int = 0) -> float | None:
    """The share of ``n_sim`` simulated lab draws that decide the claim of ``record`` as it was decided (the module
    docstring's model); None for a record not decided on its units (its rule does not tally them)."""
    units = effects_of_record(record)
    if record.get("decision") not in DECISIONS[1:] or not units:
        return None
    rng = np.random.default_rng(seed)
    seed_se = np.array([e.seed_se or 0.0 for e in units])
    text_se = np.sqrt(np.maximum(np.array([e.se for e in units]) ** 2 - seed_se**2, 0.0))
    groups = [e.group for e in units] if all(e.group for e in units) else [""] * len(units)
    index = np.unique(groups, return_inverse=True)[1]  # each unit's group of texts
    sign = int(record.get("claimed_sign") or 1)  # None or a float where read back from a table
    same = 0
    for _ in range(n_sim):
        z_text, z_seed = rng.standard_normal(index.max() + 1), rng.standard_normal()
        shifts = np.sqrt(2.0) * (text_se * z_text[index] + seed_se * z_seed)
        drawn = [
            dataclasses.replace(e, estimate=e.estimate + d, lo=e.lo + d, hi=e.hi + d) for e, d in zip(units, shifts)
        ]
        same += decide_as(record, tally(drawn, sign), "", record.get("rule", "")).verdict == record["verdict"]
    return same / n_sim
