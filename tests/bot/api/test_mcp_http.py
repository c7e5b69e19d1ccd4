"""MCP over streamable HTTP at /mcp of a real server on loopback, with the SDK's own client."""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest
from loopback import ServerThread
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

import tools

KEY = "k-test-0123456789abcdef0123"
FIT = {"model": "Llama-3.1-8B", "gpu": "A100 80GB", "method": "lora", "n_gpus": 1}


def _plain(schema: Any, defs: dict[str, Any]) -> Any:
    """A schema with every `$ref` replaced by what it names (openapi's components vs the model's $defs),
    without titles and null defaults (FastAPI leaves those out of /openapi.json)."""
    if isinstance(schema, dict):
        if "$ref" in schema:
            return _plain(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
        return {
            k: _plain(v, defs)
            for k, v in schema.items()
            if k not in ("title", "$defs") and not (k == "default" and v is None)
        }
    if isinstance(schema, list):
        return [_plain(v, defs) for v in schema]
    return schema


async def _with_client(base: str, fn, key: str | None = KEY):
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx.AsyncClient(headers=headers, timeout=30) as http:
        async with Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client:
            return await fn(client)


@pytest.fixture
def base(serve) -> str:
    return serve(api_keys=KEY)


def test_tools_have_the_openapi_schemas_and_answer_like_tools_call(base):
    async def session(client):
        listed = (await client.list_tools()).tools
        fit = await client.call_tool("fit_training", FIT)
        found = await client.call_tool("search_knowledge", {"query": "70B 单卡 A100 为什么 OOM", "k": 2})
        return listed, fit, found

    listed, fit, found = anyio.run(_with_client, base, session)
    openapi = httpx.get(f"{base}/openapi.json", headers={"Authorization": f"Bearer {KEY}"}).json()
    components = openapi["components"]["schemas"]
    assert sorted(t.name for t in listed) == sorted([*tools.registry.names(), "search_knowledge"])
    for tool in listed:
        route = openapi["paths"][f"/v1/tools/{tool.name}"]["post"]
        published_in = route["requestBody"]["content"]["application/json"]["schema"]
        published_out = route["responses"]["200"]["content"]["application/json"]["schema"]
        assert _plain(tool.input_schema, tool.input_schema.get("$defs", {})) == _plain(published_in, components), (
            tool.name
        )
        assert _plain(tool.output_schema, tool.output_schema.get("$defs", {})) == _plain(published_out, components), (
            tool.name
        )
        assert tool.annotations.read_only_hint and not tool.annotations.destructive_hint
    assert not fit.is_error and fit.structured_content == tools.call("fit_training", FIT)
    assert fit.structured_content["fits"] is True
    assert not found.is_error and len(found.structured_content["passages"]) == 2


def test_an_unknown_gpu_is_a_tool_error_naming_the_field_and_the_closest_names(base):
    async def session(client):
        bad = await client.call_tool("fit_training", {**FIT, "gpu": "A100 80G SXM4x"})
        worse = await client.call_tool("fit_training", {**FIT, "n_gpus": 0})
        after = await client.call_tool("gpu_specs", {"gpu": "H800"})  # the session carries on
        return bad, worse, after

    bad, worse, after = anyio.run(_with_client, base, session)
    assert bad.is_error and "gpu:" in bad.content[0].text and "A100" in bad.content[0].text
    assert "未知" in bad.content[0].text  # both languages
    assert worse.is_error and "n_gpus" in worse.content[0].text
    assert not after.is_error and after.structured_content["memory_gb"] == 80


def test_catalog_resources_and_the_sizing_prompt(base):
    async def session(client):
        listed = (await client.list_resources()).resources
        one = await client.read_resource("catalog://gpus/910B")
        prompt = await client.get_prompt("size_training_run", {"model": "Qwen2.5-7B", "gpu": "H800"})
        return listed, one, prompt

    listed, one, prompt = anyio.run(_with_client, base, session)
    assert {str(r.uri) for r in listed} >= {"catalog://gpus", "catalog://models"}
    assert '"vendor"' in one.contents[0].text and "910B" in one.contents[0].text
    text = prompt.messages[0].content.text
    assert "Qwen2.5-7B" in text and "fit_training" in text


INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
AUTH = {**ACCEPT, "Authorization": f"Bearer {KEY}"}


def test_no_key_or_a_wrong_key_is_401_and_a_foreign_host_is_refused(base):
    no_key = httpx.post(f"{base}/mcp", json=INIT, headers=ACCEPT)
    assert no_key.status_code == 401 and no_key.headers["www-authenticate"] == "Bearer"
    wrong = httpx.post(
        f"{base}/mcp",
        json=INIT,
        headers={**ACCEPT, "Authorization": "Bearer k-wrong-0123456789abcdef", "Accept-Language": "zh-CN"},
    )
    assert wrong.status_code == 401 and "密钥无效" in wrong.json()["error"]["message"]
    rebinding = httpx.post(f"{base}/mcp", json=INIT, headers={**AUTH, "Host": "evil.example:80"})
    assert rebinding.status_code == 421
    foreign_page = httpx.post(f"{base}/mcp", json=INIT, headers={**AUTH, "Origin": "http://evil.example"})
    assert foreign_page.status_code == 403
    for host in ("localhost", "127.0.0.1"):  # a local proxy on port 80 sends the bare name
        assert httpx.post(f"{base}/mcp", json=INIT, headers={**AUTH, "Host": host}).status_code == 200, host
    ok = httpx.post(f"{base}/mcp", json=INIT, headers=AUTH)
    assert ok.status_code == 200 and '"serverInfo"' in ok.text


def test_mcp_shares_the_v1_rate_limit_and_the_failed_key_budget(serve):
    base = serve(api_keys=KEY, rate_limit_per_minute=3, auth_failures_per_minute=2)
    assert [httpx.post(f"{base}/mcp", json=INIT, headers=AUTH).status_code for _ in range(2)] == [200, 200]
    assert httpx.get(f"{base}/v1/catalog/gpus/H800", headers=AUTH).status_code == 200
    limited = httpx.post(f"{base}/mcp", json=INIT, headers=AUTH)
    assert limited.status_code == 429 and int(limited.headers["retry-after"]) >= 1
    assert httpx.get(f"{base}/v1/catalog/gpus/H800", headers=AUTH).status_code == 429  # one budget for both
    guess = {**ACCEPT, "Authorization": "Bearer k-guess-0123456789abcdef"}
    tries = [httpx.post(f"{base}/mcp", json=INIT, headers=guess).status_code for _ in range(3)]
    assert tries == [401, 401, 429]  # guessing keys at /mcp is slowed like at /v1
    assert httpx.get(f"{base}/v1/catalog/gpus", headers=guess).status_code == 429


def test_the_session_manager_restarts_with_the_app_and_serves_many_sessions(advisor):
    """The app's lifespan starts a fresh session manager each time the server starts (a manager runs only
    once), and concurrent clients each get their own session."""
    from bot.api.app import create_app
    from bot.api.settings import ApiSettings

    app = create_app(advisor=advisor, api_settings=ApiSettings(api_keys=KEY, rate_limit_per_minute=0))

    async def sessions(base: str, n: int) -> list[float]:
        totals: list[float] = []

        async def one(hours: int) -> None:
            result = await _with_client(base, lambda c: c.call_tool("run_cost", {"gpu": "H800", "gpu_hours": hours}))
            assert not result.is_error, result.content
            totals.append(result.structured_content["total_cny"])

        async with anyio.create_task_group() as tg:
            for hours in range(1, n + 1):
                tg.start_soon(one, hours)
        return sorted(totals)

    for _ in range(2):
        server = ServerThread(app, ready_path="/readyz")
        try:
            totals = anyio.run(sessions, server.base, 12)
        finally:
            server.stop()
        assert totals == sorted(
            tools.call("run_cost", {"gpu": "H800", "gpu_hours": h})["total_cny"] for h in range(1, 13)
        )
        assert not server.thread.is_alive()


def test_a_browser_client_from_an_allowed_origin_passes_cors_and_the_origin_check(make_client):
    page = "https://inspector.example.com"
    client = make_client(api_keys=KEY, cors_origins=page, mcp_hosts="127.0.0.1", mcp_origins=page)
    preflight = client.options(
        "/mcp",
        headers={
            "Origin": page,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization,content-type,mcp-protocol-version",
        },
    )
    assert (
        preflight.status_code == 200
        and "mcp-protocol-version" in preflight.headers["access-control-allow-headers"].lower()
    )
    ok = client.post("/mcp", json=INIT, headers={**AUTH, "Origin": page})
    assert ok.status_code == 200 and ok.headers["access-control-allow-origin"] == page
    assert client.post("/mcp", json=INIT, headers={**AUTH, "Origin": "https://evil.example.com"}).status_code == 403
