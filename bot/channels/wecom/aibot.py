"""The WeCom AI bot's (智能机器人) message protocol, shared by the HTTP-callback and long-connection modes.

A decrypted callback (HTTP) or a frame body (WebSocket) is JSON:

    {"msgid", "aibotid", "chatid" (groups), "chattype": "single" | "group", "from": {"userid"},
     "response_url" (HTTP mode), "msgtype": "text" | "mixed" | "voice" | "image" | "file" | "stream" | "event",
     "text": {"content"}, "mixed": {"msg_item": [{"msgtype", "text" | "image"}]}, "voice": {"content"},
     "quote": {"msgtype", "text" | ...}, "stream": {"id"}, "event": {"eventtype", ...}}

`read_message` turns it into an `Inbound` for the delivery core (the @-mention stripped, a quoted text
kept as context); the reply bodies (stream, welcome text) are built here for both transports.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from bot.channels.delivery import Inbound
from bot.channels.render import phrase
from bot.language import detect_language

MAX_QUOTE_CHARS = 500
STREAM_CONTENT_BYTES = 20480  # the most a stream reply's content may carry
_MENTION = re.compile(r"^(\s*@\S+)+\s*")


@dataclass(frozen=True)
class Incoming:
    """What a callback asks of us."""

    kind: str  # "question" | "refresh" | "unsupported" | "event" | "unknown"
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
    """"@RobotA 8卡H800…" -> "8卡H800…" (only the leading @-mentions: the question itself is untouched)."""
    return _MENTION.sub("", text, count=1).strip()


def read_message(body: dict[str, Any], tenant_fallback: str = "aibot") -> Incoming:
    kind = body.get("msgtype")
    aibot = str(body.get("aibotid") or tenant_fallback)
    user = str((body.get("from") or {}).get("userid") or "")
    user_key = f"{aibot}:{user}"
    if kind == "stream":
        return Incoming("refresh", stream_id=str((body.get("stream") or {}).get("id") or ""), user_key=user_key)
    if kind == "event":
        return Incoming("event", event=body.get("event") or {}, user_key=user_key,
                        inbound=Inbound("wecom", aibot, _chat(body, user), str(body.get("msgid") or ""), "", user))
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
    msg = Inbound(channel="wecom", tenant=aibot, chat=_chat(body, user), message_id=str(body.get("msgid") or ""),
                  text=text, user=user)
    return Incoming("question", inbound=msg, user_key=user_key, response_url=body.get("response_url"), lang=lang)


def _chat(body: dict[str, Any], user: str) -> str:
    """A group is one conversation (its chatid); a single chat is the user's own."""
    return str(body.get("chatid") or user) if body.get("chattype") == "group" else user


def stream_body(stream_id: str, content: str, finish: bool, feedback_id: str | None = None) -> dict[str, Any]:
    stream: dict[str, Any] = {"id": stream_id, "finish": finish, "content": _fit(content)}
    if feedback_id:
        stream["feedback"] = {"id": feedback_id}
    return {"msgtype": "stream", "stream": stream}


def _fit(content: str) -> str:
    data = content.encode("utf-8")
    if len(data) <= STREAM_CONTENT_BYTES:
        return content
    return data[:STREAM_CONTENT_BYTES - 3].decode("utf-8", "ignore") + "…"


def welcome_body(lang: str) -> dict[str, Any]:
    """The enter_chat welcome: who we are and three questions to try (a text reply, as WeCom allows)."""
    questions = "\n".join(f"{i}. {q}" for i, q in enumerate(phrase("welcome_questions", lang), 1))
    return {"msgtype": "text", "text": {"content": f"{phrase('welcome', lang)}\n{questions}"}}


def markdown_body(content: str) -> dict[str, Any]:
    return {"msgtype": "markdown", "markdown": {"content": content}}


def feedback_rating(event: dict[str, Any]) -> tuple[str, int | None, str | None]:
    """(feedback id, rating 1 / -1 / None for "cancelled", comment) from a feedback_event."""
    fb = event.get("feedback_event") or {}
    kind = fb.get("type")
    rating = 1 if kind == 1 else -1 if kind == 2 else None
    return str(fb.get("id") or ""), rating, (str(fb["content"])[:2000] if fb.get("content") else None)
