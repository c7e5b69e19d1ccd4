"""Fixtures for the HTTP API: a tmp data dir and store per test, one knowledge index per session (tests/conftest.py),
apps built with explicit settings, a real uvicorn server on loopback, and a browser-style SSE parser."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from loopback import ServerThread

from bot.answer.advisor import Advisor
from bot.api.app import create_app
from bot.api.settings import ApiSettings

KEY = "k-test-0123456789abcdef0123"  # a static key long enough to be accepted


@pytest.fixture(autouse=True)
def env(env: Path) -> Path:
    """Every test here runs in the hermetic environment of tests/conftest.py (with `advisor` and `shared_advisor`)."""
    return env


@pytest.fixture
def make_client(advisor: Advisor) -> Iterator[Callable[..., TestClient]]:
    """`make_client(rate_limit_per_minute=0, api_keys=KEY, ...)` -> a started TestClient."""
    with contextlib.ExitStack() as stack:

        def make(raise_server_exceptions: bool = True, use_advisor: Advisor | None = None, **api) -> TestClient:
            api.setdefault("rate_limit_per_minute", 0)
            app = create_app(advisor=use_advisor or advisor, api_settings=ApiSettings(**api))
            return stack.enter_context(
                TestClient(app, raise_server_exceptions=raise_server_exceptions, base_url="http://127.0.0.1")
            )

        yield make


@pytest.fixture
def client(make_client) -> TestClient:
    return make_client()


@pytest.fixture
def serve(advisor: Advisor) -> Iterator[Callable[..., str]]:
    """`serve(**api_settings)` -> base URL of a real uvicorn server on 127.0.0.1 (stopped at the end)."""
    servers: list[ServerThread] = []

    def start(**api) -> str:
        api.setdefault("rate_limit_per_minute", 0)
        servers.append(ServerThread(create_app(advisor=advisor, api_settings=ApiSettings(**api)), ready_path="/readyz"))
        return servers[-1].base

    yield start
    for server in servers:
        server.stop()


def parse_sse(text: str) -> list[tuple[str, str]]:
    """Events as a browser's EventSource sees them: blocks split on blank lines, `data:` lines joined,
    comment lines (starting with ':') ignored; returns (event name, data) pairs."""
    events = []
    for block in re.split(r"\r\n\r\n|\n\n|\r\r", text):
        name, data = "message", []
        for line in re.split(r"\r\n|\n|\r", block):
            if not line or line.startswith(":"):
                continue
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "data":
                data.append(value)
            elif field == "event":
                name = value
        if data:
            events.append((name, "\n".join(data)))
    return events


@pytest.fixture
def sse() -> Callable[[str], list[tuple[str, str]]]:
    return parse_sse


@pytest.fixture
def sse_json() -> Callable[[str], list[tuple[str, object]]]:
    def parse(text: str) -> list[tuple[str, object]]:
        return [(name, data if data == "[DONE]" else json.loads(data)) for name, data in parse_sse(text)]

    return parse
