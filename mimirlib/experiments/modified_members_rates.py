"""Table 4's rates (MIMIR §5): at a threshold set on the non-members, the share of modified members
flagged, beside the non-members' FPR and the members' TPR, each with its interval (Wilson for the
two original sets, exact on the number of members for the modified ones), and the table that shows them."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from mimirlib.core import metrics


def compare_flag_rates(
    nonmember_scores, member_scores, modified_scores, groups, fpr_target: float, *, confidence: float = 0.95
) -> dict:
    """At the threshold that gives ``fpr_target`` on the non-members (rule: member iff score >
    threshold), the share of modified members flagged, of non-members (their FPR) and of members
    (their TPR), each with an interval; and the differences flagged - FPR and flagged - TPR with
    intervals (:func:`mimirlib.core.metrics.difference_interval`). The threshold is held fixed: the question is how the
    three sets fall around one threshold.

    The modified members of one original (``groups``: e.g. its domain and position) share its text
    and the model's memory of it, so their flags are correlated; the flagged share's interval is
    the exact (Clopper-Pearson) one on an effective sample of one trial per member (the share times
    the number of members successes), always rather than only when a cluster bootstrap collapses:
    a percentile bootstrap over 36 members undercovers near 0 everywhere (0 flagged gives [0, 0];
    1 member of 36 gives an upper bound near 3/36 against the exact 0.145), and one interval for
    every cell keeps the cells comparable. Counting members, not texts, is conservative when the
    edits of a member disagree. Non-members and members are independent texts: Wilson intervals."""
    nm, m = np.asarray(nonmember_scores, float), np.asarray(member_scores, float)
    mod = np.asarray(modified_scores, float)
    if len(groups) != mod.size or mod.size == 0:
        raise ValueError(f"groups: {len(groups)} labels for {mod.size} modified scores (need one each, at least one)")
    thr = metrics.threshold_at_fpr(nm, fpr_target)
    k_nm, k_m = int((nm > thr).sum()), int((m > thr).sum())
    _, uniq = pd.factorize(pd.Series(list(groups), dtype=object))
    flagged = float((mod > thr).mean())
    out = {"threshold": thr, "n_texts": int(mod.size), "n_groups": int(len(uniq)), "flagged": flagged}
    rate_ci = metrics.proportion_interval(flagged * len(uniq), len(uniq), confidence, "clopper-pearson")
    out["flagged_lo"], out["flagged_hi"] = rate_ci
    out |= {"n_nonmembers": int(nm.size), "fpr": k_nm / nm.size}
    out["fpr_lo"], out["fpr_hi"] = metrics.proportion_interval(k_nm, nm.size, confidence, "wilson")
    out |= {"n_members": int(m.size), "tpr": k_m / m.size}
    out["tpr_lo"], out["tpr_hi"] = metrics.proportion_interval(k_m, m.size, confidence, "wilson")
    for name, other in (("vs_fpr", "fpr"), ("vs_tpr", "tpr")):
        out[name] = flagged - out[other]
        ci = (out[f"{other}_lo"], out[f"{other}_hi"])
        out[f"{name}_lo"], out[f"{name}_hi"] = metrics.difference_interval(flagged, rate_ci, out[other], ci)
    return out


def flag_rates(run, fpr_targets: Sequence[float], *, confidence: float = 0.95) -> pd.DataFrame:
    """Table 4's cells, tidy: one row per (attack, target FPR, kind of modification) with the
    flagged share of the modified members, the FPR on the non-members and the TPR on the members
    at the same threshold, their intervals and the two differences (:func:`compare_flag_rates`).
    ``run``: a :class:`mimirlib.experiments.modified_members.ModifiedRun`."""
    rows = []
    for attack in run.columns:
        nm, m = run.scores(attack, 0), run.scores(attack, 1)
        for f in fpr_targets:
            for kind in run.kinds:
                sub = run.modified_of(kind)
                groups = list(zip(sub.domain, sub.member))
                rec = compare_flag_rates(
                    nm, m, sub[run.columns[attack]].to_numpy(float), groups, f, confidence=confidence
                )
                rows.append(
                    {
                        "attack": attack,
                        "fpr_target": float(f),
                        "kind": kind,
                        "edits": float(sub.edits.iloc[0]) if len(sub) else np.nan,
                    }
                    | rec
                )
    return pd.DataFrame(rows)


def percent_text(x, lo=None, hi=None) -> str:
    """``x`` as a percentage with one decimal, with its interval in brackets when given."""
    return f"{100 * x:.1f}" if lo is None else f"{100 * x:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"


def table4(rates: pd.DataFrame) -> pd.DataFrame:
    """Table 4's analogue for display: flagged % [95% interval] per (attack, set) and target FPR,
    with the TPR on the original members and the FPR on the original non-members at the same
    thresholds as the last rows of each attack; the last column says how many texts each row rests
    on (a modified set: its texts and the members they were made from)."""
    rows, sizes = [], {}
    for r in rates.itertuples():
        rows.append(
            {
                "attack": r.attack,
                "set": r.kind,
                "target FPR": f"{r.fpr_target:.0%}",
                "flagged (%)": percent_text(r.flagged, r.flagged_lo, r.flagged_hi),
            }
        )
        sizes[(r.attack, r.kind)] = f"{r.n_texts} texts of {r.n_groups} members"
    base = rates.drop_duplicates(["attack", "fpr_target"])
    for r in base.itertuples():
        for name, x, lo, hi, n in (
            ("original members (TPR)", r.tpr, r.tpr_lo, r.tpr_hi, r.n_members),
            ("original non-members (FPR)", r.fpr, r.fpr_lo, r.fpr_hi, r.n_nonmembers),
        ):
            rows.append(
                {
                    "attack": r.attack,
                    "set": name,
                    "target FPR": f"{r.fpr_target:.0%}",
                    "flagged (%)": percent_text(x, lo, hi),
                }
            )
            sizes[(r.attack, name)] = f"{n} texts"
    t = pd.DataFrame(rows)
    order = list(dict.fromkeys(t["set"]))
    t["set"] = pd.Categorical(t["set"], order)
    t = t.sort_values(["attack", "set"], kind="stable")
    out = t.pivot(index=["attack", "set"], columns="target FPR", values="flagged (%)")[
        list(dict.fromkeys(t["target FPR"]))
    ]
    out["n"] = [sizes[(a, str(k))] for a, k in out.index]
    return out
