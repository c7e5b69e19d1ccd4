"""A real `gpu-advisor serve` on loopback with a publishable key, host pages on two other loopback
origins (one listed with the key, one not), and one Chromium (Debian's /usr/bin/chromium) per module."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from bot.api import keys
from bot.store import Store

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
CLI = Path(sys.executable).with_name("gpu-advisor")

#: a note indexed as a user would index their own, carrying markup that must stay text in the page
XSS_NOTE = """# Zephyrcard 测试卡 <img src=x onerror="window.__xss='note';alert('note')"> 说明

Zephyrcard 测试卡的笔记 <script>window.__xss='note-script'</script> 只用于检查网页组件把资料当文本显示。
"""


@dataclass(frozen=True)
class Stack:
    api: str  # the API's origin (serves /widget.js, /widget, /chat, /v1)
    host: str  # a shop page listed with the key
    other: str  # a page on an origin the key does not list
    key: str  # publishable
    secret: str  # a secret API key (must never work in a page)
    store_url: str


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pages(api: str, key: str, secret: str, listed: str) -> dict[str, str]:
    def page(body: str, title: str = "GPU shop") -> str:
        return (f'<!doctype html><html lang="zh-CN"><head><meta charset="utf-8"><title>{title}</title>'
                '<meta name="viewport" content="width=device-width, initial-scale=1"></head>'
                f'<body><main><h1>{title}</h1><p>显卡整机与租赁。</p></main>{body}</body></html>')

    def snippet(k: str, extra: str = "") -> str:
        return f'<script src="{api}/widget.js" data-key="{k}" data-lang="zh"{extra} defer></script>'

    return {
        "/": page(snippet(key)),
        "/secret": page(snippet(secret)),
        # every option, and the page's colours for the widget
        "/options": page('<style>:root { --gpa-accent: #0f766e; }</style>' + snippet(
            key, ' data-position="left" data-theme="dark" data-title="算力顾问"').replace('data-lang="zh"', 'data-lang="en"')),
        # a page that frames the panel directly, claiming to be the listed site
        "/frame": page(f'<iframe title="panel" src="{api}/widget?key={key}&parent={listed}"></iframe>'),
    }


def _host_server(pages: dict[str, str], port: int) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            body = pages.get(self.path.split("?")[0])
            if body is None:
                self.send_error(404)
                return
            data = body.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _cli(env: dict[str, str], cwd: Path, *args: str) -> str:
    done = subprocess.run([str(CLI), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def stack(tmp_path_factory) -> Iterator[Stack]:
    if not Path(CHROMIUM).exists():
        pytest.skip("needs Debian's chromium at /usr/bin/chromium (.ci/run installs it with apt-get)")
    tmp = tmp_path_factory.mktemp("widget")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GPU_ADVISOR_", "CHROMA_", "EMBEDDINGS_")) and k not in ("DATABASE_URL", "OPENAI_API_KEY")}
    env.update(GPU_ADVISOR_DATA_DIR=str(tmp / "data"), GPU_ADVISOR_RATE_LIMIT="0",
               GPU_ADVISOR_WIDGET_RATE_LIMIT="1000", ANONYMIZED_TELEMETRY="False", NO_COLOR="1")
    notes = tmp / "notes"
    notes.mkdir()
    (notes / "zephyrcard.md").write_text(XSS_NOTE, encoding="utf-8")
    host_port, other_port, api_port = free_port(), free_port(), free_port()
    api, listed = f"http://127.0.0.1:{api_port}", f"http://127.0.0.1:{host_port}"
    _cli(env, tmp, "kb", "index", str(notes))
    store_url = f"sqlite:///{tmp / 'data' / 'gpu-advisor.sqlite3'}"
    store = Store(store_url)  # the keys as `keys create` makes them, without two more process start-ups
    try:
        key = keys.create_widget(store, "shop", [listed])[1]
        secret = keys.create(store, "ops")[1]
    finally:
        store.close()
    log = (tmp / "serve.log").open("wb")
    proc = subprocess.Popen([str(CLI), "serve", "--port", str(api_port), "--log-level", "warning"],
                            env=env, cwd=tmp, stdout=log, stderr=subprocess.STDOUT)
    servers: list[ThreadingHTTPServer] = []
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(api + "/readyz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None, (tmp / "serve.log").read_text()
            assert time.monotonic() < deadline, "the server did not become ready"
            time.sleep(0.2)
        pages = _pages(api, key, secret, listed)
        servers += [_host_server(pages, host_port), _host_server(pages, other_port)]
        yield Stack(api=api, host=listed, other=f"http://127.0.0.1:{other_port}", key=key, secret=secret,
                    store_url=store_url)
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.fixture(scope="module")
def browser(stack):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()
