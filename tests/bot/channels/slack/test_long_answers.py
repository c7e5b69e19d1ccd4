"""An answer longer than Slack allows: what the thread shows stays within Slack's limits (12,000 characters of
Markdown in one message, 50 blocks), cut at a table row, and says in the user's language that it was cut."""

from __future__ import annotations

import asyncio
import itertools
import json

import pytest
from slack_fake import BOT_TOKEN, CHANNEL, TEAM, USER
from slack_sdk.web.async_client import AsyncWebClient

from bot.channels.render import Answer, Block, Source, Table
from bot.channels.slack.reply import SlackReply, Target

_thread = itertools.count(1)


def _long_answer(lang: str) -> Answer:
    rows = tuple((f"layer {i} 激活值", f"{i}.5 GB") for i in range(1500))
    return Answer(
        language=lang,
        verdict="**放不下。** " if lang == "zh" else "**Does not fit.** ",
        blocks=(Block("text", "note " * 400), Block("table", table=Table(("part", "GB"), rows))),
        sources=tuple(Source(f"Note {i} " + "t" * 150, f"https://example.org/{'p' * 200}/{i}") for i in range(40)),
        follow_ups=tuple(f"follow-up {i} " + "q" * 120 for i in range(9)),
        conversation_id="slack:T:C:1",
    )


def _reply(fake, heading: str = "") -> tuple[SlackReply, str]:
    thread = f"1764470000.{next(_thread):06d}"
    target = Target(channel=CHANNEL, thread_ts=thread, team=TEAM, user=USER, heading=heading)
    return SlackReply(client=AsyncWebClient(token=BOT_TOKEN, base_url=fake.api_url), target=target), thread


def _markdown_of(msg) -> str:
    """The Markdown Slack counts: the streamed text and the markdown blocks (a posted message's `text` is
    only the notification line)."""
    streamed = msg.text if msg.streamed else ""
    return streamed + "".join(b.get("text", "") for b in msg.blocks if b["type"] == "markdown")


@pytest.mark.parametrize("streaming", [True, False])
@pytest.mark.parametrize(("lang", "said"), [("zh", "已省略"), ("en", "longer than one Slack message allows")])
def test_a_very_long_answer_fits_one_slack_message_and_says_it_was_cut(fake_slack, streaming, lang, said):
    fake_slack.streaming = streaming
    heading = "<@U0USER0001> asked: " + "x" * 300
    reply, thread = _reply(fake_slack, heading)

    async def run():
        await reply.progress("Computing memory…")
        await reply.finish(_long_answer(lang), turn=2)

    asyncio.run(run())
    [msg] = fake_slack.replies(CHANNEL, thread)
    assert msg.streamed is streaming and not msg.streaming
    shown = _markdown_of(msg)
    assert len(shown) <= 12_000 and len(msg.blocks) <= 50 and said in shown
    assert heading in shown and "[1] [Note 0" in shown  # the heading and the first sources survive
    table_rows = [line for line in shown.splitlines() if line.startswith("| layer ")]
    assert table_rows and all(line.endswith(" GB |") for line in table_rows)  # whole rows only
    kinds = [b["type"] for b in msg.blocks]
    assert kinds[-2:] == ["actions", "context_actions"]  # the follow-ups and 👍/👎 are still there
    buttons = msg.blocks[-2]["elements"]
    assert len(buttons) == 5 and all(len(b["text"]["text"]) <= 75 for b in buttons)
    for call in fake_slack.calls:  # no single call carries more Markdown than Slack takes
        pushed = (call.args.get("markdown_text") or "") + "".join(
            c.get("text", "") for c in call.args.get("chunks") or [] if c.get("type") == "markdown_text"
        )
        assert len(pushed) <= 12_000
    assert len(json.dumps(msg.blocks[-2], ensure_ascii=False)) < 12_000


def test_an_answer_within_the_limit_is_streamed_whole(fake_slack):
    answer = Answer(
        language="en",
        verdict="**Fits.** About 45 GB per GPU.",
        blocks=(Block("table", table=Table(("part", "GB"), (("weights", "14"),))),),
    )
    reply, thread = _reply(fake_slack)
    asyncio.run(reply.finish(answer, turn=0))
    [msg] = fake_slack.replies(CHANNEL, thread)
    assert msg.text.startswith("**Fits.**") and "| weights | 14 |" in msg.text and "Slack" not in msg.text
