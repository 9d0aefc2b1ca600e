"""The fidelity rules (mimirlib.verdicts.regime), the out-of-regime verdict, and the lab page's table."""

import pytest

from mimirlib.book import fidelity
from mimirlib.verdicts import NOT_TESTED, Claim
from mimirlib.verdicts import regime


def test_power_row_on_both_sides_of_the_half_width_bar():
    assert regime.power("code", 150, 150, 0.05, "size effect").in_regime is False
    ok = regime.power("code", 1000, 1000, 0.02, "size effect")
    assert ok.in_regime is True and ok.key == "power-code" and "1000 + 1000 texts" in ok.lab_value
    assert regime.power("code", 10, 10, float("nan"), "x").in_regime is None


def test_overlap_row_on_both_sides_of_thirty_percent():
    assert regime.overlap("licenses", 0.30, 0.1).in_regime is True
    low = regime.overlap("code", 0.027, 0.0, "GitHub")
    assert low.in_regime is False and "2.7%" in low.lab_value and "32.5-76.9%" in low.paper_value


def test_neighbour_row_needs_the_paired_interval_above_zero():
    assert regime.neighbours("masked LM", 0.947, 0.940, -0.001, 0.015, 36).in_regime is False
    assert regime.neighbours("masked LM", 0.97, 0.94, 0.02, 0.04, 36).in_regime is True


def test_centre_row_is_out_of_regime_when_saturated():
    assert regime.centre("RMIA", 0.979, 0.55).in_regime is False
    assert regime.centre("RMIA", 0.62, 0.10).in_regime is True
    assert regime.centre("RMIA", 0.62, 0.101).in_regime is False


def test_centre_row_reads_the_tpr_with_its_exact_interval_over_the_in_ranges():
    # 4 of 120: [0.9%, 8.3%], below 10%; 24 of 120: [13.3%, 28.3%], above; 9 of 120: [3.5%, 13.8%], straddles
    inside = regime.centre("RMIA", 0.82, 4 / 120, 120, 120)
    assert inside.in_regime is True and "[0.9%, 8.3%] (4 of 120 IN ranges)" in inside.lab_value
    assert regime.centre("RMIA", 0.73, 24 / 120, 120, 120).in_regime is False
    assert regime.centre("RMIA", 0.75, 9 / 120, 120, 120).in_regime is None  # the point 7.5% alone would say in
    assert regime.centre("RMIA", 0.75, 9 / 120, 120).in_regime is True
    assert regime.centre("RMIA", 0.75, 24 / 120, 60, 120).in_regime is None  # too few OUT ranges wins


def test_centre_row_cannot_tell_with_fewer_out_ranges_than_a_1pct_fpr_needs():
    # 60 OUT ranges: the "1% FPR" threshold sits above every OUT score; neither 15% nor 0% is a reading
    few = regime.centre("RMIA", 0.74, 0.15, 60)
    assert few.in_regime is None and "read above all 60 OUT scores" in few.lab_value
    assert regime.centre("RMIA", 0.979, 0.55, 99).in_regime is None
    assert regime.centre("RMIA", 0.979, 0.55, 100).in_regime is False
    assert (
        regime.centre("RMIA", 0.62, 0.05, 100).in_regime is True
        and "OUT scores" not in regime.centre("RMIA", 0.62, 0.05, 100).lab_value
    )


def test_shift_row_needs_the_blind_interval_above_chance():
    assert regime.shift("temporal_2020", 0.99, 0.97, 1.0).in_regime is True
    assert regime.shift("temporal_2020", 0.55, 0.49, 0.61).in_regime is False


def test_upsampled_share_row_is_silos_under_five_percent_before_upsampling():
    row = regime.upsampled_share("changelog", 0.024, 0.065, 3)  # the lab's run: 60 of 2,520 documents, 3x
    assert row.in_regime is True and row.key == "upsampled-changelog"
    assert "2.4% of the documents before 3x upsampling, 6.5% after" in row.lab_value and "5.9%" in row.paper_value
    assert regime.upsampled_share("math", 0.05, 0.136, 3).in_regime is False  # 5% is not "less than 5%"


def test_a_claim_out_of_regime_is_not_tested_and_says_why():
    claim = Claim("Non-members overlap", key="k")
    rows = [regime.overlap("licenses", 0.33, 0.1), regime.overlap("code", 0.03, 0.0)]
    v = claim.out_of_regime(rows, lab_value="-", n="6 domains")
    assert v.verdict == NOT_TESTED and v.regime == "overlap-licenses,overlap-code"
    assert v.evidence.startswith("not tested: natural non-member n-gram overlap in code: the lab's mean 7-gram")
    assert "lab.html#regime-overlap-code" in v.as_row()["lab's regime"]
    assert claim.out_of_regime(rows[:1]) is None


def test_the_fidelity_table_gathers_the_chapters_rows(tmp_path):
    import IPython.core.formatters as fmt
    import nbformat

    def executed(stem, rows):
        bundle, _ = fmt.format_display_data(regime.to_json(rows, stem))
        data = {"application/papermill.record/" + k: v for k, v in bundle.items()}
        meta = {"scrapbook": {"name": regime.GLUE_NAME, "mime_prefix": "application/papermill.record/"}}
        out = nbformat.v4.new_output("display_data", data=data, metadata=meta)
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x", outputs=[out])])
        nbformat.write(nb, tmp_path / f"{stem}.ipynb")

    executed("lab", [regime.overlap("code", 0.03, 0.0), regime.overlap("licenses", 0.33, 0.1)])
    executed("ramia", [regime.centre("RMIA", 0.979, 0.55)])
    text = fidelity.write_table(tmp_path, ["lab", "main_results", "ramia"]).read_text()
    assert text.startswith("3 properties measured by the chapters' runs; 2 out of the paper's regime.")
    assert text.count('<span id="regime-') == 3 and '<span id="regime-centre-rmia"></span>' in text
    assert "{ref}`ramia <verdicts-ramia>`" in text and "| **no** (in regime when" in text
    # the table says which rows bar a verdict: main results' power rows read "no" beside decided verdicts
    assert fidelity.READING in text and "A verdict that rests on a row marked *no* is *not tested*" not in text
    assert fidelity.render(fidelity.collect(tmp_path, [])).startswith("No chapter has published")


def test_generalisation_reads_the_replicates_mean_with_its_t_interval():
    # 0.86, 0.88, 0.90: mean 0.88, sd 0.02, half-width t(0.975, 2) 0.02 / sqrt(3) = 4.303 * 0.011547 = 0.0497
    row = regime.generalisation("images", "CIFAR-10", [0.86, 0.88, 0.90], 1697)
    assert row.in_regime is None and "88.0% [83.0%, 93.0%]" in row.lab_value and "range 86.0%-90.0%" in row.lab_value
    assert "83%" in row.paper_value and row.key == "generalisation-images"
    assert regime.generalisation("tables", "Purchase-100", [0.85, 0.86, 0.87], 1697).in_regime is True
    assert regime.generalisation("tables", "Purchase-100", [0.94, 0.95, 0.96], 1697).in_regime is False
    # two far-apart replicates: the t interval (12.7 sd / sqrt 2) is clipped to the shares [0, 1]
    wide = regime.generalisation("tables", "Purchase-100", [0.2, 0.5], 1697)
    assert wide.in_regime is None and "35.0% [0.0%, 100.0%]" in wide.lab_value
    # the bar itself: an interval ending at 90% is in
    assert regime.generalisation("tables", "Purchase-100", [0.90, 0.90], 1697).in_regime is True


def test_generalisation_of_one_target_reads_the_exact_interval_over_its_rows():
    # 880 of 1,000 rows: Clopper-Pearson [85.8%, 89.9%], at or below 90%; 900 of 1,000: [87.9%, 91.8%] straddles
    assert regime.generalisation("images", "CIFAR-10", [0.88], 1000).in_regime is True
    assert regime.generalisation("images", "CIFAR-10", [0.90], 1000).in_regime is None
    assert "one target" in regime.generalisation("images", "CIFAR-10", [0.88], 1000).lab_value
    with pytest.raises(ValueError, match="accuracies"):
        regime.generalisation("images", "CIFAR-10", [], 1000)
