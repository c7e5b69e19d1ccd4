"""The calculators and the knowledge base over the Model Context Protocol (official `mcp` SDK, 2.x).

Any agent that speaks MCP (Claude Desktop, Cursor, Cherry Studio, Dify) gets the same tools the
advisor uses, so its own assistant takes figures from code instead of recalling them:

- tools: every calculator of `tools.registry` and `search_knowledge`, generated from the one tool registry
  (`bot.core.toolbox.Toolbox`): the input schema is the tool's pydantic input model (the same schema as
  `/v1/tools/{name}` in `/openapi.json`), the output is structured with the output model's schema;
- resources: the GPU and model catalogs (`catalog://gpus`, `catalog://models`) and one entry each
  (`catalog://gpus/{name}`, `catalog://models/{name}`), as JSON;
- a prompt, `size_training_run`, that asks the assistant to size a run with the calculators (its
  text: `bot/llm/prompts/mcp_*.md`).

A bad argument or an unknown name (GPU, model, field, tool) comes back as an MCP tool error
(`isError: true`) naming the field and the closest known names in English and Chinese; an unknown
catalog entry or prompt is an invalid-params error (-32602). The session carries on.

Transports: `gpu-advisor mcp` (stdio) and streamable HTTP at `/mcp` in the API (`bot.api.routes.mcp`),
behind the API's bearer keys and rate limit.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, ToolAnnotations
from pydantic import ConfigDict, Field

from bot.core.toolbox import SEARCH, Toolbox
from bot.llm import prompts
from tools import registry
from tools.catalog.lookup import get_gpu, get_model, gpus, models
from tools.errors import AdvisorError

SERVER_NAME = "gpu-advisor"
INSTRUCTIONS = prompts.render("mcp_instructions", calculators=", ".join(registry.names()))
PROMPT = "size_training_run"
#: the calculators need no knowledge index: they answer at once, even while the index still loads
_CALCULATORS = Toolbox(None)


class _RawArguments(ArgModelBase):
    """Arguments passed through as sent: the tool's own input model validates them (and names the field)."""

    model_config = ConfigDict(extra="allow")

    def model_dump_one_level(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


def _both(err: AdvisorError) -> str:
    return err.message("en") if err.message("zh") == err.message("en") else f"{err.message('en')} / {err.message('zh')}"


def tool_error(err: AdvisorError) -> ToolError:
    """One line in both languages; the SDK sends it back as a tool result with isError set."""
    return ToolError(f"{err.field}: {_both(err)}" if err.field else _both(err))


def _near(name: str, known: list[str]) -> tuple[str, str]:
    """' Did you mean: …?' in English and Chinese: the closest of `known`, or all of them."""
    near = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    if near:
        return f" Did you mean: {', '.join(near)}?", f"您是否指：{'、'.join(near)}？"
    return f" Known: {', '.join(known)}.", f"可用：{'、'.join(known)}。"


def _tool(box_for: Callable[[], Toolbox], name: str) -> Tool:
    spec = _CALCULATORS.spec(name)
    box = box_for if name == SEARCH else (lambda: _CALCULATORS)

    def run(**arguments: Any) -> dict[str, Any]:
        try:
            return box().call(name, arguments)
        except AdvisorError as err:
            raise tool_error(err) from None

    return Tool(
        fn=run,
        name=name,
        title=name.replace("_", " "),
        description=spec.description or (spec.input_model.__doc__ or name).strip(),
        parameters=spec.input_model.model_json_schema(),
        fn_metadata=FuncMetadata(arg_model=_RawArguments, output_model=spec.output_model),
        is_async=False,
        annotations=ToolAnnotations(
            read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
        ),
    )


def _dump(records: Any) -> str:
    return json.dumps(records, ensure_ascii=False, indent=1)


def _entry(lookup: Callable[[str], Any], name: str) -> str:
    """One catalog record as JSON; an unknown name is 'resource not found' (-32602) listing the closest names."""
    try:
        return _dump(lookup(name).model_dump(mode="json"))
    except AdvisorError as err:
        raise ResourceNotFoundError(_both(err)) from None


class AdvisorServer(MCPServer):
    """`MCPServer` whose mistakes read like the calculators' own: an unknown tool is a tool error naming
    the closest tools, a bad prompt request an invalid-params error (not an internal error)."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context | None = None) -> Any:
        known = [t.name for t in await self.list_tools()]
        if name not in known:
            en, zh = _near(name, known)
            raise ToolError(f"name: Unknown tool {name!r}.{en} / 未知的工具“{name}”。{zh}")
        return await super().call_tool(name, arguments, context)

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Context | None = None
    ) -> Any:
        listed = {p.name: p for p in await self.list_prompts()}
        if name not in listed:
            en, zh = _near(name, list(listed))
            raise MCPError(INVALID_PARAMS, f"Unknown prompt {name!r}.{en} / 未知的提示“{name}”。{zh}")
        fields = [a.name for a in listed[name].arguments or []]
        for field in arguments or {}:
            if field not in fields:
                en, zh = _near(field, fields)
                raise MCPError(INVALID_PARAMS, f"{field}: Unknown argument {field!r}.{en} / 未知的参数“{field}”。{zh}")
        try:
            return await super().get_prompt(name, arguments, context)
        except ValueError as err:
            raise MCPError(INVALID_PARAMS, str(err).splitlines()[0]) from None


def build_server(box_for: Callable[[], Toolbox]) -> MCPServer:
    """The MCP server. `box_for()` returns the toolbox for search_knowledge (the advisor's, with its
    retriever); the calculators run without one."""
    server = AdvisorServer(
        SERVER_NAME,
        title="gpu-advisor",
        instructions=INSTRUCTIONS,
        version="0.1.0",
        tools=[_tool(box_for, name) for name in _CALCULATORS.names()],
        log_level="WARNING",
    )

    @server.resource(
        "catalog://gpus",
        name="gpus",
        title="GPU catalog",
        mime_type="application/json",
        description="Every GPU and accelerator in the catalog, each figure with its source and date.",
    )
    def gpu_catalog() -> str:
        return _dump([g.model_dump(mode="json") for g in gpus()])

    @server.resource(
        "catalog://models",
        name="models",
        title="Model catalog",
        mime_type="application/json",
        description="Every model in the catalog (architecture figures from published configs).",
    )
    def model_catalog() -> str:
        return _dump([m.model_dump(mode="json") for m in models()])

    @server.resource(
        "catalog://gpus/{name}",
        name="gpu",
        title="One GPU",
        mime_type="application/json",
        description="One GPU by name or alias, e.g. catalog://gpus/H800.",
    )
    def gpu_entry(name: str) -> str:
        return _entry(get_gpu, name)

    @server.resource(
        "catalog://models/{name}",
        name="model",
        title="One model",
        mime_type="application/json",
        description="One model by name or alias, e.g. catalog://models/Qwen2.5-72B.",
    )
    def model_entry(name: str) -> str:
        return _entry(get_model, name)

    @server.prompt(
        name=PROMPT,
        title="Size my training run",
        description="Ask the assistant to size a training or fine-tuning run with the calculators "
        "(fit_training, training_time, run_cost); without a model it asks you for one.",
    )
    def size_training_run(
        model: Annotated[str, Field(description="the model to train, e.g. Qwen2.5-72B or 70B")] = "",
        gpu: Annotated[str, Field(description="the GPU, e.g. H800, A100 80GB, 昇腾910B")] = "H800",
        method: Annotated[str, Field(description="full, lora or qlora")] = "full",
        tokens: Annotated[str, Field(description="training tokens, e.g. 1B or 500M")] = "1B",
        n_gpus: Annotated[str, Field(description="how many GPUs")] = "8",
    ) -> list[UserMessage]:
        run = {
            "gpu": gpu.strip() or "H800",
            "method": method.strip() or "full",
            "tokens": tokens.strip() or "1B",
            "n_gpus": n_gpus.strip() or "8",
        }
        if model.strip():
            return [UserMessage(prompts.render("mcp_size_run", model=model.strip(), **run))]
        return [UserMessage(prompts.render("mcp_size_run_ask", **run))]

    return server


__all__ = ["INSTRUCTIONS", "PROMPT", "SEARCH", "SERVER_NAME", "AdvisorServer", "build_server", "tool_error"]
