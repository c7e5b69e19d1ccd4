"""Attacks against a real server on loopback: uvicorn with the limits `gpu-advisor serve` uses
(`bot.api.server`), the offline advisor with its knowledge index, a store per test (SQLite, or a
throw-away PostgreSQL database where the attack needs one)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from loopback import ServerThread

from bot.answer.advisor import Advisor
from bot.api.app import create_app
from bot.api.server import guarded_protocol, uvicorn_options
from bot.api.settings import ApiSettings


@pytest.fixture(autouse=True)
def env(env: Path) -> Path:
    """Every attack runs in the hermetic environment of tests/conftest.py (with `advisor` and `shared_advisor`)."""
    return env


@pytest.fixture
def serve(advisor: Advisor) -> Iterator[Callable[..., str]]:
    """`serve(advisor=None, **api_settings)` -> the base URL of a real server on 127.0.0.1, served the
    way `gpu-advisor serve` serves (guarded protocol, keep-alive and concurrency limits)."""
    servers: list[ServerThread] = []

    def start(use_advisor: Advisor | None = None, **api) -> str:
        api.setdefault("rate_limit_per_minute", 0)
        conf = ApiSettings(**api)
        app = create_app(advisor=use_advisor or advisor, api_settings=conf)
        servers.append(
            ServerThread(app, ready_path="/healthz", http=guarded_protocol(conf), ws="auto", **uvicorn_options(conf))
        )
        return servers[-1].base

    yield start
    for server in servers:
        server.stop()
