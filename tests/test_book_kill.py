"""kill -9 during the HTML build (issue 16 item 9): ``python -m mimirlib.book build`` killed while
Sphinx writes the pages, then run again, renders the same pages, glued numbers included, as an
uninterrupted build; a page the kill cut in half is re-written, not kept because it is newer than
its source. ~40 s (three builds of a one-chapter book).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mimirlib.book.build import BUILDING, toc_files
from mimirlib.runner import run_notebook

from .test_book import tiny_book

pytestmark = pytest.mark.slow


def build_cmd(root: Path) -> subprocess.Popen:
    # its own session: the kill takes jupyter-book's process with it, as a kill of `make book`'s group would
    return subprocess.Popen(
        [sys.executable, "-m", "mimirlib.book.build", "build"],
        cwd=root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def page_texts(root: Path) -> dict[str, str]:
    """What a reader reads on each page: the text of its article (the glued values sit in spans)."""
    out = {}
    for f in toc_files(root):
        html = (root / "_build" / "html" / f"{f}.html").read_text(encoding="utf-8")
        article = re.search(r"<article.*?</article>", html, flags=re.S)
        out[f] = " ".join(re.sub(r"<[^>]+>", " ", article.group(0) if article else "").split())
    return out


def test_kill_9_during_the_html_build_then_a_rerun_renders_the_same_pages(tmp_path):
    root, nbs = tiny_book(tmp_path / "a")
    run_notebook("demo", profile="smoke", notebooks_dir=nbs, out_dir=root / "book" / "executed")
    other = tmp_path / "b"
    shutil.copytree(root, other)

    whole = build_cmd(root)
    assert whole.wait(timeout=300) == 0, whole.stderr.read().decode()[-2000:]
    reference = page_texts(root)
    assert "used k = 0.2" in reference["book/executed/demo"]  # the glued number is on the page
    assert not (root / BUILDING).exists()

    killed = build_cmd(other)
    pages = other / "_build" / "html" / "book"
    t0 = time.monotonic()
    while not (pages.is_dir() and any(pages.rglob("*.html"))):  # Sphinx is writing the pages
        assert killed.poll() is None, "the build ended before it could be killed"
        assert time.monotonic() - t0 < 240
        time.sleep(0.02)
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait()
    assert (other / BUILDING).exists()  # the killed build left its marker
    # A page cut mid-write is newer than its source: without the marker, Sphinx would keep it as is.
    written = sorted(pages.rglob("*.html"))
    for page in written:
        page.write_text(page.read_text(encoding="utf-8")[:200], encoding="utf-8")

    rerun = build_cmd(other)
    assert rerun.wait(timeout=300) == 0, rerun.stderr.read().decode()[-2000:]
    assert not (other / BUILDING).exists()
    assert page_texts(other) == reference
