"""The delivery core every chat channel uses after it has verified a platform request.

    delivery = Delivery.from_settings(advisor)          # once, at start-up
    ticket = delivery.accept(inbound, sink)             # on each verified message; returns at once
    # ticket.status: "queued" (the answer will reach sink), "duplicate" (a redelivery: do nothing),
    #                "busy" (the queue is full: show ticket.reply, in the user's language)

`accept` touches no database, so a platform's callback can call it on its event loop and be acknowledged
at once: a repeat of a message this process has seen is answered "duplicate" from memory (`LocalSeen`),
and the question is queued for a bounded pool of background workers (`CHANNEL_WORKERS`, plus
`CHANNEL_QUEUE` waiting). The worker then takes a lease on the message in the SQL store (`leases.py`:
claimed by this process until a deadline -> answered -> delivered): a redelivery that reached another
process while the answer is under way is dropped there (`sink.duplicate()`), one whose lease expired or
whose owner process is gone is answered, so a message is answered once and a crash never loses one. A
worker calls `Advisor.ask` with the user's text unchanged, passing tool progress to `sink.progress` and
the rendered-ready `Answer` to `sink.answer`; on failure or after `CHANNEL_ANSWER_TIMEOUT_S` the sink gets
a short apology with a request id instead (`sink.apology`) — never silence, and never both. Where the
platform will not redeliver, `recover` (at start-up, then every minute) apologises through the channel for
the messages a dead process left claimed (`accept(..., route=, reply_to=)` says how to reach the user
again). Every message handled leaves a delivery record (channel, message id, conversation, status,
latency), written off the request path; an answer whose sink names a `reply_id` is remembered for
feedback (`ReplyLog`).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Literal, Protocol

from bot.answer.advisor import Advisor
from bot.channels.inbound import MAX_CONVERSATION_ID, Inbound, conversation_id  # noqa: F401  (adapters import them from here)
from bot.channels.leases import Claim, Leases, fail_orphaned_turns, question_digest
from bot.channels.ledger import DeliveryLog, DeliveryRecord, LocalSeen, ReplyLog, SeenKeys, seen_keys_for
from bot.channels.marks import PendingMarks
from bot.channels.render import Answer, phrase, progress_phrase
from bot.channels.settings import DeliverySettings
from tools.errors import AdvisorError

log = logging.getLogger("gpu_advisor.channels")

#: a lease outlives the answer deadline by this much (the timeout apology's own delivery included)
LEASE_GRACE_S = 120.0
RECOVER_EVERY_S = 60.0


class Sink(Protocol):
    """Where one answer goes; the adapter's side. Called from a worker thread, one call at a time."""

    def progress(self, text: str) -> None:
        """A progress note while tools run ("正在计算显存…"); channels that cannot show it ignore it."""

    def answer(self, answer: Answer) -> None:
        """The final answer. Raising means the platform refused it: the core then tries `apology`."""

    def apology(self, text: str) -> None:
        """A short apology in the user's language with the request id, in place of the answer."""

    # optional: `duplicate()` — another process had the message already (close what was opened);
    #           `reply_id` — the id the platform will point back at (feedback), recorded with the turn


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
    key: str = ""  # the message's lease
    route: str = ""
    reply_to: dict | None = None
    leased: bool = False  # this process holds the message's lease
    claim: Claim | None = None  # what the lease records (kept to mark it delivered later, if the store is away)
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

    def __init__(
        self,
        advisor: Advisor,
        settings: DeliverySettings | None = None,
        seen: SeenKeys | None = None,
        deliveries: DeliveryLog | None = None,
    ):
        self.advisor = advisor
        self.settings = settings or DeliverySettings()
        self.seen = seen or seen_keys_for(advisor.store, self.settings.redis)
        self.local = LocalSeen()
        self.log = deliveries or DeliveryLog(advisor.store.engine)
        self.replies = ReplyLog(advisor.store.engine)
        self.leases = Leases(advisor.store.engine, self.settings.answer_timeout_s + LEASE_GRACE_S)
        self.marks = PendingMarks(self.leases)  # delivered marks the store could not take at the time
        self._recoverers: dict = {}
        self._stop = threading.Event()
        self._jobs: queue.Queue[_Job | None] = queue.Queue()
        self._records: queue.SimpleQueue[DeliveryRecord | None] = queue.SimpleQueue()
        self._recorder = threading.Thread(target=self._write_records, name="channel-records", daemon=True)
        self._recorder.start()
        # offline answers are pure CPU under one GIL: more threads only slow the acknowledgements
        self.workers = self.settings.workers or (4 if advisor.llm is not None else 1)
        self._capacity = self.workers + self.settings.queue
        self._pending = 0
        self._pending_lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._closed = False
        for i in range(self.workers):
            t = threading.Thread(target=self._work, name=f"channel-worker-{i}", daemon=True)
            t.start()
            self._threads.append(t)

    @classmethod
    def from_settings(cls, advisor: Advisor, settings: DeliverySettings | None = None) -> Delivery:
        return cls(advisor, settings or DeliverySettings())

    # ---- the adapter's side -------------------------------------------------------------------
    def first_sighting(self, key: str, ttl_s: int | None = None) -> bool:
        """The shared TTL set (a database or Redis round trip), for adapters that need it for more than
        message ids (event ids); not for an acknowledgement path — see `first_here`."""
        return self.seen.first(key, ttl_s or self.settings.dedup_ttl_s)

    def first_here(self, key: str, ttl_s: float | None = None) -> bool:
        """This process's TTL set, from memory: cheap enough for an acknowledgement (nonces)."""
        return self.local.first(key, ttl_s or self.settings.dedup_ttl_s)

    def accept(self, msg: Inbound, sink: Sink, route: str = "", reply_to: dict | None = None) -> Ticket:
        """De-duplicate in memory and queue; returns at once, without I/O. Never raises for a full queue:
        it says so. `route` and `reply_to` (JSON): how `recover` reaches the user if this process dies
        mid-answer (a route registered with `recover`; none where only a redelivery can)."""
        request_id = uuid.uuid4().hex[:16]
        cid = msg.conversation_id
        key = f"msg:{msg.channel}:{msg.tenant}:{msg.message_id}"
        if not self.local.first(key, self.settings.dedup_ttl_s):
            log.info("duplicate %s message %s ignored", msg.channel, msg.message_id)
            return Ticket("duplicate", request_id, cid)
        with self._pending_lock:
            full = self._closed or self._pending >= self._capacity
            if not full:
                self._pending += 1
        if full:
            self._records.put(DeliveryRecord(msg.channel, msg.message_id, cid, "busy", 0.0, request_id))
            return Ticket("busy", request_id, cid, reply=phrase("busy", msg.language))
        self._jobs.put(_Job(msg, sink, request_id, time.monotonic(), key=key, route=route, reply_to=reply_to))
        return Ticket("queued", request_id, cid)

    def close(self, wait: bool = True, timeout: float = 30.0) -> None:
        """Stop taking work; with `wait`, let the queued answers finish first."""
        with self._pending_lock:
            self._closed = True
        self._stop.set()
        for _ in self._threads:
            self._jobs.put(None)
        deadline = time.monotonic() + timeout
        if wait:
            for t in self._threads:
                t.join(max(0.0, deadline - time.monotonic()))
        self.marks.close()
        self._records.put(None)  # after the workers: their last records are written first
        self._recorder.join(max(0.0, deadline - time.monotonic()) if wait else 5.0)

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

    def _write_records(self) -> None:
        while (rec := self._records.get()) is not None:
            self.log.record(rec)

    def _claimed(self, job: _Job) -> bool:
        """The message's lease: False when another live process is answering it or it was delivered."""
        msg = job.msg
        claim = Claim(
            msg.channel,
            msg.message_id,
            msg.conversation_id,
            job.request_id,
            msg.language,
            question_digest(msg.text),
            job.route,
            job.reply_to,
        )
        job.claim = claim
        try:
            outcome = self.leases.claim(job.key, claim)
        except Exception:  # the store is down: answering twice is better than never
            log.exception("lease store failed; answering %s message %s anyway", msg.channel, msg.message_id)
            return True
        if outcome == "taken over":
            fail_orphaned_turns(self.advisor.store, claim)
        if outcome in ("won", "taken over"):
            job.leased = True
            return True
        log.info("%s message %s is %s elsewhere; dropped", msg.channel, msg.message_id, outcome)
        duplicate = getattr(job.sink, "duplicate", None)
        if duplicate is not None:
            try:
                duplicate()
            except Exception:
                log.exception("closing the duplicate's reply failed (request %s)", job.request_id)
        return False

    def _advance(self, job: _Job, state: str) -> bool:
        if not job.leased:  # answered without a lease (the store was down): a delivered row once it is back
            if state == "delivered" and job.claim is not None:
                self.marks.add(job.key, job.claim, leased=False)
            return True
        try:
            return self.leases.advance(job.key, state)
        except Exception:
            log.exception("could not mark %s message %s %s", job.msg.channel, job.msg.message_id, state)
            if state == "delivered" and job.claim is not None:
                self.marks.add(job.key, job.claim, leased=True)  # so no restarted worker answers it again
            return True

    # ---- after a crash ------------------------------------------------------------------------
    def recover(self, recoverers: dict | None = None, every_s: float | None = RECOVER_EVERY_S) -> int:
        """Apologise, through the channel, for each message a dead or overdue process left undelivered.

        `recoverers`: route -> `factory(reply_to, lang) -> Sink`, added to those registered before. Runs once
        now (returns how many it reached) and, with `every_s`, again in the background until `close`."""
        from bot.channels.recovery import recover_once

        self._recoverers.update(recoverers or {})
        done = recover_once(self, self._recoverers)
        if every_s and getattr(self, "_sweeper", None) is None:

            def loop() -> None:
                while not self._stop.wait(every_s):
                    recover_once(self, self._recoverers)

            self._sweeper = threading.Thread(target=loop, name="channel-recovery", daemon=True)
            self._sweeper.start()
        return done

    def _run(self, job: _Job) -> None:
        if not self._claimed(job):
            return
        msg, lang, cid = job.msg, job.msg.language, job.msg.conversation_id
        timer = threading.Timer(
            max(0.0, self.settings.answer_timeout_s - (time.monotonic() - job.accepted_at)),
            self._timed_out,
            args=(job,),
        )
        timer.daemon = True
        timer.start()
        try:
            if self.settings.fault_delay_s:  # tests only: an answer slow enough to stop the server in the middle
                time.sleep(self.settings.fault_delay_s)
            owner = msg.owner
            self.advisor.store.new_conversation(channel=msg.channel, conversation_id=cid, owner=owner)
            trace = self.advisor.ask(
                msg.text, cid, lang=msg.lang, emit=self._progress(job, lang), owner=owner, channel=msg.channel
            )
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
        if not self._advance(job, "answered"):
            log.warning("%s message %s was taken over while it was answered; dropped", msg.channel, msg.message_id)
            return
        try:
            job.sink.answer(answer)
        except Exception:
            log.exception("delivering the answer failed (request %s)", job.request_id)
            self._apologize(job, "apology", "failed", settled=True)
            return
        self._advance(job, "delivered")
        self._record(job, status)
        reply_id = getattr(job.sink, "reply_id", None)
        if reply_id and status == "answered":
            turn = self._turn_of(cid, msg.text)
            if turn is not None:
                self.replies.record(msg.channel, reply_id, cid, turn)

    def _turn_of(self, cid: str, question: str) -> int | None:
        """The index of the answered turn for `question` (the latest one, if it was asked twice)."""
        try:
            answered = [t for t in self.advisor.store.turns(cid, limit=20) if t.status == "answered"]
        except Exception:
            log.exception("could not read the turns of %s", cid)
            return None
        mine = [t.idx for t in answered if t.question.strip() == question.strip()]
        return (mine or [t.idx for t in answered] or [None])[-1]

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
        self._advance(job, "delivered")
        self._record(job, status)

    def _record(self, job: _Job, status: str) -> None:
        latency_ms = (time.monotonic() - job.accepted_at) * 1000
        self.log.record(
            DeliveryRecord(
                job.msg.channel,
                job.msg.message_id,
                job.msg.conversation_id,
                status,
                round(latency_ms, 1),
                job.request_id,
            )
        )


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
