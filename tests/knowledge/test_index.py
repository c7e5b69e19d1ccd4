"""Chunking, incremental indexing, user folders, locking, recovery and the embedding functions."""

from __future__ import annotations

import fcntl
import json
from pathlib import Path

import httpx
import numpy as np
import pytest
from typer.testing import CliRunner

from bot.cli import app
from knowledge.chunking import MAX_CHARS, chunk_note
from knowledge.config import EmbeddingConfig, KnowledgeConfig
from knowledge.embeddings import HashingEmbedding, OpenAICompatibleEmbedding, make_embedding
from knowledge.errors import BadNote, IndexBusy, IndexUnavailable
from knowledge.index import KnowledgeIndex
from knowledge.notes import BUILTIN, CorpusRoot, load_corpus, load_note
from knowledge.retrieval import Retriever

LONG_ZH = "".join(f"第{i}句说明显存怎样估算，需要把权重、梯度和优化器状态都算进去。" for i in range(40))
LONG_EN = " ".join(
    f"Sentence {i} explains how optimizer states add to the memory of a training run." for i in range(30)
)


def _note(tmp_path: Path, body: str, name: str = "n.md", front: str = "id: n\ntitle: T\nlang: zh\n"):
    path = tmp_path / name
    path.write_text(f"---\n{front}---\n{body}", encoding="utf-8")
    return load_note(path, BUILTIN)


class Spy:
    """Forwards to a Chroma collection and records every write."""

    def __init__(self, inner):
        self.inner = inner
        self.writes: list[str] = []

    def upsert(self, **kw):
        self.writes.append("upsert")
        return self.inner.upsert(**kw)

    def add(self, **kw):
        self.writes.append("add")
        return self.inner.add(**kw)

    def delete(self, **kw):
        self.writes.append("delete")
        return self.inner.delete(**kw)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def _spy(index: KnowledgeIndex) -> Spy:
    spy = Spy(index.collection())
    index._collection = spy
    return spy


# --- chunking ---------------------------------------------------------------------------------------


def test_chunks_never_span_two_sections_and_keep_the_heading_path(tmp_path):
    note = _note(tmp_path, f"# T\n\n## 显存\n{LONG_ZH}\n\n### 细节\n短段落。\n\n## Memory\n{LONG_EN}\n")
    chunks = chunk_note(note)
    zh = [c for c in chunks if c.id.startswith("n#显存.")]
    en = [c for c in chunks if c.id.startswith("n#memory.")]
    assert len(zh) >= 3 and len(en) >= 2
    assert all(c.text.startswith("T › 显存") for c in zh)
    assert all(c.text.startswith("T › Memory") for c in en)
    assert not any("Sentence" in c.text for c in zh) and not any("显存怎样" in c.text for c in en)
    for c in chunks:
        body = c.text.split("\n\n", 1)[1]
        assert len(body) <= MAX_CHARS
    # long sections are cut at sentence ends, never mid-sentence
    for c in zh[:-1]:
        assert c.text.rstrip().endswith("。")
    for c in en[:-1]:
        assert c.text.rstrip().endswith(".")
    assert [c.ordinal for c in zh] == list(range(len(zh)))


def test_a_long_table_is_split_with_its_header_repeated(tmp_path):
    rows = "\n".join(f"| 型号{i} | {i} 元/卡时 |" for i in range(60))
    note = _note(tmp_path, f"## 价格表\n| 型号 | 价格 |\n|---|---|\n{rows}\n")
    chunks = chunk_note(note)
    assert len(chunks) >= 2
    assert all("| 型号 | 价格 |\n|---|---|" in c.text for c in chunks)


def test_chunk_ids_are_stable_and_an_edit_changes_only_its_section(tmp_path):
    body = f"## 显存\n{LONG_ZH}\n\n## 价格\n租赁价格因地区而异。\n"
    first = chunk_note(_note(tmp_path, body))
    again = chunk_note(_note(tmp_path, body))
    assert [(c.id, c.text) for c in first] == [(c.id, c.text) for c in again]
    edited = chunk_note(_note(tmp_path, body.replace("因地区而异", "按月结算")))
    same = [c for c in first if c.id.startswith("n#显存.")]
    assert [(c.id, c.text) for c in edited if c.id.startswith("n#显存.")] == [(c.id, c.text) for c in same]
    assert [c.id for c in edited if c.id.startswith("n#价格.")] == ["n#价格.0"]


def test_front_matter_is_parsed_and_the_first_source_is_the_citation(corpus):
    note = load_note(corpus / "h20.md", BUILTIN)
    assert (note.doc_id, note.title, note.lang) == ("h20", "H20 概览", "zh")
    assert note.topics == ("gpu", "china")
    assert note.source == "https://example.com/h20"
    assert note.as_of == "2025-06-01"


def test_txt_gets_title_from_first_line_id_from_file_name_and_gbk_is_read(tmp_path):
    path = tmp_path / "Price Sheet 2025.txt"
    path.write_bytes("H800 租赁报价单\n\n8 卡整机按月租赁，含机柜与电费。\n".encode("gb18030"))
    note = load_note(path, str(tmp_path))
    assert (note.doc_id, note.title, note.lang, note.source) == ("price-sheet-2025", "H800 租赁报价单", "zh", str(path))


def test_a_duplicate_doc_id_names_both_files(tmp_path):
    folder = tmp_path / "dup"
    folder.mkdir()
    for name in ("a.md", "b.md"):
        (folder / name).write_text("---\nid: same\ntitle: X\nlang: en\n---\ntext\n", encoding="utf-8")
    with pytest.raises(BadNote, match=r"a\.md and .*b\.md"):
        load_corpus([CorpusRoot(folder, BUILTIN)])


def test_broken_front_matter_is_a_clear_error(tmp_path):
    path = tmp_path / "bad.md"
    path.write_text("---\nid: [unclosed\n---\ntext\n", encoding="utf-8")
    with pytest.raises(BadNote, match="front matter is not valid YAML"):
        load_note(path, BUILTIN)


# --- incremental sync -----------------------------------------------------------------------------


def test_first_sync_adds_everything_and_a_second_touches_nothing(config):
    index = KnowledgeIndex(config)
    first = index.sync()
    assert first.added > 0 and (first.updated, first.removed, first.unchanged) == (0, 0, 0)
    assert first.docs == 7

    again = KnowledgeIndex(config)
    spy = _spy(again)
    report = again.sync()
    assert (report.added, report.updated, report.removed) == (0, 0, 0)
    assert report.unchanged == first.added
    assert spy.writes == []


def test_an_edited_note_updates_only_its_changed_chunks(config, corpus):
    index = KnowledgeIndex(config)
    index.sync()
    before = {c.id: c.hash for c in index.stored()}
    text = (corpus / "rent.md").read_text(encoding="utf-8")
    (corpus / "rent.md").write_text(text.replace("更灵活", "更灵活，可以随时退租"), encoding="utf-8")

    report = index.sync()
    assert (report.added, report.updated, report.removed) == (0, 1, 0)
    after = {c.id: c.hash for c in index.stored()}
    changed = {i for i in after if after[i] != before[i]}
    assert changed == {"rent-vs-buy#租赁.0"}


def test_a_deleted_note_loses_its_chunks(config, corpus):
    index = KnowledgeIndex(config)
    index.sync()
    n_kv = sum(c.doc_id == "kv-cache" for c in index.stored())
    (corpus / "kv.md").unlink()
    report = index.sync()
    assert report.removed == n_kv and report.added == report.updated == 0
    assert not any(c.doc_id == "kv-cache" for c in index.stored())
    assert all(p.doc_id != "kv-cache" for p in Retriever(index).search("key-value cache context length"))


def test_a_user_folder_is_indexed_remembered_and_forgotten(config, tmp_path):
    sales = tmp_path / "sales"
    sales.mkdir()
    (sales / "h800-quote.txt").write_text("H800 整机报价\n\n八卡 H800 服务器按月租赁，含托管。\n", encoding="utf-8")
    (sales / "notes.md").write_text("# Sales notes\n\nCustomers in Shenzhen ask for L20 quotes.\n", encoding="utf-8")
    index = KnowledgeIndex(config)
    index.sync([sales])
    assert index.user_roots() == [str(sales.resolve())]

    hits = Retriever(index).search("H800 报价", k=3)
    assert hits[0].doc_id == "h800-quote"
    assert hits[0].source == str((sales / "h800-quote.txt").resolve())
    assert Retriever(index).search("L20 quotes", k=1)[0].doc_id == "notes"

    report = KnowledgeIndex(config).sync()  # no paths: the remembered folder is kept
    assert report.removed == 0 and report.unchanged > 0

    report = KnowledgeIndex(config).sync(forget=[sales])
    assert report.removed == 2
    assert KnowledgeIndex(config).user_roots() == []


def test_a_vanished_user_folder_is_removed_with_a_notice(config, tmp_path):
    sales = tmp_path / "gone"
    sales.mkdir()
    (sales / "quote.txt").write_text("报价\n\n内容。\n", encoding="utf-8")
    KnowledgeIndex(config).sync([sales])
    (sales / "quote.txt").unlink()
    sales.rmdir()
    report = KnowledgeIndex(config).sync()
    assert report.removed == 1
    assert any("no longer exists" in n for n in report.notices)


# --- one writer, recovery -----------------------------------------------------------------------------


def test_a_second_writer_gets_a_clear_error(config):
    index = KnowledgeIndex(config)
    index.sync()
    (config.docs_dir / "new.md").write_text(
        "---\nid: new\ntitle: New\nlang: en\n---\n## A\nnew text\n", encoding="utf-8"
    )
    with open(config.lock_path, "a+") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        holder.seek(0)
        holder.truncate()
        holder.write("4242")
        holder.flush()
        with pytest.raises(IndexBusy) as err:
            KnowledgeIndex(config).sync()
    assert "Another process (pid 4242) is writing" in err.value.message("en")
    assert "CHROMA_HOST" in err.value.message("en")
    assert "另一个进程" in err.value.message("zh")


def test_a_missing_index_is_built_on_first_use_with_a_message(config):
    retriever = Retriever.from_config(config)
    assert len(retriever) > 0
    assert any("was missing or empty; built it from 7 documents" in n for n in retriever.notices)
    assert Retriever.from_config(config).notices == []  # the second time there is nothing to say
    assert retriever.search("昇腾", k=1)[0].doc_id == "ascend-910b"


def test_a_corrupted_index_is_rebuilt_with_a_message(config):
    Retriever.from_config(config).index.close()
    (config.chroma_path / "chroma.sqlite3").write_bytes(b"this is not a database" * 100)

    retriever = Retriever.from_config(config)
    assert any("could not be read" in n and "rebuilt it from the notes" in n for n in retriever.notices)
    assert retriever.search("H20", k=1)[0].doc_id == "h20"
    assert list(config.data_dir.glob("chroma.broken-*"))


def test_the_cli_reports_a_rebuilt_index(config, tmp_path, monkeypatch):
    # the CLI reads the environment: point it at a corrupted data dir holding the shipped notes
    data = tmp_path / "cli-data"
    data.mkdir()
    (data / "chroma").mkdir()
    (data / "chroma" / "chroma.sqlite3").write_bytes(b"garbage" * 500)
    result = CliRunner().invoke(
        app,
        ["kb", "stats"],
        env={"GPU_ADVISOR_DATA_DIR": str(data), "CHROMA_HOST": None, "CHROMA_PORT": None, "EMBEDDINGS_MODEL": None},
    )
    assert result.exit_code == 0, result.output
    assert "could not be read" in result.output


# --- embeddings -------------------------------------------------------------------------------------


def test_hashing_embedding_is_deterministic_normalised_and_registered(config):
    ef = HashingEmbedding()
    a, b = ef(["H100 NVL 显存"]), ef(["H100 NVL 显存"])
    assert np.allclose(a[0], b[0]) and abs(np.linalg.norm(a[0]) - 1) < 1e-5
    assert len(a[0]) == 1024
    rebuilt = HashingEmbedding.build_from_config(ef.get_config())
    assert np.allclose(rebuilt(["x"])[0], ef(["x"])[0])

    index = KnowledgeIndex(config)
    index.sync()
    # reopened without a function, Chroma finds ours by name instead of its downloading default
    col = index._client.get_collection(index.collection_name)
    assert col.configuration["embedding_function"].name() == "gpu_advisor_hashing"
    hits = col.query(query_texts=["H20 显存"], n_results=1)  # the network is off: no download possible
    assert hits["ids"][0][0].startswith("h20#")


def _embeddings_transport(calls: list[dict], fail: bool = False) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        if fail:
            return httpx.Response(401, json={"error": {"message": "bad key", "type": "auth"}})
        body = json.loads(request.content)
        calls.append(body)
        data = [
            {"object": "embedding", "index": i, "embedding": HashingEmbedding(dim=64).embed_one(t).tolist()}
            for i, t in enumerate(body["input"])
        ]
        return httpx.Response(
            200,
            json={
                "object": "list",
                "data": data,
                "model": body["model"],
                "usage": {"prompt_tokens": 1, "total_tokens": 1},
            },
        )

    return httpx.MockTransport(handler)


def test_an_openai_compatible_endpoint_embeds_the_chunks(config):
    calls: list[dict] = []
    cfg = EmbeddingConfig(model="bge-m3", base_url="http://127.0.0.1:9/v1")
    ef = make_embedding(cfg, http_client=httpx.Client(transport=_embeddings_transport(calls)))
    assert isinstance(ef, OpenAICompatibleEmbedding)
    index = KnowledgeIndex(config, ef)
    report = index.sync()
    assert calls and calls[0]["model"] == "bge-m3"
    assert sum(len(c["input"]) for c in calls) == report.added
    assert index.collection_name.startswith("gpu-advisor-kb-oai-bge-m3-")
    assert Retriever(index).search("H20", k=1)[0].doc_id == "h20"


def test_a_failing_embeddings_endpoint_is_a_clear_error(config):
    cfg = EmbeddingConfig(model="bge-m3", base_url="http://127.0.0.1:9/v1")
    ef = make_embedding(cfg, http_client=httpx.Client(transport=_embeddings_transport([], fail=True)))
    with pytest.raises(IndexUnavailable, match=r"embeddings endpoint http://127\.0\.0\.1:9/v1"):
        KnowledgeIndex(config, ef).sync()


def test_the_config_defaults_to_embedded_storage_and_hashing(tmp_path):
    cfg = KnowledgeConfig(data_dir=tmp_path)
    assert not cfg.server and cfg.chroma_path == tmp_path / "chroma"
    assert isinstance(make_embedding(cfg.embeddings), HashingEmbedding)
    assert KnowledgeConfig(data_dir=tmp_path, chroma_port=8123).location == "http://localhost:8123"


# --- CLI ------------------------------------------------------------------------------------------


def _env(data: Path) -> dict:
    return {"GPU_ADVISOR_DATA_DIR": str(data), "CHROMA_HOST": None, "CHROMA_PORT": None, "EMBEDDINGS_MODEL": None}


def test_cli_index_reports_added_then_unchanged_and_indexes_a_user_folder(tmp_path):
    sales = tmp_path / "sales"
    sales.mkdir()
    (sales / "quote-l20.txt").write_text(
        "L20 quote sheet\n\nEight L20 cards, monthly rent, Futian data centre.\n", encoding="utf-8"
    )
    runner = CliRunner()
    first = runner.invoke(app, ["kb", "index", str(sales), "--json"], env=_env(tmp_path / "d"))
    assert first.exit_code == 0, first.output
    summary = json.loads(first.stdout)
    assert summary["added"] > 0 and summary["updated"] == summary["removed"] == 0

    again = runner.invoke(app, ["kb", "index"], env=_env(tmp_path / "d"))
    assert again.exit_code == 0, again.output
    assert "unchanged" in again.output and "added" in again.output

    found = runner.invoke(app, ["kb", "search", "L20 quote Futian", "-k", "1", "--json"], env=_env(tmp_path / "d"))
    assert found.exit_code == 0, found.output
    assert json.loads(found.stdout)["passages"][0]["doc_id"] == "quote-l20"

    stats = runner.invoke(app, ["kb", "stats", "--json"], env=_env(tmp_path / "d"))
    data = json.loads(stats.stdout)
    assert data["backend"] == "embedded" and data["user_folders"] == [str(sales.resolve())]
    assert data["chunks"] == summary["added"]


def test_cli_index_refuses_a_missing_folder(tmp_path):
    result = CliRunner().invoke(app, ["kb", "index", str(tmp_path / "nope")], env=_env(tmp_path / "d"))
    assert result.exit_code == 2
    assert "does not exist" in result.output


def test_a_long_code_block_is_split_at_lines_with_its_fences(tmp_path):
    lines = "\n".join(f"- args: {{gpu: a100, n_gpus: {i}}}" for i in range(60))
    note = _note(tmp_path, f"## 例子\n```yaml\n{lines}\n```\n")
    chunks = chunk_note(note)
    assert len(chunks) >= 2
    for c in chunks:
        body = c.text.split("\n\n", 1)[1]
        assert body.startswith("```yaml\n- args:") and body.endswith("}\n```")
