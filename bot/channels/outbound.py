"""Where a platform's callback may send us: the URLs it names (a WeCom `response_url`) are used only on the
platform's own hosts.

    post = guarded_post(("qyapi.weixin.qq.com",))     # the allow-list: host or host:port, exact
    post(url, body)                                   # OutboundRefused before any connection when url is not

A URL passes when its scheme is https, its host (and port, where the entry names one) equals an entry, and
every address the host resolves to is a public one: never loopback, private, link-local or reserved, so a
forged or replayed callback cannot make the server reach inside its own network. An entry that is itself an
IP literal or `localhost` is taken as that explicit choice (a fake platform on loopback in tests), and http
is accepted only for such an entry. Redirects are never followed: a 3xx is a failure like a 5xx.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import threading
from collections.abc import Callable, Iterable
from urllib.parse import urlsplit

import httpx

log = logging.getLogger("gpu_advisor.channels")

_DEFAULT_PORTS = {"http": 80, "https": 443}


class OutboundRefused(RuntimeError):
    """A URL a callback named that is not on the platform's hosts; the message says why (no secret in it)."""


def _entry(text: str) -> tuple[str, int | None]:
    text = text.strip().lower()
    if "://" in text:
        parts = urlsplit(text)
        return (parts.hostname or ""), parts.port
    host, colon, port = text.rpartition(":")
    if colon and port.isdigit() and "]" not in port:
        return host.strip("[]"), int(port)
    return text.strip("[]"), None


def _explicit(host: str) -> bool:
    """An entry naming an address (or localhost) outright: the operator chose it, loopback included."""
    if host == "localhost":
        return True
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _public(host: str, port: int) -> bool:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        return False
    addresses = {info[4][0] for info in infos}
    return bool(addresses) and all(ipaddress.ip_address(a.split("%")[0]).is_global for a in addresses)


def check_url(url: str, allowed: Iterable[str]) -> None:
    """Raises `OutboundRefused` unless `url` may be sent to (see the module docstring)."""
    try:
        parts = urlsplit(url)
        host, port = (parts.hostname or "").lower(), parts.port
    except ValueError:
        raise OutboundRefused("not a URL") from None
    if parts.scheme not in _DEFAULT_PORTS or not host or parts.username or parts.password:
        raise OutboundRefused("not an http(s) URL with a host")
    port = port or _DEFAULT_PORTS[parts.scheme]
    for entry in allowed:
        want_host, want_port = _entry(entry)
        if host != want_host or (want_port is not None and port != want_port):
            continue
        if _explicit(want_host):
            return
        if parts.scheme != "https":
            raise OutboundRefused(f"{host} is on the allow-list, but only over https")
        if not _public(host, port):
            raise OutboundRefused(f"{host} does not resolve to public addresses only")
        return
    raise OutboundRefused(f"{host}:{port} is not one of the platform's hosts")


_client_lock = threading.Lock()
_client: httpx.Client | None = None


def _http() -> httpx.Client:
    global _client
    with _client_lock:
        if _client is None:
            _client = httpx.Client(timeout=10.0, follow_redirects=False)
        return _client


def guarded_post(allowed: Iterable[str]) -> Callable[[str, dict], None]:
    """POST a JSON body to a URL a callback named, only on `allowed`; raises on a refusal, a transport error,
    a redirect, a non-2xx status or a non-zero `errcode`."""
    hosts = tuple(h for h in allowed if h.strip())

    def post(url: str, body: dict) -> None:
        try:
            check_url(url, hosts)
        except OutboundRefused as err:
            log.warning("outbound URL refused: %s", err)
            raise
        resp = _http().post(url, json=body)
        if resp.is_redirect or not resp.is_success:
            raise RuntimeError(f"the platform answered HTTP {resp.status_code}")
        data = resp.json() if resp.content else {}
        if isinstance(data, dict) and data.get("errcode", 0) != 0:
            raise RuntimeError(f"the platform answered errcode {data.get('errcode')}: {data.get('errmsg')}")

    return post
