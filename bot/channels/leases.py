"""Leases on platform messages: who is answering a message, until when, and how far it got.

    leases = Leases(store.engine)
    won = leases.claim(key, Claim(...))       # "won" | "taken over" | "held" | "done"
    leases.advance(key, "answered")           # False: another process took the message over; do not deliver
    leases.advance(key, "delivered")          # the answer or the apology reached the platform
    for lease in leases.orphans(): ...        # what dead or overdue owners left: reach the user once more

A message moves `claimed (owner, deadline) -> answered -> delivered`, one row per message in the SQL store,
shared by every worker of one database. A redelivery finds the row: delivered is a duplicate; claimed or
answered by a live owner within its deadline is held (that owner answers); claimed or answered by an owner
that is gone (a process on this machine that no longer runs, or this process's pid after a restart under
another start id) or past its deadline is taken over, by one compare-and-set on the row's generation, so two
processes never both win. A claim that was never delivered is therefore never silence: the redelivery is
answered, and where the platform will not redeliver, `orphans` hands it to a sweep that apologises through
the channel (`Claim.route` names the adapter, `Claim.reply_to` its JSON return address).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import os
import socket
import uuid
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import Column, Integer, String, Table, Text, insert, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from bot.channels.ledger import metadata
from bot.core.store_schema import UtcDateTime, create_schema

log = logging.getLogger("gpu_advisor.channels")

#: this process, as a lease owner: host, pid and a start id (a restarted container may reuse the pid)
HOST, START = socket.gethostname()[:64], uuid.uuid4().hex[:12]
STATES = ("claimed", "answered", "delivered")

leases = Table(
    "channel_leases",
    metadata,
    Column("key", String(255), primary_key=True),
    Column("owner", String(128), nullable=False),
    Column("deadline", UtcDateTime(), nullable=False, index=True),
    Column("state", String(16), nullable=False),
    Column("generation", Integer, nullable=False),
    Column("route", String(32), nullable=False),
    Column("reply_to", Text, nullable=False),
    Column("lang", String(8), nullable=False),
    Column("conversation_id", String(64), nullable=False),
    Column("question_digest", String(64), nullable=False),
    Column("request_id", String(32), nullable=False),
    Column("channel", String(32), nullable=False),
    Column("message_id", String(255), nullable=False),
    Column("updated_at", UtcDateTime(), nullable=False),
)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def me() -> str:
    return f"{HOST}:{os.getpid()}:{START}"


def owner_gone(owner: str) -> bool:
    """True only when it is certain: the owner ran on this machine and its process is no longer there (or
    this pid now belongs to another start of the server). An owner elsewhere is judged by its deadline."""
    host, _, rest = owner.partition(":")
    pid_text, _, start = rest.partition(":")
    if host != HOST or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return start != START
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, under another user
        return False
    return False


@dataclass(frozen=True)
class Claim:
    """What a worker records with its claim: enough to reach the user again if it dies."""

    channel: str
    message_id: str
    conversation_id: str
    request_id: str
    lang: str
    question_digest: str
    route: str = ""  # the adapter that can reach the user again ("" = none: only a redelivery can)
    reply_to: dict | None = None


@dataclass(frozen=True)
class Lease:
    key: str
    owner: str
    state: str
    generation: int
    deadline: dt.datetime
    claim: Claim

    def orphaned(self, now: dt.datetime) -> bool:
        """Undelivered, and its owner is gone or past its deadline (never this process's own)."""
        return self.state != "delivered" and self.owner != me() and (self.deadline < now or owner_gone(self.owner))


Outcome = Literal["won", "taken over", "held", "done"]


class Leases:
    def __init__(self, engine: Engine, lease_s: float):
        self.engine = engine
        self.lease_s = lease_s
        create_schema(engine, metadata, [leases])

    def _values(self, claim: Claim, now: dt.datetime) -> dict:
        return {
            "owner": me(),
            "deadline": now + dt.timedelta(seconds=self.lease_s),
            "state": "claimed",
            "route": claim.route[:32],
            "reply_to": json.dumps(claim.reply_to or {}, ensure_ascii=False),
            "lang": claim.lang[:8],
            "conversation_id": claim.conversation_id[:64],
            "question_digest": claim.question_digest[:64],
            "request_id": claim.request_id[:32],
            "channel": claim.channel[:32],
            "message_id": claim.message_id[:255],
            "updated_at": now,
        }

    def claim(self, key: str, claim: Claim) -> Outcome:
        now = _now()
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(leases).values(key=key, generation=0, **self._values(claim, now)))
            return "won"
        except IntegrityError:
            pass
        held = self.get(key)
        if held is None:  # deleted between the two statements: try once more
            return self.claim(key, claim)
        if held.state == "delivered":
            return "done"
        if held.orphaned(now):
            return "taken over" if self._take(held, claim, now) else "held"
        return "held"

    def _take(self, held: Lease, claim: Claim | None, now: dt.datetime) -> bool:
        """Compare-and-set on the generation: exactly one of several racing processes takes the lease."""
        values = self._values(claim or held.claim, now)
        with self.engine.begin() as conn:
            won = conn.execute(
                update(leases)
                .where(leases.c.key == held.key, leases.c.generation == held.generation)
                .values(generation=held.generation + 1, **values)
            ).rowcount
        if won:
            log.warning(
                "took over %s message %s from %s (it was %s)",
                held.claim.channel,
                held.claim.message_id,
                held.owner,
                held.state,
            )
        return won == 1

    def advance(self, key: str, state: str) -> bool:
        """Move this process's lease on; False when the lease is no longer this process's (taken over)."""
        with self.engine.begin() as conn:
            return (
                conn.execute(
                    update(leases)
                    .where(leases.c.key == key, leases.c.owner == me(), leases.c.state != "delivered")
                    .values(state=state, updated_at=_now())
                ).rowcount
                == 1
            )

    def settle(self, key: str, claim: Claim, leased: bool) -> None:
        """Mark delivered a message this process answered while the store was away (`marks.PendingMarks`): its
        own lease, or a new row when it answered without one. Raises while the store still does not answer."""
        if leased:
            self.advance(key, "delivered")
            return
        values = {**self._values(claim, _now()), "state": "delivered"}
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(leases).values(key=key, generation=0, **values))
        except IntegrityError:  # another worker claimed it meanwhile: its own lease says what happens
            pass

    def get(self, key: str) -> Lease | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(leases).where(leases.c.key == key)).mappings().first()
        return _lease(row) if row else None

    def orphans(self, routes: set[str] | frozenset[str], limit: int = 200) -> list[Lease]:
        """Undelivered leases of `routes` whose owner is gone or overdue, each now taken over by this process."""
        if not routes:
            return []
        now = _now()
        with self.engine.connect() as conn:
            rows = (
                conn.execute(
                    select(leases)
                    .where(leases.c.state != "delivered", leases.c.route.in_(sorted(routes)))
                    .order_by(leases.c.updated_at)
                )
                .mappings()
                .all()
            )
        taken = []
        for lease in map(_lease, rows):
            if lease.orphaned(now) and self._take(lease, None, now):
                taken.append(lease)
            if len(taken) >= limit:
                break
        return taken


def question_digest(question: str) -> str:
    return hashlib.sha256(question.strip().encode("utf-8")).hexdigest()


def fail_orphaned_turns(store, claim: Claim) -> None:
    """The pending turn a dead process left for this question is closed as failed (its answer never came)."""
    try:
        for turn in store.turns(claim.conversation_id, limit=50):
            if turn.status == "pending" and question_digest(turn.question) == claim.question_digest:
                store.fail_turn(claim.conversation_id, turn.idx, "interrupted: the process stopped")
    except Exception:
        log.exception("could not close the interrupted turn of %s", claim.conversation_id)


def _lease(row) -> Lease:
    try:
        reply_to = json.loads(row["reply_to"] or "{}")
    except ValueError:
        reply_to = {}
    claim = Claim(
        channel=row["channel"],
        message_id=row["message_id"],
        conversation_id=row["conversation_id"],
        request_id=row["request_id"],
        lang=row["lang"],
        question_digest=row["question_digest"],
        route=row["route"],
        reply_to=reply_to if isinstance(reply_to, dict) else {},
    )
    return Lease(row["key"], row["owner"], row["state"], int(row["generation"]), row["deadline"], claim)
