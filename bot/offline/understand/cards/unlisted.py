"""Accelerators people run models on that the catalog does not list, named without a model number: a Tenstorrent
QuietBox, an AMD Strix Halo (Ryzen AI Max) with unified memory, an Apple M-series Mac, a Jetson board. Each is an
unknown card, said as such, so no default card (the A100) stands in for it without a word; a name the catalog
knows by now is left to the catalog."""

from __future__ import annotations

import re

from bot.offline.understand.names import GPU_MARK
from bot.offline.understand.work import Work
from tools.catalog.lookup import get_gpu
from tools.errors import AdvisorError

_UNLISTED = re.compile(
    r"\btenstorrent(?:\s+(?:quietbox|loudbox|wormhole|blackhole|galaxy)(?:\s+n\d{3}s?)?)?|\bquiet ?box\b|\bloud ?box\b|"
    r"\bwormhole\s+n\d{3}s?\b|\bstrix[\s-]?halo\b|\bryzen\s+ai\s+max\+?(?:\s+(?:pro\s+)?\d{3})?|"
    r"\b(?:apple\s+)?m[1-5]\s+(?:ultra|max|pro)\b|\bmac\s?studio\b|\bmac\s?mini\b|"
    r"\bjetson(?:\s+(?:agx\s+)?(?:orin|xavier|thor|nano)(?:\s+nx)?)?|\bdgx\s+spark\b|"
    r"\bcerebras\b|\bgroq\b|\bsambanova\b|海光\s*dcu|\bhygon\s+dcu\b|昆仑芯|\bkunlun\b|燧原|天数智芯|沐曦",
    re.IGNORECASE,
)


#: the memory said right after the name ("M2 Ultra 192GB", "Strix Halo (128 GB)"): what the fit is checked on
_MEMORY = re.compile(r"\s*[(（]?\s*(\d{1,4})\s*(?:gb|g|gib)\b", re.IGNORECASE)


def unlisted(w: Work) -> None:
    """Record each accelerator of `_UNLISTED` that the text names and the catalog lacks as an unknown card."""
    for m in _UNLISTED.finditer(w.t):
        name = w.span(*m.span())
        try:
            get_gpu(name)
            continue  # listed since: the catalog's reading stands
        except AdvisorError:
            pass
        if name not in w.slots["unknown_gpus"]:
            w.slots["unknown_gpus"].append(name)
        w.note("unknown_gpus", *m.span())
        w.mask(*m.span(), GPU_MARK)
        if (mem := _MEMORY.match(w.t, m.end())) and not w.slots.get("gpu_from_memory"):  # "Strix Halo 128GB"
            w.slots["gpu_from_memory"] = {"memory_gb": float(mem.group(1)), "gpu": None, "named": name, "unlisted": 1}
