"""The HTTP API: `create_app()` builds a FastAPI app; settings, advisor, store and index are built in its lifespan.

    POST /v1/ask                    {text, conversation_id?, lang?} -> AnswerTrace
    POST /v1/ask/stream             SSE: tool_started, tool_finished, delta, final (the trace) or error
    GET  /v1/conversations/{id}     the turns: questions, answers, traces, and feedback
    POST /v1/feedback               {conversation_id, turn, rating: -1 | 1, comment?}
    GET  /v1/catalog/gpus[/{name}]  the GPU catalog; names and aliases resolve, unknown -> 404 with suggestions
    GET  /v1/catalog/models
    POST /v1/proposals              a dated proposal: Markdown, bom.xlsx and its charts (routes/proposals.py)
    GET  /v1/proposals/files/{token}/{name}   the files a chat's "生成方案" handed over (signed, expiring links)
    POST /v1/prices, GET /v1/prices the sales team's price book (routes/prices.py)
    POST /v1/tools/{name}           each calculator and search_knowledge, with its own schema in /openapi.json
    GET  /v1/models, POST /v1/chat/completions   OpenAI-compatible (routes/openai.py)
    GET  /healthz, /readyz, /metrics
    GET  /widget.js, /widget, /chat, /widget/config, /widget/assets/…   the web chat widget (bot/channels/widget)
    POST /slack/events              the Slack app (Bolt; on when SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET are set)

Run it with `gpu-advisor serve`, or `uvicorn --factory bot.api.app:create_app`. Keys, rate limit and body
limit: `security.py`; the error shape: `errors.py`; logs and metrics: `metrics.py`; the routes, one module per
group: `routes/` (ask, conversations, tools, openai, mcp, docs, channels, ops); what handlers share: `deps.py`.
This module is the factory and the lifespan only.
"""

from __future__ import annotations

import logging
import time
from contextlib import asynccontextmanager

import anyio
import anyio.to_thread
from fastapi import APIRouter, Depends, FastAPI
from starlette.middleware.cors import CORSMiddleware
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from bot.answer.advisor import Advisor
from bot.api import errors as api_errors
from bot.api.cluster import Cluster
from bot.api.deps import ERRORS
from bot.api.hosts import TrustedHosts
from bot.api.metrics import Metrics, RequestContext
from bot.api.routes import ask as ask_routes
from bot.api.routes import channels as channel_routes
from bot.api.routes import conversations as conversation_routes
from bot.api.routes import docs as docs_pages
from bot.api.routes import models as model_routes
from bot.api.routes import openai as api_openai
from bot.api.routes import ops as ops_routes
from bot.api.routes import prices as price_routes
from bot.api.routes import proposals as proposal_routes
from bot.api.routes.mcp import HEADERS as MCP_HEADERS
from bot.api.routes.mcp import PATH as MCP_PATH
from bot.api.routes.mcp import McpHttp
from bot.api.routes.tools import catalog_routes, tool_routes
from bot.api.security import AuthGate, BodyLimit, FailureCounter, KeyRing, authenticated
from bot.api.server import BodyTimeout
from bot.api.settings import ApiSettings
from bot.api.sse import stream_limiter
from bot.api.widget_auth import WidgetAccess
from bot.channels.leases import Leases
from bot.channels.recovery import close_interrupted_streams
from bot.channels.settings import DeliverySettings
from bot.channels.slack.settings import SlackSettings
from bot.channels.widget import routes as widget_routes
from bot.core.redis_client import RedisConfig
from bot.core.settings import Settings

log = logging.getLogger("gpu_advisor.api")

#: Slack's event bodies carry a message twice (text and rich-text blocks), up to 40,000 characters each: a long
#: message must still reach the app, which then tells the user it is too long instead of Slack giving up
SLACK_BODY_BYTES = 1024 * 1024


def _body_limit(scope) -> int:
    """GPU_ADVISOR_MAX_BODY_BYTES, or at least SLACK_BODY_BYTES for POST /slack/events."""
    limit = scope["app"].state.api_settings.max_body_bytes
    return max(limit, SLACK_BODY_BYTES) if scope.get("path") == "/slack/events" else limit


def answer_limiter(advisor: Advisor) -> anyio.CapacityLimiter:
    """How many answers may wait in worker threads at once. The advisor's own gate decides how many
    plan at the same time (one offline: pure CPU under one GIL); this bounds the waiting room."""
    return anyio.CapacityLimiter(64)


def stream_leases(adv: Advisor, conf: ApiSettings) -> Leases | None:
    """The leases of answers streamed over HTTP; first, the questions a stopped process was streaming
    answers to are closed as failed (`bot.channels.recovery.close_interrupted_streams`)."""
    try:
        leases = Leases(adv.store.engine, 2 * conf.answer_deadline_s)
        close_interrupted_streams(leases, adv.store)
    except Exception:  # a store that does not answer yet: streams go unleased, as they did before
        log.exception("could not close the streamed answers an earlier stop interrupted")
        return None
    return leases


def create_app(
    settings: Settings | None = None,
    advisor: Advisor | None = None,
    api_settings: ApiSettings | None = None,
    slack_settings: SlackSettings | None = None,
) -> FastAPI:
    """The API app. Anything not given is built from the environment when the app starts."""

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        conf = api_settings or ApiSettings()
        base = settings or Settings()
        adv = advisor or await anyio.to_thread.run_sync(Advisor.from_settings, base)
        app.state.api_settings = conf
        app.state.advisor = adv
        app.state.keyring = KeyRing(conf.static_keys, adv.store)
        cluster = Cluster.start(conf, RedisConfig.from_settings(base), adv)
        app.state.cluster = cluster
        app.state.limiter = cluster.limiter
        app.state.widget_limiter = cluster.limiter_for("widget-rate", conf.widget_rate_limit_per_minute)
        app.state.widget_access = WidgetAccess(app.state.keyring, adv.store)
        app.state.auth_failures = FailureCounter(conf.auth_failures_per_minute)
        try:  # answers a crash interrupted; the age spares turns another live worker is answering
            closed = await anyio.to_thread.run_sync(adv.store.fail_stale_pending, 2 * conf.answer_deadline_s)
            if closed:
                log.warning("closed %d turns left pending by an earlier stop as failed", closed)
        except Exception:  # a store that does not answer yet: /readyz says so; requests get 503
            log.exception("could not close pending turns")
        app.state.stream_leases = await anyio.to_thread.run_sync(stream_leases, adv, conf)
        app.state.fault_delay_s = DeliverySettings().fault_delay_s  # tests only (CHANNEL_FAULT_DELAY_S)
        app.state.stream_limiter = stream_limiter()
        app.state.answer_limiter = answer_limiter(adv)
        app.state.started_at = time.time()
        app.state.delivery = None  # the chat channels' one worker pool (shared_delivery), built on first use
        app.state.slack = None
        slack = slack_settings or SlackSettings()
        if slack.http_enabled:
            from bot.channels.delivery import shared_delivery
            from bot.channels.slack.app import SlackChannel

            app.state.slack = SlackChannel(slack, adv, shared_delivery(app.state))
        await _recover_channels(app)
        try:
            async with mcp_endpoint.running(lambda: app.state.advisor.toolbox, conf):
                yield
        finally:
            await cluster.stop()
            if getattr(app.state, "delivery", None) is not None:
                await anyio.to_thread.run_sync(app.state.delivery.close)
            if advisor is None:
                adv.store.close()

    app = FastAPI(
        title="gpu-advisor",
        version="0.1.0",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        summary="GPU sizing for AI training and inference; every number comes from code.",
    )
    app.state.metrics = Metrics()
    api_errors.install(app)
    docs_pages.install(app)  # /docs and /redoc with their assets served here, not from a CDN

    v1 = APIRouter(prefix="/v1", dependencies=[Depends(authenticated)], responses=ERRORS)
    v1.include_router(ask_routes.router())
    v1.include_router(conversation_routes.router())
    v1.include_router(catalog_routes())
    v1.include_router(tool_routes())
    v1.include_router(proposal_routes.router())
    v1.include_router(model_routes.router())
    v1.include_router(price_routes.router())
    v1.include_router(api_openai.router)
    app.include_router(v1)
    app.include_router(proposal_routes.files_router())  # signed links to a chat's proposal files
    app.include_router(ops_routes.router())
    app.include_router(widget_routes.router())  # /widget.js, /widget, /chat (bot/channels/widget)
    app.include_router(channel_routes.router())
    _mount_channels(app)
    mcp_endpoint = McpHttp()
    app.router.routes.append(
        Route(MCP_PATH, endpoint=mcp_endpoint, methods=["GET", "POST", "DELETE"], include_in_schema=False)
    )

    # outermost first: request id + metrics + last-resort 500, then the Host check, then CORS, then the key
    # check (before any body is read), then the body limit
    app.add_middleware(BodyLimit, max_bytes=_body_limit)
    app.add_middleware(AuthGate)
    app.add_middleware(BodyTimeout)
    app.add_middleware(SettingsCors)
    app.add_middleware(TrustedHosts)
    app.add_middleware(RequestContext, metrics=app.state.metrics)
    return app


def _mount_channels(app: FastAPI) -> None:
    """The chat channels whose settings are present (each checks its own platform's signatures)."""
    from bot.channels.settings import WeComSettings

    wecom = WeComSettings()
    app.state.channel_recoverers = {}
    if wecom.aibot_http:
        from bot.channels.wecom.http import aibot_router

        aibot = aibot_router(wecom)
        app.include_router(aibot)
        app.state.channel_recoverers.update(aibot.recoverers)
    if wecom.app:
        from bot.channels.wecom.selfbuilt import app_router

        selfbuilt = app_router(wecom)
        app.include_router(selfbuilt)
        app.state.channel_recoverers.update(selfbuilt.recoverers)


async def _recover_channels(app: FastAPI) -> None:
    """Before the first request: an apology, through its channel, for every message an earlier stop left
    claimed and unanswered (`Delivery.recover`; then again every minute for owners that went quiet elsewhere)."""
    import asyncio
    from functools import partial

    from bot.channels.delivery import shared_delivery

    recoverers = dict(getattr(app.state, "channel_recoverers", {}))
    if app.state.slack is not None:
        recoverers["slack"] = partial(app.state.slack.recovery_sink, loop=asyncio.get_running_loop())
    if not recoverers:
        return
    try:
        delivery = await anyio.to_thread.run_sync(shared_delivery, app.state)
        await anyio.to_thread.run_sync(delivery.recover, recoverers)
    except Exception:  # a store that does not answer yet: the next sweep (or the redelivery) reaches them
        log.exception("could not look for channel messages an earlier stop left unanswered")


class SettingsCors:
    """CORS with the allow-list from the app's settings (known only once the lifespan has run)."""

    def __init__(self, app: ASGIApp):
        self.app = app
        self._cors: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self._cors is None:
            origins = scope["app"].state.api_settings.origins
            self._cors = CORSMiddleware(
                self.app,
                allow_origins=origins,
                allow_credentials="*" not in origins,
                allow_methods=["GET", "POST", "OPTIONS"],
                allow_headers=["Authorization", "Content-Type", "Accept-Language", "X-Request-ID", *MCP_HEADERS],
                expose_headers=["X-Request-ID", "Retry-After", "X-Conversation-ID", "Mcp-Session-Id"],
                max_age=600,
            )
        await self._cors(scope, receive, send)
