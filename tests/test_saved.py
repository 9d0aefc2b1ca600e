"""A chapter's kept results (mimirlib.runner.saved): kept only under the runner, read back only for the
same key, without weights and without the instructor's absolute cache path; and a chapter's handout
turned into one that reads them (mimirlib.teach.handouts.reusing_saved)."""

from __future__ import annotations

import shutil
import types

import nbformat
import pytest

from mimirlib.core.models import load_model
from mimirlib.experiments.params import Params
from mimirlib.runner import saved
from mimirlib.teach import handouts

CHAPTER = types.ModuleType("mimirlib.experiments.fake_chapter")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MIMIR_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv(saved.KEEP_ENV, "1")
    monkeypatch.delenv(saved.REQUIRE_ENV, raising=False)
    return tmp_path / "cache"


def never():
    raise AssertionError("computed although a kept result was there")


def test_keep_writes_nothing_outside_the_runner(cache, monkeypatch):
    monkeypatch.delenv(saved.KEEP_ENV)
    p = Params({"seed": 0})
    assert saved.keep(CHAPTER, p, run={"auc": 0.7}) is None
    assert not cache.exists()
    assert saved.reuse(CHAPTER, p, "run", lambda: "computed") == "computed"


def test_a_kept_result_is_read_back_for_the_same_key_only(cache):
    p = Params({"seed": 0, "attacks": ["loss"], "batch_size": 16, "engine": "local"})
    path = saved.keep(CHAPTER, p, run={"auc": 0.7}, other=[1, 2])
    assert path.is_file() and path.is_relative_to(cache / "runs" / "fake_chapter")
    assert saved.reuse(CHAPTER, p, "run", never) == {"auc": 0.7}
    assert saved.reuse(CHAPTER, p, "other", never) == [1, 2]
    # where forward passes run is not what a chapter computes: same key
    assert saved.reuse(CHAPTER, p.replace(batch_size=64, engine="ray"), "run", never) == {"auc": 0.7}
    # another parameter, another name, or another mimirlib: computed
    assert saved.reuse(CHAPTER, p.replace(seed=1), "run", lambda: "computed") == "computed"
    assert saved.reuse(CHAPTER, p, "after", lambda: "computed") == "computed"


def test_the_key_holds_the_library_digest(cache, monkeypatch):
    p = Params({"seed": 0})
    before = saved.saved_path(CHAPTER, p)
    monkeypatch.setattr(saved, "code_digest", lambda: "another-mimirlib")
    assert saved.saved_path(CHAPTER, p) != before


def test_keeping_drops_the_results_of_another_library_and_keeps_other_parameters(cache, monkeypatch):
    p = Params({"seed": 0})
    old = saved.keep(CHAPTER, p, run=1)
    other_params = saved.keep(CHAPTER, p.replace(seed=1), run=2)
    legacy = old.with_name("0123456789abcdef0123.pkl")  # named before the digest led the name
    legacy.write_bytes(b"x")
    monkeypatch.setattr(saved, "code_digest", lambda: "another-mimirlib")
    new = saved.keep(CHAPTER, p, run=3)
    assert sorted(f.name for f in new.parent.iterdir()) == [new.name]
    assert not old.exists() and not other_params.exists() and not legacy.exists()
    newer_params = saved.keep(CHAPTER, p.replace(seed=1), run=4)
    assert {f.name for f in new.parent.iterdir()} == {new.name, newer_params.name}
    assert saved.reuse(CHAPTER, p, "run", never) == 3


def test_a_missing_result_stops_in_one_line_when_saved_results_are_required(cache, monkeypatch):
    monkeypatch.setenv(saved.REQUIRE_ENV, "1")
    with pytest.raises(saved.SavedResultsMissing, match=r"fake_chapter: no saved 'run'.*make book"):
        saved.reuse(CHAPTER, Params({"seed": 0}), "run", never)


def test_what_does_not_pickle_is_not_kept_and_leaves_no_file(cache):
    with pytest.warns(UserWarning, match="fake_chapter: results not kept"):
        assert saved.keep(CHAPTER, Params({"seed": 0}), run=lambda: 1) is None
    assert list((cache / "runs" / "fake_chapter").iterdir()) == []


def test_a_damaged_file_is_computed_again(cache):
    p = Params({"seed": 0})
    saved.keep(CHAPTER, p, run=1).write_bytes(b"not a pickle")
    with pytest.warns(UserWarning, match="unreadable"):
        assert saved.reuse(CHAPTER, p, "run", lambda: "computed") == "computed"


def test_a_kept_model_comes_back_without_weights_from_a_moved_cache(cache, tiny_model_dir, tmp_path, monkeypatch):
    folder = cache / "lab" / "models" / "tiny"
    shutil.copytree(tiny_model_dir, folder)
    model = load_model(str(folder))
    assert model.weights_loaded
    p = Params({"seed": 0, "dtype": "float32"})
    saved.keep(CHAPTER, p, run={"model": model, "where": folder, "also": model})
    # a classroom pack unpacked elsewhere: the same cache under another absolute path
    moved = tmp_path / "student" / "cache"
    shutil.copytree(cache, moved)
    shutil.rmtree(cache)
    monkeypatch.setenv("MIMIR_CACHE", str(moved))
    back = saved.reuse(CHAPTER, p, "run", never)
    assert back["where"] == moved / "lab" / "models" / "tiny"
    assert back["model"].name == str(moved / "lab" / "models" / "tiny") and back["model"] is back["also"]
    assert not back["model"].weights_loaded  # read on first use, from the moved folder
    assert back["model"].cache_id == load_model(str(back["where"]), weights=False).cache_id
    assert back["model"].model.config.hidden_size == model.model.config.hidden_size


def test_params_pickle():
    import pickle

    p = Params({"seed": 0, "attacks": ["loss"]})
    assert dict(pickle.loads(pickle.dumps(p))) == dict(p)


def chapter_notebook(*cells: str):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    return nb


def test_a_handout_reads_what_its_chapter_kept_and_drops_the_keep_cell():
    nb = chapter_notebook(
        "p = exp.Params.from_cell(globals())",
        "run = exp.run(p)\nprint(run.cache_note)",
        "saved.keep(exp, p, run=run, after=after)",
        "after = after_paper.run(\n    run.suite, p\n)\nshow(after)",
    )
    out = handouts.reusing_saved(nb, "ch.py")
    sources = [c.source for c in out.cells]
    assert sources == [
        "p = exp.Params.from_cell(globals())",
        'run = saved.reuse(exp, p, "run", lambda: exp.run(p))\nprint(run.cache_note)',
        'after = saved.reuse(exp, p, "after", lambda: after_paper.run(\n    run.suite, p\n))\nshow(after)',
    ]
    compile("\n".join(sources), "handout", "exec")


def test_a_kept_name_not_assigned_exactly_once_is_one_line_naming_it():
    nb = chapter_notebook("run = exp.run(p)", "saved.keep(exp, p, run=run, offline=offline)")
    with pytest.raises(handouts.HandoutError, match="ch.py: saved.keep names offline, not assigned"):
        handouts.reusing_saved(nb, "ch.py")
    twice = chapter_notebook("run = exp.run(p)", "run = exp.run(p)", "saved.keep(exp, p, run=run)")
    with pytest.raises(handouts.HandoutError, match="names run"):
        handouts.reusing_saved(twice, "ch.py")


def test_a_notebook_that_keeps_nothing_is_unchanged():
    nb = chapter_notebook("run = exp.run(p)", "saved.keep_other(run)")
    out = handouts.reusing_saved(nb, "ch.py")
    assert [c.source for c in out.cells] == ["run = exp.run(p)", "saved.keep_other(run)"]
