"""Power: could the lab have seen the paper's effect, and is its own effect smaller?

An *inconclusive* comparison can mean two different things, and this module tells them apart.
Every rule works on an effect's standard error (se), read from what the rules already have:

- ``se_of(lo, hi, seed_sd)``: a 95% paired-bootstrap interval spans about ``2 x 1.96`` standard
  errors over the texts; a seed-to-seed standard deviation (the same estimate across training
  seeds) adds its variance: ``se = sqrt(((hi - lo) / 3.92)^2 + seed_sd^2)``.
- ``mde(se)``: the minimum detectable effect, the true effect a two-sided test at alpha = 0.05
  finds with 80% power (normal approximation): ``(1.960 + 0.842) x se = 2.80 x se``.
- ``below(estimate, se, bound)``: a one-sided test at alpha = 0.05 that the effect is below
  ``bound``: ``estimate + 1.645 se < bound`` (the upper of TOST's two tests; the lower one, the
  effect above ``-bound``, is not asked: an effect that may be opposite is still below the paper's).
- ``read(effects, paper_effect)`` pools many units (domains, attacks) of one claim. They share
  models and texts, so they are not independent: the pooled se is the root mean square of the
  units' se (what fully correlated units give; never narrower than one unit's), the estimate is
  the mean. Given ``groups`` (the units' independent text samples, e.g. their domains), only the
  seed part (the same models) stays fully correlated; the text part is fully correlated within a
  group and independent across groups: ``se^2 = sum_g (n_g rms_g)^2 / N^2 + mean(seed_i^2)``,
  with ``rms_g`` the root mean square of the text se (``sqrt(se_i^2 - seed_i^2)``) of group g's
  ``n_g`` units (one group gives the root mean square above). The reading, for the size of effect
  the paper reports (in the claim's direction):
  *smaller than the paper's* when the pooled effect is below the paper's effect (``below``: the
  lab's data reject an effect as large as the paper's, whatever the MDE); otherwise *underpowered*
  when the MDE exceeds the paper's effect (the lab cannot tell); *unresolved* when the MDE is below
  it but neither test decides (more texts or seeds would settle it); *no paper effect size* when
  the paper gives no number and the claim states no smallest effect of interest. The seed sd's
  part alone gives the *floor*: the MDE with unlimited texts, which only more training seeds
  (averaged) can lower.
- Where the paper gives no number (a figure only), a claim may state the book's *smallest effect
  of interest* (:data:`SMALLEST_EFFECT_OF_INTEREST`, the equivalence-testing convention for a
  replication without an original effect size) and is read against it with the same tests:
  *smaller than the smallest effect of interest* (``below`` it), else *underpowered* or
  *unresolved*. It is the book's bound, never shown as the paper's.
- ``texts_to_reach(mde, bound, floor)``: for an *underpowered* reading, how many times the texts
  behind each effect (the same seeds) would bring the MDE down to the bound. Only the se's text part
  shrinks with more texts (as ``1 / sqrt(texts)``), so ``k = (mde^2 - floor^2) / (bound^2 - floor^2)``;
  infinite when the floor alone is at or above the bound (only more seeds, averaged, can lower it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

Z_TWO_SIDED = 1.959964  # alpha = 0.05, two-sided
Z_POWER = 0.841621  # 80% power
Z_ONE_SIDED = 1.644854  # alpha = 0.05, one-sided (each of TOST's two tests)
INTERVAL_WIDTH_IN_SE = 2 * Z_TWO_SIDED  # a 95% interval spans this many standard errors

UNDERPOWERED = "underpowered"
SMALLER = "smaller than the paper's"
UNRESOLVED = "unresolved"
NO_PAPER_EFFECT = "no paper effect size"
NEGLIGIBLE = "smaller than the smallest effect of interest"
READINGS = (UNDERPOWERED, SMALLER, NEGLIGIBLE, UNRESOLVED, NO_PAPER_EFFECT)
# The book's smallest effect of interest (AUC units) for a claim whose paper gives no number: one AUC
# point, between the smallest effects the papers do report (MIMIR +0.007, RaMIA's text gain +0.012).
SMALLEST_EFFECT_OF_INTEREST = 0.01
# What a claim's effects are paired over, named in what would reach its bound (reach_text): texts, or RaMIA's range
# games' ranges (more samples per range barely lower their MDE: 3x on draw 0's distance curve, 1.22 -> 1.13 points)
TEXTS, RANGES = "texts", "ranges"


def se_of(lo: float, hi: float, seed_sd: float | None = None) -> float:
    """The standard error of an effect from its 95% interval ``[lo, hi]`` and its seed sd."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi < lo:
        raise ValueError(f"interval: expected finite lo <= hi, got [{lo}, {hi}]")
    se = (hi - lo) / INTERVAL_WIDTH_IN_SE
    sd = 0.0 if seed_sd is None or not math.isfinite(seed_sd) else float(seed_sd)
    return math.sqrt(se * se + sd * sd)


def mde(se: float) -> float:
    """The minimum detectable effect at 80% power and two-sided alpha 0.05."""
    return (Z_TWO_SIDED + Z_POWER) * se


def z_score(estimate: float, se: float) -> float:
    """``estimate / se``; with ``se`` 0, +/-inf for a non-zero estimate (exactly known) and 0 for 0."""
    if se > 0:
        return estimate / se
    return math.copysign(math.inf, estimate) if estimate else 0.0


def below(estimate: float, se: float, bound: float) -> bool:
    """One-sided test at alpha 0.05: is the effect below ``bound`` beyond its noise? Never for a
    ``bound`` <= 0 (the paper's effect is a size in the claimed direction)."""
    return bound > 0 and estimate + Z_ONE_SIDED * se < bound


@dataclass(frozen=True)
class PowerReading:
    """A claim's pooled effect (in the claimed direction), its se, MDE, the paper's effect, and
    the reading of an undecided result (one of :data:`READINGS`)."""

    estimate: float
    se: float
    mde: float
    paper_effect: float | None
    reading: str
    floor: float | None = None  # the MDE with unlimited texts: the seed spread's part alone
    of_interest: float | None = None  # the book's smallest effect of interest, where the paper gives no number

    def text(self) -> str:
        return describe(self.mde, self.paper_effect, self.floor, self.of_interest, reading=self.reading)


def texts_to_reach(mde_: float, bound: float, floor: float | None = None) -> float:
    """How many times the texts behind an effect (its seeds unchanged) would bring its MDE ``mde_`` down to
    ``bound`` (module docstring): ``(mde^2 - floor^2) / (bound^2 - floor^2)``, inf when the seed floor alone is
    at or above ``bound``; at most 1 when the MDE is there already. ValueError for a bound or MDE not above 0."""
    if not (bound > 0 and mde_ > 0):
        raise ValueError(f"texts_to_reach: expected an MDE and a bound above 0, got {mde_} and {bound}")
    f = 0.0 if floor is None or not math.isfinite(floor) else float(floor)
    if f >= bound:
        return math.inf
    return max(mde_ * mde_ - f * f, 0.0) / (bound * bound - f * f)


def reach_text(mde_: float, bound: float, floor: float | None = None, paired_over: str = TEXTS) -> str:
    """What would let an underpowered test see ``bound``: ``about 1.6x the texts behind each effect (the same
    seeds) would reach it``, or, when the seed floor is at or above it, ``no number of texts reaches it (...); only
    more training seeds can``; empty when the MDE reaches it already. ``paired_over``: what the effects are paired over
    (:data:`TEXTS` or :data:`RANGES`)."""
    k = texts_to_reach(mde_, bound, floor)
    if math.isinf(k):
        return (
            f"no number of {paired_over} reaches it (the MDE with unlimited {paired_over} is at or above it); "
            "only more training seeds can"
        )
    if k <= 1:
        return ""
    times = f"{k:.1f}" if k < 10 else f"{k:,.0f}"
    return f"about {times}x the {paired_over} behind each effect (the same seeds) would reach it"


def describe(
    mde_: float,
    paper_effect: float | None,
    floor: float | None = None,
    of_interest: float | None = None,
    points: bool = False,
    reading: str = "",
    paired_over: str = TEXTS,
) -> str:
    """``MDE 0.148 (0.059 with unlimited texts) vs paper +0.043``: the one text of a power reading
    (``vs smallest effect of interest +0.010 (no number in the paper)`` where the paper gives none);
    with ``points``, in AUC points (x 100) as the evidence beside it: ``MDE 1.11 points vs paper +1.20 points``.
    With ``reading`` *underpowered*, what would reach the bound follows (:func:`reach_text`, in ``paired_over``)."""

    def v(x: float, sign: str = "") -> str:
        return f"{100 * x:{sign}.2f} points" if points else f"{x:{sign}.3f}"

    if paper_effect is not None:
        paper = f"paper {v(paper_effect, '+')}"
    elif of_interest is not None:
        paper = f"smallest effect of interest {v(of_interest, '+')} (no number in the paper)"
    else:
        paper = "no number in the paper"
    limit = "" if floor is None else f" ({v(floor)} with unlimited {paired_over})"
    bound = _bound(paper_effect, of_interest)
    reach = reach_text(mde_, abs(bound), floor, paired_over) if reading == UNDERPOWERED and bound else ""
    return f"MDE {v(mde_)}{limit} vs {paper}" + (f"; {reach}" if reach else "")


def read(
    estimates_and_ses: Iterable[tuple[float, float]],
    paper_effect: float | None,
    seed_sds: Iterable | None = None,
    groups: Iterable | None = None,
    of_interest: float | None = None,
) -> PowerReading:
    """Pool ``(estimate, se)`` pairs of one claim's units (estimates signed so that the claimed
    direction is positive) and read them against ``paper_effect``, or where it is None against
    ``of_interest``, the smallest effect of interest (see the module docstring).
    ``seed_sds``: the units' seed sd (None where unknown: no seed variance, as in the se); the se's seed part gives
    ``floor``,
    the MDE that more texts cannot lower (only more seeds, averaged, can). ``groups``: each unit's
    independent text sample (None: all units share their texts)."""
    pairs = [(float(e), float(s)) for e, s in estimates_and_ses]
    if not pairs:
        raise ValueError("read: no effects to pool")
    seeds = list(seed_sds) if seed_sds is not None else []
    seeds = [None if x is None or not math.isfinite(x) else float(x) for x in seeds]
    est = sum(e for e, _ in pairs) / len(pairs)
    if groups is None:
        se = math.sqrt(sum(s * s for _, s in pairs) / len(pairs))
    else:
        se = _grouped_se(pairs, seeds, list(groups))
    sds = [x for x in seeds if x is not None]
    floor = mde(math.sqrt(sum(x * x for x in sds) / len(pairs))) if sds else None  # the se's seed part
    if paper_effect is not None:
        of_interest = None
    reading = _reading(est, se, paper_effect, of_interest)
    return PowerReading(est, se, mde(se), paper_effect, reading, floor, of_interest)


def _grouped_se(pairs: list, seeds: list, groups: list) -> float:
    """The pooled se with the text part independent across ``groups`` (module docstring)."""
    if len(groups) != len(pairs) or (seeds and len(seeds) != len(pairs)):
        raise ValueError(f"read: {len(pairs)} effects, {len(seeds)} seed sds and {len(groups)} groups")
    seed = [(x or 0.0) for x in seeds] or [0.0] * len(pairs)
    text: dict = {}
    for (_, s), sd, g in zip(pairs, seed, groups):
        text.setdefault(g, []).append(max(s * s - sd * sd, 0.0))
    n = len(pairs)
    text_var = sum(len(v) ** 2 * (sum(v) / len(v)) for v in text.values()) / n**2
    return math.sqrt(text_var + sum(x * x for x in seed) / n)


def _bound(paper_effect: float | None, of_interest: float | None) -> float | None:
    """What a reading is read against: the paper's effect, else the book's smallest effect of interest."""
    return paper_effect if paper_effect is not None else of_interest


def _reading(est: float, se: float, paper_effect: float | None, of_interest: float | None) -> str:
    bound = _bound(paper_effect, of_interest)
    if bound is None:
        return NO_PAPER_EFFECT
    if below(est, se, abs(bound)):
        return SMALLER if paper_effect is not None else NEGLIGIBLE
    return UNDERPOWERED if mde(se) > abs(bound) else UNRESOLVED
