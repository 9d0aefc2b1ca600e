"""The n-gram overlap chapter's experiment layer on synthetic texts and scores, plus the paired
gain contrast it adds to metrics; one check on the smoke lab's models."""

import numpy as np
import pandas as pd
import pytest

from mimirlib.core import metrics
from mimirlib.core.data import Benchmark
from mimirlib.experiments import ngram_overlap as exp
from mimirlib.experiments import ngram_overlap_study as ov
from mimirlib.experiments.params import Params
from mimirlib.verdicts import ngram_overlap as rules

rng = np.random.default_rng(0)


def words(n_words: int, seed: int, vocab: int = 5000) -> str:
    r = np.random.default_rng(seed)
    return " ".join(f"w{i}" for i in r.integers(0, vocab, n_words))


CORPUS = [words(120, s) for s in range(20)]
MEMBERS = tuple(CORPUS[:8])
COPIED = tuple(CORPUS[8:16])  # natural non-members that repeat training text: overlap 1
NOVEL = tuple(words(120, 1000 + s) for s in range(8))  # redrawn non-members: overlap ~0


def benchmarks(low_members=MEMBERS) -> ov.Benchmarks:
    natural = {"code": Benchmark("code/nat", MEMBERS, COPIED), "math": Benchmark("math/nat", MEMBERS, NOVEL)}
    low = {"code": Benchmark("code/low", tuple(low_members), NOVEL), "math": None}
    return ov.Benchmarks(natural, low, list(CORPUS))


# ----------------------------------------------------------------------------- metrics.paired_gain_difference


def test_paired_gain_difference_is_zero_for_identical_scores():
    m, new, old = rng.normal(1, 1, 50), rng.normal(0, 1, 40), rng.normal(0.5, 1, 60)
    d = metrics.paired_gain_difference((m, new), (m, old), (m, new), (m, old), n_resamples=50)
    assert d.point == 0.0 and d.lo == 0.0 and d.hi == 0.0
    assert (d.n_members, d.n_nonmembers) == (50, 40)


def test_paired_gain_difference_point_is_the_difference_of_the_gains():
    m, new, old = rng.normal(1, 1, 60), rng.normal(-1, 1, 60), rng.normal(0.8, 1, 60)
    bm, bnew, bold = rng.normal(0, 1, 60), rng.normal(0, 1, 60), rng.normal(0, 1, 60)
    d = metrics.paired_gain_difference((m, new), (m, old), (bm, bnew), (bm, bold), n_resamples=200)
    expect = (metrics.auc(m, new) - metrics.auc(m, old)) - (metrics.auc(bm, bnew) - metrics.auc(bm, bold))
    assert d.point == pytest.approx(expect)
    assert d.lo > 0  # a gains ~0.4 AUC, b nothing: clearly more


def test_paired_gain_difference_refuses_unpaired_sets():
    m, n = rng.normal(size=10), rng.normal(size=10)
    with pytest.raises(ValueError, match="members"):
        metrics.paired_gain_difference((m, n), (m, n), (m[:5], n), (m, n))
    with pytest.raises(ValueError, match="b_old"):
        metrics.paired_gain_difference((m, n), (m, n), (m, n), (m, n[:5]))
    with pytest.raises(ValueError, match="pair"):
        metrics.paired_gain_difference(m, (m, n), (m, n), (m, n))


# ----------------------------------------------------------------------------- overlap


def test_overlap_study_measures_copied_and_novel_non_members():
    study = ov.overlap_study(benchmarks(), ns=(4, 7), bloom_fpr=0.01)
    m7 = study.mean7()
    assert m7["code"] == pytest.approx(1.0) and m7["math"] == pytest.approx(0.0)
    assert set(study.overlaps.n) == {4, 7} and len(study.overlaps) == 2 * 2 * 8
    assert study.bloom_check()["never below exact"] == "yes" and study.bloom_excess.size == 16
    without7 = ov.overlap_study(benchmarks(), ns=(4,), bloom_fpr=0.01)  # the check still measures 7-grams
    assert without7.bloom_excess.size == 16 and np.array_equal(without7.bloom_excess, study.bloom_excess)
    assert list(study.build_seconds.index) == [4, 7]
    assert study.means().loc["code", "mean 7-gram overlap"] == pytest.approx(1.0, abs=0.01)


def test_overlap_shift_reports_the_drop_and_the_shared_members():
    b = benchmarks(low_members=MEMBERS[2:])
    s = ov.overlap_shift(b, ov.overlap_study(b, ns=(7,)))
    assert list(s.domain) == ["code"]  # math has no low-overlap split
    row = s.iloc[0]
    assert row.natural_overlap == pytest.approx(1.0) and row.low_overlap == pytest.approx(0.0)
    assert row.overlap_drop == pytest.approx(1.0)
    assert (row.n_members, row.n_natural_nonmembers, row.n_low_nonmembers) == (6, 8, 8)


def test_mean_intervals_bracket_each_domains_mean_over_its_texts():
    x = np.r_[np.zeros(50), np.full(50, 0.6)]  # mean 0.3, standard error ~0.03
    frame = pd.DataFrame({"domain": ["a"] * 100 + ["z"] * 20, "overlap": np.r_[x, np.zeros(20)]})
    m = ov.mean_intervals(frame, n_bootstrap=500, seed=0).set_index("domain")
    assert list(m.index) == ["a", "z"] and m.loc["a", "n_texts"] == 100
    assert m.loc["a", "lo"] < 0.3 < m.loc["a", "hi"] and m.loc["a", "mean"] == pytest.approx(0.3)
    assert m.loc["a", "hi"] - m.loc["a", "lo"] == pytest.approx(4 * 0.03, abs=0.03)  # ~ +-1.96 se
    assert (m.loc["z", "lo"], m.loc["z", "hi"]) == (0.0, 0.0)  # no overlap at all: no spread
    assert m.equals(ov.mean_intervals(frame, n_bootstrap=500, seed=0).set_index("domain"))  # seeded
    assert ov.mean_intervals(frame.iloc[:0]).empty


def test_shared_members_aligns_by_text():
    nat = Benchmark("n", ("a b c", "d e f", "g h i"), ("x",))
    low = Benchmark("l", ("g h i", "zz", "a b c"), ("y",))
    i_nat, i_low = ov.shared_members(nat, low)
    assert i_nat.tolist() == [2, 0] and i_low.tolist() == [0, 2]


def test_decontamination_needs_the_labs_pool():
    assert ov.decontamination(benchmarks(), ov.overlap_study(benchmarks(), ns=(7,))) is None
    assert "note" in exp.decontamination_table(None).columns
    assert exp.decontamination_figure(None) is not None


# ----------------------------------------------------------------------------- paired effects on synthetic scores


def frame(members, nonmembers, **columns) -> pd.DataFrame:
    out = pd.DataFrame({"is_member": [1] * len(members) + [0] * len(nonmembers)})
    for name, (m, n) in columns.items():
        out[name] = np.r_[m, n]
    return out


def synthetic_run(n=60, shift=1.5, ref_shift=0.0, seeds=("t",)) -> exp.ScoreRun:
    """One domain; members ~ N(0.5, 1). Natural non-members ~ N(0, 1); redrawn ones are lower by
    ``shift`` for loss, ``ref_shift`` for ref. Every seed label gets its own draw."""
    b = ov.Benchmarks(
        {"code": Benchmark("nat", tuple(f"m{i}" for i in range(n)), tuple(f"n{i}" for i in range(n)))},
        {"code": Benchmark("low", tuple(f"m{i}" for i in range(n)), tuple(f"l{i}" for i in range(n)))},
        [],
    )
    scores = {}
    for k, label in enumerate(seeds):
        r = np.random.default_rng(k)
        m = {a: r.normal(0.5, 1, n) for a in ("loss", "ref")}
        nat = {a: r.normal(0, 1, n) for a in ("loss", "ref")}
        low = {"loss": r.normal(-shift, 1, n), "ref": r.normal(-ref_shift, 1, n)}
        scores[(label, "code", exp.NATURAL)] = frame(
            m["loss"], nat["loss"], loss=(m["loss"], nat["loss"]), ref=(m["ref"], nat["ref"])
        )
        scores[(label, "code", exp.LOW)] = frame(
            m["loss"], low["loss"], loss=(m["loss"], low["loss"]), ref=(m["ref"], low["ref"])
        )
    r = np.random.default_rng(99)
    bm = r.normal(0, 1, n)
    blind = {
        ("code", exp.NATURAL): frame(bm, bm, baseline=(bm, r.normal(0, 1, n))),
        ("code", exp.LOW): frame(bm, bm, baseline=(bm, r.normal(-2, 1, n))),
    }
    results = pd.DataFrame(
        [
            {
                "target": "t",
                "domain": "code",
                "split": sp,
                "attack": a,
                "auc": metrics.auc(*[f[a][f.is_member == v] for v in (1, 0)]),
            }
            for (lab, _, sp), f in scores.items()
            if lab == "t"
            for a in ("loss", "ref")
        ]
    )
    return exp.ScoreRun(b, scores, blind, results, pd.DataFrame(), ["t"], {"t": list(seeds[1:])})


def test_auc_gain_effects_are_clear_when_the_redraw_is_far_lower():
    fx = exp.auc_gain_effects(synthetic_run(shift=1.5), "t", n_bootstrap=200)
    loss, ref = fx["code"]
    assert loss.label == "code/loss" and loss.estimate > 0.15 and loss.sign() == 1
    assert ref.sign() == 0  # ref's non-members did not move
    assert loss.seed_sd is None and loss.n_seeds == 1


def test_auc_gain_effects_carry_the_seed_spread_of_replicates():
    fx = exp.auc_gain_effects(synthetic_run(shift=1.5, seeds=("t", "t-seed1", "t-seed2")), "t", n_bootstrap=50)
    assert fx["code"][0].n_seeds == 3 and fx["code"][0].seed_sd > 0


def test_blind_gain_effects_are_paired_on_the_shared_members():
    fx = exp.blind_gain_effects(synthetic_run(), n_bootstrap=200)
    (e,) = fx["code"]
    assert e.label == "code/baseline" and e.sign() == 1


def test_ref_gain_effects_positive_when_ref_gains_less():
    fx = exp.ref_gain_effects(synthetic_run(shift=1.5, ref_shift=0.0), "t", n_bootstrap=200)
    (e,) = fx["code"]
    assert e.label == "code/loss - ref" and e.sign() == 1


def test_ref_gain_effects_inside_noise_when_both_gain_alike():
    fx = exp.ref_gain_effects(synthetic_run(n=40, shift=0.05, ref_shift=0.05), "t", n_bootstrap=200)
    assert fx["code"][0].sign() == 0


def test_ref_gain_effects_empty_without_the_reference_attack():
    run = synthetic_run()
    run.scores = {k: f.drop(columns="ref") for k, f in run.scores.items()}
    assert exp.ref_gain_effects(run, "t", n_bootstrap=10) == {}


def test_gain_tables_and_prose_numbers():
    run = synthetic_run(shift=1.5)
    g = run.gains()
    assert set(g.attack) == {"loss", "ref"} and (g.set_index("attack").gain["loss"] > 0.15)
    summary = run.gain_summary()
    assert list(summary.index) == ["t"]
    assert summary.loc["t", "n (domain, attack) gains"] == len(g[g.target == "t"])
    gain_fx, blind_fx = exp.auc_gain_effects(run, "t", 50), exp.blind_gain_effects(run, 50)
    tab = exp.effects_table({"AUC gain": gain_fx, "blind gain": blind_fx})
    assert list(tab.index.get_level_values(0)) == ["AUC gain", "AUC gain", "blind gain"]
    b = benchmarks()
    study = ov.overlap_study(b, ns=(7,))
    nums = exp.prose_numbers(study, ov.overlap_shift(b, study), {"code": gain_fx["code"]}, blind_fx)
    assert nums["n_informative"] == 1 and nums["max_m7_domain"] == "code" and nums["min_m7_domain"] == "math"
    assert nums["min_overlap_drop"] == "0.10"  # the informative-domain bar the intro states
    assert nums["mean_gain"] == pytest.approx(np.mean([e.estimate for e in gain_fx["code"]]))
    assert exp.gain_figure(run, "t") is not None


def test_verdicts_are_the_four_claims_in_the_pages_order():
    splits = synthetic_run(shift=1.5)
    b = benchmarks()
    study = ov.overlap_study(b, ns=(7,))
    shift = ov.overlap_shift(b, study)
    gain_fx, blind_fx = exp.auc_gain_effects(splits, "t", 50), exp.blind_gain_effects(splits, 50)
    ref_fx = exp.ref_gain_effects(splits, "t", 50)
    run = exp.Run(
        Params({"profile": "smoke", "n_bootstrap": 50, "seed": 0}),
        None,
        b,
        study,
        None,
        shift,
        splits,
        gain_fx,
        blind_fx,
        ref_fx,
    )
    assert run.largest == "t"
    v = exp.verdicts(run)
    claims = [
        rules.OVERLAP_IS_HIGH,
        rules.LOW_OVERLAP_IS_EASIER,
        rules.REDRAW_DRIFTS_TOWARDS_DISTRIBUTION_INFERENCE,
        rules.REFERENCE_GAINS_LESS,
    ]
    assert [x.key for x in v] == [c.key for c in claims]
    assert exp.shift_table(shift).informative.tolist() == [True]
    # code's non-members copy training text (overlap 1), math's are novel (0): one high, one low
    assert "high in 1 of 2 domains, low in 1" in v[0].evidence and "(plays GitHub 76.9%)" in v[0].evidence
    means = exp.overlap_means(run)
    assert means.reading.to_dict() == {"code": rules.HIGH, "math": rules.LOW}
    assert means.loc["math", "paper"].startswith("plays DM Mathematics")
    assert v[1].paper_effect == 0.159 and v[3].paper_effect == 0.192


# ----------------------------------------------------------------------------- the smoke lab


@pytest.mark.slow  # ~16 s with the smoke lab built; builds it first on a fresh clone
def test_score_splits_on_the_smoke_lab_pairs_both_splits():
    from mimirlib.core.signals import ScoringOptions, SignalCache
    from mimirlib.experiments.suite import resolve_suite

    suite = resolve_suite("smoke", domains=["math"])
    suite.targets = suite.targets[:1]
    b = exp.load(suite, "ngram_13_0.8", "ngram_7_0.2", n_samples=10)
    options = ScoringOptions(window=128, cache=SignalCache.default())
    run = exp.score_splits(suite, b, ["loss", "ref"], options=options, n_bootstrap=20, blind_folds=2)
    t = run.targets[0]
    assert run.replicates[t]  # the smoke lab trains seed replicates of its targets
    assert set(run.results.split) == {exp.NATURAL, exp.LOW} and set(run.results.attack) == {"loss", "ref"}
    assert set(run.blind.split) == {exp.NATURAL, exp.LOW}
    fx = exp.auc_gain_effects(run, t, n_bootstrap=20)
    assert [e.label for e in fx["math"]] == ["math/loss", "math/ref"]
    assert fx["math"][0].n_seeds == 1 + len(run.replicates[t])


def test_seed_spread_only_for_targets_with_replicates():
    assert exp.seed_spread(synthetic_run(), n_bootstrap=20).empty
    spread = exp.seed_spread(synthetic_run(seeds=("t", "t-seed1", "t-seed2")), n_bootstrap=50)
    assert list(spread.index) == ["t"] and spread.loc["t", "seeds"] == 3
    assert spread.loc["t", "median seed sd"] > 0 and spread.loc["t", "median bootstrap half-width"] > 0


def test_seed_spread_skips_domains_where_replicates_were_not_scored():
    run = synthetic_run(seeds=("t", "t-seed1"))
    run.scores = {k: f for k, f in run.scores.items() if k[0] == "t"}  # replicate listed but not scored here
    fx = exp.auc_gain_effects(run, "t", n_bootstrap=20)
    assert fx["code"][0].n_seeds == 1 and fx["code"][0].seed_sd is None


def test_the_exercises_work_on_an_informative_domain():
    from types import SimpleNamespace

    shift = pd.DataFrame({"domain": ["code", "licenses", "math"], "overlap_drop": [0.01, 0.2, 0.3]})
    run = SimpleNamespace(shift=shift, benchmarks=SimpleNamespace(low={"code": 1, "licenses": 2, "math": None}))
    assert exp.exercise_domain(run) == "licenses"  # code has a redraw, but the rules do not count it
    run.shift = shift.assign(overlap_drop=0.0)
    assert exp.exercise_domain(run) == "code"  # none informative: the first with a redraw
