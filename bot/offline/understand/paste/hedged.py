"""A failure told as a fear, a question or advice to anyone ("怕显存不够", "会不会 OOM", "unless you encounter OOM"),
a question about the cause of another error ("这样是显存不够吗") or the reason for a setting ("因为显存不够，开启了8bit"),
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


#: the asker asks whether memory is the cause of something else ("报错 …，这样是显存不够或者算力不行吗"): a question
#: about the cause, not a failure seen ("还是 OOM 吗" asks of what happened, so 还是 is no such question)
_ASKED_BEFORE = _rx(r"(?<!还)是(?:不是)?\s*$")
_ASKED_AFTER = _rx(r"^[^，,。.\n？?]{0,14}[吗么嘛]")
#: memory given as the reason for a setting ("因为显存不够，模型开启了8bit"): what was done about it, no failure
_REASON_BEFORE = _rx(r"(?:因为|由于)\s*$")
_REASON_AFTER = _rx(
    r"^[^。.\n]{0,6}[，,]\s*[^，,。.\n]{0,10}(?:开启|开了|用了|使用|改用|采用|设置|设了|选择|加了|打开|启用|换成|只能)"
)

_FAILURE_WORD = _rx(r"out of memory|(?<![a-z])oom|爆显存|显存不足|显存不够")


def hedged(text: str, m: re.Match) -> bool:
    """Whether the failure `m` found is feared, asked about or advised against rather than reported."""
    # the failure word's own place, which a longer match ("offload first, unless you encounter OOM") may not start at
    inner = _FAILURE_WORD.search(m.group(0))
    at = m.start() + (inner.start() if inner else 0)
    before = text[max(0, at - 32) : at]
    end = m.start() + (inner.end() if inner else len(m.group(0)))
    after = text[end : end + 32]
    asked = bool(_ASKED_BEFORE.search(before) and _ASKED_AFTER.search(after))
    reason = bool(_REASON_BEFORE.search(before) and _REASON_AFTER.search(after))
    return bool(_HEDGE_BEFORE.search(before[-16:]) or _HEDGE_ADVICE.search(before) or _HEDGE_IN.search(m.group(0))
                or asked or reason)  # fmt: skip
