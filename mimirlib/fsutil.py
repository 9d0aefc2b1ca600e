"""Writing folders and pages so that a reader never sees half of one: build beside, then swap into place.

`staged_dir` is the usual entry point (a temporary sibling folder that becomes ``dest`` only
when the block finishes); `replace_dir` is the swap itself, for a folder already written;
`write_text_atomic` does the same for one text file (the book's generated pages).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from pathlib import Path
from typing import Iterator

__all__ = ["replace_dir", "staged_dir", "write_text_atomic"]


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``<path>.tmp`` beside ``path`` (its folder made if missing), then rename it
    onto ``path``: a reader sees the old file or the new one, never half of one. Returns ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path


def replace_dir(src: str | os.PathLike, dest: str | os.PathLike) -> Path:
    """Rename the finished folder ``src`` to ``dest`` (same file system); returns ``dest``.

    An existing ``dest`` is first renamed aside (``.<name>.old-<random>``) and removed only
    once ``src`` is in place; if that last rename fails the earlier ``dest`` is put back, so
    ``dest`` always holds either the old folder or the new one, never a mixture.
    """
    src, dest = Path(src), Path(dest)
    old = None
    if dest.exists():
        old = dest.with_name(f".{dest.name}.old-{uuid.uuid4().hex[:8]}")
        os.replace(dest, old)
    try:
        os.replace(src, dest)
    except BaseException:
        if old is not None:
            os.replace(old, dest)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return dest


@contextlib.contextmanager
def staged_dir(dest: str | os.PathLike) -> Iterator[Path]:
    """An empty temporary folder beside ``dest`` (created with its parents), swapped onto
    ``dest`` with `replace_dir` when the block ends normally and removed if it raises.

    >>> with staged_dir(out) as tmp:          # doctest: +SKIP
    ...     (tmp / "report.md").write_text(text)
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    # mkdir (not mkdtemp, which makes a private 0700 folder): the result gets the usual umask mode
    tmp = dest.with_name(f".{dest.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    tmp.mkdir()
    try:
        yield tmp
        replace_dir(tmp, dest)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
