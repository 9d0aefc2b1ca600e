"""Rendering the book and checking what a reader would see.

The HTML is built from already-executed notebooks (``execute_notebooks: 'off'``), then
checked offline. The claims scorecard page is generated first, from the verdicts the executed
chapters published. The Sphinx build is strict (warnings are errors); then every ``_toc.yml``
entry produced a page, no page shows a traceback or an unrendered ``{glue`` role, and every
local link resolves. A failed check fails the build.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import yaml

from . import scorecard

EXECUTED = "book/executed"  # where the runner writes executed chapters (and the scorecard page)


def toc_files(root: Path) -> list[str]:
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files = [toc["root"]]

    def walk(entries):
        for e in entries or []:
            if "file" in e:
                files.append(e["file"])
            walk(e.get("sections"))
            walk(e.get("chapters"))

    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    return files


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
    return problems


def build(root: Path = Path(".")) -> Path:
    root = root.resolve()
    chapters = [
        Path(f).name for f in toc_files(root) if f.startswith(f"{EXECUTED}/") and Path(f).name != scorecard.PAGE
    ]
    scorecard.write_page(root / EXECUTED, chapters)
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
    subprocess.run(cmd, check=True)
    html = root / "_build" / "html"
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
