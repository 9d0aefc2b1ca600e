"""What a run changed, and where it goes: variants, the reproduce command, and the executed notebook's finish."""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Mapping
from typing import Any

import yaml

from mimirlib.profiles import load_yaml
from mimirlib.runner.base import ParameterError

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


def reproduce_command(
    stem: str, profile: str, changed: Mapping[str, Any], variant=None, publish=False, draw: int | None = None
) -> str:
    """The command line that re-runs exactly this run (every changed parameter as ``-p``; a lab draw as ``--draw``)."""
    args = ["python", "-m", "mimirlib.runner", stem, "--profile", profile]
    if draw is not None:
        args += ["--draw", str(draw)]
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


# A markdown link to another page of the book by a relative path: [text](ramia.ipynb), (scorecard.md#x).
_PAGE_LINK = re.compile(r"(\]\()(?![a-zA-Z][\w+.-]*:|/|#)([^()\s]+?\.(?:ipynb|md)(?:#[^()\s]*)?\))")


def relink(nb, chapters: str) -> None:
    """Point the notebook's relative links to other pages (``[RaMIA](ramia.ipynb)``) at the
    published chapters' folder, ``chapters`` relative to the variant's own folder (``../executed``):
    written for ``book/executed``, they would name missing pages from ``book/variants``, a failed
    strict build."""
    prefix = chapters.rstrip("/") + "/"
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = _PAGE_LINK.sub(lambda m: m[1] + prefix + m[2], cell.source)


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
    nb,
    *,
    profile: str,
    changed,
    defaults,
    command: str,
    variant: str | None = None,
    publish: bool = False,
    chapters: str | None = None,
):
    """Make an executed notebook read science first, and say how it was run.

    papermill's injected-parameters cell is collapsed (``hide-input``: one click shows it, so
    nothing is removed); a run with other parameters than its profile's (or any variant) gets a
    visible banner right after the title listing them and the command that reproduces it; a
    variant's labels are suffixed so it can sit beside its chapter in one book, and its links to
    other pages point at the published chapters (``chapters``: that folder relative to the
    variant's). The run is recorded in ``metadata.mimir``.
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
        if chapters:
            relink(nb, chapters)
    nb.metadata["mimir"] = {
        "profile": profile,
        "variant": variant,
        "published": variant is None,
        "parameters": {n: _plain(v) for n, v in changed.items()},
        "command": command,
    }
    return nb
