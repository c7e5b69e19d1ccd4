"""The HTTP API: `create_app()` builds a FastAPI app; settings, advisor, store and index are built in its lifespan.

    POST /v1/ask                    {text, conversation_id?, lang?} -> AnswerTrace
    POST /v1/ask/stream             SSE: tool_started, tool_finished, delta, final (the trace) or error
    GET  /v1/conversations/{id}     the turns: questions, answers, traces, and feedback
    POST /v1/feedback               {conversation_id, turn, rating: -1 | 1, comment?}
    GET  /v1/catalog/gpus[/{name}]  the GPU catalog; names and aliases resolve, unknown -> 404 with suggestions
    GET  /v1/catalog/models
    POST /v1/tools/{name}           each calculator and search_knowledge, with its own schema in /openapi.json
    GET  /v1/models, POST /v1/chat/completions   OpenAI-compatible (openai_compat.py)
    GET  /healthz, /readyz, /metrics
    GET  /widget.js, /widget, /chat, /widget/config, /widget/assets/…   the web chat widget (bot/channels/widget)
    POST /slack/events              the Slack app (Bolt; on when SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET are set)

Run it with `gpu-advisor serve`, or `uvicorn --factory bot.api.app:create_app`. Keys, rate limit and body
limit: `security.py`; the error shape: `errors.py`; logs and metrics: `metrics.py`; the catalog and calculator
routes: `calculators.py`; what handlers share: `deps.py`.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
import uuid
from contextlib import asynccontextmanager
from functools import partial
from typing import Annotated, Any, Literal

import anyio
import anyio.to_thread
from fastapi import APIRouter, Depends, FastAPI, Path, Query, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints
from starlette.middleware.cors import CORSMiddleware
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from bot.answer.advisor import MAX_QUESTION_CHARS, Advisor
from bot.api import errors as api_errors
from bot.api.cluster import Cluster
from bot.api.deps import (
    ERRORS,
    NOT_FOUND,
    AdvisorDep,
    ApiSettingsDep,
    MetricsDep,
    json_response,
)
from bot.api.errors import NO_CONTROL_PATTERN, TEXT_PATTERN, ApiError, advisor_error
from bot.api.json_types import JsonTyped
from bot.api.metrics import Metrics, RequestContext
from bot.api.routes import docs as docs_pages
from bot.api.routes import openai as api_openai
from bot.api.routes.mcp import HEADERS as MCP_HEADERS
from bot.api.routes.mcp import PATH as MCP_PATH
from bot.api.routes.mcp import McpHttp
from bot.api.routes.tools import catalog_routes, tool_routes
from bot.api.running import run_answer
from bot.api.security import AuthGate, BodyLimit, Caller, FailureCounter, KeyRing, authenticate
from bot.api.server import BodyTimeout
from bot.api.settings import ApiSettings
from bot.api.sse import SSE_HEADERS, event, stream_limiter, with_keepalive
from bot.api.widget_auth import WidgetAccess, widget_conversation
from bot.channels.slack.settings import SlackSettings
from bot.channels.widget import routes as widget_routes
from bot.core.language import detect_language
from bot.core.redis_client import RedisConfig
from bot.core.settings import Settings
from bot.core.store import UnknownConversation
from bot.core.trace import AnswerTrace
from tools.errors import AdvisorError

log = logging.getLogger("gpu_advisor.api")

ConversationId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9._:-]{1,64}$")]
#: the limits apply to the text as sent (what the schema says), the stripped text is what is asked
Question = Annotated[str, StringConstraints(min_length=1, max_length=MAX_QUESTION_CHARS, pattern=TEXT_PATTERN),
                     AfterValidator(str.strip)]
Comment = Annotated[str, StringConstraints(max_length=2000, pattern=NO_CONTROL_PATTERN)]
#: a conversation id in a path: printable, no control characters (NUL cannot even be looked up in PostgreSQL)
PathId = Annotated[str, Path(min_length=1, max_length=64, pattern=r"^[^\x00-\x1f\x7f/]+$")]
PAGE_MAX = 200
#: Slack's event bodies carry a message twice (text and rich-text blocks), up to 40,000 characters each: a long
#: message must still reach the app, which then tells the user it is too long instead of Slack giving up
SLACK_BODY_BYTES = 1024 * 1024


# ---- request and response models --------------------------------------------------------------------

class AskRequest(JsonTyped):
    model_config = ConfigDict(extra="forbid")

    text: Question = Field(description="the question, in Chinese or English")
    conversation_id: ConversationId | None = Field(None, description="continue this conversation")
    lang: Literal["zh", "en"] | None = Field(None, description="answer language; detected from the text if absent")


class TurnOut(BaseModel):
    turn: int
    question: str
    answer: str | None
    status: Literal["pending", "answered", "failed"]
    language: str | None
    mode: str | None
    trace: AnswerTrace | None
    created_at: dt.datetime


class FeedbackIn(JsonTyped):
    model_config = ConfigDict(extra="forbid")

    conversation_id: ConversationId
    turn: int = Field(ge=0, le=1_000_000, description="the turn's index, 0 for the first question")
    rating: Literal[-1, 1] = Field(description="1 helpful, -1 not helpful")
    comment: Comment | None = Field(None, description="up to 2,000 characters")


class FeedbackOut(BaseModel):
    id: int
    conversation_id: str
    turn: int
    rating: int
    comment: str | None = None


class ConversationOut(BaseModel):
    id: str
    turns: list[TurnOut] = Field(description="this page of turns, oldest first")
    feedback: list[FeedbackOut] = Field(description="feedback on the turns of this page")
    total_turns: int = Field(description="turns in the whole conversation")
    offset: int
    limit: int
    next_offset: int | None = Field(description="the offset of the next page; null on the last page")


class Health(BaseModel):
    status: Literal["ok"] = "ok"


class Readiness(BaseModel):
    status: Literal["ready", "not_ready"]
    index_chunks: int
    store: Literal["ok", "unreachable"]
    store_backend: str | None = Field(None, description="postgresql or sqlite")
    chroma: Literal["ok", "embedded", "unreachable"] = Field(
        "embedded", description="the Chroma server's heartbeat, or `embedded` for the in-process index")
    redis: Literal["ok", "off", "unreachable"] = Field(
        "off", description="`off` without REDIS_URL; `unreachable` degrades (per-process limits), it does not fail")
    rate_limit: Literal["shared", "per-process"] = "per-process"
    mode: str | None = None
    skipped_notes: list[str] = Field(default_factory=list,
                                     description="files in remembered note folders that were not indexed, and why")


# ---- the app ----------------------------------------------------------------------------------------

def _body_limit(scope) -> int:
    """GPU_ADVISOR_MAX_BODY_BYTES, or at least SLACK_BODY_BYTES for POST /slack/events."""
    limit = scope["app"].state.api_settings.max_body_bytes
    return max(limit, SLACK_BODY_BYTES) if scope.get("path") == "/slack/events" else limit


def answer_limiter(advisor: Advisor) -> anyio.CapacityLimiter:
    """How many answers may wait in worker threads at once. The advisor's own gate decides how many
    plan at the same time (one offline: pure CPU under one GIL); this bounds the waiting room."""
    return anyio.CapacityLimiter(64)


def create_app(settings: Settings | None = None, advisor: Advisor | None = None,
               api_settings: ApiSettings | None = None, slack_settings: SlackSettings | None = None) -> FastAPI:
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
        try:
            async with mcp_endpoint.running(lambda: app.state.advisor.toolbox, conf):
                yield
        finally:
            await cluster.stop()
            if getattr(app.state, "delivery", None) is not None:
                await anyio.to_thread.run_sync(app.state.delivery.close)
            if advisor is None:
                adv.store.close()

    app = FastAPI(title="gpu-advisor", version="0.1.0", lifespan=lifespan, docs_url=None, redoc_url=None,
                  summary="GPU sizing for AI training and inference; every number comes from code.")
    app.state.metrics = Metrics()
    api_errors.install(app)
    docs_pages.install(app)  # /docs and /redoc with their assets served here, not from a CDN

    v1 = APIRouter(prefix="/v1", dependencies=[Depends(authenticate)], responses=ERRORS)
    v1.include_router(_advisor_routes())
    v1.include_router(catalog_routes())
    v1.include_router(tool_routes())
    v1.include_router(api_openai.router)
    app.include_router(v1)
    app.include_router(_ops_routes())
    app.include_router(widget_routes.router())  # /widget.js, /widget, /chat (bot/channels/widget)
    app.include_router(_channel_routes())
    _mount_channels(app)
    mcp_endpoint = McpHttp()
    app.router.routes.append(Route(MCP_PATH, endpoint=mcp_endpoint, methods=["GET", "POST", "DELETE"],
                                   include_in_schema=False))

    # outermost first: request id + metrics + last-resort 500, then CORS, then the key check (before any
    # body is read), then the body limit
    app.add_middleware(BodyLimit, max_bytes=_body_limit)
    app.add_middleware(AuthGate)
    app.add_middleware(BodyTimeout)
    app.add_middleware(SettingsCors)
    app.add_middleware(RequestContext, metrics=app.state.metrics)
    return app


def _mount_channels(app: FastAPI) -> None:
    """The chat channels whose settings are present (each checks its own platform's signatures)."""
    from bot.channels.settings import WeComSettings

    wecom = WeComSettings()
    if wecom.aibot_http:
        from bot.channels.wecom.http import aibot_router

        app.include_router(aibot_router(wecom))
    if wecom.app:
        from bot.channels.wecom.selfbuilt import app_router

        app.include_router(app_router(wecom))


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
                self.app, allow_origins=origins, allow_credentials="*" not in origins,
                allow_methods=["GET", "POST", "OPTIONS"],
                allow_headers=["Authorization", "Content-Type", "Accept-Language", "X-Request-ID", *MCP_HEADERS],
                expose_headers=["X-Request-ID", "Retry-After", "X-Conversation-ID", "Mcp-Session-Id"], max_age=600,
            )
        await self._cors(scope, receive, send)


# ---- /v1/ask, conversations, feedback ---------------------------------------------------------------

def _advisor_routes() -> APIRouter:
    router = APIRouter(tags=["advisor"])

    @router.post("/ask", response_model=AnswerTrace, responses=NOT_FOUND)
    async def ask(body: AskRequest, advisor: AdvisorDep, metrics: MetricsDep, caller: Caller, conf: ApiSettingsDep,
                  request: Request) -> Response:
        """Answer one question; every number in the answer comes from a calculator, a cited note or the question."""
        lang = body.lang or detect_language(body.text)
        try:
            trace = await run_answer(
                partial(advisor.ask, body.text, conversation_id=body.conversation_id, lang=body.lang,
                        owner=caller.owner),
                request.app.state.answer_limiter, conf.answer_deadline_s, lang)
        except AdvisorError as err:
            raise advisor_error(err, lang) from None
        except UnknownConversation:
            raise unknown_conversation(body.conversation_id or "", lang) from None
        metrics.count_answer(trace)
        return json_response(trace)

    @router.post("/ask/stream", response_class=StreamingResponse,
                 responses={200: {"content": {"text/event-stream": {}},
                                  "description": "events tool_started, tool_finished, delta, then final or error"}})
    async def ask_stream(body: AskRequest, advisor: AdvisorDep, metrics: MetricsDep, conf: ApiSettingsDep,
                         caller: Caller, request: Request) -> StreamingResponse:
        """The answer as server-sent events; keep-alive comments while tools run."""
        limiter = request.app.state.stream_limiter
        # the id is known before the answer starts, so a client that stops the stream can still continue or rate it
        cid = widget_conversation(request, body.conversation_id) or uuid.uuid4().hex

        async def events():
            items = advisor.stream(body.text, conversation_id=cid, lang=body.lang, owner=caller.owner)
            async for item in with_keepalive(items, conf.sse_keepalive_s, limiter):
                if item is None:
                    yield ": keep-alive\n\n"
                    continue
                if item["type"] == "final":
                    metrics.count_answer(item["trace"])
                yield event(item, name=item["type"])

        return StreamingResponse(events(), media_type="text/event-stream",
                                 headers={**SSE_HEADERS, "X-Conversation-ID": cid})

    @router.get("/conversations/{conversation_id}", response_model=ConversationOut, responses=NOT_FOUND)
    def conversation(conversation_id: PathId, advisor: AdvisorDep, caller: Caller, request: Request,
                     offset: Annotated[int, Query(ge=0, le=10_000_000, description="first turn of the page")] = 0,
                     limit: Annotated[int, Query(ge=1, le=PAGE_MAX, description="turns per page")] = 50,
                     ) -> ConversationOut:
        """The conversation's questions, answers and traces, oldest first, a page at a time, with their feedback.

        Only the key that started a conversation (or an admin key) can read it; others get 404."""
        store = advisor.store
        if not store.readable(conversation_id, caller.owner, caller.admin):
            raise unknown_conversation(conversation_id, api_errors.request_lang(request))
        total = store.count_turns(conversation_id)
        page = store.turn_page(conversation_id, offset, limit)
        turns = [TurnOut(turn=t.idx, question=t.question, answer=t.answer, status=t.status, language=t.language,
                         mode=t.mode, trace=t.trace, created_at=t.created_at) for t in page]
        rows = store.feedback_for(conversation_id, page[0].idx, page[-1].idx) if page else []
        feedback = [FeedbackOut(**{k: f[k] for k in ("id", "conversation_id", "turn", "rating", "comment")})
                    for f in rows]
        following = offset + len(page)
        return ConversationOut(id=conversation_id, turns=turns, feedback=feedback, total_turns=total, offset=offset,
                               limit=limit, next_offset=following if following < total else None)

    @router.post("/feedback", status_code=201, response_model=FeedbackOut, responses=NOT_FOUND)
    def feedback(body: FeedbackIn, advisor: AdvisorDep, caller: Caller, request: Request) -> FeedbackOut:
        """Rate one answer: 1 helpful, -1 not helpful, with an optional comment."""
        widget_conversation(request, body.conversation_id)  # a widget key rates only its own conversations
        try:
            fid = advisor.store.add_feedback(body.conversation_id, body.turn, body.rating, body.comment,
                                             owner=caller.owner)
        except UnknownConversation:
            raise ApiError(404, f"No turn {body.turn} in conversation {body.conversation_id!r}.",
                           code="unknown_turn", field="turn") from None
        return FeedbackOut(id=fid, **body.model_dump())

    return router


def unknown_conversation(conversation_id: str, lang: str) -> ApiError:
    """404 for a conversation that does not exist or belongs to another caller (the two look the same)."""
    msg = f"没有对话“{conversation_id}”。" if lang == "zh" else f"No conversation {conversation_id!r}."
    return ApiError(404, msg, code="unknown_conversation", field="conversation_id")


# ---- chat channels -----------------------------------------------------------------------------------

def _channel_routes() -> APIRouter:
    router = APIRouter(tags=["channels"], include_in_schema=False)

    @router.post("/slack/events")
    async def slack_events(request: Request) -> Response:
        """Slack's Events API and interactivity (Bolt verifies the signature; docs/slack.md)."""
        channel = getattr(request.app.state, "slack", None)
        if channel is None:
            raise ApiError(404, "Slack is not configured on this server (set SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET).",
                           code="not_configured")
        return await channel.handle(request)

    return router


# ---- operations -------------------------------------------------------------------------------------

def _ops_routes() -> APIRouter:
    router = APIRouter(tags=["operations"])

    @router.get("/healthz", response_model=Health)
    def healthz() -> Health:
        """The process is up."""
        return Health()

    @router.get("/readyz", response_model=Readiness, responses={503: {"model": Readiness}})
    def readyz(request: Request) -> Any:
        """Ready when the knowledge index has chunks, the store answers and the Chroma server (if any) beats.
        Redis is reported but not required: without it limits are counted per worker."""
        cluster: Cluster | None = getattr(request.app.state, "cluster", None)
        advisor: Advisor | None = getattr(request.app.state, "advisor", None)
        if cluster is None:
            body = Readiness(status="not_ready", index_chunks=0, store="unreachable")
        else:
            retriever = advisor.toolbox.retriever if advisor else None
            skipped = list(getattr(getattr(retriever, "index", None), "skipped", []) or [])
            body = Readiness(**cluster.readiness(advisor), skipped_notes=skipped)
        return JSONResponse(body.model_dump(), status_code=200 if body.status == "ready" else 503)

    @router.get("/metrics", response_class=Response, responses={200: {"content": {"text/plain": {}}}})
    def metrics(metrics: MetricsDep) -> Response:
        """Prometheus metrics of this worker process."""
        return Response(metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")

    return router
