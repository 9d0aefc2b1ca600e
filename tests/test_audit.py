"""The audit: reading members / non-members, one-line errors before any model loads, the report
folder written atomically, and the command line."""

import re
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mimirlib import audit
from mimirlib.audit import AuditError, load_labeled_file, load_member_file, run_audit
from mimirlib.core.signals import ScoringOptions

FIX = Path(__file__).parent / "fixtures" / "audit"
MEMBERS, NONMEMBERS = FIX / "members.jsonl", FIX / "nonmembers.jsonl"
REPORT_FILES = ("report.md", "metrics.csv", "scores.csv", "roc.png", "scores.png")


def texts_of(path):
    return [json.loads(line)["text"] for line in path.read_text().splitlines() if line.strip()]


# ----------------------------------------------------------------------------- reading


def test_member_file_in_every_format_gives_the_same_texts(tmp_path):
    want = texts_of(MEMBERS)
    df = pd.read_json(MEMBERS, lines=True)
    df.to_csv(tmp_path / "m.csv", index=False)
    df.to_parquet(tmp_path / "m.parquet")
    assert load_member_file(MEMBERS) == want
    assert load_member_file(tmp_path / "m.csv") == want
    assert load_member_file(tmp_path / "m.parquet") == want
    assert len(want) == 12


def test_labeled_files_with_mixed_label_spellings_and_custom_columns(tmp_path):
    mem, non = load_labeled_file(FIX / "labeled.jsonl", "text", "label")  # bool, 0/1, "Member", "TRUE", ...
    assert sorted(mem) == sorted(texts_of(MEMBERS)) and sorted(non) == sorted(texts_of(NONMEMBERS))
    mem2, non2 = load_labeled_file(FIX / "labeled.csv", text_column="body", label_column="is_member")
    assert mem2 == texts_of(MEMBERS) and non2 == texts_of(NONMEMBERS)
    df = pd.read_csv(FIX / "labeled.csv")
    df["is_member"] = df.is_member.eq("member")  # real booleans in parquet
    df.to_parquet(tmp_path / "l.parquet")
    assert load_labeled_file(tmp_path / "l.parquet", "body", "is_member") == (mem2, non2)


@pytest.mark.parametrize(
    "value, want",
    [
        (True, True),
        (False, False),
        (1, True),
        (0, False),
        (1.0, True),
        ("member", True),
        ("NonMember", False),
        (" 1 ", True),
        ("0", False),
        ("True", True),
        (2, None),
        ("maybe", None),
        (None, None),
        (float("nan"), None),
        (np.int64(1), True),
        (np.bool_(False), False),
    ],
)
def test_parse_label(value, want):
    assert audit.parse_label(value) is want


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def member_error(tmp_path, name, content, **kw):
    p = write(tmp_path / name, content) if content is not None else tmp_path / name
    with pytest.raises(AuditError) as e:
        load_member_file(p, **kw)
    msg = str(e.value)
    assert "\n" not in msg and str(p) in msg
    return msg


def test_member_file_errors_name_the_culprit(tmp_path):
    assert "file not found" in member_error(tmp_path, "nope.jsonl", None)
    assert "unsupported file type '.txt'" in member_error(tmp_path, "a.txt", "hello\n")
    msg = member_error(tmp_path, "cols.jsonl", '{"body": "a text", "id": 1}\n')
    assert "no text column 'text'" in msg and "['body', 'id']" in msg
    msg = member_error(tmp_path, "cols.csv", "body,id\nsome text,1\n")
    assert "'text'" in msg and "['body', 'id']" in msg
    assert "empty set" in member_error(tmp_path, "empty.jsonl", "\n\n")
    assert "empty set" in member_error(tmp_path, "header.csv", "text\n")
    assert "empty file" in member_error(tmp_path, "blank.csv", "")
    msg = member_error(tmp_path, "bad.jsonl", '{"text": "fine"}\n{"text": "broken\n')
    assert f"{tmp_path / 'bad.jsonl'}:2" in msg and "malformed JSON" in msg
    assert ":2: expected a JSON object" in member_error(tmp_path, "list.jsonl", '{"text": "ok"}\n["x"]\n')
    msg = member_error(tmp_path, "ws.jsonl", '{"text": "fine"}\n{"text": "fine"}\n{"text": "  \\n "}\n')
    assert "line 3" in msg and "empty" in msg
    assert "row 2" in member_error(tmp_path, "ws.csv", 'text\nfine\n"   "\n')
    msg = member_error(tmp_path, "null.jsonl", '{"text": "fine"}\n{"text": null}\n')
    assert "line 2" in msg and "null, not text" in msg
    assert "line 2: no 'text' field" in member_error(tmp_path, "gap.jsonl", '{"text": "a"}\n{"body": "b"}\n')
    member_error(tmp_path, "sub.jsonl", '{"body": "a"}\n', text_column="body2")


def test_labeled_file_errors_name_file_column_and_value(tmp_path):
    p = write(tmp_path / "l.jsonl", '{"text": "a b c", "label": "member"}\n{"text": "d e f", "label": "perhaps"}\n')
    with pytest.raises(AuditError) as e:
        load_labeled_file(p, "text", "label")
    assert str(p) in str(e.value) and "'label'" in str(e.value) and "'perhaps'" in str(e.value)
    assert "line 2" in str(e.value)
    with pytest.raises(AuditError, match=r"no label column 'is_member'; columns present: \['text', 'label'\]"):
        load_labeled_file(p, "text", "is_member")
    only = write(tmp_path / "only.csv", "text,label\na b c,1\nd e f,true\n")
    with pytest.raises(AuditError, match="no non-members"):
        load_labeled_file(only, "text", "label")


def test_hf_dataset_folders_read_like_files(tmp_path, monkeypatch):
    """hf:FOLDER:SPLIT (saved with save_to_disk) gives the texts the jsonl files give; labels may be
    a class-label column; errors name the source and the row."""
    import datasets

    monkeypatch.setenv("MIMIR_CACHE", str(tmp_path / "cache"))
    mem, non = texts_of(MEMBERS), texts_of(NONMEMBERS)
    datasets.DatasetDict(
        {"train": datasets.Dataset.from_dict({"body": mem}), "test": datasets.Dataset.from_dict({"body": non})}
    ).save_to_disk(tmp_path / "saved")
    assert load_member_file(f"hf:{tmp_path / 'saved'}:train", "body") == mem
    assert audit.load_inputs(f"hf:{tmp_path / 'saved'}:train", f"hf:{tmp_path / 'saved'}:test", text_column="body") == (
        mem,
        non,
    )
    features = datasets.Features(
        {"text": datasets.Value("string"), "is": datasets.ClassLabel(names=["nonmember", "member"])}
    )
    labeled = datasets.Dataset.from_dict({"text": mem[:2] + non[:1], "is": [1, 1, 0]}, features=features)
    labeled.save_to_disk(tmp_path / "labeled")
    assert load_labeled_file(f"hf:{tmp_path / 'labeled'}", "text", "is") == (mem[:2], non[:1])
    datasets.Dataset.from_dict({"text": ["fine text", "  "]}).save_to_disk(tmp_path / "blank")
    with pytest.raises(AuditError, match=rf"hf:{tmp_path / 'blank'}:train: row 2: column 'text' is empty"):
        load_member_file(f"hf:{tmp_path / 'blank'}:train")
    with pytest.raises(AuditError, match=r"no text column 'text'; columns present: \['body'\]"):
        load_member_file(f"hf:{tmp_path / 'saved'}:train")


# ----------------------------------------------------------------------------- run_audit


@pytest.fixture(scope="module")
def reference_dir(tiny_model_dir, tmp_path_factory):
    """The tiny model with other weights: a reference that disagrees with the target."""
    import torch
    from transformers import AutoTokenizer, GPTNeoXForCausalLM

    model = GPTNeoXForCausalLM.from_pretrained(tiny_model_dir)
    torch.manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    out = tmp_path_factory.mktemp("ref") / "reference"
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(tiny_model_dir).save_pretrained(out)
    return out


@pytest.fixture
def no_model_loading(monkeypatch):
    """Any attempt to load a model fails the test: the error must come before."""

    def boom(*a, **k):
        raise AssertionError("a model was loaded before the inputs were validated")

    monkeypatch.setattr("mimirlib.core.models.load_model", boom)


@pytest.mark.parametrize(
    "kwargs, culprit",
    [
        (dict(members=[], nonmembers=["a b c"]), "members: no texts"),
        (dict(members=["a b c"], nonmembers=[]), "nonmembers: no texts"),
        (dict(members=["a b c", " "], nonmembers=["d e f"]), "member[1] is empty"),
        (dict(attacks=["loss", "gradnorm2"]), "attack 'gradnorm2': unknown"),
        (dict(attacks="loss,ref"), "attack 'ref' needs a reference model"),
        (dict(attacks=["ne"]), "attack 'ne' needs neighbours"),
        (dict(options=ScoringOptions(dtype="int3")), "dtype"),
        (dict(n_bootstrap=0), "n_bootstrap"),
        (dict(model="/no/such/model-dir"), "'/no/such/model-dir': no such folder"),
        (dict(reference_model="./missing-ref"), "reference model './missing-ref'"),
    ],
)
def test_run_audit_validates_everything_before_loading_a_model(no_model_loading, kwargs, culprit):
    args = dict(model="some-org/some-model", members=["a b c d"], nonmembers=["e f g h"])
    args.update(kwargs)
    with pytest.raises(AuditError) as e:
        run_audit(args.pop("model"), args.pop("members"), args.pop("nonmembers"), **args)
    assert culprit in str(e.value) and "\n" not in str(e.value)


def test_unloadable_model_folder_is_an_audit_error_naming_it(tmp_path):
    empty = tmp_path / "not-a-model"
    empty.mkdir()
    with pytest.raises(AuditError) as e:
        run_audit(str(empty), ["a b c d"], ["e f g h"], n_bootstrap=10)
    assert str(empty) in str(e.value) and "\n" not in str(e.value)
    weights = write(tmp_path / "weights.bin", "x")
    with pytest.raises(AuditError, match="is a file"):
        run_audit(str(weights), ["a b c d"], ["e f g h"])


@pytest.fixture(scope="module")
def ref_report(tiny_model_dir, reference_dir):
    return run_audit(
        str(tiny_model_dir),
        texts_of(MEMBERS),
        texts_of(NONMEMBERS),
        reference_model=str(reference_dir),
        n_bootstrap=50,
        options=ScoringOptions(window=64),
    )


def test_run_audit_with_reference_adds_ref_column_and_everything_else(ref_report):
    r = ref_report
    assert r.attacks == ["loss", "zlib", "min_k", "min_k_pp", "ref:reference"]
    assert r.scores.is_member.tolist() == [1] * 12 + [0] * 12
    assert np.isfinite(r.scores[r.attacks].to_numpy()).all()
    assert r.scores["ref:reference"].std() > 0  # target and reference differ
    m = r.metrics.set_index("attack")
    assert list(m.index) == r.attacks
    assert ((m.auc_lo <= m.auc) & (m.auc <= m.auc_hi)).all()
    assert {"tpr@1%fpr", "tpr@0.1%fpr", "min_resolvable_fpr"} <= set(m.columns)
    assert r.reference["name"].endswith("reference") and r.model["params"] > 0
    assert set(r.blind) >= {"auc", "n_members", "n_nonmembers"} and r.blind["n_members"] == 12


def test_overlap_of_nonmembers_with_members(ref_report):
    ov = ref_report.overlap.set_index("n")
    assert list(ov.index) == [7, 13]
    # non-member 0 copies 26 of a member's 30 words: 20 of its 24 7-grams and 14 of its 18 13-grams
    per = ref_report.nonmember_overlap
    assert per.loc[0, "ngram_7"] == pytest.approx(20 / 24) and per.loc[0, "ngram_13"] == pytest.approx(14 / 18)
    assert ov.loc[7, "max"] == pytest.approx(20 / 24)
    assert ov.loc[13, "frac_above_80"] == 0.0 and ov.loc[7, "frac_above_80"] == pytest.approx(1 / 12)
    assert (per.iloc[1:]["ngram_13"] < 0.5).all()  # random texts share few 13-grams


def test_markdown_report_has_every_section(ref_report):
    md = ref_report.to_markdown(figures=True)
    for part in (
        "## Attacks",
        "AUC [95% CI]",
        "TPR@1% FPR",
        "TPR@0.1% FPR",
        "ref:reference",
        "## Blind baseline",
        "## N-gram overlap",
        "## Findings",
        "roc.png",
        "scores.png",
        "TPR@0.1% FPR as TPR at FPR 0",
    ):
        assert part in md, part
    assert "roc.png" not in ref_report.to_markdown()
    # the smallest measurable FPR in the budgets' own units (it read "0.0038" beside "TPR@0.1% FPR")
    assert re.search(r"smallest measurable FPR is \d+\.\d\d%; read TPR@", md)


def test_findings_warn_when_the_blind_baseline_separates_the_sets(ref_report):
    import dataclasses

    shifted = dataclasses.replace(ref_report, blind={**ref_report.blind, "auc": 0.9})
    assert any("distribution" in f for f in shifted.findings())
    fine = dataclasses.replace(ref_report, blind={**ref_report.blind, "auc": 0.5})
    assert not any("distribution" in f for f in fine.findings())
    missing = dataclasses.replace(ref_report, blind={"error": "too few texts"})
    assert "not computed (too few texts)" in missing.to_markdown()
    # an attack counts as beating the baseline only above max(chance, blind AUC)
    metrics = ref_report.metrics.copy()
    metrics["auc_lo"] = [0.55, 0.5, 0.45, 0.3, 0.5]
    low = dataclasses.replace(ref_report, metrics=metrics, blind={**ref_report.blind, "auc": 0.3})
    assert "max(0.5, 0.300)): loss." in "\n".join(low.findings())
    assert "none." in "\n".join(dataclasses.replace(low, blind={**low.blind, "auc": 0.58}).findings())
    assert "error" in audit.blind_baseline(["a b"], ["c d"])


def test_too_short_text_fails_with_audit_error(tiny_model_dir):
    with pytest.raises(AuditError, match="scoring: text 'a'"):
        run_audit(str(tiny_model_dir), ["a", "membership inference text"], ["the model reads"], n_bootstrap=10)


# ----------------------------------------------------------------------------- saving


def test_save_writes_every_file_and_replaces_an_earlier_report(ref_report, tmp_path):
    out = tmp_path / "deep" / "report"
    ref_report.save(out)
    for f in REPORT_FILES:
        assert (out / f).stat().st_size > 0, f
    metrics = pd.read_csv(out / "metrics.csv")
    assert metrics.attack.tolist() == ref_report.attacks
    assert pd.read_csv(out / "scores.csv").shape == ref_report.scores.shape
    write(out / "stale.txt", "from an earlier run")
    ref_report.save(out)
    assert not (out / "stale.txt").exists() and (out / "report.md").exists()
    assert sorted(p.name for p in out.parent.iterdir()) == ["report"]  # no temp folders left


def test_failed_save_leaves_the_earlier_report_and_no_debris(ref_report, tmp_path, monkeypatch):
    out = tmp_path / "report"
    ref_report.save(out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def broken(*a, **k):
        raise RuntimeError("plotting failed")

    monkeypatch.setattr(audit.AuditReport, "scores_figure", broken)
    with pytest.raises(RuntimeError):
        ref_report.save(out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]
    with pytest.raises(RuntimeError):
        ref_report.save(tmp_path / "new")
    assert not (tmp_path / "new").exists() and sorted(p.name for p in tmp_path.iterdir()) == ["report"]


def test_save_refuses_a_folder_that_is_not_a_report(ref_report, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    write(mine / "notes.txt", "keep me")
    with pytest.raises(AuditError, match="not an earlier audit report"):
        ref_report.save(mine)
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]


# ----------------------------------------------------------------------------- command line


def run_cli(capfd, *argv):
    code = audit.main([str(a) for a in argv])
    out, err = capfd.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    "case",
    [
        "missing_file",
        "missing_column",
        "empty_set",
        "bad_label",
        "malformed_jsonl",
        "missing_model",
        "unloadable_model",
        "only_members",
        "both_inputs",
    ],
)
def test_cli_errors_are_one_line_exit_2_and_write_nothing(case, tmp_path, capfd, tiny_model_dir):
    model, out = str(tiny_model_dir), tmp_path / "out"
    files = ["--members", MEMBERS, "--nonmembers", NONMEMBERS]
    culprit = None
    if case == "missing_file":
        files[3] = culprit = tmp_path / "nonmembers.jsonl"
    elif case == "missing_column":
        files[1] = culprit = write(tmp_path / "m.csv", "body\nsome member text here\n")
    elif case == "empty_set":
        files[3] = culprit = write(tmp_path / "empty.jsonl", "")
    elif case == "bad_label":
        culprit = write(tmp_path / "l.csv", "text,label\nthe model reads,1\nthe text,nonmember\nthe next one,2\n")
        files = ["--labeled", culprit]
    elif case == "malformed_jsonl":
        culprit = write(tmp_path / "m.jsonl", MEMBERS.read_text() + '{"text": "cut off\n')
        files[1] = culprit
    elif case == "missing_model":
        model = culprit = tmp_path / "no-such-model"
    elif case == "unloadable_model":
        (tmp_path / "junk-model").mkdir()
        write(tmp_path / "junk-model" / "config.json", "{not json")
        model = culprit = tmp_path / "junk-model"
    elif case == "only_members":
        files, culprit = files[:2], "--nonmembers"
    elif case == "both_inputs":
        files, culprit = files + ["--labeled", FIX / "labeled.jsonl"], "--labeled"
    code, stdout, err = run_cli(capfd, "--model", model, *files, "--out", out, "--n-bootstrap", 10)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert str(culprit) in lines[0]
    if case == "bad_label":
        assert "'label'" in lines[0] and "'2'" in lines[0] and "row 3" in lines[0]
    if case == "malformed_jsonl":
        assert f"{culprit}:13" in lines[0]
    assert not out.exists() and stdout == ""
    assert not list(tmp_path.glob(".out.*"))


def test_cli_hub_dataset_offline_is_one_line_exit_2(tmp_path, capfd, monkeypatch, no_model_loading):
    """An hf: hub name with the hub unreachable (an endpoint refusing connections, so the test does
    not depend on this machine's network) fails before any model loads, in one line naming it."""
    monkeypatch.setattr("huggingface_hub.constants.ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("MIMIR_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "out"
    argv = ["--model", "org/model", "--members", "hf:org/data:cfg:train", "--nonmembers", NONMEMBERS, "--out", out]
    code, stdout, err = run_cli(capfd, *argv)
    assert code == 2 and stdout == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: hf:org/data:cfg:train: "), err
    assert "'org/data'" in lines[0] and "unreachable" in lines[0] and "pass a local file" in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_cli_writes_the_report_and_keeps_it_when_a_later_run_fails(tmp_path, capfd, tiny_model_dir):
    out = tmp_path / "report"
    code, stdout, err = run_cli(
        capfd,
        "--model",
        tiny_model_dir,
        "--labeled",
        FIX / "labeled.csv",
        "--text-column",
        "body",
        "--label-column",
        "is_member",
        "--out",
        out,
        "--n-bootstrap",
        20,
        "--attacks",
        "loss,min_k",
        "--window",
        64,
    )
    assert code == 0, err
    assert "| loss |" in stdout and "| min_k |" in stdout and f"report written to {out / 'report.md'}" in stdout
    for f in REPORT_FILES:
        assert (out / f).is_file(), f
    assert pd.read_csv(out / "metrics.csv").attack.tolist() == ["loss", "min_k"]
    assert "labeled.csv" in (out / "report.md").read_text()
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    code, _, err = run_cli(
        capfd, "--model", tiny_model_dir, "--members", MEMBERS, "--nonmembers", tmp_path / "gone.jsonl", "--out", out
    )
    assert code == 2 and "gone.jsonl" in err
    code, _, err = run_cli(
        capfd, "--model", tmp_path / "gone-model", "--members", MEMBERS, "--nonmembers", NONMEMBERS, "--out", out
    )
    assert code == 2 and "gone-model" in err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]


def test_cli_refuses_to_replace_a_folder_of_other_files(tmp_path, capfd, tiny_model_dir):
    write(tmp_path / "notes.txt", "mine")
    code, _, err = run_cli(
        capfd, "--model", tiny_model_dir, "--members", MEMBERS, "--nonmembers", NONMEMBERS, "--out", tmp_path
    )
    assert code == 2 and "not an earlier audit report" in err and len(err.strip().splitlines()) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_python_dash_m_entry_point(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mimirlib.audit",
            "--model",
            "x/y",
            "--members",
            MEMBERS,
            "--nonmembers",
            tmp_path / "none.csv",
            "--out",
            out,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"error: {tmp_path / 'none.csv'}: file not found"]
    assert not out.exists()
