"""The whole book on the smoke lab: build the lab, execute every chapter, render, check the HTML.

This is `make book` in miniature (profile ``smoke``), run in a temporary copy of the book so
the developer's own ``book/executed`` and ``.cache`` are never touched.
"""

import re
import shutil
from pathlib import Path

import nbformat
import pytest

from mimirlib.book import scorecard
from mimirlib.book.build import VARIANTS_TOC, build, check_html, prune_stale_variants, toc, toc_files
from mimirlib.runner import NotebookFailed, ParameterError, list_notebooks, run_notebook

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def smoke_book(tmp_path_factory):
    """The executed and rendered smoke book; MIMIR_CACHE points into it while the module's tests
    run and is restored afterwards (whether the build passed, failed or the tests did)."""
    work = tmp_path_factory.mktemp("book")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MIMIR_CACHE", str(work / "cache"))
        for f in ("_config.yml", "_toc.yml"):
            shutil.copy(ROOT / f, work / f)
        # the book's own pages only: a checkout's runs (chapters, variants, other lab draws) are not the smoke book's
        shutil.copytree(ROOT / "book", work / "book", ignore=shutil.ignore_patterns("executed", "variants", "draws"))
        (work / "mimirlib").symlink_to(ROOT / "mimirlib")  # chapters include library code (literalinclude)
        out = work / "book" / "executed"
        for stem in list_notebooks(ROOT / "notebooks"):
            run_notebook(stem, profile="smoke", notebooks_dir=ROOT / "notebooks", out_dir=out)
        index = build(work)
        yield work, index, out


def stdout_of(nb_path: Path) -> str:
    nb = nbformat.read(nb_path, as_version=4)
    return "".join(
        o.get("text", "")
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o.output_type == "stream" and o.name == "stdout"
    )


def test_every_toc_entry_rendered_without_errors(smoke_book):
    work, index, _ = smoke_book
    assert index.exists()
    assert check_html(work, work / "_build" / "html") == []
    for f in toc_files(work):
        assert (work / "_build" / "html" / f"{f}.html").exists(), f


def test_scorecard_has_a_row_per_published_verdict_linking_to_its_section(smoke_book):
    work, _, out = smoke_book
    html = work / "_build" / "html" / "book" / "executed"
    page = (html / "scorecard.html").read_text()
    records = {s: scorecard.records_of(out / f"{s}.ipynb") for s in list_notebooks(ROOT / "notebooks")}
    assert sum(map(len, records.values())) >= 26  # every chapter's claims, none typed by hand
    links = re.findall(r'<a class="reference internal" href="([^"#]+)#([^"]+)"', page)
    assert len(links) == sum(map(len, records.values()))  # one link per row
    assert {Path(h).stem for h, _ in links} == {s for s, r in records.items() if r}
    for href, anchor in set(links):
        assert f'id="{anchor}"' in (html / href).read_text(), (href, anchor)
    assert toc_files(work)[1] == "book/executed/scorecard"  # right after the introduction


def test_main_results_has_tables_figures_and_verdicts(smoke_book):
    work, _, _ = smoke_book
    html = (work / "_build" / "html" / "book" / "executed" / "main_results.html").read_text()
    assert len(re.findall(r"<img ", html)) >= 3
    assert html.count("<table") >= 4
    assert "reproduced" in html  # a verdict was rendered (reproduced / partly / not reproduced)
    lab = (work / "_build" / "html" / "book" / "executed" / "lab.html").read_text()
    assert "informative" in lab and lab.count("<img ") >= 1  # the sanity check and the loss curves


@pytest.mark.parametrize(
    "stem,images",
    [
        ("ngram_overlap", 3),
        ("temporal_shift", 2),
        ("modified_members", 1),
        ("ramia", 4),
        ("ramia_beyond_text", 3),
        ("audit", 2),
    ],
)
def test_chapters_have_figures_tables_and_verdicts(smoke_book, stem, images):
    work, _, _ = smoke_book
    html = (work / "_build" / "html" / "book" / "executed" / f"{stem}.html").read_text()
    assert html.count("<img ") >= images, stem
    assert html.count("<table") >= 1, stem
    if stem != "audit":
        assert "paper&#x27;s claim" in html or "paper's claim" in html, stem  # the verdict table rendered
    else:
        assert "Blind baseline" in html and "AUC [95% CI]" in html


@pytest.mark.parametrize(
    "stem,header,tables",
    [
        ("main_results", "n (members / non-members)", 2),  # the Table 1 and Table 11 analogues
        ("epochs", "n (members / non-members)", 2),  # pooled AUCs, paired gains
        ("temporal_shift", "n (members / non-members)", 1),  # the Table 3 analogue
        ("training_size", "n (non-members)", 1),  # AUC per checkpoint (members are a row label)
        ("ramia", "n (ranges: members / non-members)", 1),  # the Table III analogue
    ],
)
def test_rendered_auc_tables_carry_their_sample_size(smoke_book, stem, header, tables):
    """Every number with the sample size it rests on: the chapters' AUC tables show, per row, the
    members / non-members behind it (report.with_n), and each such column is filled."""
    work, _, _ = smoke_book
    html = (work / "_build" / "html" / "book" / "executed" / f"{stem}.html").read_text()
    assert html.count(f">{header}</th>") >= tables, stem
    for table in re.findall(r"<table.*?</table>", html, flags=re.S):
        if f">{header}</th>" in table:
            cells = [c.strip() for c in re.findall(r"<td[^>]*>([^<]*)</td>", table)]
            assert any(re.fullmatch(r"\d+( / \d+)?( \(.*\))?", c) for c in cells), (stem, cells[:12])


def test_no_rendered_page_holds_a_machine_path(smoke_book):
    """A reader's page never shows where the build ran: not the repository, not the temporary
    book, not the signal cache (all of them absolute paths of this machine)."""
    work, _, _ = smoke_book
    machine = {str(ROOT), str(work)}  # the signal cache lives under work
    leaks = []
    for page in sorted((work / "_build" / "html").rglob("*.html")):
        text = page.read_text(errors="replace")
        leaks += [f"{page.relative_to(work)}: {p}" for p in machine if p in text]
    assert leaks == []


def test_rerun_with_other_parameter_reuses_cached_signals(smoke_book, tmp_path):
    _, _, out = smoke_book
    # the variant goes beside the test, not into the shared book: a variant there joins its table of
    # contents unrendered, and tests/test_browser.py (which reuses this book) would build it again
    path = run_notebook(
        "main_results",
        profile="smoke",
        notebooks_dir=ROOT / "notebooks",
        out_dir=out,
        overrides=["min_k=0.1"],
        variants_dir=tmp_path,
    )
    assert path.parent == tmp_path
    m = re.search(r"signal cache: (\d+) texts read from disk, (\d+) computed", stdout_of(path))
    assert m, "main_results must report its cache use"
    assert int(m.group(1)) > 0 and int(m.group(2)) == 0


def test_failed_run_keeps_previous_good_chapter(smoke_book):
    _, _, out = smoke_book
    good = (out / "main_results.ipynb").read_bytes()
    with pytest.raises(NotebookFailed, match="no benchmark code/no_such_split"):
        run_notebook(
            "main_results",
            profile="smoke",
            notebooks_dir=ROOT / "notebooks",
            out_dir=out,
            overrides=["split=no_such_split"],
            publish=True,  # even a run asked to replace the chapter leaves it alone when it fails
        )
    assert (out / "main_results.ipynb").read_bytes() == good
    assert (out / "failed" / "main_results.ipynb").exists()
    # an unknown domain is caught before a kernel starts (runner.check_domains)
    with pytest.raises(ParameterError, match="unknown domain 'no_such_domain'"):
        run_notebook(
            "main_results",
            profile="smoke",
            notebooks_dir=ROOT / "notebooks",
            out_dir=out,
            overrides=["domains=[no_such_domain]"],
        )
    assert (out / "main_results.ipynb").read_bytes() == good


def test_nbgrader_grades_every_chapter_from_the_books_kept_runs(smoke_book, tmp_path, monkeypatch):
    """Issue 31 items 1 and 6, as the instructor does it: handouts of every chapter with an exercise,
    then nbgrader's own generate_assignment and autograde with the shipped config. The untouched
    release scores 0, the key full marks (no cell of it fails), a wrong answer (the key's score negated)
    0; no key is in the package; and autograde reads the book run's kept results
    (``$MIMIR_REQUIRE_SAVED``: a chapter that re-ran its scoring would fail every cell after it)."""
    from mimirlib.runner import saved
    from mimirlib.teach import exercises, handouts

    from .test_nbgrader import assert_no_solution_in, nbgrader, release_and_key, scores, solved, submit

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv(saved.REQUIRE_ENV, "1")
    chapters = [
        s
        for s in list_notebooks(ROOT / "notebooks")
        if '"solution": true' in (ROOT / "notebooks" / f"{s}.py").read_text()
    ]
    assert len(chapters) >= 9
    out = tmp_path / "handouts"
    made = {h.chapter: h for h in handouts.write_handouts(chapters, out, "smoke")}
    package = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "mimirlib").rglob("*.py"))
    keys = (out / "keys" / "exercise_keys.py").read_text(encoding="utf-8")
    times = {}
    for chapter in chapters:
        assert made[chapter].saved is not None, f"{chapter}: the book's run kept nothing"
        for region in exercises.solution_regions((ROOT / "notebooks" / f"{chapter}.py").read_text(encoding="utf-8")):
            assert region in keys and region not in package, chapter
        course, release, key = release_and_key(out, chapter)
        assert_no_solution_in(release, key)
        submit(course, chapter, "untouched", release)
        submit(course, chapter, "right", solved(release, key))
        submit(course, chapter, "wrong", wrong_answer(solved(release, key)))
        times[chapter] = nbgrader(course, "autograde", chapter, "--create") / 3
        points = sum(c.metadata.nbgrader["points"] for c in key.cells if c.metadata.get("nbgrader", {}).get("grade"))
        got = scores(course, chapter)
        assert got == {"untouched": (0.0, points), "right": (points, points), "wrong": (0.0, points)}, chapter
        graded = nbformat.read(course / "autograded" / "right" / chapter / f"{chapter}.ipynb", as_version=4)
        failed = [
            o.get("evalue")
            for c in graded.cells
            if c.cell_type == "code"
            for o in c.get("outputs", [])
            if o.get("output_type") == "error"
        ]
        assert failed == [], f"{chapter}: {failed[:1]}"
    print(
        "nbgrader autograde per submission (smoke lab, kept runs): "
        + ", ".join(f"{c} {t:.1f} s" for c, t in times.items())
    )


def wrong_answer(nb):
    """``nb`` whose solution cells return the negated score (an attack scored the wrong way round)."""
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("solution"):
            lines = cell.source.split("\n")
            last = max(i for i, ln in enumerate(lines) if ln.strip().startswith("return "))
            indent, expr = lines[last].split("return ", 1)
            lines[last] = f"{indent}return -({expr})"
            cell.source = "\n".join(lines)
    return nb


def test_main_results_on_real_path_fixtures(tmp_path, tiny_model_dir, monkeypatch):
    """The real path: a model saved with save_pretrained and a local copy of the MIMIR dataset repo."""
    from .test_hub import make_repo

    repo = tmp_path / "mimir"
    make_repo(repo, "github", "ngram_13_0.8", n=12)
    monkeypatch.setenv("MIMIR_CACHE", str(tmp_path / "cache"))
    path = run_notebook(
        "main_results",
        profile="smoke",
        notebooks_dir=ROOT / "notebooks",
        out_dir=tmp_path / "out",
        overrides={
            "models": [str(tiny_model_dir)],
            "reference_models": [str(tiny_model_dir)],
            "benchmark_source": str(repo),
            "domains": ["github"],
            "n_bootstrap": 50,
        },
    )
    m = re.search(r"signal cache: (\d+) texts read from disk, (\d+) computed", stdout_of(path))
    assert m, "main_results must report its cache use"
    # a fresh cache: each of the 12 members and 12 non-members went through the model
    assert int(m.group(2)) >= 24
    nb = nbformat.read(path, as_version=4)
    assert not any(o.output_type == "error" for c in nb.cells for o in c.get("outputs", []))


def test_new_chapters_on_real_path_fixtures(tmp_path, tiny_model_dir, monkeypatch):
    """n-gram, temporal, modified-members and audit chapters on a local MIMIR-layout repo and a
    save_pretrained model: the code path of hub names, without the network."""
    from .test_hub import make_repo

    repo = tmp_path / "mimir"
    for config, split in (
        ("github", "ngram_13_0.8"),
        ("github", "ngram_7_0.2"),
        ("arxiv", "ngram_13_0.8"),
        ("temporal_arxiv", "2020_08"),
        ("temporal_arxiv", "2023_06"),
    ):
        make_repo(repo, config, split, n=12)
    monkeypatch.setenv("MIMIR_CACHE", str(tmp_path / "cache"))
    common = {
        "models": [str(tiny_model_dir)],
        "reference_models": [str(tiny_model_dir)],
        "benchmark_source": str(repo),
        "n_bootstrap": 50,
    }
    runs = {
        "ngram_overlap": {**common, "domains": ["github"], "blind_folds": 3},
        "temporal_shift": {
            **common,
            "domain": "arxiv",
            "shifted_config": "temporal_arxiv",
            "shifted_splits": ["2020_08", "2023_06"],
            "blind_folds": 3,
        },
        "modified_members": {k: v for k, v in common.items() if k != "n_bootstrap"}
        | {"domains": ["github"], "members_per_domain": 2, "trials": 2, "edits": [1, 2], "paraphrase_members": 0},
        "audit": {
            "model": str(tiny_model_dir),
            "members": str(ROOT / "tests/fixtures/audit/members.jsonl"),
            "nonmembers": str(ROOT / "tests/fixtures/audit/nonmembers.jsonl"),
            "n_bootstrap": 50,
            "out_dir": str(tmp_path / "audit-report"),
        },
    }
    for stem, overrides in runs.items():
        path = run_notebook(
            stem, profile="smoke", notebooks_dir=ROOT / "notebooks", out_dir=tmp_path / "out", overrides=overrides
        )
        nb = nbformat.read(path, as_version=4)
        assert not any(o.output_type == "error" for c in nb.cells for o in c.get("outputs", [])), stem
    assert (tmp_path / "audit-report" / "report.md").exists()


@pytest.mark.parametrize("stem", ["main_results", "ngram_overlap", "temporal_shift", "modified_members"])
def test_every_paper_profile_resolves(stem):
    from mimirlib.runner import resolve_params

    params = resolve_params(stem, "paper", notebooks_dir=ROOT / "notebooks")
    assert params["benchmark_source"] == "iamgroot42/mimir" and params["revision"] == "step99000"
    assert all(m.startswith("EleutherAI/pythia-") for m in params["models"])


def test_paper_profile_parameters_are_valid():
    from mimirlib.runner import resolve_params

    params = resolve_params("main_results", "paper", notebooks_dir=ROOT / "notebooks")
    assert params["revision"] == "step99000" and params["benchmark_source"] == "iamgroot42/mimir"
    assert params["models"][0] == "EleutherAI/pythia-160m-deduped"


# ------------------------------------------------------------------- variants beside their chapter


CHAPTER = """# %% [markdown]
# # A chapter

# %% tags=["parameters"]
k = 0.2  # k for the demonstration

# %%
from myst_nb import glue

glue("k_used", k, display=False)

# %% [markdown]
# (verdicts-demo)=
# ## Result
# This run used k = {glue:text}`k_used`; see {ref}`verdicts-demo`.
"""


def tiny_book(tmp_path):
    root = tmp_path / "book-root"
    (root / "book").mkdir(parents=True)
    shutil.copy(ROOT / "_config.yml", root / "_config.yml")
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/index\nchapters:\n  - file: book/executed/demo\n")
    (root / "book" / "index.md").write_text("# Demo book\n\nA chapter and its variants.\n")
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    (nbs / "demo.py").write_text(CHAPTER)
    return root, nbs


def test_toc_lists_variants_under_their_chapter(tmp_path):
    root, _ = tiny_book(tmp_path)
    assert toc_files(root) == ["book/index", "book/executed/demo"]  # none yet: _toc.yml as written
    variants = root / "book" / "variants"
    variants.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.metadata["mimir"] = {"parameters": {"k": 0.1}, "variant": "k-0p1"}
    nbformat.write(nb, variants / "demo--k-0p1.ipynb")
    nbformat.write(nbformat.v4.new_notebook(), variants / "demo--by-hand.ipynb")
    nbformat.write(nbformat.v4.new_notebook(), variants / "demox--other.ipynb")  # another chapter's
    assert toc(root)["chapters"][0]["sections"] == [
        {"file": "book/variants/demo--by-hand", "title": "Variant by-hand"},
        {"file": "book/variants/demo--k-0p1", "title": "Variant: k = 0.1"},
    ]
    assert toc_files(root)[2:] == ["book/variants/demo--by-hand", "book/variants/demo--k-0p1"]


def test_pages_of_deleted_variants_are_pruned_and_others_kept(tmp_path):
    html = tmp_path / "_build" / "html"
    built, sources = html / "book" / "variants", html / "_sources" / "book" / "variants"
    for d in (built, sources, tmp_path / "book" / "variants"):
        d.mkdir(parents=True)
    for stem in ("demo--kept", "demo--gone"):
        (built / f"{stem}.html").write_text("<a href='../executed/old.html'>")
        (sources / f"{stem}.ipynb").write_text("{}")
    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "book" / "variants" / "demo--kept.ipynb")
    assert prune_stale_variants(tmp_path, html) == [built / "demo--gone.html"]
    assert sorted(p.name for p in built.iterdir()) == ["demo--kept.html"]
    assert sorted(p.name for p in sources.iterdir()) == ["demo--kept.ipynb"]
    assert prune_stale_variants(tmp_path, tmp_path / "nothing-built") == []


def test_book_builds_strictly_with_a_variant_beside_its_chapter(tmp_path):
    """The runner's variant (same glue names and labels as its chapter) renders beside it: the
    strict build passes, the chapter's page links to it, and it shows its banner."""
    root, nbs = tiny_book(tmp_path)
    out = root / "book" / "executed"
    run_notebook("demo", profile="smoke", notebooks_dir=nbs, out_dir=out)
    variant = run_notebook("demo", profile="smoke", notebooks_dir=nbs, out_dir=out, overrides=["k=0.1"])
    assert variant == root / "book" / "variants" / "demo--k-0p1.ipynb"
    build(root)
    html = root / "_build" / "html" / "book"
    assert check_html(root, root / "_build" / "html") == []
    assert (root / VARIANTS_TOC).exists()
    chapter = (html / "executed" / "demo.html").read_text()
    page = (html / "variants" / "demo--k-0p1.html").read_text()
    text, vtext = (re.sub(r"<[^>]+>", "", h) for h in (chapter, page))  # glued values sit in spans
    assert 'href="../variants/demo--k-0p1.html"' in chapter and "Variant: k = 0.1" in chapter
    assert "not the published chapter" not in text and "used k = 0.2" in text
    assert "not the published chapter" in vtext and "used k = 0.1" in vtext
    assert "--variant k-0p1" in vtext  # the command that reproduces it
    variant.unlink()  # deleted by hand: the next build drops its page instead of failing on its stale links
    build(root)
    assert not (html / "variants" / "demo--k-0p1.html").exists() and check_html(root, root / "_build" / "html") == []


def test_the_draws_reading_is_a_page_while_two_draws_are_there(tmp_path):
    """``make draws`` leaves each draw's chapters in book/draws/draw-N: the build reads them on a page of its own
    (strict build, listed in the table of contents, folder names only), and drops it when fewer than two remain."""
    import html

    from mimirlib import verdicts
    from mimirlib.book import draws
    from tests.test_scorecard import executed

    root, nbs = tiny_book(tmp_path)
    run_notebook("demo", profile="smoke", notebooks_dir=nbs, out_dir=root / "book" / "executed")
    claim = verdicts.Claim("Bigger models leak more", source="MIMIR §3.1", key="size", paper_effect=0.02)
    units = [verdicts.Effect(0.015, -0.001, 0.031, label=u) for u in "abcd"]
    near = claim.tallied(verdicts.tally(units), "e", "r")  # undecided in one draw, reproduced over two
    for n in (3, 0):
        (root / "book" / "draws" / f"draw-{n}").mkdir(parents=True)
        executed(root / "book" / "draws" / f"draw-{n}" / "main_results.ipynb", [near], "main_results")
    (root / "book" / "draws" / "draw-x").mkdir()  # not a draw's folder: ignored
    build(root)
    assert toc_files(root)[:3] == ["book/index", "book/executed/draws", "book/executed/demo"]
    assert check_html(root, root / "_build" / "html") == []
    page = (root / "_build" / "html" / "book" / "executed" / "draws.html").read_text()
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    assert "Over several lab draws" in text and "Draws on this page: draw-0, draw-3." in text
    row = re.search(r"<tr[^>]*>(?:(?!</tr>).)*Bigger models leak more.*?</tr>", page, re.S).group(0)
    cells = [html.unescape(re.sub(r"<[^>]+>", " ", c)).split() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
    assert cells[0][0] == "reproduced" and cells[2] == "every draw: inconclusive (underpowered)".split()
    assert 'make draws DRAWS="0 3"' in text and str(tmp_path) not in text
    shutil.rmtree(root / "book" / "draws" / "draw-3")
    assert draws.write_page(root / "book" / "draws", root / "book" / "executed") is None
    assert toc_files(root) == ["book/index", "book/executed/demo"]
    build(root)  # the old reading's built page goes too (Sphinx keeps pages whose source is gone)
    assert not (root / "_build" / "html" / "book" / "executed" / "draws.html").exists()
    assert check_html(root, root / "_build" / "html") == []


def test_the_draws_page_sits_under_the_scorecard_in_the_books_own_toc(tmp_path):
    root = tmp_path
    shutil.copy(ROOT / "_toc.yml", root / "_toc.yml")
    (root / "book" / "executed").mkdir(parents=True)
    assert "book/executed/draws" not in toc_files(root)
    (root / "book" / "executed" / "draws.md").write_text("# Over several lab draws\n")
    card = next(e for p in toc(root)["parts"] for e in p["chapters"] if e["file"] == "book/executed/scorecard")
    assert card["sections"] == [{"file": "book/executed/draws", "title": "Over several lab draws"}]
    files = toc_files(root)
    assert files[files.index("book/executed/scorecard") + 1] == "book/executed/draws"
