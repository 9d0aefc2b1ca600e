#!/usr/bin/env python3
"""Rebuild the embedded lab's committed corpus snapshot (a small offline "mini-Pile").

    python scripts/build_snapshot.py --out mimirlib/lab/snapshot [--seed 0]

Six domains, each standing in for a Pile domain that cannot be fetched offline:

    code          model implementations of PyPI ``transformers``   (plays GitHub: near-duplicate families)
    licenses      licence texts from PyPI ``licensedcode-data``    (naturally high n-gram overlap)
    math          ``mathematics-dataset`` 1.0.1 generator          (plays DM Mathematics)
    docs          docstrings of the same files: the API docs' text  (plays ArXiv / PubMed: technical prose)
    encyclopedia  FOLDOC entries (dict-foldoc)                     (plays Wikipedia)
    changelog     CPython changelog, dated by release              (the dated domain, for temporal shift)

The output is byte-identical for the same sources and ``--seed`` (gzip ``mtime=0``, sorted ids,
no timestamps in the manifest), so a rebuild can be diffed against the committed files.

Prerequisites (root): ``apt-get install -y python3.11-doc dict-foldoc`` and
``pip install licensedcode-data==32.1.0`` in the running interpreter.  ``mathematics-dataset``
breaks on current sympy/numpy, so it runs in an isolated venv with pinned old versions that this
script creates on first use (``--math-venv``); the same file is re-executed there with ``--emit-math``.
This script uses the standard library only.
"""

from __future__ import annotations

import argparse
import ast
import datetime as dt
import gzip
import hashlib
import html.parser
import importlib.metadata
import importlib.util
import io
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
import tokenize
from pathlib import Path

DOMAINS = ("code", "licenses", "math", "docs", "encyclopedia", "changelog")
MIN_WORDS = 100  # every document has at least this many whitespace words
MAX_WORDS = 600  # ... and is cut (at a word boundary) after this many
PACK_WORDS = 400  # code / docs: pack consecutive blocks up to about this many words
MAX_DOCS = 4000  # per domain: larger candidate pools are subsampled (seeded)
MATH_DOCS = 3000
MATH_WORDS = (100, 220)  # each math document gets a target length drawn from this range
CHANGELOG_WORDS = (100, 150)  # target length range; small so each later year keeps >= 150 documents

PY_DOC = Path("/usr/share/doc/python3.11/html")
FOLDOC_INDEX = Path("/usr/share/dictd/foldoc.index")
FOLDOC_DICT = Path("/usr/share/dictd/foldoc.dict.dz")

MATH_PINS = [
    "mathematics-dataset==1.0.1",
    "sympy==1.4",
    "numpy==1.23.5",
    "mpmath==1.3.0",
    "absl-py==2.5.1",
    "six==1.17.0",
]
# sympy >= 1.6 moved diophantine.base_solution_linear, sympy 1.5 rejects the numpy ints the
# generator passes to it, sympy 1.3 calls np.asscalar; numpy >= 1.24 dropped np.object.
# sympy 1.4 + numpy 1.23.5 (the last numpy with np.object, and with cp311 wheels) run unpatched.


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- text helpers


def n_words(text: str) -> int:
    return len(text.split())


def cap_words(text: str, limit: int = MAX_WORDS) -> str:
    """Cut after the ``limit``-th whitespace word, keeping the original spacing before it."""
    for i, m in enumerate(re.finditer(r"\S+", text), 1):
        if i == limit:
            return text[: m.end()]
    return text


_CTRL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def normalise(text: str, keep_indent: bool) -> str:
    """Unify newlines, drop control characters and trailing spaces, at most one blank line in a row.

    Prose (``keep_indent=False``) also loses leading indentation and runs of inner spaces;
    code and reST keep their indentation because it carries structure."""
    text = _CTRL.sub("", text.replace("\r\n", "\n").replace("\r", "\n")).expandtabs(8)
    lines = [ln.rstrip() for ln in text.split("\n")]
    if not keep_indent:
        lines = [" ".join(ln.split()) for ln in lines]
    text = "\n".join(lines)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip("\n") if keep_indent else text.strip()


class Chunker:
    """Split a list of lines at ranked split points, packing consecutive pieces up to PACK_WORDS.

    A region that is too long is cut at its coarsest split points (lowest rank: top-level
    definitions, section headings), the pieces are packed greedily, and a piece that is still
    too long is split again at the next finer rank.  Returns (start, end) line ranges."""

    def __init__(self, lines: list[str], points: dict[int, int], pack: int = PACK_WORDS):
        self.points = points
        self.pack = pack
        self.cum = [0]
        for ln in lines:
            self.cum.append(self.cum[-1] + len(ln.split()))

    def words(self, a: int, b: int) -> int:
        return self.cum[b] - self.cum[a]

    def chunk(self, a: int, b: int) -> list[tuple[int, int]]:
        if self.words(a, b) <= self.pack:
            return [(a, b)]
        inner = [p for p in self.points if a < p < b]
        if not inner:
            return [(a, b)]
        rank = min(self.points[p] for p in inner)
        cuts = sorted(p for p in inner if self.points[p] == rank)
        bounds = [a, *cuts, b]
        out: list[tuple[int, int]] = []
        cur: tuple[int, int] | None = None
        for ua, ub in zip(bounds, bounds[1:]):
            w = self.words(ua, ub)
            if w > self.pack:
                if cur:
                    out.append(cur)
                    cur = None
                out.extend(self.chunk(ua, ub))
            elif cur is None:
                cur = (ua, ub)
            elif self.words(cur[0], ub) <= self.pack:
                cur = (cur[0], ub)
            else:
                out.append(cur)
                cur = (ua, ub)
        if cur:
            out.append(cur)
        return out


def finish(texts_sources, keep_indent: bool):
    """Normalise, cap at MAX_WORDS, keep documents with >= MIN_WORDS.  Yields (text, source)."""
    for text, source in texts_sources:
        text = cap_words(normalise(text, keep_indent))
        if n_words(text) >= MIN_WORDS:
            yield text, source


# ---------------------------------------------------------------- code


def _transformers_models() -> Path:
    """The ``models`` folder of the installed ``transformers`` (the version the project's lock pins)."""
    spec = importlib.util.find_spec("transformers")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("transformers is not installed: run the script with the project's venv (.venv/bin/python)")
    return Path(list(spec.submodule_search_locations)[0]) / "models"


def _model_files(root: Path) -> list[Path]:
    """One folder per model family; test files aside. Many files are near-copies of each other (the
    library's ``# Copied from`` convention), the way forks and vendored copies fill GitHub."""
    return sorted(p for p in root.glob("*/*.py") if not p.name.startswith("test_"))


def _read_source(path: Path) -> str:
    try:
        with tokenize.open(path) as fh:
            src = fh.read()
    except (SyntaxError, UnicodeDecodeError):
        src = path.read_text(encoding="utf-8", errors="replace")
    return _CTRL.sub("", src.replace("\r\n", "\n")).expandtabs(8)


def _transformers_info(root: Path, files: list[Path]) -> dict:
    return {
        "packages": {"transformers": importlib.metadata.version("transformers")},
        "source_root": "transformers/models (importlib.util.find_spec)",
        "n_files": len(files),
        "skipped_files": "test_*.py",
    }


def _code_points(src: str, lines: list[str]) -> dict[int, int]:
    """Split points (0-based line index -> indentation) at statement starts that follow a blank line.

    Statement starts come from the AST (decorators and directly preceding comments included),
    so a file is never cut inside a string; files that do not parse fall back to blank lines."""
    starts: set[int] = set()
    try:
        tree = ast.parse(src)
        for node in ast.walk(tree):
            if isinstance(node, ast.stmt):
                ln = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]) - 1
                while ln > 0 and lines[ln - 1].lstrip().startswith("#"):
                    ln -= 1
                starts.add(ln)
    except (SyntaxError, ValueError):
        starts = {i for i in range(len(lines)) if lines[i].strip()}
    return {
        i: len(lines[i]) - len(lines[i].lstrip())
        for i in sorted(starts)
        if 0 < i < len(lines) and not lines[i - 1].strip() and lines[i].strip()
    }


def build_code(seed: int) -> tuple[list[tuple[str, str]], dict]:
    root = _transformers_models()
    files = _model_files(root)
    out = []
    for path in files:
        src = _read_source(path)
        lines = src.split("\n")
        rel = path.relative_to(root.parent).as_posix()
        ch = Chunker(lines, _code_points(src, lines))
        for a, b in ch.chunk(0, len(lines)):
            out.append(("\n".join(lines[a:b]), f"{rel}:{a + 1}-{b}"))
    docs = list(finish(out, keep_indent=True))
    return docs, {
        **_transformers_info(root, files),
        "split": f"AST statement starts after a blank line, coarsest indentation first, "
        f"packed to <= {PACK_WORDS} words",
    }


# ---------------------------------------------------------------- licenses


def build_licenses(seed: int) -> tuple[list[tuple[str, str]], dict]:
    spec = importlib.util.find_spec("licensedcode")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("licensedcode-data is not installed: pip install licensedcode-data==32.1.0")
    lic_dir = Path(list(spec.submodule_search_locations)[0]) / "data" / "licenses"
    out = []
    for path in sorted(lic_dir.glob("*.LICENSE")):
        raw = path.read_text(encoding="utf-8", errors="replace")
        text = raw
        if raw.startswith("---"):
            parts = re.split(r"^---[ \t]*$", raw, maxsplit=2, flags=re.M)
            text = parts[2] if len(parts) == 3 else ""
        out.append((text, f"licenses/{path.name}"))
    version = importlib.metadata.version("licensedcode-data")
    return list(finish(out, keep_indent=False)), {
        "packages": {"licensedcode-data (PyPI)": version},
        "path": "licensedcode/data/licenses/*.LICENSE (YAML front matter dropped)",
        "n_files": len(out),
    }


# ---------------------------------------------------------------- math


def _math_python(venv: Path) -> Path:
    py = venv / "bin" / "python"
    if py.exists():
        return py
    log(f"math: creating isolated venv {venv} with {' '.join(MATH_PINS)}")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(py), "-m", "pip", "install", "-q", *MATH_PINS], check=True)
    return py


def build_math(seed: int, venv: Path) -> tuple[list[tuple[str, str]], dict]:
    py = _math_python(venv)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONHASHSEED"] = "0"
    settings = {"n_docs": MATH_DOCS, "words": list(MATH_WORDS), "seed": seed}
    proc = subprocess.run(
        [str(py), "-W", "ignore", os.path.abspath(__file__), "--emit-math", json.dumps(settings)],
        env=env,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(f"math generation failed in {py}:\n{proc.stderr[-4000:]}")
    payload = json.loads(proc.stdout)
    out = [(d["text"], d["source"]) for d in payload["docs"]]
    return list(finish(out, keep_indent=False)), {"packages": payload["versions"], "generator": payload["settings"]}


def emit_math(settings: dict) -> None:
    """Runs inside the isolated venv: print generated math documents as one JSON object."""
    import numpy as np
    from mathematics_dataset import generate_settings as gs
    from mathematics_dataset.modules import modules
    from mathematics_dataset.util import composition

    def expand_entities(context, **kwargs):
        # Upstream collects entities in a set of objects hashed by id(), so the order fed to
        # random.shuffle (and the text) changes from run to run; keep first-seen order instead.
        kwargs = kwargs.copy()
        entities = dict.fromkeys(context.child_entities)
        for key, maybe_entity in list(kwargs.items()):
            if isinstance(maybe_entity, composition.Entity):
                entities[maybe_entity] = None
                kwargs[key] = maybe_entity.handle
        entities = list(entities)
        random.shuffle(entities)
        parts = []
        for entity in entities:
            parts.append(entity.child_description)
            if not entity.expression_used:
                parts.append(entity.description)
        return " ".join(s for s in parts if s), kwargs

    composition.expand_entities = expand_entities

    def entropy_fn(level, num_levels):
        lo, hi = level / num_levels, (level + 1) / num_levels
        return lambda r: (r[0] + lo * (r[1] - r[0]), r[0] + hi * (r[1] - r[0]))

    def flatten(tree, prefix=None, flat=None):
        flat = {} if flat is None else flat
        for key, val in tree.items():
            name = key if prefix is None else f"{prefix}__{key}"
            if isinstance(val, dict):
                flatten(val, name, flat)
            else:
                flat[name] = val
        return flat

    levels = ["train-easy", "train-medium", "train-hard"]
    regimes = {lv: flatten(modules.train(entropy_fn(i, 3))) for i, lv in enumerate(levels)}
    names = sorted(regimes[levels[0]])
    seed = settings["seed"]
    docs, dropped = [], 0
    for i in range(settings["n_docs"]):
        name = names[i % len(names)]
        level = levels[(i // len(names)) % len(levels)]
        module = regimes[level][name]
        doc_seed = (seed * 1_000_003 + i) % (2**32)
        random.seed(doc_seed)
        np.random.seed(doc_seed)
        target = random.randint(*settings["words"])
        lines, words = [], 0
        while words < target:
            problem = module()
            q, a = str(problem.question), str(problem.answer)
            if len(q) > gs.MAX_QUESTION_LENGTH or len(a) > gs.MAX_ANSWER_LENGTH:
                dropped += 1
                continue
            lines += [q, a]
            words += len(q.split()) + len(a.split())
        docs.append({"text": "\n".join(lines), "source": f"mathematics_dataset/{level}/{name}"})
    versions = {
        p: importlib.metadata.version(p) for p in ("mathematics-dataset", "sympy", "numpy", "mpmath", "absl-py", "six")
    }
    versions["python"] = sys.version.split()[0]
    json.dump(
        {
            "docs": docs,
            "versions": versions,
            "settings": {
                **settings,
                "regimes": levels,
                "modules": names,
                "n_modules": len(names),
                "assignment": "document i uses module i mod n_modules at level (i // n_modules) mod 3",
                "per_document_seed": "random.seed and numpy.random.seed((seed * 1000003 + i) mod 2**32)",
                "format": "question and answer on separate lines, pairs appended until the target word count",
                "max_question_length": gs.MAX_QUESTION_LENGTH,
                "max_answer_length": gs.MAX_ANSWER_LENGTH,
                "dropped_too_long": dropped,
                "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED"),
                "patches": [
                    "util.composition.expand_entities: deterministic entity order before random.shuffle "
                    "(upstream iterates a set of objects hashed by id())"
                ],
            },
        },
        sys.stdout,
    )


# ---------------------------------------------------------------- docs


def _docstrings(src: str) -> list[tuple[int, str]]:
    """(line, docstring) of the module and of every class and function, in source order."""
    try:
        tree = ast.parse(src)
    except (SyntaxError, ValueError):
        return []
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    found = [(getattr(n, "lineno", 0), ast.get_docstring(n)) for n in ast.walk(tree) if isinstance(n, kinds)]
    return sorted((ln, d) for ln, d in found if d)


def build_docs(seed: int) -> tuple[list[tuple[str, str]], dict]:
    root = _transformers_models()
    files = _model_files(root)
    out = []
    for path in files:
        found = _docstrings(_read_source(path))
        if not found:
            continue
        lines: list[str] = []
        points: dict[int, int] = {}
        for _, doc in found:
            if lines:
                lines.append("")
                points[len(lines)] = 0
            start = len(lines)
            lines.extend(doc.split("\n"))
            points.update({j: 1 for j in range(start + 1, len(lines)) if lines[j].strip() and not lines[j - 1].strip()})
        rel = path.relative_to(root.parent).as_posix()
        ch = Chunker(lines, points)
        for a, b in ch.chunk(0, len(lines)):
            out.append(("\n".join(lines[a:b]), f"{rel}#docstrings:{a + 1}-{b}"))
    return list(finish(out, keep_indent=True)), {
        **_transformers_info(root, files),
        "text": "the docstrings of the code domain's files (module, class, function), in source order: the text "
        "the library's API documentation is built from",
        "split": f"one docstring per piece, packed to <= {PACK_WORDS} words; over-long ones at paragraph breaks",
    }


def _deb_version(pkg: str) -> str:
    try:
        return subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


# ---------------------------------------------------------------- encyclopedia

_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_DATE_END = re.compile(r"\((\d{4}-\d{2}-\d{2})\)\s*$")


def _b64num(s: str) -> int:
    n = 0
    for c in s:
        n = n * 64 + _B64.index(c)
    return n


def _iso(s: str) -> str | None:
    try:
        return dt.date.fromisoformat(s).isoformat()
    except ValueError:
        return None


def build_encyclopedia(seed: int) -> tuple[list[tuple[str, str, str | None]], dict]:
    if not FOLDOC_INDEX.exists():
        raise SystemExit(f"{FOLDOC_INDEX} missing: apt-get install -y dict-foldoc")
    data = gzip.decompress(FOLDOC_DICT.read_bytes())
    seen, entries = set(), []
    for line in FOLDOC_INDEX.read_text(encoding="utf-8").splitlines():
        head, off, length = line.split("\t")
        if head.startswith("00-database") or head.startswith("00database"):
            continue
        off, length = _b64num(off), _b64num(length)
        if off in seen:  # aliases point at the same entry
            continue
        seen.add(off)
        entries.append((off, length))
    out, n_dated, n_entries = [], 0, 0
    for off, length in sorted(entries):
        n_entries += 1
        raw = data[off : off + length].decode("utf-8", errors="replace")
        first, _, body = raw.lstrip("\n").partition("\n")
        title = first.split("%%%")[0].strip()
        body = normalise(body, keep_indent=False)
        m = _DATE_END.search(body)
        date = _iso(m.group(1)) if m else None
        if m:
            body = body[: m.start()].rstrip()
            n_dated += date is not None
        text = cap_words(f"{title}\n\n{body}")
        if n_words(text) >= MIN_WORDS:
            out.append((text, f"foldoc/{title}", date))
    return out, {
        "packages": {"dict-foldoc (Debian)": _deb_version("dict-foldoc")},
        "path": f"{FOLDOC_INDEX} + {FOLDOC_DICT}",
        "n_entries": n_entries,
        "n_entries_dated": n_dated,
        "format": "headword line, blank line, entry body; the trailing '(YYYY-MM-DD)' stamp is "
        "moved from the text to `date`",
    }


# ---------------------------------------------------------------- changelog


class _ChangelogParser(html.parser.HTMLParser):
    """Collect (release, date, category, item text) from Sphinx's rendering of Misc/NEWS."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.release = self.date = self.category = None
        self.items: list[dict] = []
        self.grab: str | None = None  # "h2" / "h3" / "em"
        self.buf: list[str] = []
        self.li_depth = 0
        self.item: list[str] = []
        self.skip = 0  # inside a headerlink anchor

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "a" and "headerlink" in (a.get("class") or ""):
            self.skip += 1
        elif tag in ("h2", "h3", "em") and self.li_depth == 0:
            self.grab, self.buf = tag, []
        elif tag == "li":
            self.li_depth += 1
            if self.li_depth == 1:
                self.item = []
            else:
                self.item.append("\n  * ")
        elif tag in ("br",) and self.li_depth:
            self.item.append("\n")

    def handle_endtag(self, tag):
        if tag == "a" and self.skip:
            self.skip -= 1
        elif tag == self.grab:
            text = " ".join("".join(self.buf).split())
            if tag == "h2":
                self.release, self.date, self.category = text, None, None
            elif tag == "h3":
                self.category = text
            elif tag == "em" and text.startswith("Release date:"):
                self.date = _iso(text.split(":", 1)[1].strip())
            self.grab = None
        elif tag == "p" and self.li_depth:
            self.item.append("\n")
        elif tag == "li" and self.li_depth:
            self.li_depth -= 1
            if self.li_depth == 0:
                text = "\n".join(" ".join(ln.split()) for ln in "".join(self.item).split("\n"))
                text = re.sub(r"\n{2,}", "\n", text).strip()
                if text and self.release:
                    self.items.append(
                        {"release": self.release, "date": self.date, "category": self.category, "text": text}
                    )

    def handle_data(self, data):
        if self.skip:
            return
        if self.grab:
            self.buf.append(data)
        elif self.li_depth:
            self.item.append(data.replace("\n", " "))  # source line wrapping is not content


def build_changelog(seed: int) -> tuple[list[tuple[str, str, str | None]], dict]:
    path = PY_DOC / "whatsnew" / "changelog.html.gz"
    if not path.exists():
        raise SystemExit(f"{path} missing: apt-get install -y python3.11-doc")
    parser = _ChangelogParser()
    parser.feed(gzip.decompress(path.read_bytes()).decode("utf-8"))
    parser.close()
    items = parser.items
    releases: dict[str, list[dict]] = {}
    for it in items:
        releases.setdefault(it["release"], []).append(it)
    rng = random.Random(f"{seed}/changelog")
    out = []
    for release, its in releases.items():
        date = its[0]["date"]
        docs: list[list[dict]] = []
        cur: list[dict] = []
        words, target = 0, rng.randint(*CHANGELOG_WORDS)
        for it in its:
            w = n_words(it["text"]) + 2
            if cur and words >= CHANGELOG_WORDS[0] and words + w > CHANGELOG_WORDS[1]:
                docs.append(cur)
                cur, words, target = [], 0, rng.randint(*CHANGELOG_WORDS)
            cur.append(it)
            words += w
            if words >= target:
                docs.append(cur)
                cur, words, target = [], 0, rng.randint(*CHANGELOG_WORDS)
        if cur:
            if words < MIN_WORDS and docs and sum(n_words(i["text"]) for i in docs[-1]) + words <= MAX_WORDS:
                docs[-1].extend(cur)  # a short tail joins the release's previous document
            else:
                docs.append(cur)
        for k, group in enumerate(docs):
            lines, cat = [], None
            for it in group:
                if it["category"] != cat:
                    cat = it["category"]
                    lines += ["", cat] if lines else [cat]
                lines.append("- " + it["text"].replace("\n", "\n  "))
            text = cap_words(normalise("\n".join(lines), keep_indent=True))
            if n_words(text) >= MIN_WORDS:
                out.append((text, f"changelog/{release} #{k}", date))
    return out, {
        "packages": {"python3.11-doc (Debian)": _deb_version("python3.11-doc")},
        "path": str(path),
        "n_releases": len(releases),
        "n_items": len(items),
        "grouping": f"consecutive items of one release, target length drawn from {list(CHANGELOG_WORDS)} "
        "words; category names kept as headings; date = release date",
    }


# ---------------------------------------------------------------- assembly


def assemble(domain: str, docs: list[tuple], seed: int) -> tuple[list[dict], dict]:
    """Subsample to MAX_DOCS (seeded, source order kept), assign ids, flag exact duplicates."""
    n_candidates = len(docs)
    if len(docs) > MAX_DOCS:
        keep = sorted(random.Random(f"{seed}/{domain}/subsample").sample(range(len(docs)), MAX_DOCS))
        docs = [docs[i] for i in keep]
    records, groups = [], {}
    for i, d in enumerate(docs):
        date = d[2] if len(d) > 2 else None
        records.append({"id": f"{domain}/{i:06d}", "text": d[0], "source": d[1], "date": date, "dup_of": None})
        groups.setdefault(hashlib.sha256(d[0].encode("utf-8")).hexdigest(), []).append(records[-1])
    for group in groups.values():  # the earliest-dated copy (then the lowest id) is the canonical one
        first = min(group, key=lambda r: (r["date"] is None, r["date"] or "", r["id"]))
        for r in group:
            if r is not first:
                r["dup_of"] = first["id"]
    return records, {"n_candidates": n_candidates, "subsampled": n_candidates > MAX_DOCS}


def write_gz(path: Path, records: list[dict]) -> None:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        for r in records:
            gz.write((json.dumps(r, ensure_ascii=False, sort_keys=False) + "\n").encode("utf-8"))
    _atomic_write(path, buf.getvalue())


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _per_year(records: list[dict]) -> dict[str, int]:
    years: dict[str, int] = {}
    for d in sorted(r["date"] for r in records if r["date"]):
        years[d[:4]] = years.get(d[:4], 0) + 1
    return years


TEMPORAL_CUTOFF = "2020-01-01"
TEMPORAL_BINS = [
    ("2020", "2020-01-01", "2021-01-01"),
    ("2021", "2021-01-01", "2022-01-01"),
    ("2022-23", "2022-01-01", "2024-01-01"),
]


def _temporal_suggestion(records: list[dict]) -> dict:
    """Cutoff and later bins for the temporal-shift study, with deduplicated counts.

    2020-01-01 falls between the 3.9.0 alpha 2 and alpha 3 releases; every later bin holds one
    year of development (3.9 alphas/betas, 3.10 alphas/beta, then 3.11 alpha to 3.11.2)."""
    unique = [r for r in records if r["dup_of"] is None]
    bins = [
        {"name": n, "start": a, "end": b, "n_unique": sum(a <= r["date"] < b for r in unique)}
        for n, a, b in TEMPORAL_BINS
    ]
    return {
        "cutoff": TEMPORAL_CUTOFF,
        "n_unique_before_cutoff": sum(r["date"] < TEMPORAL_CUTOFF for r in unique),
        "bins": bins,
    }


def stats(records: list[dict]) -> dict:
    w = sorted(n_words(r["text"]) for r in records)
    q = statistics.quantiles(w, n=10) if len(w) > 1 else [w[0]] * 9
    return {
        "min": w[0],
        "p10": q[0],
        "median": statistics.median(w),
        "mean": round(statistics.fmean(w), 1),
        "p90": q[8],
        "max": w[-1],
        "total": sum(w),
    }


LICENCE_NOTES = {
    "code": (
        "the model implementations of the PyPI package transformers (transformers/models/*/*.py)",
        "Apache-2.0",
        "Copyright The HuggingFace Team and the authors of each model implementation, licensed under "
        "the Apache License, Version 2.0 (https://www.apache.org/licenses/LICENSE-2.0).",
    ),
    "licenses": (
        "licence texts from the PyPI package licensedcode-data (ScanCode LicenseDB, nexB Inc.)",
        "CC-BY-4.0 (the data set); each licence text keeps its own terms",
        "License texts from ScanCode LicenseDB / licensedcode-data, Copyright (c) nexB Inc. and others, "
        "licensed under CC-BY-4.0 (https://creativecommons.org/licenses/by/4.0/). "
        "Only the text part of each *.LICENSE file is kept; YAML metadata is dropped.",
    ),
    "math": (
        "problems generated with the PyPI package mathematics-dataset 1.0.1 (DeepMind)",
        "Apache-2.0 (the generator); the generated problems are our output of it",
        "Generated with mathematics_dataset, Copyright 2018 DeepMind Technologies Limited, "
        "licensed under the Apache License, Version 2.0. Saxton et al., 'Analysing Mathematical "
        "Reasoning Abilities of Neural Models', ICLR 2019.",
    ),
    "docs": (
        "the docstrings of the code domain's files (the text transformers' API documentation is built from)",
        "Apache-2.0",
        "Copyright The HuggingFace Team and the authors of each model implementation, licensed under "
        "the Apache License, Version 2.0 (https://www.apache.org/licenses/LICENSE-2.0).",
    ),
    "encyclopedia": (
        "entries of the Free On-line Dictionary of Computing (Debian package dict-foldoc)",
        "GFDL-1.1-or-later (GNU Free Documentation License, no invariant sections)",
        "The Free On-line Dictionary of Computing, https://foldoc.org/, Editor Denis Howe. "
        "Copyright 1985 by Denis Howe. Permission is granted to copy, distribute and/or modify "
        "this document under the terms of the GNU Free Documentation License, Version 1.1 or "
        "any later version published by the Free Software Foundation; with no Invariant "
        "Sections, Front- or Back-Cover Texts. Entries here are reformatted (whitespace, "
        "date stamp moved to a field) and cut at 600 words.",
    ),
    "changelog": (
        "the CPython changelog (Misc/NEWS as rendered in whatsnew/changelog.html, Debian package python3.11-doc)",
        "PSF-2.0",
        "Copyright (c) 2001-2023 Python Software Foundation. Changelog entries written by the "
        "CPython contributors, distributed with the Python documentation under the PSF License Agreement.",
    ),
}


def attribution(manifest: dict) -> str:
    out = [
        "# Corpus snapshot: sources, licences, attribution",
        "",
        "This folder is generated by `scripts/build_snapshot.py`; do not edit it by hand.",
        "Each `<domain>.jsonl.gz` holds one JSON object per line: `id`, `text`, `source`, `date`",
        "(ISO date or null) and `dup_of` (null, or the id of the canonical copy of an identical text:",
        "the earliest-dated, then lowest id). Exact duplicates are kept but flagged, so both a",
        "deduplicated and a natural variant can be built. `manifest.json` has counts, word statistics,",
        "sha256 of every file, source versions, generator settings and per-year counts.",
        "",
    ]
    for d in DOMAINS:
        what, lic, text = LICENCE_NOTES[d]
        pk = ", ".join(f"{k} {v}" for k, v in manifest["domains"][d]["source"]["packages"].items())
        out += [
            f"## {d}",
            "",
            f"- source: {what}",
            f"- versions: {pk}",
            f"- licence: {lic}",
            f"- attribution: {text}",
            "",
        ]
    out += [
        "## Rebuild",
        "",
        "On Debian 12 with Python 3.11 (root for apt):",
        "",
        "```bash",
        "apt-get update && apt-get install -y python3.11-doc dict-foldoc",
        "python3.11 -m pip install licensedcode-data==32.1.0",
        f"python3.11 scripts/build_snapshot.py --out mimirlib/lab/snapshot --seed {manifest['seed']}",
        "```",
        "",
        "The math domain runs `mathematics-dataset` in an isolated venv (default "
        "`/tmp/mimir-mathds-venv`, created on first use with "
        f"`pip install {' '.join(MATH_PINS)}`), because the generator breaks on current sympy/numpy.",
        "The code and docs domains read the transformers package of the interpreter that runs the script "
        "(run it with the project's venv, whose lock pins it): this snapshot used transformers "
        f"{manifest['domains']['code']['source']['packages']['transformers']}; another version gives other files.",
        "",
    ]
    return "\n".join(out)


def build(out_dir: Path, seed: int, math_venv: Path, only: list[str] | None = None) -> dict:
    out_dir.mkdir(parents=True, exist_ok=True)
    builders = {
        "code": build_code,
        "licenses": build_licenses,
        "math": lambda s: build_math(s, math_venv),
        "docs": build_docs,
        "encyclopedia": build_encyclopedia,
        "changelog": build_changelog,
    }
    manifest = {
        "format": 1,
        "seed": seed,
        "min_words": MIN_WORDS,
        "max_words": MAX_WORDS,
        "max_docs_per_domain": MAX_DOCS,
        "word_definition": "whitespace-separated tokens (str.split)",
        "duplicates": "exact duplicates within a domain are kept and flagged with dup_of "
        "(id of the canonical copy: earliest date, then lowest id)",
        "domains": {},
    }
    old = out_dir / "manifest.json"
    if only and old.exists():
        manifest["domains"] = json.loads(old.read_text())["domains"]
    timings = {}
    for domain in DOMAINS:
        if only and domain not in only:
            continue
        t0 = time.perf_counter()
        docs, source_info = builders[domain](seed)
        records, sub = assemble(domain, docs, seed)
        path = out_dir / f"{domain}.jsonl.gz"
        write_gz(path, records)
        data = path.read_bytes()
        n_dup = sum(r["dup_of"] is not None for r in records)
        entry = {
            "file": path.name,
            "sha256": hashlib.sha256(data).hexdigest(),
            "bytes": len(data),
            "n_docs": len(records),
            "n_unique": len(records) - n_dup,
            "n_exact_duplicates": n_dup,
            **sub,
            "words": stats(records),
            "source": source_info,
        }
        dates = [r["date"] for r in records if r["date"]]
        if dates:
            entry["dated"] = {
                "n_dated": len(dates),
                "first": min(dates),
                "last": max(dates),
                "per_year": _per_year(records),
                "per_year_unique": _per_year([r for r in records if r["dup_of"] is None]),
            }
        if domain == "changelog":
            entry["temporal_suggestion"] = _temporal_suggestion(records)
        manifest["domains"][domain] = entry
        timings[domain] = time.perf_counter() - t0
        log(
            f"{domain}: {len(records)} docs ({n_dup} exact duplicates flagged, {sub['n_candidates']} candidates), "
            f"median {entry['words']['median']} words, {len(data) / 1e6:.2f} MB, {timings[domain]:.1f}s"
        )
    _atomic_write(out_dir / "manifest.json", (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode())
    if all(d in manifest["domains"] for d in DOMAINS):
        _atomic_write(out_dir / "ATTRIBUTION.md", attribution(manifest).encode())
    return manifest


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, help="output folder, e.g. mimirlib/lab/snapshot")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--math-venv",
        type=Path,
        default=Path("/tmp/mimir-mathds-venv"),
        help="isolated venv for mathematics-dataset (created with pinned versions if missing)",
    )
    ap.add_argument("--only", nargs="+", choices=DOMAINS, help="rebuild only these domains (debugging)")
    ap.add_argument("--emit-math", metavar="JSON", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.emit_math:
        emit_math(json.loads(args.emit_math))
        return
    if args.out is None:
        ap.error("--out is required")
    t0 = time.perf_counter()
    build(args.out, args.seed, args.math_venv, args.only)
    log(f"snapshot written to {args.out} in {time.perf_counter() - t0:.0f}s")


if __name__ == "__main__":
    main()
