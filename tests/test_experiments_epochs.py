"""The epochs chapter's experiment layer: AUC tables and paired effects on synthetic scores, and
the chapter's run on the smoke lab."""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mimirlib.experiments import epochs as exp
from mimirlib.verdicts import epochs as rules

N = 40  # members and as many non-members per domain
NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "epochs.py"
KEYS = ["mimir-3.2.1-epochs", "mimir-b.2-ref-epochs", "mimir-c.2-silo-epochs"]  # the chapter's claims, prose order


def scores_frame(models: dict, domains=("a", "b"), seed=0):
    """``models`` maps a model name to ``{attack: separation}``: members score ``separation``
    higher than non-members on average (0 = chance), same texts for every model."""
    rng = np.random.default_rng(seed)
    noise = {d: rng.normal(size=2 * N) for d in domains}  # shared text difficulty: what pairing cancels
    rows = []
    for m, attacks in models.items():
        for d in domains:
            lab = np.r_[np.ones(N, int), np.zeros(N, int)]
            frame = pd.DataFrame({"model": m, "domain": d, "pos": range(2 * N), "is_member": lab})
            for a, sep in attacks.items():
                frame[a] = noise[d] + sep * lab + 0.3 * rng.normal(size=2 * N)
            rows.append(frame)
    return pd.concat(rows, ignore_index=True)


def test_auc_table_pools_domains_or_splits_them():
    s = scores_frame({"m": {"loss": 5.0}})
    pooled = exp.auc_table(s, ("model",), n_bootstrap=50)
    per = exp.auc_table(s, ("model", "domain"), n_bootstrap=50)
    assert list(pooled.attack) == ["loss"] and len(pooled) == 1
    assert sorted(per.domain) == ["a", "b"]
    assert (per.auc > 0.95).all() and (per.auc_lo <= per.auc).all()
    assert pooled.n_members.iloc[0] == 2 * N


def test_model_effects_are_paired_and_positive_for_a_leakier_model():
    s = scores_frame({"e8": {"loss": 1.5}, "e1": {"loss": 0.0}})
    eff = exp.model_effects(s, "e8", "e1", n_bootstrap=200)
    assert set(eff.domain) == {"a", "b"} and (eff.attack == "loss").all()
    assert (eff.estimate > 0.2).all() and (eff.lo > 0).all()
    assert np.allclose(eff.estimate, eff.auc_a - eff.auc_b)
    assert eff.seed_sd.isna().all() and (eff.n_seeds == 1).all()


def test_model_effects_interval_covers_zero_for_two_equal_models():
    s = scores_frame({"x": {"loss": 0.5}, "y": {"loss": 0.5}}, seed=3)
    eff = exp.model_effects(s, "x", "y", n_bootstrap=300)
    assert ((eff.lo < 0) & (eff.hi > 0)).all()


def test_model_effects_seed_sd_is_sqrt2_times_the_auc_seed_sd():
    s = scores_frame({"e8": {"loss": 1.5}, "e1": {"loss": 0.0}})
    spread = pd.DataFrame(
        {"domain": ["a", "b"], "attack": ["loss", "loss"], "auc_seed_sd": [0.01, 0.02], "n_seeds": [3, 3]}
    )
    eff = exp.model_effects(s, "e8", "e1", spread=spread, n_bootstrap=20).set_index("domain")
    assert eff.loc["a", "seed_sd"] == pytest.approx(0.01 * math.sqrt(2))
    assert eff.loc["b", "seed_sd"] == pytest.approx(0.02 * math.sqrt(2)) and eff.loc["b", "n_seeds"] == 3


def test_model_effects_refuse_models_scored_on_other_texts():
    s = scores_frame({"x": {"loss": 1.0}, "y": {"loss": 1.0}})
    s = s[~((s.model == "y") & (s.pos == 0))]  # y lacks one text
    with pytest.raises(ValueError, match="same"):
        exp.model_effects(s, "x", "y", n_bootstrap=10)


def test_seed_spread_is_the_sample_sd_of_the_replicates_aucs():
    s = scores_frame({"t": {"loss": 0.3}, "t-seed1": {"loss": 0.6}, "t-seed2": {"loss": 1.2}})
    spread = exp.seed_spread(s).set_index(["domain", "attack"])
    aucs = exp.seed_aucs(s)
    want = aucs[aucs.domain == "a"].auc.std(ddof=1)
    assert spread.loc[("a", "loss"), "auc_seed_sd"] == pytest.approx(want)
    assert spread.loc[("a", "loss"), "n_seeds"] == 3 and want > 0


def test_attack_effects_with_replicates_give_the_seed_sd_of_the_attack_difference():
    s = scores_frame({"e8": {"ref": 2.0, "loss": 0.5}})
    reps = scores_frame({"t": {"ref": 0.5, "loss": 0.5}, "t-seed1": {"ref": 1.0, "loss": 0.5}}, seed=1)
    eff = exp.attack_effects(s, "e8", "ref", "loss", replicates=reps, n_bootstrap=100).set_index("domain")
    assert (eff.estimate > 0).all() and (eff.lo > 0).all()
    aucs = exp.seed_aucs(reps).pivot_table(index=["domain", "model"], columns="attack", values="auc")
    d = (aucs["ref"] - aucs["loss"]).loc["a"]
    assert eff.loc["a", "seed_sd"] == pytest.approx(d.std(ddof=1)) and eff.loc["a", "n_seeds"] == 2


def test_attack_effects_empty_when_an_attack_was_not_run():
    s = scores_frame({"e8": {"loss": 1.0}})
    assert exp.attack_effects(s, "e8", "ref", "loss").empty


def test_reference_edges_compare_the_reference_attack_with_every_other_attack():
    s = scores_frame({"e8": {"ref": 2.0, "loss": 0.5, "zlib": 0.5, "min_k_pp": 0.5}})
    reps = scores_frame(
        {
            "t": {"ref": 0.5, "loss": 0.5, "zlib": 0.4, "min_k_pp": 0.5},
            "t-seed1": {"ref": 1.0, "loss": 0.5, "zlib": 0.6, "min_k_pp": 0.3},
        },
        seed=1,
    )
    e = exp.reference_edges(s, "e8", replicates=reps, n_bootstrap=100)
    assert sorted(set(e.attack)) == ["loss", "min_k_pp", "zlib"] and len(e) == 2 * 3
    assert (e.a == "ref").all() and (e.b == e.attack).all() and (e.estimate > 0).all() and (e.lo > 0).all()
    assert np.allclose(e.estimate, e.auc_a - e.auc_b)
    want = exp.attack_spread(reps, "ref", "zlib").set_index("domain").seed_sd
    assert e[e.attack == "zlib"].set_index("domain").seed_sd.to_dict() == pytest.approx(want.to_dict())
    assert exp.reference_edges(scores_frame({"e8": {"loss": 1.0}}), "e8").empty


def test_margin_growth_is_the_paired_gain_of_the_reference_attacks_margin():
    s = scores_frame({"e8": {"ref": 2.0, "loss": 0.5}, "e1": {"ref": 0.5, "loss": 0.5}})
    g = exp.margin_growth(s, "e8", "e1", n_bootstrap=200).set_index("domain")
    assert list(g.attack) == ["loss", "loss"] and (g.estimate > 0.2).all() and (g.lo > 0).all()
    e8, e1 = (exp.reference_edges(s, m, n_bootstrap=10).set_index("domain") for m in ("e8", "e1"))
    assert np.allclose(g.estimate, e8.estimate - e1.estimate)
    assert g.seed_sd.isna().all() and (g.n_seeds == 1).all()
    reps = scores_frame({"t": {"ref": 0.5, "loss": 0.5}, "t-seed1": {"ref": 1.0, "loss": 0.5}}, seed=1)
    g = exp.margin_growth(s, "e8", "e1", replicates=reps, n_bootstrap=20).set_index("domain")
    sd = exp.attack_spread(reps, "ref", "loss").set_index("domain").seed_sd
    assert g.seed_sd.to_dict() == pytest.approx((sd * math.sqrt(2)).to_dict())


def test_margin_growth_is_flat_when_the_margin_does_not_change():
    s = scores_frame({"e8": {"ref": 1.0, "loss": 0.5}, "e1": {"ref": 1.0, "loss": 0.5}}, seed=4)
    g = exp.margin_growth(s, "e8", "e1", n_bootstrap=300)
    assert ((g.lo < 0) & (g.hi > 0)).all()


def test_margin_growth_refuses_runs_scored_on_other_texts():
    s = scores_frame({"e8": {"ref": 1.0, "loss": 1.0}, "e1": {"ref": 1.0, "loss": 1.0}})
    s = s[~((s.model == "e1") & (s.pos == 0))]
    with pytest.raises(ValueError, match="same"):
        exp.margin_growth(s, "e8", "e1", n_bootstrap=10)


def test_verdicts_are_the_chapters_three_claims_in_prose_order():
    s = scores_frame({"e4": {"loss": 1.5, "ref": 2.5}, "e1": {"loss": 0.2, "ref": 0.2}})
    gains = exp.model_effects(s, "e4", "e1", n_bootstrap=50)
    edges = exp.reference_edges(s, "e4", n_bootstrap=50)
    growth = exp.margin_growth(s, "e4", "e1", n_bootstrap=50)
    pooled = exp.auc_table(s, ("model",), n_bootstrap=20).assign(epochs=lambda d: d.model.map({"e4": 4, "e1": 1}))
    run = exp.EpochsRun(["e1", "e4"], pooled, pooled, gains, edges, growth, pd.DataFrame(), [], N, ["a", "b"])
    v = exp.verdicts(run)
    assert [x.key for x in v] == KEYS
    assert v[0].n == run.size_text() and "1 epoch" in v[0].evidence and "4 epochs" in v[0].evidence
    assert "on the 4 epochs run" in v[1].evidence and "LOSS" in v[1].evidence and "Supporting" in v[1].evidence


# ---------------------------------------------------------------- on the smoke lab


def chapter_params(**changes):
    """The chapter's parameters: its cell's defaults under the smoke profile, with ``changes``."""
    from mimirlib.runner import notebook_parameters, resolve_params

    cell = {k: v["default"] for k, v in notebook_parameters(NOTEBOOK).items()}
    return exp.Params(cell | resolve_params("epochs", "smoke")).replace(**changes)


@pytest.mark.slow
def test_epoch_runs_are_ordered_by_epochs_and_exclude_the_shadow_run_and_the_replicates(smoke_lab):
    runs = exp.epoch_runs(smoke_lab)
    epochs = [exp.epochs_of(smoke_lab, r) for r in runs]
    assert epochs == sorted(epochs) and len(runs) == len(smoke_lab.config["epochs"]["runs"])
    assert not any(r.endswith("-ref") for r in runs)
    # the smoke lab replicates its 4-epoch run (replicates.epoch_runs): the replicates train, but are no runs here
    reps = smoke_lab.seed_replicates("epochs-4x-h16")[1:]
    assert reps == ["epochs-4x-h16-seed1", "epochs-4x-h16-seed2"] and all(
        r in smoke_lab.manifest["models"] for r in reps
    )
    assert not set(reps) & set(runs)
    # a replicate: the same documents as its run (the RaMIA labels hold for it), another order and initialisation
    run, rep = smoke_lab.data_order("epochs-4x-h16").spans, smoke_lab.data_order(reps[0]).spans
    assert sorted(run) == sorted(rep) and run != rep
    proxy = exp.seed_proxy(smoke_lab)
    assert proxy[0] == f"target-{smoke_lab.config['epochs']['size']}" and len(proxy) >= 2


@pytest.mark.slow
def test_run_on_the_smoke_lab_gives_paired_gains_per_domain_and_attack(smoke_lab):
    r = exp.run(chapter_params(attacks=["loss", "ref"], n_bootstrap=20, n_samples=4), smoke_lab)
    assert r.n_members == 4 and r.domains == smoke_lab.config["domains"]
    assert len(r.gains) == len(r.domains) * 2 and set(r.gains.attack) == {"loss", "ref"}
    assert r.gains[["estimate", "lo", "hi", "seed_sd"]].notna().all().all()
    assert (r.gains.a == r.runs[-1]).all() and (r.gains.b == r.runs[0]).all()
    assert len(r.ref_edges) == len(r.domains) and set(r.ref_edges.attack) == {"loss"}
    assert len(r.ref_growth) == len(r.domains) and r.ref_growth[["estimate", "lo", "hi"]].notna().all().all()
    assert sorted(r.pooled.epochs.unique()) == sorted(smoke_lab.config["epochs"]["runs"])
    pivot = exp.auc_pivot(r)
    assert pivot.shape == (len(r.runs), 3)  # two attacks, then the sample size each row rests on
    assert set(pivot["n (members / non-members)"]) == {f"{4 * len(r.domains)} / {4 * len(r.domains)}"}
    assert set(exp.gains_table(r)["n (members / non-members)"]) == {"4 / 4"}
    assert r.lab is smoke_lab and [v.key for v in exp.verdicts(r)] == KEYS


# ---------------------------------------------------------------- the SILO-style run


def test_epoch_ends_take_the_checkpoint_nearest_each_end_and_refuse_a_shared_one():
    from mimirlib.experiments import silo

    # 1,026 steps over 4 epochs: ends at 256.5, 513, 769.5, 1026; half-epoch checkpoints as the lab saves them
    ckpts = [1, 2, 4, 8, 16, 32, 64, 128, 257, 385, 513, 641, 770, 898, 1026]
    assert silo.epoch_ends(ckpts, 1026, 4) == [257, 513, 770, 1026]
    with pytest.raises(ValueError, match="cannot tell the ends of 4 epochs"):
        silo.epoch_ends([1, 2, 600, 1026], 1026, 4)  # 513 and 769.5 both nearest 600


def test_playing_finds_the_lab_counterpart_of_a_pile_domain():
    from mimirlib.experiments import silo

    assert silo.playing(["changelog", "math"], silo.RISES) == "changelog"
    assert silo.playing(["changelog", "math"], silo.DROPS) == "math"
    assert silo.playing(["code"], silo.DROPS) is None


def test_silo_subset_upsamples_only_the_named_domains_members():
    from mimirlib.lab.stages import silo_subset

    cfg = {"domains": ["a", "b", "c"], "epochs": {"members": 2}, "silo": {"domains": ["b"], "upsample": 3}}
    splits = {d: {"train": [f"{d}/{i}" for i in range(5)]} for d in cfg["domains"]}
    selection = {d: {"epochs": {"members": [f"{d}/3", f"{d}/1"]}} for d in cfg["domains"]}
    ids = silo_subset(cfg, splits, selection)
    assert ids[:10] == splits["a"]["train"] + splits["c"]["train"]  # the other domains' whole pool, once
    assert sorted(ids[10:]) == ["b/1"] * 3 + ["b/3"] * 3  # only the benchmark's members of b, three times
    with pytest.raises(ValueError, match="silo.domains"):
        silo_subset(cfg | {"silo": {"domains": ["x"], "upsample": 3}}, splits, selection)


@pytest.mark.slow
def test_silo_run_on_the_smoke_lab_reads_every_epoch_end(smoke_lab):
    from mimirlib.experiments import silo

    r = exp.run(chapter_params(attacks=["loss", "ref"], n_bootstrap=20), smoke_lab)
    s, cfg = r.silo, smoke_lab.config["silo"]
    assert s.model == smoke_lab.silo_run() and s.upsampled == cfg["domains"] and len(s.ends) == cfg["epochs"]
    assert (s.rises, s.drops) == ("changelog", "math")
    # effective epochs from the data order: none before training, upsample x epochs once the run ends
    for d in s.upsampled:
        assert s.effective(s.ends[-1], d) == pytest.approx(cfg["upsample"] * cfg["epochs"], abs=0.5)
        assert s.effective(s.ends[0], d) < s.effective(s.ends[1], d) < s.effective(s.ends[-1], d)
    assert set(s.curve.step) == set(smoke_lab.checkpoints(s.model))
    for f in (s.early, s.bend, s.change):
        assert set(f.attack) == {"loss", "ref"} and set(f.domain) == set(r.domains)
        assert f[["estimate", "lo", "hi", "seed_sd"]].notna().all().all()
    # the upsampled domains' members were trained on upsample times per epoch: their shares say so
    assert all(0 < v < 0.5 for v in s.shares.values())
    assert set(silo.effects_table(s).index.get_level_values("domain")) == set(s.upsampled)
    v = exp.verdicts(r)[2]
    assert v.key == "mimir-c.2-silo-epochs"
    decided = rules.silo_upsampled_domains(
        s.early, s.bend, s.change, rises=s.rises, drops=s.drops, upsample=s.upsample, epochs=s.epochs, n="-"
    )  # the rule itself reads the run's frames (the lab's own run is in regime)
    assert decided.verdict != "not tested" and "e3" in decided.rule and "changelog (HackerNews)" in decided.evidence
    # the smoke run's upsampled domains are a third of its documents each: out of SILO's regime, so not tested
    rows = exp.regime(r)
    assert [row.key for row in rows] == ["upsampled-changelog", "upsampled-math"]
    assert all(row.in_regime is False for row in rows) and v.verdict == "not tested" and "under 5%" in v.evidence
    assert all(s.distinct[d] < s.shares[d] for d in s.upsampled)  # upsampling raises the share
