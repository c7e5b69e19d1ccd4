"""How the API is served: uvicorn with limits that keep slow or abusive clients from holding it.

uvicorn alone closes idle keep-alive connections (`timeout_keep_alive`) and answers 503 over
`limit_concurrency`, but it waits forever for the headers of a request that is sent a byte at a
time, and every such half-sent request holds a file descriptor. `GuardedH11Protocol` adds:

- a header deadline: a connection that has not sent a complete request head within
  `header_timeout_s` of connecting (or of its previous response) is closed;
- a cap on open connections: over `connection_cap(settings)`, a new connection is closed at once, before
  the process runs out of file descriptors and locks everyone out. The cap is `max_connections`, lowered
  to the process's open-file limit less `FD_HEADROOM` (the store, the index, logs and outbound calls need
  descriptors too), and the lowering is logged: the default 1,000 against the usual limit of 1,024 would
  otherwise let a flood of idle connections take the last descriptors.

The body deadline is the ASGI middleware `BodyTimeout` (bot.api.app installs it): a body not
complete within `body_timeout_s` of the first read is answered 408 and the connection closed.

    uvicorn.run("bot.api.app:create_app", factory=True, http="bot.api.server:GuardedH11Protocol", ...)

reads the limits from the environment (`ApiSettings`) once per worker process; tests build a
protocol with explicit limits with `guarded_protocol(settings)`.
"""

from __future__ import annotations

import asyncio
import logging
import math
from typing import Any

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from bot.api.errors import error_response, request_lang
from bot.api.settings import ApiSettings

log = logging.getLogger("gpu_advisor.api")

FD_HEADROOM = 128  # descriptors kept for everything that is not a client connection


def connection_cap(settings: ApiSettings) -> int:
    """min(GPU_ADVISOR_MAX_CONNECTIONS, RLIMIT_NOFILE - FD_HEADROOM), at least 1."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):  # no such limit here (Windows): the setting alone
        return settings.max_connections
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return settings.max_connections
    return max(1, min(settings.max_connections, soft - FD_HEADROOM))


def log_connection_cap(settings: ApiSettings) -> int:
    cap = connection_cap(settings)
    if cap < settings.max_connections:
        log.warning(
            "open connections capped at %d, below GPU_ADVISOR_MAX_CONNECTIONS=%d: the open-file limit leaves no more "
            "(raise it with `ulimit -n` or LimitNOFILE=)",
            cap,
            settings.max_connections,
        )
    else:
        log.info("open connections capped at %d", cap)
    return cap


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a header deadline and a cap on open connections."""

    settings: ApiSettings | None = None  # None: read from the environment on first use

    cap: int | None = None  # connection_cap(settings), worked out once

    @classmethod
    def _limits(cls) -> ApiSettings:
        if cls.settings is None:
            cls.settings = ApiSettings()
        return cls.settings

    @classmethod
    def _cap(cls) -> int:
        if cls.cap is None:
            cls.cap = connection_cap(cls._limits())
        return cls.cap

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._header_timer: asyncio.TimerHandle | None = None
        cap = self._cap()
        if len(self.connections) > cap:
            log.warning("refused a connection: %d open, the limit is %d", len(self.connections) - 1, cap)
            transport.abort()
            return
        self._arm()

    def _arm(self) -> None:
        self._waiting_for = self.cycle  # the head is complete once a new cycle exists
        self._header_timer = self.loop.call_later(self._limits().header_timeout_s, self._head_too_slow)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _head_too_slow(self) -> None:
        self._header_timer = None
        if self.cycle is self._waiting_for and not self.transport.is_closing():
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._header_timer is not None and self.cycle is not self._waiting_for:
            self._disarm()

    def on_response_complete(self) -> None:
        finished = self.cycle
        super().on_response_complete()
        if self.cycle is finished and not self.transport.is_closing():
            self._disarm()
            self._arm()  # the next request's head gets its own deadline

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


def guarded_protocol(settings: ApiSettings) -> type[GuardedH11Protocol]:
    """A protocol class with these limits (for servers started in-process, e.g. in tests)."""
    return type("GuardedH11Protocol", (GuardedH11Protocol,), {"settings": settings, "cap": None})


def uvicorn_options(settings: ApiSettings) -> dict[str, Any]:
    """The uvicorn options every way of serving uses (`gpu-advisor serve`, tests, bench)."""
    trusted = ",".join(_split_csv(settings.forwarded_allow_ips))
    cap = log_connection_cap(settings)
    return {
        # behind nginx or an ingress every caller arrives from the proxy's address: trust its
        # X-Forwarded-For only when told which proxies to trust, else a caller could pick its own address
        "proxy_headers": bool(trusted),
        "forwarded_allow_ips": trusted or None,
        "timeout_keep_alive": settings.keepalive_s,
        "limit_concurrency": cap,
        "backlog": min(2048, cap * 2),
        "h11_max_incomplete_event_size": 16 * 1024,  # request head
    }


def _split_csv(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


class BodyTimeout:
    """ASGI middleware: a request body must arrive within `seconds` of the first read, else 408.

    Only reads of the body are timed; once it is complete, a handler waiting for a disconnect (a
    stream) waits as long as it likes."""

    def __init__(self, app: ASGIApp, seconds: float | None = None):
        self.app = app
        self.seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        seconds = self.seconds or scope["app"].state.api_settings.body_timeout_s
        deadline: float | None = None
        body_done = False
        timed_out = False
        started = False

        async def timed_receive() -> Message:
            nonlocal deadline, body_done, timed_out
            if timed_out:
                return {"type": "http.disconnect"}
            if body_done:
                return await receive()
            if deadline is None:
                deadline = anyio.current_time() + seconds
            try:
                with anyio.fail_after(max(0.0, deadline - anyio.current_time())):
                    message = await receive()
            except TimeoutError:
                timed_out = True
                if not started:
                    await self._refuse(scope, send, seconds)
                return {"type": "http.disconnect"}
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_done = True
            return message

        async def tracked_send(message: Message) -> None:
            nonlocal started
            if timed_out and not started:
                return  # the 408 went out already
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        await self.app(scope, timed_receive, tracked_send)

    @staticmethod
    async def _refuse(scope: Scope, send: Send, seconds: float) -> None:
        from starlette.requests import Request

        zh = request_lang(Request(scope)) == "zh"
        whole = math.ceil(seconds)
        msg = f"请求体没有在 {whole} 秒内传完。" if zh else f"The request body did not arrive within {whole} s."
        rid = scope.get("state", {}).get("request_id")

        async def nothing() -> Message:
            return {"type": "http.disconnect"}

        await error_response(408, msg, code="body_timeout", request_id=rid, headers={"Connection": "close"})(
            scope, nothing, send
        )
