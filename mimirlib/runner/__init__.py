"""Execute the book's notebooks: jupytext py:percent -> papermill -> ``book/executed/``.

Why a wrapper around papermill:

* papermill only *warns* on unknown parameters and never checks types; here
  both are errors, raised before any kernel starts, and so are names the
  chapter would only reject minutes later (unknown attacks, domains, lab
  targets, missing local model folders: ``check_names``);
* a run with other parameters than its profile's writes a *variant*
  (``book/variants/<stem>--<name>.ipynb``), never the published chapter,
  unless ``publish``; its page opens with a banner listing them and the
  command that reproduces it, and papermill's injected-parameters cell is
  collapsed (``hide-input``) on every page, so a page starts with its science;
* papermill reads only ``.ipynb``; sources are jupytext ``py:percent`` files;
* papermill leaves a partial notebook at the output path on failure; here the
  output is written to a temporary file and moved into place only on success,
  so the book never renders a half-run chapter (the partial one goes to
  ``failed/``; one left by a run killed with SIGKILL is removed by the next);
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
import glob
import hashlib
import io
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
import threading
import time
import tokenize
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from mimirlib.profiles import load_profile, load_yaml

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

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # mimirlib/
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


def _where_origin(notebook, sources):
    """The error prefix naming the notebook, and a function naming where a parameter came from."""
    where = f"notebook {notebook}: " if notebook else ""
    src = sources or {}
    return where, lambda name: f" (from {src[name]})" if name in src else ""


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
    where, origin = _where_origin(notebook, sources)
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


# ------------------------------------------------------- names checked before a kernel starts

# Parameters whose values name things that can be checked here, by name: a chapter that fails
# on them fails minutes later, inside the kernel, after the lab and the models were loaded.
ATTACK_PARAMETERS = ("attacks", "after_attacks")  # mimirlib.core.attacks.ATTACKS
ENGINE_PARAMETERS = ("engine",)  # mimirlib.core.engines.ENGINES (where forward passes run)
BACKBONE_PARAMETERS = ("backbones",)  # mimirlib.samplers.ranges.BACKBONES (RaMIA's point attacks)
DOMAIN_PARAMETERS = ("domains", "domain", "demo_domain")  # the lab's domains, or the MIMIR configs
MODEL_PARAMETERS = ("models", "reference_models", "model", "reference_model")  # hub names or local folders
LAB_MODEL_PARAMETERS = ("targets", "beyond_target")  # one-epoch lab targets by name


def _names(value) -> list[str]:
    """The names a parameter value holds: a list, one string, or a comma-separated string."""
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    return [str(value)]


def _unknown_name(name, value, known, what, where, origin, among="known") -> None:
    """Raise naming the first of ``value``'s names that is not in ``known``, and listing those."""
    for v in _names(value):
        if v not in known:
            raise ParameterError(
                f"{where}parameter {name!r}{origin}: unknown {what} {v!r} ({among}: {', '.join(sorted(known))})"
            )


def check_attacks(params: Mapping[str, Any], *, notebook: str | None = None, sources=None) -> None:
    """Raise ``ParameterError`` for an attack (or RaMIA backbone, or signals engine) that no registry knows."""
    where, origin = _where_origin(notebook, sources)
    if any(params.get(n) is not None for n in ATTACK_PARAMETERS):
        from mimirlib.core.attacks import ATTACKS

        for n in ATTACK_PARAMETERS:
            _unknown_name(n, params.get(n), ATTACKS, "attack", where, origin(n))
    if any(params.get(n) is not None for n in BACKBONE_PARAMETERS):
        from mimirlib.samplers.ranges import BACKBONES

        for n in BACKBONE_PARAMETERS:
            _unknown_name(n, params.get(n), BACKBONES, "backbone", where, origin(n))
    if any(params.get(n) is not None for n in ENGINE_PARAMETERS):
        from mimirlib.core.engines import ENGINES

        for n in ENGINE_PARAMETERS:
            _unknown_name(n, params.get(n), ENGINES, "engine", where, origin(n))


def _lab_config(profile: str, profiles_dir=None) -> dict | None:
    """The profile's ``lab:`` section (what a lab of that profile is built from), or None."""
    profiles_dir = _resolve_path(profiles_dir) if profiles_dir else PROFILES_DIR
    try:
        lab = load_profile(profile, profiles_dir).get("lab")
    except (OSError, ValueError, yaml.YAMLError, AttributeError):
        return None  # an unknown or broken profile is reported by _profile_params
    return lab if isinstance(lab, dict) else None


def check_domains(
    params: Mapping[str, Any], profile: str, *, notebook: str | None = None, sources=None, profiles_dir=None
) -> None:
    """Raise ``ParameterError`` for a domain the run's benchmarks cannot hold.

    Knowable without building anything: the lab's domains (its profile's ``lab.domains``) when
    the benchmarks are the lab's, MIMIR's configs when they are the MIMIR dataset by name. A
    local folder of benchmarks is not listed here: the chapter reports what it lacks.
    """
    from mimirlib.core.hub import CONFIGS, MIMIR_REPO

    where, origin = _where_origin(notebook, sources)
    source = params.get("benchmark_source")
    lab = _lab_config(profile, profiles_dir)
    for n in DOMAIN_PARAMETERS:
        if params.get(n) is None:
            continue
        if source is None or n == "demo_domain":  # the demonstration always uses the lab
            if lab and lab.get("domains"):
                _unknown_name(n, params[n], lab["domains"], "domain", where, origin(n), f"lab of profile {profile}")
        elif source == MIMIR_REPO:
            _unknown_name(n, params[n], CONFIGS, "domain", where, origin(n), "MIMIR's configs")


def check_models(
    params: Mapping[str, Any],
    profile: str,
    *,
    notebook: str | None = None,
    sources=None,
    profiles_dir=None,
    cwd=None,
) -> None:
    """Raise ``ParameterError`` for a local model folder that does not exist or a lab target the
    profile's lab does not train. Hub names are not looked up (that needs the network); relative
    paths are taken from ``cwd`` (the kernel's working directory)."""
    from mimirlib.core.hub import is_local_path
    from mimirlib.lab.layout import target_name

    where, origin = _where_origin(notebook, sources)
    base = _resolve_path(cwd) if cwd else REPO_ROOT
    for n in MODEL_PARAMETERS:
        value = params.get(n)
        for v in [value] if isinstance(value, str) else _names(value):  # a path may hold a comma
            if is_local_path(v) and not _resolve_path(Path(v).expanduser(), base).exists():
                raise ParameterError(
                    f"{where}parameter {n!r}{origin(n)}: no model folder {v!r} "
                    f"(a local path, from {base}; hub names look like org/name)"
                )
    lab = _lab_config(profile, profiles_dir)
    if lab and isinstance(lab.get("targets"), list):
        known = [target_name(t["name"]) for t in lab["targets"] if isinstance(t, dict) and "name" in t]
        for n in LAB_MODEL_PARAMETERS:
            _unknown_name(n, params.get(n), known, "lab target", where, origin(n), f"lab of profile {profile}")


def check_names(
    params: Mapping[str, Any],
    profile: str,
    *,
    notebook: str | None = None,
    sources=None,
    profiles_dir=None,
    cwd=None,
) -> None:
    """Every name check (attacks, domains, models) of one notebook's parameters."""
    check_attacks(params, notebook=notebook, sources=sources)
    check_domains(params, profile, notebook=notebook, sources=sources, profiles_dir=profiles_dir)
    check_models(params, profile, notebook=notebook, sources=sources, profiles_dir=profiles_dir, cwd=cwd)


# -------------------------------------------------------------------------- profiles


def _load_yaml_file(path: Path, what: str):
    """The mapping in a YAML (or ``.json``: JSON) file; every way of failing is one ParameterError line."""
    if not path.exists():
        raise ParameterError(f"{what} {path}: no such file")
    if not path.is_file():
        raise ParameterError(f"{what} {path}: not a file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ParameterError(f"{what} {path}: cannot read it: {e}".replace("\n", " ")) from None
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text) if text.strip() else {}
        except json.JSONDecodeError as e:
            raise ParameterError(f"{what} {path}: invalid JSON: {e}") from None
    try:
        return load_yaml(text) or {}
    except yaml.YAMLError as e:
        raise ParameterError(f"{what} {path}: invalid YAML: {' '.join(str(e).split())}") from None


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


# ------------------------------------------------ what a run changed, and where it goes

VARIANTS_DIR = "variants"  # beside the executed chapters' folder: book/variants/<chapter>--<name>.ipynb
VARIANT_SEP = "--"
_VARIANT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
INJECTED_TAG = "injected-parameters"  # papermill's tag on the cell it inserts
HIDE_INPUT = "hide-input"  # Jupyter Book: collapsed, one click to show


def _plain(value):
    """Tuples as lists (YAML gives lists; a literal default may be a tuple), recursively."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def default_parameters(declared: Mapping[str, Mapping[str, Any]], profile_values: Mapping[str, Any]) -> dict:
    """What a run of the chapter under its profile uses when nothing else is given."""
    return {n: _plain(profile_values.get(n, info["default"])) for n, info in declared.items()}


def changed_parameters(params: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters of a run that differ from ``defaults`` (the profile's), in ``params`` order."""
    return {n: v for n, v in params.items() if n != "profile" and _plain(v) != defaults.get(n)}


def cli_value(value) -> str:
    """``value`` as ``-p name=<this>`` reads it back (YAML flow style; JSON when that is ambiguous)."""
    text = yaml.safe_dump(_plain(value), default_flow_style=True, width=10**6).strip()
    text = text.removesuffix("...").strip()
    try:
        if load_yaml(text) == _plain(value):
            return text
    except yaml.YAMLError:
        pass
    return json.dumps(value)


def auto_variant_name(changed: Mapping[str, Any]) -> str:
    """A file-safe name from the changed parameters: ``min_k=0.1`` -> ``min_k-0p1``."""

    def slug(v):
        s = cli_value(v).replace(".", "p")
        return re.sub(r"[^A-Za-z0-9_]+", "-", s).strip("-") or "x"

    name = "__".join(f"{n}-{slug(v)}" for n, v in changed.items()) or "defaults"
    if len(name) > 60:
        digest = hashlib.sha1(name.encode()).hexdigest()[:8]
        name = f"{name[:51].rstrip('-_')}-{digest}"
    return name


def variant_for(changed: Mapping[str, Any], variant: str | None = None, publish: bool = False) -> str | None:
    """The variant a run writes (None: the published chapter).

    A run with non-default parameters never replaces the published chapter unless asked
    (``publish``); it gets ``variant`` or a name made from what it changed.
    """
    if publish and variant:
        raise ParameterError("--publish replaces the published chapter; --variant writes beside it: give one")
    if variant is not None and not _VARIANT_NAME.match(variant):
        raise ParameterError(f"bad variant name {variant!r}: use letters, digits, '-' and '_' (e.g. k01)")
    if publish:
        return None
    if variant is not None:
        return variant
    return auto_variant_name(changed) if changed else None


def reproduce_command(stem: str, profile: str, changed: Mapping[str, Any], variant=None, publish=False) -> str:
    """The command line that re-runs exactly this run (every changed parameter as ``-p``)."""
    args = ["python", "-m", "mimirlib.runner", stem, "--profile", profile]
    for n, v in changed.items():
        args += ["-p", f"{n}={cli_value(v)}"]
    if variant:
        args += ["--variant", variant]
    elif publish and changed:
        args.append("--publish")
    return shlex.join(args)


def _md_code(value) -> str:
    text = cli_value(value).replace("|", "\\|")
    return f"``{text}``" if "`" in text else f"`{text}`"


def banner_markdown(profile: str, changed, defaults, command: str, variant: str | None = None) -> str:
    """The visible note on a chapter executed with other parameters than its profile's."""
    if variant:
        title = f"Variant `{variant}`: not the published chapter"
    else:
        title = "Executed with non-default parameters"
    lines = [f":::{{admonition}} {title}", ":class: warning"]
    if changed:
        lines += [
            f"This page was executed with the parameters below instead of the `{profile}` profile's; "
            "text written for the defaults may not match its numbers.",
            "",
            f"| parameter | this run | default (profile `{profile}`) |",
            "| --- | --- | --- |",
        ]
        lines += [f"| `{n}` | {_md_code(v)} | {_md_code(defaults.get(n))} |" for n, v in changed.items()]
    else:
        lines.append(f"This page was executed with the `{profile}` profile's default parameters.")
    lines += ["", "Reproduce it with:", "", "```bash", command, "```", ":::"]
    return "\n".join(lines)


def _title_index(nb) -> int:
    """Index of the chapter's title cell: the first markdown cell with a ``# `` heading (else the
    first markdown cell; -1 when there is none)."""
    md = [i for i, c in enumerate(nb.cells) if c.cell_type == "markdown"]
    for i in md:
        if re.search(r"^#\s", nb.cells[i].source, flags=re.M):
            return i
    return md[0] if md else -1


_LABEL_DEF = re.compile(r"^\((?P<label>[^()\s]+)\)=\s*$", re.M)
_NAME_OPT = re.compile(r"^(?P<key>:(?:name|label):\s*)(?P<label>\S+)\s*$", re.M)


def relabel(nb, suffix: str) -> dict[str, str]:
    """Give the notebook's own MyST labels ``suffix`` (a variant beside its chapter in one book
    would otherwise define every label twice: a Sphinx warning, so a failed strict build), and
    point its own references at the new names. Returns ``{old: new}``."""
    renamed: dict[str, str] = {}
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for m in [*_LABEL_DEF.finditer(cell.source), *_NAME_OPT.finditer(cell.source)]:
                renamed[m.group("label")] = m.group("label") + suffix
    if not renamed:
        return renamed
    alt = "|".join(re.escape(k) for k in sorted(renamed, key=len, reverse=True))
    patterns = [
        (_LABEL_DEF, lambda m: f"({renamed[m.group('label')]})="),
        (_NAME_OPT, lambda m: m.group("key") + renamed.get(m.group("label"), m.group("label"))),
        # {ref}`label`, {ref}`text <label>`, {numref}..., and [text](#label)
        (re.compile(rf"(\{{(?:ref|numref|eq)\}}`(?:[^`<]*<)?)({alt})(>?`)"), lambda m: m[1] + renamed[m[2]] + m[3]),
        (re.compile(rf"(\]\(#)({alt})(\))"), lambda m: m[1] + renamed[m[2]] + m[3]),
    ]
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for pat, repl in patterns:
                cell.source = pat.sub(repl, cell.source)
    return renamed


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def drop_widgets(nb):
    """Remove every widget output and the notebook's widget state.

    The book is static HTML: a widget renders as nothing without a kernel, and its state makes
    myst-nb load require.js and the widget manager from a CDN (a console error offline). The only
    widgets a chapter makes are third-party progress bars: ``tqdm.notebook`` (what ``tqdm.auto``
    picks once ipywidgets is installed) sets ``disable`` itself, so the kernel's ``TQDM_DISABLE``
    cannot silence it (transformers' GGUF conversion bar is one).
    """
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.get("outputs", []) if WIDGET_VIEW not in o.get("data", {})]
    nb.metadata.pop("widgets", None)
    return nb


def finish_notebook(
    nb, *, profile: str, changed, defaults, command: str, variant: str | None = None, publish: bool = False
):
    """Make an executed notebook read science first, and say how it was run.

    papermill's injected-parameters cell is collapsed (``hide-input``: one click shows it, so
    nothing is removed); a run with other parameters than its profile's (or any variant) gets a
    visible banner right after the title listing them and the command that reproduces it; a
    variant's labels are suffixed so it can sit beside its chapter in one book. The run is
    recorded in ``metadata.mimir``.
    """
    import nbformat

    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if INJECTED_TAG in tags and HIDE_INPUT not in tags:
            cell.metadata["tags"] = [*tags, HIDE_INPUT]
    drop_widgets(nb)
    if changed or variant:
        banner = nbformat.v4.new_markdown_cell(banner_markdown(profile, changed, defaults, command, variant))
        banner.metadata["tags"] = ["mimir-run-banner"]
        nb.cells.insert(_title_index(nb) + 1, banner)
    if variant:
        relabel(nb, f"{VARIANT_SEP}{variant}")
    nb.metadata["mimir"] = {
        "profile": profile,
        "variant": variant,
        "published": variant is None,
        "parameters": {n: _plain(v) for n, v in changed.items()},
        "command": command,
    }
    return nb


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
    name, tmp_out: Path, failed_dir: Path, progress_log: Path | None, cell_line, ename, evalue, tb=""
) -> NotebookFailed:
    """Move the partial notebook (and the progress log) under ``failed/``."""
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


@dataclass(frozen=True)
class RunPlan:
    """One notebook's run, decided and checked before anything starts."""

    params: dict  # what papermill injects
    sources: dict  # where each parameter came from (for error messages)
    defaults: dict  # every declared parameter's value under the profile alone
    changed: dict  # params that differ from defaults
    variant: str | None  # None: the published chapter
    command: str  # the command line that reproduces the run


def plan_run(
    src: Path,
    profile: str,
    params_file=None,
    overrides=None,
    *,
    variant: str | None = None,
    publish: bool = False,
    declared=None,
    profiles_dir=None,
    cwd=None,
    only_declared: bool = False,
) -> RunPlan:
    """Resolve, validate and check one notebook's parameters, and decide where its run goes.

    Raises ``ParameterError`` on anything wrong; starts nothing.
    """
    stem = src.stem
    declared = declared if declared is not None else notebook_parameters(src)
    params, sources = _resolve(
        stem,
        profile,
        params_file,
        overrides,
        declared=declared,
        profiles_dir=profiles_dir,
        only_declared=only_declared,
    )
    validate(params, declared, notebook=stem, sources=sources)
    check_names(params, profile, notebook=stem, sources=sources, profiles_dir=profiles_dir, cwd=cwd)
    profiles = _resolve_path(profiles_dir) if profiles_dir else PROFILES_DIR
    defaults = default_parameters(declared, _profile_params(stem, profile, profiles))
    changed = changed_parameters(params, defaults)
    variant = variant_for(changed, variant, publish)
    command = reproduce_command(stem, profile, changed, variant, publish)
    return RunPlan(params, sources, defaults, changed, variant, command)


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
    out_dir="book/executed",
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
    _only_declared: bool = False,
) -> Path:
    """Execute ``notebooks/<stem>.py``; return the path of the executed notebook.

    Where it goes: ``<out_dir>/<stem>.ipynb`` (the published chapter) when the parameters are
    the profile's; a run with other parameters, or one given ``variant``, goes to
    ``<variants_dir>/<stem>--<variant>.ipynb`` (``variants_dir`` defaults to ``variants/``
    beside ``out_dir``; the variant is named after what changed unless given), unless
    ``publish`` asks to replace the published chapter.

    Parameters and the names they hold (attacks, domains, local models) are checked first
    (``ParameterError``, nothing started). The output is replaced only on success, atomically;
    on failure the previous good notebook is left untouched, the partial one goes to
    ``failed/<name>.ipynb`` beside it and ``NotebookFailed`` is raised. Relative paths are
    taken from the repository root, which is also the kernel's working directory.
    """
    import nbformat
    import papermill
    from papermill.exceptions import PapermillExecutionError

    src = _notebook_file(stem, notebooks_dir)
    stem = src.stem
    cwd = _resolve_path(cwd) if cwd else REPO_ROOT
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
    )
    params, changed, defaults, variant, command = plan.params, plan.changed, plan.defaults, plan.variant, plan.command

    ensure_kernel(kernel)
    out_dir = _resolve_path(out_dir)
    if variant is None:
        dest_dir, name = out_dir, stem
    else:
        dest_dir = _resolve_path(variants_dir) if variants_dir else out_dir.parent / VARIANTS_DIR
        name = f"{stem}{VARIANT_SEP}{variant}"
    dest_dir.mkdir(parents=True, exist_ok=True)
    failed_dir = dest_dir / "failed"
    final = dest_dir / f"{name}.ipynb"

    # Leftovers of killed runs of this notebook (never a live run's).
    _remove_orphans(dest_dir, f".{name}.")
    _remove_orphans(Path(tempfile.gettempdir()), "mimir-run-")

    # Convert first: nothing below may fail before the kernel starts but papermill.
    nb = _read_source(src, kernel)
    tmp_dir = Path(tempfile.mkdtemp(prefix=f"mimir-run-{os.getpid()}-"))
    src_ipynb = tmp_dir / f"{stem}.ipynb"
    nbformat.write(nb, src_ipynb)
    first_code = next(c for c in nbformat.read(src_ipynb, as_version=4).cells if c.cell_type == "code")
    if PARAMETERS_TAG not in first_code.metadata.get("tags", []):
        shutil.rmtree(tmp_dir, ignore_errors=True)
        raise AssertionError(f"{src}: the 'parameters' tag was lost converting to ipynb")

    # papermill writes its output as it goes: never at the final path, and never as *.ipynb
    # (a book build must not pick it up); the pid in the name lets the next run remove it
    # if this one is killed.
    fd, tmp_name = tempfile.mkstemp(prefix=f".{name}.{os.getpid()}.", suffix=".ipynb.partial", dir=dest_dir)
    os.close(fd)
    tmp_out = Path(tmp_name)
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
            name,
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
            name, tmp_out, failed_dir, progress_log, cell_line, type(e).__name__, " ".join(str(e).split())
        ) from e
    except BaseException:  # Ctrl-C: still keep the partial out of the book
        if tmp_out.exists():
            failed_dir.mkdir(parents=True, exist_ok=True)
            os.replace(tmp_out, failed_dir / f"{name}.ipynb")
        raise
    finally:
        shutil.rmtree(tmp_dir, ignore_errors=True)

    done = nbformat.read(tmp_out, as_version=4)
    found = _problems(done)
    if found:
        raise _failed(name, tmp_out, failed_dir, None, *found)
    # papermill records its (temporary) paths; record the real ones.
    done.metadata.setdefault("papermill", {})
    done.metadata.papermill["input_path"] = _repo_relative(src)
    done.metadata.papermill["output_path"] = _repo_relative(final)
    done.metadata.papermill["profile"] = profile
    finish_notebook(
        done, profile=profile, changed=changed, defaults=defaults, command=command, variant=variant, publish=publish
    )
    _write_atomic(done, final, tmp_out)
    (failed_dir / f"{name}.ipynb").unlink(missing_ok=True)  # stale now
    (failed_dir / f"{name}.progress.log").unlink(missing_ok=True)
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
        description="Execute book notebooks (jupytext py:percent) with papermill. Parameters: profile, "
        "then --params-file, then -p. A run with the profile's parameters writes the published "
        "chapter, book/executed/<stem>.ipynb; a run with other parameters writes a variant beside "
        "it, book/variants/<stem>--<name>.ipynb, with a banner listing them (the book shows "
        "variants under their chapter), unless --publish.",
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
    p.add_argument(
        "--params-file",
        metavar="F",
        help="YAML (or .json) {param: value}, or {notebooks: {stem: {param: value}}}",
    )
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
    out = p.add_mutually_exclusive_group()
    out.add_argument(
        "--variant",
        metavar="NAME",
        help="write book/variants/<stem>--NAME.ipynb, never the published chapter "
        "(default for a run with non-default parameters: a name made from them, e.g. min_k-0p1)",
    )
    out.add_argument(
        "--publish",
        action="store_true",
        help="replace the published chapter even when the parameters are not the profile's "
        "(its page then shows a banner listing them)",
    )
    p.add_argument(
        "--list-params", action="store_true", help="print each notebook's parameters (type, default, help) and exit"
    )
    p.add_argument(
        "--kernel", default=DEFAULT_KERNEL, help=f"Jupyter kernel name to register and use (default: {DEFAULT_KERNEL})"
    )
    p.add_argument("--notebooks-dir", default="notebooks", help=argparse.SUPPRESS)
    p.add_argument("--out-dir", default="book/executed", help=argparse.SUPPRESS)
    p.add_argument("--variants-dir", default=None, help=argparse.SUPPRESS)
    p.add_argument("--profiles-dir", default=None, help=argparse.SUPPRESS)
    p.add_argument("--timeout", type=int, default=None, help="per-cell execution timeout in seconds (default: none)")
    p.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="run up to N notebooks at once, each kernel with cores/N torch threads, the longest chapters "
        "first (default: 1, one after the other)",
    )
    return p


# Chapters that take longest on the lab (measured 2026-12 on 2 cores), started first by --jobs so that
# the last one to finish is a short one; any other chapter follows in the given order.
LONGEST_FIRST = ("main_results", "training_size", "ramia", "modified_members", "ngram_overlap")


def schedule(stems: list[str]) -> list[str]:
    """``stems`` in the order ``--jobs`` starts them: :data:`LONGEST_FIRST`, then the rest as given."""
    return [s for s in LONGEST_FIRST if s in stems] + [s for s in stems if s not in LONGEST_FIRST]


def _run_in_worker(threads: int, kwargs: dict) -> tuple[int, str]:
    """One notebook in a worker process whose kernels get ``threads`` torch threads: (status, message)."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(threads)
    t0 = time.monotonic()
    try:
        out = run_notebook(**kwargs)
    except ParameterError as e:
        return 2, f"error: {e}"
    except NotebookFailed as e:
        return 1, f"FAILED: {e}"
    return 0, f"done {Path(kwargs['stem']).stem} in {time.monotonic() - t0:.1f}s -> {out}"


def _prepare_lab(profile: str, profiles_dir) -> None:
    """Build a packaged profile's lab, if it has one, before notebooks run side by side (never twice at
    once). A ``--profiles-dir`` profile is left alone: :func:`mimirlib.lab.build.ensure_lab` reads the
    packaged profiles only."""
    if profiles_dir is not None:
        return
    from mimirlib.profiles import load_profile

    try:
        has_lab = "lab" in load_profile(profile)
    except Exception:  # an unknown profile is reported by the notebooks' own checks
        return
    if has_lab:
        from mimirlib.lab.build import ensure_lab

        ensure_lab(profile)


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
        # Resolve, validate and check everything before running anything.
        plans = {
            s: plan_run(
                files[s],
                args.profile,
                args.params_file,
                overrides,
                variant=args.variant,
                publish=args.publish,
                declared=declared[s],
                profiles_dir=args.profiles_dir,
                only_declared=len(stems) > 1,
            )
            for s in stems
        }
    except ParameterError as e:
        print(f"mimir-run: error: {e}", file=sys.stderr)
        return 2

    if args.jobs < 1:
        print(f"mimir-run: error: --jobs must be at least 1, got {args.jobs}", file=sys.stderr)
        return 2
    if args.jobs > 1 and len(stems) > 1:
        return _run_side_by_side(args, stems, files, overrides)
    for s in stems:
        t0 = time.monotonic()
        where = f", variant {plans[s].variant}" if plans[s].variant else ""
        print(f"mimir-run: {files[s].stem} (profile {args.profile}{where})", file=sys.stderr)
        try:
            out = run_notebook(**_run_kwargs(args, files[s], overrides, several=len(stems) > 1))
        except ParameterError as e:
            print(f"mimir-run: error: {e}", file=sys.stderr)
            return 2
        except NotebookFailed as e:
            print(f"mimir-run: FAILED: {e}", file=sys.stderr)
            return 1
        print(f"mimir-run: done {files[s].stem} in {time.monotonic() - t0:.1f}s -> {out}", file=sys.stderr)
        if plans[s].variant:
            print(
                "mimir-run: the published chapter is unchanged (--publish would replace it)",
                file=sys.stderr,
            )
    return 0


def _run_kwargs(args, file: Path, overrides: dict, *, several: bool) -> dict:
    """:func:`run_notebook`'s arguments for one notebook of this command line."""
    return dict(
        stem=str(file),
        profile=args.profile,
        params_file=args.params_file,
        overrides=overrides,
        notebooks_dir=args.notebooks_dir,
        out_dir=args.out_dir,
        kernel=args.kernel,
        variant=args.variant,
        publish=args.publish,
        variants_dir=args.variants_dir,
        profiles_dir=args.profiles_dir,
        execution_timeout=args.timeout,
        _only_declared=several,
    )


def _run_side_by_side(args, stems: list[str], files: dict, overrides: dict) -> int:
    """``--jobs N``: the notebooks in N worker processes (see :func:`schedule`); every notebook runs
    even if another fails; the exit status is the worst one (2 bad parameters, 1 a failure)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    _prepare_lab(args.profile, args.profiles_dir)
    threads = max(1, (os.cpu_count() or 1) // args.jobs)
    print(f"mimir-run: {len(stems)} notebooks, {args.jobs} at once, {threads} thread(s) each", file=sys.stderr)
    worst = 0
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=args.jobs, mp_context=ctx) as pool:
        futures = []
        for s in schedule(stems):
            futures.append(pool.submit(_run_in_worker, threads, _run_kwargs(args, files[s], overrides, several=True)))
        for fut in futures:
            status, message = fut.result()
            print(f"mimir-run: {message}", file=sys.stderr)
            worst = max(worst, status)
    return worst


if __name__ == "__main__":
    sys.exit(main())
