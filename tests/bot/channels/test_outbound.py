"""A callback's response_url is posted to only on the platform's hosts: never a loopback or private address a
forged or replayed callback names, never a host outside the allow-list, never over a redirect."""

from __future__ import annotations

import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from loopback import free_port

from bot.channels.outbound import OutboundRefused, check_url, guarded_post

WECOM = ("qyapi.weixin.qq.com",)


@pytest.fixture
def dns(monkeypatch):
    """Name resolution as a table (no network in tests): `dns["host"] = "address"`."""
    table: dict[str, str] = {}
    real = socket.getaddrinfo

    def lookup(host, port, *args, **kwargs):
        if host in table:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (table[host], port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", lookup)
    return table


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/cgi-bin/aibot/response",
        "https://localhost/x",
        "https://10.0.0.8/x",
        "https://169.254.169.254/latest/meta-data",
        "https://[::1]/x",
        "https://qyapi.weixin.qq.com.evil.example/x",
        "https://evil.example/qyapi.weixin.qq.com",
        "http://qyapi.weixin.qq.com/cgi-bin/aibot/response",  # listed, but not over https
        "https://user:pw@qyapi.weixin.qq.com/x",
        "file:///etc/passwd",
        "not a url",
    ],
)
def test_urls_off_the_platforms_hosts_are_refused(url, dns):
    dns["qyapi.weixin.qq.com"] = "101.91.22.57"
    with pytest.raises(OutboundRefused):
        check_url(url, WECOM)


def test_a_listed_host_that_resolves_inside_the_network_is_refused(dns):
    dns["qyapi.weixin.qq.com"] = "192.168.1.20"  # a poisoned or rebinding answer
    with pytest.raises(OutboundRefused, match="public"):
        check_url("https://qyapi.weixin.qq.com/cgi-bin/aibot/response?response_code=x", WECOM)
    dns["qyapi.weixin.qq.com"] = "101.91.22.57"
    check_url("https://qyapi.weixin.qq.com/cgi-bin/aibot/response?response_code=x", WECOM)  # passes


def test_an_explicit_loopback_entry_allows_exactly_that_port():
    check_url("http://127.0.0.1:8123/response/abc", ("http://127.0.0.1:8123",))
    for url in ("http://127.0.0.1:8124/response/abc", "http://127.0.0.2:8123/x"):
        with pytest.raises(OutboundRefused):
            check_url(url, ("http://127.0.0.1:8123",))


class _Recorder(BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_POST(self):
        type(self).hits.append(self.path)
        self.send_response(302 if self.path == "/redirect" else 200)
        self.send_header("Location", "http://127.0.0.1:1/elsewhere")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


@pytest.fixture
def recorder():
    _Recorder.hits = []
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), _Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def test_a_redirect_is_a_failure_and_not_followed(recorder):
    base = f"http://127.0.0.1:{recorder.server_address[1]}"
    post = guarded_post((base,))
    with pytest.raises(RuntimeError, match="302"):
        post(base + "/redirect", {"msgtype": "markdown"})
    assert _Recorder.hits == ["/redirect"]


def test_an_ai_bot_callback_cannot_point_the_answer_at_a_loopback_service(
    bot_server, aibot_maker, fake_wecom, held, recorder
):
    """A validly signed callback (the token holder, or a replay) naming an internal URL as its response_url:
    the late answer is not posted there; the refusal is logged."""
    from test_wecom_aibot import WeComSide

    wecom = WeComSide(bot_server(WECOM_STREAM_WINDOW_S=1), aibot_maker)
    held.hold()
    inside = f"http://127.0.0.1:{recorder.server_address[1]}/internal-admin"
    wecom.ask("msg-ssrf", response_url=inside)
    time.sleep(1.2)  # past the window: the answer would go out through response_url
    held.release()
    time.sleep(3)
    assert _Recorder.hits == [] and fake_wecom.responses == []
