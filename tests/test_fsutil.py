"""Writing a folder atomically: a reader sees the old folder or the new one, never a mixture."""

import os

import pytest

from mimirlib.fsutil import replace_dir, staged_dir, write_text_atomic


def names(folder):
    return sorted(p.name for p in folder.iterdir())


def test_staged_dir_creates_then_replaces_and_leaves_no_siblings(tmp_path):
    dest = tmp_path / "deep" / "out"
    with staged_dir(dest) as tmp:
        assert tmp.parent == dest.parent and not dest.exists()
        (tmp / "a.txt").write_text("first")
    assert (dest / "a.txt").read_text() == "first"
    with staged_dir(dest) as tmp:
        (tmp / "b.txt").write_text("second")
        assert (dest / "a.txt").exists()  # the old folder stays readable until the swap
    assert names(dest) == ["b.txt"]
    assert names(dest.parent) == ["out"]


def test_a_failure_keeps_the_old_folder_and_removes_the_new_one(tmp_path):
    dest = tmp_path / "out"
    dest.mkdir()
    (dest / "old.txt").write_text("kept")
    with pytest.raises(RuntimeError, match="boom"):
        with staged_dir(dest) as tmp:
            (tmp / "half.txt").write_text("half")
            raise RuntimeError("boom")
    assert names(dest) == ["old.txt"]
    assert names(tmp_path) == ["out"]


def test_replace_dir_puts_the_old_folder_back_if_the_swap_fails(tmp_path, monkeypatch):
    dest, src = tmp_path / "out", tmp_path / "new"
    dest.mkdir()
    (dest / "old.txt").write_text("kept")
    src.mkdir()
    real = os.replace

    def failing(a, b):
        if str(a) == str(src):
            raise OSError("disk full")
        return real(a, b)

    monkeypatch.setattr(os, "replace", failing)
    with pytest.raises(OSError, match="disk full"):
        replace_dir(src, dest)
    assert names(dest) == ["old.txt"] and src.is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new", "out"]


def test_a_page_is_written_whole_and_leaves_no_temporary_file(tmp_path):
    page = tmp_path / "new" / "page.md"
    assert write_text_atomic(page, "old é\n") == page and page.read_text(encoding="utf-8") == "old é\n"
    write_text_atomic(page, "new\n")
    assert page.read_text() == "new\n" and sorted(p.name for p in page.parent.iterdir()) == ["page.md"]
