"""Hybrid retrieval: tokenisation, the right note for short Chinese words and GPU names, filters, the tool."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from bot.cli import app
from knowledge.lexical import tokenize
from knowledge.retrieval import (
    Passage,
    Retriever,
    SearchKnowledgeInput,
    search,
    search_knowledge,
    set_default_retriever,
)
from tools.errors import InvalidInput


@pytest.fixture
def retriever(config):
    return Retriever.from_config(config)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("显存", ["显存"]),
        ("H100 NVL", ["h100", "nvl"]),
        ("4090D", ["4090d", "4090"]),
        ("ＲＴＸ４０９０", ["rtx4090", "rtx", "4090"]),  # full-width input
        ("A100-80GB", ["a100", "80gb", "80", "gb"]),
        ("昇腾", ["昇腾"]),
    ],
)
def test_tokens_cover_chinese_words_and_gpu_names(text, expected):
    tokens = tokenize(text)
    assert set(expected) <= set(tokens)


def test_chinese_runs_give_bigrams_and_drop_stop_words():
    tokens = tokenize("我的显卡")
    assert "显卡" in tokens and "的显" in tokens and "的" not in tokens and "我" not in tokens


@pytest.mark.parametrize(
    ("query", "doc_id"),
    [
        ("显存", "h20"),
        ("昇腾", "ascend-910b"),
        ("租赁", "rent-vs-buy"),
        ("折旧", "rent-vs-buy"),
        ("H20", "h20"),
        ("h20", "h20"),
        ("4090D", "rtx-4090d"),
        ("H100 NVL", "h100-nvl"),
        ("A100 80GB", "a100-guide"),
        ("KV cache", "kv-cache"),
        ("910B 生态适配", "ascend-910b"),
        ("消费级显卡 LoRA", "rtx-4090d"),
    ],
)
def test_short_queries_find_the_right_note(retriever, query, doc_id):
    assert retriever.search(query, k=1)[0].doc_id == doc_id


def test_passages_carry_ids_titles_text_and_the_first_source(retriever):
    [p] = retriever.search("H20 训练算力", k=1)
    assert isinstance(p, Passage)
    assert p.id == "h20#训练算力.0"
    assert p.title == "H20 概览"
    assert p.text.startswith("H20 概览 › 训练算力\n\n")
    assert p.source == "https://example.com/h20"
    assert p.score > 0


def test_results_are_ranked_and_cut_at_k(retriever):
    hits = retriever.search("GPU memory bandwidth", k=3)
    assert len(hits) == 3
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_the_language_filter_keeps_one_language(retriever):
    en = retriever.search("H20 显存 memory", k=10, lang="en")
    zh = retriever.search("H20 显存 memory", k=10, lang="zh")
    assert en and all(h.doc_id in {"h100-nvl", "a100-guide", "kv-cache"} for h in en)
    assert zh and all(h.doc_id in {"h20", "rtx-4090d", "ascend-910b", "rent-vs-buy"} for h in zh)


def test_the_topic_filter_keeps_notes_with_any_given_topic(retriever):
    hits = retriever.search("租赁 rental", k=10, topics=["cost"])
    assert {h.doc_id for h in hits} == {"rent-vs-buy", "a100-guide"}
    assert retriever.search("H20", k=10, topics=["domestic"]) == []  # the H20 note is not tagged domestic
    assert all(h.doc_id == "a100-guide" for h in retriever.search("rental", k=10, lang="en", topics=["cost"]))


def test_an_unrelated_query_returns_nothing_rather_than_noise(retriever):
    assert retriever.search("xyzzy plugh", k=5) == []


def test_no_more_than_two_passages_per_note_by_default(config):
    r = Retriever.from_config(config)
    r.per_doc = 1
    ids = [h.doc_id for h in r.search("H20 显存 训练算力 带宽", k=5)]
    assert len(ids) == len(set(ids))


def test_an_empty_query_or_bad_arguments_are_clear_errors(retriever):
    with pytest.raises(InvalidInput, match="query is empty"):
        retriever.search("  ")
    with pytest.raises(InvalidInput, match="k must be at least 1"):
        retriever.search("H20", k=0)
    with pytest.raises(InvalidInput, match="Unknown language 'fr'"):
        retriever.search("H20", lang="fr")


def test_reload_sees_a_sync_made_after_loading(retriever, corpus):
    (corpus / "l20.md").write_text(
        "---\nid: l20\ntitle: L20 notes\nlang: en\n---\n## L20\nThe L20 is a PCIe inference card.\n", encoding="utf-8"
    )
    retriever.index.sync()
    assert all(h.doc_id != "l20" for h in retriever.search("L20 PCIe", k=3))
    retriever.reload()
    assert retriever.search("L20 PCIe", k=1)[0].doc_id == "l20"


def test_the_default_retriever_and_the_tool_function(retriever):
    set_default_retriever(retriever)
    try:
        assert search("昇腾", k=1)[0].doc_id == "ascend-910b"
        out = search_knowledge(SearchKnowledgeInput(query="H100 NVL", k=2, lang="en"))
        assert out.passages[0].doc_id == "h100-nvl"
        assert set(out.model_dump()["passages"][0]) == {"id", "doc_id", "title", "text", "source", "score", "origin"}
    finally:
        set_default_retriever(None)


def test_the_tool_input_rejects_unknown_fields_and_bad_values():
    with pytest.raises(ValidationError):
        SearchKnowledgeInput(query="H20", limit=3)
    with pytest.raises(ValidationError):
        SearchKnowledgeInput(query="H20", lang="fr")
    with pytest.raises(ValidationError):
        SearchKnowledgeInput(query="")


def _env(data) -> dict:
    return {"GPU_ADVISOR_DATA_DIR": str(data), "CHROMA_HOST": None, "CHROMA_PORT": None, "EMBEDDINGS_MODEL": None}


def test_cli_search_builds_the_index_on_first_use_and_prints_sources(tmp_path):
    # the shipped notes, whatever they are today: the passage printed must be one of them, with its source
    result = CliRunner().invoke(app, ["kb", "search", "显存", "-k", "2", "--json"], env=_env(tmp_path))
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["query"] == "显存"
    for p in data["passages"]:
        assert set(p) == {"id", "doc_id", "title", "text", "source", "score", "origin"}
        assert p["id"].startswith(p["doc_id"] + "#") and p["source"]

    text = CliRunner().invoke(app, ["kb", "search", "显存", "-k", "1", "--lang", "zh"], env=_env(tmp_path))
    assert text.exit_code == 0, text.output
    if data["passages"]:
        assert data["passages"][0]["title"] in text.output


def test_cli_search_rejects_an_unknown_language(tmp_path):
    result = CliRunner().invoke(app, ["kb", "search", "H20", "--lang", "fr"], env=_env(tmp_path))
    assert result.exit_code == 2
    assert "fr" in result.output


def test_cli_stats_shows_backend_and_location(tmp_path):
    result = CliRunner().invoke(app, ["kb", "stats"], env=_env(tmp_path))
    assert result.exit_code == 0, result.output
    assert "embedded" in result.output and str(tmp_path / "chroma") in result.output


def test_repeated_queries_come_from_the_cache_until_reload(tmp_path):
    from knowledge.config import KnowledgeConfig
    from knowledge.retrieval import Retriever

    r = Retriever.from_config(KnowledgeConfig(data_dir=tmp_path))
    first = r.search("H20 显存", k=3)
    assert r.search("H20 显存", k=3) == first == r.search("H20 显存", k=3, use_cache=False)
    r.reload()
    assert r._cache == {}  # a reload (after re-indexing) forgets cached answers


def test_a_passage_names_the_notes_it_refers_to_by_title(shared_advisor):
    """Notes refer to each other by id (`interconnect-nvlink-ib`); a reader of a passage sees the title instead."""
    retriever = shared_advisor.toolbox.retriever
    ids = {c.doc_id: c.title for c in retriever.index.stored()}
    seen = 0
    for query, lang in [
        ("A100 和 H100 加速比 通信", "zh"),
        ("国产卡替代 A100", "zh"),
        ("价格 渠道 二手", "zh"),
        ("export controls 2025 H20 licence", "en"),
        ("70B OOM A100", "zh"),
    ]:
        for passage in retriever.search(query, k=8, lang=lang):
            assert not [i for i in ids if f"`{i}`" in passage.text], passage.text
            seen += sum(f"《{t}》" in passage.text or f"“{t}”" in passage.text for t in ids.values())
    assert seen >= 2
