"""Conversations, turns, traces and feedback, persisted.

A SQLite file (WAL journal) by default; PostgreSQL when the URL says so
(`postgresql://…`, driven by psycopg 3). SQLAlchemy Core keeps one schema for both.
A question is written *before* it is answered, so nothing a user sent is lost even if the
answer fails; the turn is completed with its trace afterwards. Each turn also keeps the
planner's state (the slots a follow-up inherits), so multi-turn context survives a restart.

Tenancy: every conversation has an `owner`, the principal that created it (an API key
"key:<id>", a widget site, a channel's workspace such as "slack:T0123" or "wecom:ww12ab"; "local"
for the CLI). `start_turn(..., owner=)` refuses to add a turn to a conversation another principal
owns (`UnknownConversation`, the same as a missing one, so ids cannot be probed), and readers check
`owner_of(id)`. Conversations stored before the column existed have no owner: only admin keys read them.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import secrets
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Table, bindparam, func, insert, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from bot.core.store_schema import JsonText, conversations, create_schema, feedback, make_engine, server_secrets, turns
from bot.core.trace import AnswerTrace

#: the owner of conversations started from the command line (no principal)
LOCAL_OWNER = "local"


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


@dataclass(frozen=True)
class Turn:
    idx: int
    question: str
    answer: str | None
    status: str
    language: str | None
    mode: str | None
    trace: dict | None
    state: dict | None
    created_at: dt.datetime

    @classmethod
    def from_row(cls, r: Any) -> Turn:
        """A turn from a row of the `turns` table (its columns by name)."""
        return cls(**{f: r[f] for f in cls.__dataclass_fields__})


class UnknownConversation(LookupError):
    pass


class Store:
    """The one place conversations are read and written. Thread-safe; one engine per process."""

    def __init__(self, url: str):
        self.url = url
        self.engine = make_engine(url)
        create_schema(self.engine)
        self._hot = _HotStatements(self._insert)
        # SQLite takes one writer at a time and makes the others wait in its busy handler, which sleeps
        # 1, 2, 5, 10 … 100 ms between tries: under 8 concurrent answers that sleep was most of /v1/ask's
        # p95. This process's writers queue on a lock instead (woken as soon as it is free); other processes
        # still meet SQLite's own lock. PostgreSQL takes concurrent writers itself.
        self._writer = threading.RLock() if self.engine.dialect.name == "sqlite" else contextlib.nullcontext()

    @contextlib.contextmanager
    def _begin(self) -> Iterator[Connection]:
        """A write transaction (`engine.begin()`), one at a time in this process on SQLite."""
        with self._writer, self.engine.begin() as conn:
            yield conn

    def close(self) -> None:
        self.engine.dispose()

    def _insert(self, table: Table):
        """An INSERT of the backend's own dialect, so `on_conflict_do_*` makes it an upsert on SQLite and PostgreSQL."""
        return (sqlite_insert if self.engine.dialect.name == "sqlite" else pg_insert)(table)

    def ping(self) -> bool:
        with self.engine.connect() as conn:
            conn.execute(select(1))
        return True

    # conversations -----------------------------------------------------------------------

    def new_conversation(
        self, channel: str = "cli", conversation_id: str | None = None, owner: str = LOCAL_OWNER
    ) -> str:
        cid = conversation_id or uuid.uuid4().hex
        now = _now()
        with self._begin() as conn:  # one statement: two first messages of a chat at once both succeed
            conn.execute(
                self._insert(conversations)
                .values(id=cid, channel=channel, owner=owner, created_at=now, updated_at=now)
                .on_conflict_do_nothing(index_elements=[conversations.c.id])
            )
        return cid

    def exists(self, conversation_id: str) -> bool:
        with self.engine.connect() as conn:
            return (
                conn.execute(select(conversations.c.id).where(conversations.c.id == conversation_id)).first()
                is not None
            )

    def owner_of(self, conversation_id: str) -> tuple[bool, str | None]:
        """(whether the conversation exists, its owner); the owner is None for conversations from before tenancy."""
        with self.engine.connect() as conn:
            row = conn.execute(select(conversations.c.owner).where(conversations.c.id == conversation_id)).first()
        return (False, None) if row is None else (True, row[0])

    def readable(self, conversation_id: str, owner: str, admin: bool = False) -> bool:
        """Whether `owner` may read the conversation: it exists and is theirs, or the reader is an admin."""
        found, holder = self.owner_of(conversation_id)
        return found and (admin or holder == owner)

    def start_turn(self, conversation_id: str, question: str, channel: str = "api", owner: str = LOCAL_OWNER) -> int:
        """Record the question before it is answered; returns the turn index (0-based).

        A conversation another principal owns is `UnknownConversation` (nothing is written)."""
        now = _now()
        hot = self._hot
        with self._begin() as conn:
            conn.execute(hot.touch, {"p_cid": conversation_id, "p_channel": channel, "p_owner": owner, "p_now": now})
            holder = conn.execute(hot.owner, {"p_cid": conversation_id}).scalar()
            if holder != owner:
                raise UnknownConversation(conversation_id)  # rolls the touch back
            last = conn.execute(hot.last_idx, {"p_cid": conversation_id}).scalar()
            idx = 0 if last is None else last + 1
            conn.execute(hot.new_turn, {"p_cid": conversation_id, "p_idx": idx, "p_question": question, "p_now": now})
        return idx

    def finish_turn(
        self,
        conversation_id: str,
        idx: int,
        trace: AnswerTrace,
        state: dict[str, Any] | None = None,
        dumped: str | None = None,
    ) -> None:
        """Complete the turn with its answer and trace; `dumped`: the trace's `model_dump_json()` when the caller
        has it already."""
        with self._begin() as conn:
            conn.execute(
                self._hot.finish,
                {
                    "p_cid": conversation_id,
                    "p_idx": idx,
                    "p_answer": trace.answer,
                    "p_language": trace.language,
                    "p_mode": trace.mode,
                    # serialized once, by pydantic (the same values as json.dumps(model_dump(mode="json")), faster)
                    "p_trace": JsonText(trace.model_dump_json() if dumped is None else dumped),
                    "p_state": state,
                },
            )

    def fail_turn(self, conversation_id: str, idx: int, error: str) -> None:
        with self._begin() as conn:
            conn.execute(
                update(turns)
                .where(turns.c.conversation_id == conversation_id, turns.c.idx == idx)
                .values(status="failed", error=error[:2000])
            )

    def turns(self, conversation_id: str, limit: int | None = None) -> list[Turn]:
        """The conversation's turns, oldest first (the last `limit` when given)."""
        q = select(turns).where(turns.c.conversation_id == conversation_id).order_by(turns.c.idx.desc())
        if limit:
            q = q.limit(limit)
        with self.engine.connect() as conn:
            rows = conn.execute(q).mappings().all()
        return [Turn.from_row(r) for r in reversed(rows)]

    def turn_page(self, conversation_id: str, offset: int = 0, limit: int = 50) -> list[Turn]:
        """Turns `offset` .. `offset + limit - 1`, oldest first (a long conversation is read a page at a time)."""
        q = (
            select(turns)
            .where(turns.c.conversation_id == conversation_id)
            .order_by(turns.c.idx)
            .offset(offset)
            .limit(limit)
        )
        with self.engine.connect() as conn:
            rows = conn.execute(q).mappings().all()
        return [Turn.from_row(r) for r in rows]

    def count_turns(self, conversation_id: str) -> int:
        with self.engine.connect() as conn:
            return int(
                conn.execute(
                    select(func.count()).select_from(turns).where(turns.c.conversation_id == conversation_id)
                ).scalar()
                or 0
            )

    def fail_stale_pending(self, older_than_s: float) -> int:
        """Close as failed the turns still pending after `older_than_s` seconds: answers a crash interrupted.
        Run at start-up; the age keeps a turn another live worker is still answering untouched."""
        cutoff = _now() - dt.timedelta(seconds=older_than_s)
        with self._begin() as conn:
            res = conn.execute(
                update(turns)
                .where(turns.c.status == "pending", turns.c.created_at < cutoff)
                .values(status="failed", error="interrupted: the server stopped before answering")
            )
        return res.rowcount or 0

    def secret(self, name: str) -> str:
        """A random server-wide value, made once and shared by every worker through the store."""
        with self._begin() as conn:
            row = conn.execute(select(server_secrets.c.value).where(server_secrets.c.name == name)).first()
            if row:
                return row[0]
            conn.execute(
                self._insert(server_secrets)
                .values(name=name, value=secrets.token_hex(32))
                .on_conflict_do_nothing(index_elements=[server_secrets.c.name])
            )
            return conn.execute(select(server_secrets.c.value).where(server_secrets.c.name == name)).scalar_one()

    def last_state(self, conversation_id: str) -> dict[str, Any] | None:
        """The planner state of the last answered turn: what a follow-up question inherits."""
        q = (
            select(turns.c.state)
            .where(turns.c.conversation_id == conversation_id, turns.c.status == "answered")
            .order_by(turns.c.idx.desc())
            .limit(1)
        )
        with self.engine.connect() as conn:
            row = conn.execute(q).first()
        return row[0] if row else None

    # feedback ----------------------------------------------------------------------------

    def add_feedback(
        self, conversation_id: str, turn: int, rating: int, comment: str | None = None, owner: str | None = None
    ) -> int:
        """Feedback on one turn; `UnknownConversation` when there is no such turn, or (given `owner`) the
        conversation belongs to another principal."""
        q = select(turns.c.id).where(turns.c.conversation_id == conversation_id, turns.c.idx == turn)
        if owner is not None:
            q = q.join(conversations, conversations.c.id == turns.c.conversation_id).where(
                conversations.c.owner == owner
            )
        with self._begin() as conn:
            found = conn.execute(q).first()
            if not found:
                raise UnknownConversation(f"{conversation_id}#{turn}")
            res = conn.execute(
                insert(feedback).values(
                    conversation_id=conversation_id, turn=turn, rating=rating, comment=comment, created_at=_now()
                )
            )
            return int(res.inserted_primary_key[0])

    def feedback_for(self, conversation_id: str, turns_from: int = 0, turns_to: int | None = None) -> list[dict]:
        """Feedback on the conversation's turns `turns_from` .. `turns_to` (inclusive; all when None)."""
        q = select(feedback).where(feedback.c.conversation_id == conversation_id, feedback.c.turn >= turns_from)
        if turns_to is not None:
            q = q.where(feedback.c.turn <= turns_to)
        with self.engine.connect() as conn:
            rows = conn.execute(q.order_by(feedback.c.id).limit(10_000)).mappings().all()
        return [dict(r) for r in rows]


class _HotStatements:
    """The statements every answer runs (record the question, complete the turn), built once per store with
    bound parameters: SQLAlchemy then skips rebuilding them and their cache keys on each call, which was a
    fifth of an offline answer's time (bench/README.md). The same SQL as building them per call."""

    def __init__(self, dialect_insert) -> None:
        cid = bindparam("p_cid", type_=conversations.c.id.type)
        now = bindparam("p_now", type_=conversations.c.created_at.type)
        #: create the conversation or bump its updated_at, in one statement (an upsert on both backends)
        self.touch = (
            dialect_insert(conversations)
            .values(
                id=cid,
                channel=bindparam("p_channel", type_=conversations.c.channel.type),
                owner=bindparam("p_owner", type_=conversations.c.owner.type),
                created_at=now,
                updated_at=now,
            )
            .on_conflict_do_update(index_elements=[conversations.c.id], set_={"updated_at": now})
        )
        self.owner = select(conversations.c.owner).where(conversations.c.id == cid)
        self.last_idx = select(func.max(turns.c.idx)).where(turns.c.conversation_id == cid)
        self.new_turn = insert(turns).values(
            conversation_id=cid,
            idx=bindparam("p_idx", type_=turns.c.idx.type),
            question=bindparam("p_question", type_=turns.c.question.type),
            status="pending",
            created_at=now,
        )
        self.finish = (
            update(turns)
            .where(turns.c.conversation_id == cid, turns.c.idx == bindparam("p_idx", type_=turns.c.idx.type))
            .values(
                answer=bindparam("p_answer", type_=turns.c.answer.type),
                language=bindparam("p_language", type_=turns.c.language.type),
                mode=bindparam("p_mode", type_=turns.c.mode.type),
                status="answered",
                trace=bindparam("p_trace", type_=turns.c.trace.type),
                state=bindparam("p_state", type_=turns.c.state.type),
            )
        )
