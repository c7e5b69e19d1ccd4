"""Cards and vendors the user rules out: "不用 H100", "不要 A100 和 H800", "除了 4090", "without H100",
"not NVIDIA", "非英伟达". A card named right after a negating word (or in a list joined to one) leaves the
`gpus` slot for `excluded_gpus`; a vendor word so placed goes to `excluded_vendors`. Their mentions take the role
`excluded` (the coverage gate says they were left out as asked), and every composer drops them from the
candidates it compares (`bot.offline.compose.shortlist.allowed`).

    >>> from bot.offline.understand.parse import parse
    >>> p = parse("不用 H100，300 QPS 跑 Qwen2.5-7B 要几张卡？")
    >>> p.gpus, p.excluded_gpus
    ([], ['h100-sxm5-80gb'])
"""

from __future__ import annotations

import re
from typing import Any

from bot.offline.understand.names import _C, _names, _norm

#: a negating word right before a name: "不用", "不要", "除了", "without", "not", "no", "except", "other than"
_NEGATION = _C(
    r"(?:不用|不要|不考虑|不想用|不能用|不打算用|别用|排除|除了|除去|除|非|不是|without|except(?:\s+for)?|excluding|"
    r"exclude|other\s+than|instead\s+of|rather\s+than|avoid(?:ing)?|not|no)"
    r"\s*(?:用|买|上|选|考虑|使用|采购|the\s+|an?\s+|using\s+|use\s+|buy(?:ing)?\s+)?\s*$"
)
#: what joins one ruled-out card to the next in a list ("不用 H100、A100 和 H800")
_LIST_GAP = re.compile(r"\s*(?:[、/,，]|和|与|或者?|及|也不用|\band\b|\bor\b|\bnor\b)?\s*(?:the\s+)?", re.IGNORECASE)
#: vendor words -> the catalog's vendor
_VENDORS = {"nvidia": "nvidia", "英伟达": "nvidia", "n卡": "nvidia", "amd": "amd", "华为": "huawei",
            "huawei": "huawei", "昇腾": "huawei", "ascend": "huawei"}  # fmt: skip
_VENDOR = _C(r"(?<![a-z])(" + "|".join(sorted(map(re.escape, _VENDORS), key=len, reverse=True)) + r")(?![a-z])")
_VENDOR_TAIL = re.compile(r"\s*(?:的)?\s*(?:卡|显卡|gpus?|cards?|芯片|chips?)?\s*$", re.IGNORECASE)


def _gpu_id(w: Any, start: int, end: int) -> str:
    typed = w.span(start, end)
    names = _names()
    hit = names.lookup(_norm(typed), typed) or names.fuzzy(_norm(typed), typed)
    return hit[1] if hit and hit[0] == "gpu" else typed


def excluded(w: Any) -> None:
    """Move the cards (and vendors) the question rules out from the candidates to the excluded slots."""
    w.slots.setdefault("excluded_gpus", [])
    w.slots.setdefault("excluded_vendors", [])
    cards = sorted((i, s, e) for i, (slot, s, e) in enumerate(w.spans) if slot in ("gpus", "unknown_gpus"))
    cards.sort(key=lambda x: x[1])
    negated_end = None  # where the last ruled-out card ends (a list continues from there)
    for i, start, end in cards:
        before = w.src[max(0, start - 16) : start]
        listed = negated_end is not None and _LIST_GAP.fullmatch(w.src[negated_end:start]) is not None
        if not (_NEGATION.search(before) or listed):
            negated_end = None
            continue
        slot = w.spans[i][0]
        gid = _gpu_id(w, start, end) if slot == "gpus" else w.span(start, end)
        if gid in w.slots[slot]:
            w.slots[slot].remove(gid)
        if gid not in w.slots["excluded_gpus"]:
            w.slots["excluded_gpus"].append(gid)
        w.spans[i] = ("excluded_gpus", start, end)
        negated_end = end
    for m in _VENDOR.finditer(w.t):
        if _NEGATION.search(w.src[max(0, m.start() - 16) : m.start()]):
            vendor = _VENDORS[m.group(1)]
            if vendor not in w.slots["excluded_vendors"]:
                w.slots["excluded_vendors"].append(vendor)
            w.note("excluded_vendors", *m.span())
            w.mask(*m.span())
