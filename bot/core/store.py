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

import datetime as dt
import json
import secrets
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
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
    false,
    func,
    insert,
    inspect,
    select,
    text,
    update,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError

from bot.core.trace import AnswerTrace


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
    Column("owner", String(128), index=True),  # the principal that created it; NULL: stored before tenancy
    Column("created_at", UtcDateTime(), nullable=False),
    Column("updated_at", UtcDateTime(), nullable=False),
)

turns = Table(
    "turns",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column(
        "conversation_id", String(64), ForeignKey("conversations.id", ondelete="CASCADE"), nullable=False, index=True
    ),
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
    Column("admin", Boolean, nullable=False, default=False, server_default=false()),  # reads every conversation
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

#: server-wide random values shared by every worker (e.g. the key that makes conversation ids unguessable)
server_secrets = Table(
    "server_secrets",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("value", String(128), nullable=False),
)

#: the owner of conversations started from the command line (no principal)
LOCAL_OWNER = "local"


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
    # a database that does not answer fails fast (503 with Retry-After) instead of holding the request
    return create_engine(
        url, pool_pre_ping=True, pool_size=5, max_overflow=10, pool_timeout=10, connect_args={"connect_timeout": 5}
    )


#: one number for every schema change this project makes: PostgreSQL serialises them on it
_SCHEMA_LOCK = 0x67707561  # "gpua"


def create_schema(engine: Engine, schema: MetaData | None = None, tables: list[Table] | None = None) -> None:
    """Create missing tables (and, for the store's own schema, missing columns), safely from many workers.

    Several workers starting at once against a fresh PostgreSQL would otherwise race in CREATE TABLE
    (a duplicate type error in pg_type for the loser); a transaction-level advisory lock makes the
    second wait for the first and then find the tables there. SQLite serialises writers by itself."""
    schema = metadata if schema is None else schema
    if engine.dialect.name == "postgresql":
        with engine.begin() as conn:
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _SCHEMA_LOCK})
            schema.create_all(conn, tables=tables)
    else:
        schema.create_all(engine, tables=tables)
    if schema is metadata:
        add_missing_columns(engine)


def add_missing_columns(engine: Engine) -> None:
    """Columns added to a table after a database was created (`create_all` only makes new tables):
    each missing nullable or defaulted column is added with ALTER TABLE, on SQLite and PostgreSQL."""
    inspector = inspect(engine)
    existing_tables = set(inspector.get_table_names())
    for table in metadata.sorted_tables:
        if table.name not in existing_tables:
            continue
        have = {c["name"] for c in inspector.get_columns(table.name)}
        for column in table.columns:
            if column.name in have:
                continue
            kind = column.type.compile(dialect=engine.dialect)
            default = ""
            if column.server_default is not None:
                default = " DEFAULT " + str(column.server_default.arg.compile(dialect=engine.dialect))
            try:
                with engine.begin() as conn:
                    conn.execute(text(f"ALTER TABLE {table.name} ADD COLUMN {column.name} {kind}{default}"))
            except DBAPIError:  # another worker added it first
                if column.name not in {c["name"] for c in inspect(engine).get_columns(table.name)}:
                    raise


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
        create_schema(self.engine)

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
        with self.engine.begin() as conn:  # one statement: two first messages of a chat at once both succeed
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
        with self.engine.begin() as conn:
            conn.execute(self._touch(conversation_id, channel, owner, now))
            holder = conn.execute(select(conversations.c.owner).where(conversations.c.id == conversation_id)).scalar()
            if holder != owner:
                raise UnknownConversation(conversation_id)  # rolls the touch back
            last = conn.execute(
                select(func.max(turns.c.idx)).where(turns.c.conversation_id == conversation_id)
            ).scalar()
            idx = 0 if last is None else last + 1
            conn.execute(
                insert(turns).values(
                    conversation_id=conversation_id, idx=idx, question=question, status="pending", created_at=now
                )
            )
        return idx

    def _touch(self, conversation_id: str, channel: str, owner: str, now: dt.datetime):
        """Create the conversation or bump its updated_at, in one statement (an upsert on both backends)."""
        stmt = self._insert(conversations).values(
            id=conversation_id, channel=channel, owner=owner, created_at=now, updated_at=now
        )
        return stmt.on_conflict_do_update(index_elements=[conversations.c.id], set_={"updated_at": now})

    def finish_turn(
        self, conversation_id: str, idx: int, trace: AnswerTrace, state: dict[str, Any] | None = None
    ) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                update(turns)
                .where(turns.c.conversation_id == conversation_id, turns.c.idx == idx)
                .values(
                    answer=trace.answer,
                    language=trace.language,
                    mode=trace.mode,
                    status="answered",
                    trace=json.loads(trace.model_dump_json()),
                    state=state,
                )
            )

    def fail_turn(self, conversation_id: str, idx: int, error: str) -> None:
        with self.engine.begin() as conn:
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
        return [
            Turn(
                idx=r["idx"],
                question=r["question"],
                answer=r["answer"],
                status=r["status"],
                language=r["language"],
                mode=r["mode"],
                trace=r["trace"],
                state=r["state"],
                created_at=r["created_at"],
            )
            for r in reversed(rows)
        ]

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
        return [
            Turn(
                idx=r["idx"],
                question=r["question"],
                answer=r["answer"],
                status=r["status"],
                language=r["language"],
                mode=r["mode"],
                trace=r["trace"],
                state=r["state"],
                created_at=r["created_at"],
            )
            for r in rows
        ]

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
        with self.engine.begin() as conn:
            res = conn.execute(
                update(turns)
                .where(turns.c.status == "pending", turns.c.created_at < cutoff)
                .values(status="failed", error="interrupted: the server stopped before answering")
            )
        return res.rowcount or 0

    def secret(self, name: str) -> str:
        """A random server-wide value, made once and shared by every worker through the store."""
        with self.engine.begin() as conn:
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
        with self.engine.begin() as conn:
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
