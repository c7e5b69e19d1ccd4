"""The MCP round trip per calculator call, next to the in-process `tools.call` in the same run.

    .venv/bin/python bench/mcp_roundtrip.py [--repeat 200] [--stdio] [--http]

Columns per tool, medians and p95 in microseconds:
- `tools.call`: validate the dict, run the calculator, dump the output (the in-process baseline);
- `mcp memory`: the MCP SDK's client talking to `bot.mcp.server`'s server in-process (JSON-RPC encoding,
  argument and structured-output validation, a worker thread per call) — what the protocol costs;
- `mcp stdio` (with --stdio): the same calls to a spawned `gpu-advisor mcp` over pipes — what a
  desktop agent pays per call;
- `mcp http` (with --http): the same calls to `/mcp` of a spawned `gpu-advisor serve` on loopback,
  with a bearer key (one session, each call a POST through the key check and the rate limit).
The ratio column is `mcp memory` / `tools.call`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))  # what the API tests start

from loopback import free_port
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from served import CLI, clean_env, serve

from bot.core.toolbox import Toolbox
from bot.mcp.server import build_server
from tools import registry

CALLS = {
    "gpu_specs": {"gpu": "H800"},
    "fit_training": {"model": "Llama-3.1-70B", "gpu": "A100 80GB", "method": "lora", "n_gpus": 8},
    "fit_inference": {"model": "Qwen2.5-72B", "gpu": "H20", "n_gpus": 4, "context_len": 32768},
    "training_time": {"model": "7B", "gpu": "H800", "n_gpus": 8, "tokens": 1e9, "method": "full"},
    "rent_vs_buy": {"gpu": "H800", "n_gpus": 8, "hours_per_day": 12, "months": 36},
}


def _stats(samples: list[float]) -> tuple[float, float]:
    samples = sorted(samples)
    return statistics.median(samples) * 1e6, samples[int(0.95 * (len(samples) - 1))] * 1e6


def in_process(repeat: int) -> dict[str, tuple[float, float]]:
    out = {}
    for name, args in CALLS.items():
        registry.call(name, args)
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            registry.call(name, args)
            times.append(time.perf_counter() - t)
        out[name] = _stats(times)
    return out


async def over_mcp(client: Client, repeat: int) -> dict[str, tuple[float, float]]:
    out = {}
    for name, args in CALLS.items():
        await client.call_tool(name, args)
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            result = await client.call_tool(name, args)
            times.append(time.perf_counter() - t)
            assert not result.is_error, result.content
        out[name] = _stats(times)
    return out


async def memory(repeat: int):
    box = Toolbox(None)
    async with Client(build_server(lambda: box)) as client:
        return await over_mcp(client, repeat)


async def stdio(repeat: int):
    exe = Path(sys.executable).with_name("gpu-advisor")
    async with Client(StdioServerParameters(command=str(exe), args=["mcp"]), read_timeout_seconds=120) as client:
        return await over_mcp(client, repeat)


async def over_http(base: str, key: str, repeat: int):
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
        async with Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client:
            return await over_mcp(client, repeat)


def http(repeat: int):
    tmp = Path(tempfile.mkdtemp(prefix="bench-mcp-"))
    env = clean_env(tmp / "data", GPU_ADVISOR_RATE_LIMIT="0")
    made = subprocess.run(
        [str(CLI), "keys", "create", "bench", "--json"], env=env, cwd=tmp, capture_output=True, text=True, check=True
    )
    key = json.loads(made.stdout)["key"]
    with serve(env, cwd=tmp, port=free_port(), timeout_s=300) as base:
        return anyio.run(over_http, base, key, repeat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--stdio", action="store_true", help="also time a spawned `gpu-advisor mcp`")
    parser.add_argument("--http", action="store_true", help="also time /mcp of a spawned `gpu-advisor serve`")
    opts = parser.parse_args()
    base = in_process(opts.repeat)
    mem = anyio.run(memory, opts.repeat)
    extra = {}
    if opts.stdio:
        extra["mcp stdio µs"] = anyio.run(stdio, opts.repeat)
    if opts.http:
        extra["mcp http µs"] = http(opts.repeat)
    head = f"{'tool':16} {'tools.call µs':>15} {'mcp memory µs':>15} {'ratio':>7}"
    print(head + "".join(f" {title:>15}" for title in extra))
    for name in CALLS:
        b, m = base[name], mem[name]
        line = f"{name:16} {b[0]:8.0f} p95 {b[1]:<5.0f}{m[0]:8.0f} p95 {m[1]:<5.0f}{m[0] / b[0]:6.1f}x"
        for figures in extra.values():
            line += f" {figures[name][0]:8.0f} p95 {figures[name][1]:<5.0f}"
        print(line)


if __name__ == "__main__":
    main()
