"""Execute the book's notebooks: jupytext py:percent -> papermill -> ``book/executed/``.

Why a wrapper around papermill:

* papermill only *warns* on unknown parameters and never checks types; here
  both are errors, raised before any kernel starts;
* papermill reads only ``.ipynb``; sources are jupytext ``py:percent`` files;
* papermill leaves a partial notebook at the output path on failure; here the
  output is written to a temporary file and moved into place only on success,
  so the book never renders a half-run chapter (the partial one goes to
  ``failed/``);
* progress bars must reach the terminal, never the rendered HTML: the kernel
  gets ``TQDM_DISABLE=1`` and ``MIMIR_PROGRESS_FILE``, which this module tails
  to stderr while the notebook runs (see ``mimirlib.progress``).

Parameters live in the notebook's first code cell, tagged ``parameters``, one
``name = literal  # help`` (or ``name: type = literal  # help``) per line.
"""

from __future__ import annotations

import argparse
import ast
import codecs
import io
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import tokenize
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from .profiles import load_profile, load_yaml

__all__ = [
    "ParameterError",
    "NotebookFailed",
    "notebook_parameters",
    "validate",
    "resolve_params",
    "run_notebook",
    "ensure_kernel",
    "list_notebooks",
    "main",
]

PACKAGE_DIR = Path(__file__).resolve().parent
PROFILES_DIR = PACKAGE_DIR / "profiles"
DEFAULT_KERNEL = "mimir-book"
PARAMETERS_TAG = "parameters"
# Types a parameter may declare (by annotation or by its default's type).
_KNOWN_TYPES = {"int", "float", "bool", "str", "list", "dict", "any"}
_TYPE_ALIASES = {
    "tuple": "list",
    "List": "list",
    "Dict": "dict",
    "Any": "any",
    "object": "any",
    "None": "any",
    "NoneType": "any",
}


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


# --------------------------------------------------------------------------- paths


def _resolve_path(p: str | os.PathLike, base: Path | None = None) -> Path:
    p = Path(p)
    return p if p.is_absolute() else (base or REPO_ROOT) / p


def _notebook_file(stem: str, notebooks_dir: str | os.PathLike) -> Path:
    """``stem`` may also be given as ``name.py`` or a path to it."""
    nb_dir = _resolve_path(notebooks_dir)
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
    nb_dir = _resolve_path(notebooks_dir)
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


# ---------------------------------------------------------------- reading notebooks


def _read_source(path: Path, kernel: str = DEFAULT_KERNEL):
    """The py:percent file as an nbformat notebook, with kernel metadata set.

    jupytext writes no kernelspec for a header-less .py file, and papermill
    (inspect and execute) refuses a notebook without a language.
    """
    import jupytext

    nb = jupytext.read(path)
    nb.metadata["kernelspec"] = {"name": kernel, "display_name": f"Python ({kernel})", "language": "python"}
    nb.metadata.setdefault("language_info", {"name": "python"})
    return nb


def _parameters_cell(nb, path: Path):
    code = [(i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    tagged = [i for i, c in code if PARAMETERS_TAG in c.metadata.get("tags", [])]
    if not tagged:
        raise ParameterError(f"{path}: no cell tagged 'parameters' (in py:percent: '# %% tags=[\"parameters\"]')")
    if tagged[0] != code[0][0]:
        raise ParameterError(f"{path}: the 'parameters' cell must be the first code cell")
    if len(tagged) > 1:
        raise ParameterError(f"{path}: more than one cell tagged 'parameters'")
    return code[0][1]


def _type_from_annotation(node: ast.expr | None, text: str | None) -> str | None:
    if node is not None:
        if isinstance(node, ast.Subscript):  # list[str] -> list
            node = node.value
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        elif isinstance(node, ast.Name):
            text = node.id
        elif isinstance(node, ast.Constant) and node.value is None:
            text = "None"
        else:
            text = ast.unparse(node)
    if text is None or text == "None":
        return None
    text = text.split("[", 1)[0].strip()
    return _TYPE_ALIASES.get(text, text)


def _type_of_value(v: Any) -> str:
    if v is None:
        return "any"
    name = _TYPE_ALIASES.get(type(v).__name__, type(v).__name__)
    return name if name in _KNOWN_TYPES else "any"


def _trailing_comments(source: str) -> dict[int, str]:
    """Line number -> text of the comment ending that line (tokenize, not regex,
    so a '#' inside a string is not taken for a comment)."""
    out = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            out[tok.start[0]] = tok.string.lstrip("#").strip()
    return out


def notebook_parameters(path: str | os.PathLike) -> dict[str, dict[str, Any]]:
    """Declared parameters of a py:percent notebook: ``{name: {default, type, help}}``.

    Names and help come from ``papermill.inspect_notebook`` (help is the
    trailing ``# comment``); the cell is also parsed with ``ast`` because
    papermill silently skips lines it cannot parse (a second ``=`` on the line,
    ``x: int | None = ...``) and returns defaults only as source text.
    ``type`` is the annotation if any, else the default's type; ``"any"``
    (from a ``None`` default) accepts every value.
    """
    import nbformat
    import papermill

    path = Path(path)
    nb = _read_source(path)
    cell = _parameters_cell(nb, path)
    src = cell.source

    try:
        tree = ast.parse(src)
    except SyntaxError as e:
        raise ParameterError(f"{path}: parameters cell line {e.lineno}: {e.msg}") from None
    assigned: dict[str, tuple[ast.stmt, ast.expr | None]] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            assigned[stmt.targets[0].id] = (stmt, None)
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            assigned[stmt.target.id] = (stmt, stmt.annotation)
        else:
            raise ParameterError(
                f"{path}: parameters cell line {stmt.lineno}: only `name = value  # help` "
                "lines are allowed there (move other code to the next cell)"
            )

    with tempfile.TemporaryDirectory(prefix="mimir-inspect-") as tmp:
        ipynb = Path(tmp) / f"{path.stem}.ipynb"
        nbformat.write(nb, ipynb)
        inspected = papermill.inspect_notebook(str(ipynb))

    skipped = [n for n in assigned if n not in inspected]
    if skipped:
        lines = ", ".join(f"{n} (line {assigned[n][0].lineno})" for n in skipped)
        raise ParameterError(
            f"{path}: papermill cannot parse parameter(s) {lines}: keep each on its own "
            "line as `name = literal  # help`, with no other '=' on the line and a plain "
            "type annotation (not `X | None`)"
        )

    comments = _trailing_comments(src)
    declared: dict[str, dict[str, Any]] = {}
    undocumented = []
    for name, (stmt, ann) in assigned.items():
        info = inspected[name]
        try:
            default = ast.literal_eval(stmt.value)
        except ValueError:
            raise ParameterError(
                f"{path}: default of parameter {name!r} must be a Python literal, "
                f"got `{ast.get_source_segment(src, stmt.value)}`"
            ) from None
        help_text = (info.get("help") or "").strip()
        try:  # papermill's regex splits on the first '#', even inside a string
            pm_ok = ast.literal_eval(info.get("default", "")) == default
        except (ValueError, SyntaxError):
            pm_ok = False
        if not pm_ok:
            help_text = comments.get(stmt.end_lineno, "")
            if help_text.startswith("type:"):
                help_text = help_text.split(None, 2)[2] if len(help_text.split()) > 2 else ""
        ptype = _type_from_annotation(ann, None) if ann is not None else None
        if ptype is None:
            ptype = _type_from_annotation(None, info.get("inferred_type_name"))
        if ptype is None:
            ptype = _type_of_value(default)
        if ptype not in _KNOWN_TYPES:
            raise ParameterError(
                f"{path}: parameter {name!r} has unsupported type {ptype!r} "
                f"(use one of {', '.join(sorted(_KNOWN_TYPES))})"
            )
        if default is not None and _check_type(default, ptype, default) is not None:
            raise ParameterError(
                f"{path}: default of parameter {name!r} is {type(default).__name__}, but it is declared {ptype}"
            )
        if not help_text:
            undocumented.append(name)
        declared[name] = {"default": default, "type": ptype, "help": help_text}
    if undocumented:
        raise ParameterError(
            f"{path}: undocumented parameter(s) {', '.join(undocumented)}: every parameter "
            "needs a trailing `# help` comment"
        )
    return declared


# ------------------------------------------------------------------------ validation


def _check_type(value: Any, ptype: str, default: Any) -> str | None:
    """None if ``value`` fits ``ptype``, else the name of the type it has."""
    if ptype == "any":
        return None
    if value is None:
        return None if default is None else "NoneType"
    ok = {
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "bool": lambda v: isinstance(v, bool),
        "str": lambda v: isinstance(v, str),
        "list": lambda v: isinstance(v, (list, tuple)),
        "dict": lambda v: isinstance(v, dict),
    }[ptype](value)
    return None if ok else type(value).__name__


def validate(
    params: Mapping[str, Any],
    declared: Mapping[str, Mapping[str, Any]],
    *,
    notebook: str | None = None,
    sources: Mapping[str, str] | None = None,
) -> None:
    """Raise ``ParameterError`` for unknown or ill-typed parameters.

    papermill would only log a warning for an unknown name and inject it anyway,
    so a typo silently runs the chapter with the default.
    """
    where = f"notebook {notebook}: " if notebook else ""
    src = sources or {}

    def origin(name):
        return f" (from {src[name]})" if name in src else ""

    unknown = [n for n in params if n not in declared]
    if unknown:
        valid = ", ".join(declared) or "(none)"
        names = ", ".join(f"{n!r}{origin(n)}" for n in unknown)
        raise ParameterError(f"{where}unknown parameter {names}; valid parameters: {valid}")
    for name, value in params.items():
        ptype = declared[name]["type"]
        got = _check_type(value, ptype, declared[name]["default"])
        if got is not None:
            raise ParameterError(f"{where}parameter {name!r}{origin(name)} expects {ptype}, got {got} ({value!r})")


# -------------------------------------------------------------------------- profiles


def _load_yaml_file(path: Path, what: str):
    try:
        return load_yaml(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as e:
        raise ParameterError(f"{what} {path}: invalid YAML: {e}".replace("\n", " ")) from None


def _profile_params(stem: str, profile: str, profiles_dir: Path) -> dict[str, Any]:
    path = profiles_dir / f"{profile}.yml"
    if not path.is_file():
        avail = ", ".join(p.stem for p in sorted(profiles_dir.glob("*.yml"))) or "none"
        raise ParameterError(f"unknown profile {profile!r}: no {path} (available: {avail})")
    try:
        data = load_profile(profile, profiles_dir)
    except yaml.YAMLError as e:
        raise ParameterError(f"profile {path}: invalid YAML: {e}".replace("\n", " ")) from None
    nbs = data.get("notebooks") if isinstance(data, dict) else None
    if nbs is None:
        return {}
    if not isinstance(nbs, dict):
        raise ParameterError(f"profile {path}: 'notebooks' must be a mapping of notebook stems")
    entry = nbs.get(stem) or {}
    if not isinstance(entry, dict):
        raise ParameterError(f"profile {path}: notebooks.{stem} must be a mapping")
    return dict(entry)


def _params_file_entries(params_file: Path, stem: str) -> tuple[dict[str, Any], bool]:
    """(params, nested): a params file is either a flat ``{param: value}`` mapping
    or, like a profile, ``notebooks: {stem: {param: value}}`` (for ``--all``)."""
    data = _load_yaml_file(params_file, "params file")
    if not isinstance(data, dict):
        raise ParameterError(f"params file {params_file}: expected a mapping")
    if isinstance(data.get("notebooks"), dict):
        entry = data["notebooks"].get(stem) or {}
        if not isinstance(entry, dict):
            raise ParameterError(f"params file {params_file}: notebooks.{stem} must be a mapping")
        return dict(entry), True
    return dict(data), False


def _parse_overrides(overrides) -> dict[str, Any]:
    """``["k=0.1", "domains=[code]"]`` -> typed values (YAML), or a mapping as is."""
    if overrides is None:
        return {}
    if isinstance(overrides, Mapping):
        return dict(overrides)
    out = {}
    for item in overrides:
        name, sep, raw = str(item).partition("=")
        name = name.strip()
        if not sep or not name.isidentifier():
            raise ParameterError(f"bad override {item!r}: expected -p name=value")
        try:
            out[name] = load_yaml(raw) if raw.strip() else ""
        except yaml.YAMLError:
            raise ParameterError(
                f"bad override {item!r}: value is not valid YAML (quote it, e.g. -p 'name=\"text\"')"
            ) from None
    return out


def _resolve(stem, profile, params_file=None, overrides=None, *, declared, profiles_dir=None, only_declared=False):
    """Merged params and where each came from (for error messages)."""
    profiles_dir = _resolve_path(profiles_dir) if profiles_dir else PROFILES_DIR
    params: dict[str, Any] = {}
    sources: dict[str, str] = {}

    def merge(values, source, lenient=False):
        for k, v in values.items():
            if lenient and k not in declared:
                continue
            params[k] = v
            sources[k] = source

    merge(_profile_params(stem, profile, profiles_dir), f"profile {profile}")
    if params_file is not None:
        pf = _resolve_path(params_file, Path.cwd())
        values, nested = _params_file_entries(pf, stem)
        merge(values, f"params file {pf}", lenient=only_declared and not nested)
    merge(_parse_overrides(overrides), "-p", lenient=only_declared)
    if "profile" in declared:
        if "profile" in params and params["profile"] != profile:
            raise ParameterError(f"parameter 'profile' is set by --profile ({profile!r}), not by {sources['profile']}")
        params["profile"] = profile
        sources["profile"] = "--profile"
    return params, sources


def resolve_params(
    notebook_stem: str,
    profile: str,
    params_file=None,
    overrides=None,
    *,
    notebooks_dir="notebooks",
    profiles_dir=None,
    declared: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Parameters for one notebook: profile, then params file, then ``-p`` overrides.

    ``overrides`` is a list of ``name=value`` strings (values parsed as YAML, so
    ``k=0.1`` is a float and ``domains=[code]`` a list) or a mapping.
    ``profile=<profile>`` is added when the notebook declares ``profile``.
    """
    if declared is None:
        declared = notebook_parameters(_notebook_file(notebook_stem, notebooks_dir))
    return _resolve(notebook_stem, profile, params_file, overrides, declared=declared, profiles_dir=profiles_dir)[0]


# ---------------------------------------------------------------------------- kernel


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


def _kernel_manager_class(extra_env: Mapping[str, str]):
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


# -------------------------------------------------------------------- progress tail


class _Tail(threading.Thread):
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


# ------------------------------------------------------------------------- execution


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


def _failed(
    stem, tmp_out: Path, failed_dir: Path, progress_log: Path | None, cell_line, ename, evalue, tb=""
) -> NotebookFailed:
    """Move the partial notebook (and the progress log) under ``failed/``."""
    failed_dir.mkdir(parents=True, exist_ok=True)
    partial = failed_dir / f"{stem}.ipynb"
    if tmp_out.exists():
        os.chmod(tmp_out, 0o666 & ~_umask())
        os.replace(tmp_out, partial)
    else:
        partial.unlink(missing_ok=True)  # a stale one would mislead
        partial = None
    if progress_log is not None and progress_log.exists() and progress_log.stat().st_size:
        shutil.copyfile(progress_log, failed_dir / f"{stem}.progress.log")
    return NotebookFailed(stem, cell_line, ename, evalue, partial, tb)


def run_notebook(
    stem: str,
    profile: str = "lab",
    params_file=None,
    overrides=None,
    notebooks_dir="notebooks",
    out_dir="book/executed",
    kernel: str = DEFAULT_KERNEL,
    *,
    profiles_dir=None,
    cwd=None,
    execution_timeout: int | None = None,
    start_timeout: int = 120,
    tail_every: float = 5.0,
    _only_declared: bool = False,
) -> Path:
    """Execute ``notebooks/<stem>.py`` into ``<out_dir>/<stem>.ipynb``; return that path.

    Parameters are resolved and validated first (``ParameterError``, nothing
    started). The output is replaced only on success; on failure the previous
    good notebook is left untouched, the partial one goes to
    ``<out_dir>/failed/<stem>.ipynb`` and ``NotebookFailed`` is raised.
    Relative paths are taken from the repository root, which is also the
    kernel's working directory.
    """
    import nbformat
    import papermill
    from papermill.exceptions import PapermillExecutionError

    src = _notebook_file(stem, notebooks_dir)
    stem = src.stem
    declared = notebook_parameters(src)
    params, sources = _resolve(
        stem,
        profile,
        params_file,
        overrides,
        declared=declared,
        profiles_dir=profiles_dir,
        only_declared=_only_declared,
    )
    validate(params, declared, notebook=stem, sources=sources)

    ensure_kernel(kernel)
    out_dir = _resolve_path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    failed_dir = out_dir / "failed"
    final = out_dir / f"{stem}.ipynb"
    cwd = _resolve_path(cwd) if cwd else REPO_ROOT

    # Convert first: nothing below may fail before the kernel starts but papermill.
    nb = _read_source(src, kernel)
    tmp_dir = Path(tempfile.mkdtemp(prefix="mimir-run-"))
    src_ipynb = tmp_dir / f"{stem}.ipynb"
    nbformat.write(nb, src_ipynb)
    first_code = next(c for c in nbformat.read(src_ipynb, as_version=4).cells if c.cell_type == "code")
    if PARAMETERS_TAG not in first_code.metadata.get("tags", []):
        shutil.rmtree(tmp_dir, ignore_errors=True)
        raise AssertionError(f"{src}: the 'parameters' tag was lost converting to ipynb")

    fd, tmp_name = tempfile.mkstemp(prefix=f".{stem}.", suffix=".ipynb.partial", dir=out_dir)
    os.close(fd)
    tmp_out = Path(tmp_name)  # not *.ipynb: a book build must never pick it up
    progress_log = tmp_dir / "progress.log"
    progress_log.touch()

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

    tail = _Tail(progress_log, stem, every=tail_every)
    try:
        tail.start()
        try:
            with warnings.catch_warnings():
                # our temporary output path deliberately does not end in .ipynb
                warnings.filterwarnings("ignore", message="The specified file")
                papermill.execute_notebook(
                    str(src_ipynb),
                    str(tmp_out),
                    parameters=params,
                    kernel_name=kernel,
                    language="python",
                    cwd=str(cwd),
                    progress_bar={"desc": stem, "unit": "cell"},
                    log_output=False,
                    start_timeout=start_timeout,
                    execution_timeout=execution_timeout,
                    kernel_manager_class=_kernel_manager_class(env),
                )
        finally:
            tail.stop()
    except PapermillExecutionError as e:
        raise _failed(
            stem,
            tmp_out,
            failed_dir,
            progress_log,
            _first_line(e.source),
            e.ename,
            e.evalue,
            _strip_ansi("\n".join(e.traceback or [])),
        ) from None
    except Exception as e:  # kernel died, timed out, failed to start...
        cell_line = None
        if tmp_out.exists() and tmp_out.stat().st_size:
            try:
                partial_nb = nbformat.read(tmp_out, as_version=4)
                found = _problems(partial_nb)
                cell_line = found[0] if found else _last_started(partial_nb)
            except Exception:
                pass
        raise _failed(
            stem, tmp_out, failed_dir, progress_log, cell_line, type(e).__name__, " ".join(str(e).split())
        ) from e
    except BaseException:  # Ctrl-C: still keep the partial out of the book
        if tmp_out.exists():
            failed_dir.mkdir(parents=True, exist_ok=True)
            os.replace(tmp_out, failed_dir / f"{stem}.ipynb")
        raise
    finally:
        shutil.rmtree(tmp_dir, ignore_errors=True)

    done = nbformat.read(tmp_out, as_version=4)
    found = _problems(done)
    if found:
        raise _failed(stem, tmp_out, failed_dir, None, *found)
    # papermill records its (temporary) paths; record the real ones.
    done.metadata.setdefault("papermill", {})
    done.metadata.papermill["input_path"] = _repo_relative(src)
    done.metadata.papermill["output_path"] = _repo_relative(final)
    done.metadata.papermill["profile"] = profile
    nbformat.write(done, tmp_out)
    os.chmod(tmp_out, 0o666 & ~_umask())  # mkstemp made it 0600
    os.replace(tmp_out, final)
    (failed_dir / f"{stem}.ipynb").unlink(missing_ok=True)  # stale now
    (failed_dir / f"{stem}.progress.log").unlink(missing_ok=True)
    return final


# ------------------------------------------------------------------------------- CLI


def _format_params(stem: str, path: Path, declared, profile_values) -> str:
    lines = [f"{stem}  ({path})"]
    if not declared:
        lines.append("  (no parameters)")
    for name, info in declared.items():
        line = f"  {name}: {info['type']} = {info['default']!r}"
        if name in profile_values:
            line += f"   [{profile_values['__profile__']}: {profile_values[name]!r}]"
        lines.append(line)
        lines.append(f"      {info['help']}")
    return "\n".join(lines)


def _build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mimir-run",
        description="Execute book notebooks (jupytext py:percent) with papermill into "
        "book/executed/. Parameters: profile, then --params-file, then -p.",
    )
    p.add_argument(
        "notebooks",
        nargs="*",
        metavar="NOTEBOOK",
        help="notebook stem (e.g. main_results) or path to notebooks/<stem>.py",
    )
    p.add_argument(
        "--all", action="store_true", help="run notebooks/ORDER if present, else every notebooks/*.py, in order"
    )
    p.add_argument("--profile", default="lab", help="parameter profile: mimirlib/profiles/<profile>.yml (default: lab)")
    p.add_argument("--params-file", metavar="F", help="YAML {param: value}, or {notebooks: {stem: {param: value}}}")
    p.add_argument(
        "-p",
        "--param",
        dest="overrides",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override one parameter (value parsed as YAML); "
        "repeatable. With several notebooks it applies to those that declare it",
    )
    p.add_argument(
        "--list-params", action="store_true", help="print each notebook's parameters (type, default, help) and exit"
    )
    p.add_argument(
        "--kernel", default=DEFAULT_KERNEL, help=f"Jupyter kernel name to register and use (default: {DEFAULT_KERNEL})"
    )
    p.add_argument("--notebooks-dir", default="notebooks", help=argparse.SUPPRESS)
    p.add_argument("--out-dir", default="book/executed", help=argparse.SUPPRESS)
    p.add_argument("--profiles-dir", default=None, help=argparse.SUPPRESS)
    p.add_argument("--timeout", type=int, default=None, help="per-cell execution timeout in seconds (default: none)")
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``mimir-run`` / ``python -m mimirlib.runner``.

    Exit status: 0 ok, 2 bad parameters (nothing run), 1 a notebook failed.
    """
    args = _build_parser().parse_args(argv)
    try:
        stems = list_notebooks(args.notebooks_dir) if args.all else []
        stems += [s for s in args.notebooks if s not in stems]
        if not stems:
            raise ParameterError("no notebooks given (name some, or use --all)")
        files = {s: _notebook_file(s, args.notebooks_dir) for s in stems}
        declared = {s: notebook_parameters(f) for s, f in files.items()}

        if args.list_params:
            profiles_dir = _resolve_path(args.profiles_dir) if args.profiles_dir else PROFILES_DIR
            out = []
            for s, f in files.items():
                try:
                    values = _profile_params(f.stem, args.profile, profiles_dir)
                except ParameterError:
                    values = {}
                values["__profile__"] = args.profile
                out.append(_format_params(f.stem, f, declared[s], values))
            print("\n\n".join(out))
            return 0

        # With several notebooks, flat -p / params-file entries go to the
        # notebooks that declare them; a name no notebook declares is an error.
        overrides = _parse_overrides(args.overrides)
        known = set().union(*(d.keys() for d in declared.values()))
        for name in overrides:
            if name not in known:
                raise ParameterError(
                    f"unknown parameter {name!r} (from -p): not declared by {', '.join(files[s].stem for s in stems)}"
                )
        # Resolve and validate everything before running anything.
        for s in stems:
            params, sources = _resolve(
                files[s].stem,
                args.profile,
                args.params_file,
                overrides,
                declared=declared[s],
                profiles_dir=args.profiles_dir,
                only_declared=len(stems) > 1,
            )
            validate(params, declared[s], notebook=files[s].stem, sources=sources)
    except ParameterError as e:
        print(f"mimir-run: error: {e}", file=sys.stderr)
        return 2

    for s in stems:
        t0 = time.monotonic()
        print(f"mimir-run: {files[s].stem} (profile {args.profile})", file=sys.stderr)
        try:
            out = run_notebook(
                str(files[s]),
                profile=args.profile,
                params_file=args.params_file,
                overrides=overrides,
                notebooks_dir=args.notebooks_dir,
                out_dir=args.out_dir,
                kernel=args.kernel,
                profiles_dir=args.profiles_dir,
                execution_timeout=args.timeout,
                _only_declared=len(stems) > 1,
            )
        except ParameterError as e:
            print(f"mimir-run: error: {e}", file=sys.stderr)
            return 2
        except NotebookFailed as e:
            print(f"mimir-run: FAILED: {e}", file=sys.stderr)
            return 1
        print(f"mimir-run: done {files[s].stem} in {time.monotonic() - t0:.1f}s -> {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
