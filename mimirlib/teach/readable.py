"""A chapter's markdown made readable in Jupyter, which renders plain markdown and HTML but no MyST.

The handouts (:mod:`mimirlib.teach.handouts`) pass every markdown cell through :func:`for_jupyter`:

- a glued value (``{glue:text}`name:.3f```) becomes the number the book's executed run glued, when
  that run (``book/executed/<chapter>.ipynb``) used the handout's profile; otherwise the name in code
  font with "(in the book)", so no role is left raw;
- a glued figure's directive becomes its caption in one line, a ``{term}``/``{ref}`` role its text,
  a ``{literalinclude}`` the code it shows;
- a ``{dropdown}`` (the quiz answers) and, in the key, a ``{solution}`` become HTML ``<details>``
  blocks, which Jupyter folds; an ``{exercise}`` becomes a bold title line;
- in the student's version, "before you open a solution" (there is none) reads "before you run its cell";
- a ``bash`` block of the chapter's own runner commands (``-p name=value`` re-runs, ``--list-params``)
  becomes the same step inside the notebook: the values to write in its settings cell
  (:data:`SETTINGS_TITLE`, which the handouts put right after the parameters), then run every cell.
"""

from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path

__all__ = [
    "book_values",
    "figures_and_links",
    "includes",
    "fold_directives",
    "for_jupyter",
    "resolve_glue",
    "runner_steps",
    "SETTINGS_TITLE",
    "STUDENT_REWRITES",
]

GLUE_ROLE = re.compile(r"\{glue(?::(?:text|md))?\}`(?P<name>[^`:]+?)(?::(?P<fmt>[^`]*))?`")
_OPEN = re.compile(r"^(?P<fence>:{3,})\{(?P<name>dropdown|solution|exercise)\}\s*(?P<arg>.*?)\s*$")
_OPTION = re.compile(r"^:[a-z-]+:")
_FIGURE = re.compile(
    r"^(?P<f>`{3,}|:{3,})\{glue:figure\}[ \t]*(?P<name>\S+)[ \t]*\n(?P<body>.*?)^(?P=f)[ \t]*$", re.M | re.S
)
_INCLUDE = re.compile(
    r"^(?P<f>`{3,}|:{3,})\{(?P<kind>literalinclude|include)\}[ \t]*(?P<path>\S+)[ \t]*\n(?P<body>.*?)^(?P=f)[ \t]*$",
    re.M | re.S,
)
_CITE = re.compile(r"\{cite(?::[a-z]+)?\}`(?P<keys>[^`]+)`")
# {term}`shown <target>`, {ref}`label`, {doc}`...`: the text a reader sees (the target where there is none)
_XREF = re.compile(r"\{(?:term|ref|doc|numref)\}`(?P<text>[^`<]*?)\s*(?:<(?P<target>[^>`]*)>)?`")
_BASH = re.compile(r"^```(?:bash|sh|shell)[ \t]*\n(?P<body>.*?)^```[ \t]*$", re.M | re.S)
RUNNER = (".venv/bin/python", "-m", "mimirlib.runner")
# The first line of the code cell the handouts add after a chapter's parameters (see runner_steps).
SETTINGS_TITLE = "# Your settings: values written here replace the parameters above"
RUN_ALL = "and run every cell again (Kernel > Restart Kernel and Run All Cells)"
STUDENT_REWRITES = ((re.compile(r"before you open\s+a\s+solution\."), "before you run its cell."),)


def book_values(chapter: str, profile: str, executed_dir: Path) -> dict[str, str]:
    """``name -> text`` of what ``executed_dir/<chapter>.ipynb`` glued, if that run used ``profile``;
    else empty (another profile's numbers would mislead)."""
    import nbformat

    from mimirlib.book.scorecard import glued_values

    path = executed_dir / f"{chapter}.ipynb"
    if not path.is_file():
        return {}
    params = nbformat.read(path, as_version=4).metadata.get("papermill", {}).get("parameters", {}) or {}
    return glued_values(path) if params.get("profile", "lab") == profile else {}


def _formatted(text: str, fmt: str | None) -> str:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text
    if fmt:
        try:
            return format(value, fmt)
        except (TypeError, ValueError):
            pass
    return str(value)


def resolve_glue(markdown: str, values: dict[str, str]) -> str:
    """``markdown`` with each glue role replaced by its value (formatted as the role asks), or by the
    name in code font and "(in the book)" where ``values`` lacks it."""

    def sub(m: re.Match) -> str:
        name = m["name"].split("::")[-1]
        if name in values and not values[name].startswith("figure "):
            return _formatted(values[name], m["fmt"])
        return f"`{name}` (in the book)"

    return GLUE_ROLE.sub(sub, markdown)


def _pyobject(source: str, dotted: str) -> str | None:
    """The source lines of ``dotted`` (``f`` or ``Class.method``) in ``source``, decorators included."""
    nodes, node = ast.parse(source).body, None
    for part in dotted.split("."):
        node = next((n for n in nodes if getattr(n, "name", None) == part), None)
        if node is None:
            return None
        nodes = getattr(node, "body", [])
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    lines = source.splitlines()[first - 1 : node.end_lineno]
    indent = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
    return "\n".join(line[indent:] for line in lines)


def includes(markdown: str, root: Path) -> str:
    """A ``{literalinclude}`` of a project file (``:pyobject:`` or the whole file) as the code itself;
    an ``{include}`` as one line saying where the book shows it."""

    def sub(m: re.Match) -> str:
        rel = m["path"].lstrip("/")
        obj = re.search(r"^:pyobject:\s*(\S+)", m["body"], re.M)
        path = root / rel
        if m["kind"] == "include" or not path.is_file():
            return f"*(`{rel}`: in the book.)*"
        code = path.read_text(encoding="utf-8")
        code = _pyobject(code, obj[1]) if obj else code
        return f"```python\n# {rel}\n{code.rstrip()}\n```" if code else f"*(`{rel}`: in the book.)*"

    return _INCLUDE.sub(sub, markdown)


def figures_and_links(markdown: str) -> str:
    """A glued figure's directive as one italic line with its caption (the notebook glues figures
    without showing them), and cross-reference roles as their text, citations as ``[key]``."""

    def figure(m: re.Match) -> str:
        caption = " ".join(line.strip() for line in m["body"].splitlines() if not _OPTION.match(line.strip()))
        return f"*Figure `{m['name']}` (in the book): {caption.strip()}*"

    text = _FIGURE.sub(figure, markdown)
    text = _CITE.sub(lambda m: "[" + ", ".join(k.strip() for k in m["keys"].split(",")) + "]", text)
    return _XREF.sub(lambda m: m["text"] or m["target"] or "", text)


def fold_directives(markdown: str) -> str:
    """``{dropdown}``/``{solution}`` blocks as ``<details>`` (summary: the dropdown's title, or
    "Solution"), ``{exercise}`` blocks as a bold title; the blocks' option lines dropped."""
    lines = markdown.split("\n")
    out: list[str] = []
    closers: list[tuple[re.Pattern, str]] = []
    for line in lines:
        if closers and closers[-1][0].match(line):
            out.append(closers.pop()[1])
            continue
        m = _OPEN.match(line)
        if not m:
            if not (_OPTION.match(line) and out and out[-1].endswith("\x00")):
                out.append(line)
            continue
        close = re.compile(rf"^\s*:{{{len(m['fence'])},}}\s*$")
        if m["name"] == "exercise":
            out.append(f"**Exercise: {m['arg']}**\x00")
            closers.append((close, ""))
        else:
            summary = m["arg"] if m["name"] == "dropdown" else "Solution"
            out.append(f"<details><summary>{summary}</summary>\n\x00")
            closers.append((close, "\n</details>"))
    return "\n".join(line.replace("\x00", "") for line in out)


def _step(words: list[str], chapter: str) -> str | None:
    """What one runner command of ``chapter`` asks, as a step in its notebook; None for anything else
    (another command, or a ``--profile`` whose own settings for the chapter one cell could not give)."""
    from mimirlib.profiles import load_profile
    from mimirlib.runner.base import ParameterError
    from mimirlib.runner.resolve import parse_overrides

    if tuple(words[:3]) != RUNNER or words[3:4] != [chapter]:
        return None
    rest = words[4:]
    if rest == ["--list-params"]:
        return "Every parameter, with its help, is in the parameters cell at the top."
    pairs = list(zip(rest[::2], rest[1::2]))
    if not rest or len(rest) % 2 or any(flag not in ("-p", "--profile") for flag, _ in pairs):
        return None
    try:
        values = parse_overrides([kv for flag, kv in pairs if flag == "-p"])  # as the runner reads them
        for profile in (v for flag, v in pairs if flag == "--profile"):
            if (load_profile(profile).get("notebooks") or {}).get(chapter):
                return None
            values = {"profile": profile, **values}
    except (ParameterError, ValueError):  # a bad value, an unknown profile
        return None
    code = "\n".join(f"{name} = {value!r}" for name, value in values.items())
    return f"**In this notebook:** write in the cell *Your settings* near the top\n```python\n{code}\n```\n{RUN_ALL}."


def runner_steps(markdown: str, chapter: str) -> str:
    """``bash`` blocks made only of ``chapter``'s runner commands (``-p`` values, ``--list-params``),
    each as the step to take in the notebook itself; any other block is left as it is."""

    def sub(m: re.Match) -> str:
        steps = []
        for line in m["body"].replace("\\\n", " ").splitlines():
            try:
                words = shlex.split(line, comments=True)
            except ValueError:
                return m[0]
            if words and (step := _step(words, chapter)) is None:
                return m[0]
            steps += [step] if words else []
        return "\n" + "\n\n".join(steps) + "\n" if steps else m[0]  # paragraphs of their own

    return _BASH.sub(sub, markdown)


def for_jupyter(
    markdown: str, values: dict[str, str], *, student: bool, root: Path | None = None, chapter: str | None = None
) -> str:
    """One markdown cell of a handout (``student``) or key, as Jupyter should show it; ``root`` is the
    project folder the book's ``{literalinclude}`` paths start from; ``chapter``: the notebook's name,
    whose runner commands become steps in the notebook (:func:`runner_steps`)."""
    text = fold_directives(figures_and_links(resolve_glue(markdown, values)))
    text = includes(text, root) if root is not None else text
    text = runner_steps(text, chapter) if chapter else text
    text = re.sub(r"\n{3,}", "\n\n", text)
    if student:
        for pattern, repl in STUDENT_REWRITES:
            text = pattern.sub(repl, text)
    return text
