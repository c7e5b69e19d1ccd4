"""What a question must be before it is answered: control characters removed, not empty, not too long."""

from __future__ import annotations

import re

from tools.errors import AdvisorError

MAX_QUESTION_CHARS = 4000
#: control characters a platform may pass through (NUL cannot even be stored in PostgreSQL text)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class QuestionError(AdvisorError):
    """The question itself cannot be used (empty, too long)."""


def check_question(text: str) -> None:
    """Refuse an empty question or one over MAX_QUESTION_CHARS, in both languages."""
    if not text:
        raise QuestionError(
            "Please type a question, e.g. “Will a 70B model fit on one A100 80GB?”",
            "请输入一个问题，例如：“70B 模型单卡 A100 80GB 放得下吗？”",
            field="text",
        )
    if len(text) > MAX_QUESTION_CHARS:
        raise QuestionError(
            f"The question is {len(text)} characters; please keep it under {MAX_QUESTION_CHARS}.",
            f"问题长度为 {len(text)} 个字符，请控制在 {MAX_QUESTION_CHARS} 个字符以内。",
            field="text",
        )


def clean_question(text: str | None) -> str:
    """The question without control characters and surrounding space, checked."""
    text = _CONTROL.sub("", (text or "")).strip()
    check_question(text)
    return text
