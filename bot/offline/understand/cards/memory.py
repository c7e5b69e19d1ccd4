"""A card named only by its memory ("一张48G的显卡", "4张12g的显存卡", "24GB VRAM", a log's "15.74 GiB total
capacity"): the catalog card with that memory, or an unknown card said with the memory the user gave."""

from __future__ import annotations

from bot.offline.understand.names import _C, GPU_MARK
from bot.offline.understand.work import Work
from tools.catalog import lookup as catalog

#: "目前40G显存跑不起来", "48GB显存load …": the memory the user has (not one needed or used: `_NEEDED_BEFORE`);
#: with no card word, only a size some card has
_MEMORY_ONLY = _C(
    r"(?<![\d.a-z])(\d{1,3})\s*(?:g|gb)\s*(?:的)?\s*显存(?!\s*(?:占用|需求|需要|要求|才|就|够|左右|以上|起步))"
)
#: "一张48G的显卡", "4张12g的显存卡", "一台4GB内存的GPU", "24GB VRAM", and a log's "15.74 GiB total capacity"
_MEMORY_CARD = (
    _C(
        r"(?<![\d.])(\d{1,3})\s*(?:g|gb)\s*(?:的)?\s*(?:内存的?\s*)?(?:显存的?卡|显卡|卡|gpu|graphics card|vram card)(?![a-z])"
    ),
    _C(r"(?:显存|vram|gpu memory)\s*(?:是|为|有|:|：)\s*(\d{1,3})\s*(?:g|gb)(?![a-z\d])"),
    _C(r"(?:有|只有|一张|单张|\d\s*张)\s*(\d{1,3})\s*(?:g|gb)\s*(?:的)?\s*(?:显存|vram)"),
    _C(r"(?<![\d.])(\d{1,3})\s*(?:g|gb)\s*(?:of\s+)?vram\b"),
    _MEMORY_ONLY,
    _C(r"(?<![\d.a-z])(\d{1,2})\s*[x×*]\s*(\d{1,3})\s*(?:g|gb)(?![a-z\d])"),  # "8x24G": count × each card's memory
)
#: a memory size asked about as a requirement ("需要140G显存吗", "need 140GB VRAM"), not the card's own
_NEEDED_BEFORE = _C(
    r"(?:需要|要|need|needs|require|requires|at least|至少|占|占用|吃|用了|用掉|只用|消耗|多|少|超过|超出|差|剩|剩下|剩余|"
    r"节省|省|省下|降到|降低|增加|每张|每卡|共|总共|合计|总)\s*(?:about|约|大约|了)?\s*$"
)
_LOG_CAPACITY = _C(r"(\d{1,3}(?:\.\d+)?)\s*gib\s*total capacity|total capacity of\s*(\d{1,3}(?:\.\d+)?)\s*gib")


#: words that say whose card it is when only its memory is given ("每个 chip 64 GB 显存" on an Atlas 800 A3)
_VENDOR_WORDS = (
    ("huawei", _C(r"昇腾|华为|ascend|\bnpus?\b|atlas|mindspore|mindie|cann\b|910b")),
    ("hygon", _C(r"海光|hygon|\bdcu\b")),
    ("metax", _C(r"沐曦|metax")),
    ("biren", _C(r"壁仞|biren")),
    ("amd", _C(r"\bamd\b|rocm|\bmi\d{2,3}")),
    ("nvidia", _C(r"nvidia|英伟达|\bcuda\b|n卡")),
)


def vendor_named(text: str) -> str | None:
    """The vendor the text's words point at, if any (the first in `_VENDOR_WORDS` order)."""
    return next((vendor for vendor, rx in _VENDOR_WORDS if rx.search(text)), None)


def card_by_memory(
    memory_gb: float | None = None, reported_gib: float | None = None, vendor: str | None = None
) -> str | None:
    """The catalog card with this much memory (a log's GiB figure: the smallest nominal size at or above it):
    the named vendor's first, then NVIDIA's, then one that can be bought in mainland China, then the longest on the
    market. None when no card has that memory."""
    cards = [
        g
        for g in catalog.gpus()
        if (memory_gb is not None and g.memory_gb == memory_gb)
        # the memory PyTorch reports is a little under the nominal size (GiB and reserved memory): 15.74 -> 16
        or (reported_gib is not None and reported_gib <= g.memory_gb <= reported_gib / 0.9)
    ]
    if not cards and memory_gb is not None:  # "49G": the nearest size below, when it is that size less a little
        below = [g for g in catalog.gpus() if 0.9 * memory_gb <= g.memory_gb < memory_gb]
        top = max((g.memory_gb for g in below), default=None)
        cards = [g for g in below if g.memory_gb == top]
    if not cards:
        return None
    # the smallest size that holds it; the vendor the words name; else NVIDIA (the card most people who give only a
    # size have, with published rates for every precision: "8*80G" is an A100/A800/H800 box, not a Moore Threads
    # one); buyable in mainland China; the longest on the market (the largest installed base)
    return min(
        cards,
        key=lambda g: (
            g.memory_gb,
            g.vendor != vendor,
            g.vendor != "nvidia",
            not g.china.available,
            g.launch_year or 9999,
            g.id,
        ),
    ).id


def card_memory(w: Work) -> None:
    """No card named, but its memory is: the answer is computed on a catalog card with that memory, and says so; a
    size no catalog card has is said as an unknown card (never an A100 in its place)."""
    if w.slots["gpus"] or w.slots["unknown_gpus"]:
        return
    for rx in _MEMORY_CARD:
        if (m := rx.search(w.t)) and not _NEEDED_BEFORE.search(w.t[max(0, m.start() - 12) : m.start()]):
            memory = float(m.group(rx.groups))
            if rx is _MEMORY_ONLY and not card_by_memory(memory_gb=memory):
                continue  # "15G显存" with no card word: a size no card has is memory in use, not the card
            if rx.groups == 2:  # "8x24G": the count comes with the size
                w.slots.setdefault("n_gpus", int(m.group(1)))
            w.note("gpu_memory", *m.span(rx.groups))
            if gpu := card_by_memory(memory_gb=memory, vendor=vendor_named(w.src)):
                w.slots["gpus"].append(gpu)
                w.slots["gpu_from_memory"] = {"memory_gb": memory, "gpu": gpu}
                w.mask(*m.span(rx.groups), GPU_MARK)  # "4张12g的显存卡" -> "4张<card>的显存卡": its count reads on
            else:  # said as a card the catalog lacks, with the memory the user gave
                w.slots["unknown_gpus"].append(w.span(*m.span()))
                w.slots["gpu_from_memory"] = {"memory_gb": memory, "gpu": None}
            return
    if m := _LOG_CAPACITY.search(w.t):
        reported = float(m.group(1) or m.group(2))
        if gpu := card_by_memory(reported_gib=reported, vendor=vendor_named(w.src)):
            w.slots["gpus"].append(gpu)
            w.slots["gpu_from_memory"] = {"memory_gib": reported, "gpu": gpu}
            w.note("gpu_memory", *m.span())


#: a memory size right after a card's name: "昇腾910 32G", "Z9000（48GB）", "MI50=32G"
_MEMORY_RIGHT_AFTER = _C(r"\s*[（(\-=:：]?\s*(\d{1,3})\s*(?:g|gb|gib)(?![a-z\d])")


def named_memory(w: Work) -> None:
    """A card the catalog lacks, named with its memory ("昇腾910 32G 8卡"): the memory is the user's, so the answer is
    computed on the catalog card with that memory (the vendor the name or the words point at first) and says so,
    rather than asking for a memory already given."""
    if w.slots["gpus"] or w.slots.get("gpu_from_memory"):
        return
    for slot, start, end in list(w.spans):
        if slot != "unknown_gpus" or not (m := _MEMORY_RIGHT_AFTER.match(w.t, end)):
            continue
        name, memory = w.span(start, end), float(m.group(1))
        if name not in w.slots["unknown_gpus"] or not (
            gpu := card_by_memory(memory_gb=memory, vendor=vendor_named(name) or vendor_named(w.src))
        ):
            continue
        w.slots["unknown_gpus"].remove(name)
        w.slots["gpus"].append(gpu)
        w.slots["gpu_from_memory"] = {"memory_gb": memory, "gpu": gpu, "named": name}
        w.note("gpu_memory", *m.span(1))
        w.mask(m.start(1), m.end(), GPU_MARK)
        return
