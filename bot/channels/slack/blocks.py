"""The advisor's answer as Slack shows it: Block Kit built from the canonical `Answer` (bot/channels/render.py).

    answer_text(answer, room)    the streamed part: verdict, notes and tables as standard Markdown (Slack's
                                 `markdown` block and the streaming API both take it; tables included)
    body_room(answer, heading)   how much of the 12,000 characters is left for that part
    closing_blocks(answer, turn) what ends the message: sources as numbered links, the follow-up questions as
                                 buttons that ask them, and 👍/👎 feedback buttons for this turn
    message_blocks(answer, turn, heading)  the whole message in blocks, for the post-and-update path

Slack's limits kept here: 12,000 characters of Markdown in one message (all its `markdown` blocks, or all
its streamed text, together), 75 characters of button text, 2,000 characters of button value. An answer
longer than that is cut at a line (a table keeps its whole rows) and says so in the user's language; the
source list keeps whole entries.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from bot.channels.render import Answer, phrase, render_markdown
from bot.channels.slack.phrases import say

MARKDOWN_MAX = 12_000  # all the Markdown of one message
SOURCES_MAX = 3_000
HEADING_QUESTION_MAX = 300  # a follow-up button's question, as quoted above its answer
BUTTON_TEXT_MAX = 75
BUTTON_VALUE_MAX = 2_000
FOLLOW_UP_ACTION = "follow_up"  # action ids "follow_up_0", "follow_up_1", …
FEEDBACK_ACTION = "feedback"
_FEEDBACK_VALUE = re.compile(r"^(up|down):(\d{1,7})$")


def answer_text(answer: Answer, room: int = MARKDOWN_MAX) -> str:
    """Verdict, notes and tables: the body of the message (sources and follow-ups come as blocks), within
    `room` characters."""
    body = render_markdown(dataclasses.replace(answer, sources=(), follow_ups=()))
    return shorten(body, room, answer.language)


def body_room(answer: Answer, heading: str = "") -> int:
    """Characters left for the body once the heading and the source list have their share of the message."""
    used = len(heading) + 2 if heading else 0
    return MARKDOWN_MAX - used - len(sources_markdown(answer))


def shorten(text: str, limit: int, lang: str) -> str:
    """`text` within `limit` characters: cut at the last line that fits, then a note that the rest is left out."""
    if len(text) <= limit:
        return text
    note = "\n\n" + say("shortened", lang)
    keep = max(limit - len(note), 0)
    cut = text.rfind("\n", 0, keep + 1)
    head = text[:cut] if cut > keep // 2 else text[:keep]
    return (head.rstrip() + note)[:limit]


def sources_markdown(answer: Answer) -> str:
    """The numbered source list, whole entries only, within SOURCES_MAX characters."""
    links = [
        f"[{i}] [{_link_text(s.title)}]({_link_url(s.url)})"
        if s.url.startswith(("http://", "https://"))
        else f"[{i}] {s.title}"
        for i, s in enumerate(answer.sources, 1)
    ]
    if not links:
        return ""
    text = f"**{phrase('sources', answer.language)}**"
    for link in links:
        if len(text) + 1 + len(link) > SOURCES_MAX:
            break
        text += "\n" + link
    return text


def closing_blocks(answer: Answer, turn: int | None) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if sources := sources_markdown(answer):
        blocks.append({"type": "markdown", "text": sources})
    if answer.follow_ups:
        blocks.append(
            {
                "type": "actions",
                "block_id": f"follow_ups-{turn if turn is not None else 'x'}",
                "elements": [_button(f"{FOLLOW_UP_ACTION}_{i}", q) for i, q in enumerate(answer.follow_ups[:5])],
            }
        )
    if turn is not None:
        blocks.append(feedback_block(answer.language, turn))
    return blocks


def message_blocks(answer: Answer, turn: int | None, heading: str = "") -> list[dict[str, Any]]:
    """The message in one piece (post and update): the heading and the body as `markdown` blocks, then the
    closing blocks, 12,000 characters of Markdown in all."""
    body = answer_text(answer, body_room(answer, heading))
    return (
        ([{"type": "markdown", "text": heading}] if heading else [])
        + ([{"type": "markdown", "text": body}] if body else [])
        + closing_blocks(answer, turn)
    )


def notice_blocks(text: str) -> list[dict[str, Any]]:
    return [{"type": "markdown", "text": clip(text, MARKDOWN_MAX)}]


def feedback_block(lang: str, turn: int) -> dict[str, Any]:
    return {
        "type": "context_actions",
        "block_id": f"feedback-{turn}",
        "elements": [
            {
                "type": "feedback_buttons",
                "action_id": FEEDBACK_ACTION,
                "positive_button": {
                    "text": {"type": "plain_text", "text": "👍"},
                    "value": f"up:{turn}",
                    "accessibility_label": say("feedback_up", lang),
                },
                "negative_button": {
                    "text": {"type": "plain_text", "text": "👎"},
                    "value": f"down:{turn}",
                    "accessibility_label": say("feedback_down", lang),
                },
            }
        ],
    }


def parse_feedback(value: str) -> tuple[int, int] | None:
    """A feedback button's value -> (turn, rating +1/-1), or None when it is not one of ours."""
    m = _FEEDBACK_VALUE.match(value or "")
    return (int(m.group(2)), 1 if m.group(1) == "up" else -1) if m else None


def plain_summary(answer: Answer) -> str:
    """The notification text Slack shows where blocks are not rendered (push, previews)."""
    text = re.sub(r"[*_`#>|]", "", answer.verdict or answer_text(answer)).strip()
    return clip(text, 300) or "…"


def _button(action_id: str, question: str) -> dict[str, Any]:
    return {
        "type": "button",
        "action_id": action_id,
        "text": {"type": "plain_text", "text": clip(question, BUTTON_TEXT_MAX), "emoji": True},
        "value": question[:BUTTON_VALUE_MAX],
    }


def _link_text(title: str) -> str:
    return title.replace("[", "(").replace("]", ")")


def _link_url(url: str) -> str:
    """A URL that cannot end the Markdown link early: parentheses, spaces and angle brackets percent-encoded."""
    return url.translate(str.maketrans({"(": "%28", ")": "%29", " ": "%20", "<": "%3C", ">": "%3E"}))


def clip(text: str, limit: int) -> str:
    """One line within `limit` characters, ending in … when cut."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
