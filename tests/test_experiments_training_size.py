"""The training-size experiment layer: the within-domain AUC and its joint bootstrap on synthetic
scores, the effects on a synthetic run, and the window design on the smoke lab."""

import math

import numpy as np
import pandas as pd
import pytest

from mimirlib.core import metrics
from mimirlib.experiments import training_size as exp
from mimirlib.experiments import training_windows as tw
from mimirlib.experiments import window_auc as wa
from mimirlib.experiments.params import Params
from mimirlib.verdicts import training_size as rules

# ----------------------------------------------------------------------------- within-domain AUC


def test_stratified_auc_equals_the_plain_auc_within_one_domain():
    rng = np.random.default_rng(0)
    m, n = rng.normal(0.3, 1, 30), rng.normal(0, 1, 40)
    assert wa.stratified_auc(m, ["a"] * 30, n, ["a"] * 40) == pytest.approx(metrics.auc(m, n))


def test_stratified_auc_ignores_the_loss_gap_between_domains():
    # members all from the "easy" domain, non-members spread over both: pooled AUC is ~1 from the
    # domain alone; within each domain members and non-members are exchangeable
    rng = np.random.default_rng(1)
    m = rng.normal(5, 1, 50)
    n = np.r_[rng.normal(5, 1, 50), rng.normal(0, 1, 50)]
    dom_n = ["easy"] * 50 + ["hard"] * 50
    assert metrics.auc(m, n) > 0.7
    assert abs(wa.stratified_auc(m, ["easy"] * 50, n, dom_n) - 0.5) < 0.12


def test_stratified_auc_weights_domains_by_their_members():
    m = np.array([1.0, 1.0, 1.0, -1.0])  # three members of a (all above), one of b (below)
    n = np.array([0.0, 0.0])
    auc = wa.stratified_auc(m, ["a", "a", "a", "b"], n, ["a", "b"])
    assert auc == pytest.approx(0.75)


def test_stratified_auc_refuses_a_domain_without_nonmembers():
    with pytest.raises(ValueError, match="no non-members"):
        wa.stratified_auc([1.0], ["a"], [0.0], ["b"])


def test_stratified_counts_keep_each_domain_count():
    dom = ["a"] * 3 + ["b"] * 5
    c = wa.stratified_counts(dom, 200, np.random.default_rng(0))
    assert c.shape == (200, 8)
    assert (c[:, :3].sum(1) == 3).all() and (c[:, 3:].sum(1) == 5).all()
    assert c[:, :3].std() > 0


def test_resampled_stratified_auc_with_unit_counts_is_the_point():
    rng = np.random.default_rng(2)
    m, n = rng.normal(0, 1, 6), rng.normal(0, 1, 8)
    dm, dn = ["a", "b"] * 3, ["a", "b"] * 4
    draws = wa.stratified_auc(m, dm, n, dn, np.ones((3, 6)), np.ones((3, 8)))
    assert np.allclose(draws, wa.stratified_auc(m, dm, n, dn))


# ----------------------------------------------------------------------------- joint bootstrap on a synthetic run


def synthetic_scores(
    shift_by_step: dict, model: str = "m", n_members: int = 20, n_non: int = 30, seed: int = 0, member_ids=None
):
    """Scores of one model at checkpoints ``shift_by_step`` (members shifted by the value), two
    domains, the same non-members (ids n0..) at every step, members m<step>_<i> (other texts per
    window unless ``member_ids`` is given)."""
    rng = np.random.default_rng(seed)
    non = pd.DataFrame(
        {"id": [f"n{i}" for i in range(n_non)], "domain": ["a", "b"] * (n_non // 2), "base": rng.normal(0, 1, n_non)}
    )
    rows = []
    for step, shift in shift_by_step.items():
        ids = member_ids or [f"m{step}_{i}" for i in range(n_members)]
        ms = rng.normal(shift, 1, len(ids))
        for i, (mid, s) in enumerate(zip(ids, ms)):
            rows.append(
                {
                    "model": model,
                    "step": step,
                    "first": step,
                    "last": step,
                    "role": wa.MEMBER,
                    "id": mid,
                    "domain": ["a", "b"][i % 2],
                    "attack": "loss",
                    "score": s,
                }
            )
        for r in non.itertuples():
            rows.append(
                {
                    "model": model,
                    "step": step,
                    "first": step,
                    "last": step,
                    "role": wa.NONMEMBER,
                    "id": r.id,
                    "domain": r.domain,
                    "attack": "loss",
                    "score": r.base + rng.normal(0, 0.05),
                }
            )
    return pd.DataFrame(rows)


def test_auc_draws_give_identical_resamples_to_identical_texts():
    s = synthetic_scores({1: 1.0}, member_ids=[f"x{i}" for i in range(20)])
    twin = s.assign(model="twin")
    d = wa.auc_draws(pd.concat([s, twin], ignore_index=True), n_resamples=200)
    # same members, same non-members, same scores: the paired difference is exactly zero in every draw
    assert np.allclose(d.draws[:, 0], d.draws[:, 1])
    assert d.difference(0, 1) == (0.0, 0.0, 0.0)


def test_auc_draws_refuse_windows_with_other_nonmembers():
    s = synthetic_scores({1: 1.0, 2: 1.0})
    s.loc[(s.step == 2) & (s.role == wa.NONMEMBER) & (s.id == "n0"), "id"] = "other"
    with pytest.raises(ValueError, match="fixed set"):
        wa.auc_draws(s, n_resamples=10)


def test_auc_draws_interval_covers_the_point_and_shrinks_with_more_members():
    small = wa.auc_draws(synthetic_scores({1: 0.5}, n_members=10), 500).table.iloc[0]
    big = wa.auc_draws(synthetic_scores({1: 0.5}, n_members=200), 500).table.iloc[0]
    assert small.auc_lo <= small.auc <= small.auc_hi
    assert (big.auc_hi - big.auc_lo) < (small.auc_hi - small.auc_lo)


def synthetic_run(
    shifts: dict, models=("m",), kinds=None, recency_steps=None, seed=0, n_resamples=300, edit=None, n_members=20
):
    """A Run over synthetic scores: each model's checkpoints are the steps of ``shifts``
    (members at a step shifted by its value); recency windows are the same windows read as
    windows 0, 1, ... ending 0, 10, ... steps before the end (``recency_steps``: those steps,
    most recent first). ``edit``: a function that changes the scores before the AUCs are drawn."""
    kinds = kinds or {m: tw.TARGET for m in models}
    scores = pd.concat(
        [synthetic_scores(shifts, m, n_members=n_members, seed=seed + k) for k, m in enumerate(models)],
        ignore_index=True,
    )
    scores = edit(scores) if edit else scores
    aucs = wa.auc_draws(scores, n_resamples=n_resamples)
    wins = []
    for m in models:
        for s in shifts:
            wins.append(
                {
                    "analysis": "checkpoint",
                    "model": m,
                    "step": s,
                    "first": s,
                    "last": s,
                    "window": math.nan,
                    "steps_before_end": math.nan,
                    "n_members": 20,
                }
            )
        for j, s in enumerate(recency_steps or []):
            wins.append(
                {
                    "analysis": "recency",
                    "model": m,
                    "step": s,
                    "first": s,
                    "last": s,
                    "window": j,
                    "steps_before_end": 10 * j,
                    "n_members": 20,
                }
            )
    roster = pd.DataFrame(
        [
            {"model": m, "base": m if kinds[m] != tw.REPLICATE else models[0], "kind": kinds[m], "by_step": True}
            for m in models
        ]
    )
    non = scores[(scores.role == wa.NONMEMBER) & (scores.model == models[0]) & (scores.step == min(shifts))]
    return exp.Run(
        roster,
        pd.DataFrame(wins),
        non[["id", "domain"]].assign(text=""),
        scores,
        aucs,
        ["loss"],
        {m: 100 for m in models},
    )


def test_rise_and_fall_finds_the_interior_peak_with_clear_effects():
    run = synthetic_run({1: 0.0, 5: 3.0, 10: 0.0}, n_members=40)
    rf = exp.rise_and_fall(run)
    r = rf.iloc[0]
    assert r.peak_step == 5 and r.rise > 0.2 and r.rise_lo > 0 and r.fall_lo > 0
    # measured on the test half: half of each window's 40 members, 8 of each domain's 15 non-members
    assert (r.n_first, r.n_peak, r.n_last, r.n_nonmembers) == (20, 20, 20, 16)


def test_split_halves_is_seeded_stratified_and_keeps_a_text_in_one_half():
    shared = [f"x{i}" for i in range(12)]  # the same members at every step (windows that overlap)
    s = pd.concat(
        [synthetic_scores({1: 0.0, 2: 1.0}, "m", member_ids=shared), synthetic_scores({1: 0.0}, "m2", seed=1)],
        ignore_index=True,
    )
    h = wa.split_halves(s, seed=0)
    shuffled = s.sample(frac=1.0, random_state=3)
    assert (wa.split_halves(shuffled, seed=0) == h.loc[shuffled.index]).all()  # the seed alone decides
    assert (wa.split_halves(s, seed=1) != h).any()
    assert (s.assign(half=h).groupby(["role", "id"]).half.nunique() == 1).all()
    # stratified: each (role, domain, first window holding the text) splits evenly, the test half taking the odd one
    texts = s.assign(half=h).sort_values(["model", "step"]).drop_duplicates(["role", "id"])
    for _, g in texts.groupby(["role", "domain", "model", "step"]):
        assert (g.half == wa.TEST).sum() == math.ceil(len(g) / 2)
    assert texts.groupby(["role", "domain", "model", "step"]).ngroups == 2 + 2 + 2  # x.., m2's own, non-members


def test_point_aucs_leave_out_members_of_a_domain_without_nonmembers():
    s = synthetic_scores({1: 1.0})
    s = s[~((s.role == wa.NONMEMBER) & (s.domain == "b"))]
    (r,) = wa.point_aucs(s).itertuples()
    assert r.n_members == 10 and r.auc == pytest.approx(wa.stratified_auc(*member_nonmember_a(s)))


def member_nonmember_a(s):
    m, n = s[(s.role == wa.MEMBER) & (s.domain == "a")], s[s.role == wa.NONMEMBER]
    return m.score, m.domain, n.score, n.domain


def test_rise_and_fall_chooses_the_peak_on_the_selection_half_only():
    flat = {s: 0.0 for s in (1, 2, 3, 4, 5)}  # no true peak: on the full data, the highest checkpoint is noise

    def plant(scores):
        cp = scores.copy()
        half = wa.split_halves(cp, seed=0)
        members = cp.role == wa.MEMBER
        cp.loc[members & (half == wa.TEST) & (cp.step == 2), "score"] += 5.0  # the test half peaks at step 2
        cp.loc[members & (half == wa.SELECTION) & (cp.step == 4), "score"] += 1.0  # the selection half at 4
        return cp

    run = synthetic_run(flat, edit=plant, n_members=60)
    full = run.aucs.table.set_index("step").auc
    assert full.loc[[2, 3, 4]].idxmax() == 2  # chosen on the full data, the peak would be step 2
    r = exp.rise_and_fall(run, seed=0).iloc[0]
    assert r.peak_step == 4  # chosen on the selection half only
    assert r.rise_lo < 0 < r.rise_hi and r.fall_lo < 0 < r.fall_hi  # and measured where step 4 is flat
    assert exp.rise_and_fall(run, seed=0).equals(exp.rise_and_fall(run, seed=0))  # deterministic


def test_rise_and_fall_on_a_flat_curve_is_not_biased_up_as_the_full_data_peak_is():
    # sixty pure-noise curves (seeded): the full-data peak's rise is biased up; the split's is not
    full, split = [], []
    for seed in range(60):
        run = synthetic_run({s: 0.5 for s in range(1, 8)}, seed=10 * seed, n_resamples=20, n_members=30)
        t = run.aucs.table.set_index("step").auc
        full.append(t.loc[2:6].max() - t.loc[1])  # the peak picked on the texts it is measured on
        split.append(exp.rise_and_fall(run, seed=seed).rise.iat[0])
    assert np.mean(full) > 0.03 and abs(np.mean(split)) < 0.025 and np.mean(full) - np.mean(split) > 0.03


def test_rise_and_fall_shows_a_monotone_rise_as_a_negative_fall():
    rf = exp.rise_and_fall(synthetic_run({1: 0.0, 5: 1.0, 10: 2.5}))
    assert rf.iloc[0].fall_hi < 0


def test_rise_and_fall_seed_sd_comes_from_the_replicates():
    run = synthetic_run(
        {1: 0.0, 5: 2.0, 10: 0.0},
        models=("m", "m-seed1", "m-seed2"),
        kinds={"m": tw.TARGET, "m-seed1": tw.REPLICATE, "m-seed2": tw.REPLICATE},
    )
    rf = exp.rise_and_fall(run)
    assert list(rf.target) == ["m"] and rf.iloc[0].n_seeds == 3 and rf.iloc[0].rise_seed_sd > 0


def test_recency_effects_compare_the_most_recent_window_with_the_earliest():
    run = synthetic_run({100: 2.0, 90: 1.0, 80: 0.0}, recency_steps=[100, 90, 80])
    rec = exp.recency_effects(run)
    r = rec.iloc[0]
    assert r.auc_recent > r.auc_earliest and r.lo > 0 and r.earliest_steps_before_end == 20


def test_recency_effects_are_the_mean_over_the_target_and_its_replicates():
    # three seeds, each with members of its own: the effect and its AUCs are the seeds' means, its interval that
    # of the mean (narrower than one seed's: the members are independent), the verdict holds it to seed sd / sqrt(3)
    models = ("m", "m-seed1", "m-seed2")
    kinds = {"m": tw.TARGET, "m-seed1": tw.REPLICATE, "m-seed2": tw.REPLICATE}
    run = synthetic_run({100: 1.0, 90: 0.0}, models=models, kinds=kinds, recency_steps=[100, 90])
    one = [run.aucs.difference(*(run.aucs.index(m, s, s, s, "loss") for s in (100, 90))) for m in models]
    rec = exp.recency_effects(run)
    r = rec.iloc[0]
    assert list(rec.target) == ["m"] and (r.averaged, r.n_seeds) == (3, 3)
    assert r.estimate == pytest.approx(np.mean([e for e, _, _ in one])) and r.lo < r.estimate < r.hi
    assert r.hi - r.lo < np.mean([hi - lo for _, lo, hi in one])
    assert r.auc_recent - r.auc_earliest == pytest.approx(r.estimate)
    assert "mean of 3 seeds" in rules.recency(rec).evidence
    assert exp.recency_table(rec).iloc[0]["seeds"] == 3


def test_control_effects_pair_the_control_with_its_target():
    run = synthetic_run(
        {100: 1.0, 90: 0.0},
        models=("t", "t-sched69"),
        kinds={"t": tw.TARGET, "t-sched69": tw.CONTROL},
        recency_steps=[100, 90],
    )
    run.control, run.control_target, run.control_pairs = "t-sched69", "t", [("t-sched69", "t")]
    run.final_lr = {"t-sched69": 0.3, "t": 0.1}
    ctl = exp.control_effects(run)
    r = ctl.iloc[0]
    assert r.gap == pytest.approx(r.estimate - r.target_estimate)
    assert r.gap_lo <= r.gap <= r.gap_hi and r.control_lr_share == 0.3
    assert exp.control_effects(synthetic_run({100: 1.0, 90: 0.0}, recency_steps=[100, 90])).empty
    assert r.seed_borrowed and r.averaged == 1 and math.isnan(r.seed_sd) and math.isnan(r.gap_seed_sd)  # no replicates


def control_run_with_seeds(target_seeds=("t-seed1", "t-seed2")):
    """A target with ``target_seeds`` and a control with seeds 1 and 2, every model scored on its own members."""
    ctl = ("t-sched69", "t-sched69-seed1", "t-sched69-seed2")
    models = ("t", *target_seeds, *ctl)
    kinds = {m: tw.REPLICATE for m in models} | {"t": tw.TARGET, "t-sched69": tw.CONTROL}
    run = synthetic_run({100: 1.0, 90: 0.0}, models=models, kinds=kinds, recency_steps=[100, 90])
    run.roster.loc[run.roster.model.isin(ctl[1:]), "base"] = "t-sched69"
    run.control, run.control_target = "t-sched69", "t"
    run.control_pairs = [("t-sched69", "t"), ("t-sched69-seed1", "t-seed1"), ("t-sched69-seed2", "t-seed2")]
    return run


def test_control_effects_pair_each_control_seed_with_the_targets_seed_and_measure_their_spread():
    run = control_run_with_seeds()
    rows = exp._recency_rows(run).set_index("model")
    c = rows.loc[["t-sched69", "t-sched69-seed1", "t-sched69-seed2"]].estimate.to_numpy()
    t = rows.loc[["t", "t-seed1", "t-seed2"]].estimate.to_numpy()
    r = exp.control_effects(run).iloc[0]
    assert not r.seed_borrowed and r.averaged == r.n_seeds == 3
    assert r.estimate == pytest.approx(c.mean()) and r.target_estimate == pytest.approx(t.mean())
    assert r.gap == pytest.approx((c - t).mean()) and r.lo <= r.estimate <= r.hi and r.gap_lo <= r.gap <= r.gap_hi
    assert r.seed_sd == pytest.approx(np.std(c, ddof=1)) and r.gap_seed_sd == pytest.approx(np.std(c - t, ddof=1))
    # a control seed whose target seed was not scored is left out of the pairs, never paired with another seed
    one = control_run_with_seeds(target_seeds=("t-seed1",))
    assert exp.control_effects(one).iloc[0].averaged == 2


def test_display_tables_have_one_row_per_unit():
    run = synthetic_run({1: 0.0, 5: 2.0, 10: 0.0})
    assert len(exp.rise_fall_table(exp.rise_and_fall(run))) == 1
    assert exp.start_table(exp.start_auc(run)).iloc[0]["members"] == 20


# ----------------------------------------------------------------------------- the design on the smoke lab


def test_checkpoint_windows_end_at_each_checkpoint_and_stop_at_step_one(smoke_lab):
    name = smoke_lab.target_names()[0]
    w = tw.checkpoint_windows(smoke_lab, name, 0.1)
    assert list(w.step) == smoke_lab.checkpoints(name)
    assert (w["last"] == w.step).all() and (w["first"] >= 1).all()
    width = tw.window_steps(smoke_lab.data_order(name), 0.1)
    assert (w["last"] - w["first"] + 1 <= width).all()


def test_recency_windows_are_contiguous_and_end_at_the_final_step(smoke_lab):
    name = smoke_lab.target_names()[0]
    w = tw.recency_windows(smoke_lab, name, 0.1, 3)
    steps = smoke_lab.data_order(name).steps
    assert w["last"].iat[0] == steps and (w.step == steps).all()
    assert (w["first"].to_numpy()[:-1] == w["last"].to_numpy()[1:] + 1).all()
    assert list(w.window) == [0, 1, 2]


def test_window_members_were_seen_once_inside_the_window_and_are_capped_per_domain(smoke_lab):
    name = smoke_lab.target_names()[0]
    order = smoke_lab.data_order(name)
    m = tw.window_members(smoke_lab, order, 20, order.steps, samples=9)
    assert len(m) and (m.groupby("domain").size() <= tw.per_domain(9, smoke_lab.config["domains"])).all()
    for i in m.id:
        ((first, last),) = order.spans[i]
        assert 20 <= first and last <= order.steps


def test_fixed_nonmembers_are_never_trained_on_and_balanced(smoke_lab):
    non = tw.fixed_nonmembers(smoke_lab, samples=12)
    k = tw.per_domain(12, smoke_lab.config["domains"])
    assert (non.groupby("domain").size() == k).all()
    order = smoke_lab.data_order(smoke_lab.target_names()[0])
    assert not set(non.id) & set(order.spans)


def test_roster_has_replicates_the_control_and_its_target(smoke_lab):
    ctl = smoke_lab.recency_control()
    base = smoke_lab.recency_control_target()
    r = tw.roster(smoke_lab, [smoke_lab.target_names()[0]])
    assert ctl in set(r.model) and base in set(r.model)
    assert set(r[r.kind == tw.REPLICATE].base) >= {smoke_lab.target_names()[0]}
    assert not r[r.model == ctl].by_step.any()
    assert smoke_lab.data_order(ctl).spans == smoke_lab.data_order(base).spans  # same data, same order


def test_final_learning_rate_of_the_control_is_pythias_point_of_the_schedule(smoke_lab):
    assert tw.final_lr_share(smoke_lab, smoke_lab.recency_control()) == pytest.approx(0.295, abs=0.01)
    assert tw.final_lr_share(smoke_lab, smoke_lab.recency_control_target()) == pytest.approx(0.1, abs=1e-6)


def test_run_on_the_smoke_lab_shares_nonmembers_and_pairs_control_and_target(smoke_lab):
    p = Params(
        {
            "profile": "smoke",
            "targets": [smoke_lab.recency_control_target()],
            "attacks": ["loss", "zlib"],
            "window_fraction": 0.1,
            "samples": 12,
            "recency_windows": 2,
            "n_bootstrap": 50,
            "seed": 0,
            "batch_size": 16,
            "seed_replicates": False,
        }
    )
    run = exp.run(p, smoke_lab)
    t = run.aucs.table
    assert t.n_nonmembers.nunique() == 1 and t.n_nonmembers.iat[0] == len(run.nonmembers)
    by = exp.by_step(run)
    assert set(by.target) == {smoke_lab.recency_control_target()} and (by.n_members >= wa.MIN_MEMBERS).all()
    rec = exp.recency(run)
    assert run.control in set(rec.target)
    ctl = exp.control_effects(run)
    assert len(ctl) == 2 and ctl.gap.notna().all()
    s = exp.summary(run)
    assert s["n_nonmembers"] == len(run.nonmembers) and s["control"] == run.control
    assert s["control_lr_pct"] > s["target_lr_pct"]
    assert run.targets == [smoke_lab.recency_control_target()] and run.cache_note.startswith("signal cache: ")
    keys = [c.key for c in (rules.STARTS_NEAR_RANDOM, rules.RISE_THEN_FALL, rules.RECENCY)]
    keys += [rules.RECENCY_ON_CONTROL.key, rules.SCHEDULE_EXPLAINS_RECENCY.key]
    assert [v.key for v in exp.verdicts(run)] == keys


def test_windows_with_fewer_than_min_members_are_listed_but_not_read(smoke_lab):
    base = {
        "profile": "smoke",
        "targets": [smoke_lab.target_names()[0]],
        "attacks": ["loss"],
        "window_fraction": 0.1,
        "samples": 12,
        "recency_windows": 2,
        "n_bootstrap": 20,
        "seed": 0,
        "batch_size": 16,
        "seed_replicates": False,
    }
    everything = exp.run(Params(base), smoke_lab)
    counts = everything.windows[everything.windows.analysis == "checkpoint"].n_members
    bar = int(counts.max())  # the fullest window: some earlier ones hold fewer
    assert (counts < bar).any()
    run = exp.run(Params(base | {"min_members": bar}), smoke_lab)
    assert exp.read_from(run.params) == bar and exp.read_from(Params(base)) == wa.MIN_MEMBERS
    assert (exp.by_step(run).n_members >= bar).all() and len(exp.members_per_window(run)) == len(counts)
    s, first = exp.summary(run), exp.start_auc(run)
    assert (first.n_members >= bar).all() and int(first.step.iat[0]) == s["first_step"]
    assert s["first_step"] > exp.summary(everything)["first_step"] and s["unread_steps"] != "none"


def test_auc_interval_of_a_tiny_window_reflects_its_few_members():
    # two members, one per domain: resampling members within domain would hold them fixed and
    # give an interval from the non-members alone; resampled as a whole, two members span widely
    s = synthetic_scores({1: 0.0}, n_members=2, n_non=200)
    s.loc[s.role == wa.MEMBER, "score"] = [3.0, -3.0]  # one member far above, one far below
    r = wa.auc_draws(s, 1000).table.iloc[0]
    assert r.auc == pytest.approx(0.5, abs=0.01)
    assert r.auc_lo < 0.05 and r.auc_hi > 0.95
