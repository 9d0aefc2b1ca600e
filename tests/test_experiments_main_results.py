"""The main-results experiment layer: pairing on shared texts, paired effects with their seed spread
(measured or estimated), the per-attack FPR floor, the prose numbers; on synthetic scores, plus the
smoke lab for the scoring pass."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mimirlib.core import metrics
from mimirlib.display import report
from mimirlib.experiments import main_results as exp
from mimirlib.experiments import main_scores as ms
from mimirlib.verdicts import INCONCLUSIVE, NOT_TESTED, OUTCOMES
from mimirlib.verdicts import main_results as rules

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "main_results.py"

N = 40  # members (and non-members) per domain
N_NE = 10  # texts per side the neighbourhood attack scores
ATTACKS = ["loss", "ref", "ne"]
MAIN_REF = "ref:disjoint"


def frame(rng, shifts: dict) -> pd.DataFrame:
    """A score_benchmark-like frame: members shifted by ``shifts[attack]``; ne on the first N_NE per side."""
    cols = {"is_member": [True] * N + [False] * N}
    for attack, shift in shifts.items():
        col = MAIN_REF if attack == "ref" else attack
        cols[col] = np.concatenate([rng.normal(shift, 1, N), rng.normal(0, 1, N)])
    df = pd.DataFrame(cols)
    ne = df.pop("ne") if "ne" in df else None
    out = ms.indexed(df)
    if ne is not None:
        keep = np.r_[0:N_NE, N : N + N_NE]
        sub = ms.indexed(pd.DataFrame({"is_member": df.is_member.iloc[keep], "ne": ne.iloc[keep]}))
        out = out.join(sub["ne"])
    return out


def make_run(models: dict, domains=("code", "math"), targets=None, natural=None, seed=0) -> ms.MainRun:
    """``models``: label -> (base label, seed index, params, {attack: member shift}); same shifts per domain."""
    rng = np.random.default_rng(seed)
    scores, rows, replicates = {}, [], {}
    for label, (base, i, params, shifts) in models.items():
        replicates.setdefault(base, []).append(label)
        for d in domains:
            f = frame(rng, shifts)
            scores[(label, d)] = f
            ev = ms.evaluate_columns(f, n_bootstrap=50, seed=0)
            rows.append(ev.assign(target=label, base=base, seed_index=i, domain=d, params=params))
    results = pd.concat(rows, ignore_index=True)
    targets = targets or [b for b in replicates if b not in (natural or ())[1:]]
    return ms.MainRun(
        results,
        scores,
        list(targets),
        natural,
        replicates,
        MAIN_REF,
        ATTACKS,
        n_bootstrap=200,
        seed=0,
        scale={
            "params": 2_000_000,
            "pythia_ratio": exp.PYTHIA_LARGEST_PARAMS / 2e6,
            "tokens_seen": 7_260_000,
            "natural_fraction": 0.1,
        },
    )


def lab_like(largest_replicated=True):
    """small (3 seeds), big (3 seeds, or 1), and a natural twin of big (3 seeds)."""
    m = {}
    for i in range(3):
        m["small" + (f"-seed{i}" if i else "")] = ("small", i, 1_000_000, {"loss": 0.2, "ref": 0.5, "ne": 0.2})
        if largest_replicated or i == 0:
            m["big" + (f"-seed{i}" if i else "")] = ("big", i, 2_000_000, {"loss": 0.6, "ref": 1.0, "ne": 0.5})
        m["nat" + (f"-seed{i}" if i else "")] = ("nat", i, 2_000_000, {"loss": 1.0, "ref": 1.5, "ne": 0.8})
    return make_run(m, targets=["small", "big"], natural=("big", "nat"))


@pytest.fixture(scope="module")
def run():
    return lab_like()


def test_indexed_pairs_texts_by_side_and_position():
    df = pd.DataFrame({"is_member": [True, True, False, False, False], "loss": [1, 2, 3, 4, 5]})
    out = ms.indexed(df)
    assert list(out.index) == [(True, 0), (True, 1), (False, 0), (False, 1), (False, 2)]
    assert list(out.columns) == ["loss"]


def test_evaluate_columns_scores_ne_on_its_subset_only(run):
    r = run.results[(run.results.target == "big") & (run.results.domain == "code")].set_index("attack")
    assert r.loc["ne", "n_members"] == N_NE and r.loc["loss", "n_members"] == N


def test_tpr_table_gives_the_fpr_floor_per_attack(run):
    tpr, floor = exp.tpr_table(run)
    assert floor.loc["code", "ne"] == pytest.approx(1 / N_NE, abs=1e-4)
    assert floor.loc["code", "loss"] == pytest.approx(1 / N, abs=1e-4)
    assert list(tpr.columns)[-1] == "n (members / non-members)"  # the sample size beside the TPRs
    assert set(tpr.columns[:-1]) == {"loss", "ref", "ne"} and len(tpr) == 4  # 2 domains x 2 targets, seed 0 only
    assert tpr.loc[("code", "big"), "n (members / non-members)"].endswith(f"(ne: {N_NE} / {N_NE})")


def test_shown_renames_the_main_reference_and_keeps_seed_zero_of_the_targets(run):
    s = exp.shown(run)
    assert set(s.attack) == {"loss", "ref", "ne"} and set(s.target) == {"small", "big"}


def test_paired_difference_is_the_auc_difference_on_shared_texts(run):
    d = ms.paired(run, "code", ("big", "ref"), ("big", "ne"))
    f = run.scores[("big", "code")].dropna()
    m = f.index.get_level_values("is_member")
    want = metrics.auc(f[MAIN_REF][m], f[MAIN_REF][~m]) - metrics.auc(f["ne"][m], f["ne"][~m])
    assert d.point == pytest.approx(want) and d.n_members == N_NE
    same = ms.paired(run, "code", ("big", "loss"), ("big", "loss"))
    assert same.point == 0 and same.lo == 0 and same.hi == 0


def test_size_effects_seed_sd_is_measured_seed_by_seed_when_both_sizes_have_replicates(run):
    e = ms.size_effects(run).set_index(["domain", "attack"]).loc[("code", "loss")]
    diffs = [
        ms.point_difference(run, "code", (b, "loss"), (s, "loss"))
        for b, s in zip(run.replicates["big"], run.replicates["small"])
    ]
    assert e.seed_sd_from == "measured" and e.n_seeds == 3
    assert e.seed_sd == pytest.approx(np.std(diffs, ddof=1))
    assert e.estimate > 0  # the bigger model's members are shifted more


def test_effects_of_replicated_models_are_the_mean_over_their_seeds(run):
    e = ms.size_effects(run).set_index(["domain", "attack"]).loc[("code", "loss")]
    diffs = [
        ms.point_difference(run, "code", (b, "loss"), (s, "loss"))
        for b, s in zip(run.replicates["big"], run.replicates["small"])
    ]
    assert e.averaged == 3 and e.estimate == pytest.approx(np.mean(diffs))
    best = ms.best_attack_effects(run).set_index(["domain", "attack"]).loc[("code", "loss")]
    per_seed = [ms.point_difference(run, "code", (r, "ref"), (r, "loss")) for r in run.replicates["big"]]
    assert best.averaged == 3 and best.estimate == pytest.approx(np.mean(per_seed))
    ne = ms.best_attack_effects(run).set_index(["domain", "attack"]).loc[("code", "ne")]
    assert ne.averaged == 3 and ne.n_members == N_NE  # the mean on the texts every seed scored


def test_an_effect_with_an_unreplicated_model_is_seed_zeros_alone():
    r = lab_like(largest_replicated=False)
    e = ms.size_effects(r).set_index(["domain", "attack"]).loc[("code", "loss")]
    assert e.averaged == 1
    assert e.estimate == pytest.approx(ms.point_difference(r, "code", ("big", "loss"), ("small", "loss")))


def test_size_effects_seed_sd_is_estimated_for_a_size_without_replicates():
    r = lab_like(largest_replicated=False)
    e = ms.size_effects(r).set_index(["domain", "attack"]).loc[("code", "loss")]
    small_sd = ms.auc_seed_sd(r, "small", "code", "loss")
    big_sd = ms.auc_seed_sd(r, "big", "code", "loss")
    assert small_sd[2] == "measured" and big_sd[2] == "estimated"
    assert big_sd[0] == pytest.approx(small_sd[0])  # the only replicated one-epoch size is the estimate
    assert e.seed_sd_from == "estimated" and e.seed_sd == pytest.approx(np.hypot(small_sd[0], big_sd[0]))
    assert e.seed_sd_imputed_for == "big"  # the model whose seed sd is imputed, by name


def test_measured_seed_sd_names_no_imputed_model(run):
    assert set(ms.size_effects(run).seed_sd_imputed_for) == {""}


def test_verdicts_name_the_units_whose_seed_sd_is_imputed(run):
    v = exp.verdicts(lab_like(largest_replicated=False))
    for i in (1, 2, 3, 4, 5):  # big (one seed) is in every comparison: its seed sd is imputed
        assert "seed sd imputed (big without seed replicates) for all" in v[i].n
    assert all("seed sd measured for all" in x.n for x in exp.verdicts(run)[1:])


def test_best_attack_effects_seed_sd_is_pooled_from_replicated_sizes():
    r = lab_like(largest_replicated=False)
    e = ms.best_attack_effects(r).set_index(["domain", "attack"])
    assert set(e.index.get_level_values("attack")) == {"loss", "ne"}
    sd, _, source = ms.attacks_seed_sd(r, "code", "small", "ref", "loss")
    assert e.loc[("code", "loss"), "seed_sd_from"] == "estimated"
    assert e.loc[("code", "loss"), "seed_sd"] == pytest.approx(sd) and source == "measured"
    assert e.loc[("code", "ne"), "n_members"] == N_NE  # ref vs ne on the texts both scored


def test_dedup_effects_are_natural_minus_dedup(run):
    e = ms.dedup_effects(run)
    assert len(e) == 6 and (e.estimate > 0).mean() > 0.5
    assert set(e.a.str.split(":").str[0]) == {"nat"} and set(e.b.str.split(":").str[0]) == {"big"}
    t = exp.dedup_table(run)
    assert {"big, seed 0", "nat, seed 0", "natural - dedup", "seeds averaged", "seed sd"} <= set(t.columns)
    # the difference is the seed mean the verdicts read, so it need not be the first seed's AUCs' difference
    assert (t["seeds averaged"] == e.set_index(["domain", "attack"]).averaged).all()
    n = report.n_column(["n_members", "n_nonmembers"])
    assert t.loc[("code", "loss"), n] == f"{N} / {N}" and t.loc[("code", "ne"), n] == f"{N_NE} / {N_NE}"


def test_effects_are_computed_once_per_run(run):
    a = ms.size_effects(run)
    a.loc[:, "estimate"] = 99.0  # callers get a copy
    assert (ms.size_effects(run).estimate != 99.0).all()


def test_seed_spread_shows_seed_sd_beside_bootstrap_and_paired_half_widths(run):
    s = exp.seed_spread(run)
    assert {
        "seed sd small",
        "seed sd big",
        "seed sd nat",
        "seed sd (pooled)",
        "bootstrap half-width",
        "paired half-width (size)",
    } <= set(s.columns)
    assert s.loc[("code", "loss"), "seed sd small"] == pytest.approx(
        ms.auc_seed_sd(run, "small", "code", "loss")[0], abs=1e-4
    )
    assert (s["bootstrap half-width"] > 0).all()
    n = report.n_column(["n_members", "n_nonmembers"])
    assert s.loc[("code", "loss"), n] == f"{N} / {N}" and s.loc[("code", "ne"), n] == f"{N_NE} / {N_NE}"


def test_seed_spread_is_empty_without_replicates():
    r = make_run(
        {"a": ("a", 0, 1, {"loss": 0.3, "ref": 0.3, "ne": 0.3}), "b": ("b", 0, 2, {"loss": 0.5, "ref": 0.5, "ne": 0.5})}
    )
    assert exp.seed_spread(r).empty
    e = ms.size_effects(r)
    assert e.seed_sd.isna().all() and set(e.seed_sd_from) == {"none"}
    assert exp.prose_numbers(r)["seed_sd_median"] == "n/a"


def test_verdicts_are_six_complete_records_in_prose_order(run):
    v = exp.verdicts(run)
    assert [x.key for x in v] == [
        "mimir-3.1-near-random",
        "mimir-3.1-size-ref",
        "mimir-3.1-size-others",
        "mimir-3.1-dedup-ref",
        "mimir-3.1-dedup-others",
        "mimir-3.1-best-attack",
    ]
    assert all(x.verdict in OUTCOMES and x.n and x.paper_value for x in v)


def test_near_random_reports_the_neighbourhood_subset_beside(run):
    v = exp.verdicts(run)[0]
    assert v.n.startswith("4 AUCs of big")  # 2 domains x (loss, ref) on every text
    assert f"Beside, not tallied (ne, on {N_NE} + {N_NE} texts per domain" in v.evidence
    p = exp.prose_numbers(run)
    assert p["n_near_random_units"] == "4" and p["n_members"] == str(N)  # the full benchmarks, not ne's subset
    s = exp.shown(run)
    units = s[(s.target == "big") & (s.attack != "ne")]
    assert p["frac_below_06"] == f"{100 * (units.auc_hi < 0.6).mean():.0f}"


def test_verdicts_not_tested_with_one_size_and_no_twin():
    r = make_run({"only": ("only", 0, 1, {"loss": 0.0, "ref": 0.0, "ne": 0.0})})
    v = exp.verdicts(r)
    assert [x.verdict for x in v[1:5]] == [NOT_TESTED] * 4
    assert v[5].verdict == INCONCLUSIVE  # no signal at all: every attack difference is noise


def test_prose_numbers_compute_the_scale_from_the_run(run):
    p = exp.prose_numbers(run)
    assert p["pythia_ratio"] == "6,000" and p["tokens_seen_m"] == "7.26" and p["natural_fraction"] == "10"
    assert p["largest"] == "big" and p["seed_setup"].startswith("3 trained seeds each of small, big, nat")


def test_seed_setup_names_each_count_of_seeds():
    reps = {"a": ["a", "a1", "a2"], "b": ["b"], "c": ["c", "c1", "c2", "c3", "c4"], "d": ["d", "d1", "d2"]}
    assert exp.seed_setup(reps) == "3 trained seeds each of a, d and 5 of c"
    assert exp.seed_setup({"b": ["b"]}).startswith("one trained seed of each model")


def chapter_params(**changes):
    """The chapter's parameters: its cell's defaults under the smoke profile, with ``changes``."""
    from mimirlib.runner import notebook_parameters, resolve_params

    cell = {k: v["default"] for k, v in notebook_parameters(NOTEBOOK).items()}
    return exp.Params(cell | resolve_params("main_results", "smoke")).replace(**changes)


def test_run_on_the_smoke_lab_scores_targets_twin_and_replicates():
    p = chapter_params(
        domains=["code"], attacks=["loss", "ref", "ne"], n_samples=5, ne_samples=3, n_bootstrap=20, batch_size=8
    )
    r = exp.run(p)
    assert r.targets == ["target-h16", "target-h32"] and r.natural == ("target-h32", "target-h32-natural")
    assert r.replicates["target-h16"] == ["target-h16", "target-h16-seed1", "target-h16-seed2"]
    assert len(r.scores) == 9  # 2 targets + twin, 3 seeds each, one domain
    assert ms.size_effects(r).seed_sd_from.eq("measured").all()
    assert r.scale["tokens_seen"] == r.suite.lab.manifest["models"]["target-h32"]["tokens_seen"]
    assert r.suite.domains == ["code"] and r.after_plan.attacks == p.after_attacks  # planned before scoring


def test_suite_replicates_are_the_labs_seed_replicates_and_empty_for_real_models(tmp_path):
    from mimirlib.experiments.suite import Suite, resolve_suite

    suite = resolve_suite("smoke")
    reps = suite.replicates(suite.targets[0])
    assert [p.rsplit("/", 1)[-1] for p in reps] == ["target-h16-seed1", "target-h16-seed2"]
    assert suite.replicates(str(suite.lab.model_dir("ref-disjoint-h32"))) == []
    assert Suite(["EleutherAI/pythia-160m"], {}, ["code"], str(tmp_path)).replicates("EleutherAI/pythia-160m") == []


def test_verdicts_say_their_effects_are_seed_means(run):
    v = exp.verdicts(run)
    for i in (1, 2, 3, 4, 5):  # size, dedup and best attack: every model replicated
        assert "effects are the mean of 3 seeds" in v[i].n and rules.AVERAGED_NOTE in v[i].rule
    one = exp.verdicts(lab_like(largest_replicated=False))
    assert not any("mean of 3 seeds" in x.n for x in one[1:3])  # big has one seed: seed 0's effects
