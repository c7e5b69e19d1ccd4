"""Conversations, turns, traces and feedback, persisted.

A SQLite file (WAL journal) by default; PostgreSQL when the URL says so
(`postgresql://…`, driven by psycopg 3). SQLAlchemy Core keeps one schema for both.
A question is written *before* it is answered, so nothing a user sent is lost even if the
answer fails; the turn is completed with its trace afterwards. Each turn also keeps the
planner's state (the slots a follow-up inherits), so multi-turn context survives a restart.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import (
    JSON,
    Column,
    DateTime,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
    create_engine,
    event,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Engine

from bot.trace import AnswerTrace


class UtcDateTime(TypeDecorator):
    """Timezone-aware UTC on both backends (SQLite stores and returns naive datetimes)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_result_value(self, value, dialect):
        return value if value is None or value.tzinfo else value.replace(tzinfo=dt.UTC)


metadata = MetaData()

conversations = Table(
    "conversations",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("channel", String(32), nullable=False, default="cli"),
    Column("created_at", UtcDateTime(), nullable=False),
    Column("updated_at", UtcDateTime(), nullable=False),
)

turns = Table(
    "turns",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("conversation_id", String(64), ForeignKey("conversations.id", ondelete="CASCADE"), nullable=False, index=True),
    Column("idx", Integer, nullable=False),
    Column("question", Text, nullable=False),
    Column("answer", Text),
    Column("language", String(8)),
    Column("mode", String(16)),
    Column("status", String(16), nullable=False, default="pending"),  # pending | answered | failed
    Column("error", Text),
    Column("trace", JSON),
    Column("state", JSON),  # the planner's slots after this turn
    Column("created_at", UtcDateTime(), nullable=False),
    UniqueConstraint("conversation_id", "idx", name="uq_turn"),
)

feedback = Table(
    "feedback",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("conversation_id", String(64), ForeignKey("conversations.id", ondelete="CASCADE"), nullable=False),
    Column("turn", Integer, nullable=False),
    Column("rating", Integer, nullable=False),
    Column("comment", Text),
    Column("created_at", UtcDateTime(), nullable=False),
)

api_keys = Table(
    "api_keys",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("name", String(128), nullable=False),
    Column("key_hash", String(128), nullable=False, unique=True),
    Column("created_at", UtcDateTime(), nullable=False),
    Column("revoked_at", UtcDateTime()),
)

#: publishable keys for the web widget (`bot.api.keys.create_widget`): usable only by the widget's
#: routes and only from the listed browser origins (a JSON list of "scheme://host[:port]")
widget_keys = Table(
    "widget_keys",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("name", String(128), nullable=False),
    Column("key_hash", String(128), nullable=False, unique=True),
    Column("origins", JSON, nullable=False),
    Column("created_at", UtcDateTime(), nullable=False),
    Column("revoked_at", UtcDateTime()),
)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def normalize_url(url: str) -> str:
    """`postgresql://` and `postgres://` use psycopg 3; SQLite paths get their folder created."""
    if url.startswith(("postgres://", "postgresql://")):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    if url.startswith("sqlite:///") and not url.startswith("sqlite:///:memory:"):
        Path(url.removeprefix("sqlite:///")).expanduser().parent.mkdir(parents=True, exist_ok=True)
    return url


def make_engine(url: str) -> Engine:
    url = normalize_url(url)
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn, _record):  # WAL: readers never block the writer
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=10)


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


class UnknownConversation(LookupError):
    pass


class Store:
    """The one place conversations are read and written. Thread-safe; one engine per process."""

    def __init__(self, url: str):
        self.url = url
        self.engine = make_engine(url)
        metadata.create_all(self.engine)

    def close(self) -> None:
        self.engine.dispose()

    def ping(self) -> bool:
        with self.engine.connect() as conn:
            conn.execute(select(1))
        return True

    # conversations -----------------------------------------------------------------------

    def new_conversation(self, channel: str = "cli", conversation_id: str | None = None) -> str:
        cid = conversation_id or uuid.uuid4().hex
        now = _now()
        with self.engine.begin() as conn:
            exists = conn.execute(select(conversations.c.id).where(conversations.c.id == cid)).first()
            if not exists:
                conn.execute(insert(conversations).values(id=cid, channel=channel, created_at=now, updated_at=now))
        return cid

    def exists(self, conversation_id: str) -> bool:
        with self.engine.connect() as conn:
            return conn.execute(select(conversations.c.id).where(conversations.c.id == conversation_id)).first() is not None

    def start_turn(self, conversation_id: str, question: str, channel: str = "api") -> int:
        """Record the question before it is answered; returns the turn index (0-based)."""
        now = _now()
        with self.engine.begin() as conn:
            conn.execute(self._touch(conversation_id, channel, now))
            last = conn.execute(select(func.max(turns.c.idx)).where(turns.c.conversation_id == conversation_id)).scalar()
            idx = 0 if last is None else last + 1
            conn.execute(insert(turns).values(conversation_id=conversation_id, idx=idx, question=question,
                                              status="pending", created_at=now))
        return idx

    def _touch(self, conversation_id: str, channel: str, now: dt.datetime):
        """Create the conversation or bump its updated_at, in one statement (an upsert on both backends)."""
        dialect = sqlite_insert if self.engine.dialect.name == "sqlite" else pg_insert
        stmt = dialect(conversations).values(id=conversation_id, channel=channel, created_at=now, updated_at=now)
        return stmt.on_conflict_do_update(index_elements=[conversations.c.id], set_={"updated_at": now})

    def finish_turn(self, conversation_id: str, idx: int, trace: AnswerTrace, state: dict[str, Any] | None = None) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                update(turns)
                .where(turns.c.conversation_id == conversation_id, turns.c.idx == idx)
                .values(answer=trace.answer, language=trace.language, mode=trace.mode, status="answered",
                        trace=json.loads(trace.model_dump_json()), state=state)
            )

    def fail_turn(self, conversation_id: str, idx: int, error: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(update(turns).where(turns.c.conversation_id == conversation_id, turns.c.idx == idx)
                         .values(status="failed", error=error[:2000]))

    def turns(self, conversation_id: str, limit: int | None = None) -> list[Turn]:
        """The conversation's turns, oldest first (the last `limit` when given)."""
        q = select(turns).where(turns.c.conversation_id == conversation_id).order_by(turns.c.idx.desc())
        if limit:
            q = q.limit(limit)
        with self.engine.connect() as conn:
            rows = conn.execute(q).mappings().all()
        return [Turn(idx=r["idx"], question=r["question"], answer=r["answer"], status=r["status"], language=r["language"],
                     mode=r["mode"], trace=r["trace"], state=r["state"], created_at=r["created_at"]) for r in reversed(rows)]

    def last_state(self, conversation_id: str) -> dict[str, Any] | None:
        """The planner state of the last answered turn: what a follow-up question inherits."""
        q = (select(turns.c.state).where(turns.c.conversation_id == conversation_id, turns.c.status == "answered")
             .order_by(turns.c.idx.desc()).limit(1))
        with self.engine.connect() as conn:
            row = conn.execute(q).first()
        return row[0] if row else None

    # feedback ----------------------------------------------------------------------------

    def add_feedback(self, conversation_id: str, turn: int, rating: int, comment: str | None = None) -> int:
        with self.engine.begin() as conn:
            found = conn.execute(select(turns.c.id).where(turns.c.conversation_id == conversation_id, turns.c.idx == turn)).first()
            if not found:
                raise UnknownConversation(f"{conversation_id}#{turn}")
            res = conn.execute(insert(feedback).values(conversation_id=conversation_id, turn=turn, rating=rating,
                                                       comment=comment, created_at=_now()))
            return int(res.inserted_primary_key[0])

    def feedback_for(self, conversation_id: str) -> list[dict]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(feedback).where(feedback.c.conversation_id == conversation_id)
                                .order_by(feedback.c.id)).mappings().all()
        return [dict(r) for r in rows]
