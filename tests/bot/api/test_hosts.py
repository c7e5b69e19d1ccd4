"""Which Host and Origin values the server answers: exact host:port matching, trusted hosts for every route
(loopback names while the API is keyless), and the widget's own origin from settings, never from Host."""

from __future__ import annotations

import httpx
import pytest

from bot.api import keys
from bot.api.hosts import allowed, origin_allowed, split_host

KEY = "k-test-0123456789abcdef0123"
LOOPBACK_ANY = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.mark.parametrize(
    ("host", "ok"),
    [
        ("127.0.0.1:8000", True),
        ("127.0.0.1", True),
        ("LOCALHOST:3000", True),
        ("[::1]:8080", True),
        ("127.0.0.1:80.evil.com", False),  # the SDK's prefix match let this through
        ("127.0.0.1:", False),
        ("127.0.0.1:99999", False),
        ("127.0.0.1.evil.com:80", False),
        ("localhost.evil.com", False),
        ("[::1]evil", False),
        ("", False),
    ],
)
def test_host_patterns_match_exactly(host, ok):
    assert allowed(host, LOOPBACK_ANY) is ok


def test_a_bare_host_pattern_means_the_default_port_and_a_port_pattern_that_port():
    assert allowed("advisor.example.com", ["advisor.example.com"])
    assert allowed("advisor.example.com:443", ["advisor.example.com"])
    assert not allowed("advisor.example.com:8443", ["advisor.example.com"])
    assert allowed("advisor.example.com:8443", ["advisor.example.com:8443"])
    assert not allowed("advisor.example.com:8444", ["advisor.example.com:8443"])
    assert allowed("anything.example:1", ["*"])
    assert split_host("[::1]:80") == ("[::1]", "80")


def test_origin_patterns_match_exactly():
    listed = ["http://localhost:*", "https://advisor.example.com"]
    assert origin_allowed("http://localhost:8000", listed)
    assert not origin_allowed("http://localhost:8000.evil.com", listed)
    assert not origin_allowed("https://localhost:8000", listed)  # another scheme
    assert origin_allowed("https://advisor.example.com", listed)
    assert not origin_allowed("https://advisor.example.com.evil.com", listed)
    assert not origin_allowed("null", listed)


def test_mcp_refuses_a_host_that_only_starts_like_a_listed_one(serve):
    base = serve(api_keys=KEY)
    auth = {**ACCEPT, "Authorization": f"Bearer {KEY}"}
    for host in ("127.0.0.1:80.evil.com", "localhost:1.rebind.example"):
        assert httpx.post(f"{base}/mcp", json=INIT, headers={**auth, "Host": host}).status_code == 421, host
    page = {**auth, "Origin": "http://localhost:8000.evil.com"}
    assert httpx.post(f"{base}/mcp", json=INIT, headers=page).status_code in (403, 421)
    assert httpx.post(f"{base}/mcp", json=INIT, headers=auth).status_code == 200


def test_a_keyless_server_answers_only_on_loopback_names(serve):
    base = serve()
    for path in ("/v1/catalog/gpus", "/widget", "/chat", "/docs", "/openapi.json"):
        foreign = httpx.get(base + path, headers={"Host": "advisor.rebind.example"})
        assert foreign.status_code == 421 and foreign.json()["error"]["code"] == "untrusted_host", path
        assert "GPU_ADVISOR_TRUSTED_HOSTS" in foreign.json()["error"]["message"]
    zh = httpx.get(base + "/v1/catalog/gpus", headers={"Host": "evil.example", "Accept-Language": "zh-CN"})
    assert "主机名" in zh.json()["error"]["message"]
    assert httpx.get(base + "/v1/catalog/gpus").status_code == 200
    assert httpx.get(base + "/v1/catalog/gpus", headers={"Host": "localhost"}).status_code == 200
    for probe in ("/healthz", "/readyz"):  # a load balancer's probe names the pod's address
        assert httpx.get(base + probe, headers={"Host": "10.1.2.3:8000"}).status_code == 200


def test_trusted_hosts_setting_and_keys(serve, advisor):
    listed = serve(trusted_hosts="advisor.example.com,127.0.0.1:*")
    assert httpx.get(listed + "/v1/catalog/gpus", headers={"Host": "advisor.example.com"}).status_code == 200
    assert httpx.get(listed + "/v1/catalog/gpus", headers={"Host": "other.example"}).status_code == 421
    _, key = keys.create(advisor.store, "ops")  # once a key exists, any host may call (the key is the guard)
    keyed = serve()
    auth = {"Authorization": f"Bearer {key}", "Host": "advisor.example.com"}
    assert httpx.get(keyed + "/v1/catalog/gpus", headers=auth).status_code == 200


def test_the_widget_trusts_its_configured_public_origin_not_the_host_header(serve, advisor):
    _, pk = keys.create_widget(advisor.store, "shop", ["https://shop.example.com"])
    base = serve(public_origin="https://advisor.example.com")
    ask = {"text": "H800 的显存是多少？"}

    def stream(origin: str, host: str | None = None) -> int:
        headers = {"Authorization": f"Bearer {pk}", "Origin": origin, **({"Host": host} if host else {})}
        return httpx.post(base + "/v1/ask/stream", json=ask, headers=headers, timeout=60).status_code

    assert stream("https://shop.example.com") == 200
    assert stream("https://advisor.example.com", host="advisor.example.com") == 200  # the panel, served from here
    assert stream("https://cname-to-us.example", host="cname-to-us.example") == 403  # Origin equal to Host
    assert stream("http://127.0.0.1") == 403  # a public origin is configured: loopback is not this server
