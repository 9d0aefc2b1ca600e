"""Table 4's rates (MIMIR §5): at a threshold set on the non-members, the share of modified members
flagged, beside the non-members' FPR and the members' TPR, each with its interval (Wilson for the
two original sets, a bootstrap by member for the modified ones), and the table that shows them."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from mimirlib.core import metrics


def wilson_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion k/n (sensible at 0 and at n, unlike the
    normal approximation or a percentile bootstrap, which give [0, 0] when nothing is flagged)."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    z = stats.norm.ppf(0.5 + confidence / 2.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    lo = 0.0 if k == 0 else max(0.0, centre - half)
    hi = 1.0 if k == n else min(1.0, centre + half)
    return float(lo), float(hi)


def compare_flag_rates(
    nonmember_scores,
    member_scores,
    modified_scores,
    groups,
    fpr_target: float,
    *,
    n_bootstrap: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict:
    """At the threshold that gives ``fpr_target`` on the non-members (rule: member iff score >
    threshold), the share of modified members flagged, of non-members (their FPR) and of members
    (their TPR), each with an interval; and the differences flagged - FPR and flagged - TPR with
    bootstrap intervals.

    The modified members of one original (``groups``: e.g. its domain and position) are
    correlated, so their rate is resampled by original (cluster bootstrap); non-members and
    members are resampled as independent texts. The threshold is held fixed: the question is how
    the three sets fall around one threshold. Rates' intervals: Wilson for the FPR and the TPR,
    the cluster bootstrap for the modified members."""
    nm, m = np.asarray(nonmember_scores, float), np.asarray(member_scores, float)
    mod = np.asarray(modified_scores, float)
    if len(groups) != mod.size or mod.size == 0:
        raise ValueError(f"groups: {len(groups)} labels for {mod.size} modified scores (need one each, at least one)")
    thr = metrics.threshold_at_fpr(nm, fpr_target)
    k_nm, k_m = int((nm > thr).sum()), int((m > thr).sum())
    codes, uniq = pd.factorize(pd.Series(list(groups), dtype=object))
    flags = (mod > thr).astype(float)
    k_g = np.bincount(codes, weights=flags, minlength=len(uniq))
    n_g = np.bincount(codes, minlength=len(uniq)).astype(float)
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, len(uniq), (n_bootstrap, len(uniq)))
    mod_b = k_g[pick].sum(axis=1) / n_g[pick].sum(axis=1)
    fpr_b = rng.binomial(nm.size, k_nm / nm.size, n_bootstrap) / nm.size  # = resampling the non-members' flags
    tpr_b = rng.binomial(m.size, k_m / m.size, n_bootstrap) / m.size
    q = [(1 - confidence) / 2, (1 + confidence) / 2]
    flagged = float(flags.mean())
    out = {"threshold": thr, "n_texts": int(mod.size), "n_groups": int(len(uniq)), "flagged": flagged}
    out["flagged_lo"], out["flagged_hi"] = (float(x) for x in np.quantile(mod_b, q))
    out |= {"n_nonmembers": int(nm.size), "fpr": k_nm / nm.size}
    out["fpr_lo"], out["fpr_hi"] = wilson_interval(k_nm, nm.size, confidence)
    out |= {"n_members": int(m.size), "tpr": k_m / m.size}
    out["tpr_lo"], out["tpr_hi"] = wilson_interval(k_m, m.size, confidence)
    for name, other, other_b in (("vs_fpr", k_nm / nm.size, fpr_b), ("vs_tpr", k_m / m.size, tpr_b)):
        out[name] = flagged - other
        out[f"{name}_lo"], out[f"{name}_hi"] = (float(x) for x in np.quantile(mod_b - other_b, q))
    return out


def flag_rates(
    run, fpr_targets: Sequence[float], *, n_bootstrap: int = 1000, seed: int = 0, confidence: float = 0.95
) -> pd.DataFrame:
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
                    nm,
                    m,
                    sub[run.columns[attack]].to_numpy(float),
                    groups,
                    f,
                    n_bootstrap=n_bootstrap,
                    seed=seed,
                    confidence=confidence,
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
