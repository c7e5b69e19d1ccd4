"""A warm start answers from the chunk cache without opening Chroma; any change to the notes is seen; the exact
dense search finds the neighbours Chroma's index finds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from knowledge import index as index_module
from knowledge.index import KnowledgeIndex
from knowledge.retrieval import Retriever
from knowledge.vectors import CACHE_FILE, HashingVectors, nearest, unit_rows

ROOT = Path(__file__).resolve().parents[2]
QUERIES = [
    ("H20 显存多大", None),
    ("A100 80GB rental by the hour", None),
    ("KV cache 随上下文长度增长", "zh"),
    ("NVLink between boards", "en"),
    ("昇腾 CANN 适配", None),
]


def _age(*folders: Path) -> None:
    old = time.time() - 3600
    for folder in folders:
        for p in [folder, *folder.rglob("*")]:
            os.utime(p, (old, old))


def _found(retriever: Retriever) -> list[list[tuple[str, str, float]]]:
    return [[(p.id, p.text, p.score) for p in retriever.search(q, k=4, lang=lang)] for q, lang in QUERIES]


@pytest.fixture
def refuse_chroma(monkeypatch):
    def refuse(*_a, **_k):
        raise AssertionError("Chroma was opened")

    def apply():
        monkeypatch.setattr(index_module.KnowledgeIndex, "collection", refuse)

    return apply


def test_a_warm_start_answers_from_the_cache_without_opening_chroma(config, corpus, refuse_chroma):
    _age(corpus)
    Retriever.from_config(config)  # builds the index and stamps it
    cold = Retriever.from_config(config)  # reads it back from Chroma and writes the cache
    assert (config.data_dir / CACHE_FILE).exists()
    refuse_chroma()
    warm = Retriever.from_config(config)
    assert _found(warm) == _found(cold)
    assert len(warm) == len(cold)


def test_an_edited_added_or_removed_note_is_never_answered_from_the_cache(config, corpus):
    _age(corpus)
    Retriever.from_config(config)
    Retriever.from_config(config)
    text = (corpus / "rent.md").read_text(encoding="utf-8")
    (corpus / "rent.md").write_text(text.replace("更灵活", "更方便"), encoding="utf-8")  # same size in bytes
    _age(corpus)
    after = Retriever.from_config(config).search("按卡时租赁", k=3, lang="zh")
    assert any("更方便" in p.text for p in after) and not any("更灵活" in p.text for p in after)

    (corpus / "new.md").write_text("---\nid: new-note\ntitle: New\nlang: en\n---\n## A\nBlackwell racks\n", "utf-8")
    assert any(p.doc_id == "new-note" for p in Retriever.from_config(config).search("Blackwell racks", k=3))
    (corpus / "new.md").unlink()
    assert not any(p.doc_id == "new-note" for p in Retriever.from_config(config).search("Blackwell racks", k=3))


def test_a_users_folder_indexed_since_is_in_the_next_answer(config, corpus, tmp_path):
    _age(corpus)
    Retriever.from_config(config)
    Retriever.from_config(config)
    sales = tmp_path / "sales"
    sales.mkdir()
    (sales / "quote.txt").write_text("报价\n\n八卡 H800 服务器按月租赁。\n", encoding="utf-8")
    KnowledgeIndex(config).sync([sales])
    _age(corpus, sales)
    found = Retriever.from_config(config).search("H800 服务器按月租赁", k=3, lang="zh")
    assert any("八卡 H800" in p.text for p in found)


def test_a_damaged_cache_is_read_again_from_chroma(config, corpus):
    _age(corpus)
    Retriever.from_config(config)
    expected = _found(Retriever.from_config(config))
    (config.data_dir / CACHE_FILE).write_bytes(b"not a cache")
    assert _found(Retriever.from_config(config)) == expected


def test_the_exact_dense_search_finds_the_neighbours_chroma_finds(config, corpus):
    index = KnowledgeIndex(config)
    index.ensure_built()
    chunks, vectors = index.stored_with_vectors()
    units = unit_rows(vectors, len(chunks))
    ids = [c.id for c in chunks]
    langs = np.array([c.lang for c in chunks])
    kept = 0
    for query, lang in QUERIES:
        allowed = langs == lang if lang else np.ones(len(chunks), dtype=bool)
        # the hits retrieval keeps (above the floor; below it, at similarity 0, any order is a tie)
        floor = 1.0 - HashingVectors.min_similarity
        mine = [h for h in nearest(units, ids, HashingVectors()([query])[0], 5, allowed) if h[1] <= floor]
        theirs = [h for h in index.dense(query, 5, {"lang": lang} if lang else None) if h[1] <= floor]
        assert [i for i, _ in mine] == [i for i, _ in theirs]
        kept += len(mine)
        assert np.allclose([d for _, d in mine], [d for _, d in theirs], atol=1e-6)
    assert kept >= len(QUERIES)


def test_nearest_breaks_ties_by_id_and_keeps_to_the_allowed_rows():
    units = unit_rows(np.array([[1, 0], [1, 0], [0, 1]], dtype=np.float32), 3)
    assert [i for i, _ in nearest(units, ["a", "b", "c"], np.array([1.0, 0.0]), 2, np.ones(3, bool))] == ["a", "b"]
    only_c = np.array([False, False, True])
    assert nearest(units, ["a", "b", "c"], np.array([1.0, 0.0]), 2, only_c) == [("c", 1.0)]


def test_a_warm_ask_does_not_import_chromadb(config, corpus):
    _age(corpus)
    Retriever.from_config(config)
    Retriever.from_config(config)
    code = (
        "import sys, json; from knowledge.config import KnowledgeConfig; from knowledge.retrieval import Retriever; "
        f"r = Retriever.from_config(KnowledgeConfig.model_validate_json({config.model_dump_json()!r})); "
        "ids = [p.id for p in r.search('H20 显存多大', k=2)]; print(json.dumps(['chromadb' in sys.modules, ids]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    imported, ids = json.loads(done.stdout.strip().splitlines()[-1])
    assert not imported and ids and ids[0].startswith("h20#")
