"""Server mode against a real `chroma run` on loopback: several clients share one index."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from loopback import free_port, stop_process

from knowledge.config import KnowledgeConfig
from knowledge.errors import IndexUnavailable
from knowledge.index import KnowledgeIndex
from knowledge.retrieval import Retriever

pytestmark = pytest.mark.slow


def _chroma_binary() -> str | None:
    local = Path(sys.executable).parent / "chroma"
    return str(local) if local.exists() else shutil.which("chroma")


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory):
    binary = _chroma_binary()
    if binary is None:
        pytest.skip("the `chroma` command is not installed (it comes with the chromadb package)")
    port = free_port()
    path = tmp_path_factory.mktemp("chroma-server")
    log = open(path.parent / "chroma-server.log", "w+")  # closed in the finally below
    proc = subprocess.Popen(
        [binary, "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                pytest.fail(f"chroma run did not answer its heartbeat on port {port}:\n{log.read()[-2000:]}")
            time.sleep(0.2)
        yield port
    finally:
        stop_process(proc, timeout_s=10)
        log.close()


def test_two_workers_share_one_server_index(chroma_server, config, tmp_path):
    server = config.model_copy(
        update={"chroma_host": "127.0.0.1", "chroma_port": chroma_server, "data_dir": tmp_path / "worker-1"}
    )
    first = Retriever.from_config(server)
    assert first.index.backend == "server"
    assert first.search("昇腾", k=1)[0].doc_id == "ascend-910b"
    assert not (tmp_path / "worker-1" / "chroma").exists()  # nothing embedded was created

    # a second worker (another data dir, as on another machine) finds the index already built
    other = server.model_copy(update={"data_dir": tmp_path / "worker-2"})
    index = KnowledgeIndex(other)
    report = index.sync()
    assert (report.added, report.updated, report.removed) == (0, 0, 0) and report.unchanged == len(first)
    stats = index.stats()
    assert stats.backend == "server" and stats.location == f"http://127.0.0.1:{chroma_server}"
    assert Retriever(index).search("H100 NVL", k=1)[0].doc_id == "h100-nvl"

    # an edit made through one worker is seen by the other after a reload
    (config.docs_dir / "kv.md").unlink()
    assert index.sync().removed >= 1
    first.reload()
    assert all(h.doc_id != "kv-cache" for h in first.search("key-value cache", k=5))


def test_a_worker_starting_elsewhere_leaves_the_shared_index_alone(chroma_server, config, tmp_path):
    """Folders indexed by the index job stay when a worker with another data dir (another machine) starts."""
    own = tmp_path / "price-sheets"
    own.mkdir()
    (own / "quotes.md").write_text("# Quotes\n\nThe qzxvbundle pairs eight cards with support.\n", encoding="utf-8")
    job = config.model_copy(
        update={"chroma_host": "127.0.0.1", "chroma_port": chroma_server, "data_dir": tmp_path / "job"}
    )
    KnowledgeIndex(job).sync([own])
    worker = Retriever.from_config(job.model_copy(update={"data_dir": tmp_path / "worker-3"}))
    assert any("qzxvbundle" in p.text for p in worker.search("qzxvbundle", k=3))


def test_an_unreachable_server_is_a_clear_error(tmp_path):
    config = KnowledgeConfig(data_dir=tmp_path, chroma_host="127.0.0.1", chroma_port=free_port())
    with pytest.raises(IndexUnavailable) as err:
        KnowledgeIndex(config).stats()
    assert f"Chroma server at http://127.0.0.1:{config.chroma_port} cannot be used" in err.value.message("en")
    assert not (tmp_path / "chroma").exists()  # no silent fall-back to an embedded index
