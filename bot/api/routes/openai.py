"""OpenAI-compatible routes, so chat front-ends (Open WebUI, LobeChat, Dify) can use the advisor as a model.

    GET  /v1/models             one model, `gpu-advisor`
    POST /v1/chat/completions   plain or streamed (`stream: true`)

`messages` is the conversation: the last user message is the question. The advisor's conversation id
comes from, in order: `metadata.conversation_id`, the `X-OpenWebUI-Chat-Id` header (Open WebUI sends it
with ENABLE_FORWARD_USER_INFO_HEADERS), else `user`, the system prompt and the first user message —
stable while the chat grows, so follow-ups inherit the earlier turns. Every id is keyed by the caller
(its principal) and a server secret: two callers who open with the same words, or choose the same
chat id, never share a conversation, and nobody can compute an id from the text. A client-chosen id
that names a conversation the caller already owns (one the API returned) is used as it is. Sampling parameters
(temperature, max_tokens, …) are accepted and ignored: the answers are computed, not sampled.

Streaming follows OpenAI's wire format: `data: {chat.completion.chunk}` events, the first with the
role, content deltas, the last with `finish_reason`, a usage chunk with no choices when
`stream_options.include_usage` is true, then `data: [DONE]`. An error after the headers went out is
a `data: {"error": {...}}` event, never a 500. Cited sources stay in the answer's markdown.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import time
import uuid
from collections.abc import Callable
from functools import partial
from typing import Annotated, Any, Literal

import anyio.to_thread
from fastapi import APIRouter, Depends, Header, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from bot.answer.advisor import MAX_QUESTION_CHARS, Advisor
from bot.api.errors import ApiError, advisor_error, error_payload
from bot.api.json_types import JsonTyped
from bot.api.running import run_answer
from bot.api.security import Caller
from bot.api.sse import KEEPALIVE, SSE_HEADERS, event, with_keepalive
from bot.core.language import detect_language
from bot.core.trace import AnswerTrace
from tools.errors import AdvisorError

MODEL_ID = "gpu-advisor"
_SAFE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
ID_SECRET = "conversation-ids"  # the store's secret that keys chat conversation ids


# ---- wire models --------------------------------------------------------------------------------------


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None


class StreamOptions(JsonTyped):
    model_config = ConfigDict(extra="allow")

    include_usage: bool = False


class ChatCompletionRequest(JsonTyped):
    """OpenAI's request; fields not listed (temperature, top_p, max_tokens, tools, …) are ignored."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1, max_length=128, description=f"must be {MODEL_ID!r}")
    messages: list[ChatMessage] = Field(min_length=1, max_length=500)
    stream: bool = False
    stream_options: StreamOptions | None = None
    user: str | None = Field(None, max_length=256)
    metadata: dict[str, Any] | None = Field(None, description="`conversation_id` continues that conversation")


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class Choice(BaseModel):
    index: int = 0
    message: AssistantMessage
    finish_reason: Literal["stop"] = "stop"


class Usage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class AdvisorExtra(BaseModel):
    """Extra fields for clients that know gpu-advisor; OpenAI clients ignore them."""

    conversation_id: str
    mode: str
    tool_calls: list[str]


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: Usage
    gpu_advisor: AdvisorExtra


# ---- the conversation behind `messages` ----------------------------------------------------------------


def message_text(message: ChatMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    if not message.content:
        return ""
    return "\n".join(str(p.get("text", "")) for p in message.content if p.get("type") in ("text", "input_text"))


def conversation_id(
    req: ChatCompletionRequest,
    chat_header: str | None,
    owner: str = "",
    secret: str = "",
    owns: Callable[[str], bool] = lambda _cid: False,
) -> str:
    """A conversation id that stays the same as the chat grows (see the module docstring)."""
    explicit = (req.metadata or {}).get("conversation_id") or chat_header
    if isinstance(explicit, str) and explicit:
        if _SAFE_ID.match(explicit) and owns(explicit):
            return explicit  # one of the caller's own conversations, e.g. from an earlier answer
        seed = json.dumps(["chosen", owner, explicit], ensure_ascii=False)
    else:
        system = [message_text(m) for m in req.messages if m.role in ("system", "developer")]
        first_user = next((message_text(m) for m in req.messages if m.role == "user"), "")
        seed = json.dumps(["opening", owner, req.user or "", system, first_user], ensure_ascii=False)
    digest = hmac.new(secret.encode(), seed.encode("utf-8"), hashlib.sha256).hexdigest()
    return "chat-" + digest[:32]


def _no_control(text: str, field: str) -> None:
    if _CONTROL.search(text):
        raise ApiError(422, f"Invalid {field}: control characters such as NUL are not allowed in text.", field=field)


def question_of(req: ChatCompletionRequest) -> str:
    for i, message in enumerate(req.messages):
        _no_control(message_text(message), f"messages.{i}.content")
    if req.user:
        _no_control(req.user, "user")
    for message in reversed(req.messages):
        if message.role == "user":
            text = message_text(message).strip()
            if not text:
                break
            if len(text) > MAX_QUESTION_CHARS:
                raise ApiError(
                    422,
                    f"The last user message is {len(text)} characters; keep it under {MAX_QUESTION_CHARS}.",
                    field="messages",
                )
            return text
    raise ApiError(422, "The conversation has no user message with text to answer.", field="messages")


def with_sources(trace: AnswerTrace) -> str:
    """The answer, with a numbered list of cited passages appended when the answer does not list them."""
    missing = [c for c in trace.citations if c.source not in trace.answer]
    if not missing:
        return trace.answer
    head = "**参考：**" if trace.language == "zh" else "**Sources:**"
    start = len(trace.citations) - len(missing) + 1
    lines = [f"[{start + i}] [{c.title}]({c.source})" for i, c in enumerate(missing)]
    return trace.answer.rstrip() + "\n\n" + head + "\n" + "\n".join(lines)


_TOKEN = re.compile(r"[\u4e00-\u9fff]|\w+|[^\w\s]")


def approx_tokens(text: str) -> int:
    """A tokenizer-free estimate (one per CJK character, word or symbol), for `usage`."""
    return len(_TOKEN.findall(text))


def _usage(req: ChatCompletionRequest, content: str) -> Usage:
    prompt = sum(approx_tokens(message_text(m)) for m in req.messages)
    completion = approx_tokens(content)
    return Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion)


# ---- routes ------------------------------------------------------------------------------------------


async def get_advisor(request: Request) -> Advisor:  # async: no worker-thread hop for an attribute read
    return request.app.state.advisor


AdvisorDep = Annotated[Advisor, Depends(get_advisor)]
ChatHeader = Annotated[str | None, Header(alias="X-OpenWebUI-Chat-Id", include_in_schema=False)]

router = APIRouter(tags=["openai-compatible"])


@router.get("/models", response_model=ModelList)
def list_models(request: Request) -> ModelList:
    started = int(getattr(request.app.state, "started_at", time.time()))
    return ModelList(data=[ModelCard(id=MODEL_ID, created=started, owned_by="gpu-advisor")])


@router.post(
    "/chat/completions",
    response_model=ChatCompletion,
    responses={
        200: {"content": {"text/event-stream": {}}, "description": "a chat.completion, or SSE chunks"},
        404: {"description": "unknown model id"},
    },
)
async def chat_completions(
    body: ChatCompletionRequest, request: Request, advisor: AdvisorDep, caller: Caller, chat_header: ChatHeader = None
):
    if body.model != MODEL_ID:
        raise ApiError(
            404,
            f"Unknown model {body.model!r}; this server has {MODEL_ID!r}.",
            code="model_not_found",
            field="model",
            suggestions=[MODEL_ID],
        )
    question = question_of(body)
    store = advisor.store

    def pick_id() -> str:
        return conversation_id(
            body, chat_header, caller.owner, store.secret(ID_SECRET), owns=lambda cid: store.readable(cid, caller.owner)
        )

    cid = await anyio.to_thread.run_sync(pick_id)
    completion_id = "chatcmpl-" + uuid.uuid4().hex
    created = int(time.time())
    metrics = request.app.state.metrics
    if body.stream:
        include_usage = bool(body.stream_options and body.stream_options.include_usage)
        chunks = _chunks(advisor, body, question, cid, completion_id, created, include_usage, request, caller.owner)
        return StreamingResponse(chunks, media_type="text/event-stream", headers=SSE_HEADERS)
    lang = detect_language(question)
    try:
        trace = await run_answer(
            partial(advisor.ask, question, cid, owner=caller.owner),
            request.app.state.answer_limiter,
            request.app.state.api_settings.answer_deadline_s,
            lang,
        )
    except AdvisorError as err:
        raise advisor_error(err, lang) from None
    metrics.count_answer(trace)
    content = with_sources(trace)
    return ChatCompletion(
        id=completion_id,
        created=created,
        model=MODEL_ID,
        choices=[Choice(message=AssistantMessage(content=content))],
        usage=_usage(body, content),
        gpu_advisor=AdvisorExtra(
            conversation_id=trace.conversation_id, mode=trace.mode, tool_calls=[c.tool for c in trace.tool_calls]
        ),
    )


async def _chunks(
    advisor: Advisor,
    body: ChatCompletionRequest,
    question: str,
    cid: str,
    completion_id: str,
    created: int,
    include_usage: bool,
    request: Request,
    owner: str,
):
    state = request.app.state

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        return event(
            {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": MODEL_ID,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
        )

    yield chunk({"role": "assistant", "content": ""})
    sent: list[str] = []
    async for item in with_keepalive(
        advisor.stream(question, cid, owner=owner), state.api_settings.sse_keepalive_s, state.stream_limiter
    ):
        if item is None or item["type"] in ("tool_started", "tool_finished"):
            yield KEEPALIVE
        elif item["type"] == "delta":
            sent.append(item["text"])
            yield chunk({"content": item["text"]})
        elif item["type"] == "final":
            trace = AnswerTrace.model_validate(item["trace"])
            state.metrics.count_answer(trace)
            full = with_sources(trace)
            tail = full[len("".join(sent)) :] if full.startswith("".join(sent)) else ""
            if tail:
                yield chunk({"content": tail})
            yield chunk({}, finish="stop")
            if include_usage:
                yield event(
                    {
                        "id": completion_id,
                        "object": "chat.completion.chunk",
                        "created": created,
                        "model": MODEL_ID,
                        "choices": [],
                        "usage": _usage(body, full).model_dump(),
                    }
                )
        elif item["type"] == "error":
            status = 500 if item.get("code") == "internal" else 422
            yield event(
                error_payload(
                    status,
                    item.get("message", "error"),
                    code=item.get("code"),
                    request_id=request.scope.get("state", {}).get("request_id"),
                )
            )
            break
    yield event("[DONE]")
