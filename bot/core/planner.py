"""The planner interface both modes implement, and the events they emit while they work.

A planner turns a question plus its conversation context into an answer, calling tools through a
`ToolRun` (which records every call for the trace). The offline planner (`bot.offline.rules`) and the LLM
agent (`bot.llm.agent`) are interchangeable behind `Planner`.

Events (plain dicts, the wire format of `/v1/ask/stream`):
    {"type": "tool_started", "id": "call_1", "tool": "fit_training", "input": {...}}
    {"type": "tool_finished", "id": "call_1", "tool": "fit_training", "output": {...}}   (or "error": "...")
    {"type": "delta", "text": "..."}              a piece of the final, grounded answer
    {"type": "final", "trace": {...}}             the AnswerTrace
    {"type": "error", "code": "...", "message": "..."}
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from bot.core.trace import Citation, ToolCall

Emit = Callable[[dict[str, Any]], None]


def _ignore(_event: dict[str, Any]) -> None:
    return None


@dataclass
class Context:
    """What a planner knows about the conversation before this question."""

    conversation_id: str
    history: list[tuple[str, str]] = field(default_factory=list)  # (question, answer), oldest first
    state: dict[str, Any] = field(default_factory=dict)  # slots the last turn left (model, gpu, count…)
    language: str | None = None  # forced answer language ("zh"/"en"), else detected from the question
    #: where the question was asked, as the asker's page shows it: a repository ("QwenLM/Qwen3") whose model a
    #: question that names none means (`bot.offline.understand.request.source`); None: no such place (a chat)
    source: str | None = None


@dataclass
class PlanResult:
    answer: str
    language: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    citations: list[Citation] = field(default_factory=list)
    follow_ups: list[str] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)  # what the next turn inherits
    #: figures the planner itself offers (the defaults it proposes when it asks a question), by source id;
    #: grounding accepts them under that id, so they are traced like tool outputs
    offered: dict[str, Any] = field(default_factory=dict)
    #: files the answer hands over ("生成方案": proposal.md, bom.xlsx, the charts), by file name: the advisor keeps
    #: them for the conversation and links them under the answer (`bot/core/attachments.py`)
    attachments: dict[str, bytes] = field(default_factory=dict)


class Planner(Protocol):
    mode: str  # "offline" or "llm"

    def plan(self, text: str, ctx: Context, tools: ToolRunFactory, emit: Emit = _ignore) -> PlanResult: ...


class ToolRunFactory(Protocol):
    def __call__(self, emit: Emit) -> Any: ...


class PlannerError(Exception):
    """The planner could not answer (endpoint down, timeout, model misbehaving).

    `kind` says which, for the fallback note and the trace: "endpoint" (unreachable, 5xx, malformed),
    "timeout" (the answer's deadline passed), "context" (the request does not fit the model's context),
    "refused" (the configured model cannot be used as an agent).
    """

    def __init__(self, message: str, kind: str = "endpoint"):
        super().__init__(message)
        self.kind = kind
