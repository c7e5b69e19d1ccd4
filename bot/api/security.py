"""Who may call the API and how much: bearer keys, a per-key rate limit, a request-body limit.

- Keys come from `GPU_ADVISOR_API_KEYS` and from the store's `api_keys` table (`bot.api.keys`). While no
  key exists the API is open (meant for 127.0.0.1); once one exists (or ever existed: revoking the
  last key does not open the API again) every /v1 route answers 401 without a valid
  `Authorization: Bearer <key>`.
- The rate limit is a token bucket per key (per client address when open): `rate` requests per
  minute, bursts up to that many; over it, 429 with `Retry-After` in whole seconds. Two limiters
  share one small interface (`Limiter.take`, in `bot.api.ratelimit`): `RateLimiter` counts in this process (the
  default), `RedisRateLimiter` keeps the buckets in Redis (`REDIS_URL`) so every worker draws on one budget;
  when Redis does not answer it counts in this process, with one warning, never an error.
- Bodies larger than `max_body_bytes` are refused with 413 before any handler reads them.
- `AuthGate` checks the key of every /v1 and /mcp request before a byte of its body is read, and counts failed
  authentications per client address: over `auth_failures_per_minute`, 429 without looking at the key.
- Tenancy: `Principal.owner` is who owns the conversations a request starts ("key:<id>" for a stored
  key, "key:env-N" for a key from the environment, "local" while the API is open); `admin` keys read
  every conversation.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated

import anyio.to_thread
from fastapi import Depends, Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bot.api import keys
from bot.api.errors import ApiError, error_response, request_lang
from bot.api.ratelimit import Limiter, RateLimiter
from bot.api.widget_auth import widget_caller
from bot.core.store import LOCAL_OWNER


@dataclass(frozen=True)
class Principal:
    """The caller of one request: a key (`key_id`) or, on an open API, a client address."""

    ident: str  # what the rate limit counts by
    key_id: str | None = None
    key_name: str | None = None
    admin: bool = False

    @property
    def owner(self) -> str:
        """The tenant its conversations belong to: the key, or the local user while the API is open."""
        return f"key:{self.key_id}" if self.key_id else LOCAL_OWNER


class KeyRing:
    """The keys from settings (hashed in memory) plus the store's table."""

    def __init__(self, static_keys: list[str], store):
        self._static = {keys.hash_key(k): f"env-{i + 1}" for i, k in enumerate(static_keys)}
        self.store = store
        self._required = bool(self._static)

    def required(self) -> bool:
        if not self._required:  # once a key exists the API never opens again: remember it
            self._required = keys.any_key(self.store)
        return self._required

    def check(self, token: str) -> Principal | None:
        digest = keys.hash_key(token)
        for known, label in self._static.items():
            if hmac.compare_digest(known, digest):
                return Principal(ident=f"key:{label}", key_id=label, key_name=label)
        info = keys.verify(self.store, token)
        if info is None:
            return None
        return Principal(ident=f"key:{info.id}", key_id=info.id, key_name=info.name, admin=info.admin)


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def _client_ident(request: Request) -> str:
    host = request.client.host if request.client else "unknown"
    return "ip:" + hashlib.sha256(host.encode()).hexdigest()[:16]


def identify(request: Request) -> Principal:
    """Who is calling: the key's principal, the local user while the API is open; 401 otherwise.
    Reads the store (blocking): the gate runs it in a worker thread."""
    ring: KeyRing = request.app.state.keyring
    zh = request_lang(request) == "zh"
    token = _bearer(request)
    if token and token.startswith(keys.WIDGET_PREFIX):  # a publishable key: widget routes only (widget_auth)
        ident, info = widget_caller(request, token, _client_ident(request))
        return Principal(ident=ident, key_id=info.id, key_name=info.name)
    principal = ring.check(token) if token else None
    if principal is None:
        if ring.required():
            if token:
                msg = "API 密钥无效或已吊销。" if zh else "The API key is not valid or has been revoked."
            else:
                msg = (
                    "缺少 API 密钥：请加上请求头 Authorization: Bearer <密钥>。"
                    if zh
                    else "An API key is required: send Authorization: Bearer <key>."
                )
            raise ApiError(401, msg, headers={"WWW-Authenticate": "Bearer"})
        principal = Principal(ident=_client_ident(request))
    return principal


def authenticate(request: Request) -> Principal:
    """The /v1 guard: 401 without a valid key when keys exist, then the rate limit (429).
    The principal usually comes from `AuthGate` (checked before the body was read)."""
    limiter: Limiter = request.app.state.limiter
    state = request.scope.setdefault("state", {})
    principal = state.get("principal") or identify(request)
    wait = limiter.take(principal.ident)
    if wait > 0:
        zh = request_lang(request) == "zh"
        seconds = max(1, math.ceil(wait))
        msg = f"请求过于频繁，请 {seconds} 秒后再试。" if zh else f"Too many requests; try again in {seconds} s."
        raise ApiError(429, msg, headers={"Retry-After": str(seconds)})
    state["key_id"] = principal.key_id
    state["principal"] = principal
    return principal


async def authenticated(request: Request) -> Principal:
    """`authenticate` as the /v1 dependency: on the event loop when it waits on nothing (the gate identified the
    caller, the rate limit is counted in this process), else in a worker thread (a store or Redis read)."""
    if request.scope.get("state", {}).get("principal") and isinstance(request.app.state.limiter, RateLimiter):
        return authenticate(request)
    return await anyio.to_thread.run_sync(authenticate, request)


Caller = Annotated[Principal, Depends(authenticated)]


class BodyLimit:
    """ASGI middleware: 413 for bodies over `max_bytes` (by Content-Length, or counted when chunked)."""

    def __init__(self, app: ASGIApp, max_bytes: int | Callable[[Scope], int]):
        self.app = app
        self._max = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS", "DELETE"):
            await self.app(scope, receive, send)
            return
        limit = self._max(scope) if callable(self._max) else self._max
        headers = dict(scope["headers"])
        length = headers.get(b"content-length")
        if length is not None:
            if not length.isdigit() or int(length) > limit:
                await self._refuse(scope, receive, send, limit)
                return
            await self.app(scope, receive, send)
            return
        # no length given: read the body here (it is small by definition) and replay it
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            size += len(message.get("body", b""))
            if size > limit:
                await self._refuse(scope, receive, send, limit)
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, limit: int) -> None:
        from starlette.requests import Request

        request = Request(scope)
        zh = request_lang(request) == "zh"
        msg = f"请求体超过 {limit} 字节的上限。" if zh else f"The request body is larger than the {limit}-byte limit."
        rid = scope.get("state", {}).get("request_id")
        await error_response(413, msg, request_id=rid, headers={"Connection": "close"})(scope, receive, send)


class FailureCounter:
    """Failed authentications per client address: a token bucket that only failures drain, so a
    caller guessing keys is slowed to `per_minute` guesses while good keys pass untouched."""

    def __init__(self, per_minute: int, clock=time.monotonic):
        self.capacity = float(per_minute)
        self.per_second = per_minute / 60.0
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def _tokens(self, ident: str, now: float) -> float:
        tokens, last = self._buckets.get(ident, (self.capacity, now))
        return min(self.capacity, tokens + (now - last) * self.per_second)

    def wait(self, ident: str) -> float:
        """Seconds until `ident` may try again (0 when it may now)."""
        if self.capacity <= 0:
            return 0.0
        with self._lock:
            tokens = self._tokens(ident, self.clock())
        return 0.0 if tokens >= 1.0 else (1.0 - tokens) / self.per_second

    def failed(self, ident: str) -> None:
        if self.capacity <= 0:
            return
        now = self.clock()
        with self._lock:
            self._buckets[ident] = (max(0.0, self._tokens(ident, now) - 1.0), now)
            if len(self._buckets) > 100_000:
                self._buckets = {k: v for k, v in self._buckets.items() if now - v[1] < 300}


#: paths whose signed links (`?expires=…&sig=…`, bot/core/attachments.py) open without a key: a proposal's files
SIGNED_PREFIX = "/v1/proposals/files/"


class AuthGate:
    """ASGI middleware: authenticate every /v1 and /mcp request from its headers before its body is read.

    A client over its failed-authentication budget gets 429 with Retry-After; a bad or missing key
    401 (`Connection: close`, the body never read); a store that does not answer 503. The principal
    is left in `scope["state"]["principal"]` for the `authenticate` dependency."""

    def __init__(self, app: ASGIApp, prefixes: tuple[str, ...] = ("/v1/", "/mcp")):
        self.app = app
        self.prefixes = prefixes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] == "OPTIONS" or not scope["path"].startswith(self.prefixes):
            await self.app(scope, receive, send)
            return
        if scope["path"].startswith(SIGNED_PREFIX) and b"sig=" in scope.get("query_string", b""):
            await self.app(scope, receive, send)  # a signed link is its own credential: the route checks it
            return
        from sqlalchemy.exc import DBAPIError, SQLAlchemyError
        from starlette.requests import Request

        request = Request(scope)
        counter: FailureCounter = scope["app"].state.auth_failures
        address = _client_ident(request)
        rid = scope.get("state", {}).get("request_id")
        zh = request_lang(request) == "zh"
        wait = counter.wait(address)
        if wait > 0:
            seconds = max(1, math.ceil(wait))
            msg = (
                f"认证失败次数过多，请 {seconds} 秒后再试。"
                if zh
                else f"Too many failed authentications; try again in {seconds} s."
            )
            await error_response(
                429,
                msg,
                request_id=rid,
                code="too_many_auth_failures",
                headers={"Retry-After": str(seconds), "Connection": "close"},
            )(scope, receive, send)
            return
        try:
            principal = await anyio.to_thread.run_sync(identify, request)
        except ApiError as err:
            if err.status != 429:  # over the widget's rate limit is not a failed authentication
                counter.failed(address)
            headers = {**(err.headers or {}), "Connection": "close"}
            await error_response(err.status, err.message, code=err.code, request_id=rid, headers=headers)(
                scope, receive, send
            )
            return
        except (DBAPIError, SQLAlchemyError):
            msg = (
                "服务暂时不可用（数据库无响应），请稍后重试。"
                if zh
                else "The service is briefly unavailable (the database does not answer); try again shortly."
            )
            await error_response(503, msg, request_id=rid, code="store_unavailable", headers={"Retry-After": "5"})(
                scope, receive, send
            )
            return
        scope.setdefault("state", {})["principal"] = principal
        await self.app(scope, receive, send)
