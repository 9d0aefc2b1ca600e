"""mimirlib's side of each difference from the reference implementation (book/reference_differences.md).

Each test pins one behaviour the appendix page states, on hand-made inputs where the
reference's rule and mimirlib's give different answers; the last tests check that the page
cites every one of them and that every node id it cites exists.
"""

import ast
import math
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from mimirlib.core import metrics
from mimirlib.core.attacks import AttackInputs, score
from mimirlib.core.signals import TokenSignals

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "book" / "reference_differences.md"
NODE_ID = re.compile(r"(tests/[\w/]+\.py)::(\w+)")


def sig(logprob) -> TokenSignals:
    lp = np.array(logprob, dtype=np.float32)
    return TokenSignals(lp, np.zeros_like(lp), np.ones_like(lp))


# ----------------------------------------------------------------------------- 1. bootstrap


def test_bootstrap_is_centred_on_the_auc_not_one_minus_it():
    rng = np.random.default_rng(7)
    members, nonmembers = rng.normal(1.5, 1.0, 300), rng.normal(0.0, 1.0, 300)
    point = metrics.auc(members, nonmembers)
    assert point > 0.8  # clearly separable, so AUC and 1 - AUC are far apart
    r = metrics.bootstrap_auc(members, nonmembers, n_resamples=500, seed=0)
    assert r.point == point
    assert abs(r.mean - point) < 0.01
    assert abs(r.mean - (1.0 - point)) > 0.5
    assert r.lo < point < r.hi
    # The reference's defect reproduced on purpose: re-negating the scores mirrors every resample's
    # AUC around 0.5, so the mean becomes 1 - AUC while the standard error stays the same (up to
    # resampling noise: the resamples differ because the negated non-members sort the other way).
    flipped = metrics.bootstrap_auc(-members, -nonmembers, n_resamples=500, seed=0)
    assert flipped.mean == pytest.approx(1.0 - point, abs=0.01)
    assert flipped.std == pytest.approx(r.std, rel=0.2)


# ----------------------------------------------------------------------------- 2. TPR at x% FPR


def _tpr_with_strictly_fewer_false_positives(members, nonmembers, budget):
    """The reference's rule, for contrast: the largest TPR over ROC points with FPR < budget."""
    fpr, tpr, _ = metrics.roc(members, nonmembers)
    return float(tpr[fpr < budget].max())


def test_tpr_at_one_percent_fpr_allows_one_false_positive_in_a_hundred():
    nonmembers = np.arange(100, dtype=float)  # 0, 1, ..., 99
    # 10 members above every non-member, 20 between the two largest non-members, 70 low.
    members = np.r_[np.full(10, 99.5), np.full(20, 98.5), np.full(70, 0.5)]
    r = metrics.tpr_at_fpr(members, nonmembers, 0.01)
    assert r.fpr_achieved == 0.01  # one false positive: FPR equal to the budget is allowed
    assert r.threshold == 98.0
    assert r.tpr == 0.30
    assert r.resolvable and r.min_resolvable_fpr == 0.01
    # Under FPR strictly below 1%, no false positive is allowed and the TPR would be 0.10.
    assert _tpr_with_strictly_fewer_false_positives(members, nonmembers, 0.01) == 0.10
    assert metrics.tpr_at_fpr(members, nonmembers, 0.0).tpr == 0.10


def test_tpr_at_one_percent_fpr_allows_three_false_positives_in_three_hundred():
    nonmembers = np.arange(300, dtype=float)
    members = np.r_[np.full(5, 299.5), np.full(5, 296.5), np.full(90, 0.5)]  # 296.5: below 3 non-members
    r = metrics.tpr_at_fpr(members, nonmembers, 0.01)
    assert r.fpr_achieved == pytest.approx(3 / 300)
    assert r.tpr == pytest.approx(0.10)
    assert _tpr_with_strictly_fewer_false_positives(members, nonmembers, 0.01) == pytest.approx(0.05)


# ----------------------------------------------------------------------------- 3. reference attack


def test_reference_attack_is_target_minus_reference_loglik_never_clipped():
    # Target more confident than the reference (member-like): positive score.
    confident = AttackInputs("a", sig([-1.0, -2.0, -3.0]), reference=sig([-3.0, -4.0, -5.0]))
    # Reference more confident than the target: negative score, which the reference
    # implementation's min(0, .) (in its own, negated direction) would have turned into 0.
    doubtful = AttackInputs("b", sig([-4.0, -5.0, -6.0]), reference=sig([-1.0, -1.0, -1.0]))
    s = score("ref", [confident, doubtful])
    assert s[0] == pytest.approx(-2.0 - (-4.0))  # mean log-lik of the target minus the reference's
    assert s[1] == pytest.approx(-5.0 - (-1.0))
    assert s[0] > 0 > s[1]
    # Its in-loop run used the target's own probabilities as the reference: exactly 0, a constant.
    assert score("ref", [AttackInputs("c", confident.target, reference=confident.target)])[0] == 0.0


# ----------------------------------------------------------------------------- 4. neighbourhood


def test_neighbourhood_uses_the_mean_neighbour_loss_not_the_largest():
    # Both texts have loss 2.0; A's neighbours are uniformly worse, B has one degenerate neighbour.
    a = AttackInputs("a", sig([-2.0, -2.0]), neighbors=[sig([-2.5]), sig([-2.5]), sig([-2.5])])
    b = AttackInputs("b", sig([-2.0, -2.0]), neighbors=[sig([-1.0]), sig([-1.0]), sig([-4.0])])
    s = score("ne", [a, b])
    assert s[0] == pytest.approx(2.5 - 2.0)  # mean neighbour loss minus the text's loss
    assert s[1] == pytest.approx(2.0 - 2.0)
    # The reference's score, negated to mimirlib's direction: largest neighbour loss minus the loss.
    reference_rule = [max(n.nll for n in x.neighbors) - x.target.nll for x in (a, b)]
    assert reference_rule == pytest.approx([0.5, 2.0])
    assert s[0] > s[1] and reference_rule[0] < reference_rule[1]  # the two rules order a and b oppositely


# ----------------------------------------------------------------------------- 5. Min-K%


def test_min_k_keeps_at_least_one_token_on_a_short_text():
    short = AttackInputs("abc", sig([-1.0, -5.0, -2.0]))
    assert math.floor(0.2 * 3) == 0  # the reference would average no token: NaN
    s = score("min_k", [short], k=0.2)[0]
    assert np.isfinite(s) and s == pytest.approx(-5.0)
    assert np.isfinite(score("min_k_pp", [short], k=0.2)[0])
    # Otherwise the rule is the reference's: floor(0.2 * 10) = 2 lowest tokens of a 10-token text.
    ten = AttackInputs("t", sig([-1.0, -9.0, -2.0, -3.0, -7.0, -1.5, -2.5, -0.5, -4.0, -1.0]))
    assert score("min_k", [ten], k=0.2)[0] == pytest.approx((-9.0 - 7.0) / 2)


# ----------------------------------------------------------------------------- the page itself


def _test_functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def test_page_cites_only_tests_that_exist():
    cited = set(NODE_ID.findall(PAGE.read_text(encoding="utf-8")))
    assert len({f for f, _ in cited}) >= 2 and len(cited) >= 7, cited
    missing = []
    for file, name in sorted(cited):
        path = ROOT / file
        if not path.is_file() or name not in _test_functions(path):
            missing.append(f"{file}::{name}")
    assert missing == [], f"cited on {PAGE.name} but not found: {missing}"


def test_page_cites_every_difference_test_here():
    cited = {
        name for file, name in NODE_ID.findall(PAGE.read_text(encoding="utf-8")) if file.endswith(Path(__file__).name)
    }
    here = {n for n in _test_functions(Path(__file__)) if n.startswith("test_") and not n.startswith("test_page_")}
    assert here - cited == set()


def test_page_is_the_appendix_at_the_end_of_the_toc():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    last = toc["parts"][-1]
    assert last["caption"] == "Appendix"
    assert {"file": "book/reference_differences"} in last["chapters"]
