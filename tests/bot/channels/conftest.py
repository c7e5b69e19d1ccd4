"""Fixtures for the channels: one offline advisor (and knowledge index) per session and a fresh store per
test (tests/conftest.py), a recording sink, and a planner wrapper that lets a test hold or break an answer on purpose."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from bot.answer.advisor import Advisor

sys.path.insert(0, str(Path(__file__).parent))  # fake_wecom


@pytest.fixture(autouse=True)
def env(env: Path) -> Path:
    """Every test here runs in the hermetic environment of tests/conftest.py (with `advisor`, `shared_advisor`
    and its `shared_folder`)."""
    return env


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


# ---- WeCom: the bot under uvicorn, a fake WeCom, callbacks built as WeCom builds them --------------

from fake_wecom import AGENT_ID, AIBOT_AES_KEY, AIBOT_TOKEN, APP_AES_KEY, APP_TOKEN, CORP_ID  # noqa: E402


@pytest.fixture
def fake_wecom():
    from fake_wecom import FakeWeCom

    fake = FakeWeCom().start()
    yield fake
    fake.stop()


@pytest.fixture
def bot_server(advisor, monkeypatch, fake_wecom):
    """`bot_server(**env)` -> base URL of the API (with the WeCom routes on) under uvicorn on loopback."""
    from fake_wecom import ServerThread

    from bot.api.app import create_app
    from bot.api.settings import ApiSettings

    servers = []

    def start(**env) -> str:
        values = {
            "WECOM_AIBOT_TOKEN": AIBOT_TOKEN,
            "WECOM_AIBOT_AES_KEY": AIBOT_AES_KEY,
            "WECOM_CORP_ID": CORP_ID,
            "WECOM_AGENT_ID": AGENT_ID,
            "WECOM_APP_SECRET": fake_wecom.CORP_SECRET,
            "WECOM_APP_TOKEN": APP_TOKEN,
            "WECOM_APP_AES_KEY": APP_AES_KEY,
            "WECOM_API_BASE": fake_wecom.base,
            "CHANNEL_WORKERS": "2",
            "CHANNEL_QUEUE": "64",
        }
        values.update(env)
        for k, v in values.items():
            monkeypatch.setenv(k, str(v))
        app = create_app(advisor=advisor, api_settings=ApiSettings(rate_limit_per_minute=0))
        server = ServerThread(app, ready_path="/readyz")
        servers.append(server)
        return server.base

    yield start
    for s in servers:
        s.stop()


@pytest.fixture
def aibot_maker():
    from fake_wecom import CallbackMaker

    return CallbackMaker(AIBOT_TOKEN, AIBOT_AES_KEY, "")


@pytest.fixture
def app_maker():
    from fake_wecom import CallbackMaker

    return CallbackMaker(APP_TOKEN, APP_AES_KEY, CORP_ID)


@pytest.fixture(scope="session")
def fit_7b_h800() -> str:
    """The per-GPU figure the answer to "8卡H800全参微调7B需要多少显存？" must carry, from the calculator itself
    (not pinned: the memory model may be refined; the channel must deliver whatever it computes)."""
    import tools

    out = tools.call("fit_training", {"model": "7B", "gpu": "H800", "method": "full", "n_gpus": 8})
    return f"{out['per_gpu_gb']:.1f} GB"
