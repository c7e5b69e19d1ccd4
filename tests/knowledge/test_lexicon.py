"""The word store and the token cache beside the index: the same words and passages as jieba's whole
dictionary, without loading it; stale, broken or unwritable files fall back to it."""

from __future__ import annotations

import random
import re
import shutil
from pathlib import Path

import pytest
import yaml

from knowledge import lexical, lexicon, retrieval
from knowledge.config import SHIPPED_DOCS
from knowledge.index import KnowledgeIndex
from knowledge.lexicon import STORE_FILE, TOKENS_FILE, StoreTokenizer
from knowledge.retrieval import Retriever

ROOT = Path(__file__).parents[2]
_RUN = re.compile(lexical._CJK_RUN)
QUERIES = [
    "H20 显存多大",
    "国产卡能替代 A100 吗",
    "全参训练 70B 要几张卡",
    "租算力划算还是自建机房划算",
    "出口管制对买 H20 有什么影响",
    "显存带宽和算力哪个重要",
    "昇腾怎么跑 PyTorch",
]


def _questions() -> list[str]:
    rows = yaml.safe_load((ROOT / "tests" / "corpus" / "questions.yaml").read_text(encoding="utf-8"))["rows"]
    rows += yaml.safe_load((ROOT / "tests" / "golden" / "questions.yaml").read_text(encoding="utf-8"))
    out = [t["q"] for r in rows for t in (r.get("turns") or [r]) if t.get("q")]
    out += [r["q"] for r in yaml.safe_load((ROOT / "tests" / "golden" / "retrieval.yaml").read_text(encoding="utf-8"))]
    return out


def _runs() -> list[str]:
    """Every run of Chinese in the shipped notes and the test questions, and random strings of their characters."""
    texts = [p.read_text(encoding="utf-8") for p in sorted(SHIPPED_DOCS.glob("*.md"))] + _questions()
    runs = [run for t in texts for run in _RUN.findall(lexical.normalize(t))]
    chars = sorted(
        {c for r in runs for c in r} | set("的一是了我不人在他有这个上们来到时大地为子中你说生国年着就那和要")
    )
    rng = random.Random(10)
    runs += ["".join(rng.choices(chars, k=rng.randint(2, 40))) for _ in range(400)]
    return runs


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("store")
    assert lexicon.write_store(folder, lexical._full(), lexical.dictionary_key())
    return folder


def _refuse():
    raise AssertionError("jieba's whole dictionary was loaded")


def test_the_store_cuts_every_text_as_the_whole_dictionary_does(store_dir):
    store = lexicon.open_store(store_dir, lexical.dictionary_key())
    assert isinstance(store, StoreTokenizer)
    full = lexical._full()
    runs = _runs()
    assert len(runs) > 2000
    for hmm in (False, True):  # the lexical leg cuts without the HMM, the relevance check with it
        differ = [r for r in runs if store.lcut(r, HMM=hmm) != full.lcut(r, HMM=hmm)]
        assert differ == [], f"HMM={hmm}: {differ[:5]}"
    assert len(store.FREQ) < len(full.FREQ) / 10  # only what those texts needed was read


def test_a_retriever_with_the_store_never_loads_the_whole_dictionary_and_finds_the_same(config, store_dir, monkeypatch):
    expected = Retriever.from_config(config)
    want = [[p.id for p in expected.search(q, k=5)] for q in QUERIES]
    shutil.copy(store_dir / STORE_FILE, config.data_dir / STORE_FILE)
    (config.data_dir / TOKENS_FILE).unlink()  # the notes too are cut through the store
    monkeypatch.setattr(lexical, "_active", None)  # as in a fresh process
    monkeypatch.setattr(lexical, "_full", _refuse)

    fresh = Retriever.from_config(config)
    assert isinstance(lexical._active, StoreTokenizer)
    assert [[p.id for p in fresh.search(q, k=5)] for q in QUERIES] == want
    assert fresh._tokens == expected._tokens


def test_a_missing_stale_or_broken_store_falls_back_to_the_dictionary_and_is_written_again(tmp_path, monkeypatch):
    key = lexical.dictionary_key()
    full = lexical._full()
    assert lexicon.open_store(tmp_path, key) is None  # none yet
    lexicon.write_store(tmp_path, full, "written-by-another-jieba")
    assert lexicon.open_store(tmp_path, key) is None

    monkeypatch.setattr(lexical, "_active", None)
    lexical.warm_up(tmp_path)
    assert lexical._active is full
    assert isinstance(lexicon.open_store(tmp_path, key), StoreTokenizer)  # for the next process

    (tmp_path / STORE_FILE).write_bytes(b"not a database" * 100)
    assert lexicon.open_store(tmp_path, key) is None


def test_an_unwritable_folder_leaves_no_store_and_raises_nothing(tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("x")
    assert lexicon.write_store(blocked / "data", lexical._full(), lexical.dictionary_key()) is False
    lexicon.write_tokens(blocked, "k", {"h": ["a"]})  # logged, not raised


def test_a_lot_of_text_loads_the_whole_dictionary_once(store_dir, monkeypatch):
    store = lexicon.open_store(store_dir, lexical.dictionary_key())
    monkeypatch.setattr(lexical, "_active", store)
    lexical.bulk(1000)
    assert lexical._active is store
    lexical.bulk(lexical.BULK_CHARS + 1)
    assert lexical._active is lexical._full()


def test_unchanged_notes_are_not_tokenized_again_by_the_next_process(config, corpus, monkeypatch):
    cut: list[str] = []
    real = retrieval.tokenize
    monkeypatch.setattr(retrieval, "tokenize", lambda text: cut.append(text) or real(text))

    first = Retriever.from_config(config)
    assert cut == [] and len(first) > 0  # the index build on the fresh folder left every chunk's tokens
    cut.clear()
    again = Retriever(KnowledgeIndex(config))  # a new retriever has no tokens in memory
    assert cut == []
    assert again.search("租赁", k=2) == first.search("租赁", k=2)

    text = (corpus / "rent.md").read_text(encoding="utf-8")
    (corpus / "rent.md").write_text(text.replace("更灵活", "更灵活，可以随时退租"), encoding="utf-8")
    KnowledgeIndex(config).sync()
    cut.clear()
    edited = Retriever(KnowledgeIndex(config))
    assert cut == []  # the sync cut the changed chunk and left its tokens
    assert edited.search("随时退租", k=1)[0].doc_id == "rent-vs-buy"

    cut.clear()
    monkeypatch.setattr(retrieval, "tokens_key", lambda: "another tokenizer")
    Retriever(KnowledgeIndex(config))
    assert len(cut) == len(first)  # tokens of another tokenizer are not used

    (config.data_dir / TOKENS_FILE).write_text("{not json", encoding="utf-8")
    cut.clear()
    assert len(Retriever(KnowledgeIndex(config))) == len(first)
    assert len(cut) == len(first)


def test_a_retriever_that_cut_its_notes_with_the_whole_dictionary_lets_it_go_and_cuts_the_same(
    config, store_dir, monkeypatch
):
    """A server on a fresh data folder (or a worker reading a Chroma server's chunks) cuts every note with the
    whole dictionary, then goes back to the word store: the ~60 MB dictionary is not kept for the process's life."""
    expected = Retriever.from_config(config)
    want = [[p.id for p in expected.search(q, k=5)] for q in QUERIES]
    shutil.copy(store_dir / STORE_FILE, config.data_dir / STORE_FILE)
    (config.data_dir / TOKENS_FILE).unlink()  # every note is cut again, in bulk
    monkeypatch.setattr(lexical, "_active", None)  # as in a fresh process
    monkeypatch.setattr(lexical, "BULK_CHARS", 0)
    during: list[type] = []

    def bulk(chars: int) -> None:
        lexical.bulk(chars)
        during.append(type(lexical._active))

    monkeypatch.setattr(retrieval, "bulk", bulk)
    fresh = Retriever.from_config(config)
    assert during and not issubclass(during[-1], StoreTokenizer)  # the notes were cut with the whole dictionary
    assert isinstance(lexical._active, StoreTokenizer)  # and it was let go
    assert lexical._full.cache_info().currsize == 0
    assert fresh._tokens == expected._tokens
    assert [[p.id for p in fresh.search(q, k=5)] for q in QUERIES] == want


def test_the_stores_memory_of_absent_words_is_bounded_and_never_changes_a_cut(store_dir, monkeypatch):
    monkeypatch.setattr(lexicon, "_ABSENT_MAX", 50)
    store = lexicon.open_store(store_dir, lexical.dictionary_key())
    full = lexical._full()
    runs = _runs()[:300]
    for _ in range(2):  # the second time every substring is known: in FREQ, or remembered as no entry
        assert [r for r in runs if store.lcut(r) != full.lcut(r)] == []
        assert len(store._absent) <= 50 + max(len(r) ** 2 for r in runs)


def test_an_index_build_leaves_the_tokens_of_what_it_indexed_so_a_reader_cuts_nothing(config, monkeypatch):
    """The index job (`gpu-advisor kb index`, or the first process on a fresh data folder) cuts the notes it indexes
    anyway: their tokens go to the token cache, so a worker reading them back from a Chroma server does not load
    jieba's whole dictionary to cut them again."""
    index = KnowledgeIndex(config)
    index.ensure_built()
    stored = index.stored()
    cached = lexicon.read_tokens(config.data_dir, lexical.tokens_key())
    assert stored and {c.hash for c in stored} <= set(cached)
    assert all(cached[c.hash] == lexical.tokenize(c.text) for c in stored)

    def _no_cutting(text: str) -> list[str]:
        raise AssertionError("a chunk was cut again")

    monkeypatch.setattr(retrieval, "tokenize", _no_cutting)
    reader = Retriever(index)
    assert reader._tokens == {c.hash: cached[c.hash] for c in stored}
