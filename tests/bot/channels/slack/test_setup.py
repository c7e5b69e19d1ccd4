"""Setting the app up: Slack's URL check, the route switched off without its secrets, a full queue,
and `gpu-advisor slack socket` without its tokens."""

from __future__ import annotations

import json

import httpx
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from bot.api.app import create_app
from bot.api.settings import ApiSettings
from bot.channels.slack.settings import SlackSettings
from bot.cli import app as cli


def test_slacks_url_verification_challenge_is_answered(slack_server, kit, fake_slack):
    body = {
        "token": "legacy",
        "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
        "type": "url_verification",
    }
    r = slack_server.post_event(body)
    assert r.status_code == 200 and r.json() == {"challenge": body["challenge"]}
    assert fake_slack.calls == []


def test_without_both_secrets_the_route_is_off_with_a_clear_message(advisor, kit):
    settings = SlackSettings(bot_token=kit.BOT_TOKEN)  # no signing secret
    with TestClient(
        create_app(advisor=advisor, api_settings=ApiSettings(rate_limit_per_minute=0), slack_settings=settings),
        base_url="http://127.0.0.1",
    ) as client:
        body = json.dumps({"type": "url_verification", "challenge": "x"}).encode()
        r = client.post("/slack/events", content=body, headers=kit.sign(body))
    assert r.status_code == 404 and "SLACK_SIGNING_SECRET" in r.json()["error"]["message"]


def test_a_full_queue_tells_the_user_to_ask_again_in_the_thread(monkeypatch, advisor, held, fake_slack, kit):
    monkeypatch.setenv("CHANNEL_WORKERS", "1")
    monkeypatch.setenv("CHANNEL_QUEUE", "0")
    held.hold()
    with TestClient(
        create_app(
            advisor=advisor,
            api_settings=ApiSettings(rate_limit_per_minute=0),
            slack_settings=kit.slack_settings(fake_slack),
        ),
        base_url="http://127.0.0.1",
    ) as client:

        def mention(text, ts):
            body = json.dumps(kit.event_envelope(kit.mention(text, ts))).encode()
            return client.post(
                "/slack/events", content=body, headers={"Content-Type": "application/json", **kit.sign(body)}
            )

        assert mention("70B 全参训练，单卡 A100 够吗？", "1764461000.000100").status_code == 200
        assert held.started.acquire(timeout=30)  # the only worker is busy with the first question
        assert mention("H20 显存多大？", "1764461000.000200").status_code == 200
        busy = kit.wait_until(lambda: fake_slack.replies(kit.CHANNEL, "1764461000.000200"))[0]
        held.release()
        kit.wait_until(
            lambda: [m for m in fake_slack.replies(kit.CHANNEL, "1764461000.000100") if m.blocks and not m.streaming]
        )
    said = busy.text + "".join(b.get("text", "") for b in busy.blocks)
    assert "稍后" in said  # "busy, ask again" in the asker's language
    assert not advisor.store.exists(f"slack:{kit.TEAM}:{kit.CHANNEL}:1764461000.000200")


def test_socket_command_without_tokens_says_what_is_missing(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    for name in ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    result = CliRunner().invoke(cli, ["slack", "socket"])
    assert result.exit_code == 2
    assert "SLACK_APP_TOKEN" in result.output and "Traceback" not in result.output
    bad = CliRunner().invoke(cli, ["slack", "socket"], env={"SLACK_API_URL": "slack.com/api"})
    assert bad.exit_code == 2 and "SLACK_API_URL" in bad.output


def test_the_fake_refuses_a_wrong_token_like_slack(fake_slack):
    r = httpx.post(
        fake_slack.api_url + "chat.postMessage",
        headers={"Authorization": "Bearer xoxb-wrong"},
        json={"channel": "C1", "text": "hi"},
    )
    assert r.status_code == 200 and r.json() == {"ok": False, "error": "invalid_auth"}


def _manifests() -> list[dict]:
    import re
    from pathlib import Path

    import yaml

    text = (Path(__file__).parents[4] / "docs" / "slack.md").read_text(encoding="utf-8")
    return [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", text, re.S)]


def test_every_event_the_manifest_subscribes_to_is_acknowledged_with_200(slack_server, kit):
    http, socket = _manifests()
    assert http["settings"]["event_subscriptions"]["request_url"].endswith("/slack/events")
    assert http["settings"]["interactivity"]["request_url"].endswith("/slack/events")
    assert socket["settings"]["socket_mode_enabled"] is True
    events = http["settings"]["event_subscriptions"]["bot_events"]
    assert events == socket["settings"]["event_subscriptions"]["bot_events"]
    for i, name in enumerate(events):
        kind, _, where = name.partition(".")
        event = {
            "type": kind,
            "user": kit.USER,
            "ts": f"1764462000.00{i:04d}",
            "channel": kit.DM,
            "text": "hi",
            "assistant_thread": {
                "user_id": kit.USER,
                "channel_id": kit.DM,
                "thread_ts": "1764462000.000001",
                "context": {},
            },
        }
        if where:
            event["channel_type"] = where
        r = slack_server.post_event(kit.event_envelope(event))
        assert r.status_code == 200, name
    scopes = set(http["oauth_config"]["scopes"]["bot"])
    assert {"app_mentions:read", "im:history", "chat:write", "assistant:write", "users:read"} <= scopes
