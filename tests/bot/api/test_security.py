"""Keys (settings and CLI), rate limit, body limit and CORS."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from bot.api.ratelimit import RateLimiter
from bot.api.settings import ApiSettings
from bot.cli import app as cli

KEY = "k-test-0123456789abcdef0123"
ASK = {"text": "70B 全参训练，单卡 A100 够吗？"}


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_open_api_needs_no_key(client):
    assert client.get("/v1/models").status_code == 200


def test_with_a_key_every_v1_route_needs_it(make_client):
    client = make_client(api_keys=KEY)
    for method, path in [
        ("GET", "/v1/models"),
        ("GET", "/v1/catalog/gpus"),
        ("POST", "/v1/ask"),
        ("POST", "/v1/chat/completions"),
        ("POST", "/v1/tools/fit_training"),
    ]:
        resp = client.request(method, path, json={})
        assert resp.status_code == 401, path
        assert resp.json()["error"]["code"] == "unauthorized"
        assert resp.headers["www-authenticate"] == "Bearer"
    assert client.get("/v1/models", headers=_auth("k-wrong-0123456789abcdef")).status_code == 401
    assert client.get("/v1/models", headers=_auth(KEY)).status_code == 200
    assert client.post("/v1/ask", json=ASK, headers=_auth(KEY)).status_code == 200
    assert client.get("/healthz").status_code == 200  # operations stay open for probes


def test_keys_come_from_the_environment(monkeypatch):
    from fastapi.testclient import TestClient

    from bot.api.app import create_app

    monkeypatch.setenv("GPU_ADVISOR_API_KEYS", f"{KEY}, k-second-key-0123456789")
    with TestClient(
        create_app(), base_url="http://127.0.0.1"
    ) as client:  # settings, advisor and store all built from the environment
        assert client.get("/v1/models").status_code == 401
        assert client.get("/v1/models", headers=_auth("k-second-key-0123456789")).status_code == 200


@pytest.mark.parametrize("keys", ["changeme", "short", "abc, k-long-enough-0123456789"])
def test_placeholder_or_short_keys_are_refused(keys):
    with pytest.raises(ValidationError):
        ApiSettings(api_keys=keys)


def test_a_key_created_with_the_cli_works_and_revoking_it_stops_it(client):
    runner = CliRunner()
    assert client.get("/v1/models").status_code == 200  # open while no key exists

    created = runner.invoke(cli, ["keys", "create", "sales-shenzhen", "--json"])
    assert created.exit_code == 0, created.output
    record = json.loads(created.output)
    assert record["key"].startswith("gpa_")

    assert client.get("/v1/models").status_code == 401  # a key exists now: the API is closed
    assert client.get("/v1/models", headers=_auth(record["key"])).status_code == 200

    listed = json.loads(runner.invoke(cli, ["keys", "list", "--json"]).output)
    assert [k["name"] for k in listed] == ["sales-shenzhen"] and "key" not in listed[0]

    revoked = runner.invoke(cli, ["keys", "revoke", record["id"]])
    assert revoked.exit_code == 0, revoked.output
    resp = client.get("/v1/models", headers=_auth(record["key"]))
    assert resp.status_code == 401 and "revoked" in resp.json()["error"]["message"]
    assert runner.invoke(cli, ["keys", "revoke", record["id"]]).exit_code == 2


def test_rate_limit_is_429_with_retry_after_per_key(make_client):
    client = make_client(api_keys=f"{KEY},k-other-0123456789abcdef", rate_limit_per_minute=2)
    assert client.get("/v1/models", headers=_auth(KEY)).status_code == 200
    assert client.get("/v1/models", headers=_auth(KEY)).status_code == 200
    resp = client.get("/v1/models", headers=_auth(KEY))
    assert resp.status_code == 429
    assert resp.json()["error"]["code"] == "rate_limited"
    assert int(resp.headers["retry-after"]) >= 1
    assert client.get("/v1/models", headers=_auth("k-other-0123456789abcdef")).status_code == 200  # another key


def test_rate_limiter_refills_with_time():
    now = [0.0]
    limiter = RateLimiter(60, clock=lambda: now[0])  # one per second, bursts of 60
    assert all(limiter.take("a") == 0 for _ in range(60))
    assert limiter.take("a") == pytest.approx(1.0)
    now[0] += 1.0
    assert limiter.take("a") == 0
    assert RateLimiter(0).take("a") == 0  # 0 switches it off


def test_body_over_the_limit_is_413(make_client):
    client = make_client(max_body_bytes=2048)
    big = {"text": "x" * 3000}
    resp = client.post("/v1/ask", json=big)
    assert resp.status_code == 413 and resp.json()["error"]["code"] == "body_too_large"

    def chunked():
        yield b'{"text": "'
        yield b"y" * 3000
        yield b'"}'

    resp = client.post("/v1/ask", content=chunked(), headers={"content-type": "application/json"})
    assert resp.status_code == 413
    assert client.post("/v1/ask", json=ASK).status_code == 200


def test_cors_preflight_allows_listed_origins_only(make_client):
    client = make_client(cors_origins="https://owui.example.com")
    preflight = {
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization,content-type",
    }
    ok = client.options("/v1/chat/completions", headers={"Origin": "https://owui.example.com", **preflight})
    assert ok.status_code == 200
    assert ok.headers["access-control-allow-origin"] == "https://owui.example.com"
    assert "authorization" in ok.headers["access-control-allow-headers"].lower()
    denied = client.options("/v1/chat/completions", headers={"Origin": "https://evil.example.net", **preflight})
    assert denied.status_code == 400
    assert "access-control-allow-origin" not in denied.headers
    simple = client.get("/v1/models", headers={"Origin": "https://owui.example.com"})
    assert simple.headers["access-control-allow-origin"] == "https://owui.example.com"
    assert "x-request-id" in simple.headers["access-control-expose-headers"].lower()
