"""What a channel hands the delivery core: one verified platform message (`Inbound`), and the conversation id
it belongs to (`conversation_id`, readable at GET /v1/conversations/{id})."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Literal

from bot.core.language import detect_language

MAX_CONVERSATION_ID = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def conversation_id(channel: str, tenant: str, chat: str, thread: str | None = None) -> str:
    """`channel:tenant:chat[:thread-or-user]`, readable at GET /v1/conversations/{id}.

    Parts keep their own spelling when it is safe ([A-Za-z0-9._-]) and short; a part that is not is
    shortened to a readable prefix plus a hash, so two different chats never share an id."""
    parts = [p for p in (channel, tenant, chat, thread) if p]

    def shorten(part: str, keep: int) -> str:
        digest = hashlib.sha1(part.encode("utf-8")).hexdigest()[:10]
        return f"{_UNSAFE.sub('', part)[:keep]}-{digest}".lstrip("-")

    safe = [p if not _UNSAFE.search(p) else shorten(p, 12) for p in parts]
    cid = ":".join(safe)
    if len(cid) > MAX_CONVERSATION_ID:
        safe = [safe[0]] + [p if len(p) <= 16 else shorten(p, 5) for p in safe[1:]]
        cid = ":".join(safe)
    if len(cid) > MAX_CONVERSATION_ID:
        cid = f"{safe[0]}:{hashlib.sha1(':'.join(parts).encode()).hexdigest()[:40]}"
    return cid


@dataclass(frozen=True)
class Inbound:
    """One verified platform message, already stripped of its @-mention."""

    channel: str  # "wecom", "slack", ...
    tenant: str  # the corp id, AI-bot id, workspace id
    chat: str  # the group chat id, or the user id of a single chat
    message_id: str  # the platform's own id: the de-duplication key
    text: str
    user: str = ""
    thread: str | None = None  # a thread, or the user inside a shared chat where each user is their own conversation
    lang: Literal["zh", "en"] | None = None

    @property
    def conversation_id(self) -> str:
        return conversation_id(self.channel, self.tenant, self.chat, self.thread)

    @property
    def owner(self) -> str:
        """The principal the conversation belongs to: the platform's workspace (`wecom:<corp or bot id>`,
        `slack:<team id>`); see docs/architecture.md, "Tenancy"."""
        return f"{self.channel}:{self.tenant}"

    @property
    def language(self) -> str:
        return self.lang or detect_language(self.text)
