"""What the API workers share when there are several: the rate limiter, the re-index notice, the checks behind /readyz.

    Cluster.start(api_settings, redis_config, advisor)   in the app's lifespan
        .limiter     RedisRateLimiter when REDIS_URL is set (one budget for all workers), else RateLimiter
        .listener    subscribed to `<prefix>kb-reindex`: on a notice the worker swaps in a freshly loaded
                     retriever (chunks, BM25 and an empty answer cache) without stopping
        .readiness() each dependency on its own: the store (PostgreSQL or SQLite), Chroma, Redis

Redis is never required: without it the limiter counts per process and the worker picks up a re-index
when it restarts; /readyz says `redis: unreachable` but stays ready, since every answer still works.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio.to_thread
import httpx
import redis

from bot.api.ratelimit import Limiter, RateLimiter, RedisRateLimiter
from bot.api.settings import ApiSettings
from bot.core.redis_client import REDIS_ERRORS, RedisConfig, connect, connect_async
from bot.core.redis_client import ping as redis_ping

if TYPE_CHECKING:
    from bot.answer.advisor import Advisor

log = logging.getLogger("gpu_advisor.api")

#: seconds between attempts to (re)subscribe while Redis is away
RESUBSCRIBE_S = 2.0


def reload_retriever(advisor: Advisor) -> int:
    """Load the index again into a new retriever and swap it in (searches in flight finish on the old one).

    Returns the number of chunks now served.
    """
    from knowledge.index import KnowledgeIndex
    from knowledge.retrieval import set_default_retriever

    old = advisor.toolbox.retriever
    if old is None:
        return 0
    try:
        fresh = old.fresh()
    except Exception:  # e.g. the collection was dropped and made again: open it anew
        old.index = KnowledgeIndex(old.index.config, embedding=old.index.embedding)
        fresh = old.fresh()
    advisor.toolbox.retriever = fresh
    set_default_retriever(fresh)
    return len(fresh)


class ReindexListener:
    """A task on the event loop: listens for re-index notices and reloads the retriever on each.

    After Redis comes back from an outage it reloads once as well, since a notice may have been missed.
    """

    def __init__(self, config: RedisConfig, advisor: Advisor):
        self.config = config
        self.advisor = advisor
        self.reloads = 0
        self.subscribed = asyncio.Event()
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="gpu-advisor-reindex-listener")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    async def _reload(self, why: str) -> None:
        started = time.perf_counter()
        try:
            chunks = await anyio.to_thread.run_sync(reload_retriever, self.advisor)
        except Exception as err:  # the old retriever keeps serving; say why
            log.warning("re-index (%s): could not reload the knowledge index: %s: %s", why, type(err).__name__, err)
            return
        self.reloads += 1
        log.info("re-index (%s): %d chunks loaded in %.0f ms", why, chunks, (time.perf_counter() - started) * 1000)

    async def _run(self) -> None:
        missed = False
        while True:
            client = connect_async(self.config)
            try:
                async with client.pubsub() as pubsub:
                    await pubsub.subscribe(self.config.reindex_channel)
                    self.subscribed.set()
                    if missed:
                        await self._reload("Redis is back; a notice may have been missed")
                        missed = False
                    while True:
                        message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=5.0)
                        if message is not None and message.get("type") == "message":
                            await self._reload(_describe(message.get("data")))
            except asyncio.CancelledError:
                raise
            except REDIS_ERRORS as err:
                if self.subscribed.is_set() or not missed:
                    log.warning(
                        "re-index notices: Redis unreachable (%s); retrying every %.0f s",
                        type(err).__name__,
                        RESUBSCRIBE_S,
                    )
                self.subscribed.clear()
                missed = True
            finally:
                with contextlib.suppress(Exception):
                    await client.aclose()
            await asyncio.sleep(RESUBSCRIBE_S)


def _describe(data: Any) -> str:
    try:
        notice = json.loads(data)
        return (
            f"{notice.get('changed', '?')} chunks changed by pid {notice.get('pid', '?')} on {notice.get('host', '?')}"
        )
    except (TypeError, ValueError, AttributeError):
        return "notice"


@dataclass
class Cluster:
    limiter: Limiter
    redis_config: RedisConfig | None = None
    redis_client: redis.Redis | None = None
    listener: ReindexListener | None = None

    @classmethod
    def start(cls, conf: ApiSettings, redis_config: RedisConfig | None, advisor: Advisor) -> Cluster:
        """Build the limiter and, with Redis, start the listener (call inside a running event loop)."""
        if redis_config is None:
            return cls(RateLimiter(conf.rate_limit_per_minute))
        client = connect(redis_config)
        limiter = RedisRateLimiter(client, redis_config.key("rate", ""), conf.rate_limit_per_minute)
        listener = ReindexListener(redis_config, advisor)
        listener.start()
        return cls(limiter, redis_config, client, listener)

    def limiter_for(self, name: str, rate_per_minute: int) -> Limiter:
        """Another budget (e.g. the widget's publishable keys), shared the same way as `limiter`."""
        if self.redis_client is None or self.redis_config is None:
            return RateLimiter(rate_per_minute)
        return RedisRateLimiter(self.redis_client, self.redis_config.key(name, ""), rate_per_minute)

    async def stop(self) -> None:
        if self.listener is not None:
            await self.listener.stop()
        if self.redis_client is not None:
            with contextlib.suppress(Exception):
                self.redis_client.close()

    # ---- readiness ----------------------------------------------------------------------------------

    def readiness(self, advisor: Advisor | None) -> dict[str, Any]:
        """Each dependency on its own. Ready needs the index, the store and Chroma; Redis only degrades."""
        retriever = advisor.toolbox.retriever if advisor else None
        chunks = len(retriever) if retriever is not None else 0
        try:
            store_ok = advisor is not None and advisor.store.ping()
        except Exception:  # any driver error means "not reachable"
            store_ok = False
        chroma = _chroma_status(retriever.index.config) if retriever is not None else "unreachable"
        if self.redis_client is None:
            redis_state = "off"
        else:
            redis_state = "ok" if redis_ping(self.redis_client) else "unreachable"
        ready = chunks > 0 and store_ok and chroma in ("ok", "embedded")
        return {
            "status": "ready" if ready else "not_ready",
            "index_chunks": chunks,
            "store": "ok" if store_ok else "unreachable",
            "store_backend": advisor.store.engine.dialect.name if advisor else None,
            "chroma": chroma,
            "redis": redis_state,
            "rate_limit": "shared" if redis_state == "ok" else "per-process",
            "mode": advisor.mode if advisor else None,
        }


def _chroma_status(config: Any) -> str:
    if not config.server:
        return "embedded"
    try:
        ok = httpx.get(f"{config.location}/api/v2/heartbeat", timeout=1.0).status_code == 200
    except httpx.HTTPError:
        ok = False
    return "ok" if ok else "unreachable"
