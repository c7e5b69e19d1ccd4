"""The per-caller rate limit: a token bucket of `rate` requests per minute, bursts up to that many. `RateLimiter`
counts in this process; `RedisRateLimiter` keeps the buckets in Redis so every worker draws on one budget and, when
Redis does not answer, counts in this process with one warning (never an error). Both answer `Limiter.take`."""

from __future__ import annotations

import threading
import time
from typing import Protocol

import redis

from bot.core.redis_client import REDIS_ERRORS, Breaker


class Limiter(Protocol):
    def take(self, ident: str) -> float:
        """0 when the request may go ahead, else the seconds to wait."""
        ...


class RateLimiter:
    """Token buckets keyed by caller, in this process; thread-safe. `rate_per_minute == 0` disables it."""

    def __init__(self, rate_per_minute: int, clock=time.monotonic):
        self.capacity = float(rate_per_minute)
        self.per_second = rate_per_minute / 60.0
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # ident -> (tokens, last refill time)
        self._lock = threading.Lock()

    def take(self, ident: str) -> float:
        """0 when the request may go ahead, else the seconds to wait."""
        if self.capacity <= 0:
            return 0.0
        now = self.clock()
        with self._lock:
            tokens, last = self._buckets.get(ident, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - last) * self.per_second)
            if tokens >= 1.0:
                self._buckets[ident] = (tokens - 1.0, now)
                return 0.0
            self._buckets[ident] = (tokens, now)
            if len(self._buckets) > 100_000:  # forget idle callers rather than grow without bound
                self._buckets = {k: v for k, v in self._buckets.items() if now - v[1] < 120}
            return (1.0 - tokens) / self.per_second


#: the same token bucket as `RateLimiter`, atomic in Redis; the clock is Redis's own (TIME), so workers on
#: machines whose clocks differ still agree. Returns the seconds to wait as a string (Lua numbers would be
#: cut to integers on the way out).
_BUCKET_LUA = """
local capacity = tonumber(ARGV[1])
local per_second = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local held = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(held[1])
local at = tonumber(held[2])
if tokens == nil or at == nil then
  tokens = capacity
  at = now
end
tokens = math.min(capacity, tokens + math.max(0, now - at) * per_second)
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
else
  wait = (1 - tokens) / per_second
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(capacity / per_second * 1000) + 1000)
return tostring(wait)
"""


class RedisRateLimiter:
    """Token buckets in Redis, shared by every worker (`<prefix>rate:<caller>` hashes that expire once full).

    While Redis does not answer, `fallback` (a `RateLimiter`) counts in this process.
    """

    def __init__(
        self,
        client: redis.Redis,
        key_prefix: str,
        rate_per_minute: int,
        fallback: RateLimiter | None = None,
        breaker: Breaker | None = None,
    ):
        self.capacity = float(rate_per_minute)
        self.per_second = rate_per_minute / 60.0
        self.key_prefix = key_prefix
        self.client = client
        self.fallback = fallback or RateLimiter(rate_per_minute)
        self.breaker = breaker or Breaker("the rate limit", "each worker counts on its own")
        self._bucket = client.register_script(_BUCKET_LUA)

    @property
    def shared(self) -> bool:
        """False while Redis is down and this process counts on its own."""
        return not self.breaker.down

    def take(self, ident: str) -> float:
        if self.capacity <= 0:
            return 0.0
        if self.breaker.available():
            try:
                wait = float(self._bucket(keys=[self.key_prefix + ident], args=[self.capacity, self.per_second]))
            except REDIS_ERRORS as err:
                self.breaker.failed(err)
            else:
                self.breaker.succeeded()
                return wait
        return self.fallback.take(ident)
