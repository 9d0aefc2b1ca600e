"""A notebook's parameters cell: reading it (names, defaults, types, help) and validating values against it.

Parameters live in the notebook's first code cell, tagged ``parameters``, one
``name = literal  # help`` (or ``name: type = literal  # help``) per line.
"""

from __future__ import annotations

import ast
import io
import os
import tempfile
import tokenize
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mimirlib.runner.base import DEFAULT_KERNEL, PARAMETERS_TAG, ParameterError

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


def read_source(path: Path, kernel: str = DEFAULT_KERNEL):
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
    path = Path(path)
    nb = read_source(path)
    src = _parameters_cell(nb, path).source
    assigned = _assignments(src, path)
    inspected = _papermill_parameters(nb, path)
    skipped = [n for n in assigned if n not in inspected]
    if skipped:
        lines = ", ".join(f"{n} (line {assigned[n][0].lineno})" for n in skipped)
        raise ParameterError(
            f"{path}: papermill cannot parse parameter(s) {lines}: keep each on its own "
            "line as `name = literal  # help`, with no other '=' on the line and a plain "
            "type annotation (not `X | None`)"
        )

    comments = _trailing_comments(src)
    declared = {
        name: _declaration(path, src, name, stmt, ann, inspected[name], comments)
        for name, (stmt, ann) in assigned.items()
    }
    undocumented = [name for name, info in declared.items() if not info["help"]]
    if undocumented:
        raise ParameterError(
            f"{path}: undocumented parameter(s) {', '.join(undocumented)}: every parameter "
            "needs a trailing `# help` comment"
        )
    return declared


def _assignments(src: str, path: Path) -> dict[str, tuple[ast.stmt, ast.expr | None]]:
    """``{name: (statement, annotation or None)}`` of the cell's lines; anything else is an error."""
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
    return assigned


def _papermill_parameters(nb, path: Path) -> dict[str, dict[str, Any]]:
    """What ``papermill.inspect_notebook`` reads from the notebook (it reads only ``.ipynb``)."""
    import nbformat
    import papermill

    with tempfile.TemporaryDirectory(prefix="mimir-inspect-") as tmp:
        ipynb = Path(tmp) / f"{path.stem}.ipynb"
        nbformat.write(nb, ipynb)
        return papermill.inspect_notebook(str(ipynb))


def _declaration(path: Path, src: str, name: str, stmt, ann, info, comments: dict[int, str]) -> dict[str, Any]:
    """``{default, type, help}`` of one parameter (``info``: what papermill read of it)."""
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
            f"{path}: parameter {name!r} has unsupported type {ptype!r} (use one of {', '.join(sorted(_KNOWN_TYPES))})"
        )
    if default is not None and _check_type(default, ptype, default) is not None:
        raise ParameterError(
            f"{path}: default of parameter {name!r} is {type(default).__name__}, but it is declared {ptype}"
        )
    return {"default": default, "type": ptype, "help": help_text}


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


def where_origin(notebook, sources):
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
    where, origin = where_origin(notebook, sources)
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
