"""deploy/nginx.conf run for real (when nginx is installed): the file compose mounts, with its upstream `api:8000`
replaced by two loopback backends the way Docker's DNS returns two replicas. Events of a stream reach the client
as they are written, requests spread over both replicas, and every WeCom AI-bot callback reaches the same one."""

from __future__ import annotations

import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from loopback import free_port, stop_process

CONF = Path(__file__).resolve().parents[2] / "deploy" / "nginx.conf"
NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(NGINX is None, reason="nginx is not installed; the file is checked by shape only"),
]


def _backend(name: str) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet
            pass

        def _reply(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            if self.path.startswith("/stream"):  # two events a second apart, as an answer streams
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for event in (b"event: first\ndata: {}\n\n", b"event: done\ndata: {}\n\n"):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                    self.wfile.flush()
                    time.sleep(1.0)
                self.wfile.write(b"0\r\n\r\n")
                return
            body = (
                f'{{"worker": "{name}", "host": "{self.headers.get("Host")}", '
                f'"forwarded_for": "{self.headers.get("X-Forwarded-For")}"}}'.encode()
            )
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _reply

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture(scope="module")
def proxy(tmp_path_factory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("nginx")
    backends = [_backend("one"), _backend("two")]
    port = free_port()
    replicas = "".join(f"server 127.0.0.1:{b.server_address[1]}; " for b in backends)
    site = CONF.read_text(encoding="utf-8")
    assert site.count("server api:8000;") == 2  # both upstreams name the compose service
    site = site.replace("server api:8000;", replicas).replace("listen 80;", f"listen 127.0.0.1:{port};")
    (tmp / "site.conf").write_text(site, encoding="utf-8")
    (tmp / "nginx.conf").write_text(
        f"daemon off; pid {tmp}/nginx.pid; error_log {tmp}/error.log warn;\n"
        f"events {{}}\n"
        f"http {{ access_log off; client_body_temp_path {tmp}/body; proxy_temp_path {tmp}/proxy;\n"
        f"  include {tmp}/site.conf; }}\n",
        encoding="utf-8",
    )
    check = subprocess.run(
        [NGINX, "-t", "-p", str(tmp), "-c", str(tmp / "nginx.conf")], capture_output=True, text=True, timeout=30
    )
    assert check.returncode == 0, check.stderr
    proc = subprocess.Popen(
        [NGINX, "-p", str(tmp), "-c", str(tmp / "nginx.conf")], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.get(base + "/healthz", timeout=2)
                break
            except httpx.HTTPError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail((tmp / "error.log").read_text(errors="replace"))
                time.sleep(0.1)
        yield base
    finally:
        stop_process(proc, timeout_s=10)
        for b in backends:
            b.shutdown()
            b.server_close()


def test_a_stream_reaches_the_client_event_by_event(proxy):
    started = time.monotonic()
    with httpx.stream("POST", proxy + "/stream", json={"text": "H100?"}, timeout=10) as resp:
        lines = resp.iter_lines()
        first_line = next(lines)
        first_at = time.monotonic() - started
        rest = "".join(lines)
    assert first_line == "event: first" and first_at < 0.8  # not held back until the stream ends (2 s)
    assert "event: done" in rest


def test_requests_spread_over_both_replicas(proxy):
    workers = {httpx.get(proxy + "/v1/models", timeout=5).json()["worker"] for _ in range(8)}
    assert workers == {"one", "two"}


def test_every_wecom_ai_bot_callback_reaches_the_same_replica(proxy):
    workers = {
        httpx.post(proxy + "/wecom/aibot?msg_signature=x&timestamp=1&nonce=" + str(i), content=b"{}", timeout=5).json()[
            "worker"
        ]
        for i in range(10)
    }
    assert len(workers) == 1


def test_the_worker_sees_the_callers_host_and_address(proxy):
    seen = httpx.get(proxy + "/mcp", headers={"X-Forwarded-For": "203.0.113.7"}, timeout=5).json()
    port = re.search(r":(\d+)$", proxy).group(1)
    assert seen["host"] == f"127.0.0.1:{port}"  # with its port: GPU_ADVISOR_MCP_HOSTS' `127.0.0.1:*` matches
    assert seen["forwarded_for"] == "203.0.113.7, 127.0.0.1"
