"""What the delivery core remembers: platform message ids and nonces it has seen (a TTL set), one
delivery record per answered message, and which answer a platform's reply id stands for.

The shared TTL set is Redis (`SET key 1 NX EX ttl`, shared by every worker and machine, through
`bot.core.redis_client` and its key prefix) when `REDIS_URL` is set, else a table in the SQL store (shared by
the workers of one database). Both answer one question: "is this the first time this key is seen within
its TTL?" — atomically, so two workers handed the same redelivered message cannot both start an answer.
`LocalSeen` answers the same question for one process from memory, at once: what a callback's
acknowledgement may ask without waiting on a database.

`ReplyLog` maps what a platform will later point at (a WeCom stream id, used as its feedback id) to the
conversation and turn it answered, so a 👍/👎 that arrives after a restart still finds its answer.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from sqlalchemy import Column, Float, Integer, MetaData, String, Table, delete, insert, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from bot.core.redis_client import REDIS_ERRORS, Breaker, RedisConfig, connect
from bot.core.store import Store
from bot.core.store_schema import UtcDateTime, create_schema

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


replies = Table(
    "channel_replies",
    metadata,
    Column("channel", String(32), primary_key=True),
    Column("reply_id", String(255), primary_key=True),  # what the platform points back at (a feedback id)
    Column("conversation_id", String(64), nullable=False),
    Column("turn", Integer, nullable=False),
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
                won = conn.execute(
                    update(seen_keys)
                    .where(seen_keys.c.key == key, seen_keys.c.expires_at < now)
                    .values(expires_at=expires)
                ).rowcount
            return won == 1
        self._inserts += 1
        if self._inserts % 500 == 0:
            self.purge()
        return True

    def purge(self) -> int:
        with self.engine.begin() as conn:
            return conn.execute(delete(seen_keys).where(seen_keys.c.expires_at < _now())).rowcount


class RedisSeenKeys:
    """The TTL set in Redis: one `SET <prefix>seen:<key> 1 NX EX ttl` per offer, on the shared client
    factory of `bot.core.redis_client`. While Redis is unreachable the offer goes to `fallback` (the SQL
    table, still shared by the workers of one database) and a `Breaker` skips Redis for a few seconds."""

    def __init__(self, config: RedisConfig, fallback: SeenKeys | Callable[[], SeenKeys] | None = None):
        self.config = config
        self.client = connect(config)
        self._fallback = fallback
        self.breaker = Breaker("channel de-duplication", "using the SQL store's table")

    def key(self, key: str) -> str:
        return self.config.key("seen", key)

    def first(self, key: str, ttl_s: int) -> bool:
        if self.breaker.available():
            try:
                won = bool(self.client.set(self.key(key), "1", nx=True, ex=ttl_s))
            except REDIS_ERRORS as err:
                self.breaker.failed(err)
            else:
                self.breaker.succeeded()
                return won
        fallback = self._fallback() if callable(self._fallback) else self._fallback
        if fallback is None:
            return True  # nothing to ask: answering twice is better than never
        self._fallback = fallback
        return fallback.first(key, ttl_s)


class LocalSeen:
    """The TTL set of this process, in memory: no I/O, so a callback's acknowledgement may ask it. It
    catches the repeats that reach the same process (WeCom's retries, a replayed nonce); the shared set
    above catches the rest, off the acknowledgement path."""

    def __init__(self, max_keys: int = 200_000, clock: Callable[[], float] = time.monotonic):
        self.max_keys, self.clock = max_keys, clock
        self._expires: dict[str, float] = {}
        self._lock = threading.Lock()

    def first(self, key: str, ttl_s: float) -> bool:
        now = self.clock()
        with self._lock:
            if self._expires.get(key, 0.0) > now:
                return False
            if len(self._expires) >= self.max_keys:
                self._purge(now)
            self._expires[key] = now + ttl_s
            return True

    def _purge(self, now: float) -> None:
        for k in [k for k, t in self._expires.items() if t <= now]:
            del self._expires[k]
        while len(self._expires) >= self.max_keys:  # all still live: the oldest sightings go first
            del self._expires[next(iter(self._expires))]


def seen_keys_for(store: Store, redis: RedisConfig | str | None) -> SeenKeys:
    """Redis when it is configured (falling back to the store's table in an outage), else the store's table."""
    if not redis:
        return SqlSeenKeys(store.engine)
    config = RedisConfig(redis) if isinstance(redis, str) else redis
    return RedisSeenKeys(config, fallback=lambda: SqlSeenKeys(store.engine))


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


class ReplyLog:
    """Which conversation turn a reply id (a WeCom stream or feedback id) answered, kept in the store."""

    def __init__(self, engine: Engine):
        self.engine = engine
        create_schema(engine, metadata, [replies])

    def record(self, channel: str, reply_id: str, conversation_id: str, turn: int) -> None:
        try:
            with self.engine.begin() as conn:
                conn.execute(
                    insert(replies).values(
                        channel=channel,
                        reply_id=reply_id[:255],
                        conversation_id=conversation_id,
                        turn=turn,
                        created_at=_now(),
                    )
                )
        except IntegrityError:  # recorded already (the same reply delivered again)
            pass
        except Exception:  # feedback on this answer is lost, the answer is not
            log.exception("could not record reply %s/%s", channel, reply_id)

    def find(self, channel: str, reply_id: str) -> tuple[str, int] | None:
        """(conversation id, turn index) of the answer a reply id stands for, or None."""
        q = select(replies.c.conversation_id, replies.c.turn).where(
            replies.c.channel == channel, replies.c.reply_id == reply_id[:255]
        )
        with self.engine.connect() as conn:
            row = conn.execute(q).first()
        return (row[0], int(row[1])) if row else None
