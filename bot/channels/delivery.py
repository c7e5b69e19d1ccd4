"""The delivery core every chat channel uses after it has verified a platform request.

    delivery = Delivery.from_settings(advisor)          # once, at start-up
    ticket = delivery.accept(inbound, sink)             # on each verified message; returns at once
    # ticket.status: "queued" (the answer will reach sink), "duplicate" (a redelivery: do nothing),
    #                "busy" (the queue is full: show ticket.reply, in the user's language)

`accept` de-duplicates by the platform's message id (a TTL set: Redis when `REDIS_URL` is set, else the
SQL store), and queues the question for a bounded pool of background workers (`CHANNEL_WORKERS`, plus
`CHANNEL_QUEUE` waiting), so the platform's request can be acknowledged inside its deadline. A worker
calls `Advisor.ask` with the user's text unchanged, passing tool progress to `sink.progress` and the
rendered-ready `Answer` to `sink.answer`; on failure or after `CHANNEL_ANSWER_TIMEOUT_S` the sink gets
a short apology with a request id instead (`sink.apology`) — never silence, and never both. Every
message handled leaves a delivery record (channel, message id, conversation, status, latency).
"""

from __future__ import annotations

import hashlib
import logging
import queue
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Literal, Protocol

from bot.advisor import Advisor
from bot.channels.ledger import DeliveryLog, DeliveryRecord, SeenKeys, seen_keys_for
from bot.channels.render import Answer, phrase, progress_phrase
from bot.channels.settings import DeliverySettings
from bot.language import detect_language
from tools.errors import AdvisorError

log = logging.getLogger("gpu_advisor.channels")

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
    def language(self) -> str:
        return self.lang or detect_language(self.text)


class Sink(Protocol):
    """Where one answer goes; the adapter's side. Called from a worker thread, one call at a time."""

    def progress(self, text: str) -> None:
        """A progress note while tools run ("正在计算显存…"); channels that cannot show it ignore it."""

    def answer(self, answer: Answer) -> None:
        """The final answer. Raising means the platform refused it: the core then tries `apology`."""

    def apology(self, text: str) -> None:
        """A short apology in the user's language with the request id, in place of the answer."""


@dataclass
class Ticket:
    status: Literal["queued", "duplicate", "busy"]
    request_id: str
    conversation_id: str
    reply: str | None = None  # what to show the user at once ("busy, try again"), if anything


@dataclass
class _Job:
    msg: Inbound
    sink: Sink
    request_id: str
    accepted_at: float
    lock: threading.Lock = field(default_factory=threading.Lock)
    settled: bool = False

    def settle(self) -> bool:
        """True for the first caller only: the answer and the timeout apology race for one delivery."""
        with self.lock:
            if self.settled:
                return False
            self.settled = True
            return True


class Delivery:
    """De-duplication, a bounded worker pool, and the answer-or-apology guarantee."""

    def __init__(self, advisor: Advisor, settings: DeliverySettings | None = None, seen: SeenKeys | None = None,
                 deliveries: DeliveryLog | None = None):
        self.advisor = advisor
        self.settings = settings or DeliverySettings()
        self.seen = seen or seen_keys_for(advisor.store, self.settings.redis_url)
        self.log = deliveries or DeliveryLog(advisor.store.engine)
        self._jobs: queue.Queue[_Job | None] = queue.Queue()
        self._capacity = self.settings.workers + self.settings.queue
        self._pending = 0
        self._pending_lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._closed = False
        for i in range(self.settings.workers):
            t = threading.Thread(target=self._work, name=f"channel-worker-{i}", daemon=True)
            t.start()
            self._threads.append(t)

    @classmethod
    def from_settings(cls, advisor: Advisor, settings: DeliverySettings | None = None) -> Delivery:
        return cls(advisor, settings or DeliverySettings())

    # ---- the adapter's side -------------------------------------------------------------------
    def first_sighting(self, key: str, ttl_s: int | None = None) -> bool:
        """The TTL set, for adapters that need it for more than message ids (nonces, event ids)."""
        return self.seen.first(key, ttl_s or self.settings.dedup_ttl_s)

    def accept(self, msg: Inbound, sink: Sink) -> Ticket:
        """De-duplicate and queue; returns at once. Never raises for a full queue: it says so."""
        request_id = uuid.uuid4().hex[:16]
        cid = msg.conversation_id
        if not self.seen.first(f"msg:{msg.channel}:{msg.tenant}:{msg.message_id}", self.settings.dedup_ttl_s):
            log.info("duplicate %s message %s ignored", msg.channel, msg.message_id)
            return Ticket("duplicate", request_id, cid)
        with self._pending_lock:
            full = self._closed or self._pending >= self._capacity
            if not full:
                self._pending += 1
        if full:
            self.log.record(DeliveryRecord(msg.channel, msg.message_id, cid, "busy", 0.0, request_id))
            return Ticket("busy", request_id, cid, reply=phrase("busy", msg.language))
        self._jobs.put(_Job(msg, sink, request_id, time.monotonic()))
        return Ticket("queued", request_id, cid)

    def close(self, wait: bool = True, timeout: float = 30.0) -> None:
        """Stop taking work; with `wait`, let the queued answers finish first."""
        with self._pending_lock:
            self._closed = True
        for _ in self._threads:
            self._jobs.put(None)
        if wait:
            deadline = time.monotonic() + timeout
            for t in self._threads:
                t.join(max(0.0, deadline - time.monotonic()))

    @property
    def pending(self) -> int:
        with self._pending_lock:
            return self._pending

    # ---- the workers --------------------------------------------------------------------------
    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            try:
                self._run(job)
            except Exception:  # a worker never dies on one message
                log.exception("channel worker failed on %s", job.request_id)
            finally:
                with self._pending_lock:
                    self._pending -= 1

    def _run(self, job: _Job) -> None:
        msg, lang, cid = job.msg, job.msg.language, job.msg.conversation_id
        timer = threading.Timer(max(0.0, self.settings.answer_timeout_s - (time.monotonic() - job.accepted_at)),
                                self._timed_out, args=(job,))
        timer.daemon = True
        timer.start()
        try:
            self.advisor.store.new_conversation(channel=msg.channel, conversation_id=cid)
            trace = self.advisor.ask(msg.text, cid, lang=msg.lang, emit=self._progress(job, lang))
            answer = Answer.from_trace(trace)
            status = "answered"
        except AdvisorError as err:  # the user's question itself: a clear message, not an apology
            answer, status = Answer.from_text(err.message(lang), lang), "rejected"
        except Exception:
            log.exception("answer failed (request %s, %s message %s)", job.request_id, msg.channel, msg.message_id)
            timer.cancel()
            self._apologize(job, "apology", "apology")
            return
        timer.cancel()
        if not job.settle():
            return  # the timeout already apologised; a late answer would be a second reply
        try:
            job.sink.answer(answer)
        except Exception:
            log.exception("delivering the answer failed (request %s)", job.request_id)
            self._apologize(job, "apology", "failed", settled=True)
            return
        self._record(job, status)

    def _progress(self, job: _Job, lang: str):
        said: set[str] = set()

        def emit(event: dict) -> None:
            if event.get("type") != "tool_started" or job.settled:
                return
            note = progress_phrase(str(event.get("tool", "")), lang)
            if note in said:
                return
            said.add(note)
            try:
                job.sink.progress(note)
            except Exception:  # progress is a courtesy; the answer still goes out
                log.warning("progress delivery failed (request %s)", job.request_id)

        return emit

    def _timed_out(self, job: _Job) -> None:
        log.warning("answer timed out after %.0f s (request %s)", self.settings.answer_timeout_s, job.request_id)
        self._apologize(job, "timeout", "timeout")

    def _apologize(self, job: _Job, key: str, status: str, settled: bool = False) -> None:
        if not settled and not job.settle():
            return
        text = phrase(key, job.msg.language, request_id=job.request_id)
        try:
            job.sink.apology(text)
        except Exception:
            log.exception("the apology could not be delivered either (request %s)", job.request_id)
            status = "failed"
        self._record(job, status)

    def _record(self, job: _Job, status: str) -> None:
        latency_ms = (time.monotonic() - job.accepted_at) * 1000
        self.log.record(DeliveryRecord(job.msg.channel, job.msg.message_id, job.msg.conversation_id, status,
                                       round(latency_ms, 1), job.request_id))


_shared_lock = threading.Lock()


def shared_delivery(state) -> Delivery:
    """The one delivery core of an app (`request.app.state`), built on first use from `state.advisor`, so
    every channel in the process shares one worker pool. The API closes it when the app stops."""
    with _shared_lock:
        delivery = getattr(state, "delivery", None)
        if delivery is None:
            delivery = Delivery.from_settings(state.advisor, getattr(state, "delivery_settings", None))
            state.delivery = delivery
        return delivery
