"""The parser's working text: the question NFKC-normalised and lower-cased, a masked copy that later
stages read (each recognised span replaced by a marker of the same length, so positions stay those of the
user's text), and the slots found so far. Shared by the slot stages (`money`, `quantities`, `words`).
"""

from __future__ import annotations

import re
import unicodedata

from bot.offline.understand import lexicon as lx
from bot.offline.understand.lexicon import to_number
from bot.offline.understand.names import _C, GPU_MARK, USED_MARK

G = f"{GPU_MARK}+"


class Work:
    """The text being parsed, its masked copy and the slots found so far."""

    def __init__(self, text: str):
        # a Markdown-escaped star ("3\\*8*A100" pasted from a GitHub issue) is the star it shows (same length: spans hold)
        self.raw = unicodedata.normalize("NFKC", text).replace("\u3000", " ").replace("\\*", " *")
        low = self.raw.lower()
        self.src = low if len(low) == len(self.raw) else self.raw
        self.t = self.src
        self.slots: dict = {"text": text, "mentions": {}, "ranges": {}, "approximate": [], "invalid": [],
                            "user_figures": [], "models": [], "gpus": [], "unknown_gpus": [], "unknown_models": [],
                            "stand_ins": {}, "stand_in_basis": {}}  # fmt: skip
        #: (slot, start, end) of every span a stage recognised, on `raw`: the request's mentions (request/reader.py)
        self.spans: list[tuple[str, int, int]] = []
        #: traffic said as a count of the people who use it ("给 300 人用", "for 500 users"): not a concurrency slot
        #: (those are daily users, request/figures.py), but the classifier's traffic flag as a concurrency is
        self.people = False

    def span(self, start: int, end: int) -> str:
        return self.raw[start:end].strip()

    def mask(self, start: int, end: int, mark: str = USED_MARK) -> None:
        self.t = self.t[:start] + mark * (end - start) + self.t[end:]

    def note(self, slot: str, start: int, end: int) -> None:
        self.slots["mentions"].setdefault(slot, []).append(self.span(start, end))
        self.spans.append((slot, start, end))
        before, after = self.src[max(0, start - 6) : start], self.src[end : end + 4]
        if (
            (_APPROX_BEFORE.search(before) and not _NOT_APPROX.search(self.src[max(0, start - 12) : start]))
            or _APPROX_AFTER.search(after)
            or _APPROX_IN.search(self.src[start:end])
        ):
            if slot not in self.slots["approximate"]:
                self.slots["approximate"].append(slot)

    def put(self, slot: str, value, m: re.Match, group: int = 0, *, mark: str = USED_MARK, keep: bool = True) -> None:
        """Set `slot` (first mention wins unless keep=False), note and mask the match."""
        if slot not in self.slots or not keep:
            self.slots[slot] = value
        self.note(slot, m.start(group), m.end(group))
        self.mask(m.start(), m.end(), mark)


_APPROX_BEFORE = _C(lx.APPROX_BEFORE)
_APPROX_AFTER = _C(lx.APPROX_AFTER)
_APPROX_IN = _C(r"约|大概|左右|around|about|~")
_NOT_APPROX = _C(r"(?:what|how)\s+about\s*$")


def num_range(text: str) -> tuple[float, float] | None:
    """ "8" -> (8, 8); "30-50" -> (30, 50); "两到三" -> (2, 3); None when not a number."""
    parts = re.split(rf"\s*(?:到|至|~|–|—|(?<=[\d{lx.ZH_DIGIT_CHARS}十])-)\s*", text.strip(), maxsplit=1)
    values = [to_number(p) for p in parts]
    if any(v is None for v in values):
        return None
    lo, hi = values[0], values[-1]
    # "30-50万": the magnitude written once applies to both ends
    if (
        len(values) == 2
        and not re.search(r"[万亿千]", parts[0])
        and (base := to_number(re.sub(r"[万亿千\s]", "", parts[1])))
    ):
        lo *= hi / base
    return lo, hi


def set_number(w: Work, slot: str, text: str, m: re.Match, group: int, scale: float = 1.0, *, as_int: bool = False):
    rng = num_range(text)
    if rng is None:
        return None
    lo, hi = rng[0] * scale, rng[1] * scale
    if lo != hi:
        w.slots["ranges"].setdefault(slot, [lo, hi])
    value = round(hi) if as_int else hi
    w.put(slot, value, m, group)
    return value
