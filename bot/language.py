"""Which language to answer in: one rule for the parser, the advisor, the agent, the API and the CLI."""

from __future__ import annotations

import re

_CJK = re.compile(r"[\u3400-\u9fff]")
_EN_WORD = re.compile(r"[a-z]{2,}", re.IGNORECASE)


def detect_language(text: str) -> str:
    """"zh" when Chinese characters are at least as many as English words ("A100 够吗" is zh), else "en"."""
    cjk = len(_CJK.findall(text))
    return "zh" if cjk and cjk >= len(_EN_WORD.findall(text)) else "en"
