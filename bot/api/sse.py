"""Server-sent events for the API: framing, headers, and keep-alive comments while the advisor works.

The advisor's `stream()` is a blocking iterator (it waits on tool calls and the language model).
`with_keepalive` pulls from it in a worker thread and yields `None` whenever nothing arrived for
`seconds`, which the caller turns into a `: keep-alive` comment so proxies and browsers keep the
connection open during a long tool call. If the client goes away, the answer still completes in its
thread and is stored (nothing a user sent is lost).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import anyio.to_thread

#: no buffering by nginx (`X-Accel-Buffering`) or by caches
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no", "Connection": "keep-alive"}
KEEPALIVE = ": keep-alive\n\n"

STREAM_THREADS = 64  # threads that wait on streams, apart from the pool that runs plain handlers


def stream_limiter() -> anyio.CapacityLimiter:
    """Made in the app's lifespan (inside its event loop), shared by its streams."""
    return anyio.CapacityLimiter(STREAM_THREADS)


def event(data: dict[str, Any] | str, name: str | None = None) -> str:
    """One SSE event: an optional `event:` line, one `data:` line, a blank line."""
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {payload}\n\n"


async def with_keepalive(
    items: Iterator[dict[str, Any]], seconds: float, limiter: anyio.CapacityLimiter | None = None
) -> AsyncIterator[dict[str, Any] | None]:
    """The items of a blocking iterator, with `None` after every `seconds` of silence."""
    done = object()
    pending: asyncio.Future | None = None
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(anyio.to_thread.run_sync(next, items, done, limiter=limiter))
            finished, _ = await asyncio.wait({pending}, timeout=seconds)
            if not finished:
                yield None
                continue
            item = pending.result()
            pending = None
            if item is done:
                return
            yield item
    finally:
        if pending is not None and not pending.done():
            # the worker thread is still inside next(); let it finish on its own
            pending.add_done_callback(lambda f: f.exception() if not f.cancelled() else None)
