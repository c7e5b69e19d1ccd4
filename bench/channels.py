"""Channel acknowledgement latency: how fast a platform's callback is answered, idle and while answers run.

    .venv/bin/python bench/channels.py [--idle 20] [--callbacks 200] [--concurrency 16] [--workers N]

Starts the real server, `gpu-advisor serve`, as its own process on a free loopback port (offline planner,
a fresh SQLite store, the WeCom AI bot and Slack turned on, Slack's Web API pointed at the tests' fake
Slack in this process), so the load client here never shares a GIL with the server's answer workers.
Then, for each channel in CHANNELS, in one run:

    idle        `--idle` new questions one at a time, each answered before the next is sent: the
                acknowledgement with nothing running behind it
    under load  `--callbacks` new questions from as many users, `--concurrency` at once, so answers pile
                up in the server's background worker pool while the rest are acknowledged

and `GET /healthz` on the same server as the baseline, idle and under load. Prints median and p95 of
each and how long the background answers took to drain; the target is a callback p95 under 200 ms
under load (WeCom gives 5 s, Slack 3 s). `--workers` sets CHANNEL_WORKERS (default: the server's own,
1 answer worker offline).

A channel is a class with `idle(base, k)`, `burst(base, n, concurrency)` (seconds to acknowledgement)
and `drained()` (every burst answer delivered), plus the settings it needs in `env()`; add the next one
beside `WeComAibot`.
"""

from __future__ import annotations

import argparse
import base64
import concurrent.futures
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "support"))  # the fake Slack Web API the server's replies go to

import httpx  # noqa: E402

from bot.channels.wecom.crypto import WeComCrypto, signature  # noqa: E402

TOKEN = "benchToken1234567"
AES_KEY = base64.b64encode(b"b" * 32).decode().rstrip("=")
QUESTIONS = [
    "8卡H800全参微调7B需要多少显存？",
    "A100 80GB 的显存带宽是多少？",
    "70B inference on 4 A100 80GB, fits?",
    "H800 的显存是多少？",
    "Compare H100 and A100",
]
ANSWER_WAIT_S = 300


def _timed(call: Callable[[], httpx.Response]) -> tuple[float, httpx.Response]:
    t0 = time.perf_counter()
    resp = call()
    took = time.perf_counter() - t0
    if resp.status_code != 200:
        raise RuntimeError(f"unexpected status {resp.status_code}: {resp.text[:200]}")
    return took, resp


def _until(check: Callable[[], bool], timeout: float = ANSWER_WAIT_S, every: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(every)
    return False


class WeComAibot:
    """WeCom AI bot (HTTP callback): an encrypted text message per user; the reply names a stream
    (finish: false) that WeCom then refreshes until the answer is in it."""

    name = "wecom_aibot"

    def __init__(self):
        self.crypto = WeComCrypto(TOKEN, AES_KEY, "")
        self.client = httpx.Client(timeout=30)
        self.last_stream: tuple[str, str] | None = None  # (stream id, user) of the burst's last question

    def env(self) -> dict[str, str]:
        return {"WECOM_AIBOT_TOKEN": TOKEN, "WECOM_AIBOT_AES_KEY": AES_KEY}

    def _post(self, base: str, enc: str) -> httpx.Response:
        ts, nonce = str(int(time.time())), uuid.uuid4().hex[:10]
        query = {"msg_signature": signature(TOKEN, ts, nonce, enc), "timestamp": ts, "nonce": nonce}
        return self.client.post(f"{base}/wecom/aibot", params=query, content=json.dumps({"encrypt": enc}))

    def _question(self, i: int, user: str) -> str:
        body = {
            "msgid": uuid.uuid4().hex,
            "aibotid": "BENCHBOT",
            "chattype": "single",
            "from": {"userid": user},
            "msgtype": "text",
            "text": {"content": QUESTIONS[i % len(QUESTIONS)]},
        }
        return self.crypto.encrypt(json.dumps(body, ensure_ascii=False))  # encrypted up front: not timed

    def _stream(self, resp: httpx.Response) -> dict:
        reply = resp.json()
        return json.loads(self.crypto.decrypt(reply["encrypt"]))["stream"]

    def finished(self, base: str, stream_id: str, user: str) -> bool:
        body = {
            "msgid": uuid.uuid4().hex,
            "aibotid": "BENCHBOT",
            "chattype": "single",
            "from": {"userid": user},
            "msgtype": "stream",
            "stream": {"id": stream_id},
        }
        return bool(self._stream(self._post(base, self.crypto.encrypt(json.dumps(body))))["finish"])

    def idle(self, base: str, k: int) -> list[float]:
        times = []
        for i in range(k):
            user = f"idle{i}"
            enc = self._question(i, user)
            took, resp = _timed(lambda enc=enc: self._post(base, enc))
            times.append(took)
            sid = self._stream(resp)["id"]
            if not _until(lambda sid=sid, user=user: self.finished(base, sid, user), every=0.1):
                raise RuntimeError("an idle question was never answered")
        return times

    def burst(self, base: str, n: int, concurrency: int) -> list[float]:
        encs = [(self._question(i, f"u{i}"), f"u{i}") for i in range(n)]

        def one(item: tuple[str, str]) -> tuple[float, str, str]:
            took, resp = _timed(lambda: self._post(base, item[0]))
            return took, self._stream(resp)["id"], item[1]

        with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
            results = list(pool.map(one, encs))
        self.last_stream = results[-1][1:]
        return [r[0] for r in results]

    def drained(self, base: str) -> bool:  # the pool answers in order: the last one done means all are
        return self.last_stream is None or self.finished(base, *self.last_stream)

    def close(self) -> None:
        self.client.close()


class Slack:
    """Slack Events API: a signed app_mention per user; acknowledged at once, answered in its thread."""

    name = "slack"

    def __init__(self):
        self.fake = None
        self.last_ts: str | None = None
        self.client = None

    def env(self) -> dict[str, str]:
        from slack_fake import BOT_TOKEN, SIGNING_SECRET, FakeSlack

        self.fake = FakeSlack()
        return {
            "SLACK_BOT_TOKEN": BOT_TOKEN,
            "SLACK_SIGNING_SECRET": SIGNING_SECRET,
            "SLACK_API_URL": self.fake.api_url,
        }

    def _answered(self, ts: str) -> bool:
        from slack_fake import CHANNEL

        return any(not m.streaming and m.blocks for m in self.fake.replies(CHANNEL, ts))

    def _mention(self, i: int, prefix: str) -> tuple[dict, str]:
        from slack_fake import event_envelope, mention

        ts = f"{int(time.time())}.{prefix}{i:05d}"
        return event_envelope(mention(QUESTIONS[i % len(QUESTIONS)], ts, user=f"U0BENCH{prefix}{i:04d}")), ts

    def idle(self, base: str, k: int) -> list[float]:
        from slack_fake import SlackClient

        slack, times = SlackClient(base), []
        try:
            for i in range(k):
                envelope, ts = self._mention(i, "1")
                times.append(_timed(lambda envelope=envelope: slack.post_event(envelope))[0])
                if not _until(lambda ts=ts: self._answered(ts), every=0.1):
                    raise RuntimeError("an idle mention was never answered")
        finally:
            slack.http.close()
        return times

    def burst(self, base: str, n: int, concurrency: int) -> list[float]:
        from slack_fake import SlackClient

        slack = SlackClient(base)
        envelopes = [self._mention(i, "2") for i in range(n)]
        try:
            with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
                times = list(pool.map(lambda e: _timed(lambda: slack.post_event(e[0]))[0], envelopes))
        finally:
            slack.http.close()
        self.last_ts = envelopes[-1][1]
        return times

    def drained(self, base: str) -> bool:
        return self.last_ts is None or self._answered(self.last_ts)

    def close(self) -> None:
        if self.fake is not None:
            self.fake.close()


CHANNELS: list[Callable[[], object]] = [WeComAibot, Slack]


# ---- the server, in its own process ------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(env: dict[str, str], folder: Path) -> tuple[subprocess.Popen, str]:
    """`gpu-advisor serve` on a free loopback port; returns once /readyz says ready."""
    port = _free_port()
    cli = Path(sys.executable).with_name("gpu-advisor")
    log = (folder / "serve.log").open("wb")
    proc = subprocess.Popen(
        [str(cli), "serve", "--port", str(port), "--log-level", "warning"],
        env=env,
        cwd=folder,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        if proc.poll() is not None:
            raise RuntimeError("the server stopped:\n" + (folder / "serve.log").read_text(errors="replace")[-2000:])
        try:
            return httpx.get(base + "/readyz", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    if not _until(ready, timeout=300, every=0.2):
        proc.kill()
        raise RuntimeError("the server did not become ready in 300 s")
    return proc, base


def stop_server(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class Prober:
    """`GET /healthz` in a loop, from its own thread, while something else runs."""

    def __init__(self, base: str):
        self.base, self.times = base, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Prober:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        with httpx.Client(timeout=30) as client:
            while not self._stop.is_set():
                self.times.append(_timed(lambda: client.get(self.base + "/healthz"))[0])
                time.sleep(0.02)


def stats(xs: list[float]) -> tuple[float, float]:
    """(median, p95) in milliseconds."""
    ms = sorted(x * 1000 for x in xs)
    return statistics.median(ms), ms[max(0, round(0.95 * len(ms)) - 1)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--idle", type=int, default=20, help="questions sent one at a time, each answered first")
    ap.add_argument("--callbacks", type=int, default=200, help="questions in the burst")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--workers", type=int, default=None, help="CHANNEL_WORKERS (default: the server's own)")
    ap.add_argument("--only", choices=[c.name for c in CHANNELS], action="append", help="measure this channel only")
    args = ap.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="bench-channels-"))
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GPU_ADVISOR_", "CHROMA_", "EMBEDDINGS_", "WECOM_", "SLACK_", "CHANNEL_"))
        and k not in ("DATABASE_URL", "OPENAI_API_KEY", "REDIS_URL")
    }
    env.update(
        GPU_ADVISOR_DATA_DIR=str(folder / "data"),
        DATABASE_URL=f"sqlite:///{folder}/store.sqlite3",
        GPU_ADVISOR_RATE_LIMIT="0",
        CHANNEL_QUEUE=str(2 * args.callbacks + args.idle),
        ANONYMIZED_TELEMETRY="False",
        NO_COLOR="1",
    )
    if args.workers:
        env["CHANNEL_WORKERS"] = str(args.workers)
    channels = [make() for make in CHANNELS if not args.only or make.name in args.only]
    for ch in channels:
        env.update(ch.env())
    proc, base = start_server(env, folder)
    idle: dict[str, list[float]] = {}
    loaded: dict[str, list[float]] = {}
    drain: dict[str, float | None] = {}
    try:
        with Prober(base) as quiet:  # the baseline and the idle acks, nothing answering behind them
            for ch in channels:
                idle[ch.name] = ch.idle(base, args.idle)
        with Prober(base) as busy:
            for ch in channels:  # one burst at a time, each drained before the next
                started = time.monotonic()
                loaded[ch.name] = ch.burst(base, args.callbacks, args.concurrency)
                done = _until(lambda ch=ch: ch.drained(base), every=0.25)
                drain[ch.name] = time.monotonic() - started if done else None
    finally:
        stop_server(proc)
        for ch in channels:
            ch.close()
    rows = [
        ("healthz, idle", quiet.times),
        *((f"{n}, idle", t) for n, t in idle.items()),
        ("healthz, under load", busy.times),
        *((f"{n}, under load", t) for n, t in loaded.items()),
    ]

    workers = args.workers or "the default (1 offline)"
    print(
        f"gpu-advisor serve in its own process; {args.idle} idle questions one at a time, then {args.callbacks} "
        f"at {args.concurrency} at once per channel; answer workers: {workers}; load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    print(f"{'':28}{'n':>5}{'median ms':>12}{'p95 ms':>10}")
    for label, times in rows:
        med, p = stats(times)
        mark = (
            ("  ok" if p < 200 else "  MISSED (target p95 < 200 ms)")
            if label.endswith("under load") and not label.startswith("healthz")
            else ""
        )
        print(f"{label:28}{len(times):>5}{med:>12.1f}{p:>10.1f}{mark}")
    for name, seconds in drain.items():
        print(
            f"{name}: all {args.callbacks} answers delivered {seconds:.1f} s after the burst began"
            if seconds
            else f"{name}: NOT all {args.callbacks} answers delivered within {ANSWER_WAIT_S} s"
        )


if __name__ == "__main__":
    main()
