import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mimirlib.data import Benchmark, BenchmarkError, load_benchmark, write_records

ROWS = [
    {
        "member": "a member text",
        "nonmember": "a non-member text",
        "member_neighbors": ["a member test", "a member tent"],
        "nonmember_neighbors": ["x", "y"],
    },
    {
        "member": "second member",
        "nonmember": "second non-member",
        "member_neighbors": ["m1", "m2"],
        "nonmember_neighbors": ["n1", "n2"],
    },
]


def test_jsonl_and_parquet_load_the_same(tmp_path):
    write_records(ROWS, tmp_path / "wiki" / "none.jsonl")
    pq.write_table(pa.Table.from_pylist(ROWS), tmp_path / "b.parquet")
    a = load_benchmark(tmp_path, "wiki", "none")
    b = load_benchmark(tmp_path / "b.parquet")
    assert a.members == b.members and a.nonmember_neighbors == b.nonmember_neighbors
    assert a.has_neighbors and a.labels == [1, 1, 0, 0]


def test_missing_column_is_named(tmp_path):
    write_records([{"member": "x", "text": "y"}], tmp_path / "f.jsonl")
    with pytest.raises(BenchmarkError, match=r"f.jsonl.*nonmember"):
        load_benchmark(tmp_path / "f.jsonl")


def test_malformed_line_is_named(tmp_path):
    f = tmp_path / "bad.jsonl"
    f.write_text(json.dumps(ROWS[0]) + "\n{not json\n")
    with pytest.raises(BenchmarkError, match=r"bad.jsonl:2"):
        load_benchmark(f)


def test_empty_text_is_named(tmp_path):
    write_records([{"member": "ok", "nonmember": "  "}], tmp_path / "e.jsonl")
    with pytest.raises(BenchmarkError, match=r"nonmember\[0\] is empty"):
        load_benchmark(tmp_path / "e.jsonl")


def test_missing_split_lists_what_exists(tmp_path):
    write_records(ROWS, tmp_path / "wiki" / "none.jsonl")
    with pytest.raises(BenchmarkError, match="wiki/none.jsonl"):
        load_benchmark(tmp_path, "wiki", "ngram_7_0.2")


def test_neighbour_rows_must_align():
    with pytest.raises(BenchmarkError, match="member_neighbors"):
        Benchmark("b", ("a",), ("b",), member_neighbors=(("x",), ("y",)), nonmember_neighbors=(("z",),))


def test_subset_keeps_pairs():
    b = Benchmark("b", ("a", "b", "c"), ("x", "y", "z"))
    s = b.subset(2)
    assert s.members == ("a", "b") and s.nonmembers == ("x", "y")
