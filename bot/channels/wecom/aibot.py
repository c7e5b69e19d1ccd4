"""The WeCom AI bot's (智能机器人) message protocol, shared by the HTTP-callback and long-connection modes.

A decrypted callback (HTTP) or a frame body (WebSocket) is JSON:

    {"msgid", "aibotid", "chatid" (groups), "chattype": "single" | "group", "from": {"userid"},
     "response_url" (HTTP mode), "msgtype": "text" | "mixed" | "voice" | "image" | "file" | "stream" | "event",
     "text": {"content"}, "mixed": {"msg_item": [{"msgtype", "text" | "image"}]}, "voice": {"content"},
     "quote": {"msgtype", "text" | ...}, "stream": {"id"}, "event": {"eventtype", ...}}

`read_message` turns it into an `Inbound` for the delivery core (the @-mention stripped, a quoted text
kept as context); the reply bodies (stream, welcome text) are built here for both transports.

Follow-up questions ride on the finished stream as a `button_interaction` template card
(`stream_with_template_card`, sent once per message; WeCom sends such cards only for a bot with a
callback URL, so the long connection keeps them as text). A button's key is `ask:<question>`; its click
comes back as a `template_card_event` and `read_click` turns it into the question, asked in the same
conversation.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from typing import Any

from bot.channels.delivery import Delivery, Inbound
from bot.channels.render import phrase
from bot.core.language import detect_language

log = logging.getLogger("gpu_advisor.channels.wecom")

MAX_QUOTE_CHARS = 500
STREAM_CONTENT_BYTES = 20480  # the most a stream reply's content may carry
ASK_KEY = "ask:"  # a follow-up button's key: "ask:<question>"
CARD_TASK = "fu_"  # a follow-up card's task id: "fu_<stream id>"
MAX_BUTTONS = 6  # a button_interaction card holds at most 6
MAX_KEY_BYTES = 1024
BUTTON_CHARS = 16  # WeCom suggests short button texts; the full question is in the answer's list above
_MENTION = re.compile(r"^(\s*@\S+)+\s*")


@dataclass(frozen=True)
class Incoming:
    """What a callback asks of us."""

    kind: str  # "question" | "refresh" | "unsupported" | "event" | "click" | "unknown"
    inbound: Inbound | None = None
    user_key: str = ""  # who, for the in-flight limit: "<aibotid>:<userid>"
    response_url: str | None = None
    stream_id: str | None = None
    event: dict[str, Any] | None = None
    lang: str = "zh"


def _text_of(part: dict[str, Any]) -> str:
    kind = part.get("msgtype")
    if kind == "text":
        return str((part.get("text") or {}).get("content") or "")
    if kind == "voice":  # WeCom sends the speech already transcribed
        voice = part.get("voice") or {}
        return str(voice.get("content") or voice.get("text") or "")
    if kind == "mixed":
        items = (part.get("mixed") or {}).get("msg_item") or []
        return "\n".join(_text_of(i) for i in items if isinstance(i, dict) and i.get("msgtype") == "text").strip()
    return ""


def strip_mention(text: str) -> str:
    """ "@RobotA 8卡H800…" -> "8卡H800…" (only the leading @-mentions: the question itself is untouched)."""
    return _MENTION.sub("", text, count=1).strip()


def read_message(body: dict[str, Any], tenant_fallback: str = "aibot") -> Incoming:
    kind = body.get("msgtype")
    aibot = str(body.get("aibotid") or tenant_fallback)
    user = str((body.get("from") or {}).get("userid") or "")
    user_key = f"{aibot}:{user}"
    if kind == "stream":
        return Incoming("refresh", stream_id=str((body.get("stream") or {}).get("id") or ""), user_key=user_key)
    if kind == "event":
        click = read_click(body, aibot, user)
        if click is not None:
            return Incoming(
                "click",
                inbound=click,
                user_key=user_key,
                response_url=body.get("response_url"),
                event=body.get("event") or {},
                lang=click.language,
            )
        return Incoming(
            "event",
            event=body.get("event") or {},
            user_key=user_key,
            inbound=Inbound("wecom", aibot, _chat(body, user), str(body.get("msgid") or ""), "", user),
        )
    if kind not in ("text", "mixed", "voice", "image", "file"):
        return Incoming("unknown", user_key=user_key)
    text = strip_mention(_text_of(body))
    quote = body.get("quote")
    if isinstance(quote, dict):
        quoted = _text_of(quote).strip()[:MAX_QUOTE_CHARS]
        if quoted and text:
            text = f"{quoted}\n{text}"
    lang = detect_language(text) if text else "zh"
    if not text:
        return Incoming("unsupported", user_key=user_key, response_url=body.get("response_url"), lang=lang)
    msg = Inbound(
        channel="wecom",
        tenant=aibot,
        chat=_chat(body, user),
        message_id=str(body.get("msgid") or ""),
        text=text,
        user=user,
    )
    return Incoming("question", inbound=msg, user_key=user_key, response_url=body.get("response_url"), lang=lang)


def _chat(body: dict[str, Any], user: str) -> str:
    """A group is one conversation (its chatid); a single chat is the user's own."""
    return str(body.get("chatid") or user) if body.get("chattype") == "group" else user


def read_click(body: dict[str, Any], aibot: str, user: str) -> Inbound | None:
    """A click on one of our follow-up buttons, as the question it asks; None for any other event.

    The message id is the click itself (card, button, user): WeCom sends a card event once, and a second
    click on the same button by the same user asks nothing new."""
    event = body.get("event") or {}
    if event.get("eventtype") != "template_card_event":
        return None
    card = event.get("template_card_event") or event  # nested as documented; flat as some clients send it
    key, task = str(card.get("event_key") or ""), str(card.get("task_id") or "")
    question = key[len(ASK_KEY) :].strip() if key.startswith(ASK_KEY) else ""
    if not question or not task.startswith(CARD_TASK):
        return None
    click = hashlib.sha1(f"{task}\n{key}\n{user}".encode()).hexdigest()[:32]
    return Inbound(
        channel="wecom", tenant=aibot, chat=_chat(body, user), message_id=f"click-{click}", text=question, user=user
    )


def follow_up_card(stream_id: str, follow_ups: tuple[str, ...] | list[str], lang: str) -> dict[str, Any] | None:
    """The answer's follow-up questions as a button_interaction template card (None when there are none)."""
    buttons, seen = [], set()
    for q in follow_ups:
        q = " ".join(str(q).split())
        key = ASK_KEY + q
        if not q or q in seen or len(key.encode("utf-8")) > MAX_KEY_BYTES:
            continue
        seen.add(q)
        text = q if len(q) <= BUTTON_CHARS else q[: BUTTON_CHARS - 1] + "…"
        buttons.append({"text": text, "key": key})
        if len(buttons) == MAX_BUTTONS:
            break
    if not buttons:
        return None
    title = phrase("follow_ups", lang).rstrip("：:")
    return {
        "card_type": "button_interaction",
        "main_title": {"title": title},
        "button_list": buttons,
        "task_id": CARD_TASK + re.sub(r"[^A-Za-z0-9_@-]", "", stream_id)[:120],
    }


def stream_body(
    stream_id: str, content: str, finish: bool, feedback_id: str | None = None, card: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A stream reply; with `card`, `stream_with_template_card` (WeCom takes a card once per message)."""
    stream: dict[str, Any] = {"id": stream_id, "finish": finish, "content": _fit(content)}
    if feedback_id:
        stream["feedback"] = {"id": feedback_id}
    if card is not None:
        return {"msgtype": "stream_with_template_card", "stream": stream, "template_card": card}
    return {"msgtype": "stream", "stream": stream}


def _fit(content: str) -> str:
    data = content.encode("utf-8")
    if len(data) <= STREAM_CONTENT_BYTES:
        return content
    return data[: STREAM_CONTENT_BYTES - 3].decode("utf-8", "ignore") + "…"


def welcome_body(lang: str) -> dict[str, Any]:
    """The enter_chat welcome: who we are and three questions to try (a text reply, as WeCom allows)."""
    questions = "\n".join(f"{i}. {q}" for i, q in enumerate(phrase("welcome_questions", lang), 1))
    return {"msgtype": "text", "text": {"content": f"{phrase('welcome', lang)}\n{questions}"}}


def markdown_body(content: str, feedback_id: str | None = None) -> dict[str, Any]:
    markdown: dict[str, Any] = {"content": content}
    if feedback_id:
        markdown["feedback"] = {"id": feedback_id}
    return {"msgtype": "markdown", "markdown": markdown}


def feedback_rating(event: dict[str, Any]) -> tuple[str, int | None, str | None]:
    """(feedback id, rating 1 / -1 / None for "cancelled", comment) from a feedback_event."""
    fb = event.get("feedback_event") or {}
    kind = fb.get("type")
    rating = 1 if kind == 1 else -1 if kind == 2 else None
    return str(fb.get("id") or ""), rating, (str(fb["content"])[:2000] if fb.get("content") else None)


def record_feedback(delivery: Delivery, event: dict[str, Any], event_id: str | None = None) -> bool:
    """A 👍/👎 on an answer, into the feedback store, once per event; the feedback id names the answer
    (`ReplyLog`, kept in the store, so feedback after a restart still lands)."""
    fid, rating, comment = feedback_rating(event)
    try:
        if event_id and not delivery.first_sighting(event_id):
            return False  # WeCom delivered this event twice
        target = delivery.replies.find("wecom", fid) if fid else None
        if target is None or rating is None:
            log.info("feedback %r not recorded (unknown answer or a cancellation)", fid)
            return False
        delivery.advisor.store.add_feedback(target[0], target[1], rating, comment)
    except Exception:
        log.exception("feedback %r could not be stored", fid)
        return False
    return True
