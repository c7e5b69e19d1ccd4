"""How a note's chunk is stored in Chroma and read back: the record's text, its metadata and a content hash
that tells `KnowledgeIndex.sync` whether the stored copy is still current."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict

from knowledge.chunking import Chunk
from knowledge.notes import Note


class StoredChunk(BaseModel):
    """A chunk as the index holds it: text plus the note's metadata."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    doc_id: str
    title: str
    lang: str
    topics: tuple[str, ...] = ()
    source: str
    origin: str
    path: str
    section: str
    text: str
    hash: str


def stored_from(note: Note, chunk: Chunk) -> StoredChunk:
    fields = {
        "id": chunk.id,
        "doc_id": note.doc_id,
        "title": note.title,
        "lang": note.lang,
        "topics": note.topics,
        "source": note.source,
        "origin": note.origin,
        "path": note.path,
        "section": chunk.section,
        "text": chunk.text,
    }
    digest = hashlib.sha256(json.dumps(fields, ensure_ascii=False, sort_keys=True).encode()).hexdigest()[:32]
    return StoredChunk(**fields, hash=digest)


def metadata(c: StoredChunk) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "doc_id": c.doc_id,
        "title": c.title,
        "lang": c.lang,
        "source": c.source,
        "origin": c.origin,
        "path": c.path,
        "section": c.section,
        "hash": c.hash,
    }
    if c.topics:  # Chroma refuses empty lists
        meta["topics"] = list(c.topics)
    return meta


def from_record(chunk_id: str, text: str | None, meta: dict[str, Any] | None) -> StoredChunk:
    meta = meta or {}
    return StoredChunk(
        id=chunk_id,
        doc_id=str(meta.get("doc_id", chunk_id.split("#")[0])),
        title=str(meta.get("title", "")),
        lang=str(meta.get("lang", "en")),
        topics=tuple(meta.get("topics") or ()),
        source=str(meta.get("source", "")),
        origin=str(meta.get("origin", "")),
        path=str(meta.get("path", "")),
        section=str(meta.get("section", "")),
        text=text or "",
        hash=str(meta.get("hash", "")),
    )


class SyncReport(BaseModel):
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    docs: int = 0
    notices: list[str] = []

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed)


class IndexStats(BaseModel):
    docs: int
    chunks: int
    languages: dict[str, int]
    topics: dict[str, int]
    origins: dict[str, int]
    backend: str
    location: str
    collection: str
    embedding: str

    @classmethod
    def of(cls, chunks: list[StoredChunk], backend: str, location: str, collection: str, embedding: str) -> IndexStats:
        """The figures of an index holding `chunks` (documents counted once, by their first chunk)."""
        docs: dict[str, StoredChunk] = {}
        for c in chunks:
            docs.setdefault(c.doc_id, c)
        return cls(
            docs=len(docs),
            chunks=len(chunks),
            languages=dict(Counter(c.lang for c in docs.values())),
            topics=dict(Counter(t for c in docs.values() for t in c.topics).most_common()),
            origins=dict(Counter(c.origin for c in docs.values())),
            backend=backend,
            location=location,
            collection=collection,
            embedding=embedding,
        )
