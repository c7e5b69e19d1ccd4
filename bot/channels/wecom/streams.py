"""Streams of the AI bot in HTTP-callback mode: WeCom pulls, we never push.

The first reply to a message names a stream id (`finish: false`); WeCom then sends stream-refresh
callbacks for that id until a reply says `finish: true`, for at most 6 minutes from the message. A
refresh is answered from this board with the text accumulated so far (tool progress first, then the
final answer), so refreshes that arrive out of order, twice, or after the finish all see one coherent
state, and the final message is the same every time it is asked for.

The first refresh that returns the finished answer also carries the follow-up card (once: WeCom takes
one card per message). If an answer is finished but no refresh fetched it before the window closed, it
goes out once through the message's `response_url` (single use, valid for an hour). A user has at most
3 messages in flight; the board says so for a 4th. State lives in this process (the streams are short
lived and refreshed many times a second across users): one API worker serves `/wecom/aibot`, see
docs/wecom.md. What must outlive the process — which answer a feedback id points at — is in the store.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from bot.channels.outbound import guarded_post
from bot.channels.render import Answer, phrase, render_wecom, split_utf8
from bot.channels.wecom.aibot import STREAM_CONTENT_BYTES, follow_up_card, markdown_body

log = logging.getLogger("gpu_advisor.channels.wecom")

MAX_IN_FLIGHT = 3
WECOM_HOSTS = ("qyapi.weixin.qq.com",)  # where a response_url may point when the router gives no allow-list
KEEP_AFTER_WINDOW_S = 600  # a finished stream is still answered (the same final) this long


@dataclass
class Stream:
    id: str
    message_id: str
    user_key: str
    lang: str
    response_url: str | None
    created: float
    conversation_id: str | None = None
    question: str | None = None
    progress: list[str] = field(default_factory=list)
    final: str | None = None
    fetched_final: bool = False  # a refresh has returned finish: true
    pushed: bool = False  # the final went out through response_url instead
    overflow: str | None = None  # what did not fit in the stream content, for response_url
    follow_ups: tuple[str, ...] = ()
    card_sent: bool = False  # the follow-up card went out with a finished reply

    @property
    def open(self) -> bool:
        return self.final is None


class StreamBoard:
    """Thread-safe: HTTP handlers read it, delivery workers write it, a sweeper pushes late answers."""

    def __init__(
        self,
        window_s: float = 360.0,
        post: Callable[[str, dict], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        sweep_every_s: float = 1.0,
    ):
        self.window_s = window_s
        self.clock = clock
        self.post = post or guarded_post(WECOM_HOSTS)
        self._streams: dict[str, Stream] = {}
        self._by_message: dict[str, str] = {}
        self._lock = threading.Lock()
        self._sweep_every = sweep_every_s
        self._stop = threading.Event()
        self._sweeper = threading.Thread(target=self._sweep_loop, name="wecom-stream-sweeper", daemon=True)
        self._sweeper.start()

    def close(self) -> None:
        self._stop.set()

    # ---- handlers --------------------------------------------------------------------------------
    def for_message(self, message_id: str) -> Stream | None:
        with self._lock:
            sid = self._by_message.get(message_id)
            return self._streams.get(sid) if sid else None

    def get(self, stream_id: str) -> Stream | None:
        with self._lock:
            return self._streams.get(stream_id)

    def in_flight(self, user_key: str) -> int:
        with self._lock:
            return sum(1 for s in self._streams.values() if s.user_key == user_key and s.open)

    def open(self, message_id: str, user_key: str, lang: str, response_url: str | None) -> Stream | None:
        """A new stream, or None when the user already has 3 open."""
        with self._lock:
            if sum(1 for s in self._streams.values() if s.user_key == user_key and s.open) >= MAX_IN_FLIGHT:
                return None
            stream = Stream(
                id="s" + uuid.uuid4().hex,
                message_id=message_id,
                user_key=user_key,
                lang=lang,
                response_url=response_url,
                created=self.clock(),
            )
            self._streams[stream.id] = stream
            self._by_message[message_id] = stream.id
            return stream

    def restore(
        self, stream_id: str, message_id: str, user_key: str, lang: str, response_url: str | None, age_s: float
    ) -> str:
        """A stream an earlier process opened (its id, as WeCom keeps refreshing it), open again for its final."""
        with self._lock:
            if stream_id not in self._streams:
                self._streams[stream_id] = Stream(
                    id=stream_id,
                    message_id=message_id,
                    user_key=user_key,
                    lang=lang,
                    response_url=response_url,
                    created=self.clock() - age_s,
                )
                if message_id:
                    self._by_message[message_id] = stream_id
            return stream_id

    def drop(self, stream_id: str) -> None:
        with self._lock:
            stream = self._streams.pop(stream_id, None)
            if stream:
                self._by_message.pop(stream.message_id, None)

    def refresh(self, stream_id: str, lang: str = "zh") -> tuple[str, bool, dict | None]:
        """(content so far, finished, follow-up card or None) for a stream-refresh callback; an unknown id
        is finished politely. The card comes with the first finished reply only."""
        with self._lock:
            stream = self._streams.get(stream_id)
            if stream is None:
                return phrase("expired", lang), True, None
            if stream.final is not None and not stream.pushed:
                stream.fetched_final = True
                card = None
                if not stream.card_sent and stream.follow_ups:
                    card = follow_up_card(stream.id, stream.follow_ups, stream.lang)
                    stream.card_sent = True
                return stream.final, True, card
            if stream.pushed:  # it went out through response_url: close this stream without repeating it
                return stream.final or "", True, None
            return ("\n".join(stream.progress) or phrase("thinking", stream.lang)), False, None

    # ---- delivery workers --------------------------------------------------------------------------
    def add_progress(self, stream_id: str, note: str) -> None:
        with self._lock:
            stream = self._streams.get(stream_id)
            if stream and stream.open and note not in stream.progress:
                stream.progress.append(note)

    def finish(self, stream_id: str, text: str, follow_ups: tuple[str, ...] = ()) -> None:
        """The final text; what does not fit one stream reply waits for response_url."""
        pieces = split_utf8(text, STREAM_CONTENT_BYTES)
        late = False
        with self._lock:
            stream = self._streams.get(stream_id)
            if stream is None or not stream.open:
                return
            stream.final = pieces[0]
            stream.overflow = "\n".join(pieces[1:]) or None
            stream.follow_ups = tuple(follow_ups)
            late = self.clock() - stream.created >= self.window_s
        if late:
            self._push(stream)

    # ---- late answers --------------------------------------------------------------------------------
    def _sweep_loop(self) -> None:
        while not self._stop.wait(self._sweep_every):
            try:
                self.sweep()
            except Exception:
                log.exception("stream sweep failed")

    def sweep(self) -> None:
        now = self.clock()
        due, gone = [], []
        with self._lock:
            for s in self._streams.values():
                age = now - s.created
                if s.final is not None and not s.fetched_final and not s.pushed and age >= self.window_s:
                    due.append(s)
                elif s.final is not None and s.fetched_final and s.overflow and not s.pushed:
                    due.append(s)
                if age >= self.window_s + KEEP_AFTER_WINDOW_S and (s.final is not None or age >= 3600):
                    gone.append(s.id)
        for s in due:
            self._push(s)
        for sid in gone:
            self.drop(sid)

    def _push(self, stream: Stream) -> None:
        """The answer (or its overflow) through response_url, once."""
        with self._lock:
            if stream.pushed:
                return
            stream.pushed = True
            text = (
                stream.overflow if stream.fetched_final else "\n".join(p for p in (stream.final, stream.overflow) if p)
            )
        if not stream.response_url or not text:
            log.warning("stream %s could not be finished and has no response_url", stream.id)
            return
        try:  # response_url is single use: one message, within one stream reply's size
            self.post(stream.response_url, markdown_body(split_utf8(text, STREAM_CONTENT_BYTES)[0]))
        except Exception:
            log.exception("response_url post failed for stream %s", stream.id)


class StreamSink:
    """The delivery core's sink for one HTTP-mode stream; the stream id is also the answer's feedback id."""

    def __init__(self, board: StreamBoard, stream_id: str, lang: str = "zh"):
        self.board = board
        self.stream_id = self.reply_id = stream_id
        self.lang = lang

    def progress(self, text: str) -> None:
        self.board.add_progress(self.stream_id, text)

    def answer(self, answer: Answer) -> None:
        self.board.finish(self.stream_id, render_wecom(answer), answer.follow_ups)

    def apology(self, text: str) -> None:
        self.board.finish(self.stream_id, text)

    def duplicate(self) -> None:
        self.board.finish(self.stream_id, phrase("duplicate", self.lang))


class ResponseUrlSink:
    """An answer with no stream to ride on (a follow-up button's click): one markdown message through the
    callback's response_url (single use), headed by the question so the whole group sees what was asked."""

    def __init__(
        self, response_url: str | None, question: str, lang: str, post: Callable[[str, dict], None] | None = None
    ):
        self.url, self.question, self.lang = response_url, question, lang
        self.post = post or guarded_post(WECOM_HOSTS)
        self.reply_id = "c" + uuid.uuid4().hex  # its feedback id

    def progress(self, text: str) -> None:
        return None  # a response_url message cannot be updated

    def answer(self, answer: Answer) -> None:
        self._send(render_wecom(answer), self.reply_id)

    def apology(self, text: str) -> None:
        self._send(text, None)

    def _send(self, text: str, feedback_id: str | None) -> None:
        if not self.url:
            raise ConnectionError("the click carried no response_url")
        body = f"{phrase('asked', self.lang, question=self.question)}\n\n{text}"
        self.post(self.url, markdown_body(split_utf8(body, STREAM_CONTENT_BYTES)[0], feedback_id))
