"""A start with unchanged notes reads none of them; any change to the notes, the folders or the index is seen."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from knowledge import index as index_module
from knowledge.index import KnowledgeIndex
from knowledge.stamp import STAMP_FILE


def _age(*folders: Path) -> None:
    """Make the files older than the racy window (as notes are, except in the second they are saved)."""
    old = time.time() - 3600
    for folder in folders:
        for p in [folder, *folder.rglob("*")]:
            os.utime(p, (old, old))


@pytest.fixture
def refuse_reading(monkeypatch):
    def refuse(*_a, **_k):
        raise AssertionError("the notes were read")

    def apply():
        monkeypatch.setattr(index_module, "load_corpus", refuse)

    return apply


def test_a_start_with_unchanged_notes_reads_none_of_them(config, corpus, refuse_reading):
    _age(corpus)
    first = KnowledgeIndex(config).ensure_built()
    assert first is not None and first.added > 0
    refuse_reading()
    assert KnowledgeIndex(config).ensure_built() is None


def test_an_edit_of_the_same_size_an_added_and_a_removed_note_are_seen(config, corpus):
    _age(corpus)
    KnowledgeIndex(config).ensure_built()
    text = (corpus / "rent.md").read_text(encoding="utf-8")
    (corpus / "rent.md").write_text(text.replace("更灵活", "更方便"), encoding="utf-8")  # same size in bytes
    assert (corpus / "rent.md").stat().st_size == len(text.encode())
    report = KnowledgeIndex(config).ensure_built()
    assert report is not None and (report.added, report.updated, report.removed) == (0, 1, 0)

    _age(corpus)
    KnowledgeIndex(config).ensure_built()
    (corpus / "new.md").write_text("---\nid: new\ntitle: New\nlang: en\n---\n## A\nnew text\n", encoding="utf-8")
    report = KnowledgeIndex(config).ensure_built()
    assert report is not None and report.added == 1

    _age(corpus)
    KnowledgeIndex(config).ensure_built()
    (corpus / "kv.md").unlink()
    report = KnowledgeIndex(config).ensure_built()
    assert report is not None and report.removed == 1


def test_notes_saved_in_the_same_instant_are_checked_in_full_next_time(config, corpus, refuse_reading):
    KnowledgeIndex(config).ensure_built()  # the notes were written a moment ago
    assert not (config.data_dir / STAMP_FILE).exists()
    refuse_reading()
    with pytest.raises(AssertionError, match="the notes were read"):
        KnowledgeIndex(config).ensure_built()


def test_an_index_changed_by_another_writer_is_brought_back_in_step(config, corpus):
    _age(corpus)
    index = KnowledgeIndex(config)
    index.ensure_built()
    victim = index.stored()[0].id
    index.collection().delete(ids=[victim])
    report = KnowledgeIndex(config).ensure_built()
    assert report is not None and report.added == 1
    assert victim in {c.id for c in KnowledgeIndex(config).stored()}


def test_a_users_folder_and_its_skipped_files_are_stamped_too(config, corpus, tmp_path, refuse_reading):
    sales = tmp_path / "sales"
    sales.mkdir()
    (sales / "quote.txt").write_text("报价\n\n八卡 H800 服务器按月租赁。\n", encoding="utf-8")
    KnowledgeIndex(config).sync([sales])
    (sales / "broken.md").write_text("---\nid: [unclosed\n---\n# x\n", encoding="utf-8")
    _age(corpus, sales)
    report = KnowledgeIndex(config).ensure_built()
    assert report is not None and any("broken.md" in n for n in report.notices)

    refuse_reading()
    again = KnowledgeIndex(config).ensure_built()  # from the stamp: the same notice, nothing read
    assert again is not None and again.notices == report.notices

    (sales / "quote.txt").write_text("报价\n\n八卡 H800 服务器按月租赁，含托管。\n", encoding="utf-8")
    with pytest.raises(AssertionError, match="the notes were read"):
        KnowledgeIndex(config).ensure_built()
