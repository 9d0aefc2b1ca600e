"""The Jupyter kernel a notebook runs in: registering it, its environment, and its progress tailed to stderr.

Progress bars must reach the terminal, never the rendered HTML: the kernel gets
``TQDM_DISABLE=1`` and ``MIMIR_PROGRESS_FILE``, which :class:`ProgressTail` copies to
stderr while the notebook runs (see ``mimirlib.progress``).
"""

from __future__ import annotations

import codecs
import os
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from mimirlib.runner.base import DEFAULT_KERNEL


def _points_here(spec) -> bool:
    argv0 = spec.argv[0] if spec.argv else ""
    # No realpath: a venv's python is a symlink to the base interpreter.
    return os.path.normpath(os.path.abspath(argv0)) == os.path.normpath(sys.executable)


def ensure_kernel(name: str = DEFAULT_KERNEL, display_name: str | None = None) -> str:
    """Register this interpreter as Jupyter kernel ``name`` (``--sys-prefix``), once.

    Notebooks must run in the environment that has mimirlib and its pins, not
    whatever ``python3`` kernel happens to be on the machine. Returns the
    kernelspec directory.
    """
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        spec = KernelSpecManager().get_kernel_spec(name)
        if _points_here(spec):
            return spec.resource_dir
    except NoSuchKernel:
        pass
    from ipykernel.kernelspec import install

    where = install(kernel_name=name, display_name=display_name or f"Python ({name})", prefix=sys.prefix)
    spec = KernelSpecManager().get_kernel_spec(name)
    if not _points_here(spec):
        raise RuntimeError(
            f"kernel {name!r} was installed in {where}, but {spec.resource_dir} (running "
            f"{spec.argv[0]}) takes precedence; remove it (jupyter kernelspec remove {name}) "
            "or use another --kernel name"
        )
    return spec.resource_dir


def kernel_manager_class(extra_env: Mapping[str, str]):
    """An AsyncKernelManager that starts the kernel with ``extra_env`` added.

    papermill has no way to pass a kernel environment, and changing
    ``os.environ`` here would also reach this process (and its own tqdm bar).
    """
    import zmq
    from jupyter_client.manager import AsyncKernelManager

    curve = zmq.has("curve")

    class _EnvKernelManager(AsyncKernelManager):
        async def _async_pre_start_kernel(self, **kw):
            env = dict(kw.pop("env", None) or os.environ)
            env.update(extra_env)
            kw["env"] = env
            if curve and kw.get("transport_encryption") is None:
                # CurveZMQ when available: no plain-text TCP, and no warning
                # about it from ipykernel on every run.
                kw["transport_encryption"] = "auto"
            return await super()._async_pre_start_kernel(**kw)

    return _EnvKernelManager


def kernel_env(progress_log: Path, profile: str) -> dict[str, str]:
    """What the kernel's environment adds: progress to ``progress_log``, inline figures, and no
    hub downloads unless the profile is ``paper``."""
    env = {
        "TQDM_DISABLE": "1",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "MIMIR_PROGRESS_FILE": str(progress_log),
        # the kernel's own inline backend: figures become PNG outputs (Agg would store
        # only "<Figure ...>" text, and glued figures would render as that text)
        "MPLBACKEND": "module://matplotlib_inline.backend_inline",
        # tqdm.autonotebook warns on import when ipywidgets is absent; that stderr would
        # otherwise be rendered into the book (bars themselves are off: TQDM_DISABLE).
        "PYTHONWARNINGS": "ignore:IProgress not found",
    }
    if profile != "paper":
        env["HF_HUB_OFFLINE"] = "1"
    return env


class ProgressTail(threading.Thread):
    """Copies the kernel's progress file to stderr while a notebook runs.

    tqdm redraws with ``\\r``; completed lines (log messages, closed bars) are
    shown at once, a bar still running at most every ``every`` seconds.
    """

    def __init__(self, path: Path, prefix: str, every: float = 5.0, poll: float = 0.5):
        super().__init__(daemon=True, name=f"mimir-tail-{prefix}")
        self.path, self.prefix, self.every, self.poll = path, prefix, every, poll
        self._halt = threading.Event()
        self._buf = ""
        self._last_bar_at = float("-inf")
        self._last_shown = None

    def stop(self):
        self._halt.set()
        self.join(timeout=5)

    def _show(self, text: str):
        text = text.rstrip()
        if not text or text == self._last_shown:
            return
        self._last_shown = text
        from tqdm import tqdm

        tqdm.write(f"[{self.prefix}] {text}", file=sys.stderr)

    def _feed(self, chunk: str, final: bool = False):
        self._buf += chunk
        *lines, current = self._buf.split("\n")
        for line in lines:
            states = [s for s in line.split("\r") if s.strip()]
            if states:
                self._show(states[-1])
        states = [s for s in current.split("\r") if s.strip()]
        self._buf = "\r" + states[-1] if states else ""
        now = time.monotonic()
        if states and (final or now - self._last_bar_at >= self.every):
            self._last_bar_at = now
            self._show(states[-1])

    def run(self):
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        fh = None
        try:
            while True:
                stopping = self._halt.is_set()
                if fh is None and self.path.exists():
                    fh = open(self.path, "rb")
                if fh is not None:
                    data = fh.read()
                    if data or stopping:
                        self._feed(decoder.decode(data, final=stopping), final=stopping)
                if stopping:
                    return
                self._halt.wait(self.poll)
        except Exception:  # a broken tail must never break the run
            return
        finally:
            if fh is not None:
                fh.close()
