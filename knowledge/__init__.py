"""The knowledge base: notes in `knowledge/docs`, a Chroma index and hybrid retrieval.

Import from the submodules (`from knowledge.search import Retriever`); the package keeps no state.
"""

from knowledge.config import EmbeddingConfig, KnowledgeConfig, KnowledgeSettings
from knowledge.errors import BadNote, IndexBusy, IndexUnavailable, KnowledgeError

__all__ = [
    "BadNote",
    "EmbeddingConfig",
    "IndexBusy",
    "IndexUnavailable",
    "KnowledgeConfig",
    "KnowledgeError",
    "KnowledgeSettings",
]
