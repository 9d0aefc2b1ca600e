"""The smoke book as a reader meets it: every page of the table of contents opened in headless
Chromium (Debian's ``chromium`` driven through its ``chromedriver`` by Selenium; nothing is
downloaded), served over HTTP as a reader's browser would get it.

Each page is visited once (the ``visits`` fixture); each test then checks one thing on every page:
no console error, every image loaded, every internal link and anchor resolves, math typeset (by the
MathJax the build serves itself; tests/test_book_mathjax.py checks it with the network cut off), the
title before the first code cell; and the search page finds a chapter. Tables are checked in the
HTML itself: none has cells or columns that pandas elided with "...".

The smoke book is the one tests/test_book.py builds: reused when that module ran earlier in this
session, built by the same fixture otherwise. Without chromium, chromedriver or selenium (``make
test`` installs them where it can) the browser tests are skipped, with the reason.
"""

from __future__ import annotations

import functools
import html as htmllib
import http.server
import re
import shutil
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pytest

from mimirlib.display import plots, report
from mimirlib.book.build import EXECUTED, MATHJAX_ENTRY, MATHJAX_STATIC, toc_files
from mimirlib.display.paper_tables import paper_table

from .test_book import smoke_book  # noqa: F401  (the fixture, when no smoke book was built earlier)

# Chromium asks for /favicon.ico by itself when a page declares no icon; a reader sees nothing of it.
BROWSER_OWN = re.compile(r"^\S+/favicon\.ico - Failed to load resource")
ROOT = Path(__file__).resolve().parents[1]
SEARCH_QUERY = "membership"  # a word every chapter uses
WAIT_S = 20  # for images, MathJax and search results to arrive

# What pandas leaves where it elided data: a whole "..." cell or column header (rows or columns
# past the display limits), the "N rows x M columns" note it adds then, and a cell cut at
# display.max_colwidth (at the default 50: 46 characters then "...", 49 in all; an excerpt a
# chapter writes itself, such as "the beginning of a text ...", is not pandas' doing).
ELIDED = {
    "a '...' cell or header": re.compile(r"<t[hd][^>]*>\s*(?:\.\.\.|…)\s*</t[hd]>"),
    "a 'rows x columns' truncation note": re.compile(r"\d+ rows (?:×|x) \d+ columns"),
}
CUT_CELL = re.compile(r"<td[^>]*>([^<]*)</td>")


# --- the book, served ----------------------------------------------------------------------------


@dataclass
class Site:
    html: Path  # the built _build/html
    work: Path  # the book's root (its _toc.yml)
    url: str  # where it is served, ending in "/"

    def pages(self) -> list[str]:
        return [f"{f}.html" for f in toc_files(self.work)]


def built_earlier(base: Path) -> Path | None:
    """The HTML of a smoke book tests/test_book.py built earlier in this session (its folders stay
    under the session's base temp): the book's own table of contents, every page of it built."""
    toc = (ROOT / "_toc.yml").read_text()
    for html in sorted(base.glob("book*/_build/html")):
        work = html.parent.parent
        if (work / "_toc.yml").is_file() and (work / "_toc.yml").read_text() == toc:
            if all((html / f"{f}.html").exists() for f in toc_files(work)):
                return html
    return None


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def site(request, tmp_path_factory):
    html = built_earlier(tmp_path_factory.getbasetemp())
    if html is None:
        work, _, _ = request.getfixturevalue("smoke_book")
        html = work / "_build" / "html"
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(html)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Site(html, html.parent.parent, f"http://127.0.0.1:{server.server_address[1]}/")
    finally:
        server.shutdown()
        server.server_close()


# --- the browser ---------------------------------------------------------------------------------


def chromium_paths() -> tuple[str, str]:
    """Debian's chromium and its chromedriver, or a skip naming what is missing."""
    found = {name: shutil.which(name) for name in ("chromium", "chromedriver")}
    missing = [name for name, path in found.items() if not path]
    if missing:
        pytest.skip(
            f"no {' or '.join(missing)} on PATH: install Debian's chromium and chromium-driver "
            "(`make test` does it with apt where it can)"
        )
    return found["chromium"], found["chromedriver"]


@pytest.fixture(scope="module")
def browser():
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (the test extra)")
    chromium, driver = chromium_paths()
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--window-size=1280,1024",
    ):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # An explicit driver and browser: Selenium Manager (which downloads) is never asked.
    drv = webdriver.Chrome(options=opts, service=webdriver.ChromeService(executable_path=driver))
    drv.set_page_load_timeout(60)
    try:
        yield drv
    finally:
        drv.quit()


def wait_for(drv, script: str, timeout: float = WAIT_S):
    """Poll a JavaScript expression until it is truthy; its last value either way."""
    end = time.monotonic() + timeout
    while True:
        value = drv.execute_script(f"return ({script});")
        if value or time.monotonic() > end:
            return value
        time.sleep(0.1)


EAGER_JS = "document.querySelectorAll('img[loading=lazy]').forEach(i => { i.loading = 'eager'; });"
IMAGES_JS = """
return Array.from(document.images).map(i => [i.getAttribute('src'), i.complete, i.naturalWidth, i.naturalHeight]);
"""

MATH_JS = """
const n = document.querySelectorAll('.math').length;
const s = document.querySelector('script[src*="mathjax" i]');
return [n, document.querySelectorAll('mjx-container').length, s ? s.src : null, typeof window.MathJax,
        document.querySelectorAll('mjx-merror').length];
"""

ORDER_JS = """
const main = document.querySelector('article.bd-article') || document.querySelector('main') || document.body;
const h = main.querySelector('h1'), c = main.querySelector('div.cell');
return [h ? h.textContent.trim() : null,
        c ? c.textContent.trim().slice(0, 60) : null,
        !!(h && c && (h.compareDocumentPosition(c) & Node.DOCUMENT_POSITION_FOLLOWING))];
"""


@dataclass
class Visit:
    page: str
    console: list[str] = field(default_factory=list)
    images: list[list] = field(default_factory=list)  # [src, complete, naturalWidth, naturalHeight]
    links: list[str] = field(default_factory=list)  # absolute hrefs as the browser resolved them
    math: list = field(default_factory=list)  # [formulas, typeset, MathJax script src, typeof MathJax, errors]
    order: list = field(default_factory=list)  # [first h1, first code cell, h1 precedes it]


@pytest.fixture(scope="module")
def visits(site, browser) -> dict[str, Visit]:
    """Every page of the table of contents, opened once, with what the checks need."""
    out = {}
    browser.get_log("browser")  # drop anything logged before the first page
    for page in site.pages():
        v = Visit(page)
        browser.get(site.url + page)
        wait_for(browser, "document.readyState === 'complete'")
        browser.execute_script(EAGER_JS)  # a lazy image off screen would never load
        wait_for(browser, "Array.from(document.images).every(i => i.complete)")
        v.images = browser.execute_script(IMAGES_JS)
        wait_for(
            browser, "document.querySelectorAll('.math').length <= document.querySelectorAll('mjx-container').length"
        )
        v.math = browser.execute_script(MATH_JS)
        v.links = browser.execute_script("return Array.from(document.querySelectorAll('a[href]')).map(a => a.href);")
        v.order = browser.execute_script(ORDER_JS)
        v.console = [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]
        v.console = [m for m in v.console if not BROWSER_OWN.search(m)]
        out[page] = v
    return out


# --- what a reader would meet ---------------------------------------------------------------------


@pytest.mark.slow
def test_no_page_logs_a_console_error(visits):
    errors = {p: v.console for p, v in visits.items() if v.console}
    assert errors == {}, errors


@pytest.mark.slow
def test_every_image_loads(visits):
    assert sum(len(v.images) for v in visits.values()) > 0  # the chapters have figures
    broken = {p: [i[0] for i in v.images if not (i[1] and i[2] > 0 and i[3] > 0)] for p, v in visits.items()}
    assert {p: b for p, b in broken.items() if b} == {}


@functools.lru_cache(maxsize=None)
def ids_in(path: Path) -> frozenset[str]:
    text = path.read_text(encoding="utf-8", errors="replace")
    return frozenset(htmllib.unescape(m) for m in re.findall(r'\b(?:id|name)="([^"]+)"', text))


def broken_links(site: Site, hrefs: list[str]) -> list[str]:
    """Links into the book whose file or anchor does not exist (links elsewhere are not followed)."""
    base = urllib.parse.urlsplit(site.url)
    bad = []
    for href in hrefs:
        u = urllib.parse.urlsplit(href)
        if u.scheme not in ("http", "https") or u.netloc != base.netloc:
            continue
        rel = urllib.parse.unquote(u.path).lstrip("/")
        target = site.html / rel
        if not rel or rel.endswith("/"):
            target = target / "index.html"
        if not target.is_file():
            bad.append(f"{href}: no file {rel or 'index.html'}")
        elif u.fragment and target.suffix == ".html" and urllib.parse.unquote(u.fragment) not in ids_in(target):
            bad.append(f"{href}: no anchor #{u.fragment} in {rel}")
    return sorted(set(bad))


@pytest.mark.slow
def test_every_internal_link_resolves(site, visits):
    assert sum(len(v.links) for v in visits.values()) > len(visits)  # pages link to each other
    bad = {p: broken_links(site, v.links) for p, v in visits.items()}
    assert {p: b for p, b in bad.items() if b} == {}


def test_the_link_checker_sees_missing_files_and_anchors(tmp_path):
    (tmp_path / "a.html").write_text('<h1 id="top">A</h1><a name="old">x</a>')
    site = Site(tmp_path, tmp_path, "http://127.0.0.1:9/")
    hrefs = [
        "http://127.0.0.1:9/a.html#top",
        "http://127.0.0.1:9/a.html#old",
        "http://127.0.0.1:9/a.html#nowhere",
        "http://127.0.0.1:9/b.html",
        "https://example.org/c.html",
    ]
    assert broken_links(site, hrefs) == [
        "http://127.0.0.1:9/a.html#nowhere: no anchor #nowhere in a.html",
        "http://127.0.0.1:9/b.html: no file b.html",
    ]


@pytest.mark.slow
def test_math_is_typeset(site, visits):
    """Every formula on every page is rendered by MathJax (an ``mjx-container`` each, none an error
    box), loaded from the book's own ``_static`` (mimirlib.book.build copies it there), never a CDN."""
    with_math = {p: v.math for p, v in visits.items() if v.math[0]}
    assert "book/glossary.html" in with_math  # the glossary's formulas are math, so this test cannot pass empty
    untypeset = {p: m for p, m in with_math.items() if m[1] < m[0] or m[4]}
    assert untypeset == {}, "[formulas, typeset, MathJax script, typeof MathJax, errors] per page: " + repr(untypeset)
    local = f"{site.url}_static/{MATHJAX_STATIC}/{MATHJAX_ENTRY}"
    assert {p: m[2] for p, m in with_math.items() if m[2] != local} == {}


@pytest.mark.slow
def test_each_chapter_shows_its_title_before_any_code_cell(site, visits):
    chapters = [f"{f}.html" for f in toc_files(site.work) if f.startswith(f"{EXECUTED}/")]
    with_cells = {p: visits[p].order for p in chapters if visits[p].order[1] is not None}
    assert with_cells  # the chapters have code cells
    late = {p: f"first code cell {o[1]!r} before the title {o[0]!r}" for p, o in with_cells.items() if not o[2]}
    assert late == {}


@pytest.mark.slow
def test_search_finds_a_chapter(site, browser):
    browser.get(f"{site.url}search.html?q={SEARCH_QUERY}")
    # Results are listed one by one; the summary line is written when the search has finished.
    status = wait_for(browser, "(document.querySelector('#search-results p.search-summary') || {}).innerText")
    hrefs = browser.execute_script(
        "return Array.from(document.querySelectorAll('#search-results ul.search li a')).map(a => a.href);"
    )
    pages = sorted({urllib.parse.urlsplit(h).path for h in hrefs})
    assert any(f"/{EXECUTED}/" in p for p in pages), f"search for {SEARCH_QUERY!r}: {status!r} {pages}"


# --- tables shown whole ---------------------------------------------------------------------------


def elisions(text: str) -> list[str]:
    found = [f"{what} ({len(rx.findall(text))}x)" for what, rx in ELIDED.items() if rx.search(text)]
    cut = [c for c in map(htmllib.unescape, CUT_CELL.findall(text)) if len(c) == 49 and c.endswith("...")]
    return found + ([f"a cell cut at max_colwidth ({len(cut)}x)"] if cut else [])


@pytest.mark.slow
def test_no_table_in_the_book_is_elided(site):
    found = {p: elisions((site.html / p).read_text(encoding="utf-8")) for p in site.pages()}
    assert {p: e for p, e in found.items() if e} == {}


def test_the_elision_check_sees_what_pandas_leaves():
    wide = pd.DataFrame([[1] * 30, [2] * 30])
    long = pd.DataFrame({"x": range(100)})
    text = pd.DataFrame({"claim": ["x & y " * 20]})
    excerpt = pd.DataFrame({"beginning of the text": [" ".join(["word"] * 20) + " ..."]})  # a chapter's own
    defaults = ("display.max_columns", 20, "display.max_rows", 60, "display.max_colwidth", 50)
    with pd.option_context(*defaults):
        assert len(elisions(wide._repr_html_())) == 2  # a '...' column and the size note
        assert len(elisions(long._repr_html_())) == 2  # a '...' row and the size note
        assert elisions(text._repr_html_()) == ["a cell cut at max_colwidth (1x)"]
        report.show_full_tables()
        assert [elisions(df._repr_html_()) for df in (wide, long, text, excerpt)] == [[], [], [], []]


def test_the_papers_table_1_shows_every_column():
    table = paper_table("mimir", 1)
    labels = {str(x) for col in table.columns for x in (col if isinstance(col, tuple) else (col,))}
    with pd.option_context(*[x for kv in report.FULL_TABLES.items() for x in kv]):
        pd.set_option("display.max_columns", 20)  # pandas' default in a notebook: Table 1 is elided
        assert elisions(table._repr_html_())
        plots.set_style()  # every chapter calls it first
        assert all(pd.get_option(k) is None for k in report.FULL_TABLES)
        shown = table._repr_html_()
    assert elisions(shown) == []
    assert all(f">{htmllib.escape(label)}<" in shown for label in labels)
    assert shown.count("<th") >= table.shape[1] + table.shape[0]
