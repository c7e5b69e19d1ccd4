"""No stalls, on a real server: idle keep-alive connections close; a request head or body sent a byte
at a time is cut off; connections over the cap are refused while the server keeps answering; a long
CPU-bound answer runs off the event loop, so /healthz answers meanwhile, and stops at its deadline."""

from __future__ import annotations

import socket
import threading
import time
from statistics import median

import httpx

from bot.answer.advisor import Advisor
from bot.core.planner import PlanResult


def _connect(base: str) -> socket.socket:
    host, port = base.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    return sock


def _closed_within(sock: socket.socket, seconds: float) -> tuple[bool, bytes]:
    """Whether the server closed the connection within `seconds` (and what it sent before)."""
    sock.settimeout(seconds)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except TimeoutError:
        return False, data
    except ConnectionResetError:
        pass
    return True, data


def test_idle_keep_alive_connections_are_closed(serve):
    base = serve(keepalive_s=0.5)
    sock = _connect(base)
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    closed, data = _closed_within(sock, 5)
    assert data.startswith(b"HTTP/1.1 200") and closed
    sock.close()


def test_a_request_head_sent_a_byte_at_a_time_is_cut_off(serve):
    base = serve(header_timeout_s=0.5)
    sock = _connect(base)
    started = time.monotonic()
    closed = False
    for byte in b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 200:
        try:
            sock.sendall(bytes([byte]))
        except OSError:
            closed = True
            break
        time.sleep(0.05)
        if time.monotonic() - started > 5:
            break
    if not closed:
        closed, _ = _closed_within(sock, 2)
    assert closed and time.monotonic() - started < 5
    sock.close()


def test_a_body_that_never_completes_is_408(serve):
    base = serve(body_timeout_s=0.5)
    sock = _connect(base)
    sock.sendall(
        b'POST /v1/ask HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"text": "'
    )
    closed, data = _closed_within(sock, 5)
    assert data.startswith(b"HTTP/1.1 408") and b"body_timeout" in data and closed
    sock.close()


def test_connections_over_the_cap_are_refused_and_the_server_keeps_answering(serve):
    base = serve(max_connections=20, header_timeout_s=30)
    held = [_connect(base) for _ in range(20)]
    for sock in held:
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")  # half-sent requests
    time.sleep(0.3)
    extra = _connect(base)
    closed, data = _closed_within(extra, 5)
    assert closed and data == b""  # refused at once: no file descriptor held for it
    extra.close()
    for sock in held:
        sock.close()
    time.sleep(0.3)
    assert httpx.get(base + "/healthz", timeout=5).status_code == 200


class _Busy:
    """A planner that computes for `seconds` of pure CPU before answering (a slow question)."""

    mode = "offline"

    def __init__(self, seconds: float):
        self.seconds = seconds

    def plan(self, text, ctx, run, emit) -> PlanResult:
        end = time.monotonic() + self.seconds
        n = 0
        while time.monotonic() < end:
            n = (n * 31 + 7) % 1_000_003
        return PlanResult(answer="done", language="en")


def test_health_checks_answer_while_long_answers_run_and_answers_stop_at_the_deadline(serve, advisor):
    busy = Advisor(store=advisor.store, toolbox=advisor.toolbox, offline=_Busy(4.0))
    base = serve(use_advisor=busy, answer_deadline_s=1.5)
    results: list[httpx.Response] = []
    idle = []
    for _ in range(10):
        started = time.monotonic()
        assert httpx.get(base + "/healthz", timeout=5).status_code == 200
        idle.append(time.monotonic() - started)

    def ask() -> None:
        results.append(httpx.post(base + "/v1/ask", json={"text": "a long question"}, timeout=30))

    askers = [threading.Thread(target=ask) for _ in range(3)]
    for t in askers:
        t.start()
    time.sleep(0.2)
    latencies = []
    for _ in range(10):
        started = time.monotonic()
        assert httpx.get(base + "/healthz", timeout=5).status_code == 200
        latencies.append(time.monotonic() - started)
        time.sleep(0.05)
    for t in askers:
        t.join()
    # on the event loop, each 4 s answer would hold every health check for its whole length
    assert max(latencies) < 2.5 and median(latencies) < median(idle) + 1.0, (idle, latencies)
    assert [r.status_code for r in results] == [504] * 3
    assert results[0].json()["error"]["code"] == "answer_timeout"


def test_a_model_dripping_keep_alives_is_cut_off_at_its_deadline(serve, advisor):
    from bot.core.settings import Settings
    from bot.llm.agent import AgentPlanner
    from bot.offline.rules import RulesPlanner

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    stop = threading.Event()

    def drip() -> None:  # an OpenAI-compatible endpoint that answers a stream with keep-alives only
        listener.settimeout(0.5)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:  # closed at the end of the test
                return
            with conn:
                conn.recv(65536)
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                )
                for _ in range(60):  # 18 s of comments, each well inside a read timeout
                    if stop.is_set():
                        break
                    try:
                        conn.sendall(b"e\r\n: keep-alive\n\n\r\n")
                    except OSError:
                        break
                    time.sleep(0.3)

    threading.Thread(target=drip, daemon=True).start()
    try:
        conf = Settings(
            _env_file=None,
            llm_base_url=f"http://127.0.0.1:{port}/v1",
            llm_model="drip",
            llm_api_key="sk-test",
            llm_max_retries=0,
            llm_timeout_s=1.5,
        )
        llm = AgentPlanner.from_settings(conf)
        adv = Advisor(store=advisor.store, toolbox=advisor.toolbox, offline=RulesPlanner(), llm=llm)
        base = serve(use_advisor=adv)
        started = time.monotonic()
        trace = httpx.post(base + "/v1/ask", json={"text": "H100 显存多大？"}, timeout=60).json()
        took = time.monotonic() - started
    finally:
        stop.set()
        listener.close()
    assert trace["mode"] == "llm-fallback" and "H100" in trace["answer"]
    assert took < 10, took


def test_the_connection_cap_stays_below_the_open_file_limit(monkeypatch, caplog):
    """The default cap of 1,000 against the usual 1,024 descriptors would let idle connections take the last
    ones; the cap is lowered to the limit less the headroom the process needs, and the log says so."""
    import logging
    import resource

    from bot.api.server import FD_HEADROOM, connection_cap, guarded_protocol, uvicorn_options
    from bot.api.settings import ApiSettings

    conf = ApiSettings()
    assert conf.max_connections == 1000
    monkeypatch.setattr(resource, "getrlimit", lambda _kind: (1024, 1024))
    assert connection_cap(conf) == 1024 - FD_HEADROOM
    with caplog.at_level(logging.WARNING, logger="gpu_advisor.api"):
        options = uvicorn_options(conf)
    assert options["limit_concurrency"] == 1024 - FD_HEADROOM
    assert "capped at 896" in caplog.text and "GPU_ADVISOR_MAX_CONNECTIONS=1000" in caplog.text
    assert guarded_protocol(conf)._cap() == 896
    monkeypatch.setattr(resource, "getrlimit", lambda _kind: (65536, 65536))
    assert connection_cap(conf) == 1000  # a generous limit leaves the setting as it is
    assert guarded_protocol(ApiSettings(max_connections=20))._cap() == 20
    monkeypatch.setattr(resource, "getrlimit", lambda _kind: (100, 100))
    assert connection_cap(conf) == 1  # never zero
