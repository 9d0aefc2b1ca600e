"""The audit's --training-corpus check: each non-member's 13-gram overlap with the model's
training corpus and how many MIMIR's decontamination would drop, reported before any attack
number; bad corpus paths are one line, exit 2, before any model is loaded."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mimirlib import audit
from mimirlib.audit import AuditError, run_audit

FIX = Path(__file__).parent / "fixtures" / "audit"
MEMBERS, NONMEMBERS = FIX / "members.jsonl", FIX / "nonmembers.jsonl"


def texts_of(path):
    return [json.loads(line)["text"] for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture
def no_model_loading(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("a model was loaded before the training corpus was checked")

    monkeypatch.setattr("mimirlib.core.models.load_model", boom)


@pytest.mark.parametrize(
    "corpus, culprit",
    [
        ("missing.jsonl", "training corpus {tmp}/missing.jsonl: no such file or folder"),
        ("*.parquet", "matches no"),
        ("notes.csvx", "unsupported file type"),
        ("bad.jsonl", "bad.jsonl:2"),  # malformed jsonl line: found while reading, still before the model
        ("nocol.jsonl", "no column 'text'"),
    ],
)
def test_bad_corpus_fails_before_any_model(no_model_loading, tmp_path, corpus, culprit):
    (tmp_path / "notes.csvx").write_text("x")
    (tmp_path / "bad.jsonl").write_text('{"text": "a b c"}\n{"text": \n')
    (tmp_path / "nocol.jsonl").write_text('{"body": "a b c"}\n')
    with pytest.raises(AuditError) as e:
        run_audit("some-org/some-model", ["a b c d"], ["e f g h"], training_corpus=str(tmp_path / corpus))
    assert culprit.format(tmp=tmp_path) in str(e.value)
    with pytest.raises(AuditError, match="corpus index 'fuzzy'"):
        run_audit("some-org/some-model", ["a b c d"], ["e f g h"], training_corpus=str(tmp_path), corpus_index="fuzzy")


def test_cli_bad_corpus_is_one_line_exit_2(tmp_path, capfd, no_model_loading):
    out = tmp_path / "out"
    argv = ["--model", "some-org/some-model", "--members", MEMBERS, "--nonmembers", NONMEMBERS, "--out", out]
    code = audit.main([str(a) for a in argv + ["--training-corpus", tmp_path / "gone" / "*.jsonl"]])
    _, err = capfd.readouterr()
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: training corpus") and "gone" in lines[0]
    assert not out.exists()


@pytest.fixture(scope="module")
def corpus_report(tiny_model_dir, tmp_path_factory):
    """Members and half the non-members (verbatim) make up the training corpus, in two formats."""
    members, nonmembers = texts_of(MEMBERS), texts_of(NONMEMBERS)
    root = tmp_path_factory.mktemp("corpus")
    with open(root / "part1.jsonl", "w", encoding="utf-8") as f:
        for t in members:
            f.write(json.dumps({"text": t}) + "\n")
    leaked = nonmembers[: len(nonmembers) // 2]
    pd.DataFrame({"text": leaked}).to_parquet(root / "part2.parquet")
    rep = run_audit(
        str(tiny_model_dir),
        members,
        nonmembers,
        n_bootstrap=10,
        attacks="loss",
        training_corpus=str(root / "part*"),
        corpus_index="exact",
    )
    return rep, members, nonmembers, leaked


def test_corpus_check_counts_the_leaked_nonmembers(corpus_report):
    rep, members, nonmembers, leaked = corpus_report
    c = rep.corpus
    assert c["corpus files"] == 2 and c["corpus documents"] == len(members) + len(leaked)
    ov = rep.corpus_overlap["ngram_13"].to_numpy()
    assert len(ov) == len(nonmembers)
    long_enough = np.array([len(t.split()) >= 13 for t in nonmembers])
    # every leaked non-member is wholly in the corpus; the rest only by chance
    assert (ov[: len(leaked)][long_enough[: len(leaked)]] == 1.0).all()
    want = int((ov > 0.8).sum())
    assert c["fail decontamination (> 80%)"] == want >= int(long_enough[: len(leaked)].sum()) > 0
    assert rep.corpus_overlap["fails_decontamination"].sum() == want


def test_corpus_section_comes_before_any_attack_number(corpus_report, tmp_path):
    rep, _, nonmembers, _ = corpus_report
    md = rep.to_markdown()
    fails = rep.corpus["fail decontamination (> 80%)"]
    assert f"**{fails} of {len(nonmembers)} non-members" in md
    assert md.index("## Non-members against the training corpus") < md.index("## Attacks")
    assert md.index("would fail that decontamination") < md.index("AUC")
    saved = rep.save(tmp_path / "rep")
    table = pd.read_csv(saved / "corpus_overlap.csv")
    assert len(table) == len(nonmembers) and int(table.fails_decontamination.sum()) == fails
    assert json.loads((saved / "audit.json").read_text())["corpus"]["corpus files"] == 2


def test_no_corpus_no_section(tiny_model_dir):
    rep = run_audit(str(tiny_model_dir), texts_of(MEMBERS), texts_of(NONMEMBERS), n_bootstrap=10, attacks="loss")
    assert rep.corpus is None and rep.corpus_lines() == []
    assert "training corpus" not in rep.to_markdown()


def test_cli_with_engine_ray_builds_the_corpus_index_on_ray(tmp_path, monkeypatch):
    """``--engine ray``: the index is built by ``build_sharded`` on the audit's engine, one shard per
    cluster CPU (faked here: the shards run in a process pool), and reports what the local build does."""
    from mimirlib.audit import run as audit_run
    from mimirlib.core import engines, ngrams, ray_cluster

    class Loaded(Exception):
        pass

    def no_model(*a, **k):
        raise Loaded

    calls, build = [], ngrams.build_sharded
    runner = engines.RayEngine(address="127.0.0.1:6379")

    def on_fake_ray(texts, n, mode="bloom", fpr=0.01, shards=2, engine="process", ray_address=None):
        calls.append((engine, shards))
        return build(texts, n, mode, fpr, shards=shards)

    monkeypatch.setattr("mimirlib.core.models.load_model", no_model)
    monkeypatch.setattr(
        audit_run, "connect_engine", lambda options: None if options.engine in (None, "local") else runner
    )
    monkeypatch.setattr(ngrams, "build_sharded", on_fake_ray)
    monkeypatch.setattr(ray_cluster, "cluster_cpus", lambda engine: 3)
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in texts_of(MEMBERS)))
    argv = ["--model", "some-org/some-model", "--members", MEMBERS, "--nonmembers", NONMEMBERS, "--out", tmp_path / "o"]
    argv += ["--training-corpus", tmp_path / "corpus.jsonl", "--corpus-index", "exact", "--engine", "ray"]
    with pytest.raises(Loaded):  # the corpus is checked before any model is loaded
        audit.main([str(a) for a in argv])
    assert calls == [(runner, 3)]
    files, nonmembers = [tmp_path / "corpus.jsonl"], texts_of(NONMEMBERS)
    local, on_ray = (ngrams.corpus_overlap(nonmembers, files, mode="exact", engine=e) for e in (None, runner))
    np.testing.assert_array_equal(on_ray.overlap, local.overlap)
    assert on_ray.summary() == local.summary()
