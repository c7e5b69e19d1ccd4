"""A speed the user timed without saying it: an output length and how long the reply took ("max_tokens": 512 …
将近3分钟才返回结果; "generating 200 tokens takes 40 seconds") give tokens per second. It is an upper bound: a reply
may stop before its cap, and the time holds the prompt's prefill too; the answer says both."""

from __future__ import annotations

import re
from typing import Any

from bot.offline.understand.lexicon import to_number

#: what came back, where the user counted it ("模型返回大约有60个汉字", "it returned about 80 tokens"): before the cap
_GOT = re.compile(
    r"(?:返回|输出|生成|回复|回答)了?\s*(?:的)?\s*(?:大约|约|大概|差不多)?\s*(?:有|是)?\s*(?:大约|约|大概)?\s*(\d{1,6})\s*个?\s*"
    r"(?:tokens?|汉字|中文字|字)"
    r"|\b(?:returned|generated|produced|outputs?|got)\s+(?:about\s+|around\s+|only\s+|~\s*)?(\d{1,6})\s+(?:new\s+)?tokens?",
    re.IGNORECASE,
)
_CAP = re.compile(
    r"[\"']?\b(?:max_tokens|max_new_tokens|max_completion_tokens|n_predict|num_predict|max_length)[\"']?\s*[:=]\s*(\d{2,6})\b"
    r"|(?:生成|输出|回复|返回)了?\s*(?:约|大约|大概)?\s*(\d{2,6})\s*个?\s*(?:tokens?|字)"
    r"|\b(?:generat\w*|output\w*|produc\w*)\s+(?:about\s+|around\s+|~\s*)?(\d{2,6})\s+(?:new\s+)?tokens?",
    re.IGNORECASE,
)
_ZH_NUM = r"\d+(?:\.\d+)?|[一两二三四五六七八九十半]+"
_TOOK = re.compile(
    rf"(?:将近|接近|近|约|大约|大概|差不多|足足|要|需要|用了|花了|耗时)?\s*({_ZH_NUM})\s*(分钟|分|秒钟?)\s*(?:多|左右)?\s*"
    r"(?:才|多才|后才|以上才)?\s*(?:返回|出结果|结束|完成|响应|回复|出来|生成完)"
    rf"|(?:耗时|用了|花了|需要|要)\s*(?:将近|接近|近|约|大约|大概)?\s*({_ZH_NUM})\s*(分钟|秒钟?)"
    r"|\b(?:takes?|took|taking|needs?|needed)\s+(?:about\s+|around\s+|almost\s+|nearly\s+|over\s+|more than\s+|~\s*)?"
    r"(\d+(?:\.\d+)?)\s*(minutes?|mins?|seconds?|secs?|s)\b",
    re.IGNORECASE,
)
_SECONDS = {"分钟": 60.0, "分": 60.0, "秒": 1.0, "秒钟": 1.0}
#: a time per generated token ("0.7s/token", "per token is about 2.9s", "每个token要2秒", "一个step就需要10s+"): its
#: inverse is the decode speed; a "step" counts only where the text is about generating (a training step is not one)
_UNIT = r"(s|secs?|seconds?|秒)"
_PER_TOKEN = re.compile(
    rf"(\d+(?:\.\d+)?)\s*{_UNIT}\s*(?:/|per|每个?)\s*(token|tok|step)\b"
    rf"|\b(?:per|each|every|one)\s+(token|step)\s+(?:is|takes?|took|needs?)\s+(?:about\s+|around\s+|~\s*)?(\d+(?:\.\d+)?)\s*{_UNIT}(?![a-z])"
    rf"|(?:每个?|一个)\s*(token|step)\s*(?:就|都)?\s*(?:需要|要|用了?|花了?)?\s*(?:约|大约|大概)?\s*(\d+(?:\.\d+)?)\s*{_UNIT}",
    re.IGNORECASE,
)
_GENERATING = re.compile(r"推理|生成|infer|generat|decod|serv", re.IGNORECASE)
_TRAINING = re.compile(r"训练|微调|train|fine-?tun", re.IGNORECASE)


def per_token(text: str, ev: dict[str, Any]) -> bool:
    """The decode speed a time per token gives (`measured_tokens_per_s` = 1 / seconds), where no speed was given."""
    if ev.get("measured_tokens_per_s") or ev.get("error_kind"):
        return False
    for m in _PER_TOKEN.finditer(text):
        g = m.groups()
        value, unit, what = (g[0], g[1], g[2]) if g[0] else (g[4], g[5], g[3]) if g[4] else (g[7], g[8], g[6])
        if what.lower() == "step" and (not _GENERATING.search(text) or _TRAINING.search(text)):
            continue
        seconds = _seconds(value, unit)
        if seconds and 1e-4 <= seconds <= 3600:
            ev["measured_tokens_per_s"] = round(1 / seconds, 3)
            return True
    return False


def _seconds(value: str, unit: str) -> float | None:
    n = to_number(value)
    if not n or n <= 0:
        return None
    unit = unit.lower()
    return n * (_SECONDS.get(unit) or (60.0 if unit.startswith("min") else 1.0))


def timed_output(text: str, ev: dict[str, Any]) -> None:
    """Tokens over the time the reply took, where no speed was given: `measured_tokens_per_s` and, for the answer
    to quote, `timed_output` (the user's words for both figures)."""
    if ev.get("measured_tokens_per_s") or ev.get("error_kind"):
        return
    cap, took = _GOT.search(text) or _CAP.search(text), _TOOK.search(text)
    if not cap or not took:
        return
    tokens = int(next(g for g in cap.groups() if g))
    value, unit = next((took.group(i), took.group(i + 1)) for i in (1, 3, 5) if took.group(i))
    seconds = _seconds(value, unit)
    if not seconds or not 1 <= tokens / seconds * 1000 <= 10_000_000:
        return
    ev["measured_tokens_per_s"] = round(tokens / seconds, 2)
    ev["timed_output"] = {
        "tokens": cap.group(0).strip(),
        "time": took.group(0).strip(),
        "seconds": seconds,
        "cap": cap.re is _CAP,  # the cap, not what came back: an upper bound
        "characters": bool(re.search(r"字", cap.group(0))),  # Chinese characters counted, about a token each
    }
