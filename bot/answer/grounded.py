"""The answer's figures against their sources (tool outputs, cited passages, the question), and the last
resort that drops any sentence whose figure has none: no unsourced number ever leaves."""

from __future__ import annotations

import functools
import logging
import re

from bot.answer.gate import uncode
from bot.core.planner import PlanResult
from bot.core.toolbox import USER_NOTE_LABEL
from bot.grounding.check import GroundingResult, citation_markers, ground
from bot.grounding.inputs import trusted_tool_outputs
from bot.grounding.numbers import extract_numbers
from bot.grounding.repair import drop_ungrounded_sentences
from bot.grounding.sources import dimension

log = logging.getLogger("gpu_advisor.advisor")


#: what the catalog states for a GPU: a price, memory, bandwidth, compute, power
CATALOG_DIMENSIONS = frozenset({"CNY", "USD", "bytes", "bytes/s", "flop", "flop/s", "power"})


@functools.cache
def _gpu_names() -> re.Pattern:
    from tools.catalog.lookup import gpus

    names = {n.lower() for g in gpus() for n in (g.name, g.id, *g.aliases) if len(n) >= 3}
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"(?<![a-z0-9])(?:{alternatives})(?![a-z0-9])", re.IGNORECASE)


def note_without_catalog_figures(text: str) -> str:
    """A user note as a source: in each paragraph that names a catalog GPU, its prices and specs are blanked, so
    a note (poisoned or merely out of date) never grounds "H100 售价 1 元" against what the catalog holds."""
    out = []
    for block in re.split(r"(\n\s*\n)", text):
        if _gpu_names().search(block):
            for n in reversed(extract_numbers(block)):
                if dimension(n.unit) in CATALOG_DIMENSIONS:
                    block = block[: n.start] + " " * (n.end - n.start) + block[n.end :]
        out.append(block)
    return "".join(out)


def ground_result(question: str, result: PlanResult, strict: bool = False) -> GroundingResult:
    """The answer's figures (code included) against their sources. `strict` (a model wrote the answer):
    a tool call fed a figure the model made up (a price, a token count not in the question) is no
    source, a note's figure counts only beside its citation marker, and a user note never grounds a price
    or spec of a GPU the catalog holds (`note_without_catalog_figures`)."""
    passages = {c.id: c.text for c in result.citations}
    if strict:
        passages = {
            c.id: note_without_catalog_figures(c.text) if c.title.startswith(USER_NOTE_LABEL) else c.text
            for c in result.citations
        }
        outputs, tainted = trusted_tool_outputs(result.tool_calls, question)
        if tainted:
            log.warning("tool calls fed figures with no source, not used as sources: %s", tainted)
        outputs.update(result.offered)
        return ground(uncode(result.answer), outputs, passages, question, shown=citation_markers(result.citations))
    outputs = {c.id: {"input": c.input, "output": c.output} for c in result.tool_calls if c.tool != "search_knowledge"}
    outputs.update(result.offered)
    return ground(uncode(result.answer), outputs, passages, question)


def grounded(question: str, result: PlanResult, mode: str) -> GroundingResult:
    """Ground the answer; if a figure has no source (even from a template), drop its sentence and ground again."""
    strict = mode == "llm"
    grounding = ground_result(question, result, strict)
    if grounding.ungrounded:
        log.error("ungrounded numbers in %s answer: %s", mode, [u.text for u in grounding.ungrounded])
        result.answer = drop_ungrounded_sentences(result.answer, grounding)
        grounding = ground_result(question, result, strict)
    return grounding
