"""Slack on loopback: the fake Slack (tests/slack_fake.py), a real uvicorn server running the app, and requests
signed the way Slack signs them."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import httpx
import pytest
import uvicorn
from loopback import free_port
from slack_fake import (
    APP_TOKEN,
    BOT_TOKEN,
    BOT_USER,
    CHANNEL,
    DM,
    SIGNING_SECRET,
    TEAM,
    USER,
    FakeSlack,
    SlackClient,
    event_envelope,
    mention,
    sign,
    wait_until,
)

from bot.answer.advisor import Advisor
from bot.api.app import create_app
from bot.api.settings import ApiSettings
from bot.channels.slack.settings import SlackSettings
from bot.cli.settings_table import every_name


@pytest.fixture(autouse=True)
def no_slack_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in every_name(SlackSettings):  # the names come from the class: a new Slack setting is cleared too
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def fake_slack() -> Iterator[FakeSlack]:
    fake = FakeSlack(locales={"U0ZHUSER01": "zh-CN"})
    yield fake
    fake.close()


def slack_settings(fake: FakeSlack, **extra) -> SlackSettings:
    return SlackSettings(bot_token=BOT_TOKEN, signing_secret=SIGNING_SECRET, api_url=fake.api_url, **extra)


@pytest.fixture
def slack_server(advisor: Advisor, fake_slack: FakeSlack) -> Iterator[SlackClient]:
    """A real uvicorn server with the Slack app on, its Web API pointed at the fake."""
    port = free_port()
    app = create_app(
        advisor=advisor, api_settings=ApiSettings(rate_limit_per_minute=0), slack_settings=slack_settings(fake_slack)
    )
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    wait_until(lambda: _ready(base), timeout=30)
    client = SlackClient(base)
    yield client
    client.http.close()
    server.should_exit = True
    thread.join(timeout=15)


def _ready(base: str) -> bool:
    try:
        return httpx.get(base + "/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.fixture
def kit():
    """The helpers and ids a test uses (conftest modules are not importable under --import-mode=importlib)."""
    import types

    return types.SimpleNamespace(
        BOT_TOKEN=BOT_TOKEN,
        APP_TOKEN=APP_TOKEN,
        SIGNING_SECRET=SIGNING_SECRET,
        TEAM=TEAM,
        BOT_USER=BOT_USER,
        USER=USER,
        CHANNEL=CHANNEL,
        DM=DM,
        sign=sign,
        event_envelope=event_envelope,
        mention=mention,
        wait_until=wait_until,
        slack_settings=slack_settings,
        FakeSlack=FakeSlack,
        SlackSettings=SlackSettings,
    )
