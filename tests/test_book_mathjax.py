"""Math typeset offline: a one-page book with inline and display math, built by ``mimirlib.book.build``,
carries MathJax in its own ``_static`` and Chromium typesets every formula with the network cut off
(every host but the local server resolves to nothing). Without MathJax the build stops, before
Sphinx starts, with one line naming the folder.
"""

from __future__ import annotations

import functools
import http.server
import re
import shutil
import threading
import time
from pathlib import Path

import pytest

from mimirlib.book import build as book
from mimirlib.book.build import MATHJAX_ENTRY, MATHJAX_ENV, MATHJAX_STATIC, build, check_html, mathjax_problem

ROOT = Path(__file__).resolve().parents[1]
PAGE = r"""# Math

The mean token loss is $L(x) = -\frac{1}{T}\sum_{t=1}^{T} \log p(x_t \mid x_{<t})$, and

$$
\mathrm{MinK\%}(x) = \frac{1}{|K|} \sum_{t \in K} \log p(x_t \mid x_{<t}).
$$
"""


def math_book(tmp_path: Path) -> Path:
    root = tmp_path / "math-book"
    (root / "book").mkdir(parents=True)
    shutil.copy(ROOT / "_config.yml", root / "_config.yml")
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/index\n")
    (root / "book" / "index.md").write_text(PAGE)
    return root


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    problem = mathjax_problem(book.mathjax_package())
    if problem:
        pytest.fail(problem)  # `make test` installs it: a missing MathJax is a broken install, not a skip
    root = math_book(tmp_path_factory.mktemp("mathjax"))
    build(root)
    return root


def test_missing_mathjax_stops_the_build_with_one_line_before_sphinx(tmp_path, monkeypatch):
    root = math_book(tmp_path)
    monkeypatch.setenv(MATHJAX_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(SystemExit) as e:
        build(root)
    msg = str(e.value)
    assert "\n" not in msg and "nowhere" in msg and "make venv" in msg
    assert not (root / "_build").exists()  # stopped before Sphinx


def test_wrong_mathjax_version_is_named(tmp_path):
    (tmp_path / "package.json").write_text('{"name": "mathjax", "version": "2.7.9"}')
    assert "version 2.7.9" in mathjax_problem(tmp_path)


def test_check_html_flags_network_and_missing_scripts(tmp_path):
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: index\n")
    html = tmp_path / "_build" / "html"
    html.mkdir(parents=True)
    (html / "index.html").write_text(
        '<script defer="defer" src="https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js"></script>'
        '<script src="_static/here.js"></script><script src="_static/gone.js?v=1"></script>'
    )
    (html / "_static").mkdir()
    (html / "_static" / "here.js").write_text("")
    assert check_html(tmp_path, html) == [
        "index.html: loads a script from the network (https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js)",
        "index.html: missing script _static/gone.js",
    ]


def test_the_page_loads_mathjax_from_the_build(built):
    html = built / "_build" / "html"
    page = (html / "book" / "index.html").read_text()
    assert page.count('class="math') == 2  # the inline and the display formula
    srcs = re.findall(r'<script[^>]*\ssrc="([^"?]*mathjax[^"?]*)', page, flags=re.I)
    assert srcs == [f"../_static/{MATHJAX_STATIC}/{MATHJAX_ENTRY}"]
    assert (html / "book" / srcs[0]).is_file()
    assert (html / "_static" / MATHJAX_STATIC / "output" / "chtml" / "fonts" / "woff-v2").is_dir()
    assert check_html(built, html) == []


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.mark.slow
def test_chromium_typesets_every_formula_offline(built):
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (the test extra)")
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver):
        pytest.skip("no chromium or chromedriver on PATH (`make test` installs Debian's with apt where it can)")
    handler = functools.partial(QuietHandler, directory=str(built / "_build" / "html"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        opts.add_argument(arg)
    opts.add_argument("--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1")  # no network but the book
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    drv = webdriver.Chrome(options=opts, service=webdriver.ChromeService(executable_path=driver))
    try:
        drv.get(f"http://127.0.0.1:{server.server_address[1]}/book/index.html")
        end, typeset = time.monotonic() + 30, None
        while time.monotonic() < end:
            typeset = drv.execute_script(
                "return [document.querySelectorAll('.math').length,"
                " document.querySelectorAll('mjx-container').length,"
                " document.querySelectorAll('mjx-container mjx-mfrac').length,"
                " document.querySelectorAll('mjx-merror, .mjx-error').length];"
            )
            if typeset[0] and typeset[1] >= typeset[0]:
                break
            time.sleep(0.1)
        errors = [e["message"] for e in drv.get_log("browser") if e["level"] == "SEVERE"]
    finally:
        drv.quit()
        server.shutdown()
        server.server_close()
    formulas, containers, fractions, failed = typeset
    assert formulas == 2 and containers == 2, typeset  # both formulas rendered by MathJax
    assert fractions == 2 and failed == 0, typeset  # as math (a fraction each), not as an error box
    assert [e for e in errors if "favicon.ico" not in e] == []
