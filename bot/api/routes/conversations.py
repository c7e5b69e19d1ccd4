"""GET /v1/conversations/{id} (the turns, a page at a time, with their feedback) and POST /v1/feedback."""

from __future__ import annotations

import datetime as dt
import hashlib
from typing import Annotated, Literal

import anyio.to_thread
from fastapi import APIRouter, Path, Query, Request
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from bot.api import errors as api_errors
from bot.api.deps import NOT_FOUND, AdvisorDep
from bot.api.errors import NO_CONTROL_PATTERN, ApiError
from bot.api.json_types import JsonTyped
from bot.api.security import Caller, Principal
from bot.api.widget_auth import widget_conversation
from bot.core.store import Store, UnknownConversation
from bot.core.trace import AnswerTrace

ConversationId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9._:-]{1,64}$")]
Comment = Annotated[str, StringConstraints(max_length=2000, pattern=NO_CONTROL_PATTERN)]
#: a conversation id in a path: printable, no control characters (NUL cannot even be looked up in PostgreSQL)
PathId = Annotated[str, Path(min_length=1, max_length=64, pattern=r"^[^\x00-\x1f\x7f/]+$")]
PAGE_MAX = 200


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


def router() -> APIRouter:
    router = APIRouter(tags=["advisor"])

    @router.get("/conversations/{conversation_id}", response_model=ConversationOut, responses=NOT_FOUND)
    def conversation(
        conversation_id: PathId,
        advisor: AdvisorDep,
        caller: Caller,
        request: Request,
        offset: Annotated[int, Query(ge=0, le=10_000_000, description="first turn of the page")] = 0,
        limit: Annotated[int, Query(ge=1, le=PAGE_MAX, description="turns per page")] = 50,
    ) -> ConversationOut:
        """The conversation's questions, answers and traces, oldest first, a page at a time, with their feedback.

        Only the key that started a conversation (or an admin key) can read it; others get 404."""
        store = advisor.store
        conversation_id = own_name(store, caller, conversation_id)
        if not store.readable(conversation_id, caller.owner, caller.admin):
            raise unknown_conversation(conversation_id, api_errors.request_lang(request))
        total = store.count_turns(conversation_id)
        page = store.turn_page(conversation_id, offset, limit)
        turns = [
            TurnOut(
                turn=t.idx,
                question=t.question,
                answer=t.answer,
                status=t.status,
                language=t.language,
                mode=t.mode,
                trace=t.trace,
                created_at=t.created_at,
            )
            for t in page
        ]
        rows = store.feedback_for(conversation_id, page[0].idx, page[-1].idx) if page else []
        feedback = [
            FeedbackOut(**{k: f[k] for k in ("id", "conversation_id", "turn", "rating", "comment")}) for f in rows
        ]
        following = offset + len(page)
        return ConversationOut(
            id=conversation_id,
            turns=turns,
            feedback=feedback,
            total_turns=total,
            offset=offset,
            limit=limit,
            next_offset=following if following < total else None,
        )

    @router.post("/feedback", status_code=201, response_model=FeedbackOut, responses=NOT_FOUND)
    def feedback(body: FeedbackIn, advisor: AdvisorDep, caller: Caller, request: Request) -> FeedbackOut:
        """Rate one answer: 1 helpful, -1 not helpful, with an optional comment."""
        widget_conversation(request, body.conversation_id)  # a widget key rates only its own conversations
        body = body.model_copy(update={"conversation_id": own_name(advisor.store, caller, body.conversation_id)})
        try:
            fid = advisor.store.add_feedback(
                body.conversation_id, body.turn, body.rating, body.comment, owner=caller.owner
            )
        except UnknownConversation:
            raise ApiError(
                404, f"No turn {body.turn} in conversation {body.conversation_id!r}.", code="unknown_turn", field="turn"
            ) from None
        return FeedbackOut(id=fid, **body.model_dump())

    return router


#: the first part of the ids the chat channels give their conversations (`wecom:<bot>:<user>`, `slack:<team>:…`,
#: `widget:<key>:…`): a /v1 caller never chooses one, so nobody can take a channel's conversation before its user
CHANNEL_PREFIXES = ("wecom", "slack", "widget")


def reserved(conversation_id: str) -> bool:
    """Whether the id has a chat channel's prefix (`wecom:…`)."""
    head, colon, _ = conversation_id.partition(":")
    return bool(colon) and head.lower() in CHANNEL_PREFIXES


def namespaced(key_id: str, chosen: str) -> str:
    """Where a key's own choice of id lives: `k.<key id>:<chosen>` (hashed when that would pass 64 characters),
    so what one key chooses can never be an id another key, or a channel, will use."""
    cid = f"k.{key_id}:{chosen}"
    if len(cid) <= 64:
        return cid
    return f"k.{key_id}:" + hashlib.sha256(chosen.encode("utf-8")).hexdigest()[:32]


async def choose_conversation(request: Request, caller: Principal, store: Store, given: str | None) -> str | None:
    """`chosen_conversation` in a worker thread when it may read the store; a new conversation (no id given, no
    widget key) reads nothing, so it is answered here without the thread hop."""
    if given is None and getattr(request.state, "widget_key_id", None) is None:
        return None
    return await anyio.to_thread.run_sync(chosen_conversation, request, caller, store, given)


def chosen_conversation(request: Request, caller: Principal, store: Store, given: str | None) -> str | None:
    """The conversation a /v1 question goes to (None: a new one with a random id). Reads the store.

    A widget key keeps to its own `widget:<key>:` ids; any other caller is refused a channel's id (422, in the
    caller's language). A key continues an id it owns as it is; any other id it names is taken as its own name
    inside the key's namespace (`namespaced`), so two keys choosing "chat-1" never meet. While the API is open
    (no key) the id is used as given."""
    if getattr(request.state, "widget_key_id", None) is not None:
        return widget_conversation(request, given)
    if given is None:
        return None
    if reserved(given):
        head = given.partition(":")[0]
        zh = api_errors.request_lang(request) == "zh"
        raise ApiError(
            422,
            f"会话 ID 不能以“{head}:”开头：这类 ID 属于聊天渠道（企业微信、Slack、网页组件）。请换一个 ID，或不填以新建会话。"
            if zh
            else f"A conversation id may not start with {head + ':'!r}: such ids belong to the chat channels "
            "(WeCom, Slack, the web widget). Choose another id, or leave it out to start a new conversation.",
            code="reserved_conversation_id",
            field="conversation_id",
        )
    if caller.key_id is None:
        return given
    found, holder = store.owner_of(given)
    if found and holder == caller.owner:
        return given
    mine = namespaced(caller.key_id, given)
    if found and not store.exists(mine):
        return given  # another key's conversation: refused downstream exactly like a missing one (404)
    return mine


def own_name(store: Store, caller: Principal, conversation_id: str) -> str:
    """The conversation a key means when it reads or rates an id: the id as it is where that is readable, else the
    key's own conversation of that name (`namespaced`), the one `/v1/ask` continued when the key chose the id."""
    if caller.key_id is None or store.readable(conversation_id, caller.owner, caller.admin):
        return conversation_id
    mine = namespaced(caller.key_id, conversation_id)
    return mine if store.exists(mine) else conversation_id


def unknown_conversation(conversation_id: str, lang: str) -> ApiError:
    """404 for a conversation that does not exist or belongs to another caller (the two look the same)."""
    msg = f"没有对话“{conversation_id}”。" if lang == "zh" else f"No conversation {conversation_id!r}."
    return ApiError(404, msg, code="unknown_conversation", field="conversation_id")
