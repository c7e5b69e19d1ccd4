"""The web widget in Chromium: time from send to the first streamed character and to the final answer.

    .venv/bin/python bench/widget.py [--rounds 5]

Starts `gpu-advisor serve` on a free loopback port (offline mode, a temporary data dir, a publishable
key), a host page with the one-line snippet on another loopback origin, and Debian's Chromium
(/usr/bin/chromium) through Playwright. Each round asks every question in a fresh conversation and
times, inside the panel with `performance.now()`, Enter -> first answer character on screen ->
finished answer rendered (tables, charts, chips). Baseline, measured in the same run against the same
server: the same questions over `/v1/ask/stream` with httpx (first `delta` event, `final` event).
Prints medians and p95 in ms, and the browser/baseline ratios. Loopback only; everything it starts is
stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))  # what the widget tests start

from loopback import free_port
from served import CHROMIUM, CHROMIUM_ARGS, CLI, clean_env, host_pages, serve

QUESTIONS = [
    "70B 全参训练，单卡 A100 够吗？",
    "8 张 H100 租还是买？用 3 年",
    "H100 和 A100 比较",
    "Qwen2.5-72B 推理要几张 H100？",
]

TIMER = """() => {
  const box = document.getElementById('input');
  window.__t = null;
  box.addEventListener('keydown', (e) => {
    if (e.key !== 'Enter') return;
    const t = { start: performance.now(), first: null, done: null };
    window.__t = t;
    const log = document.getElementById('log');
    const obs = new MutationObserver(() => {
      const bot = log.querySelector('.turn:last-of-type .msg.bot');
      if (!bot) return;
      const answer = bot.querySelector('.answer');
      if (t.first === null && answer && answer.textContent.length) t.first = performance.now();
      if (bot.getAttribute('aria-busy') === 'false') { t.done = performance.now(); obs.disconnect(); }
    });
    obs.observe(log, { subtree: true, childList: true, characterData: true, attributes: true });
  }, { capture: true });
}"""


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def row(name: str, values: list[float]) -> str:
    return (
        f"{name:<34} median {statistics.median(values):7.1f} ms   p95 {pct(values, 0.95):7.1f} ms   (n={len(values)})"
    )


def baseline(api: str, key: str, origin: str, rounds: int) -> tuple[list[float], list[float]]:
    first, final = [], []
    headers = {"Authorization": f"Bearer {key}", "Origin": origin}
    with httpx.Client(timeout=60) as client:
        for _ in range(rounds):
            for question in QUESTIONS:
                start = time.perf_counter()
                got_first = None
                with client.stream("POST", f"{api}/v1/ask/stream", json={"text": question}, headers=headers) as resp:
                    for line in resp.iter_lines():
                        if line.startswith("event: delta") and got_first is None:
                            got_first = time.perf_counter()
                        elif line.startswith("event: final"):
                            break
                final.append((time.perf_counter() - start) * 1000)
                first.append(((got_first or time.perf_counter()) - start) * 1000)
    return first, final


def browser_run(api: str, host: str, rounds: int) -> tuple[list[float], list[float]]:
    from playwright.sync_api import expect, sync_playwright

    first, final = [], []
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = chromium.new_page(viewport={"width": 1280, "height": 800})
        page.goto(host)
        page.locator("[data-gpu-advisor] button").click()
        frame = None
        while frame is None:
            frame = next((f for f in page.frames if "/widget?" in f.url), None)
            page.wait_for_timeout(20)
        frame.wait_for_selector("#input")
        frame.evaluate(TIMER)
        for _ in range(rounds):
            for question in QUESTIONS:
                frame.get_by_role("button", name="新对话").click()
                frame.locator("#input").fill(question)
                frame.locator("#input").press("Enter")
                bot = frame.locator(".turn").last.locator(".msg.bot")
                expect(bot).to_have_attribute("aria-busy", "false", timeout=60_000)
                frame.wait_for_function("() => window.__t && window.__t.done !== null")
                t = frame.evaluate("window.__t")
                first.append(t["first"] - t["start"])
                final.append(t["done"] - t["start"])
        chromium.close()
    return first, final


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds over the questions")
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        sys.exit("needs Debian's chromium at /usr/bin/chromium (apt-get install chromium)")
    tmp = Path(tempfile.mkdtemp(prefix="bench-widget-"))
    env = clean_env(tmp / "data", GPU_ADVISOR_RATE_LIMIT="0", GPU_ADVISOR_WIDGET_RATE_LIMIT="0")
    host_port, api_port = free_port(), free_port()
    host = f"http://127.0.0.1:{host_port}"
    made = subprocess.run(
        [str(CLI), "keys", "create", "bench", "--widget", "--origin", host, "--json"],
        env=env,
        cwd=tmp,
        capture_output=True,
        text=True,
        check=True,
    )
    key = json.loads(made.stdout)["key"]
    page = (
        f'<!doctype html><html lang="zh-CN"><head><meta charset="utf-8"><title>bench</title></head><body>'
        f'<script src="http://127.0.0.1:{api_port}/widget.js" data-key="{key}" data-lang="zh" defer></script>'
        "</body></html>"
    )
    server = host_pages({"/": page}, host_port)
    try:
        with serve(env, cwd=tmp, port=api_port, timeout_s=300) as api:
            baseline(api, key, host, 1)  # warm-up
            base_first, base_final = baseline(api, key, host, args.rounds)
            web_first, web_final = browser_run(api, host, args.rounds)
    except RuntimeError as err:
        sys.exit(str(err))
    finally:
        server.shutdown()
        server.server_close()
    print(f"widget in Chromium, {len(QUESTIONS)} questions x {args.rounds} rounds, offline mode, loopback")
    print(row("baseline httpx: first delta", base_first))
    print(row("baseline httpx: final event", base_final))
    print(row("browser: first character shown", web_first))
    print(row("browser: answer finished", web_final))
    print(
        f"ratio browser/baseline, median: first {statistics.median(web_first) / statistics.median(base_first):.2f}x"
        f"   final {statistics.median(web_final) / statistics.median(base_final):.2f}x"
    )


if __name__ == "__main__":
    main()
