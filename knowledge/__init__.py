"""The knowledge base: notes in `knowledge/docs`, a Chroma index and hybrid retrieval.

The public entry point is the function `search(query, k=5, lang=None) -> list[Passage]` (the tenth
tool), served by a process-wide `Retriever` built from the environment on first use. The pieces live
in submodules: `notes` (loading), `chunking`, `embeddings`, `index` (Chroma), `lexical` (BM25),
`retrieval` (`Retriever`, `Passage`). Importing the package is cheap: the retrieval stack loads on
first use of `search`, `Passage` or `Retriever`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from knowledge.config import EmbeddingConfig, KnowledgeConfig, KnowledgeSettings
from knowledge.errors import BadNote, IndexBusy, IndexUnavailable, KnowledgeError

if TYPE_CHECKING:
    from knowledge.retrieval import Passage, Retriever, search

__all__ = [
    "BadNote",
    "EmbeddingConfig",
    "IndexBusy",
    "IndexUnavailable",
    "KnowledgeConfig",
    "KnowledgeError",
    "KnowledgeSettings",
    "Passage",
    "Retriever",
    "search",
]

_LAZY = {"search", "Passage", "Retriever"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from knowledge import retrieval

        return getattr(retrieval, name)
    raise AttributeError(f"module 'knowledge' has no attribute {name!r}")
