"""A cheap "the notes did not change" check, so a start does not read, chunk and hash every note.

After each sync of an embedded index, `<data dir>/kb-stamp.json` records the collection, the folders,
the size and modification time of every note file (taken before the notes were read) and of the code that
turns notes into chunks, and what the sync left: chunk and document counts, the files it skipped. A start
whose stamp is the same and whose collection still holds that many chunks is in step; anything else (an
edited, added or removed file, a folder gone, a new version, a count that moved) takes the full check.

A file modified within `RACY_NS` of its stat could change again without its size or time showing it (a
coarse clock), so such a stamp is not written: the next start checks in full and writes it then.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from knowledge.notes import CorpusRoot, note_files

STAMP_FILE = "kb-stamp.json"
RACY_NS = 2_000_000_000
#: the code that turns notes into chunks and their hashes
_CODE = [Path(__file__).with_name(name) for name in ("notes.py", "chunking.py", "index.py")]


def take_stamp(collection: str, roots: Sequence[CorpusRoot]) -> dict[str, Any]:
    """The state a sync is about to read: what it depends on, each file by (path, size, mtime)."""
    taken = time.time_ns()
    files: list[list[Any]] = []
    for root in roots:
        for path in note_files(root.path, []):
            st = os.stat(path)
            files.append([root.origin, str(path), st.st_size, st.st_mtime_ns])
    code = [[p.name, st.st_size, st.st_mtime_ns] for p in _CODE for st in [os.stat(p)]]
    newest = max((f[3] for f in files), default=0)
    return {
        "collection": collection,
        "roots": [r.origin for r in roots],
        "files": files,
        "code": code,
        "racy": newest >= taken - RACY_NS,
    }


def _path(data_dir: Path) -> Path:
    return data_dir / STAMP_FILE


def forget_stamp(data_dir: Path) -> None:
    """Drop the stamp (before a write: a sync cut short must not leave the old one standing)."""
    with contextlib.suppress(OSError):
        os.remove(_path(data_dir))


def save_stamp(data_dir: Path, state: dict[str, Any], *, chunks: int, docs: int, skipped: list[str]) -> None:
    if state.get("racy"):
        return
    data = {**state, "chunks": chunks, "docs": docs, "skipped": skipped}
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=data_dir, prefix=".kb-stamp-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, ensure_ascii=False)
        os.chmod(tmp, 0o644)
        os.replace(tmp, _path(data_dir))
    except OSError:
        if tmp:
            with contextlib.suppress(OSError):
                os.remove(tmp)


def matching_stamp(data_dir: Path, state: dict[str, Any], chunks: int) -> dict[str, Any] | None:
    """The saved stamp when it describes `state` and a collection of `chunks` chunks, else None."""
    if state.get("racy"):
        return None
    try:
        saved = json.loads(_path(data_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(saved, dict) or saved.get("chunks") != chunks:
        return None
    if any(saved.get(k) != v for k, v in state.items()):
        return None
    return saved
