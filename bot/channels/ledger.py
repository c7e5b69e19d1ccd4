"""What the delivery core remembers: platform message ids and nonces it has seen (a TTL set), and one
delivery record per answered message.

The TTL set is Redis (`SET key 1 NX EX ttl`, shared by every worker and machine) when `REDIS_URL` is
set, else a table in the SQL store (shared by the workers of one database). Both answer one question:
"is this the first time this key is seen within its TTL?" — atomically, so two workers handed the same
redelivered message cannot both start an answer.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from typing import Protocol

from sqlalchemy import Column, Float, Integer, MetaData, String, Table, delete, insert, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from bot.store import Store, UtcDateTime, create_schema

log = logging.getLogger("gpu_advisor.channels")

metadata = MetaData()

seen_keys = Table(
    "channel_seen",
    metadata,
    Column("key", String(255), primary_key=True),
    Column("expires_at", UtcDateTime(), nullable=False, index=True),
)

deliveries = Table(
    "channel_deliveries",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("channel", String(32), nullable=False),
    Column("message_id", String(255), nullable=False),
    Column("conversation_id", String(64), nullable=False, index=True),
    Column("status", String(16), nullable=False),  # answered | apology | busy | rejected
    Column("latency_ms", Float, nullable=False),
    Column("request_id", String(32), nullable=False),
    Column("created_at", UtcDateTime(), nullable=False),
)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class SeenKeys(Protocol):
    def first(self, key: str, ttl_s: int) -> bool:
        """True the first time `key` is offered within `ttl_s` seconds, False for every repeat."""


class SqlSeenKeys:
    """The TTL set as a table in the SQL store: insert wins, a duplicate key loses unless it has expired."""

    def __init__(self, engine: Engine):
        self.engine = engine
        create_schema(engine, metadata, [seen_keys])
        self._inserts = 0

    def first(self, key: str, ttl_s: int) -> bool:
        now = _now()
        expires = now + dt.timedelta(seconds=ttl_s)
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(seen_keys).values(key=key, expires_at=expires))
        except IntegrityError:
            with self.engine.begin() as conn:  # seen before: take it over only if that sighting expired
                won = conn.execute(update(seen_keys).where(seen_keys.c.key == key, seen_keys.c.expires_at < now)
                                   .values(expires_at=expires)).rowcount
            return won == 1
        self._inserts += 1
        if self._inserts % 500 == 0:
            self.purge()
        return True

    def purge(self) -> int:
        with self.engine.begin() as conn:
            return conn.execute(delete(seen_keys).where(seen_keys.c.expires_at < _now())).rowcount


class RedisSeenKeys:
    """The TTL set in Redis: one `SET key 1 NX EX ttl` per offer."""

    def __init__(self, url: str, prefix: str = "gpu-advisor:seen:"):
        import redis

        self.client = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        self.prefix = prefix

    def first(self, key: str, ttl_s: int) -> bool:
        return bool(self.client.set(self.prefix + key, b"1", nx=True, ex=ttl_s))


def seen_keys_for(store: Store, redis_url: str | None) -> SeenKeys:
    """Redis when a URL is configured, else the store's own database."""
    return RedisSeenKeys(redis_url) if redis_url else SqlSeenKeys(store.engine)


@dataclass(frozen=True)
class DeliveryRecord:
    channel: str
    message_id: str
    conversation_id: str
    status: str
    latency_ms: float
    request_id: str


class DeliveryLog:
    """One row per message a channel handled: what happened to it and how long it took."""

    def __init__(self, engine: Engine):
        self.engine = engine
        create_schema(engine, metadata, [deliveries])

    def record(self, rec: DeliveryRecord) -> None:
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(deliveries).values(**rec.__dict__, created_at=_now()))
        except Exception:  # a lost record must never lose the answer itself
            log.exception("could not record the delivery of %s/%s", rec.channel, rec.message_id)

    def for_conversation(self, conversation_id: str) -> list[DeliveryRecord]:
        q = select(deliveries).where(deliveries.c.conversation_id == conversation_id).order_by(deliveries.c.id)
        with self.engine.connect() as conn:
            rows = conn.execute(q).mappings().all()
        return [DeliveryRecord(**{k: r[k] for k in DeliveryRecord.__dataclass_fields__}) for r in rows]

    def for_channel(self, channel: str) -> list[DeliveryRecord]:
        q = select(deliveries).where(deliveries.c.channel == channel).order_by(deliveries.c.id)
        with self.engine.connect() as conn:
            rows = conn.execute(q).mappings().all()
        return [DeliveryRecord(**{k: r[k] for k in DeliveryRecord.__dataclass_fields__}) for r in rows]
