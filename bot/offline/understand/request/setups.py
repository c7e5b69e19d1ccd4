"""Setups named with their own counts ("8张4090 或者 6张v100 能运行吗", "4x A100 or 8x L40S"): each card with the
count said beside it, so that each setup is weighed as named (the parser keeps one GPU count per question)."""

from __future__ import annotations

import re

from bot.offline.understand.names import _names, _norm
from bot.offline.understand.question import ParsedQuestion

_COUNT_FIRST = re.compile(r"^\s*(\d{1,3})\s*(?:张|块|个|台|卡|片|x|×|\*)?\s*(.+?)\s*$", re.I)
_COUNT_AFTER = re.compile(r"^\s*(.+?)\s*(?:x|×|\*)\s*(\d{1,3})\s*$", re.I)


#: the words that set two setups side by side ("8张4090 或者 6张v100", "4x A100 or 8x L40S")
#: the most characters between two setups said side by side
_GAP = 16
_OR = re.compile(r"或者|还是|或是|或|\bor\b|\bvs\.?\b|versus|/", re.I)


def named(p: ParsedQuestion) -> list[tuple[str, int]]:
    """(catalog GPU id, count) for each count span that names its card, in order; [] unless two or more cards
    are each named with a count of their own and set side by side (an "or" between the first two)."""
    found: list[tuple[str, int]] = []
    spans = p.mentions.get("n_gpus", [])
    text = p.text or ""
    at = [text.find(span) for span in spans[:2]]
    gap = text[at[0] + len(spans[0]) : at[1]] if len(spans) >= 2 and min(at) >= 0 else ""
    if not (0 < len(gap) <= _GAP and _OR.search(gap)):  # "8张4090 或者 6张v100": side by side, in one breath
        return []
    for span in spans:
        if m := _COUNT_FIRST.match(span):
            n, name = int(m.group(1)), m.group(2)
        elif m := _COUNT_AFTER.match(span):
            name, n = m.group(1), int(m.group(2))
        else:
            continue
        known = _names().lookup(_norm(name))
        gpu = known[1] if known else None
        if gpu and known[0] == "gpu" and n >= 1 and gpu not in (g for g, _ in found):
            found.append((gpu, n))
    return found if len(found) >= 2 else []
