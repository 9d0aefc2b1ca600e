"""The embedded lab's corpus: a committed, compressed "mini-Pile" of six domains.

The Pile cannot be fetched offline, so ``scripts/build_snapshot.py`` builds stand-ins from sources
that ship with PyPI or Debian packages and commits the result under ``mimirlib/lab/snapshot/``
(see its ``ATTRIBUTION.md``).  Reading the committed files, not the sources, means the lab needs
neither root nor those packages, and every run sees the same bytes (``verify_snapshot`` checks).

Each document is a dict with ``id`` (``"<domain>/NNNNNN"``, sorted), ``text`` (>= 100 and <= 600
whitespace words), ``source`` (file or entry it came from), ``date`` (ISO ``YYYY-MM-DD`` or None)
and ``dup_of`` (None, or the id of the first document with the identical text).
"""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import json
import zlib
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Union

DOMAINS = ("code", "licenses", "math", "docs", "encyclopedia", "changelog")
# Pile domain each one plays, for tables and captions.
PLAYS = {
    "code": "GitHub",
    "licenses": "GitHub (high-overlap licence texts)",
    "math": "DM Mathematics",
    "docs": "ArXiv / PubMed Central (technical prose)",
    "encyclopedia": "Wikipedia",
    "changelog": "HackerNews (dated; temporal shift)",
}
DATED_DOMAINS = ("encyclopedia", "changelog")  # documents carry a date (changelog: all of them)
TEMPORAL_DOMAIN = "changelog"
MANIFEST = "manifest.json"

Root = Union[str, Path, Traversable, None]


def snapshot_root():
    """The committed snapshot folder, found through importlib.resources so it also works when installed."""
    return resources.files("mimirlib.lab").joinpath("snapshot")


def _root(root: Root):
    return snapshot_root() if root is None else (Path(root) if isinstance(root, str) else root)


def domain_file(name: str, root: Root = None):
    if name not in DOMAINS:
        raise ValueError(f"unknown corpus domain {name!r}; expected one of {', '.join(DOMAINS)}")
    return _root(root).joinpath(f"{name}.jsonl.gz")


def _valid_date(value: Any) -> bool:
    if value is None:
        return True
    try:
        return isinstance(value, str) and len(value) == 10 and dt.date.fromisoformat(value).isoformat() == value
    except ValueError:
        return False


def load_domain(name: str, root: Root = None, dedup: bool = True) -> list[dict]:
    """All documents of one domain, sorted by id.

    ``dedup=True`` (the default) drops exact duplicates (records with ``dup_of`` set), so that one
    text can never be both a member and a non-member; ``dedup=False`` returns the natural corpus.
    ``root`` points at another snapshot folder (tests, rebuilt snapshots).  A missing, truncated
    or malformed file raises ValueError naming the file (and the line, where there is one)."""
    path = domain_file(name, root)
    if not path.is_file():
        raise ValueError(
            f"corpus domain {name!r}: snapshot file {path} is missing "
            "(rebuild with scripts/build_snapshot.py --out mimirlib/lab/snapshot)"
        )
    try:
        with path.open("rb") as fh:
            raw = gzip.decompress(fh.read())
        lines = raw.decode("utf-8").splitlines()
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as exc:
        raise ValueError(f"corpus domain {name!r}: snapshot file {path} is not valid gzip'd UTF-8 ({exc})") from exc
    docs, prev = [], ""
    for lineno, line in enumerate(lines, 1):
        where = f"corpus domain {name!r}: {path} line {lineno}"
        try:
            doc = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: not JSON ({exc})") from exc
        if not isinstance(doc, dict) or not all(k in doc for k in ("id", "text", "source", "date")):
            raise ValueError(f"{where}: expected an object with keys id, text, source, date")
        if not (isinstance(doc["id"], str) and doc["id"].startswith(f"{name}/") and doc["id"] > prev):
            raise ValueError(f"{where}: id {doc['id']!r} is not a {name}/... id in increasing order")
        if not isinstance(doc["text"], str) or not _valid_date(doc["date"]):
            raise ValueError(f"{where}: text must be a string and date ISO YYYY-MM-DD or null")
        prev = doc["id"]
        doc.setdefault("dup_of", None)
        if not (dedup and doc["dup_of"] is not None):
            docs.append(doc)
    if not docs:
        raise ValueError(f"corpus domain {name!r}: snapshot file {path} holds no documents")
    return docs


def snapshot_manifest(root: Root = None) -> dict:
    """Counts, word statistics, sha256 per file, source versions and generator settings of the snapshot."""
    path = _root(root).joinpath(MANIFEST)
    if not path.is_file():
        raise ValueError(f"corpus snapshot manifest {path} is missing")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"corpus snapshot manifest {path} is malformed ({exc})") from exc
    if not isinstance(manifest, dict) or not isinstance(manifest.get("domains"), dict):
        raise ValueError(f"corpus snapshot manifest {path} has no 'domains' object")
    return manifest


def verify_snapshot(root: Root = None) -> dict:
    """Check every domain file against the sha256 in the manifest, so a silently changed or
    half-written snapshot cannot feed the lab.  Returns the manifest; raises ValueError naming the file."""
    manifest = snapshot_manifest(root)
    for name in DOMAINS:
        entry = manifest["domains"].get(name)
        if not entry or "sha256" not in entry:
            raise ValueError(f"corpus snapshot manifest has no sha256 for domain {name!r}")
        path = domain_file(name, root)
        if not path.is_file():
            raise ValueError(f"corpus snapshot file {path} is missing")
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest != entry["sha256"]:
            raise ValueError(
                f"corpus snapshot file {path} does not match the manifest "
                f"(sha256 {digest[:12]}..., expected {entry['sha256'][:12]}...)"
            )
    return manifest
