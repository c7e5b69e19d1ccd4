"""Load on a real API server: requests/s, median and p95 latency per endpoint, a baseline then the scale-out shape.

    .venv/bin/python bench/load.py [--clients 8] [--duration 5] [--workers 2]
                                   [--database-url postgresql://…] [--redis-url redis://…]

First the baseline: one `gpu-advisor serve` process with the defaults (SQLite store, embedded index,
in-process rate limit). Then, for each `--workers` count, the shared shape: that many worker processes
on one port, a `chroma run` server they share, the store at `--database-url` (SQLite in a temporary
folder when not given) and, with `--redis-url`, the rate limit counted in Redis (a key prefix of this
run's own). Every server runs offline, with no keys and a rate limit too high to refuse anything (so
the limiter's cost is measured, not its refusals), on a free loopback port. One endpoint at a time,
N concurrent clients run for a fixed duration:

    GET  /healthz                 trivial baseline, measured in the same run
    POST /v1/tools/fit_training   a calculator (inputs vary)
    POST /v1/ask                  a mix of offline questions (a new conversation each)

Targets (issue 6, offline mode on this machine): p95 ≤ 100 ms at 8 clients, ≥ 150 answers/s. The last
lines set each shape's answers/s and p95 of /v1/ask beside the baseline's.

    .venv/bin/python bench/load.py --quick

the CI gate (issue 28): one process only, rounds of /healthz then /v1/ask (8 clients, 1.5 s each), and the
median over the rounds of answers/s ÷ /healthz requests/s and of /v1/ask p95 ÷ /healthz p95 checked against
bench/gate.yaml; exit 1 when one regressed past its margin. About 30 s with the server's start.

    .venv/bin/python bench/load.py --stall [--duration 5]

measures only /healthz (one client) on an idle server and again while three clients send
4,000-character questions back to back, and prints both p95s and their ratio (issue 17).
Loopback only; everything it starts is stopped at the end, also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

QUESTIONS = [
    "70B 全参训练，单卡 A100 够吗？",
    "Llama 3 8B LoRA on one RTX 4090?",
    "H100 和 A100 比较一下",
    "Qwen2.5-72B 推理需要几张 H20？",
    "8 张 H800 全参微调 7B，10 亿 token 要多久？",
    "Rent or buy 8 A100 80GB for 12 months?",
    "QLoRA 微调 70B，单卡 4090 放得下吗？",
    "How much memory does Llama 3 70B need for inference in fp8 on H100?",
]
FIT_INPUTS = [
    {"model": m, "gpu": g, "method": meth, "n_gpus": n}
    for m, g, meth, n, _ in zip(
        itertools.cycle(["70B", "llama-3-8b", "qwen2.5-72b", "13B"]),
        itertools.cycle(["A100 80GB", "H800", "RTX 4090", "H20", "910B"]),
        itertools.cycle(["full", "lora", "qlora"]),
        itertools.cycle([1, 8, 16, 2]),
        range(40),
    )
]
TARGET_P95_MS = 100.0
TARGET_ANSWERS_PER_S = 150.0


@dataclass
class Result:
    name: str
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    seconds: float = 0.0

    @property
    def rps(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds else 0.0

    def pct(self, q: float) -> float:
        if not self.latencies:
            return float("nan")
        xs = sorted(self.latencies)
        return xs[min(len(xs) - 1, int(q * len(xs)))] * 1000

    @property
    def median_ms(self) -> float:
        return statistics.median(self.latencies) * 1000 if self.latencies else float("nan")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _binary(name: str) -> str:
    local = Path(sys.executable).parent / name
    found = str(local) if local.exists() else shutil.which(name)
    if not found:
        raise SystemExit(f"`{name}` is not installed in this environment")
    return found


def _chroma_argv() -> list[str]:
    """The `chroma` command chromadb installs, or its module where the script is not on PATH."""
    local = Path(sys.executable).parent / "chroma"
    found = str(local) if local.exists() else shutil.which("chroma")
    return [found] if found else [sys.executable, "-c", "from chromadb.cli.cli import app; app()"]


def _wait(url: str, proc: subprocess.Popen, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the process serving {url} exited with code {proc.returncode}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=2).status_code == 200:
                return
        time.sleep(0.2)
    raise SystemExit(f"{url} did not answer within {seconds:.0f} s")


def _stop(proc: subprocess.Popen | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)


@contextlib.contextmanager
def fresh_database(url: str | None) -> Iterator[str | None]:
    """A new database on the PostgreSQL server named by `url` (dropped afterwards); other URLs as given."""
    if not url or not url.startswith(("postgresql://", "postgres://")):
        yield url
        return
    import psycopg

    name = f"gpu_advisor_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(url, autocommit=True, connect_timeout=5) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield f"{url.rsplit('/', 1)[0]}/{name}"
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@dataclass
class Served:
    base: str
    pid: int  # the `gpu-advisor serve` process (the uvicorn supervisor when there are several workers)
    workers: int

    def worker_pids(self) -> list[int]:
        """The processes that answer: the server itself with one worker, else its spawned children."""
        if self.workers == 1:
            return [self.pid]
        found = []
        for task in Path(f"/proc/{self.pid}/task").glob("*/children"):
            for child in task.read_text().split():
                with contextlib.suppress(OSError):
                    if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes():
                        found.append(int(child))
        return found


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _machine_ticks() -> tuple[int, int]:
    """(busy, total) clock ticks of every core since boot (/proc/stat): idle and iowait are not busy."""
    ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return sum(ticks) - ticks[3] - ticks[4], sum(ticks)


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


@contextlib.contextmanager
def server(shape: Shape) -> Iterator[Served]:
    """A running `gpu-advisor serve` (and a Chroma server when shared)."""
    with tempfile.TemporaryDirectory(prefix="gpu-advisor-load-") as tmp, fresh_database(shape.database_url) as db_url:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("GPU_ADVISOR_", "CHROMA_", "EMBEDDINGS_", "REDIS_"))
            and k not in ("DATABASE_URL", "OPENAI_API_KEY")
        }
        env.update(
            ANONYMIZED_TELEMETRY="False",
            GPU_ADVISOR_DATA_DIR=f"{tmp}/data",
            GPU_ADVISOR_RATE_LIMIT=NO_REFUSALS,
            DATABASE_URL=db_url or f"sqlite:///{tmp}/store.sqlite3",
        )
        if shape.redis_url:
            env.update(REDIS_URL=shape.redis_url, GPU_ADVISOR_REDIS_PREFIX=f"gpu-advisor-bench-{uuid.uuid4().hex[:8]}:")
        workers = shape.workers
        chroma = api = None
        logs = open(f"{tmp}/server.log", "w+")  # closed below
        try:
            if shape.shared:
                cport = free_port()
                chroma = subprocess.Popen(
                    [*_chroma_argv(), "run", "--path", f"{tmp}/chroma", "--host", "127.0.0.1", "--port", str(cport)],
                    stdout=logs,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                )
                _wait(f"http://127.0.0.1:{cport}/api/v2/heartbeat", chroma)
                env.update(CHROMA_HOST="127.0.0.1", CHROMA_PORT=str(cport))
                _build_index(env)  # once, before the workers start, so they do not race to build it
            port = free_port()
            api = subprocess.Popen(
                [
                    _binary("gpu-advisor"),
                    "serve",
                    "--port",
                    str(port),
                    "--workers",
                    str(workers),
                    "--log-level",
                    "warning",
                ],
                stdout=logs,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
            base = f"http://127.0.0.1:{port}"
            _wait(base + "/readyz", api, seconds=180)
            yield Served(base, api.pid, workers)
        except SystemExit:
            logs.seek(0)
            sys.stderr.write(logs.read()[-3000:])
            raise
        finally:
            _stop(api)
            _stop(chroma)
            logs.close()


def _build_index(env: dict[str, str]) -> None:
    code = (
        "from knowledge.config import KnowledgeSettings; from knowledge.index import KnowledgeIndex; "
        "KnowledgeIndex(KnowledgeSettings().to_config()).ensure_built()"
    )
    subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd=Path(__file__).resolve().parents[1])


def drive(base: str, name: str, method: str, path: str, bodies: list | None, clients: int, seconds: float) -> Result:
    """`clients` threads, each with its own keep-alive connection, sending requests until the time is up."""
    result = Result(name)
    lock = threading.Lock()
    start = threading.Barrier(clients + 1)
    stop_at = [0.0]

    def client(i: int) -> None:
        local: list[float] = []
        errors = 0
        cycle = itertools.cycle(bodies[i:] + bodies[:i]) if bodies else itertools.repeat(None)
        with httpx.Client(base_url=base, timeout=30) as http:
            start.wait()
            while time.perf_counter() < stop_at[0]:
                body = next(cycle)
                t0 = time.perf_counter()
                try:
                    resp = http.request(method, path, json=body)
                    ok = resp.status_code == 200
                except httpx.HTTPError:
                    ok = False
                if ok:
                    local.append(time.perf_counter() - t0)
                else:
                    errors += 1
        with lock:
            result.latencies.extend(local)
            result.errors += errors

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    t0 = time.perf_counter()
    stop_at[0] = t0 + seconds
    start.wait()
    for t in threads:
        t.join(timeout=seconds + 60)
    result.seconds = time.perf_counter() - t0
    return result


@dataclass(frozen=True)
class Shape:
    workers: int
    database_url: str | None = None
    redis_url: str | None = None
    shared: bool = False  # a Chroma server for the workers (always with more than one)

    @property
    def label(self) -> str:
        if not self.shared:
            return "1 process, SQLite, embedded index, in-process limit (baseline)"
        store = "SQLite" if not self.database_url else self.database_url.split("://", 1)[0].split("+")[0]
        limit = "Redis rate limit" if self.redis_url else "per-process limit"
        return f"{self.workers} worker(s), {store}, Chroma server, {limit}"


NO_REFUSALS = "1000000"  # requests per minute: the limiter runs on every request but never refuses


@dataclass
class Footprint:
    """Per worker while /v1/ask ran: resident memory after it, and the cores it kept busy."""

    rss_mb: list[float]
    cores: list[float]
    clients_cores: float = 0.0  # what this process's load clients kept busy meanwhile (they share the machine)
    machine_busy: float = 0.0  # the share of every core of the machine that was busy (other jobs included)


def run(shape: Shape, clients: int, seconds: float) -> tuple[list[Result], Footprint]:
    with server(shape) as served:
        base = served.base
        asks = [{"text": q} for q in QUESTIONS]
        with httpx.Client(base_url=base, timeout=60) as warm:  # first calls load lazy caches in each worker
            for body in asks * 2:
                warm.post("/v1/ask", json=body)
            for body in FIT_INPUTS[:10]:
                warm.post("/v1/tools/fit_training", json=body)
        results = [
            drive(base, "GET /healthz (baseline)", "GET", "/healthz", None, clients, seconds),
            drive(base, "POST /v1/tools/fit_training", "POST", "/v1/tools/fit_training", FIT_INPUTS, clients, seconds),
        ]
        pids = served.worker_pids()
        before = [_cpu_s(pid) for pid in pids]
        own, machine = time.process_time(), _machine_ticks()
        results.append(drive(base, "POST /v1/ask", "POST", "/v1/ask", asks, clients, seconds))
        ask_s = results[-1].seconds
        busy, total = (b - a for a, b in zip(machine, _machine_ticks(), strict=True))
        footprint = Footprint(
            [_rss_mb(pid) for pid in pids],
            [(_cpu_s(pid) - b) / ask_s for pid, b in zip(pids, before, strict=True)],
            (time.process_time() - own) / ask_s,
            busy / total if total else float("nan"),
        )
        return results, footprint


def report(shape: Shape, clients: int, results: list[Result], footprint: Footprint) -> None:
    print(f"\n{shape.label}; {clients} concurrent clients")
    print(f"{'endpoint':<30} {'requests':>9} {'req/s':>8} {'median ms':>10} {'p95 ms':>8} {'errors':>7}")
    for r in results:
        print(
            f"{r.name:<30} {len(r.latencies):>9} {r.rps:>8.1f} {r.median_ms:>10.1f} {r.pct(0.95):>8.1f} {r.errors:>7}"
        )
    ask, fit = results[2], results[1]
    verdict = lambda ok: "met" if ok else "MISSED"  # noqa: E731
    print(
        f"targets: /v1/ask p95 ≤ {TARGET_P95_MS:.0f} ms: {verdict(ask.pct(0.95) <= TARGET_P95_MS)}; "
        f"fit_training p95 ≤ {TARGET_P95_MS:.0f} ms: {verdict(fit.pct(0.95) <= TARGET_P95_MS)}; "
        f"≥ {TARGET_ANSWERS_PER_S:.0f} answers/s: {verdict(ask.rps >= TARGET_ANSWERS_PER_S)} ({ask.rps:.1f})"
    )
    print(
        "per worker during /v1/ask: "
        + "; ".join(
            f"{cores:.2f} cores busy, {rss:.0f} MB resident"
            for cores, rss in zip(footprint.cores, footprint.rss_mb, strict=True)
        )
        + f"; the load clients {footprint.clients_cores:.2f} cores; the machine {footprint.machine_busy:.0%} busy"
    )
    busy = sum(footprint.cores)
    print(  # the figure a busy machine moves least: what one core of server time gives
        f"answers per CPU-second of the server: {ask.rps / busy if busy else float('nan'):.0f} "
        f"({ask.rps:.1f} answers/s on {busy:.2f} cores)"
    )


# ---- /healthz while long questions run (issue 17: no stalls) -------------------------------------------
#: the longest question the API takes, built from real sizing phrases (what a pasted requirements list is)
LONG_QUESTION = (
    "我们有 8 张 A100 80GB，想全参微调 Qwen2.5-72B，序列长度 4096，预算 50 万元，能放下吗？要多久？租卡还是买卡划算？"
) * 60


def stall_check(base: str, seconds: float, long_clients: int = 3) -> tuple[Result, Result, int]:
    """/healthz from one client with the server idle, then while `long_clients` clients send the longest
    questions the API accepts, back to back. Returns (idle, under load, long answers finished)."""
    idle = drive(base, "GET /healthz idle", "GET", "/healthz", None, 1, seconds)
    stop = threading.Event()
    done = [0]

    def long_asker() -> None:
        with httpx.Client(base_url=base, timeout=300) as http:
            while not stop.is_set():
                with contextlib.suppress(httpx.HTTPError):
                    http.post("/v1/ask", json={"text": LONG_QUESTION[:4000]})
                    done[0] += 1

    askers = [threading.Thread(target=long_asker, daemon=True) for _ in range(long_clients)]
    for t in askers:
        t.start()
    time.sleep(1.0)  # the long answers are running
    busy = drive(base, f"GET /healthz, {long_clients} long asks", "GET", "/healthz", None, 1, seconds)
    stop.set()
    for t in askers:
        t.join(timeout=300)
    return idle, busy, done[0]


def report_stall(idle: Result, busy: Result, answered: int) -> None:
    print(f"\n/healthz while {len(LONG_QUESTION[:4000])}-character questions run (1 worker)")
    print(f"{'':<34} {'requests':>9} {'median ms':>10} {'p95 ms':>8} {'max ms':>8}")
    for r in (idle, busy):
        print(
            f"{r.name:<34} {len(r.latencies):>9} {r.median_ms:>10.1f} {r.pct(0.95):>8.1f} "
            f"{(max(r.latencies) * 1000 if r.latencies else float('nan')):>8.1f}"
        )
    ratio = busy.pct(0.95) / idle.pct(0.95) if idle.latencies and idle.pct(0.95) > 0 else float("nan")
    print(f"p95 under long questions / idle p95: {ratio:.1f}x; long answers finished meanwhile: {answered}")


def quick(clients: int = 8, seconds: float = 1.5, rounds: int = 3) -> int:
    """The CI gate: same-run ratios of /v1/ask to /healthz, one process, against bench/gate.yaml."""
    import gate

    conf = gate.limits()["load"]
    with server(Shape(1)) as served:
        asks = [{"text": q} for q in QUESTIONS]
        with httpx.Client(base_url=served.base, timeout=60) as warm:
            for body in asks * 2:
                warm.post("/v1/ask", json=body)

        def measure() -> list[tuple[float, float]]:
            out = []
            for _ in range(rounds):
                health = drive(served.base, "healthz", "GET", "/healthz", None, clients, seconds)
                ask = drive(served.base, "ask", "POST", "/v1/ask", asks, clients, seconds)
                if ask.errors or not ask.latencies:
                    raise SystemExit(f"/v1/ask failed {ask.errors} times in the gate")
                out.append((ask.rps / health.rps, ask.pct(0.95) / health.pct(0.95)))
            return out

        def judge(got: list[tuple[float, float]]) -> list:
            share, p95 = conf["ask_throughput_share"], conf["ask_p95_ratio"]
            return [
                gate.Check(
                    "answers/s ÷ /healthz requests/s",
                    statistics.median(g[0] for g in got),
                    **share,
                    higher_is_better=True,
                ),
                gate.Check("/v1/ask p95 ÷ /healthz p95", statistics.median(g[1] for g in got), **p95),
            ]

        got = measure()
        checks = judge(got)
        if not all(c.ok for c in checks):  # measured again once: one busy stretch of a shared machine is no regression
            got += measure()
            checks = judge(got)
    return gate.report(f"POST /v1/ask, 1 process, {clients} clients", checks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per endpoint (1 to 60)")
    parser.add_argument("--workers", type=int, nargs="+", default=[2], help="worker counts of the shared shape")
    parser.add_argument(
        "--database-url",
        default=None,
        help="a PostgreSQL server, e.g. postgresql://127.0.0.1:5432/test (a fresh database is made on it)",
    )
    parser.add_argument("--redis-url", default=None, help="shared rate limit, e.g. redis://127.0.0.1:6379/0")
    parser.add_argument(
        "--stall", action="store_true", help="only /healthz p95 idle vs. while 4,000-character questions run (1 worker)"
    )
    parser.add_argument("--quick", action="store_true", help="the CI gate: same-run ratios against bench/gate.yaml")
    args = parser.parse_args()
    if args.quick:
        raise SystemExit(quick())
    seconds = min(max(args.duration, 1.0), 60.0)
    if args.stall:
        with server(Shape(1)) as served:
            report_stall(*stall_check(served.base, seconds))
        return
    clients = min(max(args.clients, 1), 64)
    print(
        f"gpu-advisor load: {clients} clients, {seconds:.0f} s per endpoint, {os.cpu_count()} CPUs "
        "(clients and server share them)"
    )
    shapes = [Shape(1)] + [Shape(w, args.database_url, args.redis_url, shared=True) for w in args.workers]
    asks: list[tuple[Shape, Result]] = []
    for shape in shapes:
        results, footprint = run(shape, clients, seconds)
        report(shape, clients, results, footprint)
        asks.append((shape, results[2]))
    base = asks[0][1]
    print("\nPOST /v1/ask beside the baseline (same run):")
    for shape, ask in asks:
        print(
            f"  {shape.label:<62} {ask.rps:>7.1f} answers/s (x{ask.rps / base.rps if base.rps else float('nan'):.2f})"
            f"   p95 {ask.pct(0.95):>7.1f} ms (x{ask.pct(0.95) / base.pct(0.95):.2f})"
        )


if __name__ == "__main__":
    main()
