"""The real path: hub names versus local paths, and the MIMIR dataset by its own config and split names.

`is_local_path` is the one rule for "is this a local file or folder, or a hub name?" (models,
masked LMs, audits). The MIMIR dataset (``iamgroot42/mimir``) is gated and script-based, and
current ``datasets`` releases refuse loading scripts, so we read its raw jsonl files directly,
from the hub or from a local copy of the dataset repository laid out the same way::

    cache_100_200_1000_512/train/<config>_<split>.jsonl            members, one JSON string per line
    cache_100_200_1000_512/test/<config>_<split>.jsonl             non-members
    cache_100_200_1000_512/{train,test}_neighbors/<config>_<split>_neighbors_25_bert_in_place_swap.jsonl

(``full_pile`` lives under ``cache_100_200_10000_512``; split ``none`` has no suffix.)
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from mimirlib.core.benchmark import Benchmark, BenchmarkError, iter_jsonl

MIMIR_REPO = "iamgroot42/mimir"
NGRAM_SPLITS = ("ngram_7_0.2", "ngram_13_0.2", "ngram_13_0.8")
CONFIGS = {
    **{
        c: NGRAM_SPLITS
        for c in ("arxiv", "dm_mathematics", "github", "hackernews", "pile_cc", "pubmed_central", "wikipedia_(en)")
    },
    "full_pile": ("none",),
    "c4": ("none",),
    "temporal_arxiv": ("2020_08", "2021_01", "2021_06", "2022_01", "2022_06", "2023_01", "2023_06"),
    "temporal_wiki": ("none",),
}
NEIGHBOR_SUFFIX = "_neighbors_25_bert_in_place_swap"
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


def is_local_path(name) -> bool:
    """True when ``name`` means a file or folder on this machine, False when it is a hub name.

    Local: anything that exists (``~`` expanded), and anything written like a path even if it
    is missing (so the caller can say "no such folder" rather than ask the hub): an
    ``os.PathLike``, an absolute path, a name starting with ``.`` or ``~``, containing a
    backslash or ending in ``/``, or not of the hub's ``name`` / ``org/name`` form (``a/b/c``,
    spaces). A missing ``org/name`` is a hub name.
    """
    if isinstance(name, os.PathLike):
        return True
    s = str(name)
    if Path(s).expanduser().exists():
        return True
    return os.path.isabs(s) or s.startswith((".", "~")) or "\\" in s or s.endswith("/") or not _HUB_ID.match(s)


def mimir_files(config: str, split: str) -> dict[str, str]:
    """Repository-relative paths of one benchmark's raw files; unknown names raise, listing the valid ones."""
    if config not in CONFIGS:
        raise BenchmarkError(f"unknown MIMIR config {config!r}; valid: {sorted(CONFIGS)}")
    if split not in CONFIGS[config]:
        raise BenchmarkError(f"unknown split {split!r} for MIMIR config {config!r}; valid: {list(CONFIGS[config])}")
    parent = "cache_100_200_10000_512" if config == "full_pile" else "cache_100_200_1000_512"
    stem = config if split == "none" else f"{config}_{split}"
    return {
        "member": f"{parent}/train/{stem}.jsonl",
        "nonmember": f"{parent}/test/{stem}.jsonl",
        "member_neighbors": f"{parent}/train_neighbors/{stem}{NEIGHBOR_SUFFIX}.jsonl",
        "nonmember_neighbors": f"{parent}/test_neighbors/{stem}{NEIGHBOR_SUFFIX}.jsonl",
    }


def _read_lines(path: Path, kind: type) -> list:
    out = []
    for lineno, value in iter_jsonl(path):
        if isinstance(value, dict) and "text" in value:
            value = value["text"]
        if not isinstance(value, kind):
            raise BenchmarkError(f"{path}:{lineno}: expected a JSON {kind.__name__}, got {type(value).__name__}")
        out.append(value)
    return out


def _fetch(repo: str, filename: str, revision: str | None) -> Path:
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError, GatedRepoError, LocalEntryNotFoundError

    try:
        return Path(hf_hub_download(repo, filename, repo_type="dataset", revision=revision))
    except GatedRepoError:
        raise BenchmarkError(
            f"{repo} is gated: accept its terms on the Hugging Face hub, then run `hf auth login` (or set HF_TOKEN)"
        ) from None
    except EntryNotFoundError:
        raise BenchmarkError(f"{repo} has no file {filename}") from None
    except LocalEntryNotFoundError:
        raise BenchmarkError(
            f"cannot reach the Hugging Face hub for {repo}/{filename} (offline?); download the "
            f"dataset repository and pass its folder instead"
        ) from None


def load_mimir(
    config: str,
    split: str,
    *,
    local_root: str | Path | None = None,
    repo: str = MIMIR_REPO,
    revision: str | None = None,
    neighbors: bool = False,
) -> Benchmark:
    """A MIMIR benchmark by config and split, from ``local_root`` (a copy of the dataset repo) or the hub."""
    files = mimir_files(config, split)
    wanted = ["member", "nonmember"] + (["member_neighbors", "nonmember_neighbors"] if neighbors else [])
    paths = {}
    for key in wanted:
        if local_root is not None:
            p = Path(local_root) / files[key]
            if not p.exists():
                raise BenchmarkError(f"{p}: not found (expected the MIMIR dataset layout under {local_root})")
            paths[key] = p
        else:
            paths[key] = _fetch(repo, files[key], revision)
    members = _read_lines(paths["member"], str)
    nonmembers = _read_lines(paths["nonmember"], str)
    kw = {}
    if neighbors:
        kw["member_neighbors"] = tuple(tuple(x) for x in _read_lines(paths["member_neighbors"], list))
        kw["nonmember_neighbors"] = tuple(tuple(x) for x in _read_lines(paths["nonmember_neighbors"], list))
    try:
        return Benchmark(
            f"{config}/{split}", tuple(members), tuple(nonmembers), meta={"source": str(local_root or repo)}, **kw
        )
    except BenchmarkError as e:
        raise BenchmarkError(f"MIMIR {config}/{split} ({local_root or repo}): {e}") from None


def is_mimir_layout(folder: Path) -> bool:
    return (folder / "cache_100_200_1000_512").is_dir() or (folder / "cache_100_200_10000_512").is_dir()
