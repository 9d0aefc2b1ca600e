"""Exercises and quizzes at the end of every chapter, and the library behind them (mimirlib.teach.exercises).

From the sources (fast): every chapter of notebooks/ORDER has at least 3 exercises of at least 2
kinds (at least 30 in the book), each with a solution hidden in a dropdown; labels are unique and
named after their chapter; each code exercise is one nbgrader solution cell followed by one locked
check cell that compares with the library; "predict, then run" solutions state glued numbers; each
chapter ends with a quiz of 3-5 questions whose answers are dropdowns. From the library: the keys,
the checks (a missing, a wrong and a right answer) and the helpers. From the rendered smoke book
(slow): every solution and quiz answer is collapsed in the HTML, and in Chromium when it is there.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import jupytext
import numpy as np
import pandas as pd
import pytest

from mimirlib.core import attacks
from mimirlib.teach import exercises
from mimirlib.core import range_scores
from mimirlib.core.attacks import AttackInputs
from mimirlib.core.models import load_model
from mimirlib.runner import list_notebooks
from mimirlib.core.signals import TokenSignals

from .conftest import synthetic_texts
from .test_book import smoke_book  # noqa: F401  (the fixture book_html falls back on)
from .test_browser import browser, site  # noqa: F401  (the served smoke book and Chromium)

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = list_notebooks(ROOT / "notebooks")
KINDS = ("Predict, then run", "Change a parameter", "Extend the library")
MIN_PER_CHAPTER, MIN_KINDS, MIN_TOTAL = 3, 2, 30
QUIZ_QUESTIONS = (3, 5)
EXERCISES_HEADING, QUIZ_HEADING = "## Exercises", "## Self-check quiz"

EXERCISE = re.compile(r"^(:{3,})\{exercise\}\s+(?P<title>.+?)\s*\n:label:\s*(?P<label>\S+)\s*$", re.M)
SOLUTION = re.compile(r"^(:{3,})\{solution\}\s+(?P<label>\S+)\s*\n(?P<options>(?::[a-z-]+:.*\n)*)", re.M)
GLUE = re.compile(r"\{glue(?::[a-z]+)?\}`[^`]+`")
QUESTION = re.compile(r"^\*\*(\d+)\.\*\*", re.M)
DROPDOWN = re.compile(r"^:{3,}\{dropdown\}", re.M)
NUMBER_LITERAL = re.compile(r"(?<![\w.])\d+\.\d+")


@dataclass
class Chapter:
    stem: str
    exercises: dict = field(default_factory=dict)  # label -> title
    solutions: dict = field(default_factory=dict)  # label -> (options, body)
    code: list = field(default_factory=list)  # (solution cell, the code cell after it or None)
    before: str = ""  # markdown before "## Exercises"
    quiz: str = ""  # markdown from "## Self-check quiz" on
    cells_after_quiz: list = field(default_factory=list)


def solution_body(text: str, start: int, fence: str) -> str:
    end = re.compile(rf"^{fence}\s*$", re.M).search(text, start)
    return text[start : end.start() if end else len(text)]


def read_chapter(stem: str) -> Chapter:
    nb = jupytext.read(ROOT / "notebooks" / f"{stem}.py")
    ch = Chapter(stem)
    part = "before"
    for i, cell in enumerate(nb.cells):
        src = cell.source
        if cell.cell_type == "markdown":
            if EXERCISES_HEADING in src.split("\n"):
                head, src = src.split(EXERCISES_HEADING, 1)
                ch.before += head
                part = "exercises"
            if QUIZ_HEADING in src.split("\n"):
                src, quiz = src.split(QUIZ_HEADING, 1)
                ch.quiz += quiz
                part_after = "quiz"
            else:
                part_after = part
            if part == "before":
                ch.before += src
            elif part in ("exercises",):
                ch.exercises |= {m["label"]: m["title"] for m in EXERCISE.finditer(src)}
                for m in SOLUTION.finditer(src):
                    ch.solutions[m["label"]] = (m["options"], solution_body(src, m.end(), m.group(1)))
            elif part == "quiz":
                ch.quiz += "\n" + src
            part = part_after
        else:
            if part == "quiz":
                ch.cells_after_quiz.append(cell)
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("solution"):
                nxt = next((c for c in nb.cells[i + 1 :] if c.cell_type == "code"), None)
                ch.code.append((cell, nxt))
    return ch


@pytest.fixture(scope="module")
def chapters() -> dict[str, Chapter]:
    return {stem: read_chapter(stem) for stem in CHAPTERS}


@pytest.fixture(params=CHAPTERS)
def chapter(request, chapters) -> Chapter:
    """One chapter of notebooks/ORDER (each test runs once per chapter, so a failure names it)."""
    return chapters[request.param]


def kind_of(title: str) -> str | None:
    return next((k for k in KINDS if title.startswith(k + ":")), None)


# ----------------------------------------------------------------------------- the sources


def test_chapter_has_exercises_of_several_kinds(chapter):
    stem = chapter.stem
    assert len(chapter.exercises) >= MIN_PER_CHAPTER, f"{stem}: {len(chapter.exercises)} exercises"
    kinds = {kind_of(t) for t in chapter.exercises.values()}
    assert None not in kinds, f"{stem}: an exercise title does not start with one of {KINDS}"
    assert len(kinds) >= MIN_KINDS, f"{stem}: only {kinds}"


def test_the_book_has_enough_exercises_with_unique_labels(chapters):
    labels = [label for ch in chapters.values() for label in ch.exercises]
    assert len(labels) >= MIN_TOTAL, f"{len(labels)} exercises in the book"
    assert len(labels) == len(set(labels))


def test_labels_are_named_after_their_chapter(chapter):
    for n, label in enumerate(chapter.exercises, start=1):
        assert label == f"ex-{chapter.stem}-{n}", f"{chapter.stem}: exercise {n} is labelled {label!r}"


def test_every_exercise_has_one_hidden_solution(chapter):
    ch = chapter
    assert set(ch.solutions) == set(ch.exercises), f"{ch.stem}: solutions {set(ch.solutions) ^ set(ch.exercises)}"
    for label, (options, body) in ch.solutions.items():
        assert re.search(r"^:class:\s*dropdown\s*$", options, re.M), f"{label}: solution not a dropdown"
        assert body.strip(), f"{label}: empty solution"


def test_predict_then_run_solutions_state_glued_numbers_not_typed_ones(chapter):
    for label, title in chapter.exercises.items():
        body = chapter.solutions.get(label, ("", ""))[1]
        if kind_of(title) == KINDS[0]:
            assert GLUE.search(body), f"{label}: a 'predict, then run' solution glues its measured value"
        prose = GLUE.sub("", body)
        assert not NUMBER_LITERAL.search(prose), f"{label}: a typed number in its solution"


def test_code_exercises_are_an_nbgrader_solution_and_a_locked_check(chapter):
    ch = chapter
    extend = [label for label, t in ch.exercises.items() if kind_of(t) == KINDS[2]]
    coded = []
    for cell, check in ch.code:
        meta = cell.metadata["nbgrader"]
        label = meta["grade_id"].removesuffix("-code")
        coded.append(label)
        assert meta["grade_id"] == f"{label}-code" and label in ch.exercises, meta["grade_id"]
        assert "solution" in cell.metadata.get("tags", []), label
        assert meta.get("grade") is False and meta.get("locked") is False, label
        src = cell.source
        assert src.count("### BEGIN SOLUTION") == 1 and src.count("### END SOLUTION") == 1, label
        assert src.index("### BEGIN SOLUTION") < src.index("### END SOLUTION"), label
        assert check is not None, f"{label}: no check cell after the solution"
        cm = check.metadata.get("nbgrader", {})
        assert cm.get("grade_id") == f"{label}-check", f"{label}: the next code cell is not its check"
        assert cm.get("grade") is True and cm.get("locked") is True and cm.get("points", 0) > 0, label
        assert "autocheck" in check.metadata.get("tags", []), label
        assert "exercises.check_" in check.source, f"{label}: the check compares with the library"
        assert not NUMBER_LITERAL.search(check.source), f"{label}: a typed number in the check"
    assert set(extend) <= set(coded), (
        f"{ch.stem}: 'extend the library' exercises without code: {set(extend) - set(coded)}"
    )
    assert len(coded) == len(set(coded)), ch.stem


def test_chapter_ends_with_a_quiz_of_dropdown_answers(chapter):
    lo, hi = QUIZ_QUESTIONS
    stem, quiz = chapter.stem, chapter.quiz
    questions = QUESTION.findall(quiz)
    assert lo <= len(questions) <= hi, f"{stem}: {len(questions)} quiz questions"
    assert questions == [str(i) for i in range(1, len(questions) + 1)], stem
    assert len(DROPDOWN.findall(quiz)) == len(questions), f"{stem}: one dropdown answer per question"
    assert "{exercise}" not in quiz and not chapter.cells_after_quiz, f"{stem}: the quiz comes last"


def test_source_parser_sees_what_it_must_reject():
    """The checks above are not vacuous: the patterns find a label, a dropdown and a typed number."""
    text = (
        ":::{exercise} Predict, then run: x\n:label: ex-a-1\n\n:::\n"
        ":::{solution} ex-a-1\n:class: dropdown\n\n0.61\n:::\n"
    )
    assert [m["label"] for m in EXERCISE.finditer(text)] == ["ex-a-1"]
    (m,) = SOLUTION.finditer(text)
    assert m["label"] == "ex-a-1" and ":class: dropdown" in m["options"]
    body = solution_body(text, m.end(), m.group(1))
    assert NUMBER_LITERAL.search(GLUE.sub("", body)) and not GLUE.search(body)
    assert not NUMBER_LITERAL.search(GLUE.sub("", "AUC {glue:text}`x:.3f` at k = 5%"))


# ----------------------------------------------------------------------------- the library


def sig(logprob) -> TokenSignals:
    lp = np.asarray(logprob, dtype=np.float32)
    return TokenSignals(lp, np.zeros_like(lp), np.ones_like(lp))


def test_keys_follow_the_direction_convention(monkeypatch):
    monkeypatch.delenv(exercises.KEYS_ENV, raising=False)
    keys = exercises.load_keys()  # the chapters' own solution regions, read from this checkout
    ratio, pct, median = (keys.attacks[n].fn for n in ("loss_ratio", "token_percentile", "median_logprob"))
    easy, hard = sig([-1.0, -1.0, -1.0]), sig([-3.0, -3.0, -3.0])
    ref = sig([-2.0, -2.0, -2.0])
    # a text the target predicts better (relative to the reference) scores higher: more likely a member
    assert ratio(AttackInputs("a", easy, ref)) > ratio(AttackInputs("a", hard, ref))
    assert ratio(AttackInputs("a", easy, ref)) == pytest.approx(-0.5)
    assert keys.attacks["loss_ratio"].needs == {"reference"}
    x = AttackInputs("a", sig([-5.0] + [-1.0] * 9))
    assert pct(x) == pytest.approx(np.percentile(x.target.logprob, 10))
    assert median(x) == pytest.approx(-1.0)
    assert keys.attacks["max_k"].fn(x) == pytest.approx(-1.0)  # the highest 20% of the log-likelihoods
    assert keys.attacks["max_k"].fn(AttackInputs("a", sig([-1.0] * 10))) > keys.attacks["max_k"].fn(
        AttackInputs("a", sig([-2.0] * 10))
    )
    backbone = keys.backbones["loss_ratio"].fn
    assert np.allclose(backbone(np.array([-1.0, -3.0]), np.array([-2.0, -2.0]), None, None), [-0.5, -1.5])
    # loading the keys registers nothing a student could call
    assert "median_logprob" not in attacks.ATTACKS and "loss_ratio" not in range_scores.BACKBONES
    assert "max_k" not in attacks.ATTACKS


def test_no_key_is_in_the_package_and_the_keys_file_is_found_or_named(tmp_path, monkeypatch):
    """The package holds no solution (issue 31): the keys are the chapters' solution regions, which
    the handouts write into the instructor's keys/; a handout without them fails in one line."""
    chapters = {stem: (ROOT / "notebooks" / f"{stem}.py").read_text(encoding="utf-8") for stem in CHAPTERS}
    regions = [r for text in chapters.values() for r in exercises.solution_regions(text)]
    assert len(regions) >= 8
    package = [p.read_text(encoding="utf-8") for p in (ROOT / "mimirlib").rglob("*.py")]
    for region in regions:
        body = [line.strip() for line in region.splitlines() if line.strip().startswith("return")]
        assert body and not any(body[0] in src for src in package), f"a key is in the package: {body[0]}"
    for name in ("ATTACK_KEYS", "BACKBONE_KEYS", "median_score", "ratio_backbone", "loss_ratio_score"):
        assert not hasattr(exercises, name), name
    keys_file = tmp_path / "exercise_keys.py"
    keys_file.write_text(exercises.keys_source(chapters), encoding="utf-8")
    monkeypatch.setenv(exercises.KEYS_ENV, str(keys_file))
    keys = exercises.load_keys()
    assert keys.source == str(keys_file) and set(keys.attacks) == {
        "loss_ratio",
        "token_percentile",
        "median_logprob",
        "max_k",
    }
    monkeypatch.setenv(exercises.KEYS_ENV, str(tmp_path / "nowhere.py"))
    with pytest.raises(exercises.ExerciseCheckFailed, match=r"^no instructor keys at .*nowhere\.py") as e:
        exercises.load_keys()
    assert "\n" not in str(e.value)
    monkeypatch.delenv(exercises.KEYS_ENV)
    monkeypatch.setattr(exercises, "_checkout_chapters", lambda: None)  # a copy installed outside a checkout
    with pytest.raises(exercises.ExerciseCheckFailed, match=r"^no instructor keys: only the instructor"):
        exercises.load_keys()


def test_check_close_passes_equal_values_and_names_a_difference():
    assert exercises.check_close("x", 0.7, 0.7) == 0.7
    with pytest.raises(exercises.ExerciseCheckFailed, match="AUC of x: got 0.7"):
        exercises.check_close("AUC of x", 0.7, 0.7 + 1e-6)
    with pytest.raises(exercises.ExerciseCheckFailed):
        exercises.check_close("x", float("nan"), 0.5)


@pytest.fixture
def private_registries(monkeypatch, tmp_path):
    """Registrations in a test stay in the test (copies of both registries), signals in a tmp cache."""
    monkeypatch.setattr(attacks, "ATTACKS", dict(attacks.ATTACKS))
    monkeypatch.setattr(range_scores, "BACKBONES", dict(range_scores.BACKBONES))
    monkeypatch.setenv("MIMIR_CACHE", str(tmp_path / "cache"))


def test_check_attack_fails_on_a_stub_and_a_wrong_answer_and_passes_the_key(tiny_model_dir, private_registries):
    m = load_model(str(tiny_model_dir))
    texts = synthetic_texts(10, seed=5)
    members, nonmembers = texts[:5], texts[5:]
    with pytest.raises(exercises.ExerciseCheckFailed, match="no attack 'median_logprob' is registered"):
        exercises.check_attack("median_logprob", m, members, nonmembers)
    key = exercises.texts_auc(m, members, nonmembers, "median_logprob", key=True)
    assert key != 0.5  # else a flipped sign would reproduce it

    @attacks.register("median_logprob", "wrong: the sign flipped")
    def flipped(x):
        return -float(np.median(x.target.logprob))

    with pytest.raises(exercises.ExerciseCheckFailed, match="AUC of attack 'median_logprob'"):
        exercises.check_attack("median_logprob", m, members, nonmembers)

    @attacks.register("median_logprob", "Median log-likelihood")
    def right(x):
        return float(np.median(x.target.logprob))

    assert exercises.check_attack("median_logprob", m, members, nonmembers) == pytest.approx(key)


def test_check_attack_needs_the_reference_the_key_needs(tiny_model_dir, private_registries):
    m = load_model(str(tiny_model_dir))
    texts = synthetic_texts(4, seed=6)

    @attacks.register("loss_ratio", "Loss ratio", needs=("reference",))
    def ratio(x):
        return -x.target.nll / x.reference.nll

    with pytest.raises(ValueError, match="needs (a )?reference"):
        exercises.check_attack("loss_ratio", m, texts[:2], texts[2:])
    # a model against itself: every ratio is -1, AUC 0.5, and the student's code agrees with the key
    assert exercises.check_attack("loss_ratio", m, texts[:2], texts[2:], reference=m) == 0.5


def test_texts_auc_matches_the_chapter_attacks_and_reads_the_cache(tiny_model_dir, private_registries):
    from dataclasses import replace

    from mimirlib.core import metrics
    from mimirlib.core.scoring import score_texts
    from mimirlib.core.signals import ScoringOptions, SignalCache

    m = load_model(str(tiny_model_dir))
    texts = synthetic_texts(8, seed=7)
    # window explicit: a model without weights cannot tell its own context
    kw = dict(options=ScoringOptions(window=64, stride=32))
    opts = ScoringOptions(cache=SignalCache.default(), window=64, stride=32)
    s = score_texts(texts, m, ["min_k"], attack_params={"min_k": {"k": 0.05}}, options=opts)
    s = s["min_k"].to_numpy()

    # a model whose weights cannot be read can only be read from the cache: the exercise adds no forward pass
    def no_weights():
        raise RuntimeError("cache only")

    cached_only = replace(m, _model=None, read_weights=no_weights)
    auc = exercises.texts_auc(cached_only, texts[:4], texts[4:], "min_k", k=0.05, **kw)
    assert auc == pytest.approx(metrics.auc(s[:4], s[4:]))
    with pytest.raises(RuntimeError, match="cache only"):
        exercises.texts_auc(cached_only, synthetic_texts(2, seed=99), texts[:1], "loss", **kw)


def test_check_backbone_fails_on_a_stub_and_passes_the_key(private_registries):
    rng = np.random.default_rng(0)
    own, other = -rng.uniform(1, 4, 20), -rng.uniform(1, 4, 20)
    y = np.arange(20) < 10
    own[y] += 0.5
    with pytest.raises(exercises.ExerciseCheckFailed, match="no backbone 'loss_ratio'"):
        exercises.check_backbone("loss_ratio", own, other, y)

    @range_scores.register_backbone("loss_ratio", "Loss ratio", needs_reference=True)
    def ratio(own, other, z_own, z_other, a=1.0):
        return -(own / other)

    assert exercises.check_backbone("loss_ratio", own, other, y) == pytest.approx(
        exercises.backbone_auc("loss_ratio", own, other, y, key=True)
    )

    @range_scores.register_backbone("loss_ratio", "wrong: a difference", needs_reference=True)
    def wrong(own, other, z_own, z_other, a=1.0):
        return own - other

    with pytest.raises(exercises.ExerciseCheckFailed, match="AUC of backbone 'loss_ratio'"):
        exercises.check_backbone("loss_ratio", own, other, y)


def test_frame_helpers():
    frame = pd.DataFrame({"is_member": [1, 1, 0, 0], "text": list("abcd"), "s": [0.9, 0.2, 0.5, 0.1]})
    assert exercises.split_texts(frame) == (["a", "b"], ["c", "d"])
    assert exercises.frame_auc(frame, "s") == pytest.approx(0.75)
    by_step = pd.DataFrame(
        {"target": ["t", "t", "u"], "attack": ["loss"] * 3, "step": [5, 9, 9], "auc": [0.5, 0.6, 0.7]}
    )
    assert exercises.final_checkpoint_auc(by_step, "t", "loss") == 0.6
    with pytest.raises(ValueError, match="no AUC of 'zlib'"):
        exercises.final_checkpoint_auc(by_step, "t", "zlib")


def test_trimmed_range_auc_and_flagged_share(tiny_model_dir, private_registries):
    pool = np.array([[0.0, 1.0, 9.0], [0.5, 0.6, 0.7], [0.0, 0.1, 0.2], [0.3, 0.3, 0.3]])
    y = np.array([True, True, False, False])
    assert exercises.trimmed_range_auc(pool, y, 0.0, 1.0) == 1.0  # plain means 3.33, 0.6 vs 0.1, 0.3
    m = load_model(str(tiny_model_dir))
    texts = synthetic_texts(12, seed=8)
    share = exercises.flagged_share(m, texts[:10], texts[10:], "loss", 0.2)
    s = exercises.text_scores(m, texts, "loss")
    from mimirlib.core import metrics

    assert share == np.mean(s[10:] > metrics.threshold_at_fpr(s[:10], 0.2))


# ----------------------------------------------------------------------------- the rendered book


@pytest.fixture(scope="module")
def book_html(request, tmp_path_factory):
    """The smoke book's HTML folder: the one tests/test_book.py built earlier in this session, else built."""
    from .test_browser import built_earlier

    html = built_earlier(tmp_path_factory.getbasetemp())
    if html is None:
        work, _, _ = request.getfixturevalue("smoke_book")
        html = work / "_build" / "html"
    return html


DIV_OPEN = re.compile(r'<div class="(?P<cls>[^"]*)"[^>]*>')
DETAILS = re.compile(r"<details(?P<attrs>[^>]*)>")


@pytest.mark.slow
def test_rendered_solutions_and_answers_are_collapsed(book_html, chapters):
    for stem, ch in chapters.items():
        page = (book_html / "book" / "executed" / f"{stem}.html").read_text(encoding="utf-8")
        classes = [m["cls"].split() for m in DIV_OPEN.finditer(page)]
        exercises_ = [c for c in classes if "exercise" in c and "admonition" in c]
        solutions = [c for c in classes if "solution" in c and "admonition" in c]
        assert len(exercises_) == len(ch.exercises), f"{stem}: {len(exercises_)} exercises rendered"
        assert len(solutions) == len(ch.solutions), f"{stem}: {len(solutions)} solutions rendered"
        assert all("dropdown" in c for c in solutions), f"{stem}: a solution is not a dropdown"
        assert "togglebutton.js" in page, f"{stem}: no sphinx-togglebutton script to fold the dropdowns"
        assert re.search(r"togglebuttonSelector = '[^']*\.admonition\.dropdown", page), f"{stem}: dropdowns not folded"
        quiz = page[page.index('id="self-check-quiz"') :]
        answers = [m["attrs"] for m in DETAILS.finditer(quiz) if "sd-dropdown" in m["attrs"]]
        assert len(answers) == len(QUESTION.findall(ch.quiz)), f"{stem}: quiz answers rendered"
        assert not any(re.search(r"\bopen\b", a) for a in answers), f"{stem}: a quiz answer is open"
        assert "### BEGIN SOLUTION" not in re.sub(r"(?s)<details.*?</details>", "", page), (
            f"{stem}: solution code shown outside a collapsed cell"
        )


def test_nbgrader_metadata_is_json_in_the_sources():
    """jupytext reads the nbgrader={...} cell options as JSON (what nbgrader's validator expects)."""
    nb = jupytext.read(ROOT / "notebooks" / "main_results.py")
    metas = [c.metadata["nbgrader"] for c in nb.cells if "nbgrader" in c.metadata]
    assert metas and all(isinstance(m, dict) and m["schema_version"] == 3 for m in metas)
    assert json.loads(json.dumps(metas)) == metas


def test_book_renders_exercises_and_lists_the_instructors_page():
    import yaml

    cfg = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    extensions = cfg["sphinx"]["config"]["extensions"]
    assert "sphinx_exercise" in extensions and "sphinx_togglebutton" in extensions
    assert "colon_fence" in cfg["parse"]["myst_enable_extensions"]
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    teaching = [p for p in toc["parts"] if p.get("caption") == "Teaching"]
    assert teaching and {"file": "book/instructors"} in teaching[0]["chapters"]


def test_instructors_page_plans_every_exercise_and_types_no_measured_number():
    page = (ROOT / "book" / "instructors.md").read_text(encoding="utf-8")
    planned = set(re.findall(r"\{ref\}`(ex-[a-z_]+-\d+) <\1>`", page))
    every = {label for stem in CHAPTERS for label in read_chapter(stem).exercises}
    assert every <= planned, f"exercises the plan does not place: {sorted(every - planned)}"
    assert planned <= every, f"labels the plan names that no chapter has: {sorted(planned - every)}"
    assert page.count("## Session ") == 2 and "90 minutes" in page
    assert not NUMBER_LITERAL.search(GLUE.sub("", page)), "measured numbers are glued, never typed"
    assert "mimirlib.teach.classroom unpack" in page and "make pack" in page


def test_iterations_auc_averages_per_iteration_and_pools_the_scores():
    y = np.array([True, True, False, False])
    s = np.array([[0.9, 0.1, 0.4, 0.2], [0.1, 0.9, 0.4, 0.2]])
    one, pooled = exercises.iterations_auc(s, y)
    assert one == pytest.approx(0.5)  # each iteration ranks one IN range last
    assert pooled == 1.0  # averaged, both IN ranges score 0.5, above 0.4 and 0.2


# What a reader's browser shows: the body of each solution (everything but its title) and of each
# quiz answer, as (parts, parts visible), once sphinx-togglebutton has folded the dropdowns.
FOLDED_JS = """
const shown = e => e.checkVisibility({visibilityProperty: true, contentVisibilityAuto: true});
const sols = Array.from(document.querySelectorAll('div.solution.dropdown')).map(d => {
  const body = Array.from(d.children).filter(c => !c.classList.contains('admonition-title'));
  return [body.length, body.filter(shown).length];
});
const answers = Array.from(document.querySelectorAll('details.sd-dropdown')).map(d => {
  const body = Array.from(d.children).filter(c => c.tagName !== 'SUMMARY');
  return [body.length, body.filter(shown).length];
});
return [document.querySelectorAll('div.solution.dropdown button.toggle-button').length, sols, answers];
"""
OPEN_FIRST_JS = """
document.querySelector('div.solution.dropdown button.toggle-button').click();
document.querySelector('details.sd-dropdown summary').click();
const shown = e => e.checkVisibility({visibilityProperty: true, contentVisibilityAuto: true});
const s = document.querySelector('div.solution.dropdown'), d = document.querySelector('details.sd-dropdown');
return [Array.from(s.children).filter(c => !c.classList.contains('admonition-title')).some(shown),
        Array.from(d.children).filter(c => c.tagName !== 'SUMMARY').some(shown)];
"""


def wait_for_folded(drv, expected: int, timeout: float = 20.0):
    """The page's FOLDED_JS reading once the ``expected`` solutions are on the page and each has its
    toggle button (or after ``timeout``): a page still loading reads 0 solutions and 0 buttons."""
    import time

    end = time.monotonic() + timeout
    while True:
        state = drv.execute_script(FOLDED_JS)
        if (len(state[1]) >= expected and state[0] >= len(state[1])) or time.monotonic() > end:
            return state
        time.sleep(0.1)


@pytest.mark.slow
def test_solutions_and_answers_stay_folded_in_a_browser(request, chapters):
    """In Chromium (skipped without it), every solution and quiz answer is folded until clicked."""
    drv, served = request.getfixturevalue("browser"), request.getfixturevalue("site")
    for stem, ch in chapters.items():
        drv.get(served.url + f"book/executed/{stem}.html")
        buttons, solutions, answers = wait_for_folded(drv, len(ch.solutions))
        assert len(solutions) == len(ch.solutions) == buttons, f"{stem}: {buttons} toggles, {len(solutions)} solutions"
        assert all(n > 0 and shown == 0 for n, shown in solutions), f"{stem}: a solution shows: {solutions}"
        assert len(answers) >= len(QUESTION.findall(ch.quiz)), f"{stem}: quiz answers rendered"
        assert all(n > 0 and shown == 0 for n, shown in answers), f"{stem}: an answer shows: {answers}"
    # the check can fail: a click unfolds the first solution and the first answer
    assert drv.execute_script(OPEN_FIRST_JS) == [True, True]
