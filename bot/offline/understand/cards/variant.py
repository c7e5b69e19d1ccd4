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


#: a model number that is a host part, not a card: "INTEL C621服务器主板", "Xeon 6133", "X570 motherboard"
_HOST_PART_AFTER = C(r"\s*(?:服务器|server\s*)?(?:主板|芯片组|motherboard|mainboard|chipset|处理器|cpu\b)")
_HOST_PART_BEFORE = C(r"(?:intel|xeon|至强|金牌|银牌|epyc|ryzen|酷睿|core\s*i\d|主板|cpu)[^\n\d]{0,4}$")


def host_part(text: str, start: int, end: int) -> bool:
    """The model number at `text[start:end]` names a motherboard's chipset or a CPU (the words around it say so)."""
    return bool(_HOST_PART_AFTER.match(text, end) or _HOST_PART_BEFORE.search(text, max(0, start - 12), start))


#: a card named by its family alone ("A100", "nvidia h100", "910B"): the catalog's default variant of that family
_BARE = C(r"(?:nvidia\s+|huawei\s+|ascend\s+)?([a-z]{0,2}\d{2,4}[a-z]?)")


_CHOICE = C(r"还是|或者|哪个|哪一个|对比|比较|区别|\bvs\.?\b|\bversus\b|\bor\b|\bcompare|\bwhich\b|\bdifference")


def named_variant(w) -> None:
    """One card named twice, by its family ("qwen2.5-vl-72b oom in 4 A100") and by its variant ("GPU type: NVIDIA
    A100-PCIE-40GB"): the variant is the card, and the family's default (the A100 80GB) is not a second card."""
    from tools.catalog.lookup import get_gpu
    from tools.errors import AdvisorError

    said = w.slots["mentions"].get("gpus") or []
    if _CHOICE.search(w.src):  # "H100 还是 H100 NVL": the two are the choice asked
        return
    bare = {m.group(1).lower() for t in said if (m := _BARE.fullmatch(t.strip().lower()))}
    if not bare or len(w.slots["gpus"]) < 2:
        return
    for text in said:
        low = text.strip().lower()
        if _BARE.fullmatch(low):
            continue
        family = next((b for b in bare if b in low.replace("nvidia ", "").split("-")[0].split()[:1]), None)
        if family is None:
            continue
        try:
            default, variant = get_gpu(family).id, get_gpu(text).id
        except AdvisorError:
            continue
        if default != variant and default in w.slots["gpus"] and variant in w.slots["gpus"]:
            w.slots["gpus"].remove(default)
