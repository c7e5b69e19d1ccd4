"""The scale-out shape, for real and without containers: several `gpu-advisor serve` processes on loopback
sharing one `chroma run` server, a fresh database on the machine's PostgreSQL and Redis.

    worker A, worker B   the machine's Redis (a key prefix of their own, so parallel runs never meet)
    worker C             a redis-server this module starts on a free port, and stops to show an outage

One topology for the module (starting it is the cost); the tests run in file order, the last ones
kill worker B and stop C's Redis.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from loopback import free_port
from pg import temp_database

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

RATE = 20  # requests per minute per key: one token every 3 s, so a quick burst cannot be refilled
KEYS = [f"scale-out-{i:02d}-{uuid.uuid4().hex}" for i in range(9)]
RATE_KEY, CONV_KEY, INDEX_KEY_A, INDEX_KEY_B, OUTAGE_KEY, *LOAD_KEYS = KEYS
MACHINE_REDIS = os.environ.get("GPU_ADVISOR_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def _binary(name: str) -> str | None:
    local = Path(sys.executable).parent / name
    return str(local) if local.exists() else shutil.which(name)


def _chroma_argv() -> list[str] | None:
    """The `chroma` command the chromadb package installs (its module when the script is elsewhere)."""
    found = _binary("chroma")
    if found:
        return [found]
    try:
        import chromadb.cli.cli  # noqa: F401
    except ImportError:
        return None
    return [sys.executable, "-c", "from chromadb.cli.cli import app; app()"]


def _redis_answers(url: str) -> bool:
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1)
    try:
        return bool(client.ping())
    except (redis.exceptions.RedisError, OSError):
        return False
    finally:
        client.close()


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen
    log: Path

    def tail(self, chars: int = 3000) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-chars:]

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.popen.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, sig)
        try:
            self.popen.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(timeout=5)


@dataclass
class Topology:
    a: str
    b: str
    c: str
    procs: dict[str, Proc]
    env_a: dict[str, str]
    database_url: str
    tmp: Path

    def client(self, key: str) -> httpx.Client:
        return httpx.Client(headers={"Authorization": f"Bearer {key}"}, timeout=30)


def _start(name: str, argv: list[str], env: dict[str, str], tmp: Path) -> Proc:
    log = tmp / f"{name}.log"
    with open(log, "w") as fh:
        popen = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=tmp, start_new_session=True)
    return Proc(name, popen, log)


def _wait_ok(url: str, proc: Proc, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.popen.poll() is not None:
            pytest.fail(f"{proc.name} exited with code {proc.popen.returncode}:\n{proc.tail()}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=2).status_code == 200:
                return
        time.sleep(0.2)
    pytest.fail(f"{proc.name} did not answer {url} within {seconds:.0f} s:\n{proc.tail()}")


def _base_env(tmp: Path) -> dict[str, str]:
    keep = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GPU_ADVISOR_", "CHROMA_", "EMBEDDINGS_", "REDIS_"))
        and k not in ("DATABASE_URL", "OPENAI_API_KEY")
    }
    return {
        **keep,
        "ANONYMIZED_TELEMETRY": "False",
        "GPU_ADVISOR_API_KEYS": ",".join(KEYS),
        "GPU_ADVISOR_RATE_LIMIT": str(RATE),
    }


@pytest.fixture(scope="module")
def topology(tmp_path_factory) -> Iterator[Topology]:
    chroma, gpu_advisor, redis_server = _chroma_argv(), _binary("gpu-advisor"), _binary("redis-server")
    if chroma is None or gpu_advisor is None:
        pytest.skip("the `chroma` and `gpu-advisor` commands are not installed in this environment")
    if redis_server is None:
        pytest.skip("redis-server is not installed (needed to start a Redis this test may stop)")
    if not _redis_answers(MACHINE_REDIS):
        pytest.skip(f"Redis is not reachable at {MACHINE_REDIS}; the in-process limits are tested instead")
    tmp = tmp_path_factory.mktemp("scale-out")
    procs: dict[str, Proc] = {}
    with temp_database() as database_url, contextlib.ExitStack() as stack:
        stack.callback(
            lambda: [
                p.stop(signal.SIGKILL if p.name.startswith("worker") else signal.SIGTERM)
                for p in reversed(procs.values())
            ]
        )
        env = _base_env(tmp)
        cport, rport = free_port(), free_port()
        procs["chroma"] = _start(
            "chroma",
            [*chroma, "run", "--path", str(tmp / "chroma"), "--host", "127.0.0.1", "--port", str(cport)],
            env,
            tmp,
        )
        procs["redis"] = _start(
            "redis",
            [redis_server, "--port", str(rport), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            env,
            tmp,
        )
        _wait_ok(f"http://127.0.0.1:{cport}/api/v2/heartbeat", procs["chroma"], 60)
        shared = {**env, "CHROMA_HOST": "127.0.0.1", "CHROMA_PORT": str(cport), "DATABASE_URL": database_url}
        prefix = f"gpu-advisor-test-{uuid.uuid4().hex[:12]}:"
        envs = {
            "a": {
                **shared,
                "GPU_ADVISOR_DATA_DIR": str(tmp / "a"),
                "REDIS_URL": MACHINE_REDIS,
                "GPU_ADVISOR_REDIS_PREFIX": prefix,
            },
            "b": {
                **shared,
                "GPU_ADVISOR_DATA_DIR": str(tmp / "b"),
                "REDIS_URL": MACHINE_REDIS,
                "GPU_ADVISOR_REDIS_PREFIX": prefix,
            },
            "c": {
                **shared,
                "GPU_ADVISOR_DATA_DIR": str(tmp / "c"),
                "REDIS_URL": f"redis://127.0.0.1:{rport}/0",
                "GPU_ADVISOR_REDIS_PREFIX": prefix,
            },
        }
        # the deployment's one-shot index job, before any worker starts
        job = subprocess.run(
            [gpu_advisor, "kb", "index", "--json"], env=envs["a"], cwd=tmp, capture_output=True, text=True, timeout=300
        )
        assert job.returncode == 0, job.stderr[-2000:]
        ports = {name: free_port() for name in envs}
        for name, wenv in envs.items():
            procs[f"worker-{name}"] = _start(
                f"worker-{name}", [gpu_advisor, "serve", "--port", str(ports[name]), "--log-level", "info"], wenv, tmp
            )
        for name in envs:
            _wait_ok(f"http://127.0.0.1:{ports[name]}/readyz", procs[f"worker-{name}"], 240)
        yield Topology(
            a=f"http://127.0.0.1:{ports['a']}",
            b=f"http://127.0.0.1:{ports['b']}",
            c=f"http://127.0.0.1:{ports['c']}",
            procs=procs,
            env_a=envs["a"],
            database_url=database_url,
            tmp=tmp,
        )


def test_every_worker_reports_its_dependencies(topology):
    for base in (topology.a, topology.b):
        ready = httpx.get(base + "/readyz", timeout=10).json()
        assert ready["status"] == "ready" and ready["index_chunks"] > 0
        assert (ready["store"], ready["store_backend"]) == ("ok", "postgresql")
        assert (ready["chroma"], ready["redis"], ready["rate_limit"]) == ("ok", "ok", "shared")


def test_the_rate_limit_holds_across_workers(topology):
    """One key, requests alternating between workers: request RATE + 1 is refused, whichever worker takes it
    (plus whatever tokens came back while the burst ran on a slow machine). Counted per process, each
    worker would see only half and let 2 x RATE through."""
    statuses: list[tuple[str, int]] = []
    retry_after = 0
    started = time.monotonic()
    with topology.client(RATE_KEY) as http:
        for i in range(2 * RATE):
            base = (topology.a, topology.b)[i % 2]
            resp = http.get(base + "/v1/models", headers={"Accept-Language": "en"})
            statuses.append((base, resp.status_code))
            if resp.status_code == 429:
                retry_after = int(resp.headers["Retry-After"])
                assert resp.json()["error"]["message"].startswith("Too many requests")
                break
        elapsed = time.monotonic() - started
        refilled = int(elapsed * RATE / 60)  # tokens that came back meanwhile (0 unless the burst took >= 3 s)
        ok = [s for s in statuses if s[1] == 200]
        assert statuses[-1][1] == 429 and RATE <= len(ok) <= RATE + refilled
        assert {base for base, _ in ok} == {topology.a, topology.b}  # both workers drew on one budget
        if refilled == 0:
            assert statuses[-1] == (topology.a, 429)  # request RATE + 1
        if retry_after >= 2:  # the next token is more than a second away: the other worker refuses too
            other = topology.a if statuses[-1][0] == topology.b else topology.b
            assert http.get(other + "/v1/models").status_code == 429


def test_a_conversation_continues_on_another_worker(topology):
    cid = f"scale-out-{uuid.uuid4().hex[:8]}"
    with topology.client(CONV_KEY) as http:
        first = http.post(
            topology.a + "/v1/ask", json={"text": "70B 全参训练，单卡 A100 够吗？", "conversation_id": cid}
        )
        assert first.status_code == 200, first.text
        follow = http.post(topology.b + "/v1/ask", json={"text": "那 8 张 H100 呢？", "conversation_id": cid})
        assert follow.status_code == 200, follow.text
        fit = [c["input"] for c in follow.json()["tool_calls"] if c["tool"] == "fit_training"]
        # worker B never saw the first question: the model and method came from the shared store
        assert fit and fit[0]["model"] == "70B" and fit[0]["method"] == "full" and fit[0]["n_gpus"] == 8
        turns = http.get(f"{topology.c}/v1/conversations/{cid}").json()["turns"]
        assert [(t["turn"], t["status"]) for t in turns] == [(0, "answered"), (1, "answered")]
        assert turns[1]["answer"] == follow.json()["answer"]


def test_a_reindex_through_one_worker_is_served_by_the_other_within_a_second(topology):
    marker = f"zyxquorum{uuid.uuid4().hex[:6]}"
    notes = topology.tmp / "price-sheets"
    notes.mkdir()
    (notes / "reseller-prices.md").write_text(
        f"# Reseller price sheet\n\nOur {marker} bundle pairs eight accelerators with a support contract; "
        "ask the sales team for the current quote.\n",
        encoding="utf-8",
    )
    query = {"query": f"{marker} bundle", "k": 3}
    with topology.client(INDEX_KEY_B) as http_b, topology.client(INDEX_KEY_A) as http_a:
        before = http_b.post(topology.b + "/v1/tools/search_knowledge", json=query).json()["passages"]
        assert all(marker not in p["text"] for p in before)
        job = subprocess.run(
            [_binary("gpu-advisor"), "kb", "index", str(notes), "--json"],
            env=topology.env_a,
            cwd=topology.tmp,
            capture_output=True,
            text=True,
            timeout=300,
        )
        done = time.monotonic()
        assert job.returncode == 0, job.stderr[-2000:]
        assert '"workers_notified": 2' in job.stdout  # A and B listen on the shared Redis (C has its own)
        found = {}
        while time.monotonic() - done < 1.0 and len(found) < 2:
            for name, http, base in (("b", http_b, topology.b), ("a", http_a, topology.a)):
                if name not in found:
                    passages = http.post(base + "/v1/tools/search_knowledge", json=query).json()["passages"]
                    if passages and marker in passages[0]["text"]:
                        found[name] = time.monotonic() - done
            time.sleep(0.05)
        assert set(found) == {"a", "b"}, f"served after the re-index: {found}\n{topology.procs['worker-b'].tail(1500)}"


def test_killing_a_worker_under_load_loses_no_stored_turn(topology):
    """Four clients ask through both workers; B is killed (SIGKILL) mid-way and the clients retry on A.
    Every answer a client received is stored, every question ends answered, nothing is marked failed."""
    questions = [
        "Llama 3 8B LoRA on one RTX 4090?",
        "H100 和 A100 比较一下",
        "Qwen2.5-72B 推理需要几张 H20？",
        "QLoRA 微调 70B，单卡 4090 放得下吗？",
    ]
    received: list[tuple[str, str]] = []  # (conversation id, answer)
    retried = []
    lock = threading.Lock()
    progress = threading.Semaphore(0)

    def client(i: int) -> None:
        with topology.client(LOAD_KEYS[i % len(LOAD_KEYS)]) as http:
            for n in range(5):
                cid = f"load-{i}-{n}-{uuid.uuid4().hex[:6]}"
                body = {"text": questions[(i + n) % len(questions)], "conversation_id": cid}
                for attempt, base in enumerate(
                    itertools.islice(
                        itertools.cycle((topology.b, topology.a) if (i + n) % 2 else (topology.a, topology.b)), 4
                    )
                ):
                    try:
                        resp = http.post(base + "/v1/ask", json=body)
                    except httpx.HTTPError:
                        continue
                    if resp.status_code == 200:
                        with lock:
                            stored = resp.json()["conversation_id"]  # the key's own name for cid
                            received.append((stored, resp.json()["answer"]))
                            if attempt:
                                retried.append(stored)
                        break
                progress.release()

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(4)]
    for t in threads:
        t.start()
    for _ in range(4):  # a few answers in, then B goes away without a goodbye
        progress.acquire(timeout=60)
    topology.procs["worker-b"].stop(signal.SIGKILL)
    for t in threads:
        t.join(timeout=120)
    assert len(received) == 20  # every question got an answer, from B before the kill or from A after

    from bot.core.store import Store

    store = Store(topology.database_url)
    try:
        for cid, answer in received:
            turns = store.turns(cid)
            assert answer in [t.answer for t in turns if t.status == "answered"], cid
            assert all(t.status != "failed" for t in turns), cid
        pending = [cid for cid, _ in received for t in store.turns(cid) if t.status == "pending"]
    finally:
        store.close()
    # a question B had started when it died stays visible as pending (the client's retry answered it)
    assert set(pending) <= set(retried) and len(pending) <= 4


def test_when_redis_stops_answers_continue(topology):
    """Worker C's Redis goes away: C keeps answering (limits counted per process), says so once in its log
    and in /readyz, and stays ready."""
    with topology.client(OUTAGE_KEY) as http:
        assert http.post(topology.c + "/v1/ask", json={"text": "H100 和 A100 比较一下"}).status_code == 200
        topology.procs["redis"].stop()
        for text in ("70B 全参训练，单卡 A100 够吗？", "Rent or buy 8 A100 80GB for 12 months?"):
            resp = http.post(topology.c + "/v1/ask", json={"text": text})
            assert resp.status_code == 200, resp.text
        ready = httpx.get(topology.c + "/readyz", timeout=10)
        assert ready.status_code == 200
        assert (ready.json()["redis"], ready.json()["rate_limit"]) == ("unreachable", "per-process")
    log = topology.procs["worker-c"].tail(200_000)
    assert log.count("Redis unreachable for the rate limit") == 1
