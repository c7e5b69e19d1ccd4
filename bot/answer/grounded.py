"""The answer's figures against their sources (tool outputs, cited passages, the question), and the last
resort that drops any sentence whose figure has none: no unsourced number ever leaves."""

from __future__ import annotations

import logging

from bot.answer.gate import uncode
from bot.core.planner import PlanResult
from bot.grounding.check import GroundingResult, citation_markers, ground
from bot.grounding.inputs import trusted_tool_outputs
from bot.grounding.repair import drop_ungrounded_sentences

log = logging.getLogger("gpu_advisor.advisor")


def ground_result(question: str, result: PlanResult, strict: bool = False) -> GroundingResult:
    """The answer's figures (code included) against their sources. `strict` (a model wrote the answer):
    a tool call fed a figure the model made up (a price, a token count not in the question) is no
    source, and a note's figure counts only beside its citation marker."""
    passages = {c.id: c.text for c in result.citations}
    if strict:
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
