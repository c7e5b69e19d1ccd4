"""POST /v1/ask (one answer as JSON) and POST /v1/ask/stream (the same answer as server-sent events)."""

from __future__ import annotations

import time
import uuid
from functools import partial
from typing import Annotated, Literal

import anyio.to_thread
from fastapi import APIRouter, Request
from fastapi.responses import Response, StreamingResponse
from pydantic import AfterValidator, ConfigDict, Field, StringConstraints

from bot.answer.advisor import MAX_QUESTION_CHARS
from bot.answer.streaming import stream_events
from bot.api.deps import NOT_FOUND, AdvisorDep, ApiSettingsDep, MetricsDep
from bot.api.errors import TEXT_PATTERN, advisor_error
from bot.api.json_types import JsonTyped
from bot.api.routes.conversations import ConversationId, choose_conversation, unknown_conversation
from bot.api.running import run_answer
from bot.api.security import Caller
from bot.api.sse import SSE_HEADERS, event, with_keepalive
from bot.channels.recovery import close_stream, open_stream
from bot.core.language import detect_language
from bot.core.store import UnknownConversation
from bot.core.trace import AnswerTrace
from tools.errors import AdvisorError

#: the limits apply to the text as sent (what the schema says), the stripped text is what is asked
Question = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_QUESTION_CHARS, pattern=TEXT_PATTERN), AfterValidator(str.strip)
]


class AskRequest(JsonTyped):
    model_config = ConfigDict(extra="forbid")

    text: Question = Field(description="the question, in Chinese or English")
    conversation_id: ConversationId | None = Field(None, description="continue this conversation")
    lang: Literal["zh", "en"] | None = Field(None, description="answer language; detected from the text if absent")


def router() -> APIRouter:
    router = APIRouter(tags=["advisor"])

    @router.post("/ask", response_model=AnswerTrace, responses=NOT_FOUND)
    async def ask(
        body: AskRequest,
        advisor: AdvisorDep,
        metrics: MetricsDep,
        caller: Caller,
        conf: ApiSettingsDep,
        request: Request,
    ) -> Response:
        """Answer one question; every number in the answer comes from a calculator, a cited note or the question."""
        lang = body.lang or detect_language(body.text)
        cid = await choose_conversation(request, caller, advisor.store, body.conversation_id)
        try:
            trace, dumped = await run_answer(
                partial(advisor.ask_dumped, body.text, conversation_id=cid, lang=body.lang, owner=caller.owner),
                request.app.state.answer_limiter,
                conf.answer_deadline_s,
                lang,
            )
        except AdvisorError as err:
            raise advisor_error(err, lang) from None
        except UnknownConversation:
            raise unknown_conversation(body.conversation_id or cid or "", lang) from None
        metrics.count_answer(trace)
        return Response(dumped, media_type="application/json")  # the text the store kept: serialized once

    @router.post(
        "/ask/stream",
        response_class=StreamingResponse,
        responses={
            200: {
                "content": {"text/event-stream": {}},
                "description": "events tool_started, tool_finished, delta, then final or error",
            }
        },
    )
    async def ask_stream(
        body: AskRequest,
        advisor: AdvisorDep,
        metrics: MetricsDep,
        conf: ApiSettingsDep,
        caller: Caller,
        request: Request,
    ) -> StreamingResponse:
        """The answer as server-sent events; keep-alive comments while tools run."""
        limiter = request.app.state.stream_limiter
        # the id is known before the answer starts, so a client that stops the stream can still continue or rate it
        cid = await choose_conversation(request, caller, advisor.store, body.conversation_id) or uuid.uuid4().hex

        state = request.app.state
        leases = getattr(state, "stream_leases", None)  # a kill mid-answer: the next start fails the turn
        request_id = uuid.uuid4().hex[:16]
        lang = body.lang or detect_language(body.text)
        lease = (
            await anyio.to_thread.run_sync(open_stream, leases, cid, body.text, lang, request_id) if leases else None
        )

        async def events():
            ask = _slowed(advisor.ask, getattr(state, "fault_delay_s", 0.0))
            items = stream_events(ask, body.text, conversation_id=cid, lang=body.lang, owner=caller.owner)
            try:
                async for item in with_keepalive(items, conf.sse_keepalive_s, limiter):
                    if item is None:
                        yield ": keep-alive\n\n"
                        continue
                    if item["type"] == "final":
                        metrics.count_answer(item["trace"])
                    yield event(item, name=item["type"])
            finally:
                if lease:
                    with anyio.CancelScope(shield=True):
                        await anyio.to_thread.run_sync(close_stream, leases, lease)

        return StreamingResponse(
            events(), media_type="text/event-stream", headers={**SSE_HEADERS, "X-Conversation-ID": cid}
        )

    return router


def _slowed(ask, delay_s: float):
    """`advisor.ask`, held `delay_s` at its first tool (the question already stored): CHANNEL_FAULT_DELAY_S,
    for the tests that stop the server in the middle of a streamed answer. Unchanged when 0."""
    if not delay_s:
        return ask

    def slow(text, conversation_id=None, lang=None, emit=None, **kw):
        held = []

        def hold(event: dict) -> None:
            if event.get("type") == "tool_started" and not held:
                held.append(True)
                time.sleep(delay_s)
            if emit is not None:
                emit(event)

        return ask(text, conversation_id, lang, emit=hold, **kw)

    return slow
