"""Presentation for the offline planner's answers: the answer buffer, number formatting, tables.

Formatting only scales units (GB, 万元, days) and rounds; it never combines two figures, so every
number written stays traceable to the tool output it came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from bot.offline.say.phrases import say

PART_NAMES = {
    "zh": {
        "weights": "权重",
        "gradients": "梯度",
        "optimizer": "优化器状态",
        "frozen_models": "参考/奖励模型",
        "activations": "激活值",
        "logits": "logits",
        "zero3_buffers": "ZeRO-3 缓冲",
        "cuda_context": "CUDA 上下文",
        "comm_buffers": "通信缓冲",
        "kv_cache": "KV 缓存",
    },
    "en": {
        "weights": "weights",
        "gradients": "gradients",
        "optimizer": "optimizer states",
        "frozen_models": "reference/reward models",
        "activations": "activations",
        "logits": "logits",
        "zero3_buffers": "ZeRO-3 buffers",
        "cuda_context": "CUDA context",
        "comm_buffers": "communication buffers",
        "kv_cache": "KV cache",
    },
}


@dataclass
class Out:
    lang: str
    blocks: list[str] = field(default_factory=list)
    #: notes said once, after everything else (what the shortlist left out by default)
    tail: list[str] = field(default_factory=list)

    def add(self, block: str) -> None:
        if block:
            self.blocks.append(block)

    def add_last(self, block: str) -> None:
        if block and block not in self.tail:
            self.tail.append(block)

    def text(self) -> str:
        """The blocks as paragraphs; a prose note said in an earlier part ("“X”不在目录里…" before each model's
        section) is not said again (tables, lists and headed paragraphs are each part's own)."""
        return said_once(self.blocks + self.tail, prose_only=True)


#: a paragraph repeated is dropped only when it is longer than this (a short line such as "---" may recur)
_REPEAT_MIN_CHARS = 20
#: a citation marker (" [2]") that `compose/answers.cite` puts after a supported sentence
_CITED = re.compile(r" \[\d+\]")


def said_once(blocks: list[str], prose_only: bool = False) -> str:
    """The blocks joined as paragraphs, a paragraph an earlier block said not said again; `prose_only`: tables,
    lists and headed paragraphs ("|", "-", "*", "#") stay each block's own however often they recur."""
    seen: set[str] = set()
    out = []
    for block in blocks:
        kept = []
        for paragraph in block.split("\n\n"):
            key = _CITED.sub("", paragraph).strip()  # a citation marker on one copy does not make it new
            repeat = key in seen and len(key) > _REPEAT_MIN_CHARS
            if not (repeat and not (prose_only and key.startswith(("|", "-", "*", "#")))):
                kept.append(paragraph)
        seen.update(_CITED.sub("", p).strip() for p in kept)
        if any(p.strip() for p in kept):
            out.append("\n\n".join(kept))
    return "\n\n".join(out)


# ---- formatting (presentation only: no arithmetic beyond unit scaling) -----------------------------


def num(x: float, digits: int = 1) -> str:
    if abs(x) >= 100 or float(x).is_integer():
        return f"{x:,.0f}"
    return f"{x:,.{digits}f}"


def gb(x: float) -> str:
    return f"{num(x)} GB"


def usable(fit: dict, lang: str) -> str:
    """A fit's usable memory per GPU, with its GiB figure where the card is sold in GiB ("25.8 GB（24 GiB）"): the
    card's own label then reads in the answer, not a larger GB figure that looks like another card."""
    text = gb(fit["usable_gb"])
    gib = fit.get("usable_gib")
    if not gib:
        return text
    return f"{text}（{num(gib)} GiB）" if lang == "zh" else f"{text} ({num(gib)} GiB)"


def money(x: float, lang: str) -> str:
    if lang == "zh" and abs(x) >= 10_000:
        return f"{x / 10_000:,.1f} 万元"
    return f"{x:,.0f} 元" if lang == "zh" else f"{x:,.0f} CNY"


def money_span(low: float, high: float, lang: str) -> tuple[str, str]:
    """Both ends of a range in one unit ("6,706–11,000 元" or "0.7–1.1 万元", never "6,706 元–1.1 万元")."""
    if lang == "zh" and abs(high) >= 10_000:
        return f"{low / 10_000:,.1f}", money(high, lang)
    return f"{low:,.0f}", money(high, lang)


def rate(x: float, lang: str) -> str:
    return f"{x:,.2f} 元" if lang == "zh" else f"{x:,.2f} CNY"


def duration(hours: float, lang: str) -> str:
    if hours >= 48:
        return f"{hours / 24:,.1f} 天" if lang == "zh" else f"{hours / 24:,.1f} days"
    return f"{num(hours)} 小时" if lang == "zh" else f"{num(hours)} hours"


def months_label(m: float, lang: str) -> str:
    return f"{num(m)} 个月" if lang == "zh" else f"{num(m)} months"


def pct(f: float) -> str:
    return f"{f * 100:.0f}%"


def count(x: float) -> str:
    """Large counts: 1.2e9 → "1.2B" (tokens, parameters)."""
    for div, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M")):
        if x >= div:
            return f"{x / div:,.1f}{suffix}".replace(".0" + suffix, suffix)
    return f"{x:,.0f}"


def method_label(method: str, lang: str, objective: str = "sft") -> str:
    """The method as the answer says it, with a preference or RL objective after it ("全参 DPO ", "LoRA GRPO")."""
    label = say(f"method_{method}", lang)
    if objective == "sft":
        return label
    return f"{label.strip()} {objective.upper()}" + (" " if lang == "zh" else "")


# ---- composers -------------------------------------------------------------------------------------


def breakdown_table(r: dict[str, Any], lang: str) -> str:
    rows = [f"| {PART_NAMES[lang].get(k, k)} | {gb(v)} |" for k, v in r["breakdown_gb"].items() if v >= 0.005]
    total = "合计" if lang == "zh" else "total"
    rows.append(f"| **{total}** | **{gb(r['per_gpu_gb'])}** |")
    return say("breakdown_header", lang) + "\n" + "\n".join(rows)


def excerpt(text: str, limit: int = 420) -> str:
    """The passage without its heading lines, cut at a sentence end; list lines stay lines."""
    lines = [
        line.rstrip()
        for line in text.splitlines()
        if line.strip() and not line.lstrip().startswith("#") and " › " not in line
    ]  # no heading breadcrumbs
    out: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) > limit and out:
            cut = max(line.rfind(ch, 0, max(0, limit - used)) for ch in "。！？.!?")
            if cut > 0:
                out.append(line[: cut + 1])
            break
        out.append(line)
        used += len(line)
    return "\n".join(out)
