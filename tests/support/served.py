"""`gpu-advisor serve` in a subprocess on loopback, as the widget tests and bench/widget.py start it, static host
pages on other loopback origins, and Debian's Chromium for Playwright.

    env = clean_env(tmp / "data", GPU_ADVISOR_RATE_LIMIT="0")
    with serve(env, cwd=tmp, port=free_port(), log=tmp / "serve.log") as api:   # ready: /readyz answered 200
        pages = host_pages({"/": "<!doctype html>…"}, port=free_port())
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
from loopback import stop_process

CLI = Path(sys.executable).with_name("gpu-advisor")
#: this checkout: the server started here runs its code, even when the interpreter's environment has
#: another checkout installed (a worktree sharing the main venv's scripts)
ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def clean_env(data_dir: Path, **settings: str) -> dict[str, str]:
    """This process's environment without the advisor's own settings (no keys, store, LLM, Chroma or
    embeddings from outside), with `data_dir` as the data folder and `settings` on top."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GPU_ADVISOR_", "CHROMA_", "EMBEDDINGS_")) and k not in ("DATABASE_URL", "OPENAI_API_KEY")
    }
    env.update(GPU_ADVISOR_DATA_DIR=str(data_dir), ANONYMIZED_TELEMETRY="False", NO_COLOR="1", **settings)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


@contextlib.contextmanager
def serve(env: dict[str, str], cwd: Path, port: int, log: Path | None = None, timeout_s: float = 180) -> Iterator[str]:
    """`gpu-advisor serve --port port` until the block ends; yields its base URL once /readyz answers 200.
    RuntimeError (with the server's log, when `log` is given) if it exits or is not ready in `timeout_s`."""
    api = f"http://127.0.0.1:{port}"
    with contextlib.ExitStack() as stack:
        out = stack.enter_context(log.open("wb")) if log else subprocess.DEVNULL
        proc = subprocess.Popen(
            [str(CLI), "serve", "--port", str(port), "--log-level", "warning"],
            env=env,
            cwd=cwd,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + timeout_s
            while not _ready(api):
                if proc.poll() is not None or time.monotonic() > deadline:
                    said = log.read_text(errors="replace")[-4000:] if log else ""
                    raise RuntimeError(f"gpu-advisor serve did not become ready on {api}\n{said}")
                time.sleep(0.2)
            yield api
        finally:
            stop_process(proc)


def _ready(api: str) -> bool:
    try:
        return httpx.get(api + "/readyz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def host_pages(pages: dict[str, str], port: int) -> ThreadingHTTPServer:
    """`pages` (path -> HTML) served on 127.0.0.1:`port` in a thread, 404 for any other path; stop it with
    `shutdown()` and `server_close()`."""

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
