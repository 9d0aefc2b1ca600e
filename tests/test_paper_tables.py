"""The transcribed paper tables: complete, plausible, and equal to the printed numbers.

The spot values below were read off the papers' text by hand (not generated from the CSV), so a
transcription slip in the data file fails here.
"""

import math

import pytest

from mimirlib.display.paper_tables import COLUMNS, list_tables, load_paper_tables, paper_table, table_meta

# (paper, table, block, row, column, metric, value, std or None)
SPOT = [
    ("mimir", "1", "Wikipedia", "70M", "loss", "auc", 0.503, None),
    ("mimir", "1", "Github", "12B", "zlib", "auc", 0.690, None),
    ("mimir", "1", "The Pile", "12B", "ne", "auc", 0.511, None),
    ("mimir", "1", "DM Math", "1.4B", "ne", "auc", 0.465, None),
    ("mimir", "1", "PubMed Central", "6.9B", "ref", "auc", 0.552, None),
    ("mimir", "2", "Github", "zlib", "7-gram", "auc", 0.908, None),
    ("mimir", "2", "ArXiv", "ne", "Orig", "auc", 0.519, None),
    ("mimir", "2", "PubMed Central", "min_k", "7-gram", "auc", 0.792, None),
    ("mimir", "2", "Pile CC", "ref", "7-gram", "auc", 0.644, None),
    ("mimir", "3", "Temporal Wiki", "12B", "ref", "auc", 0.796, None),
    ("mimir", "3", "Temporal Wiki", "160M", "zlib", "auc", 0.541, None),
    ("mimir", "3", "Temporal Wiki", "6.9B", "ne", "auc", 0.620, None),
    ("mimir", "4", "lexical/1%", "ArXiv", "1", "fpr_pct", 0.1, None),
    ("mimir", "4", "lexical/10%", "Wikipedia", "10", "fpr_pct", 0.4, None),
    ("mimir", "4", "semantic/ref", "Wikipedia", "10%", "fpr_pct", 8.2, None),
    ("mimir", "4", "semantic/loss", "ArXiv", "10%", "fpr_pct", 2.5, None),
    ("mimir", "5", "1%", "2020-08", "loss", "fpr_pct", 3.2, None),
    ("mimir", "5", "10%", "Temporal Wiki", "zlib", "fpr_pct", 22.8, None),
    ("mimir", "5", "5%", "2023-01", "ref", "fpr_pct", 23.5, None),
    ("mimir", "5", "10%", "2023-06", "ref", "fpr_pct", 37.3, None),
    ("mimir", "6", "Wikipedia", "12B", "Stable", "auc", 0.579, None),
    ("mimir", "6", "HackerNews", "160M", "Silo", "auc", 0.398, None),
    ("mimir", "6", "ArXiv", "12B", "Pythia", "auc", 0.581, None),
    ("mimir", "6", "DM Math", "160M", "Gpt2", "auc", 0.489, None),
    ("mimir", "7", "Github", "2.7B", "zlib", "auc", 0.712, None),
    ("mimir", "7", "PubMed Central", "125M", "loss", "auc", 0.499, None),
    ("mimir", "7", "The Pile", "1.3B", "ref", "auc", 0.514, None),
    ("mimir", "8", "s2ag", "1B", "ref", "auc", 0.376, None),
    ("mimir", "8", "Common Crawl", "7B", "ref", "auc", 0.410, None),
    ("mimir", "8", "Reddit", "7B", "zlib", "auc", 0.469, None),
    ("mimir", "8", "Wikipedia", "1B", "loss", "auc", 0.484, None),
    ("mimir", "10", "loss", "HackerNews", "5%", "fpr_pct", 1.1, None),
    ("mimir", "10", "ref", "ArXiv", "10%", "fpr_pct", 1.7, None),
    ("mimir", "10", "ref", "Wikipedia", "1%", "fpr_pct", 0.0, None),
    ("mimir", "11", "Github", "2.8B", "zlib", "tpr@1%fpr_pct", 23.4, None),
    ("mimir", "11", "HackerNews", "6.9B", "loss", "tpr@1%fpr_pct", 0.9, None),  # printed ".9"
    ("mimir", "11", "The Pile", "70M", "loss", "tpr@1%fpr_pct", 2.2, None),
    ("mimir", "11", "PubMed Central", "160M", "ne", "tpr@1%fpr_pct", 0.1, None),
    ("mimir", "12", "DM Math", "2.8B", "min_k", "auc", 0.480, None),  # printed ". 480"
    ("mimir", "12", "Github", "12B", "zlib", "auc", 0.748, None),
    ("mimir", "12", "HackerNews", "12B", "ref", "auc", 0.606, None),
    ("mimir", "12", "Wikipedia", "160M", "loss", "auc", 0.503, None),
    ("ramia", "III", "", "rmia", "Purchase-100", "delta_auc_pct", 2.62, 0.04),
    ("ramia", "III", "", "rmia", "CelebA", "delta_auc_pct", 5.4, None),
    ("ramia", "III", "", "rmia", "AG News", "delta_auc_pct", 1.20, 0.2),
    ("ramia", "III", "", "lira", "AG News", "delta_auc_pct", 3.80, 0.20),
    ("ramia", "IV", "MIA", "lira", "Purchase-100", "tpr@1%fpr_pct", 5.20, None),
    ("ramia", "IV", "RaMIA", "rmia", "Purchase-100", "tpr@1%fpr_pct", 2.57, 1.58),
    ("ramia", "IV", "RaMIA", "loss", "AG News", "tpr@0.1%fpr_pct", 0.0, 0.0),
    ("ramia", "IV", "RaMIA", "lira", "CelebA", "tpr@0.1%fpr_pct", 0.02, None),
]

RANGES = {
    "auc": (0.0, 1.0),
    "fpr_pct": (0.0, 100.0),
    "tpr@1%fpr_pct": (0.0, 100.0),
    "tpr@0.1%fpr_pct": (0.0, 100.0),
    "delta_auc_pct": (-100.0, 100.0),
}


@pytest.fixture(scope="module")
def df():
    return load_paper_tables()


def _metrics(meta):
    m = meta["metric"]
    return set(m) if isinstance(m, list) else ({m} if m else set())


def test_parses_with_exact_columns(df):
    assert tuple(df.columns) == COLUMNS
    assert len(df) > 0
    assert df["value"].notna().all()


def test_every_documented_table_has_its_count(df):
    counts = df.groupby(["paper", "table"]).size().to_dict()
    for paper, table in list_tables():
        meta = table_meta(paper, table)
        assert counts.get((paper, table), 0) == meta["n_values"], (paper, table)
    assert set(counts) <= set(list_tables()), "CSV has a table the metadata does not describe"


def test_counts_cover_both_papers():
    tables = set(list_tables())
    assert {("mimir", str(i)) for i in range(1, 13)} <= tables
    assert {("ramia", t) for t in ("I", "II", "III", "IV")} <= tables


def test_metrics_match_metadata(df):
    for (paper, table), sel in df.groupby(["paper", "table"]):
        assert set(sel["metric"]) == _metrics(table_meta(paper, table)), (paper, table)


@pytest.mark.parametrize("metric", sorted(RANGES))
def test_values_plausible_for_metric(df, metric):
    lo, hi = RANGES[metric]
    sel = df[df["metric"] == metric]
    assert len(sel) > 0
    assert sel["value"].between(lo, hi).all(), sel[~sel["value"].between(lo, hi)]
    assert set(df["metric"]) == set(RANGES)


def test_std_only_where_printed(df):
    with_std = df[df["std"].notna()]
    assert (with_std["std"] >= 0).all()
    assert set(zip(with_std["paper"], with_std["table"])) == {("ramia", "III"), ("ramia", "IV")}
    # RaMIA prints no std for CelebA (all candidates used) nor for the MIA rows of Table IV.
    assert df[(df["paper"] == "ramia") & (df["column"] == "CelebA")]["std"].isna().all()
    assert df[(df["table"] == "IV") & (df["block"] == "MIA")]["std"].isna().all()


@pytest.mark.parametrize("spot", SPOT, ids=lambda s: "-".join(map(str, s[:5])))
def test_spot_values_match_paper(df, spot):
    paper, table, block, row, column, metric, value, std = spot
    hit = df[
        (df["paper"] == paper)
        & (df["table"] == table)
        & (df["block"] == block)
        & (df["row"] == row)
        & (df["column"] == column)
        & (df["metric"] == metric)
    ]
    assert len(hit) == 1
    assert hit["value"].iloc[0] == pytest.approx(value, abs=1e-9)
    got_std = hit["std"].iloc[0]
    assert math.isnan(got_std) if std is None else got_std == pytest.approx(std, abs=1e-9)


def test_at_least_three_spots_per_numeric_table(df):
    numeric = set(zip(df["paper"], df["table"]))
    per = {k: sum(1 for s in SPOT if (s[0], s[1]) == k) for k in numeric}
    assert all(n >= 3 for n in per.values()), per


def test_pivot_table1_github(df):
    wide = paper_table("mimir", 1, block="Github")
    assert list(wide.index) == ["70M", "160M", "1.4B", "2.8B", "6.9B", "12B"]
    assert list(wide.columns) == ["loss", "ref", "min_k", "zlib", "ne"]
    assert wide.loc["12B", "zlib"] == pytest.approx(0.690)
    assert wide.notna().all().all()


def test_pivot_without_block_keeps_printed_layout():
    wide = paper_table("mimir", "1")
    assert wide.columns.names == ["block", "column"]
    assert wide.shape == (6, 40)
    assert list(dict.fromkeys(wide.columns.get_level_values("block")))[:2] == ["Wikipedia", "Github"]
    iv = paper_table("ramia", "IV", block="RaMIA", values="std")
    assert iv.loc["rmia", ("Purchase-100", "tpr@1%fpr_pct")] == pytest.approx(1.58)


def test_unknown_table_or_block_is_named():
    with pytest.raises(ValueError, match="13"):
        paper_table("mimir", 13)
    with pytest.raises(ValueError, match="Atlantis"):
        paper_table("mimir", 1, block="Atlantis")
    with pytest.raises(ValueError, match="nope"):
        table_meta("nope", 1)


def test_table_meta_says_what_the_table_is():
    meta = table_meta("mimir", 1)
    assert meta["metric"] == "auc" and "Pythia-dedup" in meta["target_models"]
    assert meta["n_values"] == 240 and meta["table"] == "1"


def _write(tmp_path, text):
    p = tmp_path / "t.csv"
    p.write_text(text, encoding="utf-8")
    return p


def test_loader_rejects_bad_files(tmp_path):
    header = ",".join(COLUMNS) + "\n"
    with pytest.raises(ValueError, match="missing \\['std'\\]"):
        load_paper_tables(_write(tmp_path, "paper,table,block,row,column,metric,value\n"))
    with pytest.raises(ValueError, match="line 2: value 'x'"):
        load_paper_tables(_write(tmp_path, header + "mimir,1,W,70M,loss,auc,x,\n"))
    with pytest.raises(ValueError, match="line 3: duplicate"):
        load_paper_tables(_write(tmp_path, header + "mimir,1,W,70M,loss,auc,0.5,\n" * 2))
    with pytest.raises(ValueError, match="'metric' is empty"):
        load_paper_tables(_write(tmp_path, header + "mimir,1,W,70M,loss,,0.5,\n"))
