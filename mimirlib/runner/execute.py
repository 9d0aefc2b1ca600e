"""Executing one notebook with papermill (:func:`run_notebook`): the output replaces the chapter only on success.

papermill leaves a partial notebook at the output path on failure; here the
output is written to a temporary file and moved into place only on success,
so the book never renders a half-run chapter (the partial one goes to
``failed/``; one left by a run killed with SIGKILL is removed by the next).
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

from mimirlib.paths import READS_ENV, reads_in_cache
from mimirlib.runner import saved
from mimirlib.runner.base import (
    DEFAULT_KERNEL,
    PARAMETERS_TAG,
    REPO_ROOT,
    NotebookFailed,
    draw_dir,
    notebook_file,
    resolve_path,
)
from mimirlib.runner.kernel import ProgressTail, ensure_kernel, kernel_env, kernel_manager_class
from mimirlib.runner.params import read_source
from mimirlib.runner.plan import RunPlan, plan_run
from mimirlib.runner.variants import VARIANT_SEP, VARIANTS_DIR, finish_notebook


def _first_line(source: str | None) -> str | None:
    for line in (source or "").splitlines():
        if line.strip():
            return line.strip()
    return None


def _strip_ansi(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text)


def _problems(nb) -> tuple[str | None, str, str, str] | None:
    """(cell first line, ename, evalue, traceback) of the first failed or
    unexecuted cell, or None when the whole notebook ran cleanly."""
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                return (
                    _first_line(cell.source),
                    out.get("ename", "Error"),
                    out.get("evalue", ""),
                    _strip_ansi("\n".join(out.get("traceback", []))),
                )
        pm = cell.get("metadata", {}).get("papermill", {})
        if pm.get("exception") is True:
            return (_first_line(cell.source), "CellExecutionError", "", "")
        if cell.source.strip() and pm.get("status") in ("pending", "running"):
            return (_first_line(cell.source), "NotExecuted", "execution stopped before this cell completed", "")
    return None


def _repo_relative(p: Path) -> str:
    try:
        return str(p.relative_to(REPO_ROOT))
    except ValueError:
        return str(p)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _last_started(nb) -> str | None:
    """First line of the last cell papermill started (where a dead kernel died)."""
    started = [
        c for c in nb.cells if c.cell_type == "code" and c.get("metadata", {}).get("papermill", {}).get("start_time")
    ]
    return _first_line(started[-1].source) if started else None


@dataclass(frozen=True)
class _Files:
    """The files of one run: where its notebook goes, and the temporary ones it writes on the way."""

    src: Path  # notebooks/<stem>.py
    name: str  # <stem>, or <stem>--<variant>
    final: Path  # <dest>/<name>.ipynb, replaced only on success
    failed_dir: Path  # <dest>/failed: the partial notebook of a failed run
    tmp_dir: Path  # the converted .ipynb and the kernel's progress log
    tmp_out: Path  # what papermill writes as it goes, moved onto ``final`` on success

    @property
    def src_ipynb(self) -> Path:
        return self.tmp_dir / f"{self.src.stem}.ipynb"

    @property
    def progress_log(self) -> Path:
        return self.tmp_dir / "progress.log"

    @property
    def reads_log(self) -> Path:  # the cached files the kernel read (mimirlib.paths.note_read)
        return self.tmp_dir / "reads.log"


def _failed(files: _Files, progress_log: Path | None, cell_line, ename, evalue, tb="") -> NotebookFailed:
    """Move the partial notebook (and the progress log) under ``failed/``."""
    name, tmp_out, failed_dir = files.name, files.tmp_out, files.failed_dir
    failed_dir.mkdir(parents=True, exist_ok=True)
    partial = failed_dir / f"{name}.ipynb"
    if tmp_out.exists():
        os.chmod(tmp_out, 0o666 & ~_umask())
        os.replace(tmp_out, partial)
    else:
        partial.unlink(missing_ok=True)  # a stale one would mislead
        partial = None
    if progress_log is not None and progress_log.exists() and progress_log.stat().st_size:
        shutil.copyfile(progress_log, failed_dir / f"{name}.progress.log")
    return NotebookFailed(name, cell_line, ename, evalue, partial, tb)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _remove_orphans(folder: Path, prefix: str) -> None:
    """Remove ``<prefix><pid>.*`` entries whose run is dead (killed with SIGKILL, the machine
    went down): a killed run cannot clean up after itself, the next one does."""
    for p in folder.glob(f"{glob.escape(prefix)}*"):
        pid = p.name[len(prefix) :].split(".", 1)[0].split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _pid_alive(int(pid)):
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)


def _write_atomic(nb, dest: Path, tmp: Path) -> None:
    """Write ``nb`` to ``tmp`` (flushed to disk), then rename it onto ``dest``: a reader (or a
    book build) sees the old file or the new one, never half of one."""
    import nbformat

    with open(tmp, "w", encoding="utf-8") as fh:
        nbformat.write(nb, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp made it 0600
    os.replace(tmp, dest)


def run_notebook(
    stem: str,
    profile: str = "lab",
    params_file=None,
    overrides=None,
    notebooks_dir="notebooks",
    out_dir=None,
    kernel: str = DEFAULT_KERNEL,
    *,
    variant: str | None = None,
    publish: bool = False,
    variants_dir=None,
    profiles_dir=None,
    cwd=None,
    execution_timeout: int | None = None,
    start_timeout: int = 120,
    tail_every: float = 5.0,
    draw: int | None = None,
    _only_declared: bool = False,
) -> Path:
    """Execute ``notebooks/<stem>.py``; return the path of the executed notebook.

    Where it goes: ``<out_dir>/<stem>.ipynb`` (the published chapter) when the parameters are
    the profile's; a run with other parameters, or one given ``variant``, goes to
    ``<variants_dir>/<stem>--<variant>.ipynb`` (``variants_dir`` defaults to ``variants/``
    beside ``out_dir``; the variant is named after what changed unless given), unless
    ``publish`` asks to replace the published chapter. ``draw``: the run reads the lab drawn with that
    seed (the profile read with it, ``draw`` set in the notebook), and ``out_dir`` defaults to
    ``book/draws/draw-N`` (:func:`draw_dir`; its variants in a ``variants/`` folder inside it).

    Parameters and the names they hold (attacks, domains, local models) are checked first
    (``ParameterError``, nothing started). The output is replaced only on success, atomically;
    on failure the previous good notebook is left untouched, the partial one goes to
    ``failed/<name>.ipynb`` beside it and ``NotebookFailed`` is raised. Relative paths are
    taken from the repository root, which is also the kernel's working directory.
    """
    src = notebook_file(stem, notebooks_dir)
    stem = src.stem
    cwd = resolve_path(cwd) if cwd else REPO_ROOT
    plan = plan_run(
        src,
        profile,
        params_file,
        overrides,
        variant=variant,
        publish=publish,
        profiles_dir=profiles_dir,
        cwd=cwd,
        only_declared=_only_declared,
        draw=draw,
    )
    out_dir = out_dir or draw_dir(draw)
    if draw is not None and variants_dir is None:
        variants_dir = Path(resolve_path(out_dir)) / VARIANTS_DIR

    ensure_kernel(kernel)
    dest_dir, name = _destination(stem, plan.variant, out_dir, variants_dir)
    # Leftovers of killed runs of this notebook (never a live run's).
    _remove_orphans(dest_dir, f".{name}.")
    _remove_orphans(Path(tempfile.gettempdir()), "mimir-run-")

    files = _prepare_files(src, kernel, dest_dir, name)
    # The kernel notes the cached files it reads, and keeps the chapter's results for its handout.
    env = kernel_env(files.progress_log, profile) | {READS_ENV: str(files.reads_log), saved.KEEP_ENV: "1"}
    tail = ProgressTail(files.progress_log, stem, every=tail_every)
    reads = _execute(
        files,
        plan.params,
        kernel=kernel,
        cwd=cwd,
        env=env,
        tail=tail,
        start_timeout=start_timeout,
        execution_timeout=execution_timeout,
    )
    chapters = os.path.relpath(resolve_path(out_dir), dest_dir) if plan.variant else None
    return _finish(files, plan, profile, publish, reads, chapters)


def _destination(stem: str, variant: str | None, out_dir, variants_dir) -> tuple[Path, str]:
    """The folder the run's notebook goes to (made if missing) and its name there, without ``.ipynb``."""
    out_dir = resolve_path(out_dir)
    if variant is None:
        dest_dir, name = out_dir, stem
    else:
        dest_dir = resolve_path(variants_dir) if variants_dir else out_dir.parent / VARIANTS_DIR
        name = f"{stem}{VARIANT_SEP}{variant}"
    dest_dir.mkdir(parents=True, exist_ok=True)
    return dest_dir, name


def _prepare_files(src: Path, kernel: str, dest_dir: Path, name: str) -> _Files:
    """Convert the source to ``.ipynb`` in a temporary folder, and make papermill's output file."""
    import nbformat

    # Convert first: nothing below may fail before the kernel starts but papermill.
    nb = read_source(src, kernel)
    tmp_dir = Path(tempfile.mkdtemp(prefix=f"mimir-run-{os.getpid()}-"))
    src_ipynb = tmp_dir / f"{src.stem}.ipynb"
    nbformat.write(nb, src_ipynb)
    first_code = next(c for c in nbformat.read(src_ipynb, as_version=4).cells if c.cell_type == "code")
    if PARAMETERS_TAG not in first_code.metadata.get("tags", []):
        shutil.rmtree(tmp_dir, ignore_errors=True)
        raise AssertionError(f"{src}: the 'parameters' tag was lost converting to ipynb")

    # papermill writes as it goes: never at the final path nor as *.ipynb (a book build would pick it
    # up); the pid in the name lets the next run remove it if this one is killed.
    fd, tmp_name = tempfile.mkstemp(prefix=f".{name}.{os.getpid()}.", suffix=".ipynb.partial", dir=dest_dir)
    os.close(fd)
    files = _Files(src, name, dest_dir / f"{name}.ipynb", dest_dir / "failed", tmp_dir, Path(tmp_name))
    files.progress_log.touch()
    return files


def _execute(files: _Files, params: dict, *, kernel, cwd: Path, env, tail, start_timeout, execution_timeout) -> list:
    """Run papermill into ``files.tmp_out`` while ``tail`` shows the progress; the cached files the run
    read (relative to the cache). On any failure the partial notebook goes under ``failed/``
    (``NotebookFailed``, or Ctrl-C re-raised as is)."""
    from papermill.exceptions import PapermillExecutionError

    try:
        tail.start()
        try:
            _papermill(
                files,
                params,
                kernel=kernel,
                cwd=cwd,
                env=env,
                start_timeout=start_timeout,
                execution_timeout=execution_timeout,
            )
        finally:
            tail.stop()
        return reads_in_cache(files.reads_log)
    except PapermillExecutionError as e:
        raise _failed(
            files,
            files.progress_log,
            _first_line(e.source),
            e.ename,
            e.evalue,
            _strip_ansi("\n".join(e.traceback or [])),
        ) from None
    except Exception as e:  # kernel died, timed out, failed to start...
        cell_line = _partial_cell(files.tmp_out)
        raise _failed(files, files.progress_log, cell_line, type(e).__name__, " ".join(str(e).split())) from e
    except BaseException:  # Ctrl-C: still keep the partial out of the book
        if files.tmp_out.exists():
            files.failed_dir.mkdir(parents=True, exist_ok=True)
            os.replace(files.tmp_out, files.failed_dir / f"{files.name}.ipynb")
        raise
    finally:
        shutil.rmtree(files.tmp_dir, ignore_errors=True)


def _papermill(files: _Files, params: dict, *, kernel, cwd: Path, env, start_timeout, execution_timeout) -> None:
    import papermill

    with warnings.catch_warnings():
        # our temporary output path deliberately does not end in .ipynb
        warnings.filterwarnings("ignore", message="The specified file")
        papermill.execute_notebook(
            str(files.src_ipynb),
            str(files.tmp_out),
            parameters=params,
            kernel_name=kernel,
            language="python",
            cwd=str(cwd),
            progress_bar={"desc": files.src.stem, "unit": "cell"},
            log_output=False,
            start_timeout=start_timeout,
            execution_timeout=execution_timeout,
            kernel_manager_class=kernel_manager_class(env),
        )


def _partial_cell(tmp_out: Path) -> str | None:
    """First line of the cell a run that died (kernel dead, timed out...) was in, if its partial
    notebook tells."""
    import nbformat

    cell_line = None
    if tmp_out.exists() and tmp_out.stat().st_size:
        try:
            partial_nb = nbformat.read(tmp_out, as_version=4)
            found = _problems(partial_nb)
            cell_line = found[0] if found else _last_started(partial_nb)
        except Exception:
            pass
    return cell_line


def _finish(files: _Files, plan: RunPlan, profile: str, publish: bool, reads: list, chapters: str | None) -> Path:
    """Check the executed notebook, finish it (:func:`finish_notebook`, and ``metadata.mimir.reads``: the
    cached files it read, what a classroom pack for its session must hold) and move it onto its final path."""
    import nbformat

    done = nbformat.read(files.tmp_out, as_version=4)
    found = _problems(done)
    if found:
        raise _failed(files, None, *found)
    # papermill records its (temporary) paths; record the real ones.
    done.metadata.setdefault("papermill", {})
    done.metadata.papermill["input_path"] = _repo_relative(files.src)
    done.metadata.papermill["output_path"] = _repo_relative(files.final)
    done.metadata.papermill["profile"] = profile
    finish_notebook(
        done,
        profile=profile,
        changed=plan.changed,
        defaults=plan.defaults,
        command=plan.command,
        variant=plan.variant,
        publish=publish,
        chapters=chapters,
    )
    done.metadata["mimir"]["reads"] = reads
    _write_atomic(done, files.final, files.tmp_out)
    (files.failed_dir / f"{files.name}.ipynb").unlink(missing_ok=True)  # stale now
    (files.failed_dir / f"{files.name}.progress.log").unlink(missing_ok=True)
    return files.final
