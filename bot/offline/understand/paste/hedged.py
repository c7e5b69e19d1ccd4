"""A failure told as a fear, a question or advice to anyone ("怕显存不够", "会不会 OOM", "unless you encounter OOM"),
not as what happened to the asker: such words are no reported error."""

from __future__ import annotations

import re


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


#: a failure told as a fear or a question, not as what happened: "怕用户多了显存可能不够", "会不会 OOM", "to avoid OOM"
#: ("还是OOM？", "本来就会爆显存吗" are asked of what happened: a question mark is no hedge)
_HEDGE_BEFORE = _rx(
    r"(?:可能|也许|或许|怕|担心|害怕|以免|避免|防止|会不会|是否|能否|\bmight\b|\bmay\b|\bcould\b|"
    r"afraid|worried|worry|to avoid|avoid|prevent|in case|risk of)[^，,。.\n]{0,6}$"
)
_HEDGE_IN = _rx(r"可能|也许|或许")  # "显存可能不够" ("会 OOM" is also said of what happens every time)
#: advice to anyone, quoted ("Try ZeRO 2 first, unless you encounter OOM", "除非遇到 OOM"): no failure of the asker's
#: ("if I set batch 4 I get OOM" is one: only the generic "you" and "unless" are advice)
_HEDGE_ADVICE = _rx(r"(?:\bunless\b|\b(?:if|when|in case) you\b)(?:\s+[a-z']+){0,3}\s*$|除非[^，,。.\n]{0,6}$")
#: error kinds the words can tell as well as a log; a log's own line is never hedged
HEDGEABLE = frozenset({"oom", "load_oom"})


_FAILURE_WORD = _rx(r"out of memory|(?<![a-z])oom|爆显存|显存不足|显存不够")


def hedged(text: str, m: re.Match) -> bool:
    """Whether the failure `m` found is feared, asked about or advised against rather than reported."""
    # the failure word's own place, which a longer match ("offload first, unless you encounter OOM") may not start at
    inner = _FAILURE_WORD.search(m.group(0))
    at = m.start() + (inner.start() if inner else 0)
    before = text[max(0, at - 32) : at]
    return bool(_HEDGE_BEFORE.search(before[-16:]) or _HEDGE_ADVICE.search(before) or _HEDGE_IN.search(m.group(0)))
