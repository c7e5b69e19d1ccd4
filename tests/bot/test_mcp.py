"""`gpu-advisor mcp` over stdio, spawned as a client would spawn it, driven by the MCP SDK's own client."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

import tools

pytestmark = pytest.mark.slow  # starts a server process

EXE = Path(sys.executable).with_name("gpu-advisor")
ARGS = {"model": "Qwen2.5-72B", "gpu": "H800", "method": "qlora", "n_gpus": 1}


def test_stdio_server_lists_calls_reads_and_reports_errors(tmp_path):
    env = {"GPU_ADVISOR_DATA_DIR": str(tmp_path / "data"), "DATABASE_URL": f"sqlite:///{tmp_path}/s.sqlite3",
           "PATH": os.environ.get("PATH", ""), "ANONYMIZED_TELEMETRY": "False"}

    async def session():
        params = StdioServerParameters(command=str(EXE), args=["mcp"], env=env, cwd=str(tmp_path))
        async with Client(params, read_timeout_seconds=60) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            fit = await client.call_tool("fit_training", ARGS)
            unknown = await client.call_tool("inference_speed", {"model": "Llama-3.1-8B", "gpu": "H2000"})
            after = await client.call_tool("run_cost", {"gpu": "H800", "gpu_hours": 100})
            catalog = await client.read_resource("catalog://models")
            return names, fit, unknown, after, catalog

    names, fit, unknown, after, catalog = anyio.run(session)
    assert names == [*tools.registry.names(), "search_knowledge"]
    assert not fit.is_error and fit.structured_content == tools.call("fit_training", ARGS)
    assert json.loads(fit.content[0].text) == fit.structured_content  # text for clients without structured output
    assert unknown.is_error and unknown.content[0].text.count("H") >= 2 and "gpu:" in unknown.content[0].text
    assert not after.is_error and after.structured_content["total_cny"] > 0
    ids = {m["id"] for m in json.loads(catalog.contents[0].text)}
    assert {m.id for m in tools.catalog.models()} == ids
