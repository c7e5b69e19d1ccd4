"""Servers on 127.0.0.1 for tests: a free port, and an ASGI app under uvicorn in a thread."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from typing import Any

import httpx
import uvicorn


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_process(proc: subprocess.Popen, timeout_s: float = 15) -> None:
    """Stop a server started with Popen: SIGTERM, then SIGKILL if it has not exited within `timeout_s`."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _has_sansio() -> bool:
    try:
        import uvicorn.protocols.websockets.websockets_sansio_impl  # noqa: F401
    except ImportError:
        return False
    return True


class ServerThread:
    """`app` served by uvicorn on a free loopback port until `stop()`; `ready_path` (e.g. "/readyz") is
    polled until it answers 200. Extra uvicorn.Config options pass through (`http=...` and the like)."""

    def __init__(self, app: Any, ready_path: str | None = None, timeout_s: float = 30, **config: Any):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        config.setdefault("log_level", "warning")
        config.setdefault("ws", "websockets-sansio" if _has_sansio() else "auto")
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, **config))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the test server did not start")
            time.sleep(0.02)
        while ready_path and not self._answers(ready_path):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the test server did not become ready ({ready_path})")
            time.sleep(0.05)

    def _answers(self, path: str) -> bool:
        try:
            return httpx.get(self.base + path, timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)
