"""HTTP routes of WeCom: the AI bot's callback URL (`/wecom/aibot`) and the self-built app's (`/wecom/app`).

Every request is checked on its raw bytes before anything else is parsed: signature, timestamp window,
nonce replay, then decryption and the receive-id (`WeComCrypto.open_callback`, shared with the app). A
rejected request gets a 4xx and nothing else happens: a one-line reason before the signature holds, one
uniform answer after it (`crypto.UNREADABLE`); what is logged is the reason and never a key, a token or the
plaintext.

The acknowledgement does no I/O: the callback is handled on the event loop — verify, decrypt, parse,
open a stream, queue the question (`Delivery.accept` de-duplicates from memory) — and the sealed reply
goes out at once. What needs the database happens after it: the worker takes the message's lease before it
answers (`bot/channels/leases.py`), and feedback is written by a background task. A process that dies
mid-answer leaves its streams in the lease: the next start opens them again with an apology
(`recoverers`), for WeCom's refreshes or, past the window, the response_url.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable
from typing import Any

import anyio.to_thread
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from starlette.background import BackgroundTask

from bot.channels.delivery import Delivery, shared_delivery
from bot.channels.outbound import guarded_post
from bot.channels.render import phrase
from bot.channels.settings import WeComSettings
from bot.channels.wecom.aibot import Incoming, read_message, record_feedback, stream_body, welcome_body
from bot.channels.wecom.crypto import NONCE_TTL_S, CallbackRejected, WeComCrypto
from bot.channels.wecom.streams import ResponseUrlSink, StreamBoard, StreamSink

log = logging.getLogger("gpu_advisor.channels.wecom")

#: the AI bot's callback body, `{"encrypt": "<base64>"}`, matched on the raw bytes (any spacing JSON allows)
_ENCRYPT = re.compile(rb'"encrypt"\s*:\s*"([A-Za-z0-9+/=]*)"')


def rejected(err: CallbackRejected, where: str) -> Response:
    """The reason is logged; the answer names it only before the signature holds (`CallbackRejected.answer`)."""
    log.warning("WeCom %s callback rejected: %s", where, err.reason)
    return PlainTextResponse(err.answer, status_code=err.status)


async def delivery_of(request: Request) -> Delivery:
    """The app's delivery core; built once (it creates its tables) off the event loop."""
    delivery = getattr(request.app.state, "delivery", None)
    return delivery if delivery is not None else await anyio.to_thread.run_sync(shared_delivery, request.app.state)


def callback_crypto(delivery: Delivery, token: str, aes_key: str, receive_id: str, where: str) -> WeComCrypto:
    """The crypto of one callback URL, its nonces remembered by this process (a replay that reaches another
    process carries the same message id, which the delivery core's lease answers once)."""
    return WeComCrypto(
        token, aes_key, receive_id, seen_nonce=lambda key: delivery.first_here(f"nonce:{where}:{key}", NONCE_TTL_S)
    )


def url_check(crypto: WeComCrypto, request: Request, where: str) -> Response:
    """`GET` on a callback URL when it is saved in the console: the decrypted `echostr`, as plain text."""
    try:
        return PlainTextResponse(crypto.open_callback(request.query_params, request.query_params.get("echostr")))
    except CallbackRejected as err:
        return rejected(err, f"{where} URL check")


def aibot_router(settings: WeComSettings) -> APIRouter:
    """`GET /wecom/aibot` (URL check) and `POST /wecom/aibot` (encrypted JSON callbacks)."""
    router = APIRouter(tags=["wecom"], include_in_schema=False)
    holder: dict[str, Any] = {}
    board = StreamBoard(window_s=settings.stream_window_s, post=guarded_post(settings.response_hosts))

    def crypto(delivery: Delivery) -> WeComCrypto:
        if "crypto" not in holder:
            holder["crypto"] = callback_crypto(
                delivery,
                settings.aibot_token.get_secret_value(),
                settings.aibot_aes_key.get_secret_value(),
                "",
                "aibot",
            )
        return holder["crypto"]

    @router.get("/wecom/aibot")
    async def verify_url(request: Request) -> Response:
        return url_check(crypto(await delivery_of(request)), request, "aibot")

    @router.post("/wecom/aibot")
    async def callback(request: Request) -> Response:
        raw = await request.body()
        delivery = await delivery_of(request)
        c = crypto(delivery)
        try:
            found = _ENCRYPT.search(raw)  # the ciphertext only: nothing is parsed before the signature holds
            if not found:
                raise CallbackRejected("body is not the JSON WeCom sends", 400)
            plain = c.open_callback(request.query_params, found.group(1).decode("ascii"))
            try:
                body = json.loads(plain)
                if not isinstance(body, dict):
                    raise ValueError
            except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
                raise CallbackRejected.after_signature("decrypted message is not a JSON object") from None
        except CallbackRejected as err:
            return rejected(err, "aibot")
        if not settings.corp_allowed(body):
            log.info("WeCom AI bot message from a corp outside WECOM_CORP_IDS ignored")
            return Response(status_code=200)
        reply, later = _handle(delivery, body)
        task = BackgroundTask(later) if later else None
        if reply is None:
            return Response(status_code=200, background=task)
        sealed = c.seal(json.dumps(reply, ensure_ascii=False), nonce=request.query_params.get("nonce"))
        return JSONResponse(sealed, background=task)

    def _handle(delivery: Delivery, body: dict[str, Any]) -> tuple[dict[str, Any] | None, Callable[[], None] | None]:
        """(the reply, or None for an empty one; work to do after the reply has gone, or None)."""
        incoming = read_message(body)
        if incoming.kind == "refresh":
            sid = incoming.stream_id or ""
            content, finished, card = board.refresh(sid)
            return stream_body(sid, content, finished, feedback_id=sid if finished else None, card=card), None
        if incoming.kind == "click":
            return None, _click(delivery, incoming)
        if incoming.kind == "event":
            return _event(delivery, incoming)
        if incoming.kind == "unsupported":
            return stream_body(
                "u" + str(body.get("msgid") or "x")[:40], phrase("unsupported", incoming.lang), True
            ), None
        if incoming.kind != "question" or incoming.inbound is None:
            return None, None
        return _question(delivery, incoming), None

    def _question(delivery: Delivery, incoming: Incoming) -> dict[str, Any] | None:
        msg = incoming.inbound
        existing = board.for_message(msg.message_id)
        if existing is not None:  # WeCom retried while we were answering: point it at the same stream
            content, finished, card = board.refresh(existing.id)
            return stream_body(existing.id, content, finished, feedback_id=existing.id, card=card)
        stream = board.open(msg.message_id, incoming.user_key, incoming.lang, incoming.response_url)
        if stream is None:
            n = board.in_flight(incoming.user_key)
            return stream_body("w" + msg.message_id[:40], phrase("wait_in_flight", incoming.lang, n=n), True)
        stream.conversation_id, stream.question = msg.conversation_id, msg.text
        reply_to = {
            "stream": stream.id,
            "message": msg.message_id,
            "user_key": incoming.user_key,
            "response_url": incoming.response_url,
            "at": time.time(),
        }
        ticket = delivery.accept(msg, StreamSink(board, stream.id, incoming.lang), "wecom-aibot", reply_to)
        if ticket.status == "duplicate":  # this process had it already, and its stream is gone
            board.drop(stream.id)
            return None
        if ticket.status == "busy":
            board.finish(stream.id, ticket.reply or phrase("busy", incoming.lang))
        content, finished, card = board.refresh(stream.id)
        # the feedback id goes in the first reply: WeCom reads it there
        return stream_body(stream.id, content, finished, feedback_id=stream.id, card=card)

    def _click(delivery: Delivery, incoming: Incoming) -> Callable[[], None] | None:
        """A follow-up button: an empty reply at once (WeCom allows only that or a card update), the answer
        through the click's response_url."""
        msg = incoming.inbound
        sink = ResponseUrlSink(incoming.response_url, msg.text, incoming.lang, post=board.post)
        reply_to = {"response_url": incoming.response_url, "question": msg.text}
        ticket = delivery.accept(msg, sink, "wecom-aibot-click", reply_to)
        if ticket.status == "busy":
            return lambda: _quietly(sink.apology, ticket.reply or phrase("busy", incoming.lang))
        return None

    def _event(delivery: Delivery, incoming: Incoming) -> tuple[dict[str, Any] | None, Callable[[], None] | None]:
        event = incoming.event or {}
        kind = event.get("eventtype")
        if kind == "enter_chat":
            return welcome_body("zh"), None
        if kind == "feedback_event":  # WeCom allows only an empty reply; the store is written after it
            event_id = f"event:wecom:{incoming.inbound.tenant}:{incoming.inbound.message_id}"
            return None, lambda: record_feedback(delivery, event, event_id)
        return None, None

    def recover_stream(reply_to: dict, lang: str) -> StreamSink:
        """An unanswered message of an earlier process: its stream again, so WeCom's refreshes (or, once the
        window has passed, its response_url) get the apology."""
        age = max(0.0, time.time() - float(reply_to.get("at") or 0))
        sid = board.restore(
            str(reply_to["stream"]),
            str(reply_to.get("message") or ""),
            str(reply_to.get("user_key") or ""),
            lang,
            reply_to.get("response_url"),
            age,
        )
        return StreamSink(board, sid, lang)

    def recover_click(reply_to: dict, lang: str) -> ResponseUrlSink:
        return ResponseUrlSink(reply_to.get("response_url"), str(reply_to.get("question") or ""), lang, post=board.post)

    router.board = board  # type: ignore[attr-defined]  # for the app's shutdown and the tests
    router.recoverers = {"wecom-aibot": recover_stream, "wecom-aibot-click": recover_click}  # type: ignore[attr-defined]
    return router


def _quietly(fn, *args) -> None:
    try:
        fn(*args)
    except Exception:
        log.exception("WeCom notice could not be sent")
