"""The classroom pack (mimirlib.teach.classroom): a manifest of sha256 checksums first, every file checked in
a staging folder before anything is installed; tampering, extra or missing files and another lab
version refused in one line (exit 2) with the cache untouched. Unit tests use a synthetic pack of the
smoke profile's lab config; the slow test packs the smoke lab itself, whole and per session, and re-runs
chapters from the packs."""

import hashlib
import io
import re
import tarfile
from pathlib import Path

import numpy as np
import pytest

from mimirlib.teach import classroom
from mimirlib.teach.classroom import MANIFEST, PackError, unpack, write_pack
from mimirlib.lab.layout import LAB_FORMAT, config_key
from mimirlib.profiles import load_profile
from mimirlib.core.signals import SignalCache, TokenSignals

ROOT = Path(__file__).resolve().parents[1]
MODEL_ID, WINDOW, STRIDE = "local:target-h16:0123456789abcdef", 128, 64


def signals(n: int, value: float) -> TokenSignals:
    a = np.full(n, value, dtype=np.float32)
    return TokenSignals(a, a, a)


def head(**lab_changes) -> dict:
    cfg = load_profile("smoke")["lab"]
    key = config_key(cfg)
    lab = {"folder": f"lab/smoke-{key}", "lab_format": LAB_FORMAT, "key": key, "config": cfg} | lab_changes
    return {"pack_format": classroom.PACK_FORMAT, "profile": "smoke", "lab": lab, "signals_folder": "signals"}


@pytest.fixture
def made(tmp_path):
    """A synthetic smoke pack: two lab files and one signal file holding text "h1"."""
    src = tmp_path / "src"
    (src / "models" / "target-h16").mkdir(parents=True)
    (src / "lab.json").write_text('{"profile": "smoke"}')
    (src / "models" / "target-h16" / "config.json").write_text('{"hidden_size": 16}')
    cache = SignalCache(src / "signals")
    cache.put_many(MODEL_ID, WINDOW, STRIDE, {"h1": signals(5, -1.0)})
    sig = cache.path_for(MODEL_ID, WINDOW, STRIDE)
    h = head()
    members = {
        f"{h['lab']['folder']}/lab.json": src / "lab.json",
        f"{h['lab']['folder']}/models/target-h16/config.json": src / "models" / "target-h16" / "config.json",
        f"signals/{sig.name}": sig,
    }
    out = tmp_path / "pack.tar"
    write_pack(out, h, members)
    return out, h, members


def member_names(pack: Path) -> list[str]:
    with tarfile.open(pack) as tar:
        return tar.getnames()


def rewrite(pack: Path, out: Path, *, drop: str | None = None, add: tuple[str, bytes] | None = None) -> Path:
    """A copy of ``pack`` without member ``drop`` or with an extra member (the manifest unchanged)."""
    with tarfile.open(pack) as src, tarfile.open(out, "w") as dst:
        for m in src.getmembers():
            if m.name != drop:
                dst.addfile(m, src.extractfile(m))
        if add:
            info = tarfile.TarInfo(add[0])
            info.size = len(add[1])
            dst.addfile(info, io.BytesIO(add[1]))
    return out


def flip_byte(pack: Path, member: str) -> None:
    with tarfile.open(pack) as tar:
        offset = tar.getmember(member).offset_data
    with pack.open("r+b") as fh:
        fh.seek(offset)
        b = fh.read(1)
        fh.seek(offset)
        fh.write(bytes([b[0] ^ 0xFF]))


def untouched(cache: Path) -> bool:
    """Nothing installed and no staging folder left (only what the test put there)."""
    return not (cache / "lab").exists() and not list(cache.glob(".classroom-unpack-*"))


def test_manifest_is_the_first_member_and_lists_every_file_with_its_sha256(made):
    out, _, members = made
    names = member_names(out)
    assert names[0] == MANIFEST and sorted(names[1:]) == sorted(members)
    manifest = classroom.read_manifest(out)
    for name, path in members.items():
        assert manifest["files"][name] == {
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "bytes": path.stat().st_size,
        }
    assert manifest["lab"]["lab_format"] == LAB_FORMAT


def test_unpack_restores_lab_and_signals_and_merges_an_existing_signal_file(made, tmp_path):
    out, h, members = made
    cache = tmp_path / "cache"
    mine = SignalCache(cache / "signals")
    mine.put_many(MODEL_ID, WINDOW, STRIDE, {"h0": signals(3, -2.0)})  # the student's own entry
    info = unpack(out, cache)
    assert info.signal_files == 1 and info.files == 3
    for name, path in members.items():
        assert (cache / name).read_bytes() == path.read_bytes() or name.startswith("signals/")
    got = mine.get_many(MODEL_ID, WINDOW, STRIDE, ["h0", "h1"])
    assert sorted(got) == ["h0", "h1"] and float(got["h1"].logprob[0]) == -1.0
    assert not list(cache.glob(".classroom-unpack-*"))
    unpack(out, cache)  # again: the lab folder is swapped, the signals merged
    assert sorted(mine.get_many(MODEL_ID, WINDOW, STRIDE, ["h0", "h1"])) == ["h0", "h1"]


def test_unpack_adds_packed_paraphrases_and_kept_runs_and_keeps_the_students_own(tmp_path):
    src = tmp_path / "src"
    (src / "ab").mkdir(parents=True)
    (src / "lab.json").write_text('{"profile": "smoke"}')
    (src / "ab" / "ab01.json").write_text('{"text": "packed one"}')
    (src / "ab" / "ab02.json").write_text('{"text": "packed two"}')
    (src / "k1.pkl").write_bytes(b"kept run")
    h = head() | {"paraphrases_folder": "paraphrases", "runs_folder": "runs"}
    members = {
        f"{h['lab']['folder']}/lab.json": src / "lab.json",
        "paraphrases/ab/ab01.json": src / "ab" / "ab01.json",
        "paraphrases/ab/ab02.json": src / "ab" / "ab02.json",
        "runs/epochs/k1.pkl": src / "k1.pkl",
    }
    out = tmp_path / "pack.tar"
    write_pack(out, h, members)
    cache = tmp_path / "cache"
    (cache / "paraphrases" / "ab").mkdir(parents=True)
    (cache / "paraphrases" / "ab" / "ab01.json").write_text('{"text": "the student\'s"}')
    info = unpack(out, cache)
    assert info.paraphrases == 2
    assert (cache / "paraphrases" / "ab" / "ab01.json").read_text() == '{"text": "the student\'s"}'
    assert (cache / "paraphrases" / "ab" / "ab02.json").read_text() == '{"text": "packed two"}'
    assert (cache / "runs" / "epochs" / "k1.pkl").read_bytes() == b"kept run"
    assert not list(cache.glob(".classroom-unpack-*"))


@pytest.mark.parametrize(
    "damage, culprit",
    [
        ("flip", "models/target-h16/config.json: sha256 differs"),
        ("drop", "models/target-h16/config.json: listed in classroom-pack.json but not in the pack"),
        ("extra", "stray.txt: not listed in classroom-pack.json"),
    ],
)
def test_a_damaged_pack_is_refused_naming_the_file_and_nothing_is_installed(made, tmp_path, capsys, damage, culprit):
    out, h, _ = made
    target = f"{h['lab']['folder']}/models/target-h16/config.json"
    if damage == "flip":
        flip_byte(out, target)
        bad = out
    elif damage == "drop":
        bad = rewrite(out, tmp_path / "bad.tar", drop=target)
    else:
        bad = rewrite(out, tmp_path / "bad.tar", add=("stray.txt", b"x"))
    cache = tmp_path / "cache"
    assert classroom.main(["unpack", str(bad), "--cache", str(cache)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and culprit in err[0] and str(bad) in err[0], err
    assert untouched(cache) and not (cache / "signals").exists()


@pytest.mark.parametrize(
    "changes, words",
    [
        ({"lab_format": LAB_FORMAT + 1}, f"lab format {LAB_FORMAT + 1}, this checkout builds format {LAB_FORMAT}"),
        ({"key": "0000000000"}, "another 'smoke' lab config"),
        ("seed", "another 'smoke' lab config"),
    ],
)
def test_a_pack_of_another_lab_version_is_refused_naming_the_manifest(made, tmp_path, capsys, changes, words):
    _, _, members = made
    if changes == "seed":
        cfg = load_profile("smoke")["lab"] | {"seed": 99}
        changes = {"config": cfg, "key": config_key(cfg)}
    out = tmp_path / "other.tar"
    write_pack(out, head(**changes), members)
    cache = tmp_path / "cache"
    assert classroom.main(["unpack", str(out), "--cache", str(cache)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{out}: {MANIFEST}" in err[0] and words in err[0], err
    assert not cache.exists()  # refused before the cache was even created


def test_unsafe_member_names_and_non_packs_are_refused(made, tmp_path):
    _, h, members = made
    evil = tmp_path / "evil.tar"
    write_pack(evil, h, {"../escape.txt": next(iter(members.values()))})
    with pytest.raises(PackError, match=r"\.\./escape\.txt: not a plain relative file"):
        unpack(evil, tmp_path / "cache")
    assert not (tmp_path / "escape.txt").exists()
    plain = tmp_path / "plain.tar"
    with tarfile.open(plain, "w") as tar:
        tar.add(next(iter(members.values())), arcname="x.json")
    with pytest.raises(PackError, match="not a classroom pack"):
        unpack(plain, tmp_path / "cache")
    (tmp_path / "junk.tar").write_bytes(b"not a tar at all")
    with pytest.raises(PackError, match="junk.tar: unreadable pack"):
        unpack(tmp_path / "junk.tar", tmp_path / "cache")


def test_cli_rejects_bad_arguments_before_anything_starts(tmp_path, capsys):
    for argv, words in (
        (["unpack", str(tmp_path / "none.tar")], "none.tar: no such file"),
        (["pack", str(tmp_path / "out.zip"), "--profile", "smoke"], "out.zip: a pack is a .tar"),
        (["pack", str(tmp_path / "no" / "out.tar"), "--profile", "smoke"], "no folder"),
        (["pack", str(tmp_path / "out.tar"), "--profile", "paper"], "no embedded lab"),
        (["pack", str(tmp_path / "out.tar"), "--profile", "nosuch"], "unknown profile 'nosuch'"),
        (["pack", str(tmp_path / "out.tar"), "--profile", "smoke", "--chapters", "nosuch"], "unknown chapter 'nosuch'"),
        (
            [
                "pack",
                str(tmp_path / "out.tar"),
                "--profile",
                "smoke",
                "--chapters",
                "epochs",
                "--executed",
                str(tmp_path),
            ],
            "no executed chapter 'epochs': run it first",
        ),
    ):
        assert classroom.main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and words in err[0], (argv, err)
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ the smoke lab, for real


def stdout_of(path: Path) -> str:
    import nbformat

    nb = nbformat.read(path, as_version=4)
    return "".join(
        o.get("text", "")
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o.get("output_type") == "stream"
    )


@pytest.mark.slow
def test_smoke_packs_whole_and_per_session_chapters_rerun_from_them_with_zero_forward_passes(
    tmp_path, monkeypatch, smoke_lab, capsys
):
    """The whole lab's pack, and a session's: each executed chapter lists the cached files it read; a
    session's pack keeps only those checkpoints and signal files (the rest of the lab whole), its chapters
    re-run from it with no forward pass, and a second session's pack adds to the first's."""
    import nbformat

    from mimirlib.runner import run_notebook

    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    executed, sessions = tmp_path / "executed", ("epochs", "training_size")
    for chapter in sessions:
        run_notebook(chapter, profile="smoke", out_dir=executed)
    reads = {c: nbformat.read(executed / f"{c}.ipynb", as_version=4).metadata.mimir.reads for c in sessions}
    checkpoints = {c: {r for r in reads[c] if "/revisions/" in r} for c in sessions}
    # training size reads the targets' checkpoints, epochs the SILO-style run's: both sessions carry checkpoints,
    # and different ones, so unpacking the second session's pack must keep the first's
    assert checkpoints["training_size"] and checkpoints["epochs"], reads
    assert all("/silo-" in r for r in checkpoints["epochs"]), checkpoints["epochs"]
    assert not checkpoints["training_size"] & checkpoints["epochs"]
    assert any(r.startswith("signals/") for r in reads["epochs"])

    full = classroom.pack(tmp_path / "full.tar", "smoke")
    names = member_names(full.path)
    assert full.signal_files > 0 and full.lab_folder.endswith("/" + smoke_lab.root.name) and full.chapters is None
    assert any(n.endswith("/lab.json") for n in names) and any(n.endswith(".truth.jsonl") for n in names)
    # a read is a file (signals) or a folder (a checkpoint): the whole pack holds each
    assert all(r in names or any(n.startswith(r + "/") for n in names) for c in sessions for r in reads[c])

    from mimirlib.samplers.paraphrase import paraphrase_dir

    records = sorted(paraphrase_dir().rglob("*.json")) if paraphrase_dir().is_dir() else []
    assert full.paraphrases == len(records)  # every cached paraphrase travels with the pack
    assert all(f"paraphrases/{r.relative_to(paraphrase_dir()).as_posix()}" in names for r in records)
    packs = {c: classroom.pack(tmp_path / f"{c}.tar", "smoke", [c], executed) for c in sessions}
    for c, info in packs.items():
        names = member_names(info.path)
        assert info.chapters == [c] and info.bytes < full.bytes
        assert {n for n in names if n.startswith("signals/")} == {r for r in reads[c] if r.startswith("signals/")}
        kept = {r for r in reads[c] if r.startswith("runs/")}  # the chapter's kept run, which its handout reads
        assert len(kept) == 1 and {n for n in names if n.startswith("runs/")} == kept
        revisions = {"/".join(n.split("/")[:6]) for n in names if "/revisions/" in n}
        assert revisions == {r for r in reads[c] if "/revisions/" in r}
        assert any(n.endswith("model.safetensors") and "/revisions/" not in n for n in names)  # final weights stay

    cache = tmp_path / "student-cache"
    monkeypatch.setenv("MIMIR_CACHE", str(cache))
    for c in reversed(sessions):  # each pack holds other checkpoints: the second must not drop the first's
        assert classroom.main(["unpack", str(packs[c].path), "--cache", str(cache)]) == 0
        out = run_notebook(c, profile="smoke", out_dir=tmp_path / "from-pack")
        line = re.search(r"signal cache: (\d+) texts read from disk, (\d+) computed", stdout_of(out))
        assert line is not None and int(line[1]) > 0 and int(line[2]) == 0, (c, line)
    have = {p.relative_to(cache).as_posix() for p in cache.rglob("*")}
    assert set(reads["training_size"]) | set(reads["epochs"]) <= have

    weights = next(n for n in names if n.endswith("model.safetensors"))
    flip_byte(full.path, weights)
    capsys.readouterr()
    assert classroom.main(["unpack", str(full.path), "--cache", str(tmp_path / "other")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{weights}: sha256 differs" in err[0]
    assert untouched(tmp_path / "other")
