"""Redis, when `REDIS_URL` is set: where clients are built, keys are named and an outage is noticed.

What every worker shares through it:

    rate limit        one token bucket per caller for all workers (`bot.api.security.RedisRateLimiter`)
    de-duplication    the channels' TTL set of platform message ids and nonces (`bot.channels.ledger`,
                      keys `<prefix>seen:…`)
    re-index notice   `gpu-advisor kb index` publishes on `<prefix>kb-reindex` after it changed the
                      Chroma server's collection; every API worker reloads its retriever
                      (`bot.api.cluster.ReindexListener`)

Clients come from the factories below, called at start-up (FastAPI lifespan, CLI command), never at
import. Every key and channel name starts with `GPU_ADVISOR_REDIS_PREFIX` (default `gpu-advisor:`), so
two deployments, or two test runs, can share one Redis without seeing each other.

An outage never fails a request: callers catch `REDIS_ERRORS` and fall back to what their own process
holds, and a `Breaker` makes them skip Redis for a few seconds (one warning per outage, one line
when it is back) instead of paying the connect timeout on every request.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import redis
import redis.asyncio

if TYPE_CHECKING:
    from bot.core.settings import Settings

log = logging.getLogger("gpu_advisor.redis")

#: what a caller catches to fall back: the server is down, slow, refusing us, or answered nonsense
REDIS_ERRORS: tuple[type[BaseException], ...] = (redis.exceptions.RedisError, OSError)
REINDEX_CHANNEL = "kb-reindex"
#: connect and read timeout of the shared clients: a rate-limit check must not hang a request
TIMEOUT_S = 0.5


@dataclass(frozen=True)
class RedisConfig:
    """Where Redis is and how this deployment's names start."""

    url: str
    prefix: str = "gpu-advisor:"

    @classmethod
    def from_settings(cls, settings: Settings) -> RedisConfig | None:
        """None when REDIS_URL is unset (every process keeps its own state)."""
        return cls(settings.redis_url, settings.redis_prefix) if settings.redis_url else None

    def key(self, *parts: str) -> str:
        return self.prefix + ":".join(parts)

    @property
    def reindex_channel(self) -> str:
        return self.key(REINDEX_CHANNEL)

    @property
    def safe_url(self) -> str:
        """The URL without its password, for logs and /readyz."""
        parts = urlsplit(self.url)
        if parts.password:
            host = parts.hostname or ""
            netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
            parts = parts._replace(netloc=netloc)
        return urlunsplit(parts)


def connect(config: RedisConfig, timeout_s: float = TIMEOUT_S) -> redis.Redis:
    """A thread-safe client (a connection pool; nothing is opened until the first command)."""
    return redis.Redis.from_url(
        config.url, socket_connect_timeout=timeout_s, socket_timeout=timeout_s, decode_responses=True
    )


def connect_async(config: RedisConfig, timeout_s: float = TIMEOUT_S) -> redis.asyncio.Redis:
    """An asyncio client for code that runs on the event loop (pub/sub listeners, async channels)."""
    return redis.asyncio.Redis.from_url(
        config.url, socket_connect_timeout=timeout_s, socket_timeout=timeout_s, decode_responses=True
    )


class Breaker:
    """Remembers an outage: `available()` is False for `cooldown_s` after a failure.

    Logs one warning when Redis goes away and one line when it answers again, not one per request.
    """

    def __init__(
        self, purpose: str, fallback: str, cooldown_s: float = 5.0, clock: Callable[[], float] = time.monotonic
    ):
        self.purpose = purpose  # "the rate limit"
        self.fallback = fallback  # "counting per process"
        self.cooldown_s = cooldown_s
        self.clock = clock
        self._open_until = 0.0
        self._down = False
        self._lock = threading.Lock()

    @property
    def down(self) -> bool:
        return self._down

    def available(self) -> bool:
        return not self._down or self.clock() >= self._open_until

    def failed(self, err: BaseException) -> None:
        with self._lock:
            self._open_until = self.clock() + self.cooldown_s
            if not self._down:
                self._down = True
                log.warning(
                    "Redis unreachable for %s (%s: %s); %s until it answers again",
                    self.purpose,
                    type(err).__name__,
                    err,
                    self.fallback,
                )

    def succeeded(self) -> None:
        if self._down:
            with self._lock:
                if self._down:
                    self._down = False
                    log.warning("Redis answers again; %s is shared by every worker again", self.purpose)


def ping(client: redis.Redis) -> bool:
    """True when Redis answers; False (never an exception) when it does not."""
    try:
        return bool(client.ping())
    except REDIS_ERRORS:
        return False


def publish_reindex(config: RedisConfig, payload: dict[str, Any]) -> int | None:
    """Tell every API worker that the knowledge index changed.

    Returns how many workers were listening, or None when Redis could not be reached (the workers then
    pick the change up when they restart; the caller should say so).
    """
    client = connect(config, timeout_s=2.0)
    try:
        return int(client.publish(config.reindex_channel, json.dumps(payload, ensure_ascii=False)))
    except REDIS_ERRORS as err:
        log.warning("could not publish the re-index notice to %s: %s", config.safe_url, err)
        return None
    finally:
        client.close()
