"""HTTP routes of WeCom: the AI bot's callback URL (`/wecom/aibot`) and the self-built app's (`/wecom/app`).

Every request is checked on its raw bytes before anything else is parsed: signature, timestamp window,
nonce replay, then decryption and the receive-id. A rejected request gets a 4xx with a one-line reason
and nothing else happens; what is logged is the reason and never a key, a token or the plaintext.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio.to_thread
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from bot.channels.delivery import shared_delivery
from bot.channels.render import phrase
from bot.channels.settings import WeComSettings
from bot.channels.wecom.aibot import feedback_rating, read_message, stream_body, welcome_body
from bot.channels.wecom.crypto import CallbackRejected, WeComCrypto
from bot.channels.wecom.streams import StreamBoard, StreamSink

log = logging.getLogger("gpu_advisor.channels.wecom")
NONCE_TTL_S = 900


def _rejected(err: CallbackRejected, where: str) -> Response:
    log.warning("WeCom %s callback rejected: %s", where, err.reason)
    return PlainTextResponse(f"rejected: {err.reason}", status_code=err.status)


def _nonce_checker(request_state_getter, prefix: str):
    def first(key: str) -> bool:
        return shared_delivery(request_state_getter()).first_sighting(f"nonce:{prefix}:{key}", NONCE_TTL_S)

    return first


def aibot_router(settings: WeComSettings) -> APIRouter:
    """`GET /wecom/aibot` (URL check) and `POST /wecom/aibot` (encrypted JSON callbacks)."""
    router = APIRouter(tags=["wecom"], include_in_schema=False)
    holder: dict[str, Any] = {}
    board = StreamBoard(window_s=settings.stream_window_s)

    def crypto(request: Request) -> WeComCrypto:
        if "crypto" not in holder:
            holder["crypto"] = WeComCrypto(settings.aibot_token.get_secret_value(),
                                           settings.aibot_aes_key.get_secret_value(), receive_id="",
                                           seen_nonce=_nonce_checker(lambda: request.app.state, "aibot"))
        return holder["crypto"]

    @router.get("/wecom/aibot")
    def verify_url(request: Request) -> Response:
        q = request.query_params
        try:
            echo = crypto(request).open(q.get("msg_signature"), q.get("timestamp"), q.get("nonce"), q.get("echostr"))
        except CallbackRejected as err:
            return _rejected(err, "aibot URL check")
        return PlainTextResponse(echo)

    @router.post("/wecom/aibot")
    async def callback(request: Request) -> Response:
        raw = await request.body()
        q = dict(request.query_params)
        return await anyio.to_thread.run_sync(lambda: _callback(request, raw, q))

    def _callback(request: Request, raw: bytes, q: dict[str, str]) -> Response:
        c = crypto(request)
        try:
            try:
                envelope = json.loads(raw)
                encrypted = envelope.get("encrypt") if isinstance(envelope, dict) else None
            except (ValueError, UnicodeDecodeError):
                raise CallbackRejected("body is not the JSON WeCom sends", 400) from None
            plain = c.open(q.get("msg_signature"), q.get("timestamp"), q.get("nonce"), encrypted)
            try:
                body = json.loads(plain)
                if not isinstance(body, dict):
                    raise ValueError
            except ValueError:
                raise CallbackRejected("decrypted message is not a JSON object", 400) from None
        except CallbackRejected as err:
            return _rejected(err, "aibot")
        reply = _handle(request, body)
        if reply is None:
            return Response(status_code=200)
        return JSONResponse(c.seal(json.dumps(reply, ensure_ascii=False), nonce=q.get("nonce")))

    def _handle(request: Request, body: dict[str, Any]) -> dict[str, Any] | None:
        incoming = read_message(body)
        if incoming.kind == "refresh":
            content, finished = board.refresh(incoming.stream_id or "")
            return stream_body(incoming.stream_id or "", content, finished,
                               feedback_id=incoming.stream_id if finished else None)
        if incoming.kind == "event":
            return _event(request, incoming)
        if incoming.kind == "unsupported":
            return stream_body("u" + str(body.get("msgid") or "x")[:40], phrase("unsupported", incoming.lang), True)
        if incoming.kind != "question" or incoming.inbound is None:
            return None
        msg = incoming.inbound
        existing = board.for_message(msg.message_id)
        if existing is not None:  # WeCom retried while we were answering: point it at the same stream
            content, finished = board.refresh(existing.id)
            return stream_body(existing.id, content, finished)
        stream = board.open(msg.message_id, incoming.user_key, incoming.lang, incoming.response_url)
        if stream is None:
            n = board.in_flight(incoming.user_key)
            return stream_body("w" + msg.message_id[:40], phrase("wait_in_flight", incoming.lang, n=n), True)
        stream.conversation_id, stream.question = msg.conversation_id, msg.text
        ticket = shared_delivery(request.app.state).accept(msg, StreamSink(board, stream.id))
        if ticket.status == "duplicate":  # answered by another worker, or before a restart
            board.drop(stream.id)
            return None
        if ticket.status == "busy":
            board.finish(stream.id, ticket.reply or phrase("busy", incoming.lang))
        content, finished = board.refresh(stream.id)
        return stream_body(stream.id, content, finished)

    def _event(request: Request, incoming) -> dict[str, Any] | None:
        event = incoming.event or {}
        kind = event.get("eventtype")
        if kind == "enter_chat":
            return welcome_body("zh")
        if kind == "feedback_event":
            record_feedback(request.app.state.advisor.store, board, event)
        return None

    router.board = board  # type: ignore[attr-defined]  # for the app's shutdown and the tests
    return router


def record_feedback(store, board: StreamBoard, event: dict[str, Any]) -> bool:
    """A 👍/👎 on an answer, into the feedback store; the feedback id is the answer's stream id."""
    fid, rating, comment = feedback_rating(event)
    stream = board.get(fid)
    if stream is None or rating is None or not stream.conversation_id:
        log.info("feedback %r not recorded (unknown answer or a cancellation)", fid)
        return False
    turns = [t for t in store.turns(stream.conversation_id) if t.status == "answered"]
    turns = [t for t in turns if t.question == stream.question] or turns
    if not turns:
        return False
    store.add_feedback(stream.conversation_id, turns[-1].idx, rating, comment)
    return True
