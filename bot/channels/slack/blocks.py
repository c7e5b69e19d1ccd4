"""The advisor's answer as Slack shows it: Block Kit built from the canonical `Answer` (bot/channels/render.py).

    answer_text(answer)          the streamed part: verdict, notes and tables as standard Markdown (Slack's
                                 `markdown` block and the streaming API both take it; tables included)
    closing_blocks(answer, turn) what ends the message: sources as numbered links, the follow-up questions as
                                 buttons that ask them, and 👍/👎 feedback buttons for this turn
    message_blocks(answer, turn) the whole message in blocks, for the post-and-update path

Slack's limits kept here: 12,000 characters of Markdown per message, 75 characters of button text,
2,000 characters of button value.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from bot.channels.render import Answer, phrase, render_markdown
from bot.channels.slack.phrases import say

MARKDOWN_MAX = 12_000
BUTTON_TEXT_MAX = 75
BUTTON_VALUE_MAX = 2_000
FOLLOW_UP_ACTION = "follow_up"  # action ids "follow_up_0", "follow_up_1", …
FEEDBACK_ACTION = "feedback"
_FEEDBACK_VALUE = re.compile(r"^(up|down):(\d{1,7})$")


def answer_text(answer: Answer) -> str:
    """Verdict, notes and tables: the body of the message (sources and follow-ups come as blocks)."""
    body = render_markdown(dataclasses.replace(answer, sources=(), follow_ups=()))
    return _fit(body, MARKDOWN_MAX)


def sources_markdown(answer: Answer) -> str:
    links = [f"[{i}] [{_link_text(s.title)}]({s.url})" if s.url.startswith(("http://", "https://"))
             else f"[{i}] {s.title}" for i, s in enumerate(answer.sources, 1)]
    return f"**{phrase('sources', answer.language)}**\n" + "\n".join(links) if links else ""


def closing_blocks(answer: Answer, turn: int | None) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if answer.sources:
        blocks.append({"type": "markdown", "text": _fit(sources_markdown(answer), 3_000)})
    if answer.follow_ups:
        blocks.append({
            "type": "actions",
            "block_id": f"follow_ups-{turn if turn is not None else 'x'}",
            "elements": [_button(f"{FOLLOW_UP_ACTION}_{i}", q) for i, q in enumerate(answer.follow_ups[:5])],
        })
    if turn is not None:
        blocks.append(feedback_block(answer.language, turn))
    return blocks


def message_blocks(answer: Answer, turn: int | None) -> list[dict[str, Any]]:
    """The message in one piece (post and update): the body as a `markdown` block, then the closing blocks."""
    body = answer_text(answer)
    room = MARKDOWN_MAX - len(body)
    closing = [b for b in closing_blocks(answer, turn) if b["type"] != "markdown" or len(b["text"]) <= room]
    return ([{"type": "markdown", "text": body}] if body else []) + closing


def notice_blocks(text: str) -> list[dict[str, Any]]:
    return [{"type": "markdown", "text": _fit(text, MARKDOWN_MAX)}]


def feedback_block(lang: str, turn: int) -> dict[str, Any]:
    return {
        "type": "context_actions",
        "block_id": f"feedback-{turn}",
        "elements": [{
            "type": "feedback_buttons",
            "action_id": FEEDBACK_ACTION,
            "positive_button": {"text": {"type": "plain_text", "text": "👍"}, "value": f"up:{turn}",
                                "accessibility_label": say("feedback_up", lang)},
            "negative_button": {"text": {"type": "plain_text", "text": "👎"}, "value": f"down:{turn}",
                                "accessibility_label": say("feedback_down", lang)},
        }],
    }


def parse_feedback(value: str) -> tuple[int, int] | None:
    """A feedback button's value -> (turn, rating +1/-1), or None when it is not one of ours."""
    m = _FEEDBACK_VALUE.match(value or "")
    return (int(m.group(2)), 1 if m.group(1) == "up" else -1) if m else None


def plain_summary(answer: Answer) -> str:
    """The notification text Slack shows where blocks are not rendered (push, previews)."""
    text = re.sub(r"[*_`#>|]", "", answer.verdict or answer_text(answer)).strip()
    return _fit(text, 300) or "…"


def _button(action_id: str, question: str) -> dict[str, Any]:
    return {"type": "button", "action_id": action_id,
            "text": {"type": "plain_text", "text": _fit(question, BUTTON_TEXT_MAX), "emoji": True},
            "value": question[:BUTTON_VALUE_MAX]}


def _link_text(title: str) -> str:
    return title.replace("[", "(").replace("]", ")")


def _fit(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
