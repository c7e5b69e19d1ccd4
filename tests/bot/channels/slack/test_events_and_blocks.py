"""What the app reads from Slack's events and what it shows back (pure functions, no server)."""

from __future__ import annotations

import pytest

from bot.channels.render import Answer, Source
from bot.channels.slack import events as ev
from bot.channels.slack.blocks import closing_blocks, message_blocks, parse_feedback
from bot.channels.slack.settings import SlackSettings
from bot.core.trace import AnswerTrace, Citation


@pytest.mark.parametrize(
    ("raw", "bot", "expected"),
    [
        ("<@U0BOT00001> 70B 全参训练，单卡 A100 够吗？", "U0BOT00001", "70B 全参训练，单卡 A100 够吗？"),
        ("<@U0BOT00001|gpu-advisor> H20 &amp; H800 &lt;80GB&gt;?", "U0BOT00001", "H20 & H800 <80GB>?"),
        ("ask <@U0BOT00001> about <@U0ALICE001>'s 8×H800", "U0BOT00001", "ask about @U0ALICE001's 8×H800"),
        (
            "<@U0BOT00001> see <https://example.com/h20|the H20 page> in <#C0CHAN0001|gpu>",
            "U0BOT00001",
            "see the H20 page in #gpu",
        ),
        ("<@U0WHOEVER> 7B LoRA on a 4090?", None, "7B LoRA on a 4090?"),
    ],
)
def test_clean_text_gives_back_what_the_user_typed(raw, bot, expected):
    assert ev.clean_text(raw, bot) == expected


def _body(event):
    return {
        "type": "event_callback",
        "team_id": "T1",
        "event_id": "Ev1",
        "event": event,
        "authorizations": [{"team_id": "T1", "user_id": "U0BOT00001", "is_bot": True}],
    }


def test_which_events_are_questions_and_where_their_answers_go():
    mention = {"type": "app_mention", "user": "U1", "text": "<@U0BOT00001> hi", "ts": "2.0", "channel": "C1"}
    q = ev.question_from(_body(mention), "U0BOT00001")
    assert (q.team, q.channel, q.thread_ts, q.text, q.message_id) == ("T1", "C1", "2.0", "hi", "C1:2.0")
    in_thread = ev.question_from(_body({**mention, "ts": "3.0", "thread_ts": "2.0"}))
    assert in_thread.thread_ts == "2.0" and in_thread.message_id == "C1:3.0"
    assert ev.question_from(_body({**mention, "type": "message", "channel_type": "im"})) is not None
    for not_one in (
        {**mention, "type": "message", "channel_type": "channel"},
        {**mention, "subtype": "bot_message"},
        {**mention, "bot_id": "B1"},
        {k: v for k, v in mention.items() if k != "user"},
    ):
        assert ev.question_from(_body(not_one)) is None
    assert ev.bot_user_of(_body(mention)) == "U0BOT00001"
    assert ev.retry_number({"x-slack-retry-num": ["2"]}) == 2 and ev.retry_number({}) == 0


def _answer(lang="en", follow_ups=("What about H800?",)):
    trace = AnswerTrace(
        conversation_id="slack:T1:C1:2.0",
        language=lang,
        mode="offline",
        answer="**Fits.** About 45 GB per GPU.\n\n| part | GB |\n|---|---|\n| weights | 14 |\n\n**Sources:**\n- [1] x",
        citations=[
            Citation(id="a#1", doc_id="a", title="A [draft] note", text="t", source="https://example.org/a"),
            Citation(id="a#2", doc_id="a", title="A [draft] note", text="t2", source="https://example.org/a"),
            Citation(id="b#1", doc_id="b", title="Local notes", text="t", source="/srv/notes/b.md"),
        ],
        follow_ups=list(follow_ups),
    )
    return Answer.from_trace(trace)


def test_blocks_number_the_sources_make_follow_ups_buttons_and_rate_the_turn():
    blocks = closing_blocks(_answer(follow_ups=("What about H800?", "x" * 300)), turn=4)
    sources, actions, feedback = blocks
    assert sources["type"] == "markdown"
    assert "[1] [A (draft) note](https://example.org/a)" in sources["text"] and "[2] Local notes" in sources["text"]
    assert "[3]" not in sources["text"]  # the same note cited twice is one source
    wiki = Answer(
        language="en", verdict="x", sources=(Source("GPU (computing)", "https://x.org/wiki/GPU_(computing)"),)
    )
    assert "[1] [GPU (computing)](https://x.org/wiki/GPU_%28computing%29)" in closing_blocks(wiki, None)[0]["text"]
    first, long = actions["elements"]
    assert first["value"] == "What about H800?" and first["action_id"] == "follow_up_0"
    assert len(long["text"]["text"]) <= 75 and long["value"] == "x" * 300
    buttons = feedback["elements"][0]
    assert feedback["type"] == "context_actions" and buttons["type"] == "feedback_buttons"
    assert parse_feedback(buttons["positive_button"]["value"]) == (4, 1)
    assert parse_feedback(buttons["negative_button"]["value"]) == (4, -1)
    assert parse_feedback("up:x") is None and parse_feedback("sideways:1") is None


def test_the_whole_message_keeps_the_table_as_markdown_and_drops_the_answers_own_source_list():
    body = message_blocks(_answer(), turn=None)[0]["text"]
    assert body.startswith("**Fits.**") and "| weights | 14 |" in body and "Sources" not in body
    assert [b["type"] for b in message_blocks(_answer(follow_ups=()), turn=None)] == ["markdown", "markdown"]


def test_settings_turn_the_route_on_only_with_both_secrets_and_never_print_them():
    s = SlackSettings(bot_token="xoxb-1-2-abc", signing_secret="s3cr3t-value", api_url="http://127.0.0.1:9/api")
    assert s.http_enabled and not s.socket_enabled and s.api_url.endswith("/api/")
    assert "xoxb-1-2-abc" not in repr(s) and "s3cr3t-value" not in str(s)
    assert not SlackSettings(bot_token="xoxb-1-2-abc").http_enabled
    with pytest.raises(ValueError, match="SLACK_API_URL"):
        SlackSettings(api_url="slack.com/api")
