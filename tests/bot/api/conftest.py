"""Fixtures for the HTTP API: a tmp data dir and store per test, one knowledge index per session,
apps built with explicit settings, a real uvicorn server on loopback, and a browser-style SSE parser."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from fastapi.testclient import TestClient

from bot.advisor import Advisor
from bot.api.app import create_app
from bot.api.settings import ApiSettings
from bot.settings import Settings
from bot.store import Store

_ENV = ("GPU_ADVISOR_API_KEYS", "GPU_ADVISOR_RATE_LIMIT", "GPU_ADVISOR_MAX_BODY_BYTES", "GPU_ADVISOR_CORS_ORIGINS",
        "GPU_ADVISOR_SSE_KEEPALIVE_S", "GPU_ADVISOR_LLM_BASE_URL", "GPU_ADVISOR_LLM_MODEL", "GPU_ADVISOR_LLM_API_KEY",
        "OPENAI_API_KEY", "CHROMA_HOST", "CHROMA_PORT", "EMBEDDINGS_MODEL", "EMBEDDINGS_BASE_URL", "EMBEDDINGS_API_KEY",
        "REDIS_URL", "GPU_ADVISOR_REDIS_PREFIX")

KEY = "k-test-0123456789abcdef0123"  # a static key long enough to be accepted


@pytest.fixture(autouse=True)
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Nothing writes to $HOME: data dir and store live in tmp_path; no key, LLM or Chroma server."""
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # no stray .env file
    monkeypatch.setenv("GPU_ADVISOR_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path}/store.sqlite3")
    return tmp_path


@pytest.fixture(scope="session")
def shared_advisor(tmp_path_factory) -> Advisor:
    """The offline advisor with its knowledge index, built once (the index takes seconds)."""
    folder = tmp_path_factory.mktemp("advisor")
    with pytest.MonkeyPatch.context() as mp:
        for name in _ENV:
            mp.delenv(name, raising=False)
        mp.setenv("GPU_ADVISOR_DATA_DIR", str(folder / "data"))
        settings = Settings(database_url=f"sqlite:///{folder}/shared.sqlite3")
        return Advisor.from_settings(settings)


@pytest.fixture
def advisor(shared_advisor: Advisor, env: Path) -> Advisor:
    """The shared index and planner with this test's own store (the env's DATABASE_URL)."""
    return Advisor(store=Store(Settings().store_url), toolbox=shared_advisor.toolbox, offline=shared_advisor.offline)


@pytest.fixture
def make_client(advisor: Advisor) -> Iterator[Callable[..., TestClient]]:
    """`make_client(rate_limit_per_minute=0, api_keys=KEY, ...)` -> a started TestClient."""
    with contextlib.ExitStack() as stack:

        def make(raise_server_exceptions: bool = True, use_advisor: Advisor | None = None, **api) -> TestClient:
            api.setdefault("rate_limit_per_minute", 0)
            app = create_app(advisor=use_advisor or advisor, api_settings=ApiSettings(**api))
            return stack.enter_context(TestClient(app, raise_server_exceptions=raise_server_exceptions))

        yield make


@pytest.fixture
def client(make_client) -> TestClient:
    return make_client()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def serve(advisor: Advisor) -> Iterator[Callable[..., str]]:
    """`serve(**api_settings)` -> base URL of a real uvicorn server on 127.0.0.1 (stopped at the end)."""
    servers: list[tuple[uvicorn.Server, threading.Thread]] = []

    def start(**api) -> str:
        api.setdefault("rate_limit_per_minute", 0)
        port = free_port()
        app = create_app(advisor=advisor, api_settings=ApiSettings(**api))
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        servers.append((server, thread))
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(base + "/readyz", timeout=2).status_code == 200:
                    return base
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the test server did not become ready")
            time.sleep(0.05)

    yield start
    for server, thread in servers:
        server.should_exit = True
        thread.join(timeout=10)


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
