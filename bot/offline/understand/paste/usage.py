"""How much memory the user says the run takes, in their words ("机器内存直接就占了27个G", "显存占用为 18G", "it uses
28 GB of VRAM"): the largest such figure, in GB as written (people write G for GB). A card's size ("32GB 内存的
电脑") is no usage: a verb of taking must come before the figure."""

from __future__ import annotations

import re

_USED = re.compile(
    r"(?:占用|占了|占到|用了|用掉|吃了|吃掉|消耗了?)[^，,。.\d\n]{0,6}?(\d+(?:\.\d+)?)\s*个?\s*(?:g|gb|gib)(?![a-z])|"
    r"(?:uses?|using|takes?|taking|occup(?:y|ies|ying)|consum(?:es?|ing))\s+(?:about |around |almost |~)?"
    r"(\d+(?:\.\d+)?)\s*(?:gb|gib|g)(?![a-z])",
    re.IGNORECASE,
)
#: a figure above this is no one process's memory as people say it (a disk, a dataset)
_MOST = 4096.0


def used_gb(text: str) -> float | None:
    """The largest memory figure the user says the run takes, GB, or None."""
    found = [float(m.group(1) or m.group(2)) for m in _USED.finditer(text)]
    found = [f for f in found if 0 < f <= _MOST]
    return max(found) if found else None
