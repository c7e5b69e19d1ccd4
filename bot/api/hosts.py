"""Which `Host` (and `Origin`) values the server answers, matched exactly, port included.

    allowed("127.0.0.1:8000", ["127.0.0.1:*"])         # True
    allowed("127.0.0.1:80.evil.com", ["127.0.0.1:*"])  # False: "80.evil.com" is no port
    origin_allowed("http://localhost:8000.evil.com", ["http://localhost:*"])  # False

A pattern is `host` (the header names no port, or the scheme's default one), `host:port` (that port only),
`host:*` (any port, or none) or `*` (any host). A header is split into its host and port first (an IPv6
literal in brackets), and a "port" that is not 1-65535 in digits makes it match nothing: no pattern is a
prefix of a longer name.

`TrustedHosts` applies `GPU_ADVISOR_TRUSTED_HOSTS` to every route: unset, the loopback names while the API is
keyless (an open API answers only on this machine, whatever name a DNS record gives it), any host once a key
exists. `/healthz` and `/readyz` answer every host (a load balancer's probe names the pod's address).
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from bot.api.errors import error_response

LOOPBACK = ("127.0.0.1:*", "localhost:*", "[::1]:*")
_DEFAULT_PORTS = ("80", "443")
PROBES = ("/healthz", "/readyz")


def split_host(value: str) -> tuple[str, str | None] | None:
    """(host, port or None) of a Host header, lower-cased; None when it is not host[:port]."""
    value = (value or "").strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        host, rest = value[: end + 1], value[end + 1 :]
        if rest and not rest.startswith(":"):
            return None
        port = rest[1:] if rest else None
    else:
        host, colon, port = value.partition(":")
        port = port if colon else None
    if not host or (port is not None and not (port.isdigit() and 0 < int(port) < 65536)):
        return None
    return host, port


def allowed(value: str | None, patterns: Iterable[str]) -> bool:
    parsed = split_host(value or "")
    if parsed is None:
        return False
    host, port = parsed
    for pattern in patterns:
        pattern = pattern.strip().lower()
        if pattern == "*":
            return True
        want = split_host(pattern.removesuffix(":*")) if pattern.endswith(":*") else split_host(pattern)
        if want is None or want[0] != host:
            continue
        if pattern.endswith(":*") or want[1] == port or (want[1] is None and port in _DEFAULT_PORTS):
            return True
    return False


def origin_allowed(origin: str | None, patterns: Iterable[str]) -> bool:
    """An `Origin` against patterns of the form `scheme://host[:port|:*]`; the scheme must be the same."""
    try:
        parts = urlsplit(origin or "")
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or parts.path or parts.query or parts.fragment:
        return False
    for pattern in patterns:
        scheme, sep, rest = pattern.strip().lower().partition("://")
        if sep and scheme == parts.scheme and allowed(parts.netloc, [rest]):
            return True
    return False


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or ():
        if key == name:
            return value.decode("latin-1")
    return None


class TrustedHosts:
    """ASGI middleware: 421 for a `Host` the server does not answer (see the module docstring)."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope.get("path") in PROBES:
            await self.app(scope, receive, send)
            return
        host = _header(scope, b"host")
        state = scope["app"].state
        listed = state.api_settings.trusted_host_patterns
        if listed is None:  # unset: loopback while keyless, anything once keys exist
            if allowed(host, LOOPBACK) or await _keyed(state):
                await self.app(scope, receive, send)
                return
        elif allowed(host, listed):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        zh = (_header(scope, b"accept-language") or "").lower().startswith("zh")
        shown = (host or "")[:100]
        message = (
            f"此服务不接受主机名“{shown}”的请求；运营者可在 GPU_ADVISOR_TRUSTED_HOSTS 中加入它。"
            if zh
            else f"This server does not answer for the host {shown!r}; an operator can add it to GPU_ADVISOR_TRUSTED_HOSTS."
        )
        rid = scope.get("state", {}).get("request_id")
        await error_response(421, message, code="untrusted_host", request_id=rid)(scope, receive, send)


async def _keyed(state) -> bool:
    import anyio.to_thread

    ring = getattr(state, "keyring", None)
    if ring is None:
        return False
    try:
        return bool(await anyio.to_thread.run_sync(ring.required))
    except Exception:  # the store does not answer: treat the server as open, the safer reading
        return False
