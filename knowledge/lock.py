"""One writer at a time for the embedded index: Chroma's embedded store is SQLite underneath."""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from knowledge.errors import IndexBusy


@contextlib.contextmanager
def one_writer(lock_path: Path, timeout_s: float, index_path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `lock_path` (writing our pid into it) while the block runs; after
    `timeout_s` of waiting, `IndexBusy` names the pid that holds it."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+") as fh:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    fh.seek(0)
                    holder = fh.read().strip() or "unknown"
                    raise IndexBusy(
                        f"Another process (pid {holder}) is writing the knowledge index at {index_path}. "
                        "Wait for it to finish and retry; for several writers run a Chroma server (CHROMA_HOST).",
                        f"另一个进程（pid {holder}）正在写入知识库索引 {index_path}。"
                        "请等它完成后重试；多个进程同时写入时请使用 Chroma 服务（CHROMA_HOST）。",
                        field="index",
                    ) from None
                time.sleep(0.1)
        try:
            fh.seek(0)
            fh.truncate()
            fh.write(str(os.getpid()))
            fh.flush()
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
