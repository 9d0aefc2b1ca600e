"""Verdicts: named rules that decide whether the lab reproduces a paper's claim.

Every verdict in the book is a :class:`Verdict` returned by a rule function in one of this
package's chapter modules (``verdicts.main_results``, ``verdicts.ngram_overlap``, ...). A rule's
thresholds are module-level constants with a comment saying why, and so is the :class:`Claim` it
decides (the claim's text, where the paper says it, the paper's number, the scorecard key); the
rule's text is printed beside the verdict; a unit test pins each outcome. Chapters call rules and
never write a threshold themselves.

Outcomes (:data:`OUTCOMES`):

- ``reproduced`` / ``partly reproduced`` / ``not reproduced``: the rule's reading of the lab's
  numbers;
- ``inconclusive``: a comparative claim whose effect is inside the noise (see :class:`Effect`);
  its :attr:`Verdict.power` says which kind (:mod:`mimirlib.core.power`): *underpowered* (the
  minimum detectable effect exceeds the paper's effect: the lab cannot tell), *smaller than the
  paper's* (a one-sided test puts the lab's effect below the paper's), *unresolved*, or *no
  paper effect size*; where the paper gives no number, a claim may state the book's smallest
  effect of interest (:attr:`Claim.effect_of_interest`) to read against instead (*smaller than
  the smallest effect of interest*, *underpowered*, *unresolved*);
- ``not tested``: the run lacks what the rule needs (a model, a split, neighbours).

Comparative claims ("A beats B", "X lowers AUC") are decided on :class:`Effect` values: a
*paired* estimate on shared texts (``metrics.paired_auc_difference``) and, where the lab trained
several seeds, the seed-to-seed spread of the same estimate. An effect counts as *clear* only
when both say so (:meth:`Effect.sign`), and :func:`decide_tally` turns the clear effects of many
units (domains, attacks) into one outcome. Every tallied verdict also carries its minimum
detectable effect (:attr:`Verdict.mde`) beside the paper's effect (:attr:`Claim.paper_effect`, in
the effects' own units and in the claimed direction).

The records a chapter shows are also published into its executed notebook
(:func:`publish`), from which :mod:`mimirlib.book.scorecard` builds the claims scorecard page: one
source of truth, never typed twice.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from mimirlib.core import power
from mimirlib.core.power import TEXTS

REPRODUCED = "reproduced"
PARTLY = "partly reproduced"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
NOT_TESTED = "not tested"
OUTCOMES = (REPRODUCED, PARTLY, NOT_REPRODUCED, INCONCLUSIVE, NOT_TESTED)

# An effect is "clear" only if it exceeds this many seed standard deviations (about a 95%
# two-sided band for a normal spread) besides its paired bootstrap interval excluding zero.
SEED_Z = 2.0
# How an effect that is the mean of r seeds' effects (Effect.averaged) is held to the seed spread.
SEED_MEAN_BAR = f"is clear beyond the seed spread when it exceeds {SEED_Z:g} seed sd / sqrt(r)"
# decide_tally: a claim holds ("reproduced") when at least this share of units shows a clear
# effect in the claimed direction; the same "three in four" bar the book has used throughout.
TALLY_REPRODUCED = 0.75
# decide_tally: a claim is decided one way only when at least this share of units clearly sides
# that way ("partly reproduced" / "not reproduced"); otherwise "inconclusive" (see decide_tally).
TALLY_DECIDED = 0.5

# MIMIR's five attacks (§2.2: LOSS, Reference, Zlib, Neighborhood, Min-K%), by registry key: claims
# about "the attacks" count these; any other (Min-K%++, the attacks after the paper) is shown beside.
PAPER_ATTACKS = ("loss", "ref", "zlib", "min_k", "ne")
NOT_PAPER_ATTACK = "not one of MIMIR's five attacks"  # why an attack's units are shown beside a tally, not in it

GLUE_NAME = "mimir_verdicts"  # the glued record set the scorecard reads from each executed chapter
DECISIONS = ("", "tally", "pooled")  # Verdict.decision: by decide_tally, by decide_pooled, or by another rule


def sentences(first: str, *more: str) -> str:
    """``first`` and each non-empty part of ``more`` as sentences of their own: a part's leading ". ", "; " or
    ", " (written to continue an evidence text) is dropped and its first letter raised, and the text before it
    gains a full stop where it has none; the evidence a verdict reads then never runs on ("noise.. Beside")."""
    out = first
    for part in more:
        part = part.strip().lstrip(".;,").strip()
        if not part:
            continue
        out = f"{out}{'' if out.rstrip().endswith('.') else '.'} {part[0].upper()}{part[1:]}"
    return out


def outcome_label(verdict: str, power_reading: str = "") -> str:
    """A verdict with its power reading, e.g. ``inconclusive (underpowered)`` (records and builds alike)."""
    return f"{verdict} ({power_reading})" if power_reading else verdict


@dataclass(frozen=True)
class Verdict:
    """One decided claim. ``claim`` is the paper's claim in one line; ``rule`` says how the verdict
    follows from ``evidence``; ``n`` is the sample size the rule rests on; ``origin`` is ``paper``
    for a claim of one of the two papers, ``book`` for the book's own finding."""

    claim: str
    verdict: str
    evidence: str
    rule: str
    source: str = ""  # where the paper says it, e.g. "MIMIR §3.1, Figure 1"
    paper_value: str = ""  # the paper's number, as the paper gives it
    lab_value: str = ""  # the lab's number, from the run
    n: str = ""  # the sample size the rule rests on
    origin: str = "paper"
    key: str = ""  # a stable identifier (the scorecard's row id)
    paper_effect: float | None = None  # the paper's effect in the effects' units (claimed direction)
    effect_of_interest: float | None = None  # the book's smallest effect of interest, where paper_effect is None
    mde: float | None = None  # minimum detectable effect of the lab's test (80% power, alpha 0.05)
    mde_floor: float | None = None  # the MDE with unlimited texts (the seed spread's part)
    power: str = ""  # for an inconclusive verdict: one of power.READINGS
    regime: str = ""  # keys of the lab's fidelity rows (verdicts.regime) the claim rests on, comma-separated
    # What lets several lab draws be read together by the same rule (mimirlib.verdicts.draws); "" for other rules:
    decision: str = ""  # how unit effects decided it: "tally" (decide_tally) or "pooled" (decide_pooled)
    units: tuple = ()  # the tallied units, Effect fields as dicts
    claimed_sign: int = 1  # the direction the units were tallied in
    points: bool = False  # the evidence is in AUC points (x 100): the MDE and the paper's effect are written so too
    paired_over: str = TEXTS  # what more of would lower the MDE: the effects' paired units (power.reach_text)

    def __post_init__(self):
        if self.verdict not in OUTCOMES:
            raise ValueError(f"verdict: {self.verdict!r} is not one of {OUTCOMES}")
        if self.origin not in ("paper", "book"):
            raise ValueError(f"origin: expected 'paper' or 'book', got {self.origin!r}")
        if self.power and (self.verdict != INCONCLUSIVE or self.power not in power.READINGS):
            raise ValueError(f"power: {self.power!r} applies to inconclusive verdicts only, as one of {power.READINGS}")
        if self.decision not in DECISIONS:
            raise ValueError(f"decision: expected one of {DECISIONS}, got {self.decision!r}")

    @property
    def outcome_label(self) -> str:
        """The verdict with its power reading, e.g. ``inconclusive (underpowered)``."""
        return outcome_label(self.verdict, self.power)

    def power_text(self) -> str:
        """``MDE 0.050 vs paper +0.043`` (empty when the rule computed no MDE; :func:`power.describe`)."""
        if self.mde is None:
            return ""
        return power.describe(
            self.mde,
            self.paper_effect,
            self.mde_floor,
            self.effect_of_interest,
            self.points,
            self.power,
            self.paired_over,
        )

    def as_row(self) -> dict:
        claim = self.claim if self.origin == "paper" else f"{self.claim} (the book's finding, not a paper claim)"
        evidence = f"{self.evidence} ({self.power_text()})" if self.mde is not None else self.evidence
        row = {
            "paper's claim": claim,
            "verdict": self.outcome_label,
            "lab evidence": evidence,
            "n": self.n,
            "decision rule": self.rule,
        }
        if self.regime:
            row["lab's regime"] = ", ".join(
                f'<a href="lab.html#regime-{k}">{k}</a>' for k in self.regime.split(",") if k
            )
        return row


@dataclass(frozen=True)
class Claim:
    """A claim and the fields of its records that do not depend on the run: ``text`` becomes
    :attr:`Verdict.claim`, the others :class:`Verdict`'s fields of the same names. Each chapter
    module declares its claims as constants; a rule builds every record it returns from its claim
    (``run``: the fields the run fills, ``lab_value`` and ``n``)."""

    text: str
    source: str = ""
    paper_value: str = ""
    key: str = ""
    origin: str = "paper"
    paper_effect: float | None = None  # the paper's effect size, in the effects' units, claimed direction
    # Where the paper gives no number (figure only): the book's smallest effect of interest that the
    # power reading uses instead (power.SMALLEST_EFFECT_OF_INTEREST), shown as the book's, never the paper's.
    effect_of_interest: float | None = None
    # A claim about an average effect ("X raises Y", "A beats B"), not about most units or each one: tallied()
    # also reads its units' pooled mean when the count cannot decide (decide_pooled, POOLED_RULE).
    average: bool = False
    paired_over: str = TEXTS  # what the claim's effects are paired over (Verdict.paired_over)

    def verdict(self, outcome: str, evidence: str, rule: str, **run) -> Verdict:
        return Verdict(
            self.text,
            outcome,
            evidence,
            rule,
            source=self.source,
            paper_value=self.paper_value,
            origin=self.origin,
            key=self.key,
            paper_effect=self.paper_effect,
            effect_of_interest=None if self.paper_effect is not None else self.effect_of_interest,
            paired_over=self.paired_over,
            **run,
        )

    def read_power(self, effects: Sequence[Effect], claimed_sign: int = 1) -> power.PowerReading:
        """The pooled power reading of ``effects`` against :attr:`paper_effect`, else :attr:`effect_of_interest`
        (:func:`power.read`; the text part independent across the effects' groups when every effect names one)."""
        groups = [e.group for e in effects] if all(e.group for e in effects) else None
        return power.read(
            [(e.estimate * claimed_sign, e.se) for e in effects],
            self.paper_effect,
            [e.seed_se for e in effects],
            groups,
            self.effect_of_interest,
        )

    def decided_on(self, t: Tally, decision: str) -> dict:
        """The record fields that say ``t``'s units decided the verdict by ``decision`` (:data:`DECISIONS`):
        only when every unit is an :class:`Effect` whose own :meth:`Effect.sign` the tally counted (a tally
        of readings made another way cannot be re-read over lab draws)."""
        effects = [e for e in t.details if isinstance(e, Effect)]
        again = tally(effects, t.claimed_sign)
        if not effects or len(effects) != len(t.details) or again.counts != t.counts:
            return {}
        return dict(decision=decision, units=tuple(asdict(e) for e in effects), claimed_sign=t.claimed_sign)

    def with_power(self, outcome: str, reading: power.PowerReading, evidence: str, rule: str, **run) -> Verdict:
        """A verdict that shows ``reading``'s MDE, and its reading when the outcome is inconclusive."""
        label = reading.reading if outcome == INCONCLUSIVE else ""
        return self.verdict(outcome, evidence, rule, mde=reading.mde, mde_floor=reading.floor, power=label, **run)

    def not_tested(self, why: str, **run) -> Verdict:
        """The run could not decide the claim; ``why`` stands as the evidence."""
        return self.verdict(NOT_TESTED, why, "-", **run)

    def out_of_regime(self, rows: Sequence, **run) -> Verdict | None:
        """*Not tested*, saying why, when any of the fidelity rows (:class:`regime.Regime`) the claim
        rests on is out of the paper's regime; ``None`` when all are in it (the rule then decides)."""
        out = [r for r in rows if r.in_regime is False]
        if not out:
            return None
        run.setdefault("regime", ",".join(r.key for r in rows))
        return self.verdict(NOT_TESTED, "; ".join(r.why_not() for r in out), "-", **run)

    def pooled(self, t: Tally, evidence: str, rule: str, after: str = "", points: bool = False, **run) -> Verdict:
        """A claim about an average effect decided by :func:`decide_pooled` (``rule`` quotes
        :data:`POOLED_RULE`); the evidence gains the pooled effect, its se and z (in AUC points, x 100,
        when ``points``: the units of evidence written in points; "not read" when the tally decides), then
        ``after`` (what is reported beside the units, so that it never reads as part of the pooled mean)."""
        effects = [e for e in t.details if isinstance(e, Effect)]
        if not effects:
            return self.verdict(decide_tally(t), sentences(evidence, after), rule, **run)
        reading = self.read_power(effects, t.claimed_sign)
        z = power.z_score(reading.estimate, reading.se)
        clear = pooled_reading(z)
        est = (
            f"{100 * reading.estimate:+.2f} points, se {100 * reading.se:.2f}"
            if points
            else f"{reading.estimate:+.3f}, se {reading.se:.4f}"
        )
        # shown whatever decides, so a reader beside a decided tally is told it was not read
        unread = "; not read, as the tally decides" if decide_tally(t) != INCONCLUSIVE else ""
        pooled = f"Pooled (claimed direction): {est}, z {z:+.2f}: {clear}{unread}."
        outcome = decide_pooled(t, reading.estimate, reading.se)
        text = sentences(evidence, pooled, after)
        return self.with_power(outcome, reading, text, rule, points=points, **self.decided_on(t, "pooled"), **run)

    def tallied(self, t: Tally, evidence: str, rule: str, after: str = "", points: bool = False, **run) -> Verdict:
        """The claim decided on a tally of effects (:func:`decide_tally`; ``rule`` quotes :data:`TALLY_RULE`),
        with the MDE of its pooled effect and, when inconclusive, the power reading; ``after`` ends the
        evidence. A claim about an average (:attr:`average`) is decided by :meth:`pooled` instead, its
        rule gaining :data:`POOLED_RULE` (the pooled effect then reads before ``after``, in points if ``points``)."""
        if self.average:
            rule = rule if POOLED_RULE in rule else f"{rule}; {POOLED_RULE}"
            return self.pooled(t, evidence, rule, after, points, **run)
        evidence = sentences(evidence, after)
        outcome = decide_tally(t)
        effects = [e for e in t.details if isinstance(e, Effect)]
        if not effects:
            return self.verdict(outcome, evidence, rule, **run)
        reading = self.read_power(effects, t.claimed_sign)
        return self.with_power(outcome, reading, evidence, rule, points=points, **self.decided_on(t, "tally"), **run)


# ----------------------------------------------------------------------------- effects


@dataclass(frozen=True)
class Effect:
    """A comparative estimate (e.g. an AUC difference) on one unit (a domain, an attack).

    ``lo``/``hi`` is its 95% paired-bootstrap interval over the texts; ``seed_sd`` is the
    standard deviation of the same estimate across independently trained seeds (``None`` when
    the lab has one seed of these models). ``averaged``: over how many seeds ``estimate`` is the
    mean (``metrics.seed_averaged_auc_difference``; 1: one seed's estimate); the seed part of its
    noise is then :attr:`seed_se`, ``seed_sd / sqrt(averaged)``. ``label`` names the unit in evidence strings.
    """

    estimate: float
    lo: float
    hi: float
    seed_sd: float | None = None
    n_seeds: int = 1
    label: str = ""
    averaged: int = 1
    group: str = ""  # the unit's independent text sample (e.g. its domain): see power.read; "" = shared texts

    def __post_init__(self):
        if isinstance(self.averaged, bool) or not isinstance(self.averaged, (int, np.integer)) or self.averaged < 1:
            raise ValueError(f"averaged: expected a whole number of seeds >= 1, got {self.averaged!r}")
        if self.averaged > max(self.n_seeds, 1):
            raise ValueError(f"averaged: {self.averaged} seeds, but the effect has {self.n_seeds}")

    @property
    def seed_se(self) -> float | None:
        """The seed spread of :attr:`estimate`: the seed sd, divided by sqrt(k) for a mean over k seeds."""
        return None if self.seed_sd is None else self.seed_sd / float(np.sqrt(self.averaged))

    def sign(self) -> int:
        """+1 or -1 when the effect is clear, 0 when it is inside the noise: clear means the paired
        bootstrap interval excludes 0 *and* ``|estimate| > SEED_Z * seed_se`` (when known)."""
        if self.lo <= 0.0 <= self.hi:
            return 0
        if self.seed_se is not None and abs(self.estimate) <= SEED_Z * self.seed_se:
            return 0
        return 1 if self.estimate > 0 else -1

    @property
    def se(self) -> float:
        """Standard error from the interval and the seed spread of the estimate (:func:`power.se_of`)."""
        return power.se_of(self.lo, self.hi, self.seed_se)

    def describe(self) -> str:
        s = f"{self.estimate:+.3f} [{self.lo:+.3f}, {self.hi:+.3f}]"
        if self.averaged > 1:
            s = f"mean of {self.averaged} seeds {s}"
        if self.seed_sd is not None:
            s += f", seed sd {self.seed_sd:.3f} ({self.n_seeds} seeds)"
        return f"{self.label}: {s}" if self.label else s


def effect_from_paired(
    diff, *, seed_sd: float | None = None, n_seeds: int = 1, label: str = "", averaged: int = 1
) -> Effect:
    """An :class:`Effect` from a ``metrics.PairedDifference`` (``averaged``: see :class:`Effect`)."""
    return Effect(float(diff.point), float(diff.lo), float(diff.hi), seed_sd, n_seeds, label, averaged)


@dataclass(frozen=True)
class Tally:
    """How many units show a clear effect for the claim, against it, or none."""

    n_for: int
    n_against: int
    n_noise: int
    details: tuple = field(default=(), repr=False)
    claimed_sign: int = 1

    @property
    def n(self) -> int:
        return self.n_for + self.n_against + self.n_noise

    @property
    def counts(self) -> tuple[int, int, int]:
        """(for, against, inside the noise)."""
        return self.n_for, self.n_against, self.n_noise

    def text(self) -> str:
        return (
            f"clear effect in the claimed direction in {self.n_for} of {self.n}, clearly opposite in "
            f"{self.n_against}, inside the noise in {self.n_noise}"
        )


def tally(effects: Iterable[Effect], claimed_sign: int = 1) -> Tally:
    """Count the effects by :meth:`Effect.sign` relative to the claimed direction."""
    effects = list(effects)
    signs = [e.sign() * claimed_sign for e in effects]
    return Tally(signs.count(1), signs.count(-1), signs.count(0), tuple(effects), claimed_sign)


def tally_outcomes(
    units: str = "units",
    counts_for: str = "show a clear effect in the claimed direction",
    counts_against: str = "clearly against it",
) -> str:
    """The outcomes of :func:`decide_tally` in words, for a rule that names its own units and what
    makes one count for or against (every tallied rule's text quotes this, never restates it)."""
    return (
        f"reproduced if >= {TALLY_REPRODUCED:.0%} of {units} {counts_for}; partly if >= {TALLY_DECIDED:.0%} are "
        f"for and more for than against; not reproduced if >= {TALLY_DECIDED:.0%} are {counts_against} (at "
        f"least as many as for); otherwise inconclusive"
    )


TALLY_RULE = (
    f"{tally_outcomes()}. Clear: the paired 95% bootstrap interval excludes 0 and the effect exceeds {SEED_Z:g} seed sd"
)


def decide_tally(t: Tally) -> str:
    """The outcome of a tally; the rule is :data:`TALLY_RULE`. One bar per side, not one on the units
    decided either way: counting a clearly opposite unit as "decided" let it lift a claim from
    inconclusive to partly (8 for, 1 against of 18 was partly while 8 for, 0 against was
    inconclusive: the B.2 flip between two lab seeds). With one bar per side, a unit moved from the
    noise to the opposite side never raises the outcome, nor one moved to the claim's side lowers it
    (tested over every tally of up to 24 units)."""
    if t.n == 0:
        return NOT_TESTED
    if t.n_for >= TALLY_REPRODUCED * t.n:
        return REPRODUCED
    if t.n_for >= TALLY_DECIDED * t.n and t.n_for > t.n_against:
        return PARTLY
    if t.n_against >= TALLY_DECIDED * t.n and t.n_against >= t.n_for:
        return NOT_REPRODUCED
    return INCONCLUSIVE


POOLED_RULE = (
    "a claim about an average effect is also read on its pooled effect when the tally is inconclusive: the units' "
    "mean, with the se of the power reading (the same se its MDE comes from); partly if that mean is clear in the "
    f"claimed direction (beyond {power.Z_TWO_SIDED:.2f} se: the two-sided 95% test whose power the MDE states), not "
    "reproduced if clearly opposite, otherwise inconclusive (the tally's outcome stands whenever it decides)"
)


CLEAR_FOR, CLEAR_AGAINST = "clear in the claimed direction", "clearly opposite"  # a pooled effect's readings


def pooled_reading(z: float) -> str:
    """How a pooled effect (signed in the claimed direction) reads against the noise, in the tally's words:
    clear in the claimed direction above ``power.Z_TWO_SIDED``, clearly opposite below minus it."""
    if z > power.Z_TWO_SIDED:
        return CLEAR_FOR
    return CLEAR_AGAINST if z < -power.Z_TWO_SIDED else "inside the noise"


def decide_pooled(t: Tally, estimate: float, se: float) -> str:
    """The outcome of a claim about an average effect (rule: :data:`POOLED_RULE`): the tally's when it
    decides, else the pooled effect's (``estimate`` in the claimed direction, ``se`` as in
    :func:`power.read`). The tally counts units clear one by one, each on its own texts; the MDE the
    verdict shows is that of the pooled mean, so an effect the MDE says the lab can see is decided on
    the test that sees it. Monotone like :func:`decide_tally` (tested)."""
    outcome = decide_tally(t)
    if outcome != INCONCLUSIVE:
        return outcome
    reading = pooled_reading(power.z_score(estimate, se))
    return {CLEAR_FOR: PARTLY, CLEAR_AGAINST: NOT_REPRODUCED}.get(reading, INCONCLUSIVE)


def split_paper_attacks(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(tallied, beside)``: the rows of ``frame`` (column ``attack``) of MIMIR's five attacks
    (:data:`PAPER_ATTACKS`), the units of a claim about "the attacks", and the rest (Min-K%++),
    which a verdict reports beside its tally, never in it."""
    if frame.empty or "attack" not in frame:
        return frame, frame.iloc[0:0]
    paper = frame.attack.isin(PAPER_ATTACKS)
    return frame[paper].reset_index(drop=True), frame[~paper].reset_index(drop=True)


def seed_sd(values: Sequence[float]) -> float | None:
    """Sample standard deviation over seeds, or ``None`` with fewer than two seeds."""
    v = np.asarray([x for x in values if x is not None and np.isfinite(x)], dtype=float)
    return float(v.std(ddof=1)) if v.size >= 2 else None


# ----------------------------------------------------------------------------- display and records


def verdict_table(verdicts: Sequence[Verdict]):
    """The verdicts for display, one row per claim, hiding the index. A Styler, because a plain
    DataFrame display cuts every cell at 50 characters, and the evidence is the point."""
    return pd.DataFrame([v.as_row() for v in verdicts]).fillna("").style.hide(axis="index")


def to_json(verdicts: Sequence[Verdict], chapter: str, section: str) -> str:
    """The records as JSON, each tagged with its chapter and the label of the section deciding it."""
    return json.dumps([asdict(v) | {"chapter": chapter, "section": section} for v in verdicts])


def section_label(chapter: str) -> str:
    """The MyST label of a chapter's verdict section (``(verdicts-main-results)=`` in its prose)."""
    return "verdicts-" + chapter.replace("_", "-")


def publish(verdicts: Sequence[Verdict], chapter: str, regime: Sequence = ()):
    """Glue the records into the executed notebook (hidden; the scorecard reads them) and glue each
    verdict as ``verdict_<i>`` for the prose; ``regime``: the chapter's fidelity rows
    (:class:`mimirlib.verdicts.regime.Regime`), glued for the lab page's table. Returns the table to display."""
    from myst_nb import glue

    from mimirlib.verdicts import regime as fidelity

    glue(GLUE_NAME, to_json(verdicts, chapter, section_label(chapter)), display=False)
    if regime:
        glue(fidelity.GLUE_NAME, fidelity.to_json(regime, chapter), display=False)
    for i, v in enumerate(verdicts):
        glue(f"verdict_{i}", v.verdict, display=False)
    return verdict_table(verdicts)
