"""The Slack app behind a real server on loopback, Slack's Web API faked on loopback: what a user in the
workspace sees in the thread, and what Slack's delivery side gets back."""

from __future__ import annotations

import time


def test_a_mention_is_acknowledged_at_once_and_answered_by_one_streamed_reply_in_its_thread(
    slack_server, fake_slack, kit, advisor
):
    ts = "1764460800.000100"
    started = time.monotonic()
    r = slack_server.post_event(kit.event_envelope(kit.mention("70B 全参训练，单卡 A100 够吗？", ts)))
    ack_s = time.monotonic() - started
    assert r.status_code == 200 and ack_s < 3.0
    reply = kit.wait_until(lambda: [m for m in fake_slack.replies(kit.CHANNEL, ts) if not m.streaming])
    assert len(reply) == 1
    msg = reply[0]
    assert msg.streamed and msg.recipient == (kit.TEAM, kit.USER)  # chat.startStream with its recipient
    assert "放不下" in msg.text and "A100" in msg.text and "| 权重 |" in msg.text  # verdict and table, as Markdown
    assert msg.tasks and all(t["status"] == "complete" for t in msg.tasks.values())  # tool progress came first
    first_task = min(c.at for c in fake_slack.calls if c.method == "chat.startStream")
    assert "正在" in next(iter(msg.tasks.values()))["title"]
    assert first_task >= started
    kinds = [b["type"] for b in msg.blocks]
    assert kinds == ["markdown", "actions", "context_actions"]
    assert "[1] [" in msg.blocks[0]["text"] and "](https://" in msg.blocks[0]["text"]  # numbered source links
    assert [e["value"] for e in msg.blocks[1]["elements"]][1] == "换成 H800 呢？"
    # one conversation per thread, readable like any other
    turns = advisor.store.turns(f"slack:{kit.TEAM}:{kit.CHANNEL}:{ts}")
    assert [t.question for t in turns] == ["70B 全参训练，单卡 A100 够吗？"]
    assert fake_slack.called("auth.test") == []
    assert {c.token for c in fake_slack.calls} == {kit.BOT_TOKEN}


def _finished(fake_slack, channel, thread):
    return [m for m in fake_slack.replies(channel, thread) if not m.streaming and (m.blocks or m.text)]


def test_the_same_event_delivered_with_retries_1_to_3_is_answered_once(slack_server, fake_slack, kit, held):
    held.hold()  # the answer is still running while Slack retries (its 3-second timer has fired)
    ts = "1764460800.000200"
    envelope = kit.event_envelope(kit.mention("Llama 3 8B LoRA on one RTX 4090?", ts))
    responses = [slack_server.post_event(envelope, retry=n) for n in range(4)]
    assert [r.status_code for r in responses] == [200] * 4  # every delivery acknowledged: no more retries
    assert held.started.acquire(timeout=30)  # the answer is running, and held…
    assert all(r.elapsed.total_seconds() < 3.0 for r in responses)  # …yet every delivery was acknowledged in time
    held.started.release()
    held.release()
    kit.wait_until(lambda: _finished(fake_slack, kit.CHANNEL, ts))
    time.sleep(0.5)  # a second answer, if one had been started, would have shown up by now
    assert len(fake_slack.replies(kit.CHANNEL, ts)) == 1
    assert len(fake_slack.called("chat.startStream")) == 1
    assert held.started.acquire(timeout=0) and not held.started.acquire(timeout=0)  # the planner ran once


def test_a_bad_or_six_minute_old_signature_is_refused_with_401_and_nothing_is_answered(
    slack_server, fake_slack, kit, advisor
):
    old = int(time.time()) - 6 * 60
    forged = slack_server.post_event(
        kit.event_envelope(kit.mention("H100 vs H800?", "1764460800.000300")),
        secret="not-the-signing-secret-0000000000",
    )
    stale = slack_server.post_event(
        kit.event_envelope(kit.mention("H100 vs H800?", "1764460800.000301")), timestamp=old
    )
    assert forged.status_code == 401 and stale.status_code == 401
    time.sleep(1.0)
    assert fake_slack.calls == []  # not one Web API call: nothing was answered
    assert not advisor.store.exists(f"slack:{kit.TEAM}:{kit.CHANNEL}:1764460800.000300")


def test_a_follow_up_in_the_thread_carries_the_context(slack_server, fake_slack, kit, advisor):
    root = "1764460800.000400"
    slack_server.post_event(kit.event_envelope(kit.mention("70B 全参训练，单卡 A100 够吗？", root)))
    kit.wait_until(lambda: _finished(fake_slack, kit.CHANNEL, root))
    slack_server.post_event(kit.event_envelope(kit.mention("那用 H800 呢？", "1764460800.000500", thread_ts=root)))
    replies = kit.wait_until(
        lambda: len(_finished(fake_slack, kit.CHANNEL, root)) == 2 and _finished(fake_slack, kit.CHANNEL, root)
    )
    second = replies[1].text
    assert "H800" in second and "70B" in second  # the model came from the first question
    turns = advisor.store.turns(f"slack:{kit.TEAM}:{kit.CHANNEL}:{root}")
    assert [t.question for t in turns] == ["70B 全参训练，单卡 A100 够吗？", "那用 H800 呢？"]
    fit = [c for c in turns[1].trace["tool_calls"] if c["tool"] == "fit_training"]
    assert fit and "h800" in fit[0]["input"]["gpu"].lower() and "70B" in fit[0]["input"]["model"]


def _click(kit, message, action: dict, user: str | None = None) -> dict:
    return {
        "type": "block_actions",
        "team": {"id": kit.TEAM, "domain": "acme"},
        "user": {"id": user or kit.USER, "team_id": kit.TEAM},
        "api_app_id": "A0APP00001",
        "token": "legacy-verification-token",
        "trigger_id": "1.2.3",
        "container": {
            "type": "message",
            "message_ts": message.ts,
            "channel_id": message.channel,
            "is_ephemeral": False,
            "thread_ts": message.thread_ts,
        },
        "channel": {"id": message.channel},
        "message": {"ts": message.ts, "thread_ts": message.thread_ts},
        "response_url": "http://127.0.0.1:9/unused",
        "actions": [{"action_ts": f"{time.time():.6f}", **action}],
    }


def test_feedback_and_follow_up_buttons(slack_server, fake_slack, kit, advisor):
    root = "1764460800.000600"
    slack_server.post_event(kit.event_envelope(kit.mention("70B 全参训练，单卡 A100 够吗？", root)))
    msg = kit.wait_until(lambda: _finished(fake_slack, kit.CHANNEL, root))[0]
    feedback = next(b for b in msg.blocks if b["type"] == "context_actions")["elements"][0]
    down = feedback["negative_button"]["value"]
    r = slack_server.post_interaction(
        _click(kit, msg, {"type": "feedback_buttons", "action_id": "feedback", "block_id": "feedback-0", "value": down})
    )
    assert r.status_code == 200
    cid = f"slack:{kit.TEAM}:{kit.CHANNEL}:{root}"
    stored = kit.wait_until(lambda: advisor.store.feedback_for(cid))
    assert [(f["turn"], f["rating"]) for f in stored] == [(0, -1)]
    kit.wait_until(lambda: fake_slack.ephemeral)
    assert fake_slack.ephemeral[0]["user"] == kit.USER and fake_slack.ephemeral[0]["thread_ts"] == root

    button = next(b for b in msg.blocks if b["type"] == "actions")["elements"][1]
    r = slack_server.post_interaction(
        _click(
            kit,
            msg,
            {
                "type": "button",
                "action_id": button["action_id"],
                "block_id": "follow_ups-0",
                "value": button["value"],
                "text": button["text"],
            },
        )
    )
    assert r.status_code == 200
    replies = kit.wait_until(
        lambda: len(_finished(fake_slack, kit.CHANNEL, root)) == 2 and _finished(fake_slack, kit.CHANNEL, root)
    )
    assert button["value"] in replies[1].text and "H800" in replies[1].text
    assert [t.question for t in advisor.store.turns(cid)][1] == button["value"]


def test_a_very_long_message_is_answered_with_a_clear_message_not_dropped(slack_server, fake_slack, kit):
    """Slack sends a message's text twice (text and rich-text blocks): a long Chinese message is far over the
    API's usual body limit, and must still reach the app so the user learns why it is not answered."""
    ts = "1764460800.000700"
    text = "8卡H800全参微调7B需要多少显存？" * 1500  # 25,500 characters, about 150 KB with its blocks
    event = kit.mention(text, ts)
    event["blocks"] = [
        {
            "type": "rich_text",
            "block_id": "b1",
            "elements": [
                {
                    "type": "rich_text_section",
                    "elements": [{"type": "user", "user_id": kit.BOT_USER}, {"type": "text", "text": " " + text}],
                }
            ],
        }
    ]
    r = slack_server.post_event(kit.event_envelope(event))
    assert r.status_code == 200
    reply = kit.wait_until(lambda: _finished(fake_slack, kit.CHANNEL, ts))[0]
    shown = reply.text + "".join(b.get("text", "") for b in reply.blocks)
    assert "4000" in shown and "字符" in shown  # "keep it under 4000 characters", in Chinese


def test_with_the_shared_dedup_store_down_retries_still_get_one_answer(
    slack_server, fake_slack, kit, advisor, monkeypatch
):
    from bot.channels.ledger import SqlSeenKeys

    def down(self, key, ttl_s):
        raise ConnectionError("redis is down")

    monkeypatch.setattr(SqlSeenKeys, "first", down)  # the shared TTL set (no Redis in tests)
    ts = "1764460800.000800"
    envelope = kit.event_envelope(kit.mention("H20 显存多大？", ts))
    assert [slack_server.post_event(envelope, retry=n).status_code for n in range(3)] == [200] * 3
    kit.wait_until(lambda: _finished(fake_slack, kit.CHANNEL, ts))
    time.sleep(0.5)
    assert len(fake_slack.replies(kit.CHANNEL, ts)) == 1 and "96" in fake_slack.replies(kit.CHANNEL, ts)[0].text


def test_in_a_channel_shared_with_another_workspace_the_stream_goes_to_the_askers_own_team(
    slack_server, fake_slack, kit, advisor
):
    ts = "1764460800.000900"
    event = kit.mention("H20 显存多大？", ts, user="U0GUEST001")
    event |= {"user_team": "T0OTHER001", "source_team": "T0OTHER001"}
    slack_server.post_event(kit.event_envelope(event))
    msg = kit.wait_until(lambda: _finished(fake_slack, kit.CHANNEL, ts))[0]
    assert msg.streamed and msg.recipient == ("T0OTHER001", "U0GUEST001")
    assert advisor.store.exists(f"slack:{kit.TEAM}:{kit.CHANNEL}:{ts}")  # the conversation is the host's thread
