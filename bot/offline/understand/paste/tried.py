"""What the asker says they already tried and saw fail ("when I set the `tensor_parallel_size` to 2 it gives me
this error", "tp 设成 2 也报错", "I tried gpu_memory_utilization=0.8 but still OOM"): the settings, under the
diagnose tool's field names, as `tried` items ('tp=2'). A fix does not propose them again as they were, and a
tried setting is not the run's own (the log's or the command's figures say what ran)."""

from __future__ import annotations

import re

from bot.offline.understand.paste.keys import KEYS, norm
from bot.offline.understand.request.figures import line_at

_Q = r"[`'\"]?"
#: a setting named with the verb of trying or setting, its value, then within the sentence words of failure
_TRIED = re.compile(
    r"(?:\btr(?:y|ied|ying)\b|\bset(?:ting)?\b|\bus(?:e|ed|ing)\b|\bwith\b|设置?(?:为|成|到)?|改(?:为|成)|调(?:到|成)|试(?:过|了)|用)"
    r"\s*(?:the\s+|to\s+)?" + _Q + r"(?:--)?([a-z][a-z0-9_-]{1,40})" + _Q +
    r"\s*(?:to|=|:|as|of|为|成|到|设为|设成|改成|设置为)?\s*" + _Q + r"(\d+(?:\.\d+)?)" + _Q +
    r"([^.。\n]{0,80})",
    re.I,
)  # fmt: skip
#: the same said key first, "gpu_memory_utilization=0.95 did not work either", "… 设为 0.95 也不行": the failure must follow at once, and a log's
#: own settings line ("Initializing an LLM engine with config: … tensor_parallel_size=2, …") is not the asker's
_BARE = re.compile(
    r"(?<![\w.-])"
    + _Q
    + r"([a-z][a-z0-9_]{1,40})"
    + _Q
    + r"\s*(?:=|设置?(?:为|成|到)|改(?:为|成)|调(?:到|成)|(?:is |was )?set to)\s*"
    + _Q
    + r"(\d+(?:\.\d+)?)"
    + _Q
    + r"([^.。,，;\n]{0,30})",
    re.I,
)
_LOG_LINE = re.compile(r"\b(?:INFO|WARNING|DEBUG|config)\b|\[rank", re.I)
_FAILED = re.compile(
    r"error|fail|same|still|does ?n[o']t work|not work|no luck|crash|\boom\b|out of memory|\bbut\b|"
    r"报错|不行|还是|也|失败|出错|错误|没用|无效|一样",
    re.I,
)


def tried_settings(text: str) -> str | None:
    """'field=value' items the asker tried and saw fail, or None."""
    out: dict[str, str] = {}
    bare = [m for m in _BARE.finditer(text) if not _LOG_LINE.search(line_at(text, m.start()))]
    for m in [*_TRIED.finditer(text), *bare]:
        key, val, rest = norm(m.group(1)), m.group(2), m.group(3)
        if key not in KEYS or not _FAILED.search(rest):
            continue
        field, reader = KEYS[key]
        got = reader(val)
        if got is not None and not isinstance(got, bool):
            out.setdefault(field, f"{got:g}" if isinstance(got, float) else str(got))
    return " ".join(f"{k}={v}" for k, v in out.items()) or None
