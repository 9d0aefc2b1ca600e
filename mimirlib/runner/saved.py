"""A chapter's saved results: what the book's run computed, kept so that a handout re-uses it.

A chapter hands its expensive results to :func:`keep` (one hidden cell: ``saved.keep(exp, p, run=run)``);
under the runner (``$MIMIR_KEEP_RUNS``, which the runner sets in each chapter's kernel) they are pickled to
``<cache>/runs/<chapter>/<key>.pkl`` (:func:`mimirlib.paths.kept_runs_dir`), and nowhere else is anything
written. A handout's cell reads ``run = saved.reuse(exp, p, "run", lambda: exp.run(p))``: the saved value
when one was kept for the same key, else the computation. So a student's notebook, and nbgrader's
autograde of it, re-runs the chapter's figures and exercises in seconds instead of its whole scoring.

The key is the chapter, its parameters (less the ones that say only where the forward passes run: engine,
Ray settings, batch size), the scoring precision they resolve to on this machine, and a digest of the
``mimirlib`` source: a changed parameter or a changed library never reads an old result. The file name
starts with that digest, and keeping a chapter's results removes the chapter's files of any other digest:
no checkout of this library can read them, and a classroom pack would carry them (each library change
would otherwise add a whole set, 73 MB on the lab). Kept results of other parameters stay.

Pickles hold no weights and no absolute cache path: a loaded model is saved as what loads it again
(its folder, revision and precision; weights are read on first use) and a path in the cache as a path
relative to it, so a run kept by the instructor loads from a classroom pack unpacked anywhere. A run
that cannot be pickled is not kept (one warning); a saved file that cannot be read is computed again.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import re
import tempfile
import warnings
from functools import lru_cache
from pathlib import Path, PurePath
from typing import Any, Callable

from mimirlib.paths import cache_root, kept_runs_dir, note_read

__all__ = ["KEEP_ENV", "REQUIRE_ENV", "SavedResultsMissing", "code_digest", "keep", "kept_for", "reuse", "saved_path"]

KEEP_ENV = "MIMIR_KEEP_RUNS"
# Set (e.g. in an nbgrader course's config), a handout whose saved results are missing stops in one line
# instead of starting the chapter's whole scoring for every student.
REQUIRE_ENV = "MIMIR_REQUIRE_SAVED"
# Parameters that say where and how fast forward passes run, not what a chapter computes.
_WHERE_IT_RUNS = frozenset({"engine", "ray_address", "ray_workers", "ray_gpus_per_worker", "ray_timeout", "batch_size"})


class SavedResultsMissing(RuntimeError):
    """No kept result for a handout's cell while ``$MIMIR_REQUIRE_SAVED`` is set (one line, naming it)."""


@lru_cache(maxsize=1)
def code_digest() -> str:
    """A digest of every ``.py`` file of the ``mimirlib`` package (names and contents)."""
    pkg = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for f in sorted(pkg.rglob("*.py")):
        h.update(f.relative_to(pkg).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _chapter(exp) -> str:
    return exp.__name__.rsplit(".", 1)[-1]


def _precision(p) -> str:
    if "dtype" not in p:
        return ""
    from mimirlib.core.models import pick_device, pick_dtype

    return str(pick_dtype(p["dtype"], pick_device(None)))


def saved_path(exp, p) -> Path:
    """Where the results of chapter module ``exp`` with parameters ``p`` are kept."""
    params = {k: p[k] for k in sorted(p) if k not in _WHERE_IT_RUNS}
    what = {"chapter": _chapter(exp), "params": params, "precision": _precision(p), "code": code_digest()}
    key = hashlib.sha256(json.dumps(what, sort_keys=True, default=repr).encode()).hexdigest()[:20]
    return kept_runs_dir() / _chapter(exp) / f"{what['code']}-{key}.pkl"


def kept_for(notebook: str | os.PathLike, params: dict) -> Path | None:
    """The kept results a run of the chapter ``notebook`` (py:percent) with the resolved ``params`` reads
    (its parameters cell's defaults, then ``params``, as its kernel sees them), or None when none were kept."""
    import importlib

    from mimirlib.experiments.params import Params
    from mimirlib.runner.params import notebook_parameters

    m = re.search(r"^from mimirlib\.experiments import (\w+) as exp$", Path(notebook).read_text(encoding="utf-8"), re.M)
    if m is None:
        return None
    declared = notebook_parameters(notebook)
    p = Params({k: v["default"] for k, v in declared.items()} | dict(params))
    path = saved_path(importlib.import_module(f"mimirlib.experiments.{m[1]}"), p)
    return path if path.is_file() else None


def _in_cache(path: str | PurePath) -> str | None:
    try:
        return Path(path).resolve().relative_to(cache_root().resolve()).as_posix()
    except (ValueError, OSError):
        return None


def _from_cache(where: tuple[str, str]) -> str:
    kind, value = where
    return str(cache_root() / value) if kind == "cache" else value


class _Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        from mimirlib.core.models import LoadedModel

        if isinstance(obj, LoadedModel):
            rel = _in_cache(obj.name)
            where = ("cache", rel) if rel is not None else ("as-is", obj.name)
            return ("model", where, obj.revision, str(obj.dtype).replace("torch.", ""), obj.device.type)
        if isinstance(obj, PurePath) and obj.is_absolute():
            rel = _in_cache(obj)
            return ("path", rel) if rel is not None else None
        return None


class _Unpickler(pickle.Unpickler):
    def __init__(self, fh):
        super().__init__(fh)
        self.models: dict[tuple, object] = {}  # one model object per saved model, as in the run that was kept

    def persistent_load(self, pid):
        if pid[0] == "path":
            return cache_root() / pid[1]
        if pid[0] == "model":
            from mimirlib.core.models import load_model

            if pid not in self.models:
                _, where, revision, dtype, device = pid
                self.models[pid] = load_model(_from_cache(where), revision, device=device, dtype=dtype, weights=False)
            return self.models[pid]
        raise pickle.UnpicklingError(f"unknown saved reference {pid[0]!r}")


def keep(exp, p, **values: Any) -> Path | None:
    """Pickle ``values`` (name -> result) as chapter ``exp``'s results for ``p``, under the runner only
    (``$MIMIR_KEEP_RUNS``); written whole or not at all. Returns the file, or None when nothing was kept."""
    if not os.environ.get(KEEP_ENV):
        return None
    path = saved_path(exp, p)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            _Pickler(fh, protocol=pickle.HIGHEST_PROTOCOL).dump(values)
        os.chmod(tmp, 0o644)  # readable like the rest of the cache (mkstemp makes it private)
        os.replace(tmp, path)
        _drop_other_libraries(path.parent, code_digest())
    except Exception as e:  # a result that does not pickle: the chapter is fine, its handout computes
        Path(tmp).unlink(missing_ok=True)
        warnings.warn(f"{_chapter(exp)}: results not kept for handouts ({type(e).__name__}: {e})", stacklevel=2)
        return None
    note_read(path)  # the chapter's reads: a classroom pack of it carries the file
    return path


def _drop_other_libraries(folder: Path, digest: str) -> None:
    """Remove the kept results in a chapter's ``folder`` that another ``mimirlib`` wrote (their names do
    not start with this library's ``digest``): nothing can read them any more."""
    for old in folder.glob("*.pkl"):
        if not old.name.startswith(f"{digest}-"):
            old.unlink(missing_ok=True)


@lru_cache(maxsize=4)
def _load(path: Path, mtime_ns: int) -> dict:
    with open(path, "rb") as fh:
        return _Unpickler(fh).load()


def reuse(exp, p, name: str, compute: Callable[[], Any]) -> Any:
    """The result ``name`` kept by the book's run of chapter ``exp`` with the same key as ``p``
    (:func:`saved_path`), else ``compute()`` (else, with ``$MIMIR_REQUIRE_SAVED`` set,
    :class:`SavedResultsMissing`)."""
    path = saved_path(exp, p)
    why = None
    try:
        values = _load(path, path.stat().st_mtime_ns)
    except FileNotFoundError:
        values, why = {}, "none kept"
    except Exception as e:  # damaged, or from another setup: compute instead
        values, why = {}, f"unreadable ({type(e).__name__}: {e})"
        warnings.warn(f"{path}: saved results {why}; computing them", stacklevel=2)
    if name in values:
        note_read(path)
        return values[name]
    if os.environ.get(REQUIRE_ENV):
        raise SavedResultsMissing(
            f"{_chapter(exp)}: no saved {name!r} for these parameters and this mimirlib ({why or 'not kept'}; "
            f"{path}): run the chapter with the runner first (make book), or unset {REQUIRE_ENV} to compute it here"
        )
    return compute()
