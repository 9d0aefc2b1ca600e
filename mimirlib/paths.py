"""Where the project keeps what it computes: one root (``$MIMIR_CACHE``, or the project's ``.cache``) and its folders.

Chapters and commands ask this module for a folder instead of joining paths themselves, so the
layout changes in one place.
"""

from __future__ import annotations

import os
import re
from pathlib import Path


def project_root() -> Path | None:
    """The project folder this ``mimirlib`` runs from (the editable install ``make`` makes: the folder
    holding ``pyproject.toml`` beside the package), or None for a copy installed elsewhere."""
    root = Path(__file__).resolve().parent.parent
    return root if (root / "pyproject.toml").is_file() and (root / "mimirlib" / "paths.py").is_file() else None


def cache_root() -> Path:
    """``$MIMIR_CACHE``, else ``.cache`` in the project folder (:func:`project_root`), whatever the working
    folder: Jupyter and nbgrader run a notebook from its own folder, and a handout opened there must find
    the built lab, not start a new one. Only a copy installed outside a project uses ``./.cache``."""
    env = os.environ.get("MIMIR_CACHE")
    if env:
        return Path(env)
    root = project_root()
    return (root if root is not None else Path.cwd()) / ".cache"


def signals_dir() -> Path:
    """The on-disk signal cache (per-token log-probabilities per model and text)."""
    return cache_root() / "signals"


def kept_runs_dir() -> Path:
    """Where the runner keeps each chapter's results for its handout (:mod:`mimirlib.runner.saved`)."""
    return cache_root() / "runs"


_DRAW_FOLDER = re.compile(r"^draw-(\d+)$")  # draw_folder's names, read back by draw_of


def draw_folder(draw: int) -> str:
    """The name of lab draw ``draw``'s own folder, wherever a draw's files go apart (``draw-N``)."""
    return f"draw-{draw}"


def draw_of(folder: str | os.PathLike) -> int | None:
    """The draw whose folder :func:`draw_folder` names ``folder`` (by its last part), or None for any other."""
    m = _DRAW_FOLDER.match(Path(folder).name)
    return int(m.group(1)) if m else None


def _drawn(folder: Path, draw: int | None) -> Path:
    return folder if draw is None else folder / draw_folder(draw)


def audit_demo_dir(domain: str, draw: int | None = None) -> Path:
    """Where the audit chapter writes its demonstration member/non-member files for ``domain`` (those of the
    lab drawn with seed ``draw`` apart: a draw never overwrites the book's, which a classroom pack carries)."""
    return _drawn(cache_root() / "audit-demo", draw) / domain


def audit_report_dir(draw: int | None = None) -> Path:
    """The audit chapter's default report folder (a lab draw's apart, as :func:`audit_demo_dir`)."""
    return _drawn(cache_root() / "audit-report", draw)


# The file a run appends the cached files it reads to (the runner sets it in each chapter's kernel):
# an executed chapter then says which of them it needs, and a classroom pack for a session packs only those.
READS_ENV = "MIMIR_READS_FILE"
_noted: set[tuple[str, str]] = set()


def note_read(path: str | os.PathLike) -> None:
    """Append ``path`` to the file ``$MIMIR_READS_FILE`` names, once per process (nothing without it)."""
    log = os.environ.get(READS_ENV)
    if not log:  # every signal-cache access passes here: nothing more to do outside a runner's kernel
        return
    key = str(Path(path).resolve())
    if (log, key) in _noted:
        return
    _noted.add((log, key))
    with open(log, "a", encoding="utf-8") as fh:  # one short append per file: processes may share the log
        fh.write(key + "\n")


def reads_in_cache(log: str | os.PathLike) -> list[str]:
    """The paths a reads file lists that lie in the cache, relative to :func:`cache_root`, sorted."""
    root, out = cache_root().resolve(), set()
    if Path(log).is_file():
        for line in Path(log).read_text(encoding="utf-8").splitlines():
            try:
                out.add(Path(line).relative_to(root).as_posix())
            except ValueError:  # outside the cache (a user's own model folder): not the pack's business
                pass
    return sorted(out)
