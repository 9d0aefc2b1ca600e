"""The runner's common ground: where things are (repository, profiles, notebooks) and its two errors."""

from __future__ import annotations

import os
from pathlib import Path

from mimirlib.paths import draw_folder

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # mimirlib/
PROFILES_DIR = PACKAGE_DIR / "profiles"
DEFAULT_KERNEL = "mimir-book"
PARAMETERS_TAG = "parameters"
EXECUTED_DIR = "book/executed"  # the published chapters (the profile's own lab draw)
DRAWS_DIR = "book/draws"  # the chapters of other lab draws, one folder each (draw_dir)


def draw_dir(draw: int | None) -> str:
    """Where a run's chapters go: :data:`EXECUTED_DIR` for the profile's own lab, ``book/draws/draw-N``
    for the lab drawn with seed N (``mimir-run --draw N``; read by ``mimirlib.book.draws``)."""
    return EXECUTED_DIR if draw is None else f"{DRAWS_DIR}/{draw_folder(draw)}"


def _repo_root() -> Path:
    """The checkout this package lives in (relative paths are resolved against it).

    Falls back to the working directory when mimirlib is installed
    non-editable, i.e. not inside a checkout.
    """
    root = PACKAGE_DIR.parent
    if (root / "pyproject.toml").is_file() or (root / "notebooks").is_dir():
        return root
    return Path.cwd()


REPO_ROOT = _repo_root()


class ParameterError(ValueError):
    """Bad notebook parameters (unknown, ill-typed, undocumented, unparsable).

    Always raised before anything is executed.
    """


class NotebookFailed(RuntimeError):
    """A notebook raised (or the kernel died) during execution.

    Attributes name the notebook, the failing cell and the error; ``partial``
    is where the partially executed notebook was put (under ``failed/``).
    """

    def __init__(
        self,
        notebook: str,
        cell_first_line: str | None,
        ename: str,
        evalue: str,
        partial: Path | None,
        traceback: str = "",
    ):
        self.notebook = notebook
        self.cell_first_line = cell_first_line
        self.ename = ename
        self.evalue = evalue
        self.partial = partial
        self.traceback = traceback
        where = f" in cell `{cell_first_line}`" if cell_first_line else ""
        msg = f"notebook {notebook} failed{where}: {ename}: {evalue}".rstrip(": ")
        if partial is not None:
            msg += f" (partial notebook: {partial})"
        super().__init__(msg)


def resolve_path(p: str | os.PathLike, base: Path | None = None) -> Path:
    """``p`` as is when absolute, else under ``base`` (default: the repository root)."""
    p = Path(p)
    return p if p.is_absolute() else (base or REPO_ROOT) / p


def notebook_file(stem: str, notebooks_dir: str | os.PathLike) -> Path:
    """``stem`` may also be given as ``name.py`` or a path to it."""
    nb_dir = resolve_path(notebooks_dir)
    cand = Path(stem)
    if cand.suffix == ".py" and cand.is_file():
        return cand.resolve()
    path = nb_dir / f"{Path(stem).stem if cand.suffix == '.py' else stem}.py"
    if not path.is_file():
        avail = ", ".join(p.stem for p in sorted(nb_dir.glob("*.py"))) or "none"
        raise ParameterError(f"no notebook {stem!r} in {nb_dir} (available: {avail})")
    return path


def list_notebooks(notebooks_dir: str | os.PathLike = "notebooks") -> list[str]:
    """Stems to run for ``--all``: ``notebooks/ORDER`` if present, else ``*.py`` sorted.

    ORDER holds one stem per line (``#`` comments and blank lines ignored), so
    chapters that depend on earlier ones run after them.
    """
    nb_dir = resolve_path(notebooks_dir)
    order = nb_dir / "ORDER"
    if not order.is_file():
        return [p.stem for p in sorted(nb_dir.glob("*.py"))]
    stems = []
    for lineno, raw in enumerate(order.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        stem = line[:-3] if line.endswith(".py") else line
        if not (nb_dir / f"{stem}.py").is_file():
            raise ParameterError(f"{order}:{lineno}: no notebook {stem}.py in {nb_dir}")
        stems.append(stem)
    return stems
