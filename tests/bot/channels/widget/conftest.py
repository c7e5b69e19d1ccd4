"""A real `gpu-advisor serve` on loopback with a publishable key, host pages on two other loopback
origins (one listed with the key, one not), and one Chromium (Debian's /usr/bin/chromium) per module."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from loopback import free_port
from served import CHROMIUM, CHROMIUM_ARGS, CLI, clean_env, host_pages, serve

from bot.api import keys
from bot.core.store import Store

#: a note indexed as a user would index their own, carrying markup that must stay text in the page
XSS_NOTE = """# Zephyrcard 测试卡 <img src=x onerror="window.__xss='note';alert('note')"> 说明

Zephyrcard 测试卡的笔记 <script>window.__xss='note-script'</script> 只用于检查网页组件把资料当文本显示。[点这里](javascript:window.__xss='link')
"""


@dataclass(frozen=True)
class Stack:
    api: str  # the API's origin (serves /widget.js, /widget, /chat, /v1)
    host: str  # a shop page listed with the key
    other: str  # a page on an origin the key does not list
    key: str  # publishable
    secret: str  # a secret API key (must never work in a page)
    store_url: str


def _pages(api: str, key: str, secret: str, listed: str) -> dict[str, str]:
    def page(body: str, title: str = "GPU shop") -> str:
        return (
            f'<!doctype html><html lang="zh-CN"><head><meta charset="utf-8"><title>{title}</title>'
            '<meta name="viewport" content="width=device-width, initial-scale=1"></head>'
            f"<body><main><h1>{title}</h1><p>显卡整机与租赁。</p></main>{body}</body></html>"
        )

    def snippet(k: str, extra: str = "") -> str:
        return f'<script src="{api}/widget.js" data-key="{k}" data-lang="zh"{extra} defer></script>'

    return {
        "/": page(snippet(key)),
        "/secret": page(snippet(secret)),
        # every option, and the page's colours for the widget
        "/options": page(
            "<style>:root { --gpa-accent: #0f766e; }</style>"
            + snippet(key, ' data-position="left" data-theme="dark" data-title="算力顾问"').replace(
                'data-lang="zh"', 'data-lang="en"'
            )
        ),
        # a light page colour with a light accent, and data-theme="dark": the page's colours decide
        "/colors": page(
            "<style>:root { --gpa-bg: #fefce8; --gpa-accent: #facc15; --gpa-fg: #e5e7eb; }</style>"
            + snippet(key, ' data-theme="dark"')
        ),
        # a page that frames the panel directly, claiming to be the listed site
        "/frame": page(f'<iframe title="panel" src="{api}/widget?key={key}&parent={listed}"></iframe>'),
    }


def _cli(env: dict[str, str], cwd: Path, *args: str) -> str:
    done = subprocess.run([str(CLI), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def stack(tmp_path_factory) -> Iterator[Stack]:
    if not Path(CHROMIUM).exists():
        pytest.skip("needs Debian's chromium at /usr/bin/chromium (.ci/run installs it with apt-get)")
    tmp = tmp_path_factory.mktemp("widget")
    env = clean_env(tmp / "data", GPU_ADVISOR_RATE_LIMIT="0", GPU_ADVISOR_WIDGET_RATE_LIMIT="1000")
    notes = tmp / "notes"
    notes.mkdir()
    (notes / "zephyrcard.md").write_text(XSS_NOTE, encoding="utf-8")
    host_port, other_port, api_port = free_port(), free_port(), free_port()
    listed = f"http://127.0.0.1:{host_port}"
    _cli(env, tmp, "kb", "index", str(notes))
    store_url = f"sqlite:///{tmp / 'data' / 'gpu-advisor.sqlite3'}"
    store = Store(store_url)  # the keys as `keys create` makes them, without two more process start-ups
    try:
        key = keys.create_widget(store, "shop", [listed])[1]
        secret = keys.create(store, "ops")[1]
    finally:
        store.close()
    with contextlib.ExitStack() as stack:
        api = stack.enter_context(serve(env, cwd=tmp, port=api_port, log=tmp / "serve.log"))
        pages = _pages(api, key, secret, listed)
        for port in (host_port, other_port):
            server = host_pages(pages, port)
            stack.callback(server.server_close)
            stack.callback(server.shutdown)
        yield Stack(
            api=api, host=listed, other=f"http://127.0.0.1:{other_port}", key=key, secret=secret, store_url=store_url
        )


@pytest.fixture(scope="module")
def browser(stack):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()
