"""Hybrid retrieval over the knowledge index: BM25 over zh/en tokens + the dense leg, fused by RRF.

    retriever = Retriever.from_config(config)      # once per process: reads the chunks and their tokens
    retriever.search("H20 显存多大", k=5, lang="zh")  # -> [Passage(id, doc_id, title, text, source, score)]

`search()` uses a process-wide default retriever built from the environment on first call
(`KnowledgeSettings`); the bot sets its own with `set_default_retriever()`. The score of a passage is
its reciprocal-rank-fusion score: sum over legs of weight / (60 + rank), comparable only within one
answer.
"""

from __future__ import annotations

import copy
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from knowledge.config import KnowledgeConfig, KnowledgeSettings
from knowledge.index import KnowledgeIndex, StoredChunk
from knowledge.lexical import LexicalIndex, bulk, settle, tokenize, tokens_key, warm_up
from knowledge.lexicon import read_tokens, write_tokens
from knowledge.vectors import content_key, load_cache, nearest, save_cache, unit_rows
from tools.errors import InvalidInput

RRF_K = 60


class Passage(BaseModel):
    """One retrieved chunk, citable by its stable `id`."""

    model_config = ConfigDict(frozen=True)

    id: str
    doc_id: str
    title: str
    text: str
    #: the note's first source URL, or the file path of a user's document
    source: str
    score: float
    #: "builtin" for the notes shipped with the package, else the user folder the note was indexed from
    origin: str = "builtin"


class SearchKnowledgeInput(BaseModel):
    """Search the knowledge base (GPU notes, in Chinese and English) for passages to cite."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=1000, description="the question or keywords, zh or en")
    k: int = Field(5, ge=1, le=20, description="how many passages")
    lang: Literal["zh", "en"] | None = Field(None, description="only notes in this language")
    topics: list[str] | None = Field(None, description="only notes with one of these topics")


class SearchKnowledgeOutput(BaseModel):
    passages: list[Passage]


_NOTE_REF = re.compile(r"`([a-z0-9]+(?:-[a-z0-9]+)+)`")


class Retriever:
    """The loaded index: chunks, BM25 and the chunks' vectors in memory (`knowledge.vectors`). Build once, search often."""

    def __init__(
        self,
        index: KnowledgeIndex,
        *,
        lexical_weight: float = 1.0,
        dense_weight: float | None = None,
        candidates: int = 50,
        per_doc: int | None = 2,
        preloaded: tuple[list[StoredChunk], np.ndarray] | None = None,
    ):
        self.index = index
        self.lexical_weight = lexical_weight
        #: by default the embedding's own `fusion_weight` (0.5 for the hashing embedding, 1 for a model)
        vectors = index.query_vectors
        self.dense_weight = getattr(vectors, "fusion_weight", 1.0) if dense_weight is None else dense_weight
        self.candidates = candidates
        self.per_doc = per_doc
        self.notices: list[str] = []
        self._cache_lock = threading.Lock()
        self.reload(preloaded)

    @classmethod
    def from_config(cls, config: KnowledgeConfig, **options: float | int | None) -> Retriever:
        """Open the index, building or refreshing it first when the notes changed. When the chunk cache holds
        what the notes make (`knowledge.vectors`), the chunks and vectors come from it and Chroma is not opened."""
        index = KnowledgeIndex(config)
        key = content_key(index)
        cached = load_cache(config.data_dir, key)
        if cached is None:
            index.ensure_built()
        retriever = cls(index, preloaded=cached, **options)  # type: ignore[arg-type]
        retriever.notices = list(index.notices)
        vectors = retriever._vectors
        if cached is None and key is not None and vectors is not None and content_key(index) == key:
            save_cache(config.data_dir, key, retriever._chunks, vectors)  # the notes did not move while read
        return retriever

    def reload(self, preloaded: tuple[list[StoredChunk], np.ndarray] | None = None) -> None:
        """Read the chunks (and their vectors) back from the index and rebuild the lexical leg (after a sync).

        Chunks whose content hash did not change keep their tokens (tokenizing is most of the cost): from
        memory, else from the token cache beside the index, which is rewritten when chunks were tokenized."""
        data_dir = self.index.config.data_dir
        warm_up(data_dir)
        if preloaded is None:
            preloaded = self.index.stored_with_vectors(vectors=self.dense_weight > 0)  # type: ignore[assignment]
        self._chunks: list[StoredChunk] = preloaded[0]  # type: ignore[index]
        self._vectors: np.ndarray | None = preloaded[1]  # type: ignore[index]
        self._units = unit_rows(self._vectors, len(self._chunks))
        self._ids = [c.id for c in self._chunks]
        self._position = {c.id: i for i, c in enumerate(self._chunks)}
        known: dict[str, list[str]] = getattr(self, "_tokens", {})
        if any(c.hash not in known for c in self._chunks):
            known = {**read_tokens(data_dir, tokens_key()), **known}
        todo = [c for c in self._chunks if not c.hash or c.hash not in known]
        bulk(sum(len(c.text) for c in todo))
        self._tokens = {c.hash: known[c.hash] for c in self._chunks if c.hash and c.hash in known}
        fresh = {c.id: tokenize(c.text) for c in todo}
        self._tokens.update((c.hash, fresh[c.id]) for c in todo if c.hash)
        if any(c.hash for c in todo):
            write_tokens(data_dir, tokens_key(), self._tokens)
        settle(data_dir)
        self._lexical = LexicalIndex([self._tokens[c.hash] if c.hash else fresh[c.id] for c in self._chunks])
        self._langs = np.array([c.lang for c in self._chunks], dtype=object)
        self._topics = [frozenset(c.topics) for c in self._chunks]
        self._titles = {c.doc_id: c.title for c in self._chunks}
        self._cache: OrderedDict[tuple, list[Passage]] = OrderedDict()

    def fresh(self) -> Retriever:
        """A new retriever over the same index with the chunks read again (after a re-index by another
        process); searches in flight on this one finish undisturbed, and its answer cache is not carried over."""
        new = copy.copy(self)
        new.notices = []
        new._cache_lock = threading.Lock()
        new.reload()
        return new

    def __len__(self) -> int:
        return len(self._chunks)

    def _readable(self, text: str, lang: str) -> str:
        """A note's cross-references (`tco-breakeven`) named by the other note's title, so no reader of a
        passage (user, model, API client) meets an internal id."""

        def title(m: re.Match) -> str:
            name = self._titles.get(m.group(1))
            if name is None:
                return m.group(0)
            return f"《{name}》" if lang == "zh" else f"“{name}”"

        return _NOTE_REF.sub(title, text) if "`" in text else text

    def _mask(self, lang: str | None, topics: Sequence[str] | None) -> np.ndarray:
        mask = np.ones(len(self._chunks), dtype=bool)
        if lang:
            mask &= self._langs == lang
        if topics:
            wanted = set(topics)
            mask &= np.array([bool(t & wanted) for t in self._topics], dtype=bool)
        return mask

    @staticmethod
    def _where(lang: str | None, topics: Sequence[str] | None) -> dict | None:
        clauses: list[dict] = []
        if lang:
            clauses.append({"lang": lang})
        if topics:
            ors = [{"topics": {"$contains": t}} for t in topics]
            clauses.append(ors[0] if len(ors) == 1 else {"$or": ors})
        if not clauses:
            return None
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}

    #: answers to repeated queries (FAQ-like questions) come from memory until the index is reloaded
    CACHE_SIZE = 1024

    def search(
        self,
        query: str,
        k: int = 5,
        lang: str | None = None,
        topics: Sequence[str] | None = None,
        *,
        use_cache: bool = True,
    ) -> list[Passage]:
        """The `k` best passages for `query`, optionally only in `lang` and with one of `topics`."""
        if not use_cache:
            return self._search(query, k, lang, topics)
        key = (query, k, lang, tuple(topics) if topics else None)
        with self._cache_lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return list(hit)
        found = self._search(query, k, lang, topics)
        with self._cache_lock:
            self._cache[key] = found
            if len(self._cache) > self.CACHE_SIZE:
                self._cache.popitem(last=False)
        return list(found)

    def _search(
        self, query: str, k: int = 5, lang: str | None = None, topics: Sequence[str] | None = None
    ) -> list[Passage]:
        """The `k` best passages for `query`, optionally only in `lang` and with one of `topics`."""
        if not query or not query.strip():
            raise InvalidInput("The search query is empty.", "检索内容为空。", field="query")
        if k < 1:
            raise InvalidInput("k must be at least 1.", "k 至少为 1。", field="k")
        if lang not in (None, "zh", "en"):
            raise InvalidInput(
                f"Unknown language {lang!r}; use zh or en.", f"未知的语言“{lang}”；请用 zh 或 en。", field="lang"
            )
        if not self._chunks:
            return []
        mask = self._mask(lang, topics)
        fused: dict[int, float] = {}

        scores = self._lexical.scores(tokenize(query))
        scores = np.where(mask, scores, 0.0)
        top = np.argsort(-scores, kind="stable")[: self.candidates]
        for rank, i in enumerate(int(i) for i in top if scores[i] > 0):
            fused[i] = fused.get(i, 0.0) + self.lexical_weight / (RRF_K + rank + 1)

        if self.dense_weight > 0 and mask.any():
            vectors = self.index.query_vectors
            floor = getattr(vectors, "min_similarity", 0.0)
            if self._units is None:  # no vectors held (too many): Chroma's index searches
                hits = self.index.dense(query, self.candidates, self._where(lang, topics), total=len(self._chunks))
            else:
                hits = nearest(self._units, self._ids, vectors([query])[0], self.candidates, mask)
            hits = [(chunk_id, d) for chunk_id, d in hits if 1.0 - d >= floor]
            for rank, (chunk_id, _distance) in enumerate(hits):
                i = self._position.get(chunk_id)
                if i is not None and mask[i]:
                    fused[i] = fused.get(i, 0.0) + self.dense_weight / (RRF_K + rank + 1)

        ranked = sorted(fused.items(), key=lambda kv: (-kv[1], self._chunks[kv[0]].id))
        out: list[Passage] = []
        per_doc: dict[str, int] = {}
        for i, score in ranked:
            c = self._chunks[i]
            if self.per_doc and per_doc.get(c.doc_id, 0) >= self.per_doc:
                continue
            per_doc[c.doc_id] = per_doc.get(c.doc_id, 0) + 1
            out.append(
                Passage(
                    id=c.id,
                    doc_id=c.doc_id,
                    title=c.title,
                    text=self._readable(c.text, c.lang),
                    source=c.source,
                    score=score,
                    origin=c.origin,
                )
            )
            if len(out) == k:
                break
        return out


_default: Retriever | None = None
_default_lock = threading.Lock()


def default_retriever() -> Retriever:
    """The process-wide retriever, built from the environment on first use."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Retriever.from_config(KnowledgeSettings().to_config())
        return _default


def set_default_retriever(retriever: Retriever | None) -> None:
    """Use this retriever for `search()` (None: build from the environment on next use)."""
    global _default
    with _default_lock:
        _default = retriever


def search(query: str, k: int = 5, lang: str | None = None, topics: Sequence[str] | None = None) -> list[Passage]:
    """Hybrid search with the default retriever; see `Retriever.search`."""
    return default_retriever().search(query, k=k, lang=lang, topics=topics)


def search_knowledge(inp: SearchKnowledgeInput) -> SearchKnowledgeOutput:
    """Search the knowledge base (GPU notes in Chinese and English) and return passages to cite by id."""
    return SearchKnowledgeOutput(passages=search(inp.query, k=inp.k, lang=inp.lang, topics=inp.topics))
