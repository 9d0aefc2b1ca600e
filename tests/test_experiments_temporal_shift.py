"""The temporal-shift experiment layer: paired split differences, Table 5 cells, overlap drops and
the blind-baseline comparison on synthetic scores; one slow end-to-end run on the smoke lab."""

import numpy as np
import pandas as pd
import pytest

from mimirlib.core import metrics
from mimirlib.core.data import Benchmark
from mimirlib.experiments import temporal_shift as exp
from mimirlib.experiments.params import Params
from mimirlib.verdicts import temporal_shift as rules

# ----------------------------------------------------------------------------- a synthetic run

N = 60


def bench(name, members, nonmembers):
    return Benchmark(name, tuple(members), tuple(nonmembers))


def frame(m, n, col="loss"):
    return pd.DataFrame({"is_member": [1] * len(m) + [0] * len(n), col: np.r_[m, n]})


def synthetic_run(shift=(0.0, 1.0, 2.0), replicate_noise=0.0, n=N, seed=0):
    """Members score ~N(1, 1) everywhere; the natural non-members ~N(0.9, 1); each later benchmark's
    non-members are ``shift`` lower (easier to tell apart). Target ``t`` and, with
    ``replicate_noise``, one seed replicate ``t-seed1`` whose scores differ by that much noise."""
    rng = np.random.default_rng(seed)
    members = [f"member {i}" for i in range(n)]
    names = [exp.NATURAL] + [f"temporal_{i}" for i in range(1, len(shift))]
    benches = {nm: bench(nm, members, [f"{nm} non {i}" for i in range(n)]) for nm in names}
    m = rng.normal(1.0, 1.0, n)
    non = {nm: rng.normal(0.9 - s, 1.0, n) for nm, s in zip(names, shift, strict=True)}
    scores, replicates = {}, {"t": []}
    for nm in names:
        scores[("t", nm)] = frame(m, non[nm])
    if replicate_noise:
        replicates["t"] = ["t-seed1"]
        for nm in names:
            scores[("t-seed1", nm)] = frame(
                m + rng.normal(0, replicate_noise, n), non[nm] + rng.normal(0, replicate_noise, n)
            )
    rows = [
        {
            "target": "t",
            "benchmark": nm,
            "attack": "loss",
            **metrics.evaluate(*_split(scores[("t", nm)]), n_resamples=50),
        }
        for nm in names
    ]
    seed_rows = [
        {"target": "t", "model": mdl, "benchmark": nm, "attack": "loss", "auc": metrics.auc(*_split(scores[(mdl, nm)]))}
        for mdl in ["t"] + replicates["t"]
        for nm in names
    ]
    blind_scores = {
        nm: frame(rng.normal(1.0, 1, n), rng.normal(1.0 - 2 * s, 1, n), col=exp.BASELINE)
        for nm, s in zip(names, shift, strict=True)
    }
    blind = pd.DataFrame(
        [
            {
                "benchmark": nm,
                "attack": exp.BASELINE,
                **metrics.evaluate(*_split(blind_scores[nm], exp.BASELINE), n_resamples=50),
            }
            for nm in names
        ]
    )
    return exp.ScoreRun(
        exp.Benchmarks(None, "dated", benches),
        ["t"],
        ["loss"],
        scores,
        replicates,
        pd.DataFrame(rows),
        pd.DataFrame(seed_rows),
        blind,
        blind_scores,
        n_resamples=200,
        seed=0,
    )


def _split(f, col="loss"):
    lab = f.is_member.to_numpy().astype(bool)
    return f[col].to_numpy()[lab], f[col].to_numpy()[~lab]


# ----------------------------------------------------------------------------- members and differences


def test_shared_members_aligns_texts_not_positions():
    a = bench("a", ["x", "y", "z", "w"], ["n1"])
    b = bench("b", ["z", "x", "q"], ["n2"])
    ia, ib = exp.shared_members(a, b)
    assert [a.members[i] for i in ia] == [b.members[i] for i in ib] == ["x", "z"]


def test_shared_members_empty_when_no_text_is_shared():
    ia, ib = exp.shared_members(bench("a", ["x"], ["n"]), bench("b", ["y"], ["n"]))
    assert ia.size == ib.size == 0


def test_auc_differences_finds_the_inflation_from_easier_non_members():
    run = synthetic_run()
    d = exp.shift_gains(run)
    assert len(d) == 1 and d.loc[0, "a"] == "temporal_2" and d.loc[0, "b"] == exp.NATURAL
    r = run.results.set_index("benchmark").auc
    assert d.loc[0, "diff"] == pytest.approx(r["temporal_2"] - r[exp.NATURAL])
    assert d.loc[0, "lo"] > 0 and d.loc[0, "paired"]
    assert np.isnan(d.loc[0, "seed_sd"]) and d.loc[0, "n_seeds"] == 1


def test_auc_differences_interval_contains_zero_without_a_shift():
    d = exp.shift_gains(synthetic_run(shift=(0.0, 0.0)))
    assert d.loc[0, "lo"] < 0 < d.loc[0, "hi"]


def test_auc_differences_seed_sd_grows_with_replicate_noise():
    calm = exp.shift_gains(synthetic_run(replicate_noise=0.01)).loc[0]
    noisy = exp.shift_gains(synthetic_run(replicate_noise=1.5)).loc[0]
    assert calm.n_seeds == noisy.n_seeds == 2
    assert 0 <= calm.seed_sd < noisy.seed_sd


def test_lateness_trend_compares_latest_with_earliest_shifted_and_is_empty_with_one():
    d = exp.lateness_trend(synthetic_run())
    assert (d.a.iloc[0], d.b.iloc[0]) == ("temporal_2", "temporal_1") and d["diff"].iloc[0] > 0
    assert exp.lateness_trend(synthetic_run(shift=(0.0, 1.0))).empty


def test_split_difference_falls_back_to_unpaired_without_shared_members():
    rng = np.random.default_rng(1)
    sa, sb = frame(rng.normal(1, 1, 30), rng.normal(0, 1, 30)), frame(rng.normal(1, 1, 20), rng.normal(1, 1, 25))
    d, paired = exp.split_difference(sa, sb, "loss", np.array([], int), np.array([], int), n_resamples=100)
    assert not paired and d.lo <= d.point <= d.hi
    assert d.point == pytest.approx(metrics.auc(*_split(sa)) - metrics.auc(*_split(sb)))


def test_unpaired_auc_difference_point_and_interval():
    rng = np.random.default_rng(2)
    am, an, bm, bn = rng.normal(2, 1, 80), rng.normal(0, 1, 80), rng.normal(0, 1, 80), rng.normal(0, 1, 80)
    d = exp.unpaired_auc_difference(am, an, bm, bn, n_resamples=300)
    assert d.point == pytest.approx(metrics.auc(am, an) - metrics.auc(bm, bn))
    assert 0 < d.lo < d.point < d.hi


def test_differences_view_puts_attacks_in_columns():
    v = exp.differences_view(exp.shift_gains(synthetic_run()))
    assert list(v.columns) == ["loss"] and v.index.tolist() == ["t"] and "[" in v.loc["t", "loss"]


# ----------------------------------------------------------------------------- Table 5


def test_table5_counts_natural_non_members_above_the_shifted_threshold():
    run = synthetic_run()
    t5 = exp.table5(run, [0.05, 0.10])
    assert len(t5) == 2 * 2  # two shifted benchmarks x two budgets x one attack
    row = t5[(t5.benchmark == "temporal_2") & (t5.budget == 0.05)].iloc[0]
    _, shifted = _split(run.scores[("t", "temporal_2")])
    _, natural = _split(run.scores[("t", exp.NATURAL)])
    thr = metrics.threshold_at_fpr(shifted, 0.05)
    assert row.false_positives == np.count_nonzero(natural > thr) and row.n_natural == N
    assert row.fpr == pytest.approx(row.false_positives / N)
    assert row.fpr > 0.05  # natural non-members sit 2 sd above the shifted ones: the threshold misfires
    assert row.shifted_above == np.count_nonzero(shifted > thr) == np.floor(0.05 * row.n_shifted)
    assert np.sort(shifted)[::-1][row.shifted_above] == thr  # the (shifted_above + 1)-th largest, as the test needs


def test_table5_view_is_in_percent_with_budget_and_attack_columns():
    t5 = exp.table5(synthetic_run(), [0.05])
    v = exp.table5_view(t5)
    assert v.columns.names == ["target FPR", "attack"] and ("5%", "loss") in v.columns
    assert v.loc["temporal_2", ("5%", "loss")] == pytest.approx(100 * t5[t5.benchmark == "temporal_2"].fpr.iloc[0])
    row = t5[t5.benchmark == "temporal_2"].iloc[0]
    assert v.loc["temporal_2", exp.TABLE5_N] == f"{row.n_natural} / {row.n_shifted}"  # the sample size, last
    assert v.columns[-1] == exp.TABLE5_N


# ----------------------------------------------------------------------------- overlap


def test_mean_difference_point_interval_and_empty_input():
    d, lo, hi = exp.mean_difference(np.full(50, 0.4), np.full(50, 0.1), n_resamples=50)
    assert (d, lo, hi) == pytest.approx((0.3, 0.3, 0.3))
    with pytest.raises(ValueError, match="empty"):
        exp.mean_difference([], [0.1])


def test_overlap_drops_one_row_per_shifted_benchmark():
    rng = np.random.default_rng(3)
    ov = {exp.NATURAL: rng.uniform(0.2, 0.6, 100), "b1": rng.uniform(0.0, 0.2, 100), "b2": rng.uniform(0.2, 0.6, 100)}
    d = exp.overlap_drops(ov, n_resamples=200).set_index("benchmark")
    assert list(d.index) == ["b1", "b2"]
    assert d.loc["b1", "lo"] > 0 and d.loc["b2", "lo"] < 0 < d.loc["b2", "hi"]
    assert exp.overlap_summary(ov).loc["b1", "n"] == 100


# ----------------------------------------------------------------------------- blind baseline and seeds


def test_blind_comparison_pairs_the_baseline_with_itself_and_with_the_best_attack():
    run = synthetic_run()
    c = exp.blind_comparison(run)
    assert c.best_attack == "loss" and c.latest == "temporal_2" and c.target == "t"
    assert c.rise.point == pytest.approx(c.blind_latest - c.blind_natural)
    assert c.rise.lo > 0
    assert c.vs_best.point == pytest.approx(c.blind_latest - c.best_latest)


def test_seed_spread_reports_replicated_targets_only():
    assert exp.seed_spread(synthetic_run()).empty
    s = exp.seed_spread(synthetic_run(replicate_noise=0.5))
    assert len(s) == 3 and (s.n_seeds == 2).all() and (s.seed_sd > 0).all()


def test_headline_numbers_come_from_the_frames():
    run = synthetic_run()
    t5 = exp.table5(run, [0.01, 0.05])
    h = exp.headline(
        run,
        exp.shift_gains(run),
        exp.lateness_trend(run),
        exp.overlap_drops({exp.NATURAL: np.array([0.3]), "b": np.array([0.1])}, 10),
        t5,
        exp.blind_comparison(run),
    )
    assert h["budget_min"] == pytest.approx(1.0) and h["n_natural"] == N
    assert h["overlap_natural"] == pytest.approx(30.0) and h["largest"] == "t"


def test_chapter_verdicts_and_prose_numbers_come_from_the_run():
    scored = synthetic_run()
    ov = {exp.NATURAL: np.array([0.3, 0.4]), "temporal_1": np.array([0.2]), "temporal_2": np.array([0.1])}
    run = exp.Run(
        Params({"profile": "smoke", "overlap_n": 7}),
        scored.benchmarks,
        scored,
        exp.shift_gains(scored),
        exp.lateness_trend(scored),
        ov,
        exp.overlap_drops(ov, 10),
        exp.table5(scored, [0.05]),
        exp.blind_comparison(scored),
    )
    claims = [
        rules.SHIFT_INFLATES_AUC,
        rules.AUC_GROWS_WITH_LATENESS,
        rules.SHIFTED_OVERLAP_LOWER,
        rules.SHIFTED_THRESHOLDS_MISFIRE,
        rules.BLIND_BASELINE_SEPARATES,
    ]
    assert [v.key for v in exp.verdicts(run)] == [c.key for c in claims]
    numbers = run.prose_numbers()
    assert numbers["overlap_n"] == 7 and numbers["largest"] == run.largest == "t"


# ----------------------------------------------------------------------------- the smoke lab


@pytest.mark.slow
def test_smoke_lab_run_end_to_end():
    from mimirlib.core.signals import ScoringOptions, SignalCache
    from mimirlib.experiments.suite import resolve_suite

    b = exp.load(resolve_suite("smoke"), n_samples=8)
    assert b.order[0] == exp.NATURAL and len(b.shifted) == 3
    ia, _ = exp.shared_members(b.benches[exp.NATURAL], b.benches[b.shifted[-1]])
    assert ia.size == 8  # the shifted benchmarks reuse the natural members
    options = ScoringOptions(cache=SignalCache.default())
    run = exp.score(b, ["loss", "ref"], options=options, n_bootstrap=20, blind_folds=2)
    assert all(len(r) == 2 for r in run.replicates.values())  # the smoke lab trains seeds 1 and 2
    g = exp.shift_gains(run)
    assert len(g) == len(run.targets) * 2 and g.paired.all() and (g.n_seeds == 3).all()
    assert set(exp.table5(run, [0.1]).attack) == {"loss", "ref"}
