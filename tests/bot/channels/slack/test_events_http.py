"""The Slack app behind a real server on loopback, Slack's Web API faked on loopback: what a user in the
workspace sees in the thread, and what Slack's delivery side gets back."""

from __future__ import annotations

import time


def test_a_mention_is_acknowledged_at_once_and_answered_by_one_streamed_reply_in_its_thread(slack_server, fake_slack,
                                                                                          kit, advisor):
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
