"""One reply in a Slack thread, streamed where the workspace streams and posted-then-updated where it does not.

Streaming goes through the SDK's `chat_stream` (chat.startStream, chat.appendStream, chat.stopStream):
tool progress first, as `task_update` chunks in a timeline ("Computing memory…" -> done), then the grounded
answer as Markdown, then `stopStream` with the closing blocks (numbered sources, follow-up buttons, 👍/👎).

If the stream cannot start (a workspace or channel without streaming, an API error), the reply is posted
once as a plain progress line and updated with the whole answer when it is ready (chat.postMessage then
chat.update). If the stream breaks after it started, the streamed message itself is updated instead.
Either way the thread gets exactly one message per question.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_chat_stream import AsyncChatStream
from slack_sdk.web.async_client import AsyncWebClient

from bot.channels.render import Answer
from bot.channels.slack.blocks import (
    answer_text,
    body_room,
    closing_blocks,
    message_blocks,
    notice_blocks,
    plain_summary,
)

log = logging.getLogger("gpu_advisor.channels.slack")

STREAM_BUFFER_CHARS = 400  # markdown buffered before an appendStream call (fewer calls, same text)
APPEND_MAX_CHARS = 3_000  # one piece of the answer handed to the stream (Slack takes 12,000 per call)


@dataclass
class Target:
    """Where the reply goes: the thread, and who it is for (the streaming API needs both in channels)."""

    channel: str
    thread_ts: str
    team: str  # the recipient's workspace (chat.startStream's recipient_team_id)
    user: str
    lang: str = "en"
    heading: str = ""  # a line shown above the answer (a follow-up button says who asked what)


@dataclass
class SlackReply:
    client: AsyncWebClient
    target: Target
    streaming: bool = True  # False: go straight to post-and-update
    mode: str = "pending"  # pending -> stream | post; "done" after finish/fail
    ts: str | None = None
    _stream: AsyncChatStream | None = None
    _steps: list[str] = field(default_factory=list)  # progress notes shown so far, the last one still running

    # ---- progress ------------------------------------------------------------------------------
    async def progress(self, note: str) -> None:
        """A progress note while tools run: a timeline step when streaming (the previous one marked done)."""
        chunks = self._close_step()
        self._steps.append(note)
        chunks.append({"type": "task_update", "id": f"step_{len(self._steps)}", "title": note, "status": "in_progress"})
        if self.mode == "pending":
            if not await self._start(chunks):
                await self._post(note)
        elif self.mode == "stream" and self._stream is not None:
            try:
                await self._stream.append(chunks=chunks)
            except (SlackApiError, SlackClientError) as err:
                self._broken(err)
        elif self.mode == "post" and self.ts:  # the posted progress line follows along
            t = self.target
            await self.client.chat_update(
                channel=t.channel,
                ts=self.ts,
                text=note,
                blocks=notice_blocks(f"{t.heading}\n\n_{note}_" if t.heading else f"_{note}_"),
            )

    def _close_step(self, status: str = "complete") -> list[dict[str, Any]]:
        if not self._steps or self.mode not in ("stream", "pending"):
            return []
        return [{"type": "task_update", "id": f"step_{len(self._steps)}", "title": self._steps[-1], "status": status}]

    async def _start(self, chunks: list[dict[str, Any]]) -> bool:
        """Open the stream now (chunks flush at once, so chat.startStream runs here); False when it cannot."""
        if not self.streaming:
            return False
        t = self.target
        if t.heading:
            chunks = [{"type": "markdown_text", "text": t.heading + "\n\n"}, *chunks]
        try:
            self._stream = await self.client.chat_stream(
                channel=t.channel,
                thread_ts=t.thread_ts,
                recipient_team_id=t.team,
                recipient_user_id=t.user,
                task_display_mode="timeline",
                buffer_size=STREAM_BUFFER_CHARS,
            )
            await self._stream.append(chunks=chunks)
        except (SlackApiError, SlackClientError) as err:
            log.info("slack streaming unavailable, posting instead: %s", _reason(err))
            self._stream, self.streaming = None, False
            return False
        self.ts, self.mode = self._stream.ts, "stream"
        return True

    async def _post(self, line: str) -> None:
        """The post-and-update path's first message: a progress line, updated with the answer later."""
        t = self.target
        text = f"{t.heading}\n\n_{line}_" if t.heading else f"_{line}_"
        res = await self.client.chat_postMessage(
            channel=t.channel, thread_ts=t.thread_ts, text=line, blocks=notice_blocks(text)
        )
        self.ts, self.mode = res["ts"], "post"

    def _broken(self, err: Exception) -> None:
        log.warning("slack stream broke, finishing with chat.update: %s", _reason(err))
        self.mode = "post" if self.ts else "pending"
        self._stream = None

    # ---- the end -------------------------------------------------------------------------------
    async def finish(self, answer: Answer, turn: int | None) -> None:
        """The grounded answer, then sources, follow-ups and feedback buttons."""
        pieces = _pieces(answer_text(answer, body_room(answer, self.target.heading)))
        if self.mode == "pending" and await self._start([{"type": "markdown_text", "text": pieces[0]}]):
            pieces = pieces[1:]
        if self.mode == "stream" and self._stream is not None:
            try:
                if done := self._close_step():
                    await self._stream.append(chunks=done)
                for piece in pieces:
                    await self._stream.append(markdown_text=piece)
                await self._stream.stop(blocks=closing_blocks(answer, turn))
                self.mode = "done"
                return
            except (SlackApiError, SlackClientError) as err:
                self._broken(err)
        await self._replace(plain_summary(answer), message_blocks(answer, turn, self.target.heading))

    async def fail(self, text: str) -> None:
        """A short notice instead of an answer (apology, busy, a clear error): never silence."""
        if self.mode == "stream" and self._stream is not None:
            try:
                await self._stream.stop(markdown_text=text, chunks=self._close_step("error") or None)
                self.mode = "done"
                return
            except (SlackApiError, SlackClientError) as err:
                self._broken(err)
        await self._replace(text, notice_blocks(f"{self.target.heading}\n\n{text}" if self.target.heading else text))

    async def _replace(self, text: str, blocks: list[dict[str, Any]]) -> None:
        t = self.target
        if self.ts:
            await self.client.chat_update(channel=t.channel, ts=self.ts, text=text, blocks=blocks)
        else:
            res = await self.client.chat_postMessage(channel=t.channel, thread_ts=t.thread_ts, text=text, blocks=blocks)
            self.ts = res["ts"]
        self.mode = "done"


def _pieces(text: str, size: int = APPEND_MAX_CHARS) -> list[str]:
    """The answer in paragraph-sized appends, a long paragraph (a big table) in runs of whole lines; joined
    back they are the text unchanged. None is longer than `size` unless one line is."""
    pieces: list[str] = []
    for line in text.splitlines(keepends=True):
        if pieces and len(pieces[-1]) + len(line) <= size and not pieces[-1].endswith("\n\n"):
            pieces[-1] += line
        else:
            pieces.append(line)
    return pieces or [text]


def _reason(err: Exception) -> str:
    """An API error's code (never the request, which carries the token in its headers)."""
    if isinstance(err, SlackApiError) and err.response is not None:
        return str(err.response.get("error") or err.response.status_code)
    return type(err).__name__
