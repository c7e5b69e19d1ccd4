"""Publishable widget keys on the API: which routes they open, from which origins, how often.

A `pk_…` key in `Authorization: Bearer` is accepted only
- on the widget's API routes (`WIDGET_ROUTES`: the answer stream and feedback), else 403;
- from a browser whose `Origin` is one of the key's listed origins or this server itself (the panel
  is served from here, inside an iframe that only listed origins may frame; "this server" is
  `GPU_ADVISOR_PUBLIC_ORIGIN`, or a loopback origin while that is unset, never the `Host` header), else 403;
- within the per-address rate limit `GPU_ADVISOR_WIDGET_RATE_LIMIT` (429 with `Retry-After`).
Its conversations are named `widget:<key id>:<random>`; a widget caller can continue and rate only
those. `WidgetAccess` is what the widget's own routes (bot/channels/widget) use to look keys up.
"""

from __future__ import annotations

import math
import uuid

from fastapi import Request

from bot.api import keys
from bot.api.errors import ApiError, request_lang
from bot.channels.widget.origins import normalize_origin, origin_allowed

WIDGET_ROUTES = frozenset({"/v1/ask/stream", "/v1/feedback"})


class WidgetAccess:
    """Key lookups for the widget's pages: publishable keys, secret keys (to refuse them), open or not."""

    def __init__(self, ring, store):
        self.ring = ring
        self.store = store

    def widget_key(self, token: str) -> keys.WidgetKeyInfo | None:
        return keys.verify_widget(self.store, token)

    def is_secret(self, token: str) -> bool:
        return token.startswith(keys.PREFIX) or self.ring.check(token) is not None

    def required(self) -> bool:
        return self.ring.required()


#: this server while no public origin is configured: the panel opened on this machine, on the port it listens on
_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def own_origin(request: Request, origin: str) -> bool:
    """Whether `origin` is this server itself (the panel's iframe calling home): GPU_ADVISOR_PUBLIC_ORIGIN when it is
    set, else a loopback origin on the port this server's socket listens on (another loopback port is another site,
    the shop page beside it). Never the request's `Host`: a name any DNS record can point here."""
    from bot.api.hosts import origin_allowed as matches

    configured = request.app.state.api_settings.public_origin
    if configured:
        try:
            return normalize_origin(origin) == normalize_origin(configured)
        except ValueError:
            return False
    server = request.scope.get("server") or (None, None)
    if not server[1]:
        return False
    port = str(server[1])
    netlocs = [f"{name}:{port}" for name in _LOOPBACK_NAMES] + (list(_LOOPBACK_NAMES) if port == "80" else [])
    return matches(origin, [f"http://{netloc}" for netloc in netlocs])


def _msg(request: Request, zh: str, en: str) -> str:
    return zh if request_lang(request) == "zh" else en


def widget_caller(request: Request, token: str, client: str) -> tuple[str, keys.WidgetKeyInfo]:
    """(rate-limit identity, key) for a `pk_…` bearer token on a /v1 route from the client address
    `client`, or an ApiError (401/403/429)."""
    info = keys.verify_widget(request.app.state.advisor.store, token)
    if info is None:
        raise ApiError(
            401,
            _msg(request, "组件密钥（pk_…）无效或已吊销。", "The widget key (pk_…) is not valid or has been revoked."),
            headers={"WWW-Authenticate": "Bearer"},
        )
    if request.scope.get("path") not in WIDGET_ROUTES:
        raise ApiError(
            403,
            _msg(
                request,
                "组件密钥只能用于聊天组件，此接口请使用 API 密钥（gpa_…）。",
                "A widget key only works for the chat widget; use an API key (gpa_…) for this route.",
            ),
            code="widget_key_not_allowed",
        )
    origin = request.headers.get("origin")
    if not (origin and (origin_allowed(origin, info.origins) or own_origin(request, origin))):
        raise ApiError(
            403,
            _msg(
                request,
                f"此组件密钥不允许来自 {origin or '（无来源）'} 的页面使用。",
                f"This widget key is not allowed on pages from {origin or '(no origin)'}.",
            ),
            code="origin_not_allowed",
        )
    ident = f"widget:{info.id}:{client}"
    wait = request.app.state.widget_limiter.take(ident)
    if wait > 0:
        seconds = max(1, math.ceil(wait))
        raise ApiError(
            429,
            _msg(request, f"请求过于频繁，请 {seconds} 秒后再试。", f"Too many requests; try again in {seconds} s."),
            headers={"Retry-After": str(seconds)},
        )
    request.state.widget_key_id = info.id
    return ident, info


def widget_conversation(request: Request, conversation_id: str | None) -> str | None:
    """For a widget caller: a new `widget:<key>:<random>` id, or the given one if it is this key's; else 404."""
    key_id = getattr(request.state, "widget_key_id", None)
    if key_id is None:
        return conversation_id
    prefix = f"widget:{key_id}:"
    if conversation_id is None:
        return prefix + uuid.uuid4().hex
    if not conversation_id.startswith(prefix):
        raise ApiError(
            404,
            _msg(request, f"没有会话 {conversation_id!r}。", f"No conversation {conversation_id!r}."),
            code="unknown_conversation",
            field="conversation_id",
        )
    return conversation_id
