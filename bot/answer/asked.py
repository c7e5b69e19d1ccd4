"""Every ask answered or said (the coverage gate's second half): what the user asked in so many words is a set
(`Request.cued`), and an ask that a calculator answers is answered when a call of one of its calculators is in
the answer's trace (`ANSWERED_BY`, request/asks.py). The offline planner runs the frame of an ask still
unanswered (rules.py); what is left, in either mode, gets one line that names it ("这次没有算出的部分：速度"),
so a part of the question is never dropped without a word; the trace keeps it as `unanswered`.

Asks answered in words (why, how to set it, what it is) and the choice (a verdict on what the others computed)
have no calculator here: they are the composers' and the verdict's to answer. An answer that is a question back
names nothing yet: the reply answers the question as asked.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml

from bot.offline.understand.request.asks import unanswered

TEMPLATES = Path(__file__).with_name("templates") / "asked.yaml"


@cache
def _templates() -> dict[str, Any]:
    return yaml.safe_load(TEMPLATES.read_text(encoding="utf-8"))


def state(asks: list[str], lang: str) -> str:
    """One line naming the asks this answer did not compute, and what would let it ("" when none)."""
    if not asks:
        return ""
    t = _templates()
    lang = lang if lang in ("zh", "en") else "en"
    sep = "、" if lang == "zh" else ", "
    return t["line"][lang].format(asks=sep.join(t["names"][a][lang] for a in asks))


def gate(asks: list[str], result: Any) -> list[str]:
    """State the asks no calculator answered (appended to the answer). Returns them. An answer that is a question
    back (the planner's pending slot) computes nothing yet: the reply answers the question as asked."""
    if (result.state or {}).get("pending"):
        return []
    left = unanswered(asks, list(result.tool_calls))
    if left and (line := state(left, result.language)):
        result.answer = result.answer.rstrip() + "\n\n" + line
    return left
