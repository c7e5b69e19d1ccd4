"""The dense leg read without Chroma: the hashing vectors, an exact cosine search over the chunks' stored vectors,
and a cache of the chunks and their vectors beside the index, so a warm start reads neither Chroma nor its imports.

Chroma stays the store: every sync writes chunks and vectors there, and a cold start reads them back from it. The
reading side then holds the vectors in memory (up to `MAX_FLOATS`; a larger index is searched by Chroma as before)
and ranks by exact cosine distance, computed in float64, ties by chunk id: the same neighbours Chroma's HNSW index
gives for this corpus (its approximate search and float32 sums can only differ on near-ties).

The cache (`<data dir>/kb-cache.npz`, one file written atomically) is keyed by a digest of what the chunks are made
from: the bytes of every note file, the code that chunks them, the embedding, the folders, and the stamp the last
sync wrote (`knowledge.stamp`; a sync drops it before it writes). A note edited, added or removed, a folder gone, a
new version, a sync since: another key, the cache is not read, the start goes through Chroma and writes it again.
Only an embedded index with the hashing embedding is cached (a Chroma server's collection changes under us).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import tempfile
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from knowledge.config import EmbeddingConfig
from knowledge.lexical import normalize, tokenize
from knowledge.notes import note_files, slug
from knowledge.records import StoredChunk
from knowledge.stamp import STAMP_FILE

CACHE_FILE = "kb-cache.npz"
FORMAT = 1
#: vectors held for the exact search (float64: 32 MB); a larger index is searched by Chroma
MAX_FLOATS = 4_000_000
#: the code whose change changes the chunks, their records or their vectors
_CODE = [Path(__file__).with_name(n) for n in ("notes.py", "chunking.py", "records.py", "index.py", "vectors.py")]

_LATIN_WORD = re.compile(r"[a-z0-9]+")
_CJK_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def _features(text: str) -> Counter[str]:
    feats: Counter[str] = Counter()
    for tok in tokenize(text):
        feats["t:" + tok] += 1.0
    norm = normalize(text)
    for word in _LATIN_WORD.findall(norm):
        padded = f"<{word}>"
        for i in range(len(padded) - 2):
            feats["g:" + padded[i : i + 3]] += 0.5
    for ch in _CJK_CHAR.findall(norm):
        feats["c:" + ch] += 0.3
    return feats


class HashingVectors:
    """Signed feature hashing into `dim` dimensions (`knowledge.embeddings.HashingEmbedding` is this, for Chroma)."""

    VERSION = 1
    #: below this cosine similarity a dense hit is noise (hash collisions), not a match
    min_similarity = 0.05
    #: its weight in rank fusion: it mostly re-reads the lexical tokens, so it counts half (tuned on the golden set)
    fusion_weight = 0.5

    def __init__(self, dim: int = 1024):
        if not 64 <= dim <= 8192:
            raise ValueError("dim must be between 64 and 8192")
        self.dim = dim

    def embed_one(self, text: str) -> np.ndarray:
        vec = np.zeros(self.dim, dtype=np.float32)
        for feat, weight in _features(text).items():
            h = zlib.crc32(feat.encode("utf-8"))
            sign = 1.0 if h & 0x80000000 else -1.0
            vec[h % self.dim] += sign * math.log1p(weight)
        norm = float(np.linalg.norm(vec))
        if norm == 0.0:
            vec[0] = 1.0  # an empty text still needs a valid unit vector
            return vec
        return vec / norm

    def __call__(self, input: list[str]) -> list[np.ndarray]:
        return [self.embed_one(t) for t in input]

    @property
    def collection_suffix(self) -> str:
        return f"hash{self.dim}v{self.VERSION}"


def remote_suffix(model: str, base_url: str | None) -> str:
    """The collection suffix of an OpenAI-compatible embedding: its model and (a digest of) its endpoint."""
    where = zlib.crc32((base_url or "openai").encode()) & 0xFFFF
    name = re.sub(r"[^a-z0-9.-]+", "-", slug(model, fallback="model", limit=40)).strip("-.") or "model"
    return f"oai-{name}-{where:04x}"


def collection_suffix(config: EmbeddingConfig) -> str:
    """The suffix of the collection a configured embedding writes to, without building it."""
    return remote_suffix(config.model or "", config.base_url) if config.remote else HashingVectors().collection_suffix


def unit_rows(vectors: np.ndarray | None, count: int) -> np.ndarray | None:
    """The stored vectors as float64 unit rows for the exact search; None when there are none or too many."""
    if vectors is None or vectors.ndim != 2 or len(vectors) != count or vectors.size > MAX_FLOATS:
        return None
    rows = vectors.astype(np.float64)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)


def nearest(
    units: np.ndarray, ids: list[str], query: np.ndarray, n: int, allowed: np.ndarray
) -> list[tuple[str, float]]:
    """(chunk id, cosine distance) of the `n` allowed rows nearest to `query`, nearest first, ties by row (id) order."""
    q = np.asarray(query, dtype=np.float64)
    norm = float(np.linalg.norm(q))
    rows = np.flatnonzero(allowed)
    if norm == 0.0 or n <= 0 or not len(rows):
        return []
    distances = 1.0 - units[rows] @ (q / norm)
    order = np.lexsort((rows, distances))[:n]
    return [(ids[rows[i]], float(distances[i])) for i in order]


# ---- the cache ------------------------------------------------------------------------------------------------
def content_key(index: Any) -> str | None:
    """A digest of what the index's chunks are made from (see the module docstring); None when not cached."""
    config = index.config
    if config.server or config.embeddings.remote or not isinstance(index.query_vectors, HashingVectors):
        return None
    digest = hashlib.sha256(f"{FORMAT}\0{index.collection_name}\0".encode())
    try:
        digest.update((config.data_dir / STAMP_FILE).read_bytes())
        for path in _CODE:
            digest.update(b"\0" + hashlib.sha256(path.read_bytes()).digest())
        for root in index.corpus_roots():
            digest.update(f"\0root\0{root.origin}\0{root.path}".encode())
            for path in note_files(root.path, []):
                digest.update(f"\0{path}\0".encode() + hashlib.sha256(path.read_bytes()).digest())
    except OSError:
        return None
    return digest.hexdigest()


def load_cache(data_dir: Path, key: str | None) -> tuple[list[StoredChunk], np.ndarray] | None:
    """The chunks and vectors cached under `key`; None when there is no such cache (or it cannot be read)."""
    if key is None:
        return None
    try:
        with np.load(data_dir / CACHE_FILE, allow_pickle=False) as data:
            if str(data["key"]) != key:
                return None
            rows = json.loads(data["chunks"].tobytes().decode("utf-8"))
            vectors = np.array(data["vectors"], dtype=np.float32)
        chunks = [StoredChunk(**row) for row in rows]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return (chunks, vectors) if len(vectors) == len(chunks) else None


def save_cache(data_dir: Path, key: str, chunks: list[StoredChunk], vectors: np.ndarray) -> None:
    """Write the cache atomically (a reader sees the old file or the new one); a failure only leaves no cache."""
    rows = json.dumps([c.model_dump(mode="json") for c in chunks], ensure_ascii=False).encode("utf-8")
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=data_dir, prefix=".kb-cache-", suffix=".npz")
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, key=np.array(key), chunks=np.frombuffer(rows, dtype=np.uint8), vectors=vectors)
        os.chmod(tmp, 0o644)
        os.replace(tmp, data_dir / CACHE_FILE)
    except OSError:
        if tmp:
            with contextlib.suppress(OSError):
                os.remove(tmp)
