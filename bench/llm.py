"""LLM mode against a scripted OpenAI-compatible endpoint with a real server's pace, next to offline mode.

    .venv/bin/python bench/llm.py [--questions 12] [--first-token 0.4] [--chars-per-s 60]

The scripted endpoint (tests/bot/llm/scripted_openai.py) plays a capable model: for each question of
the golden corpus it calls the calculators the offline planner would call, all in one turn (parallel
tool calls), then writes the offline planner's verdict and figures as its answer; a question that
needs no calculator is answered in one turn. Each streamed reply starts after `--first-token` seconds
and then arrives at `--chars-per-s` (a 7B model on one GPU writes roughly 30-60 tokens/s). Everything
goes through the real agent, the quality gate and the grounded streaming.

Printed: model calls per answer (target ≤ 2.5 on average), prompt and reply tokens per answer
(estimated as bot.llm.budget does), time to the first streamed sentence, total time, how many
answers shipped as `llm`, and the offline planner's time for the same questions (the baseline).
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "bot" / "llm"))


def _questions(n: int) -> list[str]:
    rows = yaml.safe_load((ROOT / "tests" / "golden" / "questions.yaml").read_text(encoding="utf-8"))
    single = [r["q"] for r in rows if "q" in r and not r.get("turns")]
    return single[:n]


def _verdict_paragraph(answer: str) -> str:
    """The offline answer's opening paragraph (verdict and key figures), without its markdown bold."""
    first = answer.strip().split("\n\n", 1)[0]
    return first.replace("**", "")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=12)
    ap.add_argument("--first-token", type=float, default=0.4, help="seconds to the first streamed token")
    ap.add_argument("--chars-per-s", type=float, default=60.0, help="characters per second after it")
    args = ap.parse_args()
    logging.disable(logging.CRITICAL)

    from scripted_openai import ScriptedOpenAI, text, tool_calls

    from bot.answer.advisor import Advisor
    from bot.core.settings import Settings
    from bot.core.store import Store
    from bot.core.toolbox import Toolbox
    from bot.llm.agent import AgentPlanner
    from bot.llm.budget import estimate_tokens
    from bot.offline.rules import RulesPlanner

    questions = _questions(args.questions)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        offline = Advisor(
            store=Store(f"sqlite:///{tmp}/offline.sqlite3"), toolbox=Toolbox(None), offline=RulesPlanner()
        )
        for q in questions:
            t0 = time.perf_counter()
            reference = offline.ask(q)
            offline_s = time.perf_counter() - t0
            calls = tuple((c.tool, c.input) for c in reference.tool_calls if c.tool != "search_knowledge")
            answer = _verdict_paragraph(reference.answer) + "\n\nFOLLOW-UPS: 还要考虑什么？ | 换一张卡呢？"
            script = [tool_calls(*calls), text(answer)] if calls else [text(answer)]
            endpoint = ScriptedOpenAI(script, pace=(args.first_token, args.chars_per_s))
            settings = Settings(
                _env_file=None,
                llm_base_url="http://bench.test/v1",
                llm_model="bench-model",
                llm_api_key="sk-bench",
                llm_max_retries=0,
            )
            llm = AgentPlanner.from_settings(settings, http_client=endpoint.client())
            advisor = Advisor(
                store=Store(f"sqlite:///{tmp}/llm.sqlite3"), toolbox=Toolbox(None), offline=RulesPlanner(), llm=llm
            )
            first: list[float] = []
            t0 = time.perf_counter()
            for event in advisor.stream(q):
                if event["type"] == "delta" and not first:
                    first.append(time.perf_counter() - t0)
                if event["type"] == "final":
                    trace = event["trace"]
            total = time.perf_counter() - t0
            prompt = sum(
                estimate_tokens(json.dumps(b.get("tools", []), ensure_ascii=False))
                + sum(estimate_tokens(str(m.get("content") or "")) for m in b["messages"])
                for b in endpoint.requests
            )
            rows.append(
                {
                    "calls": len(endpoint.requests),
                    "prompt": prompt,
                    "reply": estimate_tokens(answer),
                    "first": first[0] if first else total,
                    "total": total,
                    "offline": offline_s,
                    "mode": trace["mode"],
                    "gate": trace["gate"],
                }
            )

    def med(key: str) -> float:
        return statistics.median(r[key] for r in rows)

    n = len(rows)
    calls = sum(r["calls"] for r in rows) / n
    shipped = sum(r["mode"] == "llm" for r in rows)
    print(
        f"{n} questions from tests/golden/questions.yaml; server pace: first token {args.first_token} s, "
        f"{args.chars_per_s:.0f} chars/s"
    )
    print(f"{'':<34}{'median':>10}{'mean':>10}")
    print(f"{'model calls per answer':<34}{med('calls'):>10.1f}{calls:>10.2f}   target mean ≤ 2.5")
    print(
        f"{'prompt tokens per answer (est.)':<34}{med('prompt'):>10.0f}{statistics.mean(r['prompt'] for r in rows):>10.0f}"
    )
    print(
        f"{'reply tokens per answer (est.)':<34}{med('reply'):>10.0f}{statistics.mean(r['reply'] for r in rows):>10.0f}"
    )
    print(f"{'first streamed sentence, s':<34}{med('first'):>10.2f}{statistics.mean(r['first'] for r in rows):>10.2f}")
    print(f"{'total per answer, s':<34}{med('total'):>10.2f}{statistics.mean(r['total'] for r in rows):>10.2f}")
    print(
        f"{'baseline: offline answer, s':<34}{med('offline'):>10.3f}{statistics.mean(r['offline'] for r in rows):>10.3f}"
    )
    print(
        f"first sentence at {med('first') / med('total'):.0%} of the total time (median); "
        f"LLM total = {med('total') / med('offline'):.0f}× the offline answer"
    )
    print(f"shipped as llm: {shipped}/{n}; gate reasons met: {sorted({g for r in rows for g in r['gate']}) or 'none'}")
    return 0 if calls <= 2.5 else 1


if __name__ == "__main__":
    raise SystemExit(main())
