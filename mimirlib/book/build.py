"""Rendering the book and checking what a reader would see.

The HTML is built from already-executed notebooks (``execute_notebooks: 'off'``), then
checked offline. The claims scorecard page is generated first, from the verdicts the executed
chapters published. The Sphinx build is strict (warnings are errors); then every ``_toc.yml``
entry produced a page, no page shows a traceback or an unrendered ``{glue`` role, and every
local link resolves. A failed check fails the build.

Math is typeset by MathJax served from the build itself, never from a CDN: ``_config.yml`` points
Sphinx's ``mathjax_path`` at ``_static/mathjax/`` and the build copies npm's ``mathjax`` package
(version :data:`MATHJAX_VERSION`, unpacked by ``make`` into the virtual environment, or wherever
``MIMIR_MATHJAX`` says) there, so a page with math reads the same offline.

A build killed mid-way is safe to re-run: the next build re-writes every page (``BUILDING``).

Variants (a chapter re-run with other parameters, ``book/variants/<chapter>--<name>.ipynb``,
written by ``mimirlib.runner``) are listed under their chapter in the table of contents the
build reads (``_toc.yml`` plus them, generated into ``_build/``), so they sit side by side. Lab draws
(``make draws``: the chapters on labs drawn with other seeds, ``book/draws/draw-N``) are read together on a page
beside the scorecard while two or more are there (:func:`mimirlib.book.draws.write_page`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from mimirlib.book import draws, fidelity, scorecard
from mimirlib.runner import DRAWS_DIR as DRAWS  # the chapters of other lab draws: draw-N/<chapter>.ipynb
from mimirlib.runner import EXECUTED_DIR as EXECUTED  # the runner's published chapters (and the scorecard page)
from mimirlib.runner import VARIANT_SEP

VARIANTS = "book/variants"  # where it writes runs with other parameters: <chapter>--<name>.ipynb
VARIANTS_TOC = "_build/_toc.variants.yml"  # _toc.yml plus the variants present (what the build reads then)
BUILDING = "_build/.mimir-building"  # present while Sphinx runs: a build killed mid-way left it behind
MATHJAX_VERSION = "3.2.2"  # npm's `mathjax` package, pinned (the Makefile unpacks the same version)
MATHJAX_ENV = "MIMIR_MATHJAX"  # an unpacked copy of that package elsewhere (its folder holding package.json)
MATHJAX_STATIC = "mathjax"  # where the build puts its es5 bundles, under _build/html/_static
MATHJAX_ENTRY = "tex-mml-chtml.js"  # the bundle Sphinx loads by default from a CDN, here from _static


def _entries(toc_: dict):
    """Every entry (a dict) of a table of contents, in reading order."""

    def walk(entries):
        for e in entries or []:
            yield e
            yield from walk(e.get("sections"))
            yield from walk(e.get("chapters"))

    for part in toc_.get("parts", []):
        yield from walk(part.get("chapters"))
    yield from walk(toc_.get("chapters"))


def variant_title(nb_path: Path) -> str:
    """A variant's title in the table of contents: the parameters it changed (from the runner's
    ``metadata.mimir``), else its name."""
    import nbformat

    name = nb_path.stem.split(VARIANT_SEP, 1)[-1]
    try:
        changed = nbformat.read(nb_path, as_version=4).metadata.get("mimir", {}).get("parameters") or {}
    except (OSError, ValueError):  # unreadable: the build itself reports it; the entry keeps a title
        changed = {}
    if not changed:
        return f"Variant {name}"
    return "Variant: " + ", ".join(f"{k} = {v}" for k, v in changed.items())


def toc(root: Path) -> dict:
    """``_toc.yml`` with every variant present in ``book/variants`` listed under its chapter, so
    the book shows a re-run with other parameters beside the published one; and the page of the lab
    draws' reading, when written, under the scorecard (else first among the chapters)."""
    data = yaml.safe_load((root / "_toc.yml").read_text())
    if (root / EXECUTED / f"{draws.PAGE}.md").exists():
        page = {"file": f"{EXECUTED}/{draws.PAGE}", "title": "Over several lab draws"}
        card = next((e for e in _entries(data) if e.get("file") == f"{EXECUTED}/{scorecard.PAGE}"), None)
        if card is not None:
            card.setdefault("sections", []).append(page)
        else:
            (data["parts"][0]["chapters"] if data.get("parts") else data.setdefault("chapters", [])).insert(0, page)
    for e in list(_entries(data)):
        f = e.get("file", "")
        if f.startswith(f"{EXECUTED}/"):
            found = sorted((root / VARIANTS).glob(f"{Path(f).name}{VARIANT_SEP}*.ipynb"))
            if found:
                e.setdefault("sections", []).extend(
                    {"file": f"{VARIANTS}/{nb.stem}", "title": variant_title(nb)} for nb in found
                )
    return data


def toc_files(root: Path) -> list[str]:
    """Every page of the book, variants included, in table-of-contents order."""
    toc_ = toc(root)
    return [toc_["root"]] + [e["file"] for e in _entries(toc_) if "file" in e]


def mathjax_package() -> Path:
    """The unpacked npm ``mathjax`` package the build copies from: ``$MIMIR_MATHJAX``, else
    ``<virtual environment>/share/mathjax`` (where ``make`` puts it)."""
    return Path(os.environ.get(MATHJAX_ENV) or Path(sys.prefix) / "share" / "mathjax")


def mathjax_problem(package: Path) -> str | None:
    """Why ``package`` cannot serve the book's math (None: it can): one line naming the folder."""
    try:
        version = json.loads((package / "package.json").read_text()).get("version")
    except (OSError, ValueError):
        return (
            f"no MathJax at {package} (no readable package.json): `make venv` unpacks npm's mathjax@{MATHJAX_VERSION}"
            f" there, or set {MATHJAX_ENV} to an unpacked copy"
        )
    if version != MATHJAX_VERSION:
        return f"MathJax at {package} is version {version}, the book pins {MATHJAX_VERSION} (`make venv` installs it)"
    if not (package / "es5" / MATHJAX_ENTRY).is_file():
        return f"MathJax at {package} has no es5/{MATHJAX_ENTRY}"
    return None


def install_mathjax(package: Path, html: Path) -> Path:
    """Copy MathJax's entry bundle and the components it loads on demand (fonts, TeX extensions,
    menu, accessibility) into ``html/_static/mathjax``; the other all-in-one bundles are left out."""
    es5, dest = package / "es5", html / "_static" / MATHJAX_STATIC
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    shutil.copy2(es5 / MATHJAX_ENTRY, dest / MATHJAX_ENTRY)
    for sub in sorted(p for p in es5.iterdir() if p.is_dir()):
        shutil.copytree(sub, dest / sub.name)
    return dest / MATHJAX_ENTRY


def prune_stale_variants(root: Path, html: Path) -> list[Path]:
    """Remove the built pages of variants whose notebook is gone from ``book/variants`` (deleted by hand):
    Sphinx never removes a page, so the old one stayed in ``_build/html``, linking to pages that moved on
    and failing the link check. Returns the pages removed (their ``_sources`` copies go too)."""
    built = html / VARIANTS
    gone = [p for p in sorted(built.glob("*.html")) if not (root / VARIANTS / f"{p.stem}.ipynb").exists()]
    for page in gone:
        _unbuild(html, VARIANTS, page.stem)
    return gone


def prune_stale_draws_page(root: Path, html: Path) -> list[Path]:
    """Remove the built page of the draws' reading (and its ``_sources`` copy) once its page is no longer written
    (fewer than two draws left): Sphinx never removes a page, so the old reading would stay reachable."""
    page = html / EXECUTED / f"{draws.PAGE}.html"
    if (root / EXECUTED / f"{draws.PAGE}.md").exists() or not page.exists():
        return []
    _unbuild(html, EXECUTED, draws.PAGE)
    return [page]


def _unbuild(html: Path, folder: str, stem: str) -> None:
    """Remove the built page ``<folder>/<stem>.html`` and its ``_sources`` copies."""
    (html / folder / f"{stem}.html").unlink()
    for src in (html / "_sources" / folder).glob(f"{stem}.*"):
        src.unlink()


def check_html(root: Path, html: Path) -> list[str]:
    """Problems a reader would see in the built HTML (empty list = clean)."""
    problems = []
    for f in toc_files(root):
        page = html / f"{f}.html"
        if not page.exists():
            problems.append(f"{f}: listed in _toc.yml but no page {page} was built")
    for page in sorted(html.rglob("*.html")):
        if "_static" in page.parts or "_sources" in page.parts:
            continue
        text = page.read_text(encoding="utf-8", errors="replace")
        rel = page.relative_to(html)
        if "output traceback" in text or "Traceback (most recent call last)" in text:
            problems.append(f"{rel}: shows a traceback")
        if "{glue" in text:
            problems.append(f"{rel}: has an unrendered glue role")
        if "&lt;Figure size" in text:
            problems.append(f"{rel}: a figure rendered as text instead of an image")
        if 'class="output stderr"' in text:
            problems.append(f"{rel}: shows stderr output")
        for href in re.findall(r'href="([^"#?]+)(?:[#?][^"]*)?"', text):
            if re.match(r"^[a-z]+:", href) or href.startswith("//"):
                continue
            if not (page.parent / href).resolve().exists():
                problems.append(f"{rel}: broken local link {href}")
        for src in re.findall(r'<script[^>]*\ssrc="([^"#?]+)(?:[#?][^"]*)?"', text):
            if re.match(r"^[a-z]+:", src) or src.startswith("//"):
                problems.append(f"{rel}: loads a script from the network ({src})")
            elif not (page.parent / src).resolve().exists():
                problems.append(f"{rel}: missing script {src}")
    return problems


def build(root: Path = Path(".")) -> Path:
    root = root.resolve()
    mathjax = mathjax_package()
    problem = mathjax_problem(mathjax)
    if problem:
        raise SystemExit(f"cannot build the book: {problem}")
    draws.write_page(root / DRAWS, root / EXECUTED)  # first: the table of contents lists it while it exists
    pages = (scorecard.PAGE, draws.PAGE)
    chapters = [Path(f).name for f in toc_files(root) if f.startswith(f"{EXECUTED}/") and Path(f).name not in pages]
    scorecard.write_page(root / EXECUTED, chapters)
    fidelity.write_table(root / EXECUTED, chapters)
    missing = [f for f in toc_files(root) if not any((root / f"{f}{ext}").exists() for ext in (".md", ".ipynb"))]
    if missing:
        raise SystemExit(f"cannot build the book: {missing} not found (run `python -m mimirlib.runner --all` first)")
    # Strict: any Sphinx warning (a broken cross-reference, a missing figure, an unknown role) fails
    # the build, after reporting all of them (--keep-going).
    strict = ["--builder", "html", "--warningiserror", "--nitpick", "--keep-going"]
    cmd = [sys.executable, "-m", "jupyter_book", "build", str(root), *strict]
    jb = Path(sys.executable).with_name("jupyter-book")
    if jb.exists():
        cmd = [str(jb), "build", str(root), *strict]
    toc_ = toc(root)
    if toc_ != yaml.safe_load((root / "_toc.yml").read_text()):  # variants or the draws' page present
        generated = root / VARIANTS_TOC
        generated.parent.mkdir(parents=True, exist_ok=True)
        generated.write_text(
            "# generated by mimirlib.book.build: _toc.yml plus book/variants and the draws page\n"
            + yaml.safe_dump(toc_, sort_keys=False)
        )
        cmd += ["--toc", str(generated)]
    # A killed build can leave half-written pages newer than their sources, which Sphinx would keep:
    # its marker makes the next build re-write every page (--all); a clean build removes it.
    marker = root / BUILDING
    if marker.exists():
        cmd.append("--all")
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text("a mimirlib.book build is running or was killed; the next one re-writes every page\n")
    subprocess.run(cmd, check=True)
    marker.unlink()
    html = root / "_build" / "html"
    prune_stale_variants(root, html)
    prune_stale_draws_page(root, html)
    install_mathjax(mathjax, html)
    problems = check_html(root, html)
    if problems:
        raise SystemExit("the built book has problems:\n  " + "\n  ".join(problems))
    index = html / "index.html"
    return index


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Render the executed notebooks into _build/html and check it.")
    ap.add_argument("command", choices=["build", "check"])
    args = ap.parse_args(argv)
    root = Path(".").resolve()
    if args.command == "check":
        problems = check_html(root, root / "_build" / "html")
        print("\n".join(problems) or "book OK")
        return 1 if problems else 0
    index = build(root)
    print(f"book built: {index}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
