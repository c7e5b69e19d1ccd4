"""The bot's one tool registry: the nine calculators of `tools` plus `search_knowledge`.

`Toolbox` holds the retriever (built once by the advisor) and describes every tool for the LLM and
the HTTP API; `ToolRun` executes calls for one answer, numbering them (`call_1`, `call_2`, …),
emitting started/finished events and keeping the `ToolCall` records and citations for the trace.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field, ValidationError, field_validator

from bot.core.planner import Emit, _ignore
from bot.core.trace import Citation, ToolCall
from knowledge.retrieval import Retriever, SearchKnowledgeInput, SearchKnowledgeOutput
from tools import registry
from tools.errors import AdvisorError, InvalidInput
from tools.schemas.common import WHITESPACE

SEARCH = "search_knowledge"
#: how a note from a user's own folder is labelled wherever it is cited: never mistaken for the catalog
USER_NOTE_LABEL = "用户资料 / user note: "


def label_user_notes(passages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Passages (as dicts) with every note from a user's folder titled `USER_NOTE_LABEL …`, in place."""
    for p in passages:
        if p.get("origin", "builtin") != "builtin" and not p["title"].startswith(USER_NOTE_LABEL):
            p["title"] = USER_NOTE_LABEL + p["title"]
    return passages


class SearchInput(SearchKnowledgeInput):
    """`search_knowledge`'s input as the tools take it: the schema says that a query needs a visible character."""

    query: str = Field(
        min_length=1,
        max_length=1000,
        description="the question or keywords, zh or en",
        json_schema_extra={"pattern": f"[^{WHITESPACE}]"},
    )

    @field_validator("query")
    @classmethod
    def _visible(cls, value: str) -> str:
        if not value.strip():
            raise InvalidInput("The search query is empty.", "检索内容为空。", field="query")
        return value


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_model: type[BaseModel]
    output_model: type[BaseModel]


class Toolbox:
    def __init__(self, retriever: Retriever | None):
        self.retriever = retriever

    def names(self) -> list[str]:
        return [*registry.names(), SEARCH]

    def spec(self, name: str) -> ToolSpec:
        if name == SEARCH:
            return ToolSpec(
                SEARCH,
                "Search the knowledge base (GPU buying notes in Chinese and English, corrections of "
                "common claims, prices and channels) and return passages to cite by id.",
                SearchInput,
                SearchKnowledgeOutput,
            )
        tool = registry.get(name)
        return ToolSpec(name, tool.description, tool.input_model, tool.output_model)

    def specs(self) -> list[ToolSpec]:
        return [self.spec(n) for n in self.names()]

    def call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """Run one tool on plain JSON arguments; AdvisorError for bad input or unknown names."""
        if name == SEARCH:
            try:
                inp = SearchInput.model_validate(args)
            except ValidationError as err:
                raise registry.invalid_from_validation(err, registry.field_names(SearchInput)) from None
            if self.retriever is None:
                return {"passages": []}
            passages = [
                p.model_dump() for p in self.retriever.search(inp.query, k=inp.k, lang=inp.lang, topics=inp.topics)
            ]
            return {"passages": label_user_notes(passages)}
        return registry.call(name, args)

    def run(self, emit: Emit = _ignore) -> ToolRun:
        return ToolRun(self, emit)


@dataclass
class ToolRun:
    """The tool calls of one answer."""

    box: Toolbox
    emit: Emit = _ignore
    calls: list[ToolCall] = field(default_factory=list)
    citations: list[Citation] = field(default_factory=list)
    attempts: int = 0  # every call, failed ones too, so ids never repeat
    errors: list[str] = field(default_factory=list)  # what the failed calls said, both languages: code's words
    #: ids of calls made to survey options (a row per card class or precision), not to size the answer's own job:
    #: what reads "the answer's fits" (the servers a count takes) leaves them out
    surveyed: set[str] = field(default_factory=set)

    def __call__(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """Call a tool, record it, return its output (AdvisorError propagates, recorded as an error event)."""
        self.attempts += 1
        call_id = f"call_{self.attempts}"
        self.emit({"type": "tool_started", "id": call_id, "tool": name, "input": args})
        try:
            output = self.box.call(name, args)
        except AdvisorError as err:
            self.errors += [m for m in (err.message("zh"), err.message("en")) if m not in self.errors]
            self.emit({"type": "tool_finished", "id": call_id, "tool": name, "error": err.message("en")})
            raise
        self.calls.append(ToolCall(id=call_id, tool=name, input=args, output=output))
        if name == SEARCH:
            self._cite(output["passages"])
        self.emit({"type": "tool_finished", "id": call_id, "tool": name, "output": output})
        return output

    @contextmanager
    def survey(self) -> Iterator[None]:
        """Mark the calls made inside the block as a survey of options (`surveyed`)."""
        start = len(self.calls)
        try:
            yield
        finally:
            self.surveyed.update(c.id for c in self.calls[start:])

    def offer(self, passages: list[dict[str, Any]]) -> list[int]:
        """Passages given to a planner up front (no tool call): citable like search results; their refs."""
        self._cite(label_user_notes(passages))
        refs = {c.id: i for i, c in enumerate(self.citations, start=1)}
        return [refs[p["id"]] for p in passages]

    def _cite(self, passages: list[dict[str, Any]]) -> None:
        known = {c.id for c in self.citations}
        for p in passages:
            if p["id"] not in known:
                self.citations.append(
                    Citation(id=p["id"], doc_id=p["doc_id"], title=p["title"], text=p["text"], source=p["source"])
                )
                known.add(p["id"])

    def outputs(self) -> dict[str, Any]:
        """Tool outputs by call id (what grounding matches numbers against)."""
        return {c.id: c.output for c in self.calls if c.tool != SEARCH}
