"""Channel acknowledgement latency: how fast a platform's callback is answered while answers run behind it.

    .venv/bin/python bench/channels.py [--callbacks 200] [--concurrency 16] [--workers 4]

For each channel in CHANNELS it starts the real API app under uvicorn on 127.0.0.1, sends callbacks
built the way the platform builds them (new questions from many users at once, so answers pile up in
the background worker pool), and times each callback from request to acknowledgement. The baseline is
`GET /healthz` on the same server in the same run, timed while the same answers run. Prints median
and p95 for both and their ratio; the target is a callback p95 under 200 ms (WeCom gives 5 s).

A channel is one function `(base_url, n, concurrency) -> list[seconds]` in CHANNELS plus the settings it
needs in SETUP; add the next one beside `wecom_aibot`.
"""

from __future__ import annotations

import argparse
import base64
import concurrent.futures
import hashlib
import json
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import uvicorn  # noqa: E402

TOKEN = "benchToken1234567"
AES_KEY = base64.b64encode(b"b" * 32).decode().rstrip("=")
QUESTIONS = ["8卡H800全参微调7B需要多少显存？", "A100 80GB 的显存带宽是多少？", "70B inference on 4 A100 80GB, fits?",
             "H800 的显存是多少？", "Compare H100 and A100"]


def _encrypt(text: str) -> str:
    from bot.channels.wecom.crypto import WeComCrypto

    return WeComCrypto(TOKEN, AES_KEY, "").encrypt(text)


def _sign(ts: str, nonce: str, enc: str) -> str:
    return hashlib.sha1("".join(sorted([TOKEN, ts, nonce, enc])).encode()).hexdigest()


def wecom_aibot(base: str, n: int, concurrency: int) -> list[float]:
    """WeCom AI bot (HTTP callback): a text message per user; the reply names a stream (finish: false)."""
    client = httpx.Client(timeout=30)
    bodies = []
    for i in range(n):  # encrypted up front: only the server's work is timed
        body = {"msgid": uuid.uuid4().hex, "aibotid": "BENCHBOT", "chattype": "single", "from": {"userid": f"u{i}"},
                "msgtype": "text", "text": {"content": QUESTIONS[i % len(QUESTIONS)]}}
        enc = _encrypt(json.dumps(body, ensure_ascii=False))
        bodies.append(enc)

    def one(enc: str) -> float:
        ts, nonce = str(int(time.time())), uuid.uuid4().hex[:10]
        t0 = time.perf_counter()
        resp = client.post(f"{base}/wecom/aibot", params={"msg_signature": _sign(ts, nonce, enc), "timestamp": ts,
                                                          "nonce": nonce}, content=json.dumps({"encrypt": enc}))
        took = time.perf_counter() - t0
        assert resp.status_code == 200, resp.text
        return took

    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        return list(pool.map(one, bodies))


sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))  # the fake Slack Web API the app's replies go to
from channels_slack import slack_events, slack_setup  # noqa: E402

CHANNELS: dict[str, Callable[[str, int, int], list[float]]] = {"wecom_aibot": wecom_aibot, "slack": slack_events}
SETUP: dict[str, Callable[[], dict[str, str]]] = {
    "wecom_aibot": lambda: {"WECOM_AIBOT_TOKEN": TOKEN, "WECOM_AIBOT_AES_KEY": AES_KEY},
    "slack": slack_setup,  # starts the fake Slack on loopback, returns SLACK_* pointing at it
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _baseline(base: str, stop: threading.Event) -> list[float]:
    client, times = httpx.Client(timeout=30), []
    while not stop.is_set():
        t0 = time.perf_counter()
        client.get(f"{base}/healthz")
        times.append(time.perf_counter() - t0)
        time.sleep(0.01)
    return times


def p95(xs: list[float]) -> float:
    return sorted(xs)[max(0, round(0.95 * len(xs)) - 1)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--callbacks", type=int, default=200)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--workers", type=int, default=4)
    args = ap.parse_args()

    data = Path(tempfile.mkdtemp(prefix="bench-channels-"))
    os.environ.update(GPU_ADVISOR_DATA_DIR=str(data / "data"), DATABASE_URL=f"sqlite:///{data}/store.sqlite3",
                      CHANNEL_WORKERS=str(args.workers), CHANNEL_QUEUE=str(args.callbacks))
    for name in ("REDIS_URL", "GPU_ADVISOR_LLM_BASE_URL", "GPU_ADVISOR_API_KEYS"):
        os.environ.pop(name, None)
    for conf in SETUP.values():
        os.environ.update(conf())

    from bot.advisor import Advisor
    from bot.api.app import create_app
    from bot.api.settings import ApiSettings

    advisor = Advisor.from_settings()
    app = create_app(advisor=advisor, api_settings=ApiSettings(rate_limit_per_minute=0))
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    threading.Thread(target=server.run, daemon=True).start()
    base = f"http://127.0.0.1:{port}"
    while not server.started:
        time.sleep(0.05)

    print(f"{args.callbacks} callbacks, {args.concurrency} at once, {args.workers} answer workers (offline planner)")
    print(f"{'channel':<14}{'ack median ms':>15}{'ack p95 ms':>12}{'healthz median':>16}{'healthz p95':>13}"
          f"{'p95 ratio':>11}  target p95 < 200 ms")
    for name, run in CHANNELS.items():
        stop = threading.Event()
        box: list[list[float]] = []
        t = threading.Thread(target=lambda box=box, stop=stop: box.append(_baseline(base, stop)))
        t.start()
        acks = run(base, args.callbacks, args.concurrency)
        stop.set()
        t.join()
        base_t = box[0]
        backlog = app.state.delivery.pending if app.state.delivery else 0
        print(f"{name:<14}{statistics.median(acks) * 1000:>15.1f}{p95(acks) * 1000:>12.1f}"
              f"{statistics.median(base_t) * 1000:>16.1f}{p95(base_t) * 1000:>13.1f}"
              f"{p95(acks) / p95(base_t):>11.2f}  {'ok' if p95(acks) < 0.2 else 'MISSED'}"
              f"  (answers still queued when the last ack came: {backlog})")
    server.should_exit = True
    if app.state.delivery:
        app.state.delivery.close(wait=False)


if __name__ == "__main__":
    main()
