"""Is the lab in the paper's regime? One tested rule per property a claim depends on.

A lab experiment tests a claim only when the lab has the property the claim is about, at a size
that could see the paper's effect. Each rule here measures one property from a chapter's run and
returns a :class:`Regime` row: the lab's value beside the paper's, and ``in_regime`` (True, False,
or None when the run cannot tell). Chapters publish their rows with their verdicts
(:func:`mimirlib.verdicts.publish`); the book gathers them into the lab page's fidelity table
(:mod:`mimirlib.book.fidelity`). A verdict about the neighbours, the RaMIA centre, an upsampled share or
a RaMIA-beyond-text target's generalisation is *not tested* when a row it rests on is out of regime, its
evidence saying why (:meth:`mimirlib.verdicts.Claim.out_of_regime`); the power, overlap and shift rows do
not bar a verdict (power shows in each verdict's MDE): :data:`mimirlib.book.fidelity.READING`.

The rules:

- :func:`power`: benchmark size per domain and the paired 95% half-width of the AUC differences
  the chapter compares; in regime when the half-width is at most :data:`MAX_HALF_WIDTH`;
- :func:`overlap`: natural non-members' mean 7-gram overlap with the training data, per domain; in
  regime at :data:`MIN_OVERLAP` or more (13-gram overlap shown beside);
- :func:`neighbours`: semantic neighbours' embedding cosine to their source against random edits of
  the same size (paired by source); in regime when the paired difference's interval is above 0;
- :func:`centre`: the RaMIA target's MIA at the range centre; in regime when its TPR at 1% FPR is at
  most :data:`MAX_CENTRE_TPR` (not saturated) with its exact interval over the IN ranges, out when the
  interval is above it; *cannot tell* in between, and with fewer than
  :data:`MIN_OUT_FOR_1PCT` OUT ranges, where no threshold has a 1% FPR;
- :func:`shift`: the temporal split's model-free (blind) baseline AUC; in regime when its interval
  is above 0.5 (the shift the claims are about is present);
- :func:`generalisation`: a RaMIA-beyond-text target's test accuracy (mean over its replicates) against the
  paper's targets'; in regime at :data:`MAX_TEST_ACCURACY` or less with its 95% interval, out above it;
- :func:`upsampled_share`: a domain upsampled in the SILO-style run, its share of the documents before
  upsampling; in regime under :data:`MAX_UPSAMPLED_SHARE` (SILO's own criterion).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass

from mimirlib.core.metrics import mean_t_interval, proportion_interval

GLUE_NAME = "mimir_regime"  # the glued row set the fidelity table reads from each executed chapter

# The paired-difference half-width the issue asks for: the paper's size, deduplication and
# best-attack effects are +0.007 to +0.043 AUC, so a wider interval cannot see most of them.
MAX_HALF_WIDTH = 0.02
# MIMIR §3.2.2, Figure 3: the Pile's natural non-members share 32.5-76.9% of their 7-grams with the
# training data; 30% is the floor of that range, rounded down.
MIN_OVERLAP = 0.30
PAPER_OVERLAP = "32.5-76.9% by Pile domain (MIMIR Figure 3)"
# RaMIA Table IV: MIA at the range centre has TPR at 1% FPR of 0-5.2% on all four datasets (AG
# News RMIA 0.67%); twice the largest is still "not saturated".
MAX_CENTRE_TPR = 0.10
PAPER_CENTRE = "TPR at 1% FPR 0.08% (LOSS), 0.67% (RMIA) on AG News; at most 5.2% on any dataset (RaMIA Table IV)"
# A 1% FPR needs at least 100 OUT ranges: with fewer, the "1% FPR" threshold sits above every OUT
# score, so the TPR is read off the single highest OUT score (on 60 ranges it swung 0% <-> 15-20% between draws).
MIN_OUT_FOR_1PCT = 100
# MIMIR A.2: SILO-PDSW upsamples 3x the "domains contributing less than 5% of the data" (HackerNews then
# makes up 5.9%, DM Mathematics 3.5%, §C.2); the paper's explanation of Figure 10 rests on those small shares.
MAX_UPSAMPLED_SHARE = 0.05
PAPER_SILO_SHARE = (
    "under 5% of the data before 3x upsampling; HackerNews 5.9%, DM Mathematics 3.5% after (MIMIR A.2, C.2)"
)
# RaMIA §V-A: its targets reach 83% (CIFAR-10, no augmentation), 86% (Purchase-100) and 87% (CelebA) test accuracy.
# A target above the highest plus 3 points barely memorises (the digits at 399 rows: 95-98%, LOSS AUC ~0.5).
MAX_TEST_ACCURACY = 0.90
PAPER_TEST_ACCURACY = {
    "CIFAR-10": "test accuracy 83% (WideResNet-28-2 trained without augmentation, RaMIA §V-A3)",
    "Purchase-100": "test accuracy 86% (the four-layer MLP, RaMIA §V-A1)",
}


@dataclass(frozen=True)
class Regime:
    """One property of the lab beside the paper's: ``key`` is the row's anchor (``regime-<key>``)."""

    key: str
    property: str
    lab_value: str
    paper_value: str
    in_regime: bool | None
    rule: str

    @property
    def anchor(self) -> str:
        return f"regime-{self.key}"

    @property
    def status(self) -> str:
        return {True: "in the paper's regime", False: "out of the paper's regime", None: "cannot tell"}[self.in_regime]

    def why_not(self) -> str:
        """The sentence an out-of-regime verdict shows as its evidence."""
        return f"not tested: {self.property}: the lab's {self.lab_value}; the paper's {self.paper_value}"


def to_json(rows, chapter: str) -> str:
    return json.dumps([asdict(r) | {"chapter": chapter} for r in rows])


def power(domain: str, n_members: int, n_nonmembers: int, half_width: float, what: str) -> Regime:
    """Benchmark size and the paired 95% half-width of ``what`` (e.g. a size effect) in one domain."""
    ok = None if half_width != half_width else half_width <= MAX_HALF_WIDTH
    return Regime(
        f"power-{domain}",
        f"power in {domain}",
        f"{n_members} + {n_nonmembers} texts, paired 95% half-width {half_width:.3f} ({what})",
        "1,000 + 1,000 texts per domain (MIMIR A.3); effects of +0.007 to +0.043 AUC",
        ok,
        f"in regime when the half-width is at most {MAX_HALF_WIDTH}",
    )


def overlap(domain: str, mean7: float, mean13: float, plays: str = "") -> Regime:
    """Natural non-members' mean 7-gram (and 13-gram) overlap with the training data in one domain."""
    return Regime(
        f"overlap-{domain}",
        f"natural non-member n-gram overlap in {domain}" + (f" (plays {plays})" if plays else ""),
        f"mean 7-gram overlap {mean7:.1%} (13-gram {mean13:.1%})",
        PAPER_OVERLAP,
        bool(mean7 >= MIN_OVERLAP),
        f"in regime when the mean 7-gram overlap is at least {MIN_OVERLAP:.0%} (its point value: whether the "
        "lab has the property; the n-gram chapter's verdict on the paper's claim reads the mean's 95% interval)",
    )


def neighbours(name: str, cos_semantic: float, cos_random: float, lo: float, hi: float, n: int) -> Regime:
    """Semantic neighbours' mean cosine to their source against random edits of exactly the same
    size (as many whole words replaced by random words, one per neighbour), with the 95% interval
    ``[lo, hi]`` of the paired difference over ``n`` sources."""
    return Regime(
        "neighbours-" + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-"),
        f"semantic neighbours ({name})",
        f"cosine to the source {cos_semantic:.3f} vs {cos_random:.3f} for random words replacing as many whole words "
        f"(difference {cos_semantic - cos_random:+.3f} [{lo:+.3f}, {hi:+.3f}], {n} sources)",
        "BERT replacements of ~5% of tokens, 'semantically close' (MIMIR §5); no number",
        bool(lo > 0),
        "in regime when the paired difference's 95% interval lies above 0",
    )


def centre_key(backbone: str) -> str:
    """The key of a backbone's centre row (:func:`centre`)."""
    return f"centre-{backbone.lower()}"


def centre(backbone: str, auc: float, tpr_at_1: float, n_out: int | None = None, n_in: int | None = None) -> Regime:
    """The RaMIA target's MIA at the range centre (judged by range membership), over ``n_out`` OUT
    and ``n_in`` IN ranges (None: not given); *cannot tell* below :data:`MIN_OUT_FOR_1PCT` OUT ranges.
    With ``n_in``, the TPR is read with its exact (Clopper-Pearson) 95% interval over the IN ranges:
    in regime when it lies at or below :data:`MAX_CENTRE_TPR`, out when above, else *cannot tell*;
    without it, on the point."""
    resolved = n_out is None or n_out >= MIN_OUT_FOR_1PCT
    value = f"AUC {auc:.3f}, TPR at 1% FPR {tpr_at_1:.1%}"
    ok = bool(tpr_at_1 <= MAX_CENTRE_TPR)
    if n_in:
        k = round(tpr_at_1 * n_in)
        lo, hi = proportion_interval(k, n_in)
        value += f" [{lo:.1%}, {hi:.1%}] ({k} of {n_in} IN ranges)"
        ok = True if hi <= MAX_CENTRE_TPR else False if lo > MAX_CENTRE_TPR else None
    if not resolved:
        value += f" (read above all {n_out} OUT scores: a 1% FPR needs {MIN_OUT_FOR_1PCT} OUT ranges)"
    return Regime(
        centre_key(backbone),
        f"RaMIA target's MIA at the range centre ({backbone})",
        value,
        PAPER_CENTRE,
        ok if resolved else None,
        f"in regime when the TPR at 1% FPR is at most {MAX_CENTRE_TPR:.0%} (not saturated): its exact 95% interval "
        f"over the IN ranges at or below it (out when entirely above it; the threshold's own noise is not in the "
        f"interval), measured on at least {MIN_OUT_FOR_1PCT} OUT ranges",
    )


def shift(benchmark: str, auc: float, lo: float, hi: float) -> Regime:
    """The temporal split's blind (model-free) baseline AUC with its 95% interval."""
    return Regime(
        f"shift-{benchmark}",
        f"temporal shift of {benchmark} (blind baseline)",
        f"blind baseline AUC {auc:.3f} [{lo:.3f}, {hi:.3f}]",
        "shifted by construction (MIMIR §4: members before, non-members after a cutoff); no blind baseline run",
        bool(lo > 0.5),
        "in regime when the blind baseline's 95% interval lies above 0.5 (the shift is present)",
    )


def upsampled_share(domain: str, before: float, after: float, upsample: int) -> Regime:
    """A domain upsampled ``upsample`` times in the SILO-style run: its share of the run's distinct documents
    (``before``) and of the documents one epoch trains on (``after``)."""
    return Regime(
        f"upsampled-{domain}",
        f"upsampled domain's share of the SILO-style run ({domain})",
        f"{before:.1%} of the documents before {upsample}x upsampling, {after:.1%} after",
        PAPER_SILO_SHARE,
        bool(before < MAX_UPSAMPLED_SHARE),
        f"in regime when the domain is under {MAX_UPSAMPLED_SHARE:.0%} of the documents before upsampling (SILO's "
        "criterion)",
    )


def generalisation(modality: str, dataset: str, accuracies, n_test: int) -> Regime:
    """A RaMIA-beyond-text target's test accuracy on the ``n_test`` rows it did not train on, one value per
    replicate (``accuracies``), against the paper's target on ``dataset``: the mean with its 95% t interval over
    the replicates (one replicate: the exact interval over its rows). In regime when the interval lies at or
    below :data:`MAX_TEST_ACCURACY`, out when it lies above, else *cannot tell*."""
    acc = [float(a) for a in accuracies]
    if not acc or any(not 0.0 <= a <= 1.0 for a in acc):
        raise ValueError(f"generalisation: accuracies must be shares in [0, 1], got {accuracies!r}")
    if len(acc) > 1:
        mean, lo, hi, _ = mean_t_interval(acc)
        lo, hi = max(0.0, lo), min(1.0, hi)  # a share: the t interval clipped to [0, 1]
        over = f"mean of {len(acc)} replicates' targets (range {min(acc):.1%}-{max(acc):.1%})"
    else:
        mean = acc[0]
        lo, hi = proportion_interval(round(mean * n_test), n_test)
        over = "one target"
    ok = True if hi <= MAX_TEST_ACCURACY else False if lo > MAX_TEST_ACCURACY else None
    return Regime(
        f"generalisation-{modality}",
        f"RaMIA beyond text: the {modality} target's generalisation ({dataset} analogue)",
        f"test accuracy {mean:.1%} [{lo:.1%}, {hi:.1%}], {over}, each on the {n_test:,} rows it did not train on",
        PAPER_TEST_ACCURACY.get(dataset, "not given"),
        ok,
        f"in regime when the test accuracy's 95% interval lies at or below {MAX_TEST_ACCURACY:.0%} (the paper's "
        "targets: 83-87%): a target that generalises better barely memorises its training rows; out when it lies above",
    )
