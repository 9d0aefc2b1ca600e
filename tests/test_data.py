import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mimirlib.core import data
from mimirlib.core.data import (
    Benchmark,
    BenchmarkError,
    load_benchmark,
    parse_hf_spec,
    read_records,
    read_table,
    write_records,
)

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


# ----------------------------------------------------------------------------- the one reader


def one_line_error(source, *parts):
    """read_table(source) fails with one line holding each of ``parts``; returns the message."""
    with pytest.raises(BenchmarkError) as e:
        read_table(source)
    msg = str(e.value)
    assert "\n" not in msg, msg
    for part in parts:
        assert str(part) in msg, (part, msg)
    return msg


def test_read_table_gives_the_same_rows_in_every_format_with_numbers_for_errors(tmp_path):
    rows = [{"text": "first text", "label": "1"}, {"text": "NA", "label": "0"}]  # "NA" stays text
    jl = tmp_path / "t.jsonl"
    jl.write_text(json.dumps(rows[0]) + "\n\n" + json.dumps(rows[1]) + "\n")
    pd.DataFrame(rows).to_csv(tmp_path / "t.csv", index=False)
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "t.parquet")
    tables = [read_table(tmp_path / f"t.{ext}") for ext in ("jsonl", "csv", "parquet")]
    for t in tables:
        assert t.rows == rows and t.columns == ["text", "label"]
    assert tables[0].unit == "line" and tables[0].numbers == [1, 3]  # the blank line 2 is counted
    assert tables[1].unit == tables[2].unit == "row" and tables[1].numbers == [1, 2]
    assert read_records(jl) == rows  # read_records is read_table's rows


def test_read_table_errors_are_one_line_naming_file_and_problem(tmp_path):
    one_line_error(tmp_path / "nope.jsonl", tmp_path / "nope.jsonl", "file not found")
    one_line_error(tmp_path, tmp_path, "is a folder", f"hf:{tmp_path}")
    (tmp_path / "a.txt").write_text("x\n")
    one_line_error(tmp_path / "a.txt", "unsupported file type '.txt'")
    (tmp_path / "bad.jsonl").write_text('{"a": 1}\n\n{"a": 2}\n{"a": \n')
    one_line_error(tmp_path / "bad.jsonl", f"{tmp_path / 'bad.jsonl'}:4", "malformed JSON")
    (tmp_path / "scalar.jsonl").write_text('{"a": 1}\n"just a string"\n')
    one_line_error(tmp_path / "scalar.jsonl", f"{tmp_path / 'scalar.jsonl'}:2", "expected a JSON object, got str")
    (tmp_path / "latin.csv").write_bytes("text\ncaf\xe9\n".encode("latin-1"))
    one_line_error(tmp_path / "latin.csv", tmp_path / "latin.csv", "not UTF-8")
    (tmp_path / "blank.csv").write_text("")
    one_line_error(tmp_path / "blank.csv", tmp_path / "blank.csv", "empty file")
    (tmp_path / "junk.parquet").write_text("not parquet")
    one_line_error(tmp_path / "junk.parquet", tmp_path / "junk.parquet", "unreadable parquet")


def test_no_other_module_parses_table_files_itself():
    """Every jsonl/csv/parquet table goes through data.read_table; the exceptions are named here with
    their reason (and each one must still be there, so the list cannot go stale)."""
    allowed = {
        "core/data.py": "the reader",
        "core/benchmark.py": "iter_jsonl: the line parser read_table uses",
        "core/hub.py": "the MIMIR dataset's raw files hold one JSON string per line, not rows",
        "display/paper_tables.py": "a CSV shipped inside the package, read from a resource handle",
        "lab/layout.py": "the lab's ground-truth files",
        "lab/corpus.py": "the lab's gzipped corpus snapshot, streamed line by line",
    }
    readers = re.compile(r"read_csv|pq\.read_table|pyarrow\.parquet|iter_jsonl\(|json\.loads\(line\)|load_dataset")
    root = Path(data.__file__).parents[1]  # mimirlib/
    found = {str(p.relative_to(root)) for p in root.rglob("*.py") if readers.search(p.read_text(encoding="utf-8"))}
    assert found == set(allowed), found ^ set(allowed)


# ----------------------------------------------------------------------------- hf: sources


@pytest.mark.parametrize(
    "text, name, config, split",
    [
        ("hf:owner/name", "owner/name", None, None),
        ("hf:owner/name:test", "owner/name", None, "test"),
        ("hf:owner/name:wikipedia_(en):ngram_13_0.8", "owner/name", "wikipedia_(en)", "ngram_13_0.8"),
        ("hf:owner/name::train", "owner/name", None, "train"),
        ("hf:./saved:train", "./saved", None, "train"),
        ("hf:/abs/folder", "/abs/folder", None, None),
    ],
)
def test_hf_spec_is_name_then_optional_config_then_split(text, name, config, split):
    spec = parse_hf_spec(text)
    assert (spec.name, spec.config, spec.split, spec.text) == (name, config, split, text)


@pytest.mark.parametrize(
    "text, culprit",
    [
        ("hf:", "no dataset name"),
        ("hf::train", "no dataset name"),
        ("hf:a/b:", "empty split"),
        ("hf:a/b:cfg: ", "empty split"),
        ("hf:a/b:c:d:e", "too many"),
        ("owner/name", "not a dataset source"),
    ],
)
def test_malformed_hf_specs_are_refused_in_one_line(text, culprit):
    with pytest.raises(BenchmarkError) as e:
        parse_hf_spec(text)
    assert culprit in str(e.value) and "hf:NAME:CONFIG:SPLIT" in str(e.value) and "\n" not in str(e.value)
    if text.startswith("hf:"):
        one_line_error(text, text, culprit)  # read_table says the same


def test_a_missing_file_that_looks_like_a_hub_name_suggests_hf():
    one_line_error("owner/name", "owner/name: file not found", "write hf:owner/name:SPLIT")
    for missing in ("members.jsonl", "data/members.jsonl", "members"):
        assert "hf:" not in one_line_error(missing, f"{missing}: file not found")


@pytest.fixture
def saved(tmp_path):
    """A DatasetDict saved with save_to_disk (a class-label column) and a folder of parquet files."""
    import datasets

    tmp_path = tmp_path / "data"
    features = datasets.Features(
        {"text": datasets.Value("string"), "label": datasets.ClassLabel(names=["member", "nonmember"])}
    )
    split = datasets.Dataset.from_dict({"text": ["a b c", "d e f"], "label": [1, 0]}, features=features)
    datasets.DatasetDict({"train": split, "test": split.select([0])}).save_to_disk(tmp_path / "dd")
    datasets.Dataset.from_list(ROWS).save_to_disk(tmp_path / "mimir-schema")
    (tmp_path / "pq").mkdir()
    pq.write_table(pa.Table.from_pylist([{"text": "x y"}, {"text": "z w"}]), tmp_path / "pq" / "train.parquet")
    pq.write_table(pa.Table.from_pylist([{"text": "q r"}]), tmp_path / "pq" / "test.parquet")
    return tmp_path


def test_hf_local_folders_load_by_split_with_label_names(saved, tmp_path, monkeypatch):
    monkeypatch.setenv("MIMIR_CACHE", str(tmp_path / "cache"))
    t = read_table(f"hf:{saved / 'dd'}:train")
    # a class label is its name (here index 0 is "member": the integer would read as "non-member")
    assert t.rows == [{"text": "a b c", "label": "nonmember"}, {"text": "d e f", "label": "member"}]
    assert t.columns == ["text", "label"] and t.unit == "row" and t.numbers == [1, 2]
    assert read_table(f"hf:{saved / 'pq'}:test").rows == [{"text": "q r"}]
    assert read_table(f"hf:{saved / 'pq'}::train").rows == [{"text": "x y"}, {"text": "z w"}]
    one_line_error(f"hf:{saved / 'dd'}", "several splits ['train', 'test']")
    one_line_error(f"hf:{saved / 'dd'}:validation", "no split 'validation'", "['train', 'test']")
    one_line_error(f"hf:{saved / 'pq'}:validation", f"hf:{saved / 'pq'}:validation", "validation")
    one_line_error(f"hf:{saved / 'dd'}:cfg:train", "no configs")
    one_line_error(f"hf:{saved / 'missing'}:train", "no such folder")
    one_line_error(f"hf:{saved / 'pq' / 'test.parquet'}:train", "is a file; pass it without hf:")
    # a benchmark in the MIMIR schema, neighbours included, reads the same from hf: as from jsonl
    write_records(ROWS, tmp_path / "b.jsonl")
    a, b = load_benchmark(tmp_path / "b.jsonl"), load_benchmark(f"hf:{saved / 'mimir-schema'}")
    assert (a.members, a.nonmembers, a.member_neighbors) == (b.members, b.nonmembers, b.member_neighbors)


CACHE_CHECK = """
import sys
from mimirlib.core.data import read_table
for spec in sys.argv[1:]:
    read_table(spec)
"""


def test_datasets_caches_only_under_the_project_cache(saved, tmp_path):
    """``datasets`` writes under cache_root()/datasets (here ``$MIMIR_CACHE`` in the working folder): nothing
    beside the data, nothing in its default cache (HF_HOME), nothing else in the working folder."""
    work, hf_home = tmp_path / "work", tmp_path / "hf-home"
    work.mkdir()
    data_before = {p: p.stat().st_mtime_ns for p in saved.rglob("*")}
    env = {k: v for k, v in os.environ.items() if k not in ("MIMIR_CACHE", "HF_DATASETS_CACHE")}
    env.update(HF_HOME=str(hf_home), PYTHONPATH=str(Path(data.__file__).parents[1]), MIMIR_CACHE=str(work / ".cache"))
    specs = [f"hf:{saved / 'pq'}:train", f"hf:{saved / 'dd'}:test"]
    proc = subprocess.run(
        [sys.executable, "-c", CACHE_CHECK, *specs], cwd=work, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert {p: p.stat().st_mtime_ns for p in saved.rglob("*")} == data_before
    assert [p.name for p in work.iterdir()] == [".cache"]
    assert [p.name for p in (work / ".cache").iterdir()] == ["datasets"]
    assert any(p.suffix == ".arrow" for p in (work / ".cache" / "datasets").rglob("*"))
    assert not hf_home.exists() or not any(hf_home.rglob("*"))
    assert proc.stderr.strip() == ""  # no log lines or progress bars from datasets


def test_hub_dataset_offline_is_one_line_naming_it(monkeypatch, tmp_path):
    """The hub is unreachable (here: an endpoint that refuses connections): one line, fast,
    instead of datasets' five retries (23 s measured) and their log lines."""
    monkeypatch.setattr("huggingface_hub.constants.ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("MIMIR_CACHE", str(tmp_path / "cache"))
    start = time.monotonic()
    msg = one_line_error("hf:some-owner/some-data:cfg:train", "hf:some-owner/some-data:cfg:train", "unreachable")
    assert time.monotonic() - start < 15
    assert "'some-owner/some-data'" in msg and "pass a local file" in msg
    assert not (tmp_path / "cache").exists()


def test_hub_dataset_with_hf_hub_offline_and_no_cached_copy(tmp_path):
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf-home"), MIMIR_CACHE=str(tmp_path))
    env["PYTHONPATH"] = str(Path(data.__file__).parents[1])
    code = "from mimirlib.core.data import read_table\nread_table('hf:some-owner/some-data:train')"
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode != 0 and "HF_HUB_OFFLINE is set" in last and "'some-owner/some-data'" in last, proc.stderr
