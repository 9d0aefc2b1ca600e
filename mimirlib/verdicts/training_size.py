"""Verdict rules of the training-size chapter (MIMIR §3.2.1, Figures 2 left and 13; appendix C.1, Figure 9).

The frames come from :mod:`mimirlib.experiments.training_size`. Every AUC there is measured
against one fixed non-member set, and every difference between two AUCs (two checkpoints, two
windows, a target and its recency control) is a joint-bootstrap effect paired on the texts the two
share; the seed sd comes from the lab's seed replicates of the target (the recency control has one
seed and borrows its target's, x sqrt(2) for a difference of two trained models). The rise and the
fall are measured on one half of the texts, their peak checkpoint chosen on the other.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pandas as pd

from mimirlib.core import power
from mimirlib.display.report import count_of, count_span
from mimirlib.verdicts import (
    NOT_PAPER_ATTACK,
    INCONCLUSIVE,
    SEED_MEAN_BAR,
    SEED_Z,
    TALLY_RULE,
    tally_outcomes,
    Claim,
    Effect,
    Tally,
    Verdict,
    decide_tally,
    split_paper_attacks,
    tally,
)

# "Near random": an AUC within this distance of 0.5. MIMIR calls AUCs up to about 0.6 near random
# (its Table 1 and abstract), the bound the main-results chapter uses too.
NEAR_RANDOM_MARGIN = 0.1
# The claimed direction of every effect here: the peak above the first and the last checkpoint,
# the most recent window above the earliest, the control's recency above its target's.
CLAIMED_SIGN = 1

START_RULE = (
    f"per target x attack (MIMIR's five attacks; Min-K%++ is reported beside), the AUC at the first "
    f"checkpoint read (the first whose window holds the chapter's "
    f"min_members members, as the paper's first read holds its full sample) is near random when its 95% "
    f"bootstrap interval lies within 0.5 +/- {NEAR_RANDOM_MARGIN:g} and so does the point +/- {SEED_Z:g} seed "
    f"sd; clearly not when the interval (and the point -/+ {SEED_Z:g} seed sd) lies entirely outside that band; "
    f"otherwise inside the noise. Then: "
    f"{tally_outcomes(counts_for='are near random', counts_against='clearly not near random')}. An inconclusive "
    f"result is underpowered when the "
    f"intervals' median width exceeds the band (2 x {NEAR_RANDOM_MARGIN:g}): no interval that wide fits in it"
)

# C.1's effects are means over the target's seeds (experiments.training_size.recency_effects).
SEED_MEAN_NOTE = (
    "a unit's effect is the mean of its r seeds' effects (each seed saw the documents in its own order: other "
    f"members in its windows) and {SEED_MEAN_BAR}"
)

# Why the two control rules cannot be decided without the control model.
NO_CONTROL = "the lab has no recency control (lab profile key recency_control)"

# The chapter's claims, each decided by the rule of the same name in lower case.

STARTS_NEAR_RANDOM = Claim(
    "MIA performance starts as near-random at the first checkpoint",
    source="MIMIR §3.2.1, Figure 2 (left), Figure 13",
    key="mimir-3.2.1-start-near-random",
    paper_value="near random at the first checkpoint read, step 1,000 of ~99,000 (figure only)",
)

RISE_THEN_FALL = Claim(
    "AUC rises quickly early in training, then decreases as more data is seen",
    source="MIMIR §3.2.1, Figure 2 (left), Figure 13",
    key="mimir-3.2.1-training-size",
    effect_of_interest=power.SMALLEST_EFFECT_OF_INTEREST,  # figure only: the book's bound (power)
    paper_value="rises within a few thousand steps, then declines over checkpoints to step 99,000 (Pythia-dedup; "
    "figure only)",
)

RECENCY = Claim(
    "More recently seen members are easier to detect (at a fixed final checkpoint)",
    source="MIMIR appendix C.1, Figure 9",
    key="mimir-c.1-recency",
    effect_of_interest=power.SMALLEST_EFFECT_OF_INTEREST,  # figure only: the book's bound (power)
    paper_value="slightly higher AUC for recently seen members, decreasing to a plateau (Pythia-dedup-12B at step "
    "99,000; figure only)",
    average=True,
)

RECENCY_ON_CONTROL = Claim(
    "Read where Pythia's step 99,000 sits in its cosine schedule (learning rate still ~30% of its peak), the lab's "
    "model shows recency: more recently seen members are easier to detect",
    source="MIMIR appendix C.1, Figure 9 (the book's control run)",
    key="book-training-size-recency-control",
    effect_of_interest=power.SMALLEST_EFFECT_OF_INTEREST,  # no paper: the book's bound (power)
    origin="book",
    paper_value="not run by the paper (its Figure 9 model sits there)",
    average=True,
)

SCHEDULE_EXPLAINS_RECENCY = Claim(
    "The lab's full cosine decay (to 10% of the peak rate) weakens recency: on the same windows and texts, the same "
    "model on a schedule that stops where Pythia's step 99,000 sits has a larger recent-minus-earliest AUC gap than "
    "its target",
    source="MIMIR appendix C.1, Figure 9 (the book's control run)",
    key="book-training-size-recency-schedule",
    effect_of_interest=power.SMALLEST_EFFECT_OF_INTEREST,  # no paper: the book's bound (power)
    origin="book",
    paper_value="not run by the paper",
    average=True,
)


def _sd(x) -> float | None:
    return None if x is None or not math.isfinite(float(x)) else float(x)


def _effect(r, col: str = "estimate", sd_col: str = "seed_sd", label_cols=("target", "attack")) -> Effect:
    """The :class:`Effect` in columns ``col``, ``<col>_lo``, ``<col>_hi`` (``lo``/``hi`` for ``estimate``)
    of one row (a dict), with its seed sd (NaN: unknown)."""
    lo, hi = ("lo", "hi") if col == "estimate" else (f"{col}_lo", f"{col}_hi")
    return Effect(
        float(r[col]),
        float(r[lo]),
        float(r[hi]),
        _sd(r.get(sd_col)),
        int(r.get("n_seeds", 1) or 1),
        "/".join(str(r[c]) for c in label_cols if c in r),
        int(r.get("averaged", 1) or 1),
    )


def _span(frame: pd.DataFrame, *cols: str) -> str:
    return count_span(pd.concat([frame[c] for c in cols]), sep="-")


def _seed_means(frame: pd.DataFrame) -> bool:
    """Whether ``frame``'s effects are means over seeds (its ``averaged`` column, as C.1's)."""
    return "averaged" in frame and int(frame.averaged.max()) > 1


def _n(frame: pd.DataFrame, what: str, *member_cols: str, units: str = "target", borrowed: bool = False) -> str:
    """The sample size in words: members per window, the fixed non-members, units, seeds (the effects'
    means over them when :func:`_seed_means`)."""
    seeds = int(frame.n_seeds.max()) if "n_seeds" in frame else 1
    note = (
        f"; one seed (seed sd from its target's {seeds})"
        if borrowed
        else f"; each effect the mean of {seeds} seeds where the lab has replicates"
        if _seed_means(frame)
        else f"; {seeds} seeds where the lab has replicates"
        if seeds > 1
        else "; one seed"
    )
    return (
        f"{_span(frame, *member_cols)} members per {what} vs {int(frame.n_nonmembers.max())} fixed non-members; "
        f"{count_of(frame[units].nunique(), 'model')} x {count_of(frame.attack.nunique(), 'attack')}{note}"
    )


def _beside(rows: pd.DataFrame, tally_text: str) -> str:
    """The evidence's closing note on the attacks that are not units (Min-K%++) in ``rows``, with
    their tally in words; empty when there are none."""
    if rows.empty:
        return ""
    return f" Beside, not tallied ({', '.join(dict.fromkeys(rows.attack))}, {NOT_PAPER_ATTACK}): {tally_text}."


def _start_words(t: Tally) -> str:
    return f"near random in {t.n_for} of {t.n}, clearly not in {t.n_against}, inside the noise in {t.n_noise}"


def near_random_sign(auc: float, lo: float, hi: float, seed_sd: float | None = None) -> int:
    """+1 near random, -1 clearly not, 0 inside the noise (see :data:`START_RULE`)."""
    s = SEED_Z * (seed_sd or 0.0)
    low, high = 0.5 - NEAR_RANDOM_MARGIN, 0.5 + NEAR_RANDOM_MARGIN
    if low <= lo and hi <= high and low <= auc - s and auc + s <= high:
        return 1
    if (lo > high and auc - s > high) or (hi < low and auc + s < low):
        return -1
    return 0


def _start_tally(start: pd.DataFrame) -> Tally:
    """Near random (for), clearly not (against), inside the noise: one unit per row of ``start``."""
    signs = [near_random_sign(r.auc, r.auc_lo, r.auc_hi, _sd(r.seed_sd)) for r in start.itertuples()]
    return Tally(signs.count(1), signs.count(-1), signs.count(0))


def starts_near_random(start: pd.DataFrame) -> Verdict:
    """MIMIR §3.2.1: MIA performance "starts as near-random". ``start``: one row per (target,
    attack) at the first checkpoint (``experiments.training_size.start_auc``)."""
    start, beside = split_paper_attacks(start)
    if start.empty:
        return STARTS_NEAR_RANDOM.not_tested("no checkpoint window holds enough members", n="-")
    t = _start_tally(start)
    units = "; ".join(
        f"{r.target}/{r.attack}: {r.auc:.3f} [{r.auc_lo:.3f}, {r.auc_hi:.3f}]"
        + (f", seed sd {r.seed_sd:.3f}" if _sd(r.seed_sd) is not None else "")
        for r in start.itertuples()
    )
    steps = sorted(start.step.unique())
    outcome = decide_tally(t)
    width = float((start.auc_hi - start.auc_lo).median())
    reading = ""
    if outcome == INCONCLUSIVE:
        reading = power.UNDERPOWERED if width > 2 * NEAR_RANDOM_MARGIN else power.UNRESOLVED
    return STARTS_NEAR_RANDOM.verdict(
        outcome,
        f"AUC at the first checkpoint (step {', '.join(map(str, steps))}): {_start_words(t)}; the intervals' "
        f"median width is {width:.3f} against the band's {2 * NEAR_RANDOM_MARGIN:g}. {units}."
        + _beside(beside, _start_words(_start_tally(beside))),
        START_RULE,
        power=reading,
        lab_value=f"mean AUC {start.auc.mean():.3f} at step {steps[0]} "
        f"(range {start.auc.min():.3f}-{start.auc.max():.3f})",
        n=_n(start, "first window", "n_members"),
    )


RISE_FALL_RULE = (
    "units: target x attack curves of MIMIR's five attacks (Min-K%++ is reported beside). The texts "
    "(members of every checkpoint window and the fixed non-members) "
    "are split at random into two halves, seeded and stratified by role and domain, a text in the same half "
    "everywhere; on the selection half the peak is the interior checkpoint with the model's highest AUC "
    "averaged over attacks; on the other (test) half alone, the rise (AUC at the peak minus the first "
    "checkpoint) and the fall (peak minus the last), with joint-bootstrap intervals paired on the test half's "
    "non-members (members differ by window), and the seed sd over the target's replicates (each choosing its "
    "own peak). A unit is for when the rise and the fall are both clear, against when either is clearly "
    f"negative, otherwise inside the noise. {TALLY_RULE}"
)


def _rise_fall_units(rf: pd.DataFrame) -> list[tuple[int, dict, Effect, Effect]]:
    """Per curve: (+1 rise and fall both clear, -1 either clearly reversed, 0 otherwise; row; rise; fall)."""
    units = []
    for r in rf.to_dict("records"):
        rise = _effect(r, "rise", "rise_seed_sd")
        fall = _effect(r, "fall", "fall_seed_sd")
        s = (rise.sign(), fall.sign())
        units.append((1 if s == (1, 1) else -1 if -1 in s else 0, r, rise, fall))
    return units


def _rise_fall_tally(units: list[tuple[int, dict, Effect, Effect]]) -> Tally:
    signs = [u[0] for u in units]
    return Tally(signs.count(1), signs.count(-1), signs.count(0), tuple(e for u in units for e in u[2:]))


def _rise_fall_words(rf: pd.DataFrame) -> str:
    t = _rise_fall_tally(_rise_fall_units(rf))
    return (
        f"rise and fall both clear in {t.n_for} of {t.n}, either clearly reversed in {t.n_against}, otherwise "
        f"inside the noise in {t.n_noise}"
    )


def rise_then_fall(rf: pd.DataFrame) -> Verdict:
    """MIMIR §3.2.1: AUC "rapidly increases within the next few thousand steps, before decreasing
    across successive checkpoints". ``rf``: one row per (target, attack) with the rise (peak minus
    first) and fall (peak minus last) effects, the peak chosen on a selection half of the texts and
    the effects measured on the other half (``experiments.training_size.rise_and_fall``): choosing
    the peak on the texts it is measured on would inflate both. The rule is :data:`RISE_FALL_RULE`."""
    rf, beside = split_paper_attacks(rf)
    if rf.empty:
        return RISE_THEN_FALL.not_tested("fewer than three checkpoints with enough members", n="-")
    units = _rise_fall_units(rf)
    t = _rise_fall_tally(units)
    rises = tally([u[2] for u in units], CLAIMED_SIGN)
    falls = tally([u[3] for u in units], CLAIMED_SIGN)
    details = "; ".join(
        f"{r['target']}/{r['attack']} (peak step {r['peak_step']}): rise {rise.describe()}, fall {fall.describe()}"
        for _, r, rise, fall in units
    )
    return RISE_THEN_FALL.tallied(
        t,
        f"on the test half, with the peak chosen on the selection half: rise (AUC at the peak minus the first "
        f"checkpoint) and fall (peak minus the last) both clear in {t.n_for} of {t.n} target x attack curves, "
        f"either clearly reversed in {t.n_against}, otherwise inside the noise in {t.n_noise} (the rise alone: "
        f"{rises.n_for} clear, {rises.n_against} clearly reversed; the fall alone: {falls.n_for} clear, "
        f"{falls.n_against} clearly reversed). {details}." + _beside(beside, _rise_fall_words(beside)),
        RISE_FALL_RULE,
        lab_value=f"test half: mean AUC {rf.auc_first.mean():.3f} (first) -> {rf.auc_peak.mean():.3f} (peak) -> "
        f"{rf.auc_last.mean():.3f} (last checkpoint)",
        n=_n(rf, "window (test half)", "n_first", "n_peak", "n_last"),
    )


def _recency_verdict(
    claim: Claim,
    rows: pd.DataFrame,
    beside: pd.DataFrame,
    effect: Callable[[dict], Effect],
    what: str,
    rule: str,
    **run,
) -> Verdict:
    """A recency claim decided on the tally of ``effect`` of each of ``rows`` (claimed positive); the evidence
    names ``what`` is measured, the tally, every effect, then the rows ``beside`` it (not tallied), read by the
    same ``effect``."""
    eff = [effect(r) for r in rows.to_dict("records")]
    t = tally(eff, CLAIMED_SIGN)
    note = _beside(beside, tally([effect(r) for r in beside.to_dict("records")]).text())
    return claim.tallied(t, f"{what}: {t.text()}. " + "; ".join(e.describe() for e in eff) + ".", rule, note, **run)


def recency(rec: pd.DataFrame) -> Verdict:
    """MIMIR appendix C.1, Figure 9: at a fixed checkpoint, more recently seen members are easier.
    ``rec``: one row per (target, attack) with the effect AUC(most recent window) - AUC(earliest
    window) (``experiments.training_size.recency_effects``)."""
    rec, beside = split_paper_attacks(rec)
    if rec.empty:
        return RECENCY.not_tested("fewer than two recency windows hold enough members", n="-")
    return _recency_verdict(
        RECENCY,
        rec,
        beside,
        _effect,
        f"AUC(most recent window) - AUC(window ending {int(rec.earliest_steps_before_end.max())} steps before the end)",
        f"units: target x attack, MIMIR's five attacks; effects paired on the fixed non-members (members differ by "
        f"window); {TALLY_RULE}" + (f"; {SEED_MEAN_NOTE}" if _seed_means(rec) else ""),
        lab_value=f"mean AUC {rec.auc_recent.mean():.3f} (most recent) vs {rec.auc_earliest.mean():.3f} (earliest); "
        f"mean difference {rec.estimate.mean():+.3f}",
        n=_n(rec, "window", "n_recent", "n_earliest"),
    )


def _control_seeds(ctl: pd.DataFrame, gaps: bool = False) -> tuple[str, str, bool]:
    """How ``ctl``'s effects (``experiments.training_size.control_effects``), or with ``gaps`` its gaps to the
    target, carry the seeds: (what the evidence says, what the rule says of their seed sd, whether that sd is
    borrowed from the target)."""
    borrowed = bool(ctl.seed_borrowed.all()) if "seed_borrowed" in ctl else True
    if borrowed and gaps:
        return (
            "each seed sd below is the target's over the seeds it names, x sqrt(2): the control has one seed",
            "seed sd: the target's replicates x sqrt(2) (a difference of two trained models)",
            True,
        )
    if borrowed:
        return (
            "one seed (each seed sd below is its target's, over the seeds it names)",
            "seed sd borrowed from the target's replicates (same recipe; the control has one seed)",
            True,
        )
    r = int(ctl.averaged.max())
    return (
        f"each effect the mean over {r} seeds, the control's seed k paired with its target's seed k (same "
        "initialisation and data order)",
        f"seed sd over the {r} seed pairs' {'gaps' if gaps else 'effects'} (measured); {SEED_MEAN_NOTE}",
        False,
    )


def recency_on_control(ctl: pd.DataFrame) -> Verdict:
    """The book's control: recency on a model read where Pythia's step 99,000 sits in its cosine
    schedule. ``ctl``: one row per attack (``experiments.training_size.control_effects``: the mean over
    the control's seeds, with their seed sd, or one seed and its target's seed sd; the columns
    control_lr_share and target_lr_share, when present, are named in the evidence)."""
    ctl, beside = split_paper_attacks(ctl)  # read like C.1 (recency): MIMIR's five attacks, Min-K%++ beside
    if ctl.empty:
        return RECENCY_ON_CONTROL.not_tested(NO_CONTROL, n="-")
    shares = [_sd(ctl[c].iat[0]) if c in ctl else None for c in ("control_lr_share", "target_lr_share")]
    lr = (
        f" (final learning rate {shares[0]:.0%} of peak vs {shares[1]:.0%} for its target)"
        if None not in shares
        else ""
    )
    seeds, seed_rule, borrowed = _control_seeds(ctl)
    return _recency_verdict(
        RECENCY_ON_CONTROL,
        ctl,
        beside,
        lambda r: _effect(r, label_cols=("control", "attack")),
        f"control {ctl.control.iat[0]}{lr}, {seeds}, AUC(most recent window) - AUC(earliest)",
        f"units: attacks, MIMIR's five (Min-K%++ reported beside, as for C.1); effects paired on the fixed "
        f"non-members; {seed_rule}; {TALLY_RULE}",
        lab_value=f"recent - earliest, mean over attacks: control {ctl.estimate.mean():+.3f}, "
        f"its target {ctl.target_estimate.mean():+.3f}",
        n=_n(ctl, "window", "n_recent", "n_earliest", units="control", borrowed=borrowed),
    )


def schedule_explains_recency(ctl: pd.DataFrame) -> Verdict:
    """The book's control, compared with its target on the same windows and texts: does stopping at
    Pythia's point of the schedule raise the recency effect? ``ctl`` as for :func:`recency_on_control`
    (columns gap, gap_lo, gap_hi, gap_seed_sd: seed by seed, or the target's seed sd x sqrt(2))."""
    ctl, beside = split_paper_attacks(ctl)  # the units of C.1 (recency): MIMIR's five attacks, Min-K%++ beside
    if ctl.empty:
        return SCHEDULE_EXPLAINS_RECENCY.not_tested(NO_CONTROL, n="-")
    what, rule, borrowed = _control_seeds(ctl, gaps=True)
    return _recency_verdict(
        SCHEDULE_EXPLAINS_RECENCY,
        ctl,
        beside,
        lambda r: _effect(r, "gap", "gap_seed_sd", label_cols=("control", "attack")),
        "(control's recent - earliest) - (target's recent - earliest), fully paired (same members, same non-members; "
        f"{what})",
        "units: attacks, MIMIR's five (Min-K%++ reported beside, as for C.1); " + rule + "; " + TALLY_RULE,
        lab_value=f"mean gap {ctl.gap.mean():+.3f} (control {ctl.estimate.mean():+.3f}, target "
        f"{ctl.target_estimate.mean():+.3f})",
        n=_n(ctl, "window", "n_recent", "n_earliest", units="control", borrowed=borrowed),
    )
