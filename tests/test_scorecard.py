"""The scorecard page is built from the verdict records glued into executed chapters."""

import IPython.core.formatters as fmt
import nbformat
import pandas as pd
import pytest

from mimirlib.book import scorecard
from mimirlib.core import power
from mimirlib import verdicts
from mimirlib.verdicts import INCONCLUSIVE, REPRODUCED, Claim, Effect, Verdict, tally


def executed(path, records, chapter):
    """A minimal executed notebook whose one output is what ``verdicts.publish`` glues."""
    bundle, _ = fmt.format_display_data(verdicts.to_json(records, chapter, verdicts.section_label(chapter)))
    data = {"application/papermill.record/" + k: v for k, v in bundle.items()}
    out = nbformat.v4.new_output(
        "display_data",
        data=data,
        metadata={"scrapbook": {"name": verdicts.GLUE_NAME, "mime_prefix": "application/papermill.record/"}},
    )
    cell = nbformat.v4.new_code_cell("publish", outputs=[out])
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), path)


V1 = Verdict(
    "MIAs perform near random",
    REPRODUCED,
    "90% below 0.6",
    "r",
    source="MIMIR §3.1, Table 1",
    paper_value="AUC < 0.6",
    lab_value="0.55",
    n="150 + 150 x 6",
    key="a",
)
V2 = Verdict("A blind classifier | separates", INCONCLUSIVE, "e", "r", origin="book", key="b")


def test_records_of_reads_back_what_publish_glues(tmp_path):
    executed(tmp_path / "main_results.ipynb", [V1, V2], "main_results")
    recs = scorecard.records_of(tmp_path / "main_results.ipynb")
    assert [r["claim"] for r in recs] == [V1.claim, V2.claim]
    assert recs[0]["section"] == "verdicts-main-results"


def test_page_has_one_row_per_claim_linking_the_deciding_section(tmp_path):
    executed(tmp_path / "main_results.ipynb", [V1, V2], "main_results")
    executed(tmp_path / "epochs.ipynb", [V1], "epochs")
    page = scorecard.write_page(tmp_path, ["main_results", "training_size", "epochs"]).read_text()
    paper_part, book_part = page.split("## The book's own findings")
    assert paper_part.count("{ref}`main results <verdicts-main-results>`") == 1
    assert paper_part.count("{ref}`epochs <verdicts-epochs>`") == 1
    assert "A blind classifier \\| separates" in book_part  # escaped pipe, in the book's own part
    assert "Chapters in this build: main_results, epochs." in page
    assert "**The papers' claims** (2): 2 reproduced." in page
    assert "**The book's own findings** (1, not counted with the papers'): 1 inconclusive." in page
    assert page.count(":::{dropdown} reproduced: MIAs perform near random") == 2  # details a click away
    assert "- **n**: 150 + 150 x 6" in paper_part


def test_inconclusive_verdicts_are_counted_by_power_reading_with_their_mde(tmp_path):
    under = Verdict("c1", INCONCLUSIVE, "e", "r", key="u", paper_effect=0.043, mde=0.05, power="underpowered")
    small = Verdict("c2", INCONCLUSIVE, "e", "r", key="s", paper_effect=0.1, mde=0.03, power="smaller than the paper's")
    done = Verdict("c3", REPRODUCED, "e", "r", key="d", mde=0.02)
    executed(tmp_path / "main_results.ipynb", [under, small, done, V2], "main_results")
    df = scorecard.collect(tmp_path, ["main_results"])
    c = scorecard.counts(df)
    assert c.loc["paper", "inconclusive"] == 2 and c.loc["paper", "inconclusive: underpowered"] == 1
    assert c.loc["book", "inconclusive"] == 1 and c.loc["book", "inconclusive: underpowered"] == 0
    page = scorecard.render(df, ["main_results"])
    assert "1 reproduced, 2 inconclusive (1 underpowered, 1 smaller than the paper's)" in page
    assert "**inconclusive (underpowered)**<br>MDE 0.050 vs paper +0.043 |" in page  # the table's line stays short
    # its details say what would reach the paper's effect: (0.050 / 0.043)^2 = 1.35 times the texts
    assert "- **power**: MDE 0.050 vs paper +0.043; about 1.4x the texts behind each effect (the same seeds)" in page
    # a record paired over ranges says ranges; a record written before the field (no paired_over) reads texts
    ranged = Verdict(
        "c4", INCONCLUSIVE, "e", "r", key="g", paper_effect=0.043, mde=0.06, power="underpowered", paired_over="ranges"
    )
    executed(tmp_path / "ramia.ipynb", [ranged], "ramia")
    both = scorecard.collect(tmp_path, ["main_results", "ramia"])
    assert "about 1.9x the ranges behind each effect" in scorecard.render(both, ["main_results", "ramia"])
    old = both.assign(paired_over=None)
    assert "about 1.9x the texts behind each effect" in scorecard.render(old, ["main_results", "ramia"])
    assert "**reproduced**<br>MDE 0.020 vs no number in the paper" in page


def test_a_claim_read_against_the_books_smallest_effect_of_interest_says_so(tmp_path):
    neg = "smaller than the smallest effect of interest"
    v = Verdict("c", INCONCLUSIVE, "e", "r", key="n", effect_of_interest=0.01, mde=0.008, power=neg)
    executed(tmp_path / "ramia.ipynb", [v], "ramia")
    page = scorecard.render(scorecard.collect(tmp_path, ["ramia"]), ["ramia"])
    assert f"1 inconclusive (1 {neg})" in page
    assert "MDE 0.008 vs smallest effect of interest +0.010 (no number in the paper)" in page
    assert "paper +0.010" not in page


def test_page_without_chapters_says_so(tmp_path):
    page = scorecard.write_page(tmp_path, ["main_results"]).read_text()
    assert "Chapters in this build: none" in page and "No chapter with a paper claim has run." in page


@pytest.mark.parametrize("bad", ["", "partly"])
def test_unknown_outcome_never_reaches_a_record(bad):
    with pytest.raises(ValueError):
        Verdict("c", bad, "e", "r")


def test_compare_lists_moved_verdicts_first_and_claims_present_in_one_build_only():
    import pandas as pd

    old = pd.DataFrame(
        {"key": ["a", "b", "c"], "chapter": ["x"] * 3, "verdict": ["reproduced", "partly", "inconclusive"]}
        | {"lab_value": ["0.61", "0.55", "+0.01"]}
    )
    new = pd.DataFrame(
        {"key": ["a", "b", "d"], "chapter": ["x"] * 3, "verdict": ["reproduced", "not reproduced", "partly"]}
        | {"lab_value": ["0.62", "0.50", "0.7"]}
    )
    diff = scorecard.compare(old, new)
    assert diff.moved.tolist() == [True, True, True, False]
    assert set(diff.key[diff.moved]) == {"b", "c", "d"}
    row = diff.set_index("key").loc["b"]
    assert (row.verdict_old, row.verdict_new, row.lab_value_new) == ("partly", "not reproduced", "0.50")


def test_stability_counts_claims_decided_in_either_build_that_keep_their_verdict():
    import pandas as pd

    old = pd.DataFrame(
        {"key": list("abcdef"), "chapter": ["x"] * 6, "lab_value": [""] * 6}
        | {"verdict": ["reproduced", "partly reproduced", "inconclusive", "not tested", "not reproduced", "reproduced"]}
    )
    new = pd.DataFrame(
        {"key": list("abcdeg"), "chapter": ["x"] * 6, "lab_value": [""] * 6}
        | {"verdict": ["reproduced", "not reproduced", "reproduced", "not tested", "not reproduced", "reproduced"]}
    )
    # decided in either: a (same), b (flips), c (inconclusive -> reproduced), e (same), f and g (one build only)
    assert scorecard.stability(scorecard.compare(old, new)) == (2, 6)
    assert "2 of 6 verdicts decided in either build are the same in both (33%)" in scorecard.moves_text(
        scorecard.compare(old, new)
    )
    # b: partly -> not reproduced contradicts; c, f, g: decided in one build only
    assert scorecard.disagreements(scorecard.compare(old, new)) == {
        "opposite": 1,
        "decided in one build only": 3,
        "reproduced vs partly": 0,
    }
    text = scorecard.moves_text(scorecard.compare(old, new))
    assert "the others: 1 opposite, 3 decided in one build only, 0 reproduced vs partly" in text
    degree = new.assign(verdict=["partly reproduced"] + list(new.verdict[1:]))  # a: reproduced -> partly
    assert scorecard.disagreements(scorecard.compare(old, degree))["reproduced vs partly"] == 1


def test_one_build_readings_say_what_the_undecided_build_read_and_when_both_rule_the_effect_out():
    import pandas as pd

    keys = list("abcdefg")
    old = pd.DataFrame(
        {"key": keys, "chapter": ["x"] * 7, "lab_value": [""] * 7}
        | {
            "verdict": ["not reproduced", "partly reproduced", "inconclusive", "not reproduced"]
            + ["reproduced", "not tested", "inconclusive"]
        }
        | {"power": ["", "", "underpowered", "", "", "", ""]}
    )
    new = pd.DataFrame(
        {"key": keys[:6], "chapter": ["x"] * 6, "lab_value": [""] * 6}
        | {
            "verdict": ["inconclusive", "inconclusive", "partly reproduced", "inconclusive", "reproduced"]
            + ["partly reproduced"]
        }
        | {"power": ["smaller than the paper's", "smaller than the paper's", "", "underpowered", "", ""]}
    )
    # a: not reproduced vs smaller (both rule the effect out); b: partly vs smaller (they disagree);
    # c: underpowered vs partly; d: not reproduced vs underpowered (the other cannot tell); e: same;
    # f: not tested vs partly; g: inconclusive in old, absent in new: decided in neither
    readings, agree = scorecard.one_build_readings(scorecard.compare(old, new))
    assert readings == {"underpowered": 2, "smaller than the paper's": 2, "not tested": 1}
    assert agree == 1
    text = scorecard.moves_text(scorecard.compare(old, new))
    assert "what the other read: 2 underpowered, 2 smaller than the paper's, 1 not tested; 1 not reproduced" in text
    gone = scorecard.compare(old, new.iloc[1:])  # a absent from new
    assert scorecard.one_build_readings(gone) == (
        {"underpowered": 2, "smaller than the paper's": 1, "not tested": 1} | {"absent": 1},
        0,
    )


def test_across_builds_counts_claims_the_same_in_all_and_the_opposites():
    import pandas as pd

    def build(verdicts, keys="abcde"):
        return pd.DataFrame(
            {"key": list(keys), "chapter": ["x"] * len(keys), "verdict": verdicts, "power": [""] * len(keys)}
        )

    frames = [
        build(["reproduced", "partly reproduced", "inconclusive", "not tested", "not reproduced"]),
        build(["reproduced", "partly reproduced", "inconclusive", "not tested", "inconclusive"]),
        build(["reproduced", "not reproduced", "inconclusive", "not tested"], keys="abcd"),
    ]
    table = scorecard.across(frames)
    # a: the same in all; b: partly twice, not reproduced once (opposite); c, d: decided in none;
    # e: not reproduced, inconclusive, absent (decided in one build only)
    assert table.decided.tolist() == [True, True, False, False, True]
    assert table.same.tolist() == [True, False, True, True, False]
    assert table.opposite.tolist() == [False, True, False, False, False]
    assert table.loc["e", 2] == "-" and table.loc["b", 2] == "not reproduced"
    text = scorecard.across_text(table, ["A", "B", "C"])
    assert text.splitlines()[0] == "across 3 builds: [0] A, [1] B, [2] C"
    assert "\n  b " in text and "\n  e " in text and "\n  a " not in text and "\n  c " not in text
    assert "(opposite)" in text and "[2] -" in text
    empty = scorecard.across([frames[0], frames[0].iloc[:0]])  # a build without chapters: every claim absent
    assert empty[1].eq("-").all() and not empty.same.any() and empty.decided.sum() == 3
    assert text.endswith(
        "1 of 3 verdicts decided in some build are the same in all 3 (33%); 1 opposite "
        "(supported in one build, not reproduced in another)"
    )


def test_compare_cli_names_a_missing_folder(tmp_path, capsys):
    assert scorecard.main([str(tmp_path / "nope"), str(tmp_path)]) == 2
    assert "nope" in capsys.readouterr().out
    assert scorecard.main([str(tmp_path), str(tmp_path), str(tmp_path / "third")]) == 2
    assert "third: no such folder" in capsys.readouterr().out


def glue_output(name: str, mime: str, value: str) -> dict:
    """A display output as ``myst_nb.glue`` writes it (scrapbook metadata, papermill record mime)."""
    from nbformat.v4 import new_output

    return new_output(
        "display_data",
        data={f"application/papermill.record/{mime}": value},
        metadata={"scrapbook": {"name": name, "mime_prefix": "application/papermill.record/"}},
    )


def test_glued_values_compare_numbers_and_figures_between_builds(tmp_path, capsys):
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    def write(folder, auc, png):
        folder.mkdir()
        cell = new_code_cell("glue(...)")
        cell.outputs = [glue_output("auc", "text/plain", auc), glue_output("fig", "image/png", png)]
        nbformat.write(new_notebook(cells=[cell]), folder / "lab.ipynb")

    write(tmp_path / "old", "0.61", "AAAA")
    write(tmp_path / "new", "0.62", "AAAA")
    assert scorecard.glued_values(tmp_path / "old" / "lab.ipynb")["auc"] == "0.61"
    assert scorecard.glued_values(tmp_path / "old" / "lab.ipynb")["fig"].startswith("figure ")
    glued = scorecard.compare_glued(tmp_path / "old", tmp_path / "new", ["lab"])
    assert glued.set_index("name").same.to_dict() == {"auc": False, "fig": True}
    assert scorecard.main([str(tmp_path / "old"), str(tmp_path / "new"), "--glued"]) == 0
    assert "1 of 1 glued values differ; 0 of 1 glued figures differ" in capsys.readouterr().out


def test_a_verdict_whose_evidence_is_in_auc_points_shows_its_mde_in_points(tmp_path):
    # RaMIA's evidence reads "+1.2 points": its MDE beside it read "MDE 0.011 vs paper +0.012" (AUC units)
    pts = Verdict(
        "c", INCONCLUSIVE, "e", "r", key="p", paper_effect=0.012, mde=0.0111, power="underpowered", points=True
    )
    assert pts.power_text() == "MDE 1.11 points vs paper +1.20 points"
    executed(tmp_path / "ramia.ipynb", [pts, V1], "ramia")
    page = scorecard.render(scorecard.collect(tmp_path, ["ramia"]), ["ramia"])
    assert "MDE 1.11 points vs paper +1.20 points" in page and "MDE 0.011" not in page
    old = scorecard.collect(tmp_path, ["ramia"]).assign(points=float("nan"))  # a build before the field
    assert "MDE 0.011 vs paper +0.012" in scorecard.render(old, ["ramia"])


def test_the_page_says_how_often_a_new_lab_draw_would_repeat_each_verdict_read_on_units(tmp_path):
    z, se = power.Z_TWO_SIDED, 0.01
    far = Claim("Far from its bar", key="far").tallied(
        tally([Effect(0.2, 0.18, 0.22, label=f"u{i}") for i in "ab"]), "e", "r"
    )
    # four units each clear by a hair, on texts of their own: each is clear again with p 1/2, independently, and
    # the claim is reproduced again with 3 or 4 of 4: 5/16
    hair = [Effect(z * se + 1e-9, 1e-9, 2 * z * se + 1e-9, label=g, group=g) for g in "abcd"]
    fragile = Claim("At its bar", key="hair").tallied(tally(hair), "e", "r")
    executed(tmp_path / "main_results.ipynb", [far, fragile, V1], "main_results")
    df = scorecard.collect(tmp_path, ["main_results"])
    rep = scorecard.repeats(df)
    assert rep[0] == 1.0 and rep[1] == pytest.approx(5 / 16, abs=0.04) and pd.isna(rep[2])  # V1 tallied no units
    page = scorecard.render(df, ["main_results"])
    mean = f"{(1.0 + rep[1]) / 2:.0%}"
    assert f"- **Another lab draw**: a new lab draw would repeat about {mean} of the 2 decided verdicts" in page
    assert page.rstrip().count(f"below one in two: At its bar (main results) {rep[1]:.0%}.") == 1
    assert "Far from its bar (main results)" not in page  # 100%: not below one in two
    assert page.count("- **replication**: a new lab draw repeats this verdict in about") == 2  # not V1's
    assert "- **replication**: a new lab draw repeats this verdict in about 100% of simulated draws" in page
    none = scorecard.render(scorecard.collect(tmp_path, []), [])  # nothing decided on units: no such line
    assert "Another lab draw" not in none


def test_a_claim_named_in_a_summary_line_is_cut_at_a_word():
    long = "Semantically close neighbours have MIA scores more similar to actual member samples than random tokens"
    brief = scorecard._brief(long)
    assert brief == "Semantically close neighbours have MIA ..." and len(brief) <= scorecard.CLAIM_BRIEF
    assert scorecard._brief("Near random | in most") == "Near random \\| in most"  # a table-safe cell, whole when short
