"""The MCP server (`bot.mcp.server`) over streamable HTTP at `/mcp`, inside the API.

Callers pass the same guard as `/v1`: `AuthGate` checks the bearer key before the body is read (401
without a valid one when keys exist; 429 once a client address has failed too often), then the per-key
rate limit, one budget with `/v1` (429). `Host` and `Origin` are checked against
`GPU_ADVISOR_MCP_HOSTS` / `GPU_ADVISOR_MCP_ORIGINS` with exact host:port matching (`bot.api.hosts`), then
again by the SDK's transport security (DNS-rebinding protection). The server runs
stateless (every request stands alone), so any worker behind a load balancer can answer any call.
The session manager is started and stopped by the API's lifespan (`McpHttp.running`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from bot.api.errors import ApiError, error_response
from bot.api.hosts import allowed, origin_allowed
from bot.api.security import authenticate
from bot.api.settings import ApiSettings
from bot.core.toolbox import Toolbox
from bot.mcp.server import build_server

PATH = "/mcp"
#: the request headers an MCP client sends besides the API's own (a browser client needs CORS to allow them)
HEADERS = ["Mcp-Protocol-Version", "Mcp-Session-Id", "Mcp-Method", "Mcp-Name", "Last-Event-ID"]


def _host_or_origin_refused(request: Request, conf: ApiSettings) -> Response | None:
    """The SDK's check with exact host:port matching (`bot.api.hosts`): its own treats `127.0.0.1:*` as a prefix,
    which `127.0.0.1:80.evil.com` also starts with. No Origin (a client that is not a browser) is fine."""
    if not allowed(request.headers.get("host"), conf.mcp_allowed_hosts):
        return Response("Invalid Host header", status_code=421)
    origin = request.headers.get("origin")
    if origin is not None and not origin_allowed(origin, conf.mcp_allowed_origins):
        return Response("Invalid Origin header", status_code=403)
    return None


class McpHttp:
    """An ASGI endpoint for `/mcp`; `running()` builds the server once the app's advisor exists."""

    def __init__(self) -> None:
        self._manager = None
        self._conf: ApiSettings | None = None

    @asynccontextmanager
    async def running(self, box_for: Callable[[], Toolbox], conf: ApiSettings) -> AsyncIterator[None]:
        server = build_server(box_for)
        server.streamable_http_app(
            streamable_http_path=PATH,
            stateless_http=True,
            max_request_body_size=conf.max_body_bytes,
            transport_security=TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=conf.mcp_allowed_hosts,
                allowed_origins=conf.mcp_allowed_origins,
            ),
        )
        manager = server.session_manager
        self._conf = conf
        async with manager.run():
            self._manager = manager
            try:
                yield
            finally:
                self._manager = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            authenticate(request)
        except ApiError as err:
            rid = scope.get("state", {}).get("request_id")
            await error_response(err.status, err.message, headers=err.headers, request_id=rid, code=err.code)(
                scope, receive, send
            )
            return
        refused = _host_or_origin_refused(request, self._conf) if self._conf is not None else None
        if refused is not None:
            return await refused(scope, receive, send)
        if self._manager is None:
            await error_response(503, "The MCP endpoint is starting; try again shortly.", headers={"Retry-After": "1"})(
                scope, receive, send
            )
            return
        await self._manager.handle_request(scope, receive, send)
