"""`Advisor`: the facade every interface calls — `advisor.ask(text, conversation_id) -> AnswerTrace`.

It records the question before answering (nothing a user sent is lost), rebuilds the
conversation context from the store, runs the planner (the LLM agent when an endpoint is
configured, else the offline planner; the offline planner again when the endpoint fails), checks
that every number in the answer has a source, and stores the trace.
"""

from __future__ import annotations

import logging
import queue
import re
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy.exc import DBAPIError

from bot.answer.gate import check as gate_check
from bot.answer.gate import uncode
from bot.answer.stream_gate import StreamGate
from bot.core.language import detect_language
from bot.core.planner import Context, Emit, Planner, PlannerError, PlanResult, _ignore
from bot.core.settings import Settings
from bot.core.store import LOCAL_OWNER, Store, UnknownConversation
from bot.core.toolbox import Toolbox
from bot.core.trace import AnswerTrace, NumberRef, Ungrounded
from bot.grounding.check import citation_markers, ground
from bot.grounding.inputs import trusted_tool_outputs
from bot.grounding.repair import drop_ungrounded_sentences
from tools.errors import AdvisorError

log = logging.getLogger("gpu_advisor.advisor")

MAX_QUESTION_CHARS = 4000
#: control characters a platform may pass through (NUL cannot even be stored in PostgreSQL text)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
HISTORY_TURNS = 6
FALLBACK_NOTES = {  # by PlannerError.kind, and "gate" for an answer the quality gate refused
    "endpoint": {"zh": "（大模型服务暂时不可用，以下为离线规划器的回答。）",
                 "en": "(The language-model endpoint is unavailable; this answer comes from the offline planner.)"},
    "timeout": {"zh": "（大模型没能在时限内答完，以下为离线规划器的回答。）",
                "en": "(The language model did not finish in time; this answer comes from the offline planner.)"},
    "context": {"zh": "（问题和对话超出了大模型的上下文长度，以下为离线规划器的回答。）",
                "en": "(The conversation exceeds the language model's context; this answer comes from the offline planner.)"},
    "refused": {"zh": "（配置的大模型不能调用工具，以下为离线规划器的回答。）",
                "en": "(The configured language model cannot call tools; this answer comes from the offline planner.)"},
    "gate": {"zh": "（大模型的回答没有通过数字与结论核对，以下为离线规划器的回答。）",
             "en": "(The language model's answer did not pass our checks of figures and verdict; "
                   "this answer comes from the offline planner.)"},
}
FALLBACK_NOTE = FALLBACK_NOTES["endpoint"]


class QuestionError(AdvisorError):
    """The question itself cannot be used (empty, too long)."""


@dataclass
class Advisor:
    """Built once per process (`Advisor.from_settings()`); thread-safe for concurrent `ask` calls."""

    store: Store
    toolbox: Toolbox
    offline: Planner
    llm: Planner | None = None
    #: how many answers plan at once in this process. Offline planning is pure CPU under one GIL: one
    #: at a time keeps the event loop of a server (and its health checks) responsive and answers
    #: first-come first-served; an LLM answer mostly waits on the network, so many may run together.
    gate: threading.Semaphore | None = None

    def __post_init__(self) -> None:
        if self.gate is None:
            self.gate = threading.Semaphore(1 if self.llm is None else 32)

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> Advisor:
        from bot.offline.rules import RulesPlanner
        from knowledge.retrieval import Retriever, set_default_retriever

        settings = settings or Settings()
        retriever = Retriever.from_config(settings.knowledge())
        set_default_retriever(retriever)
        llm = None
        if settings.llm_enabled:
            from bot.llm.agent import AgentPlanner

            try:
                llm = AgentPlanner.from_settings(settings)
            except PlannerError as err:  # e.g. a hosted endpoint without a key: answer offline, say why in the log
                log.warning("LLM endpoint not usable, running offline: %s", err)
        return cls(store=Store(settings.store_url), toolbox=Toolbox(retriever), offline=RulesPlanner(), llm=llm)

    @property
    def mode(self) -> str:
        return self.llm.mode if self.llm else self.offline.mode

    # ------------------------------------------------------------------------------------------
    def ask(self, text: str, conversation_id: str | None = None, lang: str | None = None,
            emit: Emit = _ignore, owner: str = LOCAL_OWNER, channel: str = "api") -> AnswerTrace:
        """Answer `text` in conversation `conversation_id` (a new one when None).

        `owner` is the principal the conversation belongs to (see `bot.core.store`): an API key, a widget
        site, a channel workspace ("slack:T0123", "wecom:<corp id>"). A conversation another owner
        holds is refused with `UnknownConversation`, exactly like a missing one."""
        text = _CONTROL.sub("", (text or "")).strip()
        self._check(text)
        cid = conversation_id or uuid.uuid4().hex
        idx = self.store.start_turn(cid, text, channel=channel, owner=owner)
        try:
            with self.gate:  # type: ignore[union-attr]
                trace, state = self._answer(text, cid, lang, emit, fresh=idx == 0)
        except Exception as err:
            self.store.fail_turn(cid, idx, f"{type(err).__name__}: {err}")
            raise
        self.store.finish_turn(cid, idx, trace, state)
        return trace

    def stream(self, text: str, conversation_id: str | None = None, lang: str | None = None,
               owner: str = LOCAL_OWNER, channel: str = "api") -> Iterator[dict[str, Any]]:
        """Events while answering (tool started/finished, answer deltas), then the final trace or an error."""
        events: queue.Queue = queue.Queue()
        done = object()

        def work() -> None:
            sent: list[str] = []

            def put(event: dict[str, Any]) -> None:
                if event.get("type") == "delta":
                    sent.append(event["text"])
                events.put(event)

            try:
                trace = self.ask(text, conversation_id, lang, emit=put, owner=owner, channel=channel)
                streamed = "".join(sent)  # sentences the LLM's answer already sent, grounded (bot/answer/stream_gate.py)
                if not trace.answer.startswith(streamed):
                    log.error("streamed text is not a prefix of the answer; sending the rest may repeat it")
                    streamed = ""
                for piece in _pieces(trace.answer[len(streamed):]):
                    events.put({"type": "delta", "text": piece})
                events.put({"type": "final", "trace": trace.model_dump(mode="json")})
            except AdvisorError as err:
                events.put({"type": "error", "code": error_code(err),
                            "message": err.message(lang or detect_language(text or ""))})
            except UnknownConversation:
                zh = (lang or detect_language(text or "")) == "zh"
                events.put({"type": "error", "code": "unknown_conversation",
                            "message": "没有这个对话。" if zh else "No such conversation."})
            except DBAPIError:
                log.exception("store unavailable")
                zh = (lang or detect_language(text or "")) == "zh"
                events.put({"type": "error", "code": "store_unavailable",
                            "message": "服务暂时不可用，请稍后重试。" if zh else
                            "The service is briefly unavailable; try again shortly."})
            except Exception:  # never a stack trace to the client
                log.exception("stream failed")
                events.put({"type": "error", "code": "internal", "message": "internal error"})
            finally:
                events.put(done)

        threading.Thread(target=work, daemon=True).start()
        while (event := events.get()) is not done:
            yield event

    # ------------------------------------------------------------------------------------------
    def _check(self, text: str) -> None:
        if not text:
            raise QuestionError("Please type a question, e.g. “Will a 70B model fit on one A100 80GB?”",
                                "请输入一个问题，例如：“70B 模型单卡 A100 80GB 放得下吗？”", field="text")
        if len(text) > MAX_QUESTION_CHARS:
            raise QuestionError(f"The question is {len(text)} characters; please keep it under {MAX_QUESTION_CHARS}.",
                                f"问题长度为 {len(text)} 个字符，请控制在 {MAX_QUESTION_CHARS} 个字符以内。", field="text")

    def _context(self, cid: str, lang: str | None, fresh: bool) -> Context:
        if fresh:  # the first turn: nothing to read back
            return Context(conversation_id=cid, language=lang)
        turns = self.store.turns(cid, limit=HISTORY_TURNS + 1)
        answered = [t for t in turns if t.status == "answered" and t.answer]
        history = [(t.question, t.answer) for t in answered]
        state = answered[-1].state if answered else self.store.last_state(cid)
        return Context(conversation_id=cid, history=history, state=state or {}, language=lang)

    def _answer(self, text: str, cid: str, lang: str | None, emit: Emit, fresh: bool = False) -> tuple[AnswerTrace, dict]:
        ctx = self._context(cid, lang, fresh)
        mode = self.offline.mode
        result: PlanResult | None = None
        fallback: tuple[str, str] | None = None  # (kind, reason) when the LLM's answer is not shipped
        reasons: list[str] = []
        if self.llm is not None:
            runs: list[Any] = []

            def tools(e: Emit) -> Any:
                runs.append(self.toolbox.run(e))
                return runs[-1]

            streamer = StreamGate(text, ctx.language or detect_language(text), ctx.state, emit,
                                  run_of=lambda: runs[-1] if runs else None)
            relay = streamer.relay(emit)
            try:
                result = self.llm.plan(text, ctx, tools, relay)
                mode = self.llm.mode
                if streamer.started:  # sent sentence by sentence, each time the answer so far passed the gate
                    result.answer = streamer.text
                    reasons = list(streamer.refused)
                else:
                    result, reasons, fallback = self._gated(text, ctx, result, relay, streamer)
            except PlannerError as err:
                if streamer.started:  # what was sent passed the gate and is never taken back: it is the answer
                    log.warning("LLM planner failed after streaming part of its answer; keeping that part: %s", err)
                    run = runs[-1]
                    result = PlanResult(answer=streamer.text, language=streamer.lang, tool_calls=run.calls,
                                        citations=run.citations, state=dict(ctx.state))
                    mode, reasons = self.llm.mode, list(streamer.refused)
                else:
                    log.warning("LLM planner failed, answering offline: %s", err)
                    result, fallback = None, (getattr(err, "kind", "endpoint"), str(err))
        if fallback is not None:
            mode = "llm-fallback"
        if result is None:
            result = self.offline.plan(text, ctx, self.toolbox.run, emit)
            if fallback is not None:
                note = FALLBACK_NOTES.get(fallback[0], FALLBACK_NOTES["endpoint"])
                result.answer = note[result.language] + "\n\n" + result.answer
        strict = mode == "llm"
        grounding = self._ground(text, result, strict)
        if grounding.ungrounded:  # never let an unsourced number out, even from a template
            log.error("ungrounded numbers in %s answer: %s", mode, [u.text for u in grounding.ungrounded])
            result.answer = drop_ungrounded_sentences(result.answer, grounding)
            grounding = self._ground(text, result, strict)
        trace = AnswerTrace(
            conversation_id=cid,
            answer=result.answer,
            language=result.language if result.language in ("zh", "en") else "en",
            mode=mode,
            tool_calls=result.tool_calls,
            citations=result.citations,
            numbers=[NumberRef(**n.model_dump()) for n in grounding.numbers],
            ungrounded=[Ungrounded(**u.model_dump()) for u in grounding.ungrounded],
            follow_ups=result.follow_ups,
            fallback_reason=f"{fallback[0]}: {fallback[1]}" if fallback else None,
            gate=reasons,
        )
        return trace, result.state

    def _ground(self, question: str, result: PlanResult, strict: bool = False):
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

    def _gated(self, text: str, ctx: Context, result: PlanResult, emit: Emit,
               streamer: StreamGate | None = None) -> tuple[PlanResult | None, list[str], tuple[str, str] | None]:
        """The quality gate (bot/answer/gate.py), one repair round, then the last resort of dropping the sentences
        with unsourced figures. Returns the result to ship (None: answer offline), every reason met, and
        the fallback (kind, reason) when the LLM's answer is not shipped."""
        verdict = self._gate(text, ctx, result)
        seen = list(verdict.reasons)
        if verdict.ok:
            return result, seen, None
        log.info("quality gate: %s (%s)", ", ".join(verdict.reasons), verdict.details)
        repair = getattr(self.llm, "repair", None)
        if repair is not None:
            fixed = repair(text, ctx, result, verdict.report(result.language), emit)
            if fixed is not None and streamer is not None and streamer.started:  # the repaired answer streamed
                fixed.answer = streamer.text
                return fixed, seen + [r for r in streamer.refused if r not in seen], None
            if fixed is not None:
                result = fixed
                verdict = self._gate(text, ctx, result)
                seen += [r for r in verdict.reasons if r not in seen]
                if verdict.ok:
                    return result, seen, None
        if verdict.droppable():
            trimmed = drop_ungrounded_sentences(result.answer, verdict.offending())
            if not trimmed.strip():
                log.warning("grounding removed every sentence of the LLM answer (%s); answering offline",
                            ", ".join(verdict.reasons))
                seen.append("empty")
                return None, seen, ("gate", "grounding removed every sentence (" + ", ".join(verdict.reasons) + ")")
            result.answer = trimmed
            again = self._gate(text, ctx, result)
            if again.ok:
                return result, seen, None
            verdict = again
        log.warning("LLM answer rejected by the quality gate: %s", ", ".join(verdict.reasons))
        return None, seen, ("gate", ", ".join(verdict.reasons))

    def _gate(self, text: str, ctx: Context, result: PlanResult):
        return gate_check(text, result, lang=result.language, state=ctx.state,
                          finish_reason=getattr(result, "finish_reason", None),
                          tool_errors=getattr(result, "tool_errors", 0))


def error_code(err: AdvisorError) -> str:
    """The wire code of a user error: unknown_gpu, unknown_model, invalid_question or invalid_input."""
    from tools.errors import UnknownGpu, UnknownModel

    if isinstance(err, UnknownGpu):
        return "unknown_gpu"
    if isinstance(err, UnknownModel):
        return "unknown_model"
    return "invalid_question" if isinstance(err, QuestionError) else "invalid_input"


def _pieces(answer: str, size: int = 48) -> Iterator[str]:
    """The answer in small pieces for streaming, split at line ends where possible."""
    for line in answer.splitlines(keepends=True):
        for i in range(0, len(line), size):
            yield line[i:i + size]
