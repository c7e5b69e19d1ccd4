"""Callers behind a reverse proxy (deploy/nginx.conf, the Kubernetes ingress): every request arrives from the
proxy's address, so the per-address limits (an open API's rate limit, the widget's, failed authentications)
must count the address the proxy forwards, and only when the proxy is trusted
(GPU_ADVISOR_FORWARDED_ALLOW_IPS); otherwise a caller could name its own address and escape every limit."""

from __future__ import annotations

import httpx


def _statuses(base: str, forwarded_for: str, n: int) -> list[int]:
    headers = {"X-Forwarded-For": forwarded_for, "Accept-Language": "en"}
    return [httpx.get(base + "/v1/models", headers=headers, timeout=10).status_code for _ in range(n)]


def test_behind_a_trusted_proxy_each_caller_has_its_own_budget(serve):
    base = serve(rate_limit_per_minute=2, forwarded_allow_ips="127.0.0.1")
    assert _statuses(base, "203.0.113.7", 3) == [200, 200, 429]
    # another caller behind the same proxy is not refused because the first one used its budget
    assert _statuses(base, "198.51.100.23", 2) == [200, 200]


def test_without_a_trusted_proxy_a_forwarded_address_is_ignored(serve):
    base = serve(rate_limit_per_minute=2)
    assert _statuses(base, "203.0.113.7", 2) == [200, 200]
    refused = httpx.get(base + "/v1/models", headers={"X-Forwarded-For": "198.51.100.99"}, timeout=10)
    assert refused.status_code == 429  # a made-up address does not buy a fresh budget
    assert refused.headers["Retry-After"]
