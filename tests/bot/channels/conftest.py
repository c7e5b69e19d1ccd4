"""Fixtures for the channels: one offline advisor (and knowledge index) per session, a fresh store per
test, a recording sink, and a planner wrapper that lets a test hold or break an answer on purpose."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from bot.advisor import Advisor
from bot.settings import Settings
from bot.store import Store

_ENV = ("GPU_ADVISOR_LLM_BASE_URL", "GPU_ADVISOR_LLM_MODEL", "GPU_ADVISOR_LLM_API_KEY", "OPENAI_API_KEY", "CHROMA_HOST",
        "CHROMA_PORT", "EMBEDDINGS_MODEL", "EMBEDDINGS_BASE_URL", "EMBEDDINGS_API_KEY", "REDIS_URL", "CHANNEL_WORKERS",
        "CHANNEL_QUEUE", "CHANNEL_ANSWER_TIMEOUT_S", "CHANNEL_DEDUP_TTL_S", "GPU_ADVISOR_API_KEYS",
        "WECOM_AIBOT_TOKEN", "WECOM_AIBOT_AES_KEY", "WECOM_AIBOT_ID", "WECOM_AIBOT_SECRET", "WECOM_WS_URL",
        "WECOM_CORP_ID", "WECOM_AGENT_ID", "WECOM_APP_SECRET", "WECOM_APP_TOKEN", "WECOM_APP_AES_KEY",
        "WECOM_API_BASE", "WECOM_STREAM_WINDOW_S")


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
    folder = tmp_path_factory.mktemp("channels-advisor")
    with pytest.MonkeyPatch.context() as mp:
        for name in _ENV:
            mp.delenv(name, raising=False)
        mp.setenv("GPU_ADVISOR_DATA_DIR", str(folder / "data"))
        return Advisor.from_settings(Settings(database_url=f"sqlite:///{folder}/shared.sqlite3"))


@pytest.fixture
def advisor(shared_advisor: Advisor, env: Path) -> Advisor:
    """The shared index and offline planner with this test's own store."""
    return Advisor(store=Store(Settings().store_url), toolbox=shared_advisor.toolbox, offline=shared_advisor.offline)


class Held:
    """The real offline planner behind a gate: `hold()` makes answers wait, `release()` lets them go,
    `fail = True` makes the planner raise (an endpoint outage, as the advisor sees one)."""

    mode = "offline"

    def __init__(self, inner):
        self.inner = inner
        self.gate = threading.Event()
        self.gate.set()
        self.fail = False
        self.started = threading.Semaphore(0)

    def hold(self) -> None:
        self.gate.clear()

    def release(self) -> None:
        self.gate.set()

    def plan(self, *args, **kwargs):
        self.started.release()
        self.gate.wait(30)
        if self.fail:
            raise RuntimeError("upstream model endpoint refused the connection (secret detail)")
        return self.inner.plan(*args, **kwargs)


@pytest.fixture
def held(advisor: Advisor) -> Held:
    gate = Held(advisor.offline)
    advisor.offline = gate
    return gate


class RecordingSink:
    """What a user would see: progress notes, then one answer or one apology."""

    def __init__(self, refuse: bool = False):
        self.progress_notes: list[str] = []
        self.answers: list = []
        self.apologies: list[str] = []
        self.refuse = refuse
        self.done = threading.Event()

    def progress(self, text: str) -> None:
        self.progress_notes.append(text)

    def answer(self, answer) -> None:
        if self.refuse:
            raise ConnectionError("platform said 500")
        self.answers.append(answer)
        self.done.set()

    def apology(self, text: str) -> None:
        self.apologies.append(text)
        self.done.set()


@pytest.fixture
def sink_factory():
    return RecordingSink
