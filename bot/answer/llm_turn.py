"""One LLM turn: the agent plans with the tools, its answer streams through the grounded stream gate or
passes the quality gate (one repair round, then dropping the sentences with unsourced figures), and
when it cannot be shipped the reason says why the offline planner answers instead."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from bot.answer.gate import check as gate_check
from bot.answer.stream_gate import StreamGate
from bot.core.language import detect_language
from bot.core.planner import Context, Emit, Planner, PlannerError, PlanResult
from bot.core.toolbox import Toolbox
from bot.grounding.repair import drop_ungrounded_sentences

log = logging.getLogger("gpu_advisor.advisor")

FALLBACK_NOTES = {  # by PlannerError.kind, and "gate" for an answer the quality gate refused
    "endpoint": {
        "zh": "（大模型服务暂时不可用，以下为离线规划器的回答。）",
        "en": "(The language-model endpoint is unavailable; this answer comes from the offline planner.)",
    },
    "timeout": {
        "zh": "（大模型没能在时限内答完，以下为离线规划器的回答。）",
        "en": "(The language model did not finish in time; this answer comes from the offline planner.)",
    },
    "context": {
        "zh": "（问题和对话超出了大模型的上下文长度，以下为离线规划器的回答。）",
        "en": "(The conversation exceeds the language model's context; this answer comes from the offline planner.)",
    },
    "refused": {
        "zh": "（配置的大模型不能调用工具，以下为离线规划器的回答。）",
        "en": "(The configured language model cannot call tools; this answer comes from the offline planner.)",
    },
    "gate": {
        "zh": "（大模型的回答没有通过数字与结论核对，以下为离线规划器的回答。）",
        "en": "(The language model's answer did not pass our checks of figures and verdict; "
        "this answer comes from the offline planner.)",
    },
}
FALLBACK_NOTE = FALLBACK_NOTES["endpoint"]


@dataclass
class LlmTurn:
    """What the LLM turn produced: the result to ship (None: answer offline), the mode it was written in,
    every quality-gate reason met, and the fallback (kind, reason) when the LLM's answer is not shipped."""

    result: PlanResult | None
    mode: str
    reasons: list[str] = field(default_factory=list)
    fallback: tuple[str, str] | None = None


def llm_turn(llm: Planner, toolbox: Toolbox, text: str, ctx: Context, emit: Emit) -> LlmTurn:
    """Plan with the LLM; stream what passes the gate; fall back (result None) when nothing can be shipped."""
    runs: list[Any] = []

    def tools(e: Emit) -> Any:
        runs.append(toolbox.run(e))
        return runs[-1]

    streamer = StreamGate(
        text, ctx.language or detect_language(text), ctx.state, emit, run_of=lambda: runs[-1] if runs else None
    )
    relay = streamer.relay(emit)
    try:
        result = llm.plan(text, ctx, tools, relay)
        if streamer.started:  # sent sentence by sentence, each time the answer so far passed the gate
            result.answer = streamer.text
            return LlmTurn(result, llm.mode, list(streamer.refused))
        shipped, reasons, fallback = gated(llm, text, ctx, result, relay, streamer)
        return LlmTurn(shipped, llm.mode, reasons, fallback)
    except PlannerError as err:
        if streamer.started:  # what was sent passed the gate and is never taken back: it is the answer
            log.warning("LLM planner failed after streaming part of its answer; keeping that part: %s", err)
            run = runs[-1]
            result = PlanResult(
                answer=streamer.text,
                language=streamer.lang,
                tool_calls=run.calls,
                citations=run.citations,
                state=dict(ctx.state),
            )
            return LlmTurn(result, llm.mode, list(streamer.refused))
        log.warning("LLM planner failed, answering offline: %s", err)
        return LlmTurn(None, llm.mode, [], (getattr(err, "kind", "endpoint"), str(err)))


def fallback_note(kind: str, lang: str) -> str:
    """The line an offline answer opens with when the LLM's could not be shipped."""
    return FALLBACK_NOTES.get(kind, FALLBACK_NOTES["endpoint"])[lang]


def gated(
    llm: Planner, text: str, ctx: Context, result: PlanResult, emit: Emit, streamer: StreamGate | None = None
) -> tuple[PlanResult | None, list[str], tuple[str, str] | None]:
    """The quality gate (bot/answer/gate.py), one repair round, then the last resort of dropping the sentences
    with unsourced figures. Returns the result to ship (None: answer offline), every reason met, and
    the fallback (kind, reason) when the LLM's answer is not shipped."""
    verdict = _gate(text, ctx, result)
    seen = list(verdict.reasons)
    if verdict.ok:
        return result, seen, None
    log.info("quality gate: %s (%s)", ", ".join(verdict.reasons), verdict.details)
    repair = getattr(llm, "repair", None)
    if repair is not None:
        fixed = repair(text, ctx, result, verdict.report(result.language), emit)
        if fixed is not None and streamer is not None and streamer.started:  # the repaired answer streamed
            fixed.answer = streamer.text
            return fixed, seen + [r for r in streamer.refused if r not in seen], None
        if fixed is not None:
            result = fixed
            verdict = _gate(text, ctx, result)
            seen += [r for r in verdict.reasons if r not in seen]
            if verdict.ok:
                return result, seen, None
    if verdict.droppable():
        trimmed = drop_ungrounded_sentences(result.answer, verdict.offending())
        if not trimmed.strip():
            log.warning(
                "grounding removed every sentence of the LLM answer (%s); answering offline", ", ".join(verdict.reasons)
            )
            seen.append("empty")
            return None, seen, ("gate", "grounding removed every sentence (" + ", ".join(verdict.reasons) + ")")
        result.answer = trimmed
        again = _gate(text, ctx, result)
        if again.ok:
            return result, seen, None
        verdict = again
    log.warning("LLM answer rejected by the quality gate: %s", ", ".join(verdict.reasons))
    return None, seen, ("gate", ", ".join(verdict.reasons))


def _gate(text: str, ctx: Context, result: PlanResult):
    return gate_check(
        text,
        result,
        lang=result.language,
        state=ctx.state,
        finish_reason=getattr(result, "finish_reason", None),
        tool_errors=getattr(result, "tool_errors", 0),
    )
