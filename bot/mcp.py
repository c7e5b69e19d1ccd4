"""The calculators and the knowledge base over the Model Context Protocol (official `mcp` SDK, 2.x).

Any agent that speaks MCP (Claude Desktop, Cursor, Cherry Studio, Dify) gets the same tools the
advisor uses, so its own assistant takes figures from code instead of recalling them:

- tools: the nine calculators and `search_knowledge`, generated from the one tool registry
  (`bot.toolbox.Toolbox`): the input schema is the tool's pydantic input model (the same schema as
  `/v1/tools/{name}` in `/openapi.json`), the output is structured with the output model's schema;
- resources: the GPU and model catalogs (`catalog://gpus`, `catalog://models`) and one entry each
  (`catalog://gpus/{name}`, `catalog://models/{name}`), as JSON;
- a prompt, `size_training_run`, that asks the assistant to size a run with the calculators.

A bad argument or an unknown name comes back as an MCP tool error (`isError: true`) naming the
field and the closest known names in English and Chinese; the session carries on.

Transports: `gpu-advisor mcp` (stdio) and streamable HTTP at `/mcp` in the API (`bot.api.mcp_http`),
behind the API's bearer keys and rate limit.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp_types import ToolAnnotations
from pydantic import ConfigDict

from bot.toolbox import SEARCH, Toolbox
from tools.catalog import get_gpu, get_model, gpus, models
from tools.errors import AdvisorError

SERVER_NAME = "gpu-advisor"
INSTRUCTIONS = (
    "Deterministic GPU sizing for AI training and inference. Never estimate memory, time, speed or cost "
    "yourself: call fit_training / fit_inference / training_time / inference_speed / run_cost / rent_vs_buy / "
    "recommend_gpus, and quote their outputs and assumptions. Use search_knowledge for background and cite "
    "the passage ids it returns. GPU and model names accept aliases (e.g. 'A100 80GB', '昇腾910B', '70B')."
)


class _RawArguments(ArgModelBase):
    """Arguments passed through as sent: the tool's own input model validates them (and names the field)."""

    model_config = ConfigDict(extra="allow")

    def model_dump_one_level(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


def tool_error(err: AdvisorError) -> ToolError:
    """One line in both languages; the SDK sends it back as a tool result with isError set."""
    text = err.message("en") if err.message("zh") == err.message("en") else f"{err.message('en')} / {err.message('zh')}"
    return ToolError(f"{err.field}: {text}" if err.field else text)


def _tool(box_for: Callable[[], Toolbox], name: str) -> Tool:
    spec = Toolbox(None).spec(name)  # names and schemas only; calls go to the live toolbox

    def run(**arguments: Any) -> dict[str, Any]:
        try:
            return box_for().call(name, arguments)
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
        annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                                    open_world_hint=False),
    )


def _dump(records: Any) -> str:
    return json.dumps(records, ensure_ascii=False, indent=1)


def build_server(box_for: Callable[[], Toolbox]) -> MCPServer:
    """The MCP server. `box_for()` returns the toolbox to call (the advisor's, with its retriever)."""
    server = MCPServer(
        SERVER_NAME,
        title="gpu-advisor",
        instructions=INSTRUCTIONS,
        version="0.1.0",
        tools=[_tool(box_for, name) for name in Toolbox(None).names()],
        log_level="WARNING",
    )

    @server.resource("catalog://gpus", name="gpus", title="GPU catalog", mime_type="application/json",
                     description="Every GPU and accelerator in the catalog, each figure with its source and date.")
    def gpu_catalog() -> str:
        return _dump([g.model_dump(mode="json") for g in gpus()])

    @server.resource("catalog://models", name="models", title="Model catalog", mime_type="application/json",
                     description="Every model in the catalog (architecture figures from published configs).")
    def model_catalog() -> str:
        return _dump([m.model_dump(mode="json") for m in models()])

    @server.resource("catalog://gpus/{name}", name="gpu", title="One GPU", mime_type="application/json",
                     description="One GPU by name or alias, e.g. catalog://gpus/H800.")
    def gpu_entry(name: str) -> str:
        try:
            return _dump(get_gpu(name).model_dump(mode="json"))
        except AdvisorError as err:
            raise ResourceError(err.message("en")) from None

    @server.resource("catalog://models/{name}", name="model", title="One model", mime_type="application/json",
                     description="One model by name or alias, e.g. catalog://models/Qwen2.5-72B.")
    def model_entry(name: str) -> str:
        try:
            return _dump(get_model(name).model_dump(mode="json"))
        except AdvisorError as err:
            raise ResourceError(err.message("en")) from None

    @server.prompt(name="size_training_run", title="Size my training run",
                   description="Ask the assistant to size a training or fine-tuning run with the calculators.")
    def size_training_run(model: str, gpu: str = "H800", method: str = "full", tokens: str = "1B",
                          n_gpus: str = "8") -> list[UserMessage]:
        return [UserMessage(
            f"Size this run with the gpu-advisor tools, not from memory: fine-tune {model} with method "
            f"'{method}' on {n_gpus} x {gpu} over {tokens} tokens. Call fit_training (does it fit, per-GPU "
            f"memory, what would make it fit), training_time (hours, GPU-hours, the MFU band) and run_cost "
            f"(with those GPU-hours), then answer with the verdict, the figures and the assumptions the tools "
            f"returned. If it does not fit, call recommend_gpus for {model}."
        )]

    return server


__all__ = ["INSTRUCTIONS", "SEARCH", "SERVER_NAME", "build_server", "tool_error"]
