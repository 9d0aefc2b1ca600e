"""Trained models reused across lab folders: a config change that does not touch a model's training
(the benchmark size, say) takes its folder from a lab that trained it, instead of training it again.

A lab folder is keyed by its whole config (:func:`mimirlib.lab.layout.config_key`), so any change
makes a new folder; without this module every model of it would train again (~46 minutes on 2
cores). Each model's **training fingerprint** digests everything its files depend on: the recipe
(:class:`mimirlib.lab.train.TrainConfig`), its documents in order, the tokens it trains on, the
tokenizer it ships, the evaluation windows its loss curves are read on, and the lab format. Every lab
records its models' fingerprints in ``fingerprints.json``; a model to train whose fingerprint another
lab folder under the same cache records is hard-linked from there (copied where links fail) through a
``.partial`` folder, so a half-copied model is never taken for a trained one. Same files, same
signal-cache identity (:func:`mimirlib.core.models.model_fingerprint` digests the contents): the
chapters' cached scores of that model are reused too. The masked LM is fingerprinted the same way,
and :func:`siblings` also finds the labs whose benchmark neighbours it made (the lab's stages copy
those instead of generating them again).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np

FINGERPRINTS = "fingerprints.json"


def fingerprint(recipe: dict, ids: list[str], tokens, tokenizer_dir: Path | None, eval_windows: dict, fmt: int) -> str:
    """The training fingerprint of one model (module docstring): a sha256 over what its files depend on
    (``tokenizer_dir`` None: a model that trains its own tokenizer, from what ``recipe`` names)."""
    h = hashlib.sha256()
    h.update(json.dumps({"recipe": recipe, "ids": list(ids), "format": fmt}, sort_keys=True, default=str).encode())
    for t in tokens:
        h.update(np.asarray(t, dtype=np.int64).tobytes())
        h.update(b"|")
    for f in sorted(p for p in Path(tokenizer_dir).iterdir() if p.is_file()) if tokenizer_dir else []:
        h.update(f.name.encode())
        h.update(f.read_bytes())
    for name in sorted(eval_windows):
        h.update(name.encode())
        h.update(np.asarray(eval_windows[name], dtype=np.int64).tobytes())
    return h.hexdigest()


def recorded(lab_root: Path) -> dict[str, str]:
    """``{model name: fingerprint}`` of a lab folder (empty when it records none)."""
    f = Path(lab_root) / FINGERPRINTS
    try:
        return json.loads(f.read_text()) if f.exists() else {}
    except (OSError, ValueError):
        return {}


def record(lab_root: Path, name: str, fp: str) -> None:
    """Record ``name``'s fingerprint in ``lab_root`` unless it is recorded already: under a lock (the
    neighbours' worker records the masked LM while the build records the models it trains) and
    atomically (a reader never sees half a file)."""
    root = Path(lab_root)
    with open(root / f".{FINGERPRINTS}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        prints = recorded(root)
        if prints.get(name) == fp:
            return
        tmp = root / f".{FINGERPRINTS}.tmp"
        tmp.write_text(json.dumps(prints | {name: fp}, indent=1, sort_keys=True))
        os.replace(tmp, root / FINGERPRINTS)


def siblings(lab_root: Path, name: str, fp: str) -> list[Path]:
    """The other lab folders under ``lab_root``'s parent that record ``name`` with fingerprint ``fp``."""
    lab_root = Path(lab_root).resolve()
    others = sorted(o for o in lab_root.parent.iterdir() if o.is_dir() and o.resolve() != lab_root)
    return [o for o in others if recorded(o).get(name) == fp]


def find(lab_root: Path, name: str, fp: str) -> Path | None:
    """A finished model folder ``name`` with fingerprint ``fp`` in a sibling lab folder, or None."""
    return next((o / "models" / name for o in siblings(lab_root, name, fp) if (o / "models" / name).is_dir()), None)


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def adopt(src: Path, dst: Path) -> None:
    """Put a copy of model folder ``src`` at ``dst`` (hard links where possible), via ``dst.partial``."""
    partial = dst.with_name(dst.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(src, partial, copy_function=_link_or_copy)
    os.replace(partial, dst)


def reuse(lab_root: Path, name: str, fp: str, dst: Path) -> Path | None:
    """Adopt ``name`` into ``dst`` from a sibling lab folder that trained it with fingerprint ``fp``
    and record it here; the source folder, or None (nothing adopted) when no lab has it."""
    src = find(lab_root, name, fp)
    if src is None:
        return None
    adopt(src, dst)
    record(lab_root, name, fp)
    return src
