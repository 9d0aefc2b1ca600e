"""Turning results into what a chapter shows: formatted tables, glued numbers and verdicts.

Verdicts are decided here, by rules on the numbers, so a chapter cannot say "reproduced"
unless its run says so; the rule is printed beside each verdict.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

REPRODUCED, PARTLY, NOT_REPRODUCED = "reproduced", "partly reproduced", "not reproduced"


@dataclass(frozen=True)
class Verdict:
    claim: str
    verdict: str
    evidence: str
    rule: str

    def as_row(self) -> dict:
        return {"paper's claim": self.claim, "verdict": self.verdict, "lab evidence": self.evidence,
                "decision rule": self.rule}


def verdict_table(verdicts):
    """The verdicts for display, one row per claim, hiding the index. A Styler, because a plain
    DataFrame display cuts every cell at 50 characters, and the evidence is the point."""
    return pd.DataFrame([v.as_row() for v in verdicts]).style.hide(axis="index")


def fmt_ci(point: float, lo: float, hi: float) -> str:
    return f"{point:.3f} [{lo:.3f}, {hi:.3f}]"


def auc_table(results: pd.DataFrame, index: list[str], columns: str = "attack", with_ci: bool = True) -> pd.DataFrame:
    """A pivot of AUC (optionally ``AUC [lo, hi]`` strings) for display."""
    df = results.copy()
    df["cell"] = [fmt_ci(a, lo, hi) if with_ci else f"{a:.3f}" for a, lo, hi in zip(df.auc, df.auc_lo, df.auc_hi)]
    return df.pivot_table(index=index, columns=columns, values="cell", aggfunc="first", sort=False)


def verdict_near_random(results: pd.DataFrame, bound: float = 0.6) -> Verdict:
    """Paper: "MIAs barely outperform random guessing" (AUC < 0.6 in most domains)."""
    frac = float((results.auc < bound).mean())
    v = REPRODUCED if frac >= 0.75 else PARTLY if frac >= 0.4 else NOT_REPRODUCED
    return Verdict("MIAs perform near random (AUC < 0.6) in most settings", v,
                   f"{frac:.0%} of {len(results)} (domain, model, attack) AUCs are below {bound}",
                   "reproduced if >= 75% are below 0.6; partly if >= 40%")


def verdict_size_trend(results: pd.DataFrame, size_col: str = "params") -> Verdict:
    """Paper: MIA performance tends to increase with target model size."""
    rhos = []
    for _, g in results.groupby(["domain", "attack"]):
        if g[size_col].nunique() >= 3:
            rhos.append(stats.spearmanr(g[size_col], g.auc).statistic)
    rhos = np.array([r for r in rhos if np.isfinite(r)])
    if len(rhos) == 0:
        return Verdict("AUC increases with model size", NOT_REPRODUCED, "fewer than 3 model sizes", "needs >= 3 sizes")
    pos = float((rhos > 0).mean())
    v = REPRODUCED if pos >= 0.75 and np.median(rhos) > 0.3 else PARTLY if pos >= 0.5 else NOT_REPRODUCED
    return Verdict("MIA performance increases with target model size", v,
                   f"Spearman rho(size, AUC) > 0 in {pos:.0%} of {len(rhos)} (domain, attack) series; "
                   f"median rho {np.median(rhos):.2f}",
                   "reproduced if >= 75% positive and median rho > 0.3; partly if >= 50% positive")


def verdict_dedup(dedup_auc: pd.Series, natural_auc: pd.Series) -> Verdict:
    """Paper: deduplicating training data reduces MIA performance (Figure 1)."""
    diff = (natural_auc.to_numpy() - dedup_auc.to_numpy())
    frac = float((diff > 0).mean())
    v = REPRODUCED if frac >= 0.75 else PARTLY if frac >= 0.5 else NOT_REPRODUCED
    return Verdict("Deduplication decreases MIA performance", v,
                   f"natural-data model beats its deduplicated twin in {frac:.0%} of {len(diff)} (domain, attack) "
                   f"pairs; mean AUC gain {diff.mean():+.3f}",
                   "reproduced if >= 75% of pairs favour the natural model; partly if >= 50%")


def verdict_best_attack(results: pd.DataFrame, claimed: str = "ref") -> Verdict:
    """Paper: the reference-based attack performs best overall, with marginal differences."""
    mean = results.groupby("attack").auc.mean().sort_values(ascending=False)
    best = mean.index[0]
    v = (REPRODUCED if best.startswith(claimed)
         else PARTLY if any(i.startswith(claimed) for i in mean.index[:2]) else NOT_REPRODUCED)
    ranking = ", ".join(f"{a} {x:.3f}" for a, x in mean.items())
    return Verdict("The reference-based attack performs best overall", v, f"mean AUC by attack: {ranking}",
                   "reproduced if a reference attack has the highest mean AUC; partly if second")
