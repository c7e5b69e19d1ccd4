"""Which Slack events the advisor answers, and what it reads from them (pure functions, no I/O).

Answered: `app_mention` in channels, and `message` in the app's DMs (`channel_type: im`, which includes
the agent/assistant threads). Never answered: messages with a `subtype` (edits, joins, bot posts, …) or a
`bot_id` (other bots and ourselves), and channel messages that are not mentions (a mention arrives as its own
`app_mention` event; answering the `message` copy too would answer twice).

Every reply goes into the thread: the message's `thread_ts` when it is already in one, else its own `ts`.
One thread is one conversation: `slack:<team>:<channel>:<thread ts>` (the delivery core builds the id).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_MENTION = re.compile(r"<@([UW][A-Z0-9]+)(?:\|[^>]*)?>")
_CHANNEL = re.compile(r"<#[CG][A-Z0-9]+\|([^>]*)>")
_LINK = re.compile(r"<((?:https?|mailto):[^>|]+)(?:\|([^>]*))?>")
_SPECIAL = re.compile(r"<!(here|channel|everyone)(?:\|[^>]*)?>")


@dataclass(frozen=True)
class Question:
    """One question a user put to the app, with where its answer goes."""

    team: str
    channel: str
    thread_ts: str
    ts: str  # the message itself: one message is one question, whichever events announced it
    user: str
    text: str
    user_team: str = ""  # the asker's own workspace (differs from `team` in a channel shared with another one)

    @property
    def message_id(self) -> str:
        """The de-duplication key: a mention in a DM can arrive as both `app_mention` and `message`."""
        return f"{self.channel}:{self.ts}"


def answerable(event: dict[str, Any]) -> bool:
    """True for the events the advisor answers (see the module docstring)."""
    if event.get("subtype") or event.get("bot_id") or not event.get("user"):
        return False
    kind = event.get("type")
    if kind == "app_mention":
        return True
    return kind == "message" and event.get("channel_type") == "im"


def question_from(body: dict[str, Any], bot_user_id: str | None = None) -> Question | None:
    """The question in an Events API envelope, or None when it is not one to answer."""
    event = body.get("event") or {}
    if not answerable(event):
        return None
    team = body.get("team_id") or event.get("team") or ""
    thread = event.get("thread_ts") or event.get("ts") or ""
    if not (team and event.get("channel") and thread):
        return None
    return Question(
        team=team,
        channel=event["channel"],
        thread_ts=thread,
        ts=event.get("ts") or thread,
        user=event["user"],
        text=clean_text(event.get("text") or "", bot_user_id),
        user_team=event.get("user_team") or event.get("team") or team,
    )


def clean_text(text: str, bot_user_id: str | None = None) -> str:
    """Slack's message markup turned back into what the user typed: the app's own mention removed (other
    mentions kept as @id), links as their label (or URL), channel links as #name, and &amp; &lt; &gt; decoded."""

    if bot_user_id is None:  # unknown bot id: drop the mentions at the very start (the addressee)
        text = re.sub(r"^(\s*<@[UW][A-Z0-9]+(?:\|[^>]*)?>)+", "", text)
    text = _MENTION.sub(lambda m: "" if m.group(1) == bot_user_id else "@" + m.group(1), text)
    text = _CHANNEL.sub(lambda m: "#" + m.group(1), text)
    text = _LINK.sub(lambda m: m.group(2) or m.group(1), text)
    text = _SPECIAL.sub(lambda m: "@" + m.group(1), text)
    text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return re.sub(r"[ \t]+", " ", text).strip()


def bot_user_of(body: dict[str, Any]) -> str | None:
    """The app's own user id, from the envelope's `authorizations` (no auth.test call needed)."""
    for auth in body.get("authorizations") or []:
        if auth.get("is_bot") and auth.get("user_id"):
            return auth["user_id"]
    return None


def retry_number(headers: dict[str, Any]) -> int:
    """`X-Slack-Retry-Num` (0 for a first delivery); headers as Bolt keeps them (lower-case keys, lists)."""
    raw = headers.get("x-slack-retry-num") or ["0"]
    value = raw[0] if isinstance(raw, list | tuple) else raw
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0
