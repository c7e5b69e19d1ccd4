"""The store's SQL schema: the tables (conversations, turns, feedback, keys, server secrets), the engine
for a URL (SQLite with WAL by default, PostgreSQL through psycopg 3), and schema creation that many
workers can run at once, adding the columns a newer release introduced."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

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
    inspect,
    text,
)
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError


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


def normalize_url(url: str) -> str:
    """`postgresql://` and `postgres://` use psycopg 3; SQLite paths get their folder created."""
    if url.startswith(("postgres://", "postgresql://")):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    if url.startswith("sqlite:///") and not url.startswith("sqlite:///:memory:"):
        Path(url.removeprefix("sqlite:///")).expanduser().parent.mkdir(parents=True, exist_ok=True)
    return url


class JsonText(str):
    """A value already serialized to JSON text (pydantic's `model_dump_json`): a JSON column stores it as it is."""


def _json_serializer(value: object) -> str:
    return value if type(value) is JsonText else json.dumps(value)  # type: ignore[return-value]


def make_engine(url: str) -> Engine:
    url = normalize_url(url)
    if url.startswith("sqlite"):
        # a pool as large as the answers a process runs at once: with the default 5, every answer past the
        # fifth opened a connection (and set the pragmas below) and closed it again
        memory = url in ("sqlite://", "sqlite:///") or ":memory:" in url  # one connection per thread already
        pool = {} if memory else {"pool_size": 16, "max_overflow": 32}
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": 30},
            json_serializer=_json_serializer,
            **pool,  # type: ignore[arg-type]
        )

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
        url,
        pool_pre_ping=True,
        pool_size=5,
        max_overflow=10,
        pool_timeout=10,
        connect_args={"connect_timeout": 5},
        json_serializer=_json_serializer,
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
