"""The knowledge index: notes -> chunks -> embeddings -> one Chroma collection, kept in step incrementally.

Every chunk carries a content hash. `sync()` chunks the corpus, compares ids and hashes with what
the collection holds, and writes only the difference: new chunks are added, changed ones upserted,
chunks of deleted notes (or sections) removed. An unchanged corpus costs one read and no write.

The corpus is the shipped notes (`knowledge/docs`) plus every folder a user has indexed; those
folders are remembered in `<data dir>/kb-manifest.json`, so `gpu-advisor kb index` with no argument
refreshes all of them, and a folder that disappeared has its documents removed.

Backends
    embedded (default)  `chromadb.PersistentClient(<data dir>/chroma)`. SQLite underneath, so ONE writer:
                        writes take an exclusive lock on `<data dir>/chroma.lock`; a second writer
                        waits `lock_timeout_s`, then gets `IndexBusy` naming the holder's pid.
    server              `chromadb.HttpClient(CHROMA_HOST, CHROMA_PORT)`, for several bot workers or
                        machines: start `chroma run --path /var/lib/chroma --host 0.0.0.0 --port 8000`,
                        point every worker at it, and run `gpu-advisor kb index` once from any of them.

A missing index is built on first use; an embedded index that cannot be read is moved aside to
`chroma.broken-<time>` and rebuilt from the notes, with a notice saying so (`KnowledgeIndex.notices`).
A start first compares a stamp of the note files (`knowledge.stamp`): when nothing changed since the last
sync, it reads no note at all.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from knowledge.chunking import chunk_note
from knowledge.config import KnowledgeConfig
from knowledge.errors import IndexUnavailable
from knowledge.lexical import bulk, remember_tokens, warm_up
from knowledge.lock import one_writer
from knowledge.notes import BUILTIN, CorpusRoot, load_corpus
from knowledge.records import IndexStats, StoredChunk, SyncReport, from_record, metadata, stored_from
from knowledge.stamp import forget_stamp, matching_stamp, save_stamp, take_stamp
from knowledge.vectors import HashingVectors, collection_suffix

log = logging.getLogger("gpu_advisor.knowledge")

COLLECTION_PREFIX = "gpu-advisor-kb"
_BATCH = 128
Progress = Callable[[int, int], None]


class KnowledgeIndex:
    """One Chroma collection of chunks (see the module docstring for backends and locking)."""

    def __init__(self, config: KnowledgeConfig, embedding: Any = None, *, client: Any = None):
        self.config = config
        self._embedding = embedding
        suffix = embedding.collection_suffix if embedding is not None else collection_suffix(config.embeddings)
        self.collection_name = f"{COLLECTION_PREFIX}-{suffix}"
        self.notices: list[str] = []
        #: files of user folders left out at the last sync (links out of the folder, binaries, oversize, ...)
        self.skipped: list[str] = []
        self._client = client
        self._collection: Any = None

    @property
    def embedding(self) -> Any:
        """Chroma's embedding function (chromadb is imported only when the collection or this is first used)."""
        if self._embedding is None:
            from knowledge.embeddings import make_embedding

            self._embedding = make_embedding(self.config.embeddings)
        return self._embedding

    @property
    def query_vectors(self) -> Any:
        """What embeds a query for the dense leg: the embedding itself, or the hashing vectors without chromadb."""
        if self._embedding is None and not self.config.embeddings.remote:
            return HashingVectors()
        return self.embedding

    # --- opening -------------------------------------------------------------------------------
    @property
    def backend(self) -> str:
        return "server" if self.config.server else "embedded"

    def _make_client(self) -> Any:
        import chromadb
        from chromadb.config import Settings

        settings = Settings(anonymized_telemetry=False)
        if self.config.server:
            return chromadb.HttpClient(host=self.config.host, port=self.config.port, settings=settings)
        self.config.chroma_path.mkdir(parents=True, exist_ok=True)
        return chromadb.PersistentClient(path=str(self.config.chroma_path), settings=settings)

    def _open(self) -> Any:
        self._client = self._client or self._make_client()
        collection = self._client.get_or_create_collection(
            self.collection_name, embedding_function=self.embedding, configuration={"hnsw": {"space": "cosine"}}
        )
        collection.count()  # touch the store, so a broken one fails here
        return collection

    def collection(self) -> Any:
        if self._collection is not None:
            return self._collection
        try:
            self._collection = self._open()
        except Exception as err:
            if self.config.server:
                raise self._unavailable(err) from None
            if isinstance(err, PermissionError):
                raise IndexUnavailable(
                    f"Cannot write the knowledge index at {self.config.chroma_path} ({err}); "
                    "set GPU_ADVISOR_DATA_DIR to a writable folder.",
                    f"无法写入知识库索引 {self.config.chroma_path}（{err}）；请把 GPU_ADVISOR_DATA_DIR 设为可写的目录。",
                    field="data_dir",
                ) from None
            self._recover(err)
        return self._collection

    def _unavailable(self, err: Exception) -> IndexUnavailable:
        where = self.config.location
        return IndexUnavailable(
            f"The Chroma server at {where} cannot be used ({type(err).__name__}: {err}). "
            "Start it (`chroma run --path DIR --host 127.0.0.1 --port 8000`) or unset CHROMA_HOST/CHROMA_PORT.",
            f"无法使用 {where} 的 Chroma 服务（{type(err).__name__}：{err}）。"
            "请启动它（`chroma run --path DIR --host 127.0.0.1 --port 8000`），或取消设置 CHROMA_HOST/CHROMA_PORT。",
            field="chroma",
        )

    def _recover(self, err: Exception) -> None:
        """Move an unreadable embedded index aside and start an empty one (filled by the next sync)."""
        with self._write_lock():
            self._close_client(forget_cached=True)
            try:  # another process may have been mid-write: look once more under the lock
                self._collection = self._open()
                return
            except Exception:
                self._close_client(forget_cached=True)
            path = self.config.chroma_path
            broken = path.with_name(f"{path.name}.broken-{time.strftime('%Y%m%d-%H%M%S')}")
            if path.exists():
                path.rename(broken)
            notice = (
                f"The knowledge index at {path} could not be read ({type(err).__name__}: {err}); "
                f"moved it to {broken.name} and rebuilt it from the notes."
            )
            self.notices.append(notice)
            log.warning(notice)
            self._collection = self._open()
            plan = self._plan(self._roots())
            self._apply(plan[1] + plan[2], plan[3], None)

    def _close_client(self, *, forget_cached: bool = False) -> None:
        client, self._client, self._collection = self._client, None, None
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()
        if forget_cached and not self.config.server:
            # Chroma shares one system per path in a process; after a failure drop it so a reopen is fresh
            from chromadb.api.shared_system_client import SharedSystemClient

            system = SharedSystemClient._identifier_to_system.pop(str(self.config.chroma_path), None)
            SharedSystemClient._identifier_to_refcount.pop(str(self.config.chroma_path), None)
            if system is not None:
                with contextlib.suppress(Exception):
                    system.stop()

    def close(self) -> None:
        """Release this index's Chroma client (other clients on the same path keep working)."""
        self._close_client()

    # --- locking ---------------------------------------------------------------------------------
    def _write_lock(self) -> contextlib.AbstractContextManager[None]:
        if self.config.server:  # the server serialises writes itself
            return contextlib.nullcontext()
        return one_writer(self.config.lock_path, self.config.lock_timeout_s, self.config.chroma_path)

    # --- the corpus -------------------------------------------------------------------------------
    def _manifest(self) -> dict[str, Any]:
        try:
            data = json.loads(self.config.manifest_path.read_text(encoding="utf-8"))
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def user_roots(self) -> list[str]:
        return [str(r) for r in self._manifest().get("roots", [])]

    def _roots(self, extra: Sequence[Path] = (), forget: Sequence[Path] = ()) -> list[CorpusRoot]:
        forgotten = {str(p.expanduser().resolve()) for p in forget}
        roots = [CorpusRoot(self.config.docs_dir, BUILTIN)]
        seen = set()
        for r in [*(Path(p) for p in self.user_roots()), *extra]:
            root = CorpusRoot.user(r)
            if root.origin in seen or root.origin in forgotten:
                continue
            seen.add(root.origin)
            if not root.path.exists():
                self.notices.append(f"{root.path} no longer exists; its documents were removed from the index.")
                continue
            roots.append(root)
        return roots

    def corpus_roots(self) -> list[CorpusRoot]:
        """The folders the chunks are made from: the shipped notes and the remembered user folders still there."""
        return self._roots()

    def stored(self) -> list[StoredChunk]:
        """Every chunk the collection holds, in id order."""
        return self.stored_with_vectors(vectors=False)[0]

    def stored_with_vectors(self, vectors: bool = True) -> tuple[list[StoredChunk], np.ndarray | None]:
        """Every chunk the collection holds, in id order, and (when asked) their stored vectors, row for row."""
        col = self.collection()
        rows: list[tuple[StoredChunk, Any]] = []
        offset = 0
        include = ["documents", "metadatas", *(["embeddings"] if vectors else [])]
        while True:
            page = col.get(include=include, limit=1000, offset=offset)
            ids = page["ids"]
            docs = page["documents"] or [None] * len(ids)
            metas = page["metadatas"] or [None] * len(ids)
            embs = page.get("embeddings") if vectors else None
            embs = [None] * len(ids) if embs is None else embs
            rows += [(from_record(i, d, m), e) for i, d, m, e in zip(ids, docs, metas, embs, strict=True)]
            if len(ids) < 1000:
                break
            offset += 1000
        rows.sort(key=lambda r: r[0].id)
        matrix = np.asarray([r[1] for r in rows], dtype=np.float32) if vectors and rows else None
        return [r[0] for r in rows], matrix

    # --- writing ---------------------------------------------------------------------------------
    def sync(
        self, paths: Sequence[Path] = (), *, forget: Sequence[Path] = (), progress: Progress | None = None
    ) -> SyncReport:
        """Bring the index in step with the shipped notes, the remembered folders and `paths`.

        Takes the write lock only when something has to be written.
        """
        self.notices.clear()
        self.collection()  # may rebuild a broken index (and report it)
        roots = self._roots(paths, forget)
        report = self._sync(roots, progress)
        report.notices = [*self.notices, *self.skipped]
        return report

    def ensure_built(self) -> SyncReport | None:
        """Build or refresh the index when it is empty or the notes changed; None when already in step.

        A Chroma server's collection is shared: once it holds chunks, only `sync()` (`gpu-advisor kb index`,
        the deployment's index job) changes it. A worker starting on another machine, or an older version
        during a rolling upgrade, must not rewrite it or drop folders it never saw.
        """
        self.notices.clear()
        count = self.collection().count()  # a broken index is rebuilt here, with a notice
        was_empty = count == 0
        if self.config.server and not was_empty:
            return None
        roots = self._roots()
        state = self._state(roots)
        if state is not None and not was_empty and not self.notices:
            saved = matching_stamp(self.config.data_dir, state, count)
            if saved is not None:  # the notes are as the last sync left them: nothing to read
                self.skipped = [str(m) for m in saved.get("skipped", [])]
                if not self.skipped:
                    return None
                return SyncReport(notices=list(self.skipped), unchanged=count, docs=int(saved.get("docs", 0)))
        report = self._sync(roots, lenient=True, state=state)  # a bad file in a remembered folder never stops a start
        report.notices = [*self.notices, *self.skipped]
        if was_empty and report.added:
            notice = (
                f"The knowledge index at {self.config.location} was missing or empty; "
                f"built it from {report.docs} documents ({report.added} chunks)."
            )
            log.info(notice)
            report.notices.append(notice)
            self.notices.append(notice)
        return report if report.changed or report.notices else None

    def _plan(
        self, roots: list[CorpusRoot], lenient: bool = False
    ) -> tuple[int, list[StoredChunk], list[StoredChunk], list[str], int]:
        skipped: list[str] = []
        notes = load_corpus(roots, skipped, lenient=lenient)
        self.skipped = skipped
        for message in skipped:
            log.warning("knowledge: %s", message)
        wanted = {c.id: c for note in notes for c in (stored_from(note, ch) for ch in chunk_note(note))}
        held = {c.id: c.hash for c in self.stored()}
        new = [c for i, c in wanted.items() if i not in held]
        changed = [c for i, c in wanted.items() if i in held and held[i] != c.hash]
        gone = sorted(set(held) - set(wanted))
        return len(notes), new, changed, gone, len(wanted)

    def _state(self, roots: list[CorpusRoot]) -> dict[str, Any] | None:
        """The notes' stamp (embedded index only; None when a file cannot be looked at)."""
        if self.config.server:
            return None
        try:
            return take_stamp(self.collection_name, roots)
        except OSError:
            return None

    def _sync(
        self,
        roots: list[CorpusRoot],
        progress: Progress | None = None,
        lenient: bool = False,
        state: dict[str, Any] | None = None,
    ) -> SyncReport:
        state = state or self._state(roots)  # taken before the notes are read: an edit meanwhile shows next time
        plan = self._plan(roots, lenient)
        if plan[1] or plan[2] or plan[3] or self._manifest_for(roots) != self._manifest():
            with self._write_lock():
                if not self.config.server:
                    forget_stamp(self.config.data_dir)
                plan = self._plan(roots, lenient)  # again, under the lock: another writer may have been first
                self._apply(plan[1] + plan[2], plan[3], progress)
                self._save_manifest(roots)
        docs, new, changed, gone, wanted = plan
        if state is not None:
            save_stamp(self.config.data_dir, state, chunks=wanted, docs=docs, skipped=list(self.skipped))
        return SyncReport(
            notices=list(self.skipped),
            added=len(new),
            updated=len(changed),
            removed=len(gone),
            unchanged=wanted - len(new) - len(changed),
            docs=docs,
        )

    def _apply(self, todo: list[StoredChunk], gone: list[str], progress: Progress | None) -> None:
        col = self.collection()
        if todo:
            # the hashing embedding cuts the text with jieba: through the word store beside the index (written now
            # when missing), or with the whole dictionary when there is a lot of text
            warm_up(self.config.data_dir)
            bulk(sum(len(c.text) for c in todo))
        total = len(todo) + len(gone)
        if progress:
            progress(0, total)
        for start in range(0, len(todo), _BATCH):
            batch = todo[start : start + _BATCH]
            col.upsert(
                ids=[c.id for c in batch],
                documents=[c.text for c in batch],
                metadatas=[metadata(c) for c in batch],
                embeddings=self.embedding([c.text for c in batch]),
            )
            if progress:
                progress(start + len(batch), total)
        for start in range(0, len(gone), _BATCH):
            col.delete(ids=gone[start : start + _BATCH])
        if progress and gone:
            progress(total, total)
        if todo:
            remember_tokens(self.config.data_dir, [(c.hash, c.text) for c in todo])

    @staticmethod
    def _manifest_for(roots: list[CorpusRoot]) -> dict[str, Any]:
        return {"roots": [r.origin for r in roots if r.origin != BUILTIN]}

    def _save_manifest(self, roots: list[CorpusRoot]) -> None:
        data = self._manifest_for(roots)
        if data != self._manifest():
            self.config.manifest_path.parent.mkdir(parents=True, exist_ok=True)
            self.config.manifest_path.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")

    # --- reading ---------------------------------------------------------------------------------
    def dense(
        self, text: str, n: int, where: dict[str, Any] | None = None, total: int | None = None
    ) -> list[tuple[str, float]]:
        """(chunk id, cosine distance) of the `n` nearest chunks to `text`.

        `total` is the number of stored chunks when the caller already knows it (saves a round trip).
        """
        col = self.collection()
        count = col.count() if total is None else total
        if count == 0 or n <= 0:
            return []
        vec = self.embedding([text])
        res = col.query(query_embeddings=vec, n_results=min(n, count), where=where or None, include=["distances"])
        return list(zip(res["ids"][0], res["distances"][0], strict=True))

    def stats(self) -> IndexStats:
        return IndexStats.of(
            self.stored(), self.backend, self.config.location, self.collection_name, self.embedding.name()
        )
