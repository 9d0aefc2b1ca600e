"""The cost model: forward passes counted from a profile's parameters, by hand on small
profiles, and the paper profile's totals against the issue's own arithmetic."""

import math

import pytest

from mimirlib.experiments import costs
from mimirlib.profiles import load_profile

P = costs.MIMIR_PAIRS
K = costs.MIMIR_NEIGHBOURS


@pytest.mark.parametrize(
    "name, want",
    [
        ("EleutherAI/pythia-160m-deduped", 160e6),
        ("EleutherAI/pythia-6.9b-deduped", 6.9e9),
        ("stabilityai/stablelm-base-alpha-3b-v2", 3e9),
        ("EleutherAI/pythia-12b", 12e9),
    ],
)
def test_model_params_from_the_name(name, want):
    assert costs.model_params(name) == pytest.approx(want)


def test_model_without_a_size_is_refused():
    with pytest.raises(ValueError, match="no size"):
        costs.model_params("gpt2")


def one(chapter, **params):
    return costs.profile_work({"notebooks": {chapter: params}})


def test_main_results_counts_by_hand():
    w = one("main_results", models=["a-1b", "b-2b"], reference_models=["r-3b"], domains=["x", "y"], split="s",
            attacks=["loss", "ref", "ne"], ne_samples=None)  # fmt: skip
    per = w.groupby("model").texts.sum()
    # each target: 2 domains x 2 sides x (1000 texts + 1000 x 25 neighbours); the reference: texts only
    assert per["a-1b"] == per["b-2b"] == 2 * 2 * (P + P * K)
    assert per["r-3b"] == 2 * 2 * P
    w = one("main_results", models=["a-1b"], reference_models=["r-3b"], domains=["x"], split="s",
            attacks=["loss", "zlib"], ne_samples=10)  # fmt: skip
    assert set(w.model) == {"a-1b"} and w.texts.sum() == 2 * P  # no ref attack, no ne: no extra pass


def test_shared_texts_are_counted_once():
    profile = {
        "notebooks": {
            "main_results": dict(models=["t-1b"], reference_models=[], domains=["x"], split="nat", attacks=["loss"]),
            "ngram_overlap": dict(
                models=["t-1b"], domains=["x"], natural_split="nat", low_overlap_split="low", attacks=["loss"]
            ),  # fmt: skip
            "temporal_shift": dict(
                models=["t-1b"], domain="x", natural_split="nat", shifted_config="tx", shifted_splits=["a", "b"]
            ),  # fmt: skip
        }
    }
    w = costs.profile_work(profile)
    by_chapter = w.groupby("chapter", sort=False).texts.sum()
    assert list(by_chapter) == [2 * P, 3 * P, 4 * P]
    # unique: x/nat members and non-members, x/low non-members, tx/a and tx/b non-members
    assert costs.unique_work(w).texts.sum() == 5 * P
    table = costs.model_table(w, tokens_per_text=100, utilisation=0.5)
    row = table.set_index("model").loc["t-1b"]
    assert row["forward passes"] == 5 * P
    assert row["FLOPs"] == pytest.approx(5 * P * 100 * 2 * 1e9)
    assert row["GPU-hours, A100 (bf16)"] == pytest.approx(row["FLOPs"] / (312e12 * 0.5) / 3600)
    assert table.set_index("model").loc["total", "FLOPs"] == pytest.approx(row["FLOPs"])


def test_modified_members_counts_by_hand():
    w = one("modified_members", models=["t-12b"], reference_models=["r-3b"], domains=["x"], members_per_domain=100,
            edits=[1, 10, 25], trials=20)  # fmt: skip
    per = w.groupby("model").texts.sum()
    assert per["t-12b"] == per["r-3b"] == 2 * P + 100 * 3 * 20 + 100 * K


def test_paper_profile_totals():
    """The issue's estimate: ~400,000 forward passes per model size for main results (8 domains
    x ~2,000 texts x 26 passes); the profile has 7 domains, so 7 x 2,000 x 26 = 364,000."""
    work = costs.profile_work(load_profile("paper"))
    chapters = costs.chapter_table(work)
    main = chapters[chapters.chapter == "main_results"].set_index("model")["forward passes"]
    assert main["EleutherAI/pythia-160m-deduped"] == 7 * 2 * P * (1 + K) == 364_000
    assert main["stabilityai/stablelm-base-alpha-3b-v2"] == 7 * 2 * P
    table = costs.model_table(work)
    total = table.set_index("model").loc["total"]
    assert total["forward passes"] == table["forward passes"].iloc[:-1].sum()
    # the unique total is below the sum of chapters run one by one (natural splits are shared)
    assert total["forward passes"] < chapters["forward passes"].sum()
    assert math.isfinite(total["GPU-hours, H100 SXM (bf16)"]) and total["GPU-hours, H100 SXM (bf16)"] > 0


def test_bad_inputs():
    with pytest.raises(ValueError, match="none of the chapters"):
        costs.profile_work({"notebooks": {"lab": {}}})
    with pytest.raises(ValueError, match="utilisation"):
        costs.gpu_hours(1e18, 1e15, 0)


def test_the_running_at_scale_page_glues_the_totals_as_the_cost_tables_give_them():
    from mimirlib.experiments import running_at_scale as page
    from mimirlib.core import bloom

    p = page.Params({"cost_profile": "paper", "tokens_per_text": 512, "utilisation": 0.4, "bloom_fpr": 0.01})
    run = page.run(p)
    work = costs.profile_work(load_profile("paper"))
    assert run.models.equals(costs.model_table(work, 512, 0.4)) and run.chapters.equals(
        costs.chapter_table(work, 512, 0.4)
    )
    total = run.models.set_index("model").loc["total"]
    n = page.prose_numbers(run)
    assert n["cost_passes"] == f"{int(total['forward passes']):,}" and n["cost_util"] == "40%"
    assert n["bloom_bytes"] == f"{bloom.bloom_bytes_per_ngram(0.01):.2f}" and n["bloom_fpr"] == "1%"
    half = costs.model_table(work, 512, 0.2).set_index("model").loc["total"]
    assert page.exercise_numbers(run)["ex_a100_half"] == f"{half['GPU-hours, A100 (bf16)']:,.0f}"
