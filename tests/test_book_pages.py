"""The book's reading aids, checked from their sources (fast: text parsing, no build).

Citations: every ``{cite}`` key in a chapter's prose or a static page is in book/references.bib,
and every entry there is cited somewhere. Glossary: every ``{term}`` used names a term of
book/glossary.md, every chapter links at least one, and the defaults the glossary states are
the library's. The table of contents lists both pages. No page's prose holds an absolute path
of a machine.
"""

from __future__ import annotations

import re
from pathlib import Path

import jupytext
import pytest
import yaml
from markdown_it import MarkdownIt
from pybtex.database import parse_file

from mimirlib.core import metrics
from mimirlib import verdicts
from mimirlib.core.attacks import ATTACKS
from mimirlib.core.ngrams import NgramIndex

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
BIB = BOOK / "references.bib"
GLOSSARY = BOOK / "glossary.md"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.py"))

CITE = re.compile(r"\{cite(?::[a-z]+)?\}`([^`]*)`")
TERM = re.compile(r"\{term\}`([^`]*)`")
CROSS_GLUE = re.compile(r"\{glue(?::[a-z]+)?\}`([^`:]+)\.ipynb::([A-Za-z_][A-Za-z0-9_]*)")
MACHINE_PATH = re.compile(r"(?<![\w.~])/(?:work|home|root|tmp|Users|mnt|var|opt|data)/")


def prose_of_notebook(path: Path) -> str:
    """The markdown cells of a jupytext notebook, joined (code cells are not prose)."""
    nb = jupytext.read(path)
    return "\n\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


def pages() -> dict[str, str]:
    """Every page's prose by name: the chapters' markdown cells and the static pages."""
    out = {f"notebooks/{p.name}": prose_of_notebook(p) for p in NOTEBOOKS}
    out |= {f"book/{p.name}": p.read_text(encoding="utf-8") for p in sorted(BOOK.glob("*.md"))}
    return out


def cited_keys(text: str) -> set[str]:
    return {k.strip() for group in CITE.findall(text) for k in group.split(",") if k.strip()}


def term_targets(text: str) -> set[str]:
    """The glossary terms that ``{term}`` roles point at: ``text <target>`` or ``target``."""
    out = set()
    for body in TERM.findall(text):
        m = re.fullmatch(r"(?s).*<([^<>]+)>\s*", body)
        out.add((m.group(1) if m else body).strip())
    return out


def glossary_terms(text: str) -> set[str]:
    """Terms defined in the page's ``{glossary}`` blocks: the unindented lines of each block. The
    blocks are found by a CommonMark parser, as MyST finds them (an inner fence of the same length
    would close the block early and leave the terms after it undefined)."""
    terms = set()
    for tok in MarkdownIt("commonmark").parse(text):
        if tok.type == "fence" and tok.info.strip().startswith("{glossary}"):
            for line in tok.content.splitlines():
                if line.strip() and not line[0].isspace() and not line.startswith(":"):
                    terms.add(line.strip())
    return terms


@pytest.fixture(scope="module")
def all_pages():
    return pages()


@pytest.fixture(scope="module")
def bib():
    return parse_file(str(BIB), bib_format="bibtex")


def test_the_helpers_read_roles_as_sphinx_does():
    text = "a {cite:p}`x, y` b {cite}`z` c {term}`AUCs <AUC>` d {term}`seed sd` {glue:text}`main.ipynb::k:s`"
    assert cited_keys(text) == {"x", "y", "z"}
    assert term_targets(text) == {"AUC", "seed sd"}
    assert CROSS_GLUE.findall(text) == [("main", "k")]
    assert glossary_terms("````{glossary}\nAUC\nROC curve\n  def\n\n  ```text\n  x = 1\n  ```\nGLRT\n  max\n````") == {
        "AUC",
        "ROC curve",
        "GLRT",
    }
    # an inner fence as long as the outer one closes the block: GLRT is then no glossary term
    assert glossary_terms("```{glossary}\nAUC\n  def\n  ```text\n  x\n  ```\nGLRT\n  max\n```") == {"AUC"}
    assert MACHINE_PATH.search("the cache /work/main/.cache/lab") and MACHINE_PATH.search("(/home/u/x)")
    assert not MACHINE_PATH.search("see book/executed/lab and data/members.jsonl or ~/data/x")


def test_every_cited_key_is_in_the_bibliography(all_pages, bib):
    missing = {name: sorted(cited_keys(text) - set(bib.entries)) for name, text in all_pages.items()}
    assert {k: v for k, v in missing.items() if v} == {}


def test_every_bibliography_entry_is_cited(all_pages, bib):
    cited = set().union(*(cited_keys(t) for t in all_pages.values()))
    assert sorted(set(bib.entries) - cited) == []


def test_every_entry_names_its_authors_title_and_year(bib):
    for key, entry in bib.entries.items():
        assert entry.persons.get("author"), key
        assert entry.fields.get("title") and re.fullmatch(r"\d{4}", entry.fields.get("year", "")), key


def test_the_two_papers_are_cited_on_the_home_page_and_on_their_chapters(all_pages):
    assert {"duan2024mimir", "tao2025ramia"} <= cited_keys(all_pages["book/index.md"])
    for stem in ("main_results", "training_size", "epochs", "ngram_overlap", "temporal_shift", "modified_members"):
        assert "duan2024mimir" in cited_keys(all_pages[f"notebooks/{stem}.py"]), stem
    assert "tao2025ramia" in cited_keys(all_pages["notebooks/ramia.py"])


def test_every_term_used_is_in_the_glossary(all_pages):
    defined = {t.lower() for t in glossary_terms(all_pages["book/glossary.md"])}
    unknown = {
        name: sorted(t for t in term_targets(text) if t.lower() not in defined) for name, text in all_pages.items()
    }
    assert {k: v for k, v in unknown.items() if v} == {}


def test_every_chapter_links_the_glossary(all_pages):
    bare = [p.name for p in NOTEBOOKS if not term_targets(all_pages[f"notebooks/{p.name}"])]
    assert bare == []


def test_glossary_covers_every_attack_and_metric_the_book_uses():
    defined = {t.lower() for t in glossary_terms(GLOSSARY.read_text(encoding="utf-8"))}
    needed = {a.label.lower() for a in ATTACKS.values()} | {
        "auc",
        "roc curve",
        "tpr at low fpr",
        "smallest resolvable fpr",
        "bootstrap interval",
        "paired bootstrap",
        "seed sd",
        "clear effect",
        "rmia",
        "ramia",
        "trimmed average",
        "glrt",
        "bayes factor",
        "n-gram overlap",
        "bloom filter",
        "blind baseline",
        "member",
        "non-member",
        "effective epochs",
        *verdicts.OUTCOMES,
    }
    # attack labels as the tables print them ("Reference", "Neighbourhood") are glossary terms too
    aliases = {"reference": "reference attack", "neighbourhood": "neighbourhood attack"}
    assert sorted(aliases.get(t, t) for t in needed if aliases.get(t, t) not in defined) == []


def test_glossary_states_the_librarys_defaults():
    """The numbers the glossary gives as rules or defaults are the library's constants."""
    text = GLOSSARY.read_text(encoding="utf-8")
    assert f"`k = {ATTACKS['min_k'].params['k']}`" in text
    assert ATTACKS["min_k_pp"].params["k"] == ATTACKS["min_k"].params["k"]
    assert f"exceeds {verdicts.SEED_Z:g} seed sd" in text
    assert f"at least {verdicts.TALLY_REPRODUCED:.0%}" in text
    assert f"partly reproduced if at least {verdicts.TALLY_DECIDED:.0%} do" in text
    assert f"not reproduced if at least {verdicts.TALLY_DECIDED:.0%} are" in text
    n_resamples = metrics.bootstrap_auc.__defaults__[0]
    assert f"`B = {n_resamples}`" in text
    fpr = NgramIndex.__init__.__defaults__[1]
    assert f"({fpr:.0%} by default)" in text


def test_cross_page_glue_names_a_chapter_that_glues_the_key(all_pages):
    """``{glue:text}`<chapter>.ipynb::key``` reads another chapter's executed notebook: the chapter must
    exist, and the key must be glued by it or by its experiment module's prose numbers."""
    for name, text in all_pages.items():
        for doc, key in CROSS_GLUE.findall(text):
            stem = Path(doc).name
            sources = [ROOT / "notebooks" / f"{stem}.py", ROOT / "mimirlib" / "experiments" / f"{stem}.py"]
            assert sources[0].exists(), f"{name}: no chapter {stem}"
            assert any(f'"{key}"' in s.read_text(encoding="utf-8") for s in sources if s.exists()), f"{name}: {key}"


def test_no_page_prose_holds_a_machine_path(all_pages):
    found = {name: MACHINE_PATH.findall(text) for name, text in all_pages.items()}
    assert {k: v for k, v in found.items() if v} == {}


def test_toc_lists_glossary_and_references():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    files = [c.get("file") for part in toc.get("parts", []) for c in part.get("chapters", [])]
    assert "book/glossary" in files and "book/references" in files
    assert (BOOK / "references.md").read_text(encoding="utf-8").count("```{bibliography}") == 1


def test_config_loads_the_bibliography():
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert cfg["bibtex_bibfiles"] == ["book/references.bib"]
    # the sphinx extension list replaces Jupyter Book's defaults, so it must name the extension itself
    assert "sphinxcontrib.bibtex" in cfg["sphinx"]["config"]["extensions"]
