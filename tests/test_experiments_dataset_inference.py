"""The dataset-inference chapter: its draws, its summaries by hand, and its notebook on the smoke lab."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mimirlib.core import dataset_inference as di
from mimirlib.experiments import dataset_inference as exp

ROOT = Path(__file__).resolve().parents[1]


def test_sizes_for_keeps_what_the_pool_and_the_test_allow():
    assert exp.sizes_for([4, 8, 10, 50, 150], 75) == [8, 10, 50]


def test_null_draws_take_disjoint_texts_from_one_pool(monkeypatch):
    seen = []
    monkeypatch.setattr(di, "infer", lambda s, v, **kw: seen.append((s[:, 0].copy(), v[:, 0].copy())) or "ok")
    pool = np.arange(30.0).reshape(-1, 1)
    out = exp.draw_tests(pool, None, 10, 5, np.random.default_rng(0))
    assert out == ["ok"] * 5
    for s, v in seen:
        assert len(s) == len(v) == 10 and not set(s) & set(v)
    seen.clear()
    exp.draw_tests(pool, pool + 100, 10, 2, np.random.default_rng(0))
    assert all((s < 100).all() and (v >= 100).all() for s, v in seen)


def test_flag_rates_count_and_bound_by_hand():
    tests = pd.DataFrame({"scenario": ["iid"] * 4, "n": [10] * 4, "p": [0.01, 0.5, 0.09, 0.2], "p_first": [0.01] * 4})
    r = exp.flag_rates(tests, ["scenario"]).iloc[0]
    assert r.draws == 4 and r.flagged == 2 and r.share == 0.5 and r.flagged_first == 4
    assert 0.06 < r.share_lo < 0.07 and 0.93 < r.share_hi < 0.94  # Clopper-Pearson, 2 of 4
    assert r.share_first_hi == 1.0


def test_feature_spec_names_the_unknown_and_needs_a_reference_for_ref():
    assert "ref" not in di.feature_spec(None, has_reference=False)
    assert list(di.feature_spec(["loss", "ref"], has_reference=True)) == ["loss", "ref"]
    with pytest.raises(ValueError, match=r"features: unknown \['max_k'\]"):
        di.feature_spec(["max_k"], has_reference=True)
    with pytest.raises(ValueError, match="'ref' needs a reference model"):
        di.feature_spec(["ref"], has_reference=False)


@pytest.mark.slow
def test_notebook_executes_on_the_smoke_profile(tmp_path):
    import nbformat

    from mimirlib.runner import run_notebook

    out = run_notebook("dataset_inference", profile="smoke", notebooks_dir=ROOT / "notebooks", out_dir=tmp_path)
    nb = nbformat.read(out, as_version=4)
    assert not any(o.output_type == "error" for c in nb.cells for o in c.get("outputs", []))
    text = str(nb)
    for key in ("di-separates", "di-no-false-positives", "di-shift-false-positives"):
        assert key in text, key
    assert "signal cache" in text and "flagged (Eq. 2)" in text


def _sizes(smallest, last_shares):
    col = "smallest n (p < 0.1 in >= 90% of draws)"
    return pd.DataFrame(
        {col: smallest, "largest n tried": 150, "share flagged there": last_shares}, index=["h32", "h256"]
    )


def test_the_power_prose_says_when_no_target_reaches_the_bar():
    # the page read "the smallest set flagged in 90% of draws is no size up to 150 ... That is the idea of
    # dataset inference: ... can become a strong set-level one" with 29-66% flagged at 150
    none = _sizes([np.nan, np.nan], [0.29, 0.66])
    text = exp.power_reading(none, pd.Series({"h32": 0.12, "h256": 0.2}))
    assert text.startswith("No target reaches the bar") and "grows with the set's size on every target" in text
    assert "does not grow" in exp.power_reading(none, pd.Series({"h32": 0.3, "h256": 0.2}))
    some = exp.power_reading(_sizes([np.nan, 100], [0.5, 0.95]), pd.Series({"h32": 0.1, "h256": 0.2}))
    assert "1 of 2 targets reach the bar" in some
    assert exp.size_phrase(np.nan, 150, 0.66) == "no size up to 150 texts per side (at 150, 66% of draws flagged)"
    assert exp.size_phrase(100.0, 150, 0.95) == "100 texts per side"
