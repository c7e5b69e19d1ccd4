"""A consumer card named with a variant the catalog does not hold: "3060 Ti" (the catalog has the 3060), "4070 Ti",
"5060 Ti 8G" (only the 16 GB model is listed), "2080Ti 22G" (a board rebuilt with more memory). The name read alone
would be the listed card, whose memory and speed are not the user's; the whole mention is an unknown card instead."""

from __future__ import annotations

from bot.offline.understand.patterns import C
from tools.catalog.gpu_spec import GpuSpec

#: what may follow a card's name as part of it: a tier word ("ti", "super") or its memory ("8G", "-22GB", " 12 gb")
_TIER_AFTER = C(r"[ \t\-_]*(?:ti|super)(?![a-z\d])")
_MEMORY_AFTER = C(r"[ \t\-_]*(\d{1,3})\s*(?:g|gb|gib)(?![a-z\d])")
#: a size the driver reports a little under the card's nominal memory ("15G" on a 16 GB card) is that card's memory
_REPORTED_SHARE = 0.9


def unlisted_variant(text: str, end: int, card: GpuSpec) -> tuple[int, float | None] | None:
    """Where the variant named right after `card`'s name at `text[:end]` ends, and the memory it gives, when the
    catalog lacks it (a tier word, or a memory size that is not the card's own); None when what follows is no
    variant (or the card's own memory)."""
    if card.segment != "consumer":
        return None
    if m := _TIER_AFTER.match(text, end):
        memory = _MEMORY_AFTER.match(text, m.end())  # "3080 Ti 12G": the memory of the card the catalog lacks
        return (memory.end(), float(memory.group(1))) if memory else (m.end(), None)
    if (m := _MEMORY_AFTER.match(text, end)) and not (
        _REPORTED_SHARE * card.memory_gb <= int(m.group(1)) <= card.memory_gb
    ):
        return m.end(), float(m.group(1))
    return None
