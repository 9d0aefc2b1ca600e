"""The lab page's experiment layer: the tables it shows, read through Lab, and the sanity check,
on the smoke lab; the seed-spread table on a synthetic check."""

import math

import pandas as pd
import pytest

from mimirlib.experiments import lab as exp


def synthetic_check():
    table = pd.DataFrame(
        {
            "model": ["e4", "t", "t-seed1", "t-seed2"],
            "epochs": [4, 1, 1, 1],
            "LOSS AUC": [0.9, 0.50, 0.52, 0.54],
            "95% CI low": [0.8, 0.40, 0.42, 0.44],
            "95% CI high": [1.0, 0.60, 0.62, 0.64],
        }
    ).set_index("model")
    gaps = pd.DataFrame(
        [
            {
                "a": "e4",
                "b": "t",
                "auc_a": 0.9,
                "auc_b": 0.5,
                "estimate": 0.4,
                "lo": 0.3,
                "hi": 0.5,
                "seed_sd": 0.02 * math.sqrt(2),
                "n_seeds": 3,
                "replicates": ("t", "t-seed1", "t-seed2"),
            }
        ]
    )
    return exp.SanityCheck(table, "e4", gaps, 50)


def test_seed_spread_puts_seed_sd_beside_both_bootstrap_half_widths():
    row = synthetic_check().seed_spread().loc["t"]
    assert row["seeds"] == 3
    assert row["LOSS AUC, seed mean"] == pytest.approx(0.52)
    assert row["seed sd"] == pytest.approx(0.02)
    assert row["bootstrap 95% half-width"] == pytest.approx(0.10)
    assert row["paired 95% half-width of the gap"] == pytest.approx(0.10)


def test_sanity_check_size_text_names_texts_targets_and_seeds():
    text = synthetic_check().size_text()
    assert "50 + 50 texts" in text and "1 one-epoch targets" in text and "3 seeds" in text


# ---------------------------------------------------------------- on the smoke lab


@pytest.mark.slow
def test_corpus_and_pool_tables_match_the_manifest(smoke_lab):
    t = exp.corpus_table(smoke_lab)
    assert list(t.index) == smoke_lab.config["domains"]
    assert (t["training pool"] == smoke_lab.config["per_domain"]["train"]).all()
    assert (t["documents in snapshot"] >= t["training pool"] + t["held-out pool"] + t["reference pool"]).all()
    later = exp.later_pools(smoke_lab)
    assert list(later.index) == [smoke_lab.config["temporal"]["domain"]]
    assert list(later.columns) == [b["name"] for b in smoke_lab.config["temporal"]["bins"]]


@pytest.mark.slow
def test_nonmember_overlap_is_a_share_and_respects_the_decontamination(smoke_lab):
    ov = exp.nonmember_overlap(smoke_lab)
    assert ov["mean 13-gram overlap"].between(0, 0.8).all()
    assert ov["mean 7-gram overlap"].between(0, 1).all()
    assert (ov.members == ov["non-members"]).all()


@pytest.mark.slow
def test_model_suite_says_what_every_model_is_for(smoke_lab):
    suite = exp.model_suite(smoke_lab)
    trained = [m for m, v in smoke_lab.manifest["models"].items() if "config" in v]
    assert sorted(suite.index) == sorted(trained)
    assert (suite.role.str.len() > 20).all()
    for rep in smoke_lab.seed_replicates("target-h32")[1:]:
        assert "seed spread" in suite.loc[rep, "role"]
    rc = smoke_lab.recency_control()
    assert "training-size chapter" in suite.loc[rc, "role"] and suite.loc[rc, "schedule fraction"] < 1
    assert len(smoke_lab.control_pairs()) == 3  # the smoke profile's control has seeds 1 and 2
    for rep, twin in smoke_lab.control_pairs()[1:]:
        assert f"data order of {twin}" in suite.loc[rep, "role"] and suite.loc[rep, "schedule fraction"] < 1


@pytest.mark.slow
def test_training_curves_leave_replicates_out_unless_asked(smoke_lab):
    c = exp.training_curves(smoke_lab)
    assert set(c.split) == {"train", "heldout"} and not c.model.str.contains("-seed").any()
    assert exp.training_curves(smoke_lab, replicates=True).model.str.contains("-seed").any()
    assert smoke_lab.training_curves("target-h16")[-1]["step"] == smoke_lab.manifest["models"]["target-h16"]["steps"]
    assert smoke_lab.training_curves("no-such-model") == []


@pytest.mark.slow
def test_sanity_check_on_the_smoke_lab(smoke_lab):
    check = exp.sanity_check(smoke_lab, n_bootstrap=50)
    assert check.many == max(check.table.index[check.table["saw the members"]], key=lambda m: check.table.epochs[m])
    assert not check.table.loc[[m for m in check.table.index if m.endswith("-ref")], "saw the members"].any()
    assert set(check.table["n (members / non-members)"]) == {f"{check.n_members} / {check.n_members}"}
    assert list(check.gaps.b) == smoke_lab.target_names()
    assert check.gaps.seed_sd.notna().all()  # the smoke lab trains replicates of every target
    assert check.n_members == len(exp.pooled_benchmark(smoke_lab).members) > 0
    assert len(check.seed_spread()) == len(smoke_lab.target_names())


def test_verdicts_and_prose_numbers_read_the_sanity_check():
    from mimirlib.verdicts import lab as rules

    cfg = {"doc_words": 200, "temporal": {"cutoff": "2020-01-01"}}
    overlap = pd.DataFrame(
        {"mean 7-gram overlap": [0.35, 0.02], "mean 13-gram overlap": [0.2, 0.0]}, index=["licenses", "code"]
    )
    run = exp.LabRun(exp.Lab(None, cfg), synthetic_check(), overlap)
    (v,) = exp.verdicts(run)
    rows = exp.regime(run)
    assert [(r.key, r.in_regime) for r in rows] == [("overlap-licenses", True), ("overlap-code", False)]
    assert "mean 7-gram overlap 2.0% (13-gram 0.0%)" in rows[1].lab_value and "(plays GitHub)" in rows[1].property
    assert v.key == rules.LAB_IS_INFORMATIVE.key and "e4: LOSS AUC 0.900" in v.evidence
    assert v.n == run.check.size_text()
    p = exp.prose_numbers(run)
    assert p["sanity_many_epochs"] == 4 and p["sanity_many_auc"] == 0.9 and p["sanity_n"] == 50
    assert (p["sanity_one_min"], p["sanity_one_max"]) == (0.5, 0.5) and p["signal_floor"] == rules.SIGNAL_FLOOR
    assert (p["doc_words"], p["cutoff"], p["sched_fraction"]) == (200, "2020-01-01", "none")
    assert p["seed_sd_max"] == pytest.approx(0.02)


@pytest.mark.slow
def test_the_chapter_run_checks_the_lab_it_is_given(smoke_lab):
    run = exp.run(exp.Params({"profile": "smoke", "dtype": "auto", "engine": "local"}), lab=smoke_lab)
    assert run.lab is smoke_lab and run.overlap.equals(exp.nonmember_overlap(smoke_lab))
    again = exp.sanity_check(smoke_lab)
    assert run.check.table.equals(again.table) and run.check.gaps.equals(again.gaps)


def test_model_roles_say_which_seeds_only_the_dedup_claims_average(tmp_path):
    import json

    from mimirlib.lab.layout import Lab, expected_models
    from mimirlib.profiles import load_profile

    cfg = dict(load_profile("smoke")["lab"], epochs=None)
    cfg["replicates"] = dict(cfg["replicates"], dedup_seeds=[3], epoch_runs=[])  # no epoch runs to replicate
    (tmp_path / "lab.json").write_text(json.dumps({"models": {m: {} for m in expected_models(cfg)}}))
    roles = exp.model_roles(Lab(tmp_path, cfg))
    extra = [m for m in roles if m.endswith("-seed3")]
    assert sorted(extra) == ["target-h32-natural-seed3", "target-h32-seed3"]  # the pair only
    assert all("deduplication claims only" in roles[m] for m in extra)
    assert "seed spread" in roles["target-h32-seed1"] and "deduplication" not in roles["target-h32-seed1"]


def test_the_masked_lms_record_reads_in_words_with_its_loss_beside_a_uniform_guess():
    from types import SimpleNamespace

    record = {"kind": "x", "n_texts": 10, "vocab_size": 4000, "epoch_mean_loss": [7.1, 6.5551], "lr": 0.002}
    table = exp.mlm_summary(SimpleNamespace(manifest={"mlm": record}))["masked LM"]
    assert table["final masked-token loss (nats)"] == 6.555  # the last epoch's, not dropped as a list
    assert table["uniform guess's loss, ln(vocabulary) (nats)"] == round(math.log(4000), 3)
    assert table["training texts"] == 10 and "kind" not in table.index and "n_texts" not in table.index
    assert exp.mlm_summary(SimpleNamespace(manifest={})) is None


def test_the_labs_neighbours_in_words_come_from_its_settings():
    cfg = {"n_neighbors": 5, "neighbors": {"unit": "word", "fraction": 0.1}}
    assert exp.neighbours_text(cfg) == "5 per text, 10% of the words"
    assert exp.neighbours_text({"n_neighbors": 25}) == "25 per text, 5% of the tokens"  # the defaults: the paper's
    assert exp.neighbours_text({"n_neighbors": 0}) == "none"


def test_the_build_cost_names_its_memory_a_running_maximum():
    from types import SimpleNamespace

    timings = {"splits": {"seconds": 1.3, "peak_rss_mb": 586}, "train x": {"seconds": 72.0, "peak_rss_mb": 586}}
    table = exp.build_cost(SimpleNamespace(manifest={"timings": timings}))
    assert list(table.columns) == ["seconds", "peak memory so far (MB)"] and list(table.index) == list(timings)
