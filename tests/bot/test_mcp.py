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
from mcp.shared.exceptions import MCPError

import tools
from bot.core.toolbox import Toolbox
from bot.mcp.server import build_server

EXE = Path(sys.executable).with_name("gpu-advisor")
ROOT = Path(__file__).resolve().parents[2]
#: one valid call per calculator (a new calculator needs its line here)
VALID = {
    "gpu_specs": {"gpu": "H800"},
    "compare_gpus": {"gpus": ["H800", "A100 80GB"]},
    "fit_training": {"model": "Qwen2.5-72B", "gpu": "H800", "method": "qlora", "n_gpus": 1},
    "fit_inference": {"model": "Qwen2.5-72B", "gpu": "H20", "n_gpus": 4, "context_len": 32768},
    "training_time": {"model": "7B", "gpu": "H800", "n_gpus": 8, "tokens": 1e9, "method": "full"},
    "inference_speed": {"model": "Llama-3.1-8B", "gpu": "H800"},
    "run_cost": {"gpu": "H800", "gpu_hours": 100},
    "rent_vs_buy": {"gpu": "H800", "n_gpus": 8, "hours_per_day": 12, "months": 36},
    "recommend_gpus": {"model": "Llama-3.1-70B", "workload": "infer"},
    "model_memory": {"model": "70B"},
    "power_draw": {"gpu": "H800", "n_gpus": 8},
    "precision_speedup": {"model": "7B", "gpu": "H800"},
    "diagnose": {"model": "Qwen2.5-7B", "gpu": "4090", "n_gpus": 3, "framework": "vllm", "tp": 3},
    "plan_serving": {"model": "Qwen3-32B", "gpus": ["H20"], "concurrency": 200},
    "plan_system": {"job": "finetune", "model": "Qwen2.5-14B", "budget_cny": 2000000},
    "plan_cluster": {"gpu": "H800", "n_gpus": 32},
}
FIT = VALID["fit_training"]
#: a mistake a model makes -> what the tool error must name
MISTAKES = [
    ("inference_speed", {"model": "Llama-3.1-8B", "gpu": "H2000"}, ["gpu:", "H20", "H200", "未知"]),
    ("fit_training", {**FIT, "n_gpus": "eight"}, ["n_gpus:", "integer"]),
    ("fit_training", {"gpu": "H800"}, ["model:", "Missing field 'model'", "缺少字段"]),
    ("fit_training", {**FIT, "n_gpu": 2}, ["n_gpu:", "Unknown field 'n_gpu'", "Did you mean: n_gpus"]),
    ("fit_trainin", FIT, ["Unknown tool 'fit_trainin'", "Did you mean: fit_training"]),
    ("search_knowledge", {"query": "  "}, ["query:", "检索内容为空"]),
]


@pytest.mark.slow  # starts a server process
def test_stdio_server_lists_calls_reads_and_reports_errors(tmp_path):
    env = {
        "GPU_ADVISOR_DATA_DIR": str(tmp_path / "data"),
        "DATABASE_URL": f"sqlite:///{tmp_path}/s.sqlite3",
        "PATH": os.environ.get("PATH", ""),
        "ANONYMIZED_TELEMETRY": "False",
        "PYTHONPATH": str(ROOT),
    }  # the checkout under test, whichever install the script belongs to

    async def session():
        params = StdioServerParameters(command=str(EXE), args=["mcp"], env=env, cwd=str(tmp_path))
        async with Client(params, read_timeout_seconds=60) as client:
            listed = (await client.list_tools()).tools
            calls = {name: await client.call_tool(name, args) for name, args in VALID.items()}
            mistakes = [await client.call_tool(name, args) for name, args, _ in MISTAKES]
            after = await client.call_tool("run_cost", {"gpu": "H800", "gpu_hours": 100})
            found = await client.call_tool("search_knowledge", {"query": "昇腾910B 能不能训练 70B", "k": 2})
            resources = {str(r.uri) for r in (await client.list_resources()).resources}
            templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
            reads = {
                uri: json.loads((await client.read_resource(uri)).contents[0].text)
                for uri in [
                    "catalog://gpus",
                    "catalog://models",
                    "catalog://gpus/%E6%98%87%E8%85%BE910B",
                    "catalog://models/70B",
                ]
            }
            try:
                await client.read_resource("catalog://gpus/H2000")
                unknown_entry = None
            except MCPError as err:
                unknown_entry = err
            return listed, calls, mistakes, after, found, resources, templates, reads, unknown_entry

    listed, calls, mistakes, after, found, resources, templates, reads, unknown_entry = anyio.run(session)
    assert set(VALID) == set(tools.registry.names())
    assert [t.name for t in listed] == [*tools.registry.names(), "search_knowledge"]
    assert all(t.output_schema and t.annotations.read_only_hint for t in listed)
    for name, result in calls.items():
        assert not result.is_error, (name, result.content)
        assert result.structured_content == tools.call(name, VALID[name]), name
        assert json.loads(result.content[0].text) == result.structured_content  # for clients without structure
    for (name, _, words), result in zip(MISTAKES, mistakes, strict=True):
        assert result.is_error and all(w in result.content[0].text for w in words), (name, result.content)
    assert not after.is_error and after.structured_content["total_cny"] > 0  # the session carried on
    assert not found.is_error and len(found.structured_content["passages"]) == 2
    assert resources == {"catalog://gpus", "catalog://models"}
    assert templates == {"catalog://gpus/{name}", "catalog://models/{name}"}
    assert {m["id"] for m in reads["catalog://models"]} == {m.id for m in tools.catalog.lookup.models()}
    assert {g["id"] for g in reads["catalog://gpus"]} == {g.id for g in tools.catalog.lookup.gpus()}
    assert reads["catalog://gpus/%E6%98%87%E8%85%BE910B"]["id"] == "ascend-910b"
    assert reads["catalog://models/70B"]["id"] == "generic-70b"
    assert unknown_entry.code == -32602 and "H200" in unknown_entry.message and "未知" in unknown_entry.message


def test_the_sizing_prompt_with_without_and_with_wrong_arguments():
    async def session():
        async with Client(build_server(lambda: Toolbox(None))) as client:
            listed = (await client.list_prompts()).prompts
            full = await client.get_prompt("size_training_run", {"model": "Qwen2.5-7B", "n_gpus": "4", "tokens": "2B"})
            bare = await client.get_prompt("size_training_run")
            errors = []
            for name, args in [("size_training_run", {"modle": "7B"}), ("size_run", None)]:
                try:
                    await client.get_prompt(name, args)
                except MCPError as err:
                    errors.append(err)
            return listed, full, bare, errors

    listed, full, bare, errors = anyio.run(session)
    assert [(p.name, p.title) for p in listed] == [("size_training_run", "Size my training run")]
    assert all(a.description and not a.required for a in listed[0].arguments)
    text = full.messages[0].content.text
    assert "Qwen2.5-7B" in text and "4 x H800" in text and "2B tokens" in text and "fit_training" in text
    assert "ask me which model" in bare.messages[0].content.text and "8 x H800" in bare.messages[0].content.text
    assert [e.code for e in errors] == [-32602, -32602]
    assert "modle:" in errors[0].message and "Did you mean: model" in errors[0].message
    assert "Did you mean: size_training_run" in errors[1].message


def test_calculators_answer_while_the_knowledge_index_cannot_load():
    """stdio loads the index on first use; a Chroma server that is down fails search_knowledge alone."""
    from tools.errors import AdvisorError

    def no_index() -> Toolbox:
        raise AdvisorError("The Chroma server cannot be used.", "无法使用 Chroma 服务器。", field="chroma")

    async def session():
        async with Client(build_server(no_index)) as client:
            return (
                await client.call_tool("gpu_specs", {"gpu": "H800"}),
                await client.call_tool("search_knowledge", {"query": "H800"}),
            )

    calc, search = anyio.run(session)
    assert not calc.is_error and calc.structured_content == tools.call("gpu_specs", {"gpu": "H800"})
    assert search.is_error and "chroma: The Chroma server cannot be used." in search.content[0].text
