"""Number provenance: every figure in an answer must come from a tool call, a cited passage or the question.

`ground(answer, tool_outputs, passages, question)` finds the figures in `answer` (see `bot.grounding.numbers`
for what counts as a figure and what is ignored) and looks each one up among the sources, in this
order: tool calls (id such as "call_1"), cited passages (id such as "kb:tco-breakeven#3"), the
question (id "question"). An integer 0–10 used as a count in prose is accepted as "count".

Matching rules (kept small on purpose):
  * Tool outputs are walked once: every numeric leaf of nested dicts and lists, with a unit taken
    from its key (`*_gb` GB, `*_gib` GiB, `*_cny` CNY, `hours`, `days`, `months`, `*_tflops`,
    `*_w`, `*_per_s`, `mfu` and `*_fraction` a fraction, `*_pct` %, `n_gpus` GPUs, `params_b`
    billions of parameters), from a parent key (`breakdown_gb: {weights: ...}`) or, for an
    `{key, value, unit}` assumption, from its `unit` or `key`. Strings in outputs are read like
    passages. Pass the whole call (input and output) to ground parallel degrees such as "TP=8".
  * Same dimension, converted: GB/GiB/TB/MB, W/kW, h/day/week/month (730 h)/year, % and fraction,
    TFLOPS and FLOP/s, 万元 and 元 (magnitudes are applied at extraction). A leaf whose key names
    no unit matches a figure of any unit by the number as written (and a % by its fraction).
    A figure without unit matches any source by the number as written.
  * GB and GiB labels are also accepted swapped (vendor "80 GB" is 80 GiB), both ways.
  * Rounding: |written - source| <= half a unit of the last written digit ("172万" ~ 1,720,320,
    "3.5 天" ~ 3.47 days, "约 1.1×" ~ 1.12) + `rel_tol` (0.01 %) x |figure| + the source's own rounding when
    the source is text. Parameter counts are nominal labels: "70B" matches 70.6e9 (10 %).
  * No arithmetic: a sum, difference or ratio of two sources is NOT grounded unless a tool output
    it. The only derived forms are the unit conversions above.
Signs are ignored: values are compared by magnitude.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from bot.grounding.numbers import extract_numbers
from bot.grounding.sources import DEFAULT_REL_TOL, QUESTION_ID, build_index, lookup, unit_from_key

__all__ = ["GroundingResult", "NumberRef", "UngroundedNumber", "citation_markers", "ground", "unit_from_key"]

COUNT_ID = "count"


class NumberRef(BaseModel):
    """A figure in the answer and the source it was found in: a tool call id, a passage id,
    "question" or "count" (a small count in prose). Dumps to `bot.core.trace.NumberRef`."""

    model_config = ConfigDict(frozen=True)

    text: str
    value: float
    unit: str
    source_id: str
    start: int = Field(default=0, exclude=True)
    end: int = Field(default=0, exclude=True)


class UngroundedNumber(BaseModel):
    model_config = ConfigDict(frozen=True)

    text: str
    value: float
    unit: str
    start: int = Field(default=0, exclude=True)
    end: int = Field(default=0, exclude=True)


class GroundingResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    numbers: list[NumberRef]  # the figures with a source, in order (with `ungrounded`: every figure)
    ungrounded: list[UngroundedNumber]  # the figures with no source; must end up empty

    @property
    def ok(self) -> bool:
        return not self.ungrounded


# ---- sources ------------------------------------------------------------------------------------
def ground(
    answer: str,
    tool_outputs: Mapping[str, Any],
    passages: Mapping[str, str],
    question: str,
    *,
    rel_tol: float = DEFAULT_REL_TOL,
    shown: Mapping[str, Iterable[str]] | None = None,
) -> GroundingResult:
    """Find every figure in `answer` and the source it comes from; list those with none.

    `shown` (passage id -> the markers that cite it, such as "[2]") makes a passage a source only for
    the figures of a paragraph that shows one of its markers: a note's figure needs its citation
    beside it. Without `shown` any listed passage is a source."""
    if shown is not None:
        return _ground_cited(answer, tool_outputs, passages, question, rel_tol, shown)
    index = build_index(tool_outputs, passages, question)
    refs: list[NumberRef] = []
    missing: list[UngroundedNumber] = []
    for n in extract_numbers(answer):
        source = lookup(n, index, rel_tol)
        if source is None and n.prose_count:
            source = COUNT_ID
        if source is None and _quoted_from_question(answer, n.start, n.end, question):
            source = QUESTION_ID
        if source is None:
            missing.append(UngroundedNumber(text=n.text, value=n.value, unit=n.unit, start=n.start, end=n.end))
        else:
            refs.append(NumberRef(text=n.text, value=n.value, unit=n.unit, source_id=source, start=n.start, end=n.end))
    return GroundingResult(numbers=refs, ungrounded=missing)


def _ground_cited(
    answer: str,
    tool_outputs: Mapping[str, Any],
    passages: Mapping[str, str],
    question: str,
    rel_tol: float,
    shown: Mapping[str, Iterable[str]],
) -> GroundingResult:
    refs: list[NumberRef] = []
    missing: list[UngroundedNumber] = []
    offset = 0
    for block in re.split(r"(\n\s*\n)", answer):
        cited = {pid: text for pid, text in passages.items() if any(m and m in block for m in shown.get(pid, ()))}
        part = ground(block, tool_outputs, cited, question, rel_tol=rel_tol)
        refs += [r.model_copy(update={"start": r.start + offset, "end": r.end + offset}) for r in part.numbers]
        missing += [u.model_copy(update={"start": u.start + offset, "end": u.end + offset}) for u in part.ungrounded]
        offset += len(block)
    return GroundingResult(numbers=refs, ungrounded=missing)


def citation_markers(citations: Iterable[Any]) -> dict[str, list[str]]:
    """The ways an answer shows each citation: "[n]" by its place in the list (the LLM's `ref`), "[n]"
    by its note's place among the cited notes (the offline sources list), and its id or doc id."""
    citations = list(citations)
    docs = list(dict.fromkeys(c.doc_id for c in citations))
    return {
        c.id: [f"[{i}]", f"[{docs.index(c.doc_id) + 1}]", c.id, f"[{c.doc_id}]"]
        for i, c in enumerate(citations, start=1)
    }


_QUOTES = {"“": "”", '"': '"', "「": "」", "‘": "’", "'": "'"}


def _quoted_from_question(answer: str, start: int, end: int, question: str) -> bool:
    """A figure inside a quoted span the user typed verbatim ("unknown model “通义30万”") echoes the
    question; it states nothing new."""
    line_start = answer.rfind("\n", 0, start) + 1
    for open_q, close_q in _QUOTES.items():
        left = answer.rfind(open_q, line_start, start)
        if left < 0:
            continue
        right = answer.find(close_q, end)
        if right < 0 or "\n" in answer[left:right]:
            continue
        quoted = answer[left + 1 : right]
        if quoted and quoted in question:
            return True
    return False
