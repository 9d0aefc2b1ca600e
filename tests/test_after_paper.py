"""The main-results chapter's second table (attacks after the paper): the plan (where the ReCaLL prefix
and the DC-PDD corpus come from, never from a benchmark), the tables and costs on a synthetic run,
the rules that read them, and one scoring pass on the smoke lab."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mimirlib.experiments import after_paper as exp
from mimirlib.experiments.main_scores import evaluate_columns, indexed
from mimirlib.experiments.params import Params
from mimirlib.verdicts import main_results as rules

N = 40


# ----------------------------------------------------------------------------- rules


def test_versus_loss_reads_the_paired_interval():
    assert rules.versus_loss(0.01, 0.05) == rules.ABOVE
    assert rules.versus_loss(-0.05, -0.01) == rules.BELOW
    assert rules.versus_loss(-0.01, 0.05) == rules.WITHIN
    assert rules.versus_loss(0.0, 0.05) == rules.WITHIN  # touching zero is not clear


def test_worth_its_cost_names_the_domains_where_it_is_clearly_above_loss():
    r = pd.Series({"code": rules.ABOVE, "math": rules.WITHIN, "docs": rules.ABOVE})
    assert rules.worth_its_cost(r) == "only in code, docs (2 of 3 domains), where it is clearly above LOSS"
    none = rules.worth_its_cost(pd.Series({"code": rules.WITHIN, "math": rules.BELOW}))
    assert none.startswith("nowhere in this run") and "2 domains" in none


# ----------------------------------------------------------------------------- tables on a synthetic run


def synthetic_after(shift_grad=1.0, computed=10) -> exp.AfterPaperRun:
    rng = np.random.default_rng(0)
    plan = exp.AfterPaperPlan(["recall", "grad_norm"], {"dc_pdd": "needs a corpus"}, {}, None, "a file", "none given")
    scores, rows, costs = {}, [], []
    for target, scale in (("small", 0.5), ("big", 1.0)):
        for domain in ("code", "math"):
            cols = {"is_member": [True] * N + [False] * N}
            for attack, shift in (("loss", 0.3), ("recall", 0.3), ("grad_norm", shift_grad)):
                cols[attack] = np.concatenate([rng.normal(shift * scale, 1, N), rng.normal(0, 1, N)])
            frame = indexed(pd.DataFrame(cols))
            scores[(target, domain)] = frame
            rows.append(evaluate_columns(frame, n_bootstrap=50, seed=0).assign(target=target, domain=domain))
            for attack, sec in (("recall", 0.2), ("grad_norm", 2.0 * scale)):
                costs.append(
                    {
                        "attack": attack,
                        "texts": 2 * N,
                        "computed": computed,
                        "seconds": sec,
                        "target": target,
                        "domain": domain,
                        "what": attack,
                    }
                )
    return exp.AfterPaperRun(
        plan, pd.concat(rows, ignore_index=True), scores, pd.DataFrame(costs), ["small", "big"], n_bootstrap=200
    )


def test_after_paper_table_shows_loss_beside_each_attack_with_intervals():
    t = exp.table(synthetic_after())
    assert list(t.columns)[:3] == ["loss", "recall", "grad_norm"]
    assert sorted(t.index) == [("code", "big"), ("code", "small"), ("math", "big"), ("math", "small")]
    assert all("[" in c for c in t[["loss", "recall", "grad_norm"]].to_numpy().ravel())


def test_versus_loss_on_the_largest_target_reads_each_domain():
    vs = exp.vs_loss(synthetic_after(shift_grad=2.0))
    assert sorted(zip(vs.domain, vs.attack)) == [
        ("code", "grad_norm"),
        ("code", "recall"),
        ("math", "grad_norm"),
        ("math", "recall"),
    ]
    g = vs[vs.attack == "grad_norm"]
    assert (g.reading == rules.ABOVE).all() and (g.lo > 0).all()
    assert set(vs[vs.attack == "recall"].reading) <= {rules.WITHIN, rules.ABOVE, rules.BELOW}


def test_costs_are_ms_per_computed_text_per_target():
    c = exp.cost_table(synthetic_after())
    # grad_norm on big: 2 domains x 2.0 s over 2 x 10 texts = 200 ms; on small 100 ms
    assert c.loc["grad_norm", "ms per text, big"] == pytest.approx(200.0)
    assert c.loc["grad_norm", "ms per text, small"] == pytest.approx(100.0)
    assert c.loc["recall", "seconds"] == pytest.approx(0.8) and c.loc["recall", "computed"] == 40
    cached = exp.cost_table(synthetic_after(computed=0))
    assert cached["ms per text, big"].isna().all()  # nothing computed: no cost to show


def test_prose_numbers_say_what_ran_and_what_it_cost():
    p = exp.prose_numbers(synthetic_after(shift_grad=2.0))
    assert p["after_recall_ms"] == "20.0 ms per text (20 texts)"  # 2 x 0.2 s over 2 x 10 texts
    assert p["after_grad_norm_ms"] == "200.0 ms per text (20 texts)"
    assert p["after_dc_pdd_ms"] == "not run (needs a corpus)"
    assert p["after_seconds"] == "7"  # 4 x 0.2 + 2 x (1.0 + 2.0)
    assert p["grad_norm_worth"].startswith("only in code, math")
    assert exp.prose_numbers(synthetic_after(computed=0))["after_recall_ms"] == "read from the cache (no pass)"


# ----------------------------------------------------------------------------- the plan and the smoke lab

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "main_results.py"


def chapter_params(**changes):
    """The main-results chapter's parameters: its cell's defaults under the smoke profile, with ``changes``."""
    from mimirlib.runner import notebook_parameters, resolve_params

    cell = {k: v["default"] for k, v in notebook_parameters(NOTEBOOK).items()}
    return Params(cell | resolve_params("main_results", "smoke")).replace(**changes)


@pytest.fixture(scope="module")
def suite():
    from mimirlib.experiments.suite import resolve_suite

    return resolve_suite("smoke", domains=["code", "math"])


def plan(suite, attacks, shots=2, **changes):
    return exp.make_plan(suite, chapter_params(after_attacks=attacks, recall_shots=shots, **changes))


def test_the_lab_prefix_and_corpus_are_its_reference_pool_never_a_benchmark_text(suite):
    plan_ = plan(suite, ["recall", "dc_pdd", "grad_norm"])
    assert plan_.attacks == ["recall", "dc_pdd", "grad_norm"] and plan_.skipped == {}
    evaluated = set()
    for domain in suite.lab.config["domains"]:
        for split in ("ngram_13_0.8",):
            evaluated |= {t.strip() for t in suite.benchmark(domain, split).texts()}
    for domain in suite.domains:
        assert plan_.prefix[domain] == suite.lab.pool_texts("reference", [domain])[:2]
        assert not {t.strip() for t in plan_.prefix[domain]} & evaluated
    assert plan_.corpus == suite.lab.pool_texts("reference")
    assert not {t.strip() for t in plan_.corpus} & evaluated


def test_plan_names_bad_attacks_and_skips_what_lacks_its_input(suite, tmp_path):
    with pytest.raises(KeyError, match="nope"):
        plan(suite, ["nope"])
    with pytest.raises(ValueError, match="'loss' is one of the paper's"):
        plan(suite, ["loss"])
    with pytest.raises(ValueError, match="recall_shots"):
        plan(suite, ["recall"], shots=0)
    from mimirlib.experiments.suite import Suite

    real = Suite(["org/model"], {}, ["code"], str(tmp_path))
    plan_ = plan(real, ["recall", "dc_pdd", "grad_norm"])
    assert plan_.attacks == ["grad_norm"] and set(plan_.skipped) == {"recall", "dc_pdd"}
    f = tmp_path / "prefix.jsonl"
    f.write_text('{"text": "a known non-member text"}\n{"text": "another one"}\n{"text": "a third"}\n')
    plan_ = plan(real, ["recall", "dc_pdd"], recall_prefix_file=str(f), frequency_corpus_file=str(f))
    assert plan_.attacks == ["recall", "dc_pdd"] and plan_.prefix["code"] == ["a known non-member text", "another one"]
    assert len(plan_.corpus) == 3


def test_after_paper_on_the_smoke_lab(suite):
    p = chapter_params(after_samples=4, n_bootstrap=20, batch_size=8, recall_shots=2)
    after = exp.run(suite, exp.make_plan(suite, p), p)
    assert after.targets == ["target-h16", "target-h32"] and len(after.scores) == 4
    assert set(after.results.attack) == {"loss", "recall", "dc_pdd", "grad_norm"}
    assert after.results.n_members.eq(4).all()
    assert set(after.costs.attack) == {"recall", "dc_pdd", "grad_norm"}
    table = exp.table(after)
    assert len(table) == 4 and {"loss", "recall", "dc_pdd", "grad_norm"} <= set(table.columns)
    assert len(exp.vs_loss(after)) == 2 * 3
    assert set(exp.prose_numbers(after)) >= {"after_recall_ms", "after_seconds", "grad_norm_worth"}


def test_the_chapters_engine_reaches_the_attacks_after_the_paper(suite):
    p = chapter_params(after_samples=2, recall_shots=2, engine="nope")
    with pytest.raises(ValueError, match="unknown engine 'nope'"):
        exp.run(suite, exp.make_plan(suite, p), p)
