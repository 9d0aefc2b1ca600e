"""The committed corpus snapshot loads, meets its documented invariants, and fails loudly when broken."""

from __future__ import annotations

import datetime as dt
import gzip
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mimirlib.lab import corpus

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def manifest():
    return corpus.snapshot_manifest()


@pytest.fixture(scope="module")
def natural():
    return {d: corpus.load_domain(d, dedup=False) for d in corpus.DOMAINS}


def _copy_snapshot(tmp_path: Path) -> Path:
    dst = tmp_path / "snapshot"
    shutil.copytree(Path(str(corpus.snapshot_root())), dst)
    return dst


@pytest.mark.parametrize("domain", corpus.DOMAINS)
def test_domain_loads_with_invariants(domain, natural, manifest):
    docs = natural[domain]
    assert len(docs) >= 1000, f"{domain}: only {len(docs)} documents"
    ids = [d["id"] for d in docs]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert all(i.startswith(f"{domain}/") for i in ids)
    for d in docs:
        assert {"id", "text", "source", "date", "dup_of"} <= d.keys()
        assert 100 <= len(d["text"].split()) <= 600, d["id"]
        assert d["text"] == d["text"].strip("\n") and d["source"]
    entry = manifest["domains"][domain]
    assert len(docs) == entry["n_docs"]
    dedup = corpus.load_domain(domain)
    assert len(dedup) == entry["n_unique"]
    assert len({d["text"] for d in dedup}) == len(dedup), "dedup=True must leave no exact duplicate"
    canon = {d["id"] for d in dedup}
    assert all(d["dup_of"] in canon for d in docs if d["dup_of"])


def test_code_keeps_indentation(natural):
    assert any("\n    def " in d["text"] for d in natural["code"])


def test_manifest_hashes_match():
    m = corpus.verify_snapshot()
    assert set(corpus.DOMAINS) <= set(m["domains"])


@pytest.mark.parametrize("domain", corpus.DOMAINS)
def test_dates(domain, natural):
    dates = [d["date"] for d in natural[domain]]
    if domain not in corpus.DATED_DOMAINS:
        assert all(x is None for x in dates)
        return
    real = [x for x in dates if x is not None]
    assert len(real) > 0.5 * len(dates)
    for x in real:
        assert dt.date.fromisoformat(x).isoformat() == x
    if domain == corpus.TEMPORAL_DOMAIN:
        assert len(real) == len(dates), "every changelog document is dated"


def test_temporal_bins_are_large_enough(manifest):
    """The lab trains before a cutoff and needs >= 150 deduplicated documents in each later bin."""
    sugg = manifest["domains"][corpus.TEMPORAL_DOMAIN]["temporal_suggestion"]
    docs = corpus.load_domain(corpus.TEMPORAL_DOMAIN)
    assert len(sugg["bins"]) >= 3
    assert sum(d["date"] < sugg["cutoff"] for d in docs) == sugg["n_unique_before_cutoff"] >= 600
    prev_end = sugg["cutoff"]
    for b in sugg["bins"]:
        assert b["start"] == prev_end
        n = sum(b["start"] <= d["date"] < b["end"] for d in docs)
        assert n == b["n_unique"] >= 150, b
        prev_end = b["end"]


def test_unknown_domain():
    with pytest.raises(ValueError, match="wikipedia"):
        corpus.load_domain("wikipedia")


def test_missing_file_names_it(tmp_path):
    with pytest.raises(ValueError, match=r"code\.jsonl\.gz"):
        corpus.load_domain("code", root=tmp_path)


@pytest.mark.parametrize(
    "payload",
    [
        b"this is not gzip",
        gzip.compress(b'{"id": "code/000000", "text": "x"}\n' * 50, mtime=0)[:40],  # truncated
    ],
)
def test_corrupted_gzip_names_file(tmp_path, payload):
    (tmp_path / "code.jsonl.gz").write_bytes(payload)
    with pytest.raises(ValueError, match=r"code\.jsonl\.gz"):
        corpus.load_domain("code", root=tmp_path)


@pytest.mark.parametrize(
    "lines",
    [
        ['{"id": "math/000000", "text": "a", "source": "s", "date": null}', "{not json"],
        [
            '{"id": "math/000001", "text": "a", "source": "s", "date": null}',
            '{"id": "math/000000", "text": "b", "source": "s", "date": null}',
        ],  # unsorted
        ['{"id": "math/000000", "text": "a", "source": "s", "date": "2020-13-01"}'],  # bad date
        ['{"id": "math/000000", "text": "a", "source": "s"}'],  # missing key
    ],
)
def test_malformed_records_name_file_and_line(tmp_path, lines):
    (tmp_path / "math.jsonl.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0))
    with pytest.raises(ValueError, match=r"math\.jsonl\.gz line \d"):
        corpus.load_domain("math", root=tmp_path)


def test_verify_detects_changed_file(tmp_path):
    snap = _copy_snapshot(tmp_path)
    corpus.verify_snapshot(snap)
    docs = [json.loads(x) for x in gzip.decompress((snap / "docs.jsonl.gz").read_bytes()).splitlines()]
    docs[0]["text"] += " tampered"
    body = "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs).encode()
    (snap / "docs.jsonl.gz").write_bytes(gzip.compress(body, mtime=0))
    assert corpus.load_domain("docs", root=snap)[0]["text"].endswith("tampered")  # loads, but ...
    with pytest.raises(ValueError, match=r"docs\.jsonl\.gz"):
        corpus.verify_snapshot(snap)
    (snap / "docs.jsonl.gz").unlink()
    with pytest.raises(ValueError, match=r"docs\.jsonl\.gz"):
        corpus.verify_snapshot(snap)


def test_broken_manifest_names_it(tmp_path):
    (tmp_path / "manifest.json").write_text("{oops")
    with pytest.raises(ValueError, match=r"manifest\.json"):
        corpus.snapshot_manifest(tmp_path)


def _sources_available() -> bool:
    return (
        Path("/usr/share/dictd/foldoc.index").exists()
        and Path("/usr/share/doc/python3.11/html/whatsnew/changelog.html.gz").exists()
        and importlib.util.find_spec("licensedcode") is not None
    )


@pytest.mark.slow
@pytest.mark.skipif(not _sources_available(), reason="needs python3.11-doc, dict-foldoc, licensedcode-data")
def test_rebuild_is_byte_identical(tmp_path, manifest):
    """Rebuild the domains whose sources are pinned packages (not code: it depends on the
    interpreter's patch release; not math: ~2 minutes) and compare against the committed hashes."""
    domains = ["licenses", "docs", "encyclopedia", "changelog"]
    for d in domains:
        pk = manifest["domains"][d]["source"]["packages"]
        if any(v == "unknown" for v in pk.values()):
            pytest.skip(f"{d}: source version unknown")
    subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "build_snapshot.py"),
            "--out",
            str(tmp_path),
            "--seed",
            str(manifest["seed"]),
            "--only",
            *domains,
        ],
        check=True,
        capture_output=True,
    )
    rebuilt = json.loads((tmp_path / "manifest.json").read_text())
    for d in domains:
        if rebuilt["domains"][d]["source"]["packages"] != manifest["domains"][d]["source"]["packages"]:
            continue  # other source versions legitimately give other bytes
        assert rebuilt["domains"][d]["sha256"] == manifest["domains"][d]["sha256"], d
