"""The "RaMIA beyond text" chapter: its parameters, the experiment on a tiny setting (both
modalities, frames and verdicts), the attacker's choices independent of the target, and the
notebook on the smoke profile."""

from pathlib import Path

import numpy as np
import pytest

from mimirlib.core.range_scores import trim_window
from mimirlib.core.range_stats import range_auc
from mimirlib.experiments import ramia_beyond_text as exp
from mimirlib.samplers import modalities
from mimirlib.verdicts import OUTCOMES

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "ramia_beyond_text.py"

TINY = dict(
    modalities=["images", "tables"],
    n_ranges=25,
    image_samples=6,
    table_samples=6,
    n_iterations=3,
    n_shadows=3,
    n_population=60,
    hidden_columns=6,
    flips=True,
    shift=1,
    angles=[-15.0, 15.0],
    epochs=8,
    lr=0.001,
    train_batch=32,
    ref_ranges=20,
    trim_step=0.25,
    min_kept=2,
    a_grid=[0.0, 0.5, 1.0],
    densities=[0.0, 0.5],
    sample_counts=[1, 4],
    n_bootstrap=50,
    seed=0,
    replicates=1,
    replicate_iterations=2,
    train_rows=60,
)


def params(**kw):
    return exp.Params(TINY | kw)


def test_params_match_the_notebook_and_the_profiles():
    from mimirlib.runner import notebook_parameters, resolve_params

    declared = notebook_parameters(NOTEBOOK)
    assert set(declared) == set(TINY)
    defaults = {k: v["default"] for k, v in declared.items()}
    for profile in ("smoke", "lab", "paper"):
        p = exp.check(exp.Params.from_cell(defaults | resolve_params("ramia_beyond_text", profile)))
        assert set(p) == set(declared) and p.modalities == ["images", "tables"]
    smoke = resolve_params("ramia_beyond_text", "smoke")
    assert smoke["n_iterations"] < defaults["n_iterations"] and smoke["epochs"] < defaults["epochs"]
    with pytest.raises(AttributeError, match="image_samples"):
        exp.check(exp.Params({"modalities": ["images"], "n_ranges": 2}))


@pytest.mark.parametrize(
    "kw,culprit",
    [
        ({"modalities": ["audio"]}, "modalities"),
        ({"n_ranges": 1}, "n_ranges"),
        ({"n_iterations": 1}, "n_iterations"),
        ({"a_grid": [1.5]}, "a_grid"),
        ({"densities": [-0.1]}, "densities"),
        ({"sample_counts": [0]}, "sample_counts"),
        ({"image_samples": 60}, "image_samples"),
        ({"shift": 9}, "shift"),
        ({"min_kept": 7}, "min_kept"),
        ({"hidden_columns": 65}, "hidden_columns"),
        ({"replicates": 0}, "replicates"),
        ({"replicates": 2.0}, "replicates"),
        ({"replicate_iterations": 0}, "replicate_iterations"),
        ({"train_rows": 0}, "train_rows"),
        ({"train_rows": 500}, "train_rows"),
    ],
)
def test_bad_parameters_are_named_before_anything_trains(kw, culprit):
    with pytest.raises(ValueError, match=culprit):
        exp.check(params(**kw))


def test_too_many_hidden_columns_is_caught_before_training(monkeypatch):
    def boom(*a, **k):  # pragma: no cover - must not be reached
        raise AssertionError("trained before checking")

    monkeypatch.setattr(modalities, "train_classifier", boom)
    with pytest.raises(ValueError, match="hidden"):
        exp.run(params(modalities=["tables"], hidden_columns=64))


@pytest.fixture(scope="module")
def tiny_run():
    return exp.run(params())


def test_tiny_run_gives_both_modalities_their_frames(tiny_run):
    run = tiny_run
    assert [r.modality for r in run.runs] == ["images", "tables"]
    for r in run.runs:
        assert r.y.dtype == bool and r.y.sum() >= TINY["n_ranges"] and (~r.y).any()
        assert set(r.gains.backbone) == {"LOSS", "RMIA"}
        assert r.ramia["rmia"].shape == (TINY["n_iterations"], len(r.y))
        assert np.isfinite(r.gains[["estimate", "lo", "hi", "spread"]].to_numpy()).all()
        assert (r.gains.spread > 0).all()  # fresh samples each iteration: RaMIA moves
        assert set(r.density["training-point density"]) == set(TINY["densities"])
        assert set(r.counts["samples per range"]) == set(TINY["sample_counts"])
        assert r.a in TINY["a_grid"]
        for q in r.trims.values():
            lo, hi = trim_window(r.n_samples, *q)
            assert hi - lo >= TINY["min_kept"]
    t3 = run.table_iii()
    assert len(t3) == 4 and t3.loc[("images", "RMIA"), "paper ΔAUC points"] == "+2.13 ± 0.06"
    assert t3.loc[("tables", "RMIA"), "paper ΔAUC points"] == "+2.62 ± 0.04"
    assert t3.loc[("tables", "LOSS"), "paper ΔAUC points"] == "-"
    t4 = run.table_iv()
    assert len(t4) == 8 and t4.loc[("images", "RMIA", exp.RAMIA), "paper TPR@1%FPR (%)"] == "1.41 ± 0.00"
    assert len(run.models_table()) == 4 and len(run.setup_table()) == 2
    v = exp.verdicts(run)
    assert [x.key for x in v] == ["ramia-table3-images", "ramia-table3-tables"]
    assert all(x.verdict in OUTCOMES and x.verdict != "not tested" for x in v)
    nums = run.numbers()
    assert {"images_gain_rmia", "tables_spread_loss", "seconds"} <= set(nums)
    for fig in (run.roc_figure(), run.density_figure(), run.counts_figure()):
        assert fig.axes


def test_density_zero_is_the_main_result(tiny_run):
    """The density sweep's first point replaces nothing: it is RaMIA's mean AUC over the samplings."""
    for r in tiny_run.runs:
        for b in exp.BACKBONES:
            d = r.density[(r.density.backbone == exp.label(b)) & (r.density["training-point density"] == 0.0)]
            want = np.mean([range_auc(s, r.y) for s in r.ramia[b]])
            assert d.auc.iloc[0] == pytest.approx(want)
            assert r.gains.set_index("backbone").loc[exp.label(b), "auc_a"] == pytest.approx(want)


def test_replicate_seeds_keep_the_first_and_never_meet_another_seeds_run():
    assert exp.replicate_seed(3, 0) == 3
    seeds = {exp.replicate_seed(s, r) for s in range(10) for r in range(1, 9)}
    assert len(seeds) == 80 and not seeds & set(range(10))


def test_replicates_pool_the_gains_the_verdicts_read(tiny_run):
    """Replicate 0 is the chapter's own run (its tables and figures); the others are independent splits whose
    gains only the verdicts read, pooled (mean gain; the spread between replicates as the noise bar). Tables
    alone (the MLP trains fast): a modality's run does not depend on which others run."""
    two = exp.run(params(replicates=2, replicate_iterations=2, n_iterations=3, modalities=["tables"]))
    g = two.replicate_gains
    assert sorted(g.replicate.unique()) == [0, 1] and len(g) == 4  # 2 replicates x 2 backbones
    assert (g[g.replicate == 0].n_iterations == 3).all() and (g[g.replicate == 1].n_iterations == 2).all()
    first = g[g.replicate == 0].drop(columns="replicate").reset_index(drop=True)
    assert first.equals(tiny_run.runs[1].gains.reset_index(drop=True))  # replicate 0 is the run of the seed itself
    assert not np.allclose(first.estimate, g[g.replicate == 1].estimate)
    assert not two.runs[0].counts.empty  # replicate 0 keeps its Figure 5 sweeps
    pooled = two.pooled_gains("tables").set_index("backbone")
    for b in ("LOSS", "RMIA"):
        e = g[g.backbone == b].estimate
        assert pooled.loc[b, "estimate"] == pytest.approx(e.mean())
        assert pooled.loc[b, "replicate_sd"] == pytest.approx(e.std(ddof=1))
        assert pooled.loc[b, "n_iterations"] == 2
    table = two.replicates_table()
    assert len(table) == 2 and (table.replicates == 2).all()
    assert table.loc[("tables", "RMIA"), "paper ΔAUC points"] == "+2.62 ± 0.04"
    v = exp.verdicts(two)[1]
    assert "over replicates" in v.evidence and "2 replicates" in v.n
    assert {"replicates", "all_seconds", "tables_pooled_rmia", "tables_pooled_sd_loss"} <= set(two.numbers())
    assert all("over samplings" in x.evidence and "replicates" not in x.n for x in exp.verdicts(tiny_run))


def test_only_images_leaves_tables_not_tested():
    run = exp.run(params(modalities=["images"], n_ranges=10, n_iterations=2, sample_counts=[2], densities=[0.0]))
    v = exp.verdicts(run)
    assert v[0].verdict != "not tested" and v[1].verdict == "not tested"


def test_the_attackers_choices_never_see_the_targets_labels():
    """Exchanging the target's members and non-members changes the target, never a, the trims or
    what the shadows measured: they are chosen on the shadows alone."""
    p = params(n_ranges=10, n_iterations=2, sample_counts=[2], densities=[0.0])
    X, y = modalities.load_data()
    split = modalities.split_data(len(X), n_population=p.n_population, n_shadows=p.n_shadows, seed=p.seed)
    for m in p.modalities:
        a = exp.run_modality(m, p, X, y, split, exp.make_ranges(m, p, X, split))
        b = exp.run_modality(m, p, X, y, split.swapped(), exp.make_ranges(m, p, X, split.swapped()))
        assert a.a == b.a and a.trims == b.trims
        assert a.a_table.equals(b.a_table) and a.trim_table.equals(b.trim_table)
        assert not np.array_equal(a.mia["loss"], b.mia["loss"])  # the target did change


@pytest.mark.slow
def test_notebook_executes_on_the_smoke_profile(tmp_path):
    import nbformat

    from mimirlib.runner import run_notebook

    out = run_notebook("ramia_beyond_text", profile="smoke", notebooks_dir=ROOT / "notebooks", out_dir=tmp_path)
    nb = nbformat.read(out, as_version=4)
    assert not any(o.output_type == "error" for c in nb.cells for o in c.get("outputs", []))
    text = str(nb)
    assert "mimir_verdicts" in text and "ramia-table3-images" in text and "ramia-table3-tables" in text


def test_tiny_run_reads_each_modalitys_targets_against_the_papers_regime(tiny_run):
    acc = tiny_run.accuracy
    assert list(acc.modality) == ["images", "tables"] and (acc.n_test == modalities.N_ROWS - TINY["train_rows"]).all()
    assert all(len(r.models.split.target_members) == TINY["train_rows"] for r in tiny_run.runs)
    rows = exp.regime(tiny_run)
    assert [r.key for r in rows] == ["generalisation-images", "generalisation-tables"]
    assert [v.regime for v in exp.verdicts(tiny_run)] == [r.key for r in rows]  # each verdict links its row
    assert list(exp.regime_table(tiny_run)["in regime?"]) == [r.status for r in rows]
