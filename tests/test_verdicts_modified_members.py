"""The modified-members rules: where a cell is placed, and each outcome of each rule."""

import numpy as np
import pandas as pd
import pytest

from mimirlib.experiments import modified_members as exp
from mimirlib.experiments import modified_members_rates as R
from mimirlib.verdicts import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTED, PARTLY, REPRODUCED
from mimirlib.verdicts import modified_members as rules

# (vs_fpr_lo, vs_fpr_hi, vs_tpr_lo, vs_tpr_hi) giving each position
INTERVALS = {
    rules.BELOW: (-0.08, -0.02, -0.20, -0.10),
    rules.LIKE_NONMEMBERS: (-0.03, 0.03, -0.15, -0.05),
    rules.BETWEEN: (0.02, 0.08, -0.10, -0.02),
    rules.LIKE_MEMBERS: (0.05, 0.15, -0.02, 0.06),
    rules.NOISE: (-0.05, 0.10, -0.10, 0.05),
}


def cell(attack, kind, fpr, position, edits=np.nan, n_groups=36):
    lo_f, hi_f, lo_t, hi_t = INTERVALS[position]
    return {
        "n_groups": n_groups,
        "fpr_lo": 0.8 * fpr,
        "fpr_hi": 1.2 * fpr,
        "attack": attack,
        "fpr_target": fpr,
        "kind": kind,
        "edits": edits,
        "flagged": 0.05,
        "flagged_lo": 0.0,
        "flagged_hi": 0.1,
        "fpr": fpr,
        "tpr": 0.2,
        "tpr_lo": 0.17,
        "tpr_hi": 0.23,
        "vs_fpr": (lo_f + hi_f) / 2,
        "vs_fpr_lo": lo_f,
        "vs_fpr_hi": hi_f,
        "vs_tpr": (lo_t + hi_t) / 2,
        "vs_tpr_lo": lo_t,
        "vs_tpr_hi": hi_t,
    }


def lexical_rates(positions):
    """positions: {(attack, n, fpr): position}."""
    return pd.DataFrame([cell(a, exp.lexical_kind(n), f, p, float(n)) for (a, n, f), p in positions.items()])


def grid(default, **overrides):
    """Every (attack, n, fpr) of a 2 x 3 x 3 Table 4 at ``default``; overrides keyed 'ref_1_0.1'."""
    out = {}
    for a in ("loss", "ref"):
        for n in (1, 10, 25):
            for f in (0.01, 0.05, 0.1):
                out[(a, n, f)] = overrides.get(f"{a}_{n}_{f}", default)
    return out


def semantic_rates(positions):
    return pd.DataFrame([cell(a, exp.SEMANTIC, f, p) for (a, f), p in positions.items()])


@pytest.mark.parametrize("position", rules.POSITIONS)
def test_place_puts_each_interval_pattern_in_its_position(position):
    lo_f, hi_f, lo_t, hi_t = INTERVALS[position]
    assert rules.place({"vs_fpr_lo": lo_f, "vs_fpr_hi": hi_f, "vs_tpr_lo": lo_t, "vs_tpr_hi": hi_t}) == position


# ----------------------------------------------------------------------------- lexical_rule


def test_lexical_rule_reproduced_when_edits_fall_below_non_members():
    v = rules.lexical_rule(lexical_rates(grid(rules.BELOW)), n="36 members")
    assert v.verdict == REPRODUCED
    assert v.n == "36 members" and v.key and v.source and v.paper_value and v.lab_value and v.rule


def test_lexical_rule_partly_when_edits_are_like_non_members_but_not_more_definitively():
    # every cell on the non-member side, but only a third clearly below the non-members' FPR
    rates = lexical_rates(
        grid(rules.LIKE_NONMEMBERS, **{f"loss_{n}_{f}": rules.BELOW for n in (1, 10) for f in (0.01, 0.05, 0.1)})
    )
    assert rules.lexical_rule(rates, n="x").verdict == PARTLY


def test_lexical_rule_not_reproduced_when_one_token_edits_are_flagged_like_members():
    # the issue's case: ref flags one-token edits like members at 10% FPR, the rest is fine
    v = rules.lexical_rule(lexical_rates(grid(rules.BELOW, **{"ref_1_0.1": rules.LIKE_MEMBERS})), n="x")
    assert v.verdict == NOT_REPRODUCED
    assert "like members" in v.evidence


def test_lexical_rule_not_reproduced_when_one_token_edits_sit_between_non_members_and_members():
    v = rules.lexical_rule(lexical_rates(grid(rules.BELOW, **{"ref_1_0.05": rules.BETWEEN})), n="x")
    assert v.verdict == NOT_REPRODUCED


def test_lexical_rule_inconclusive_when_a_one_token_cell_is_inside_the_noise():
    # 17 of 18 cells below the FPR, but what one-token edits do at 10% FPR is inside the noise
    v = rules.lexical_rule(lexical_rates(grid(rules.BELOW, **{"ref_1_0.1": rules.NOISE})), n="x")
    assert v.verdict == INCONCLUSIVE


def test_lexical_rule_inconclusive_when_most_cells_are_inside_the_noise():
    rates = lexical_rates(
        grid(rules.NOISE, **{f"{a}_1_{f}": rules.BELOW for a in ("loss", "ref") for f in (0.01, 0.05, 0.1)})
    )
    assert rules.lexical_rule(rates, n="x").verdict == INCONCLUSIVE


def test_a_cell_can_be_below_the_non_members_only_with_enough_members():
    row = {"n_groups": 36, "fpr": 0.05, "fpr_lo": 0.04, "fpr_hi": 0.06}
    assert not rules.can_be_below(row)  # 0 of 36 reaches 9.7%, above a 5% budget
    assert rules.can_be_below(row | {"n_groups": 300})  # 0 of 300 reaches 1.2%
    assert rules.can_be_below(row | {"fpr": 0.1, "fpr_lo": 0.09, "fpr_hi": 0.11})
    # the lab's 30 members x 6 domains: 0 of 180 reaches 2.0%, below a 5% budget, not a 1% one
    assert rules.can_be_below(row | {"n_groups": 180})
    assert not rules.can_be_below(row | {"n_groups": 180, "fpr": 0.01, "fpr_lo": 0.006, "fpr_hi": 0.016})


def test_lexical_rule_inconclusive_says_whether_the_members_were_too_few():
    rates = lexical_rates(grid(rules.NOISE))
    v = rules.lexical_rule(rates, n="x")
    assert v.verdict == INCONCLUSIVE and v.power == "underpowered"  # only the 10% cells could be below
    assert "Power: 6 of 18 cells could be shown below the non-members" in v.evidence and "9.7%" in v.evidence
    many = rates.assign(n_groups=300)
    assert rules.lexical_rule(many, n="x").power == "unresolved"  # 12 of 18 could: more trials would tell


def test_lexical_rule_not_tested_without_edits():
    assert rules.lexical_rule(semantic_rates({("loss", 0.1): rules.BELOW}), n="x").verdict == NOT_TESTED


def test_lexical_rule_does_not_call_the_issue_case_partly_from_real_scores():
    """From scores: at 10% FPR the reference attack flags 19.3% of one-token edits (36 members x 20
    trials, the trials of a member alike) against a TPR of 14.0% on 900 members; the old rule said
    'partly'. All other cells are clearly below the non-members."""
    rng = np.random.default_rng(0)
    nonmembers = rng.normal(0, 1, 900)
    thr = np.quantile(nonmembers, 0.9)
    members = np.where(np.arange(900) < 126, thr + 1.0, thr - 1.0)  # TPR 14.0%
    edits = np.where(np.arange(720) < 139, thr + 1.0, thr - 1.0)  # 139 / 720 = 19.3%, in member order
    groups = np.repeat(np.arange(36), 20)
    rec = R.compare_flag_rates(nonmembers, members, edits, groups, 0.1)
    assert rec["flagged"] == pytest.approx(0.193, abs=0.001) and rec["tpr"] == pytest.approx(0.14)
    row = {"attack": "ref", "fpr_target": 0.1, "kind": exp.lexical_kind(1), "edits": 1.0} | rec
    assert rules.place(row) in (rules.LIKE_MEMBERS, rules.NOISE)
    rest = lexical_rates(grid(rules.BELOW)).query("not (attack == 'ref' and edits == 1 and fpr_target == 0.1)")
    rates = pd.concat([rest, pd.DataFrame([row])], ignore_index=True)
    assert rules.lexical_rule(rates, n="x").verdict in (INCONCLUSIVE, NOT_REPRODUCED)


def placed_from_scores(n_members, n_flagged, fpr, n_real=900, tpr=0.14, trials=20):
    """Where compare_flag_rates puts ``n_flagged`` of ``n_members`` edited members (all their trials
    alike) at a threshold giving ``fpr`` on ``n_real`` non-members, with a TPR of ``tpr``."""
    nonmembers = np.random.default_rng(0).normal(0, 1, n_real)
    thr = np.quantile(nonmembers, 1 - fpr)
    members = np.where(np.arange(n_real) < round(tpr * n_real), thr + 1.0, thr - 1.0)
    edits = np.repeat(np.where(np.arange(n_members) < n_flagged, thr + 1.0, thr - 5.0), trials)
    rec = R.compare_flag_rates(nonmembers, members, edits, np.repeat(np.arange(n_members), trials), fpr)
    return rules.place(rec), rec


def test_none_of_36_flagged_at_one_percent_fpr_is_not_below_non_members():
    # the old cluster bootstrap put 0 of 36 at [0, 0], hence "below" a 1% FPR; 0.99^36 = 70%: chance
    position, rec = placed_from_scores(36, 0, 0.01, tpr=0.02)
    assert rec["flagged_hi"] == pytest.approx(0.0974, abs=1e-4)
    assert position == rules.NOISE  # nor clearly below a 2% TPR


def test_none_flagged_is_like_non_members_when_the_tpr_is_clearly_higher():
    position, _ = placed_from_scores(36, 0, 0.01, tpr=0.20)
    assert position == rules.LIKE_NONMEMBERS


def test_none_flagged_is_below_non_members_once_the_exact_bound_clears_the_fpr():
    # upper bound 1 - 0.025^(1/n): 9.7% with 36 members, 3.6% with 100; against a 10% FPR
    assert placed_from_scores(36, 0, 0.10)[0] == rules.BELOW  # just: flagged - FPR's upper bound is -0.001
    assert placed_from_scores(100, 0, 0.10)[0] == rules.BELOW
    assert placed_from_scores(36, 0, 0.05)[0] != rules.BELOW
    assert placed_from_scores(100, 0, 0.05)[0] == rules.BELOW


def test_flagged_edits_are_like_members_or_between_only_when_clearly_above_the_fpr():
    assert placed_from_scores(36, 9, 0.05, tpr=0.5)[0] == rules.BETWEEN  # 25% [12, 42] vs FPR 5%, TPR 50%
    assert placed_from_scores(36, 9, 0.05, tpr=0.25)[0] == rules.LIKE_MEMBERS
    assert placed_from_scores(36, 4, 0.05, tpr=0.5)[0] == rules.LIKE_NONMEMBERS  # 11% [3, 26]: holds 5%


# ----------------------------------------------------------------------------- semantic_rule


def sem_grid(default, **overrides):
    return {(a, f): overrides.get(f"{a}_{f}", default) for a in ("loss", "ref") for f in (0.01, 0.05, 0.1)}


def test_semantic_rule_reproduced_when_neighbours_are_like_non_members():
    v = rules.semantic_rule(semantic_rates(sem_grid(rules.LIKE_NONMEMBERS)), n="18 neighbours")
    assert v.verdict == REPRODUCED and v.n == "18 neighbours"


def test_semantic_rule_partly_when_some_cells_sit_above_the_fpr():
    rates = semantic_rates(sem_grid(rules.LIKE_NONMEMBERS, **{"ref_0.1": rules.BETWEEN}))
    assert rules.semantic_rule(rates, n="x").verdict == PARTLY


def test_semantic_rule_not_reproduced_when_neighbours_are_flagged_like_members():
    rates = semantic_rates(sem_grid(rules.BELOW, **{"ref_0.05": rules.LIKE_MEMBERS}))
    assert rules.semantic_rule(rates, n="x").verdict == NOT_REPRODUCED


def test_semantic_rule_not_reproduced_when_most_cells_sit_above_the_fpr():
    rates = semantic_rates(sem_grid(rules.BETWEEN, **{"loss_0.01": rules.LIKE_NONMEMBERS}))
    assert rules.semantic_rule(rates, n="x").verdict == NOT_REPRODUCED


def test_semantic_rule_inconclusive_when_inside_the_noise():
    rates = semantic_rates(sem_grid(rules.NOISE, **{"loss_0.01": rules.BELOW, "loss_0.05": rules.BELOW}))
    assert rules.semantic_rule(rates, n="x").verdict == INCONCLUSIVE


def test_a_cell_can_be_placed_on_the_non_member_side_only_where_the_tpr_clears_the_fpr():
    row = {"n_groups": 36, "fpr": 0.01, "tpr": 0.2, "tpr_lo": 0.17, "tpr_hi": 0.23}
    # flagged at 1% on 36 members: 0 of 36, exact [0, 9.7%]; 0.01 - 0.2 + sqrt(0.087^2 + 0.03^2) = -0.098
    assert rules.can_be_placed(row)
    # TPR 5% [4, 6.5]: -0.04 + sqrt(0.087^2 + 0.01^2) = +0.048: no flagged rate tells them apart
    assert not rules.can_be_placed(row | {"tpr": 0.05, "tpr_lo": 0.04, "tpr_hi": 0.065})
    assert rules.can_be_placed(row | {"tpr": 0.05, "tpr_lo": 0.04, "tpr_hi": 0.065, "n_groups": 400})


def test_semantic_rule_inconclusive_says_whether_the_cells_could_be_placed():
    noisy = semantic_rates(sem_grid(rules.NOISE))
    v = rules.semantic_rule(noisy, n="x")
    assert v.verdict == INCONCLUSIVE and v.power == "unresolved"  # TPR 20% clears every FPR: could be placed
    weak = noisy.assign(tpr=noisy.fpr, tpr_lo=0.8 * noisy.fpr, tpr_hi=1.2 * noisy.fpr)
    v = rules.semantic_rule(weak, n="x")
    assert v.verdict == INCONCLUSIVE and v.power == "underpowered" and "0 of 6 cells could" in v.evidence
    assert rules.semantic_rule(semantic_rates(sem_grid(rules.LIKE_NONMEMBERS)), n="x").power == ""


def test_semantic_rule_not_tested_without_neighbours():
    assert rules.semantic_rule(lexical_rates(grid(rules.BELOW)), n="-").verdict == NOT_TESTED


# ----------------------------------------------------------------------------- closer_rule


def effects(*intervals):
    return pd.DataFrame(
        [
            {
                "attack": a,
                "estimate": (lo + hi) / 2,
                "lo": lo,
                "hi": hi,
                "lexical": "lexical n=10",
                "n_members": 36,
                "n_neighbors": 180,
                "n_edits": 720,
                "words_changed_semantic": 5.0,
                "words_changed_lexical": 6.0,
            }
            for a, (lo, hi) in zip(("loss", "ref"), intervals)
        ]
    )


def test_closer_rule_reproduced_when_neighbours_are_clearly_closer_for_every_attack():
    v = rules.closer_rule(effects((0.01, 0.03), (0.02, 0.05)), n="36 members")
    assert v.verdict == REPRODUCED and v.n == "36 members"


def test_closer_rule_states_the_units_of_its_score_distances():
    v = rules.closer_rule(effects((0.01, 0.03), (0.02, 0.05)), n="x")  # loss and ref: log-likelihoods per token
    assert "mean |score - own member's score| (nats per token)" in v.evidence
    assert v.lab_value == "loss +0.020; ref +0.035 nats per token (vs lexical n=10)"
    mixed = rules.closer_rule(effects((0.01, 0.03), (0.02, 0.05)).assign(attack=["loss", "zlib"]), n="x")
    assert "(each attack's own score scale)" in mixed.evidence and "nats" not in mixed.evidence


def test_closer_rule_partly_when_clearly_closer_for_one_attack_and_noise_for_the_other():
    assert rules.closer_rule(effects((0.01, 0.03), (-0.01, 0.02)), n="x").verdict == PARTLY


def test_closer_rule_not_reproduced_when_edits_are_clearly_closer():
    assert rules.closer_rule(effects((-0.03, -0.01), (-0.04, -0.01)), n="x").verdict == NOT_REPRODUCED


def test_closer_rule_inconclusive_when_inside_noise():
    assert rules.closer_rule(effects((-0.01, 0.02), (-0.02, 0.01)), n="x").verdict == INCONCLUSIVE


def test_closer_rule_not_tested_without_neighbours():
    assert rules.closer_rule(effects(), n="-").verdict == NOT_TESTED


# ----------------------------------------------------------------------------- paraphrase_rule


def paraphrase_rates(default, **overrides):
    return pd.DataFrame([cell(a, exp.PARAPHRASE, f, p) for (a, f), p in sem_grid(default, **overrides).items()])


def generated(n=20, cosine=0.9, changed=40.0, bad=0):
    """``n`` generated texts, the last ``bad`` of them off topic (cosine 0.3)."""
    cos = [cosine] * (n - bad) + [0.3] * bad
    return pd.DataFrame({"cosine": cos, "words changed (%)": [changed] * n})


def test_is_paraphrase_needs_both_meaning_and_rewording():
    ok = rules.is_paraphrase(
        [rules.MIN_PARAPHRASE_COSINE, 0.99, 0.5, np.nan],
        [rules.MIN_PARAPHRASE_CHANGE_PCT, 2.0, 60.0, 50.0],
    )
    assert ok.tolist() == [True, False, False, False]  # at both bars; a near-copy; off meaning; not measured


def test_paraphrase_rule_reproduced_when_paraphrases_are_like_non_members():
    v = rules.paraphrase_rule(paraphrase_rates(rules.LIKE_NONMEMBERS), generated(), n="36 paraphrases")
    assert v.verdict == REPRODUCED and v.n == "36 paraphrases" and v.key == "mimir-d-paraphrases"
    assert "20 of 20 (100%) are paraphrases" in v.evidence and v.lab_value


def test_paraphrase_rule_partly_when_some_cells_sit_above_the_fpr():
    rates = paraphrase_rates(rules.LIKE_NONMEMBERS, **{"ref_0.1": rules.BETWEEN})
    assert rules.paraphrase_rule(rates, generated(), n="x").verdict == PARTLY


def test_paraphrase_rule_not_reproduced_when_paraphrases_are_flagged_like_members():
    rates = paraphrase_rates(rules.BELOW, **{"loss_0.05": rules.LIKE_MEMBERS})
    assert rules.paraphrase_rule(rates, generated(), n="x").verdict == NOT_REPRODUCED


def test_paraphrase_rule_inconclusive_when_inside_the_noise():
    v = rules.paraphrase_rule(paraphrase_rates(rules.NOISE), generated(bad=4), n="x")
    assert v.verdict == INCONCLUSIVE  # 16 of 20 (80%) paraphrases: judged, but undecided


@pytest.mark.parametrize(
    "texts, why",
    [
        (generated(bad=6), "14 of 20 (70%) are paraphrases"),  # off topic too often
        (generated(changed=3.0), "0 of 20 (0%)"),  # near-copies, not paraphrases
    ],
    ids=["off-meaning", "near-copies"],
)
def test_paraphrase_rule_not_tested_when_the_model_cannot_paraphrase(texts, why):
    v = rules.paraphrase_rule(paraphrase_rates(rules.LIKE_NONMEMBERS), texts, n="x")
    assert v.verdict == NOT_TESTED
    assert why in v.evidence and "could not paraphrase" in v.evidence and "flagged" in v.evidence.lower()
    assert v.rule == rules.PARAPHRASE_GATE and v.lab_value  # the numbers stay on the page


def test_paraphrase_rule_not_tested_without_paraphrases_or_their_similarity():
    assert rules.paraphrase_rule(semantic_rates(sem_grid(rules.BELOW)), generated(), n="-").verdict == NOT_TESTED
    unmeasured = generated().assign(cosine=np.nan)
    v = rules.paraphrase_rule(paraphrase_rates(rules.BELOW), unmeasured, n="-")
    assert v.verdict == NOT_TESTED and "not measured" in v.evidence


RANK = {NOT_REPRODUCED: 0, INCONCLUSIVE: 1, PARTLY: 2, REPRODUCED: 3}
# moves toward the claim (a cell from the noise to the non-member side, from like to below non-members,
# from like members to between) and away from it (the reverse of each, and the noise to above the FPR)
TOWARD = [
    (rules.NOISE, rules.BELOW),
    (rules.NOISE, rules.LIKE_NONMEMBERS),
    (rules.LIKE_NONMEMBERS, rules.BELOW),
    (rules.LIKE_MEMBERS, rules.BETWEEN),
]
AWAY = [(b, a) for a, b in TOWARD] + [(rules.NOISE, rules.BETWEEN), (rules.NOISE, rules.LIKE_MEMBERS)]


def _counts(n):
    for below in range(n + 1):
        for like in range(n - below + 1):
            for between in range(n - below - like + 1):
                for members in range(n - below - like - between + 1):
                    yield {
                        rules.BELOW: below,
                        rules.LIKE_NONMEMBERS: like,
                        rules.BETWEEN: between,
                        rules.LIKE_MEMBERS: members,
                        rules.NOISE: n - below - like - between - members,
                    }


@pytest.mark.parametrize("below_share", [0.0, rules.LEXICAL_BELOW_SHARE])
def test_decide_cells_is_monotone_in_the_evidence(below_share):
    # every count of up to 12 cells: a cell moved toward the claim never lowers the outcome, one moved
    # away never raises it (the old rule let a cell above the FPR lift 7 + 1 of 18 from inconclusive)
    def outcome(c):
        return RANK[rules.decide_cells([p for p, k in c.items() for _ in range(k)], below_share)]

    for n in range(1, 13):
        for c in _counts(n):
            here = outcome(c)
            for moves, cmp in ((TOWARD, lambda x: x >= here), (AWAY, lambda x: x <= here)):
                for a, b in moves:
                    if c[a]:
                        assert cmp(outcome(c | {a: c[a] - 1, b: c[b] + 1})), (c, a, b)


def test_decide_cells_needs_half_the_cells_on_a_side_to_decide():
    side, up, noise = [rules.LIKE_NONMEMBERS], [rules.BETWEEN], [rules.NOISE]
    assert rules.decide_cells(side * 7 + up * 1 + noise * 10, 0.0) == INCONCLUSIVE
    assert rules.decide_cells(side * 7 + up * 2 + noise * 9, 0.0) == INCONCLUSIVE  # was partly
    assert rules.decide_cells(side * 9 + up * 2 + noise * 7, 0.0) == PARTLY
    assert rules.decide_cells(side * 1 + up * 8 + noise * 9, 0.0) == INCONCLUSIVE  # was not reproduced
    assert rules.decide_cells(side * 1 + up * 9 + noise * 8, 0.0) == NOT_REPRODUCED
    assert rules.decide_cells(side * 14 + noise * 4, 0.0) == REPRODUCED
    assert rules.decide_cells(side * 14 + [rules.LIKE_MEMBERS] + noise * 3, 0.0) == NOT_REPRODUCED
