"""The other ways a Slack reply goes out: no streaming in the workspace, a stream that breaks, a failed
answer, a DM and the agent thread's suggested prompts, events that are not questions, and Socket Mode."""

from __future__ import annotations

import asyncio
import logging
import threading
import time


def _done(fake_slack, channel, thread):
    return [m for m in fake_slack.replies(channel, thread) if not m.streaming and (m.blocks or m.text)]


def _answered(fake_slack, channel, thread):
    """Replies that carry a finished answer (the 👍/👎 buttons come last)."""
    return [
        m
        for m in fake_slack.replies(channel, thread)
        if not m.streaming and any(b["type"] == "context_actions" for b in m.blocks)
    ]


def test_without_streaming_the_reply_is_posted_once_then_updated_with_the_answer(slack_server, fake_slack, kit):
    fake_slack.streaming = False
    ts = "1764460900.000100"
    slack_server.post_event(kit.event_envelope(kit.mention("70B 全参训练，单卡 A100 够吗？", ts)))
    msg = kit.wait_until(lambda: _answered(fake_slack, kit.CHANNEL, ts))[0]
    assert len(fake_slack.replies(kit.CHANNEL, ts)) == 1 and not msg.streamed
    assert len(fake_slack.called("chat.postMessage")) == 1 and msg.updates >= 1
    assert "放不下" in fake_slack.called("chat.update")[-1].args["text"]  # the last update is the answer
    assert "正在" in fake_slack.called("chat.postMessage")[0].args["text"]  # the progress line came first
    kinds = [b["type"] for b in msg.blocks]
    assert kinds == ["markdown", "markdown", "actions", "context_actions"]
    assert "放不下" in msg.blocks[0]["text"] and "| 权重 |" in msg.blocks[0]["text"]
    assert msg.text and "放不下" in msg.text  # the notification text


def test_a_stream_that_breaks_midway_is_finished_by_updating_the_same_message(slack_server, fake_slack, kit):
    fake_slack.fail_append_after = 1
    ts = "1764460900.000200"
    slack_server.post_event(kit.event_envelope(kit.mention("70B 全参训练，单卡 A100 够吗？", ts)))
    msg = kit.wait_until(lambda: _answered(fake_slack, kit.CHANNEL, ts))[0]
    assert len(fake_slack.replies(kit.CHANNEL, ts)) == 1 and msg.streamed and msg.updates == 1
    assert "放不下" in msg.blocks[0]["text"] and msg.blocks[-1]["type"] == "context_actions"


def test_a_failed_answer_becomes_an_apology_in_the_thread_without_the_internal_error(
    slack_server, fake_slack, kit, held
):
    held.fail = True
    ts = "1764460900.000300"
    slack_server.post_event(kit.event_envelope(kit.mention("H100 和 H800 有什么区别？", ts)))
    msg = kit.wait_until(lambda: _done(fake_slack, kit.CHANNEL, ts))[0]
    said = msg.text + "".join(b.get("text", "") for b in msg.blocks)
    assert "抱歉" in said and "请求编号" in said
    assert "secret detail" not in said and "refused" not in said


def test_a_dm_is_answered_in_its_thread_and_an_agent_thread_gets_prompts_in_the_users_language(
    slack_server, fake_slack, kit
):
    zh_user = "U0ZHUSER01"
    started = {
        "type": "assistant_thread_started",
        "event_ts": "1764460900.000401",
        "assistant_thread": {
            "user_id": zh_user,
            "channel_id": kit.DM,
            "thread_ts": "1764460900.000400",
            "context": {"channel_id": None, "team_id": kit.TEAM, "enterprise_id": None},
        },
    }
    assert slack_server.post_event(kit.event_envelope(started)).status_code == 200
    call = kit.wait_until(lambda: fake_slack.called("assistant.threads.setSuggestedPrompts"))[0]
    assert call.args["thread_ts"] == "1764460900.000400" and call.args["channel_id"] == kit.DM
    assert len(call.args["prompts"]) == 3 and all(
        p["message"] and "卡" in "".join(q["message"] for q in call.args["prompts"]) for p in call.args["prompts"]
    )
    assert fake_slack.called("users.info")[0].args["user"] == zh_user

    dm = {
        "type": "message",
        "channel_type": "im",
        "channel": kit.DM,
        "user": zh_user,
        "text": "H20 显存多大？",
        "ts": "1764460900.000500",
        "thread_ts": "1764460900.000400",
        "team": kit.TEAM,
    }
    slack_server.post_event(kit.event_envelope(dm))
    msg = kit.wait_until(lambda: _done(fake_slack, kit.DM, "1764460900.000400"))[0]
    assert "H20" in msg.text and "96" in msg.text


def test_events_that_are_not_questions_get_a_200_and_no_reply(slack_server, fake_slack, kit):
    ts = "1764460900.000600"
    not_questions = [
        {
            "type": "message",
            "channel_type": "channel",
            "channel": kit.CHANNEL,
            "user": kit.USER,
            "text": "H100 多少钱？",
            "ts": ts,
        },  # a channel message without a mention
        {
            "type": "message",
            "subtype": "message_changed",
            "channel_type": "im",
            "channel": kit.DM,
            "ts": ts,
            "message": {"text": "edited"},
        },
        {
            "type": "message",
            "channel_type": "im",
            "channel": kit.DM,
            "bot_id": "B0OTHER001",
            "user": "U0OTHERBOT",
            "text": "I am a bot",
            "ts": ts,
        },
        {"type": "reaction_added", "user": kit.USER, "reaction": "eyes", "item": {"type": "message"}, "event_ts": ts},
    ]
    for event in not_questions:
        r = slack_server.post_event(kit.event_envelope(event))
        assert r.status_code in (200, 404)
        if r.status_code == 404:  # no listener for it: Slack is told a retry would not help
            assert r.headers.get("x-slack-no-retry") == "1"
    time.sleep(1.0)
    assert [c.method for c in fake_slack.calls] == []


def test_no_secret_reaches_the_logs(slack_server, fake_slack, kit, caplog):
    caplog.set_level(logging.DEBUG)
    fake_slack.fail_append_after = 0  # exercise the error paths too
    ts = "1764460900.000700"
    slack_server.post_event(kit.event_envelope(kit.mention("70B 全参训练，单卡 A100 够吗？", ts)))
    slack_server.post_event(kit.event_envelope(kit.mention("H20 显存多大？", ts + "1")), secret="wrong-secret-000000")
    kit.wait_until(lambda: _done(fake_slack, kit.CHANNEL, ts))
    logged = "\n".join(r.getMessage() for r in caplog.records) + caplog.text
    for secret in (kit.BOT_TOKEN, kit.SIGNING_SECRET, kit.APP_TOKEN):
        assert secret not in logged


def test_socket_mode_receives_envelopes_acknowledges_them_and_answers(advisor, fake_slack, kit):
    from bot.channels.delivery import Delivery
    from bot.channels.slack.socket import run_socket_mode

    settings = kit.slack_settings(fake_slack, app_token=kit.APP_TOKEN)
    delivery = Delivery.from_settings(advisor)
    loop = asyncio.new_event_loop()
    stop, ready = asyncio.Event(), asyncio.Event()
    runner = threading.Thread(
        target=loop.run_until_complete, args=(run_socket_mode(settings, advisor, delivery, stop, ready),), daemon=True
    )
    runner.start()
    try:
        kit.wait_until(lambda: fake_slack.connected)
        ts = "1764460900.000800"
        envelope = {
            "envelope_id": "env-1",
            "type": "events_api",
            "accepts_response_payload": False,
            "retry_attempt": 0,
            "retry_reason": "",
            "payload": kit.event_envelope(kit.mention("70B 全参训练，单卡 A100 够吗？", ts), event_id="EvSOCK1"),
        }
        fake_slack.push(envelope)
        fake_slack.push({**envelope, "envelope_id": "env-2", "retry_attempt": 1, "retry_reason": "timeout"})
        kit.wait_until(lambda: {a.get("envelope_id") for a in fake_slack.acks} >= {"env-1", "env-2"})
        msg = kit.wait_until(lambda: _done(fake_slack, kit.CHANNEL, ts))[0]
        assert "放不下" in msg.text
        time.sleep(0.5)
        assert len(fake_slack.replies(kit.CHANNEL, ts)) == 1  # the redelivered envelope was not answered again
        assert fake_slack.called("apps.connections.open")[0].token == kit.APP_TOKEN
    finally:
        loop.call_soon_threadsafe(stop.set)
        runner.join(15)
        delivery.close()


def test_socket_mode_with_a_refused_token_or_no_slack_says_so_instead_of_reconnecting_forever(advisor, fake_slack, kit):
    import pytest

    from bot.channels.delivery import Delivery
    from bot.channels.slack.socket import SocketModeError, run_socket_mode

    delivery = Delivery.from_settings(advisor)
    try:
        for settings, said in (
            (
                kit.slack_settings(fake_slack, app_token="xapp-1-A111-revoked"),
                "Slack refused SLACK_APP_TOKEN (invalid_auth)",
            ),
            (
                kit.SlackSettings(bot_token=kit.BOT_TOKEN, app_token=kit.APP_TOKEN, api_url="http://127.0.0.1:9/api/"),
                "Slack could not be reached at http://127.0.0.1:9/api/",
            ),
        ):
            with pytest.raises(SocketModeError, match=said.replace("(", r"\(").replace(")", r"\)")):
                asyncio.run(asyncio.wait_for(run_socket_mode(settings, advisor, delivery, asyncio.Event()), 20))
        assert [c.method for c in fake_slack.calls] == ["apps.connections.open"]  # asked once, then gave up
        assert fake_slack.connected == 0
    finally:
        delivery.close()
