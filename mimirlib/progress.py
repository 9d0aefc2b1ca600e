"""Terminal-only progress bars.

Notebooks run under papermill and are rendered to static HTML; widget or
``\\r``-redrawn bars in cell outputs render as junk there. So bars never write
to the notebook: ``mimirlib.runner`` sets ``MIMIR_PROGRESS_FILE`` for the kernel
and tails that file to the terminal, and sets ``TQDM_DISABLE=1`` so that any
third-party tqdm bar stays silent.

Where output goes, decided on every call (not at import time):

1. ``MIMIR_PROGRESS_FILE`` set: append to that file (plain ASCII, fixed width,
   at most about one update a second, so the tail stays readable);
2. else ``TQDM_DISABLE`` truthy: nowhere;
3. else stderr, as plain tqdm would (interactive use, scripts, tests).
"""

from __future__ import annotations

import os
import sys
import threading
from typing import IO, Any, Callable, Iterable

from tqdm import tqdm

__all__ = ["progress", "progress_factory", "log", "PROGRESS_FILE_ENV"]

PROGRESS_FILE_ENV = "MIMIR_PROGRESS_FILE"

_FALSY = {"", "0", "false", "no", "off"}
_handles: dict[str, IO[str]] = {}
_handles_lock = threading.Lock()


def _progress_file() -> IO[str] | None:
    """The shared append handle for ``MIMIR_PROGRESS_FILE``, or None if unset.

    One handle per path for the whole process, so bars and log lines from any
    module interleave in write order; line-buffered and flushed by tqdm, so the
    runner's tail sees updates promptly.
    """
    path = os.environ.get(PROGRESS_FILE_ENV)
    if not path:
        return None
    with _handles_lock:
        fh = _handles.get(path)
        if fh is None or fh.closed:
            fh = open(path, "a", buffering=1, encoding="utf-8")
            _handles[path] = fh
        return fh


def _disabled_by_env() -> bool:
    # tqdm itself reads TQDM_DISABLE once, at import, and treats any non-empty
    # value (even "0") as true; read it here, per call, with the usual meaning.
    return os.environ.get("TQDM_DISABLE", "").strip().lower() not in _FALSY


def progress(iterable: Iterable | None = None, total: int | float | None = None, desc: str = "", **kwargs) -> tqdm:
    """A tqdm bar that reaches the terminal but never a notebook's outputs.

    Extra keyword arguments go to ``tqdm`` (e.g. ``unit``, ``leave``).
    """
    fh = _progress_file()
    if fh is not None:
        # Explicit disable=False: the kernel also has TQDM_DISABLE=1, which
        # tqdm would otherwise apply to this bar too.
        opts = dict(file=fh, mininterval=1.0, ascii=True, dynamic_ncols=False, ncols=100, disable=False)
    elif _disabled_by_env():
        opts = dict(disable=True)
    else:
        opts = dict(file=sys.stderr, disable=False)
    opts.update(kwargs)
    return tqdm(iterable, total=total, desc=desc, **opts)


def progress_factory(progress_arg) -> Callable[..., Any]:
    """The bar factory a ``progress=`` argument asks for: False disables, a callable is used as is,
    None (or True) picks :func:`progress`. A factory is called as ``(iterable=None, total=None, desc="")``.
    """
    if progress_arg is False:
        return lambda iterable=None, total=None, desc="": _NullBar()
    if callable(progress_arg):
        return progress_arg
    if progress_arg not in (None, True):
        raise TypeError(f"progress must be None, True, False or a callable, not {progress_arg!r}")
    return progress


class _NullBar:
    def update(self, n=1):
        pass

    def set_postfix(self, *args, **kwargs):
        pass

    def close(self):
        pass


def log(msg: str) -> None:
    """One line (a stage banner such as "training model h128") to where bars go.

    Not ``print``: that would land in the notebook's outputs and the book.
    """
    line = " ".join(str(msg).splitlines())
    fh = _progress_file()
    if fh is not None:
        tqdm.write(line, file=fh)  # clears an active bar first, so the line stays whole
    elif not _disabled_by_env():
        tqdm.write(line, file=sys.stderr)  # clears and redraws any active bar
