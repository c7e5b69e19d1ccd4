"""Errors of the knowledge base, in the project's error tree so every edge shows them as one line.

AdvisorError (tools.errors)
 └── KnowledgeError
      ├── IndexBusy          another process holds the embedded index's write lock
      ├── IndexUnavailable   the Chroma server or the embeddings endpoint cannot be reached
      └── BadNote            a note that cannot be read (front matter, duplicate id)
"""

from __future__ import annotations

from tools.errors import AdvisorError


class KnowledgeError(AdvisorError):
    """Base class for knowledge-base errors."""


class IndexBusy(KnowledgeError):
    pass


class IndexUnavailable(KnowledgeError):
    pass


class BadNote(KnowledgeError):
    pass
