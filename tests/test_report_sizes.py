"""Every AUC table carries the sample size it rests on: ``report.auc_table`` adds the members /
non-members of each row as its last column, naming the attacks that rest on other counts."""

from __future__ import annotations

import pandas as pd

from mimirlib.display import report


def results(sizes: dict[str, tuple[int, int]], domains=("code", "math")) -> pd.DataFrame:
    rows = []
    for d in domains:
        for attack, (m, n) in sizes.items():
            rows.append(
                {
                    "domain": d,
                    "attack": attack,
                    "auc": 0.6,
                    "auc_lo": 0.5,
                    "auc_hi": 0.7,
                    "n_members": m,
                    "n_nonmembers": n,
                }
            )
    return pd.DataFrame(rows)


def test_auc_table_shows_members_and_non_members_beside_the_aucs():
    t = report.auc_table(results({"loss": (96, 90), "zlib": (96, 90)}), index=["domain"])
    assert list(t.columns) == ["loss", "zlib", "n (members / non-members)"]
    assert list(t["n (members / non-members)"]) == ["96 / 90", "96 / 90"]
    assert t.loc["code", "loss"] == "0.600 [0.500, 0.700]"


def test_an_attack_on_fewer_texts_is_named_with_its_own_counts():
    r = results({"loss": (96, 96), "ref": (96, 96), "ne": (25, 25)})
    r.loc[(r.domain == "math") & (r.attack == "ref"), ["n_members", "n_nonmembers"]] = (40, 41)
    t = report.auc_table(r, index=["domain"])
    assert t.loc["code", "n (members / non-members)"] == "96 / 96 (ne: 25 / 25)"
    assert t.loc["math", "n (members / non-members)"] == "96 / 96 (ref: 40 / 41; ne: 25 / 25)"


def test_sizes_per_row_of_a_two_level_index():
    r = pd.concat([results({"loss": (10, 12)}).assign(target="a"), results({"loss": (30, 32)}).assign(target="b")])
    t = report.auc_table(r, index=["domain", "target"])
    assert t["n (members / non-members)"].to_dict() == {
        ("code", "a"): "10 / 12",
        ("math", "a"): "10 / 12",
        ("code", "b"): "30 / 32",
        ("math", "b"): "30 / 32",
    }


def test_no_size_column_without_sizes_or_when_a_size_is_a_row_label():
    r = results({"loss": (9, 9)})
    assert list(report.auc_table(r.drop(columns=["n_members", "n_nonmembers"]), index=["domain"]).columns) == ["loss"]
    assert list(report.auc_table(r, index=["domain", "n_members"]).columns) == ["loss"]
    assert list(report.auc_table(r, index=["domain"], with_sizes=False).columns) == ["loss"]
    only_nm = report.auc_table(r.rename(columns={"n_members": "members"}), index=["domain", "members"])
    assert list(only_nm.columns) == ["loss", "n (non-members)"] and set(only_nm["n (non-members)"]) == {"9"}


def test_with_size_appends_one_shared_size_column_under_one_or_two_header_levels():
    flat = pd.DataFrame({"a": [0.5, 0.6]}, index=["x", "y"])
    t = report.with_size(flat, "n (IN / OUT ranges)", "30 / 30")
    assert list(t.columns) == ["a", "n (IN / OUT ranges)"] and (t["n (IN / OUT ranges)"] == "30 / 30").all()
    wide = pd.DataFrame([[0.5, 0.6]], columns=pd.MultiIndex.from_tuples([("LOSS", "RaMIA"), ("LOSS", "MIA")]))
    t = report.with_size(wide, "n", "8 / 8")
    assert t.columns[-1] == ("n", "") and t[("n", "")].iloc[0] == "8 / 8"
    assert list(flat.columns) == ["a"]  # the input is left alone


def test_count_span_names_one_count_once():
    assert report.count_span([9, 9, 9]) == "9"
    assert report.count_span([12, 9, 10]) == "9 to 12"
    assert report.count_span(pd.Series([3])) == "3"
    assert report.count_span([12, 9, 10], sep="-") == "9-12"  # as the verdicts' sample sizes write it


def test_tables_show_missing_values_as_a_dash_not_nan():
    from types import SimpleNamespace

    from IPython.core.formatters import DisplayFormatter

    frame = pd.DataFrame({"auc": [0.61, 0.55], "seed sd": [0.012, float("nan")]}, index=["h32", "h256"])
    whole = pd.DataFrame({"auc": [0.61, 0.55]})
    shell = SimpleNamespace(display_formatter=DisplayFormatter())
    assert "NaN" in shell.display_formatter.format(frame)[0]["text/html"]  # pandas' own
    report.show_full_tables(shell)
    shown = shell.display_formatter.format(frame)[0]["text/html"]
    assert "NaN" not in shown and shown.count(f"<td>{report.MISSING}</td>") == 1 and "<td>0.012</td>" in shown
    assert report.table_html(whole) == whole._repr_html_()  # otherwise pandas' notebook HTML, unchanged


def test_count_of_is_singular_for_one_only():
    assert report.count_of(1, "seed") == "1 seed"
    assert report.count_of(3, "seed") == "3 seeds"
    assert report.count_of(0, "domain") == "0 domains"
    assert report.count_of("1-3", "neighbour") == "1-3 neighbours"  # a span is plural
    assert report.count_of(report.count_span([1, 1]), "member") == "1 member"


def test_words_names_columns_and_index_in_words_and_reads_booleans_as_yes_no():
    frame = pd.DataFrame(
        {"overlap_drop": [0.2], "lo": [0.1], "hi": [0.3], "informative": [True]},
        index=pd.Index(["code"], name="the_domain"),
    )
    shown = report.words(frame)
    assert list(shown.columns) == ["overlap drop", "95% CI low", "95% CI high", "informative"]
    assert shown.index.name == "the domain" and shown.loc["code", "informative"] == "yes"
    assert frame["informative"].dtype == bool  # the input is kept
