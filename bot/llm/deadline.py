"""One deadline per answer, across every model request of it (the tool rounds, the repair round).

    with answer_deadline(time.monotonic() + 60):
        agent.invoke(...)            # every request made by the chat model's httpx client obeys it

`instrument(client)` adds two event hooks to the chat model's `httpx.Client`:

  * before a request: its connect/read/write/pool timeouts become the time left (at most the
    per-request cap), and a request is not even sent once the deadline has passed;
  * on a response: its body is read through a stream that raises `httpx.ReadTimeout` as soon as a
    chunk arrives after the deadline. A per-read timeout alone never stops a model that keeps
    streaming (a degenerate loop sends a token every few milliseconds); this does.

The deadline travels in a context variable, so concurrent answers on other threads each keep their own.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("gpu_advisor_llm_deadline", default=None)


@contextmanager
def answer_deadline(at: float) -> Iterator[None]:
    """Run the block under a deadline at `time.monotonic()` value `at`."""
    token = _DEADLINE.set(at)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def remaining() -> float | None:
    """Seconds left before the current answer's deadline (None: no deadline set)."""
    at = _DEADLINE.get()
    return None if at is None else at - time.monotonic()


class DeadlineExceeded(httpx.TimeoutException):
    """The answer's deadline passed (before a request, or while a reply was still streaming)."""


class _DeadlineStream(httpx.SyncByteStream):
    def __init__(self, inner: httpx.SyncByteStream, at: float, request: httpx.Request):
        self.inner, self.at, self.request = inner, at, request

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.inner:
            if time.monotonic() > self.at:
                raise DeadlineExceeded(
                    "the answer's deadline passed while the model was still writing", request=self.request
                )
            yield chunk

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if close is not None:
            close()


def _before(request: httpx.Request) -> None:
    at = _DEADLINE.get()
    if at is None:
        return
    left = at - time.monotonic()
    if left <= 0:
        raise DeadlineExceeded("the answer's deadline passed before the request was sent", request=request)
    current = request.extensions.get("timeout") or {}
    request.extensions["timeout"] = {k: min(current.get(k) or left, left) for k in ("connect", "read", "write", "pool")}


def _after(response: httpx.Response) -> None:
    """The body must be complete by the answer's deadline and, at most, one request timeout after the
    headers: a server dripping keep-alive bytes is cut off even when each read is quick."""
    read = (response.request.extensions.get("timeout") or {}).get("read")
    limits = [x for x in (_DEADLINE.get(), time.monotonic() + read if read else None) if x is not None]
    if limits and isinstance(response.stream, httpx.SyncByteStream):
        response.stream = _DeadlineStream(response.stream, min(limits), response.request)


def instrument(client: httpx.Client) -> httpx.Client:
    """Make `client` obey the answer deadline (idempotent)."""
    hooks = client.event_hooks
    if _before not in hooks["request"]:
        client.event_hooks = {"request": [*hooks["request"], _before], "response": [*hooks["response"], _after]}
    return client
