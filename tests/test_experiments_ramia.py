"""The RaMIA chapter's experiment layer: the pure helpers on synthetic scores, the parameters, and
(slow) the chapter's run on the smoke lab."""

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import torch

from mimirlib.core import metrics, range_scores
from mimirlib.core.models import pick_dtype
from mimirlib.core.range_scores import BACKBONES
from mimirlib.core.range_stats import paired_difference, range_auc
from mimirlib.experiments import ramia as exp
from mimirlib.experiments.ramia.aggregation import (
    BAYES,
    GLRT,
    MIA,
    RAMIA,
    TABLE_III_N,
    aggregate,
    iteration_rows,
    range_row,
    table_iii,
    ties_by_construction,
)
from mimirlib.experiments.ramia.distance import Distance, crossing_distance, distance_summary, nearest_p
from mimirlib.experiments.ramia.game import RANGES_N, ranges_n, restored_words, sweep_grid, sweep_rows, trim_notations
from mimirlib.experiments.ramia.setting import (
    check_distance_samples,
    max_d,
    n_pool,
    replaceable_words,
    round_robin,
    split_free,
)
from mimirlib.experiments.ramia.sweeps import density_pair, density_sweep, member_percentiles
from mimirlib.samplers import ranges
from mimirlib.samplers.perturb import word_hamming
from mimirlib.samplers.ranges import Range

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "ramia.py"

# ----------------------------------------------------------------------------- pure helpers


def test_round_robin_interleaves_and_caps_keeping_every_domain():
    per = {"a": [1, 2, 3], "b": [10], "c": [20, 21]}
    assert round_robin(per) == [1, 10, 20, 2, 21, 3]
    assert round_robin(per, 3) == [1, 10, 20]


def test_the_population_is_every_free_text_after_the_references_out_sources():
    free = list(range(10))
    assert split_free(free, None, 3) == ([3, 4, 5, 6, 7, 8, 9], [0, 1, 2])  # all the rest: the paper's population
    assert split_free(free, 7, 3) == ([3, 4, 5, 6, 7, 8, 9], [0, 1, 2])  # exactly enough
    assert split_free(free, 2, 3)[1] == split_free(free, None, 3)[1]  # its size never moves the trim's OUT sources
    for n, ref in ((8, 3), (None, 10), (0, 3)):
        with pytest.raises(ValueError, match=rf"^n_population: {n} population texts and the reference's {ref} OUT"):
            split_free(free, n, ref)


def test_restored_words_counts_changed_words_put_back():
    src, cen = "a b c d e", "a X c Y e"  # words 1 and 3 moved
    samples = ["a b c Y e", "a b c d e", "Q X c Y e", "a b c"]  # 1 back, 2 back, 0, other length
    assert restored_words(src, cen, samples) == [1, 2, 0, 0]


class OffsetTokenizer:
    """Each character is a token; the window keeps the first max_length characters."""

    def __call__(self, text, truncation, max_length, return_offsets_mapping):
        return {"offset_mapping": [(i, i + 1) for i in range(min(len(text), max_length))]}


def test_replaceable_words_counts_words_with_a_letter_inside_the_window():
    text = "one two -- 3 four"
    assert replaceable_words(text, OffsetTokenizer(), 100) == 4  # "--" has no letter or digit
    assert replaceable_words(text, OffsetTokenizer(), 7) == 2  # "one two" end inside the window


def test_ties_by_construction_find_the_mean_and_the_max():
    assert ties_by_construction(10, 0.0, 1.0) == {BAYES: True, GLRT: False}
    assert ties_by_construction(10, 0.95, 1.0) == {BAYES: False, GLRT: True}  # keeps the top rank only
    assert ties_by_construction(10, 0.2, 1.0) == {BAYES: False, GLRT: False}


def test_sweep_rows_turn_the_grid_into_two_curves():
    table = pd.DataFrame({"q_s": [0.0, 0.25, 0.0], "q_e": [1.0, 1.0, 0.75], "auc": [0.6, 0.7, 0.5]})
    rows = sweep_rows(table, "LOSS")
    got = {(r["trim"], r["share trimmed"]): r["auc"] for r in rows}
    assert got == {
        ("drop the lowest", 0.0): 0.6,
        ("drop the highest", 0.0): 0.6,
        ("drop the lowest", 0.25): 0.7,
        ("drop the highest", 0.25): 0.5,
    }


def test_density_pair_reads_the_papers_range():
    assert density_pair([0.0, 0.1, 0.2, 0.5, 1.0]) == (0.0, 0.5)
    assert density_pair([0.0, 1.0]) == (0.0, 1.0)  # nothing inside the paper's range: the highest
    assert density_pair([0.2]) is None


def test_member_percentiles_rank_members_among_non_members_and_out_ranges():
    mia = np.array([5.0, 1.0, 2.0, 3.0])  # two members (first), two non-members
    ram = np.array([0.9, 0.1, 0.2, 0.5])
    from_member = np.array([True, True, False, False])
    y = np.array([True, False, False, False])  # the second member's range is OUT
    x, v = member_percentiles(mia, ram, from_member, y)
    np.testing.assert_allclose(x, [100.0])  # 5 above both non-members
    np.testing.assert_allclose(v, [100.0])  # 0.9 above all three OUT ranges


# ----------------------------------------------------------------------------- Tables III/IV rows


def test_iteration_rows_score_each_subset_three_ways():
    rng = np.random.default_rng(3)
    y = np.array([True] * 6 + [False] * 6)
    pool = rng.normal(size=(12, 5)) + y[:, None]
    idx = ranges.subset_indices(12, 5, 3, 4, seed=0)
    rows, s = iteration_rows("LOSS", pool[:, 0], pool, idx, (0.0, 1.0), y)  # any index works, fresh or not
    assert len(rows) == 1 + 4 * 3 and rows[0]["method"] == MIA
    assert {k: v.shape for k, v in s.items()} == {m: (4, 12) for m in (RAMIA, GLRT, BAYES)}
    np.testing.assert_allclose(s[RAMIA], s[BAYES])  # no trim: the plain mean
    np.testing.assert_allclose(s[GLRT][2], np.take_along_axis(pool, idx[2], axis=1).max(axis=1))
    res = pd.DataFrame(rows)
    agg = aggregate(res)
    assert agg.loc[("LOSS", RAMIA), "auc"] == pytest.approx(res[res.method == RAMIA].auc.mean())
    gains = pd.DataFrame([{"backbone": "LOSS", **paired_difference(s[RAMIA], pool[:, 0], y, n_bootstrap=20, seed=0)}])
    t3 = table_iii(res, gains)
    mia = res[res.method == MIA].auc.iloc[0]
    assert t3.loc["LOSS", "ΔAUC (points, mean)"] == pytest.approx(100 * (res[res.method == RAMIA].auc.mean() - mia))
    assert t3.loc["LOSS", "ΔAUC (points, mean)"] == pytest.approx(100 * gains.estimate.iloc[0])
    assert t3.loc["LOSS", TABLE_III_N] == f"{int(y.sum())} / {int((~y).sum())}"  # the sample size, last


def test_range_row_reports_auc_and_tprs_in_percent():
    y = np.array([True, True, False, False])
    row = range_row("RMIA", RAMIA, 2, [0.9, 0.8, 0.1, 0.2], y)
    assert row["auc"] == 1.0 and row[metrics.budget_key(0.01)] == 100.0 and row["iteration"] == 2
    assert (row["n_members"], row["n_nonmembers"]) == (2, 2)


# ----------------------------------------------------------------------------- parameters


def test_params_match_the_notebook_and_the_smoke_profile():
    from mimirlib.runner import notebook_parameters, resolve_params

    declared = notebook_parameters(NOTEBOOK)
    ns = {k: v["default"] for k, v in declared.items()} | resolve_params("ramia", "smoke")
    p = exp.Params.from_cell(ns | {"exp": exp, "_hidden": 1})  # modules and private names are not parameters
    assert set(p) == set(declared)
    assert p.profile == "smoke" and max_d(p) == max(p.range_size, *p.range_sizes)
    assert n_pool(p) == p.n_samples * p.n_iterations
    assert all(b in BACKBONES for b in p.backbones)
    assert exp.label("rmia") == "RMIA"
    lab = exp.Params.from_cell({k: v["default"] for k, v in declared.items()})
    assert check_distance_samples(lab) == lab.distance_samples <= n_pool(lab)  # the book's curve fits its pool
    # exact scores on every device, a GPU's too ("auto" would give bfloat16 there): RMIA's range effects move with
    # bfloat16's rounding (README: the chapter's precision)
    assert pick_dtype(lab.dtype, torch.device("cuda")) == pick_dtype(lab.dtype, torch.device("cpu")) == torch.float32


@pytest.mark.parametrize("k", [1, 6, 0, 7, 2.5, True, None])
def test_distance_samples_fit_each_ranges_pool(k):
    p = exp.Params({"n_samples": 3, "n_iterations": 2, "distance_samples": k})  # a pool of 6 samples per range
    if k in (1, 6) and not isinstance(k, bool):
        assert check_distance_samples(p) == k
    else:
        with pytest.raises(ValueError, match=r"^distance_samples: .*1 to n_samples x n_iterations \(6\)"):
            check_distance_samples(p)


def test_models_load_in_the_chapters_precision(monkeypatch):
    from mimirlib.experiments.ramia import setting as setting_mod

    calls = []
    monkeypatch.setattr(setting_mod, "load_model", lambda path, **kw: calls.append((path, kw)) or path)

    class Lab:
        model_dir = staticmethod(lambda name: Path("/labs") / name)

    assert setting_mod.load_weights(exp.Params({"dtype": "fast"}), Lab, "t") == str(Path("/labs/t"))
    setting_mod.load_weights(exp.Params({}), Lab, "r")  # a caller's parameters without a dtype: auto
    assert calls == [(str(Path("/labs/t")), {"dtype": "fast"}), (str(Path("/labs/r")), {"dtype": "auto"})]


# ----------------------------------------------------------------------------- the steps on the smoke lab


@pytest.mark.slow
def test_steps_on_the_smoke_lab():
    from mimirlib.runner import notebook_parameters, resolve_params

    ns = {k: v["default"] for k, v in notebook_parameters(NOTEBOOK).items()}
    ns |= resolve_params("ramia", "smoke") | {"backbones": ["loss", "rmia"]}
    run = exp.run(exp.Params.from_cell(ns))
    setting, game, trims, agg, density, dist = run.setting, run.game, run.trims, run.agg, run.density, run.dist
    assert len(setting.members) == len(setting.nonmembers) == ns["n_ranges"]
    assert str(setting.target.dtype) == str(setting.reference.dtype) == "torch.float32"  # "auto" on a CPU
    assert set(setting.members) <= set(setting.target_train)
    assert not set(setting.population) & set(setting.target_train)
    assert not set(setting.population) & {t for b in setting.parts.values() for t in b.nonmembers}  # not the game's
    n_pool = ns["n_samples"] * ns["n_iterations"]  # a fresh draw per iteration
    assert game.pool_t.shape == (2 * ns["n_ranges"], n_pool) and game.y[game.from_member].all()
    assert all(len(set(r.samples)) == n_pool for r in game.ranges)  # no sample serves two iterations
    grid = sweep_grid(run.p)
    assert all(q in grid for q in trims.q.values())
    assert all(range_scores.kept(ns["n_samples"], *q) >= ns["min_kept"] for q in trims.q.values())
    assert list(agg.gains.backbone) == ["LOSS", "RMIA"] and len(agg.versus) == 4
    assert set(agg.t3.index) == {"LOSS", "RMIA"}
    end = density.frame[density.frame["training-text density"] == 1.0].set_index("backbone").auc
    assert end.to_dict() == pytest.approx(density.ends.set_index("backbone").density_end.to_dict())
    k = ns["distance_samples"]
    assert set(dist.frame.p) == set(ns["restore_ps"]) and len(dist.frame) == 2 * len(ns["restore_ps"])
    d = dist.frame.groupby("p").distance.first()
    assert d[1.0] == 0 and d[0.0] == pytest.approx(
        np.mean([word_hamming(r.source, x) for r in game.ranges[: len(setting.members)] for x in r.samples[:k]])
    )
    # p = 1 scores the source texts themselves: RaMIA there is the MIA on the exact texts, under range labels
    top = dist.frame[dist.frame.p == 1.0].set_index("backbone").auc_a
    for b in ("loss", "rmia"):
        assert top[exp.label(b)] == pytest.approx(range_auc(agg.scores[b]["source"], game.y))
    for step in (setting, game, trims, agg, run.sizes, density, dist, run.corr, run.red, run.beyond):
        assert step.numbers()
    n = f"{ns['n_ranges']} / {ns['n_ranges']}"  # every range table says the IN / OUT ranges it rests on
    assert n == ranges_n(game.y) and (dist.n_in, dist.n_out) == (ns["n_ranges"], ns["n_ranges"])
    assert (agg.aggregators()[(RANGES_N, "")] == n).all() and (dist.table()[RANGES_N] == n).all()
    assert isinstance(agg.roc_figure(), plt.Figure)
    assert isinstance(dist.figure(), plt.Figure)
    assert all(isinstance(r, Range) for r in game.ranges)
    verdicts = exp.verdicts(run)
    assert len(verdicts) == 7
    # Table III and Figure 11 over the target's seeds (the smoke lab replicates the 4-epoch run twice): the same
    # ranges scored under each seed, the target's own comparison first, and the verdicts read the mean over seeds
    seeds = run.seeds
    assert seeds.models == ["epochs-4x-h16", "epochs-4x-h16-seed1", "epochs-4x-h16-seed2"] and seeds.aggs[0] is agg
    assert (seeds.gains.n_seeds == 3).all() and len(seeds.versus) == 4
    for b, g in seeds.gains.set_index("backbone").iterrows():
        own = [a.gains.set_index("backbone").loc[b, "estimate"] for a in seeds.aggs]
        assert g.per_seed == pytest.approx(own) and g.estimate == pytest.approx(np.mean(own))
    assert not np.allclose(seeds.aggs[1].game.pool_t, game.pool_t)  # another model's scores of the same samples
    assert seeds.aggs[1].game.ranges is game.ranges and (seeds.aggs[1].game.y == game.y).all()
    assert "mean over 3 seeds of the target" in verdicts[0].n and "one target" in verdicts[2].n
    assert "the mean over the target's seeds" in verdicts[0].evidence
    assert seeds.numbers()["n_seeds"] == 3 and seeds.table().shape[0] == 6 and seeds.trims_table().shape[1] == 3


# ----------------------------------------------------------------------------- the trim's notations and grid


@pytest.mark.slow
def test_a_population_larger_than_the_free_held_out_texts_is_named():
    from mimirlib.runner import notebook_parameters, resolve_params

    ns = {k: v["default"] for k, v in notebook_parameters(NOTEBOOK).items()} | resolve_params("ramia", "smoke")
    with pytest.raises(ValueError, match="n_population: 100000 population texts"):
        exp.run(exp.Params.from_cell(ns | {"n_population": 100000}))


def test_trim_notations_map_the_papers_settings():
    t = trim_notations(10)
    ag = t.loc["AG News"]
    assert ag["paper (q_s, q_e), outside kept"] == "(20, 100)"
    assert ag["authors' code (direction, ratio trimmed)"] == "(top, 0.8)"
    assert ag["ours (q_s, q_e), window kept"] == "(0, 0.2)"
    assert ag["paper's samples kept"] == "10 of 50" and ag["kept of the lab's samples"] == "2 of 10"
    assert t.loc["CelebA", "ours (q_s, q_e), window kept"] == "(0.25, 1)"
    assert t.loc["CelebA", "paper's samples kept"] == "75% of the identity's images (1 to 18 of them)"  # not all
    assert list(t.index) == list(range_scores.PAPER_TRIMS)


def test_sweep_grid_holds_the_papers_trim_and_no_single_sample_window():
    from types import SimpleNamespace

    p = SimpleNamespace(trim_direction="bottom", trim_step=0.1, n_samples=10, min_kept=2)
    grid = sweep_grid(p)
    assert (0.0, 0.2) in grid  # the paper's AG News trim, though the bottom grid has no top trims
    assert (0.9, 1.0) not in grid and all(range_scores.kept(10, *q) >= 2 for q in grid)
    p1 = SimpleNamespace(trim_direction="top", trim_step=0.1, n_samples=10, min_kept=1)
    assert (0.0, 0.1) in sweep_grid(p1)


# ----------------------------------------------------------------------------- Figure 5's end point


def density_case(lift: float):
    """A range game in which every OUT range's samples score ``lift`` above real texts (the masked LM makes
    texts more likely), members score 1 above non-members, and IN ranges' samples sit between."""
    from types import SimpleNamespace

    rng = np.random.default_rng(0)
    n, k, its = 30, 4, 3
    y = np.array([True] * n + [False] * n)
    src = np.where(y, 1.0, 0.0) + rng.normal(0, 0.5, 2 * n)  # members' and non-members' exact texts
    pool = src[:, None] - 0.5 * y[:, None] + lift + rng.normal(0, 0.5, (2 * n, k * its))
    idx = ranges.fresh_draws(2 * n, k, its)
    p = SimpleNamespace(densities=[0.0, 0.5, 1.0], backbones=["loss"], n_bootstrap=20, seed=0)
    run = SimpleNamespace(p=p)
    game = SimpleNamespace(y=y, from_member=y.copy(), idx=idx, pool_t=pool, src_t=src)
    agg = SimpleNamespace(scores={"loss": {"pool": pool, "source": src}}, backbones=["loss"])
    trims = SimpleNamespace(q={"loss": (0.0, 1.0)})
    return density_sweep(run, game, trims, agg)


def test_density_one_is_exact_members_against_out_samples_not_the_exact_mia():
    d = density_case(lift=1.5)
    end = d.frame.set_index("training-text density").auc[1.0]
    ends = d.ends.iloc[0]
    assert end == pytest.approx(ends.density_end)
    assert ends.exact_mia > 0.8 and end < 0.5  # the OUT samples outscore the exact members
    same = density_case(lift=0.0).ends.iloc[0]
    assert same.density_end > 0.7  # without the shift, density 1 comes near the exact-text MIA
    assert "against" in d.numbers()["density_end_text"]
    assert isinstance(d.figure(), plt.Figure)


# ----------------------------------------------------------------------------- the distance curve


def test_nearest_p_is_the_first_restoration_as_close_as_the_centre():
    f = pd.DataFrame({"p": [0.0, 0.25, 0.5, 1.0], "distance": [50.0, 37.0, 19.0, 0.0]})
    assert nearest_p(f, 20) == 0.5
    assert nearest_p(f, 19) == 0.5  # as close counts
    assert nearest_p(f[f.p < 1], 10) is None


def test_crossing_distance_interpolates_the_first_turn_to_a_gain():
    assert crossing_distance([50, 30, 10, 0], [-0.04, -0.02, 0.02, 0.05]) == pytest.approx(20.0)
    assert crossing_distance([0, 10, 30, 50], [0.05, 0.02, -0.02, -0.04]) == pytest.approx(20.0)  # any order
    assert np.isnan(crossing_distance([50, 0], [-0.04, -0.01]))  # never turns
    assert np.isnan(crossing_distance([50, 0], [0.01, 0.03]))  # never below


def test_distance_summary_reads_the_curve_at_the_centre():
    y = np.array([True] * 20 + [False] * 20)
    rng = np.random.default_rng(1)
    per = {("LOSS", q): np.where(y, q, 0.0) + rng.normal(0, 0.5, 40) for q in (0.0, 0.5, 1.0)}
    rows = []
    for q, dist in ((0.0, 40.0), (0.5, 20.0), (1.0, 0.0)):
        d = paired_difference(
            per[("LOSS", q)], np.where(y, 0.4, 0.0) + rng.normal(0, 0.5, 40), y, n_bootstrap=50, seed=0
        )
        rows.append({"backbone": "LOSS", "p": q, "distance": dist, **d})
    frame = pd.DataFrame(rows)
    s = distance_summary(frame, per, y, 20, n_bootstrap=50, seed=0).iloc[0]
    assert (s.p_far, s.p_near, s.d_far, s.d_near) == (0.0, 0.5, 40.0, 20.0)
    assert s.estimate == pytest.approx(range_auc(per[("LOSS", 0.5)], y) - range_auc(per[("LOSS", 0.0)], y))
    assert s.near_estimate == frame.estimate[1] and s.lo > 0
    assert distance_summary(frame[frame.p == 0.0], per, y, 20, n_bootstrap=10, seed=0).empty


def test_distance_figure_is_readable():
    from tests.test_plots import assert_readable

    rows = [
        {"backbone": b, "p": q, "distance": 55 * (1 - q), "estimate": g, "lo": g - 0.02, "hi": g + 0.02}
        for b, shift in (("LOSS", 0.0), ("RMIA", 0.01))
        for q, g in ((0.0, -0.03 + shift), (0.25, -0.02 + shift), (0.5, 0.0 + shift), (0.75, 0.03), (1.0, 0.05))
    ]
    fig = Distance(pd.DataFrame(rows), pd.DataFrame(), 20, 5, 10, 10).figure()
    assert_readable(fig)
    dens = density_case(1.5)
    assert_readable(dens.figure())


def test_the_target_is_the_most_epochs_run_unless_the_chapter_names_another():
    from mimirlib.experiments.params import Params
    from mimirlib.experiments.ramia.setting import target_epochs

    assert target_epochs(Params({"target_epochs": None}), [1, 2, 4, 8]) == 8
    assert target_epochs(Params({"target_epochs": 4}), [1, 2, 4, 8]) == 4
    assert target_epochs(Params({}), [1, 2]) == 2
    with pytest.raises(ValueError, match="target_epochs: 3 is not an epoch run of this lab; it has \\[1, 2, 4, 8\\]"):
        target_epochs(Params({"target_epochs": 3}), [1, 2, 4, 8])
