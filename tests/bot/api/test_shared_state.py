"""Redis-backed shared state on the machine's Redis (skipped when none answers): one rate-limit budget for
two limiters as two workers would hold them, the fall-back when Redis is away, and a re-index notice
reaching a running app."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid

import pytest
import redis
from fastapi.testclient import TestClient

from bot.api.app import create_app
from bot.api.ratelimit import RateLimiter, RedisRateLimiter
from bot.api.settings import ApiSettings
from bot.core.redis_client import Breaker, RedisConfig, connect, publish_reindex
from bot.core.settings import Settings

REDIS_URL = os.environ.get("GPU_ADVISOR_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@pytest.fixture
def config() -> RedisConfig:
    cfg = RedisConfig(REDIS_URL, prefix=f"gpu-advisor-test-{uuid.uuid4().hex[:12]}:")
    client = connect(cfg)
    try:
        client.ping()
    except (redis.exceptions.RedisError, OSError) as err:
        pytest.skip(
            f"Redis is not reachable at {REDIS_URL} ({type(err).__name__}); in-process limits are tested instead"
        )
    yield cfg
    for key in client.scan_iter(cfg.prefix + "*"):
        client.delete(key)
    client.close()


def _nothing_listens() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"redis://127.0.0.1:{port}/0"


def test_two_workers_draw_on_one_budget(config):
    workers = [RedisRateLimiter(connect(config), config.key("rate", ""), 30) for _ in range(2)]
    results: list[float] = []
    lock = threading.Lock()

    def burst(limiter: RedisRateLimiter) -> None:
        got = [limiter.take("key:team") for _ in range(20)]
        with lock:
            results.extend(got)

    threads = [threading.Thread(target=burst, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    allowed = sum(1 for wait in results if wait == 0)
    assert allowed == 30  # 40 requests, one budget of 30 (atomic: no two workers spend the same token)
    assert all(1.0 < wait <= 2.0 for wait in results if wait)  # one token every 2 s at 30/min
    assert workers[0].take("key:other") == 0  # each caller has its own bucket


def test_a_redis_outage_falls_back_to_this_process_with_one_warning(caplog):
    down = RedisConfig(_nothing_listens())
    now = [0.0]
    limiter = RedisRateLimiter(
        connect(down),
        down.key("rate", ""),
        3,
        breaker=Breaker("the rate limit", "each worker counts on its own", clock=lambda: now[0]),
    )
    with caplog.at_level(logging.WARNING, logger="gpu_advisor.redis"):
        waits = [limiter.take("key:team") for _ in range(4)]
    assert waits[:3] == [0, 0, 0] and waits[3] > 0  # the per-process bucket still limits
    assert not limiter.shared
    warnings = [r.getMessage() for r in caplog.records if "unreachable" in r.getMessage()]
    assert len(warnings) == 1  # once per outage, not once per request
    assert warnings[0].startswith("Redis unreachable for the rate limit (ConnectionError")
    assert warnings[0].endswith("each worker counts on its own until it answers again")


def test_a_reindex_notice_reloads_a_running_app(config, advisor):
    settings = Settings(redis_url=config.url, redis_prefix=config.prefix)
    app = create_app(settings=settings, advisor=advisor, api_settings=ApiSettings(rate_limit_per_minute=0))
    with TestClient(app, base_url="http://127.0.0.1") as client:
        ready = client.get("/readyz").json()
        assert (ready["redis"], ready["rate_limit"], ready["chroma"]) == ("ok", "shared", "embedded")
        listener = app.state.cluster.listener
        deadline = time.monotonic() + 10
        while not listener.subscribed.is_set() and time.monotonic() < deadline:
            time.sleep(0.02)
        before = advisor.toolbox.retriever
        assert publish_reindex(config, {"changed": 3, "pid": 1, "host": "test"}) == 1
        while listener.reloads == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert listener.reloads == 1
        assert advisor.toolbox.retriever is not before and len(advisor.toolbox.retriever) == len(before)
        assert client.post("/v1/tools/search_knowledge", json={"query": "H20 显存", "k": 2}).status_code == 200


def test_publishing_without_redis_says_so():
    assert publish_reindex(RedisConfig(_nothing_listens()), {"changed": 1}) is None


def test_readyz_without_redis_says_off(client):
    body = client.get("/readyz").json()
    assert (body["redis"], body["rate_limit"], body["store_backend"]) == ("off", "per-process", "sqlite")


def test_in_process_limiter_is_the_default(client):
    assert isinstance(client.app.state.limiter, RateLimiter)
