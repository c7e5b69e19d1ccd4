"""`AnswerTrace`: what every interface returns or renders (DESIGN.md, "Two modes, one trace")."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class ToolCall(BaseModel):
    id: str
    tool: str
    input: dict[str, Any]
    output: dict[str, Any]


class Citation(BaseModel):
    id: str  # the passage id, e.g. "selection-order#2"
    doc_id: str
    title: str
    text: str
    source: str


class NumberRef(BaseModel):
    text: str
    value: float
    unit: str = ""
    source_id: str  # a tool call id, a citation id, or "question"


class Ungrounded(BaseModel):
    text: str
    value: float
    unit: str = ""


class MentionUse(BaseModel):
    """A span of the question that carries a name or a figure, and how the answer covers it (coverage gate)."""

    text: str
    role: str  # bot/offline/understand/request/model.py ROLES
    #: "input" (fed a tool call: `fed` says which), "named" (the answer says it), "explained" (the answer says
    #: why it was not used), "unused" (none of these: never shipped)
    use: Literal["input", "named", "explained", "unused"]
    fed: str | None = None  # "fit_training.n_gpus"


class Unused(BaseModel):
    text: str
    role: str


class AnswerTrace(BaseModel):
    conversation_id: str
    answer: str  # markdown, in the user's language
    language: Literal["zh", "en"]
    mode: Literal["offline", "llm", "llm-fallback"]
    tool_calls: list[ToolCall] = Field(default_factory=list)
    citations: list[Citation] = Field(default_factory=list)
    numbers: list[NumberRef] = Field(default_factory=list)
    ungrounded: list[Ungrounded] = Field(default_factory=list)
    #: every mention of the question and how the answer covers it (DESIGN.md, "the coverage gate")
    mentions: list[MentionUse] = Field(default_factory=list)
    #: mentions neither used nor explained (must be empty)
    unused: list[Unused] = Field(default_factory=list)
    #: asks a calculator answers that no call of this answer answered (bot/answer/asked.py): named in the answer
    unanswered: list[str] = Field(default_factory=list)
    follow_ups: list[str] = Field(default_factory=list)
    #: why an LLM answer was not shipped ("gate: no_tool_call", "timeout: ..."), when mode is llm-fallback
    fallback_reason: str | None = None
    #: every quality-gate reason met on the way (bot/answer/gate.py), also for an answer repaired in time
    gate: list[str] = Field(default_factory=list)
