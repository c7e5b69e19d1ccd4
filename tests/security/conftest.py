"""Attacks against a real server on loopback: uvicorn with the limits `gpu-advisor serve` uses
(`bot.api.server`), the offline advisor with its knowledge index, a store per test (SQLite, or a
throw-away PostgreSQL database where the attack needs one)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from loopback import ServerThread

from bot.advisor import Advisor
from bot.api.app import create_app
from bot.api.server import guarded_protocol, uvicorn_options
from bot.api.settings import ApiSettings
from bot.settings import Settings
from bot.store import Store

_ENV = ("GPU_ADVISOR_API_KEYS", "GPU_ADVISOR_RATE_LIMIT", "GPU_ADVISOR_MAX_BODY_BYTES", "GPU_ADVISOR_CORS_ORIGINS",
        "GPU_ADVISOR_LLM_BASE_URL", "GPU_ADVISOR_LLM_MODEL", "GPU_ADVISOR_LLM_API_KEY", "OPENAI_API_KEY",
        "CHROMA_HOST", "CHROMA_PORT", "EMBEDDINGS_MODEL", "EMBEDDINGS_BASE_URL", "EMBEDDINGS_API_KEY")


@pytest.fixture(autouse=True)
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GPU_ADVISOR_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path}/store.sqlite3")
    return tmp_path


@pytest.fixture(scope="session")
def shared_advisor(tmp_path_factory) -> Advisor:
    folder = tmp_path_factory.mktemp("security")
    with pytest.MonkeyPatch.context() as mp:
        for name in _ENV:
            mp.delenv(name, raising=False)
        mp.setenv("GPU_ADVISOR_DATA_DIR", str(folder / "data"))
        return Advisor.from_settings(Settings(database_url=f"sqlite:///{folder}/shared.sqlite3"))


@pytest.fixture
def advisor(shared_advisor: Advisor, env: Path) -> Advisor:
    """The shared index and planner with this test's own store."""
    return Advisor(store=Store(Settings().store_url), toolbox=shared_advisor.toolbox, offline=shared_advisor.offline)


@pytest.fixture
def serve(advisor: Advisor) -> Iterator[Callable[..., str]]:
    """`serve(advisor=None, **api_settings)` -> the base URL of a real server on 127.0.0.1, served the
    way `gpu-advisor serve` serves (guarded protocol, keep-alive and concurrency limits)."""
    servers: list[ServerThread] = []

    def start(use_advisor: Advisor | None = None, **api) -> str:
        api.setdefault("rate_limit_per_minute", 0)
        conf = ApiSettings(**api)
        app = create_app(advisor=use_advisor or advisor, api_settings=conf)
        servers.append(ServerThread(app, ready_path="/healthz", http=guarded_protocol(conf), ws="auto",
                                    **uvicorn_options(conf)))
        return servers[-1].base

    yield start
    for server in servers:
        server.stop()
