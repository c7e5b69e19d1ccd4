"""Offline answer latency over the golden question corpus, and cold start to the first answer.

    .venv/bin/python bench/advisor.py [--rounds 3]

Targets (issue 5): median ≤ 30 ms and p95 ≤ 100 ms per offline answer on this machine. Cold start
(a fresh process: imports, index load or build, first answer) is measured in a subprocess. The
baseline is parsing the same questions alone (bot.offline.parse), measured in the same run.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

COLD = """
import time, sys
t0 = time.perf_counter()
from bot.advisor import Advisor
from bot.settings import Settings
a = Advisor.from_settings(Settings())
t1 = time.perf_counter()
a.ask("70B 全参训练，单卡 A100 够吗？")
t2 = time.perf_counter()
print(f"{t1 - t0:.3f} {t2 - t1:.3f}")
"""


def _questions() -> list[list[str]]:
    rows = yaml.safe_load((ROOT / "tests" / "golden" / "questions.yaml").read_text(encoding="utf-8"))
    return [[t["q"] for t in (r.get("turns") or [r])] for r in rows]


def _pct(xs: list[float], q: int) -> float:
    return statistics.quantiles(xs, n=100)[q - 1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    import logging

    logging.disable(logging.CRITICAL)
    from bot.advisor import Advisor
    from bot.offline.parse import parse
    from bot.offline.rules import RulesPlanner
    from bot.store import Store
    from bot.toolbox import Toolbox
    from knowledge.config import KnowledgeConfig
    from knowledge.retrieval import Retriever

    dialogs = _questions()
    with tempfile.TemporaryDirectory() as tmp:
        cold = subprocess.run([sys.executable, "-c", COLD], capture_output=True, text=True, cwd=ROOT,
                              env={"GPU_ADVISOR_DATA_DIR": f"{tmp}/cold", "PATH": "/usr/bin:/bin", "ANONYMIZED_TELEMETRY": "False"})
        if cold.returncode:
            print(cold.stderr[-2000:])
            return 1
        build_s, first_s = map(float, cold.stdout.split()[-2:])

        retriever = Retriever.from_config(KnowledgeConfig(data_dir=Path(tmp) / "warm"))
        advisor = Advisor(store=Store(f"sqlite:///{tmp}/bench.sqlite3"), toolbox=Toolbox(retriever), offline=RulesPlanner())
        times: list[float] = []
        base: list[float] = []
        for _ in range(args.rounds):
            for turns in dialogs:
                cid = None
                for q in turns:
                    t0 = time.perf_counter()
                    trace = advisor.ask(q, conversation_id=cid)
                    times.append((time.perf_counter() - t0) * 1000)
                    cid = trace.conversation_id
                    t0 = time.perf_counter()
                    parse(q)
                    base.append((time.perf_counter() - t0) * 1000)
    med, p95 = statistics.median(times), _pct(times, 95)
    bmed = statistics.median(base)
    print(f"questions answered: {len(times)} ({args.rounds} rounds over {len(dialogs)} rows)")
    print(f"{'':<28}{'median ms':>10}{'p95 ms':>10}{'× baseline':>12}{'target':>14}")
    print(f"{'baseline: parse only':<28}{bmed:>10.2f}{_pct(base, 95):>10.2f}{1:>12.1f}")
    print(f"{'offline answer':<28}{med:>10.2f}{p95:>10.2f}{med / bmed:>12.1f}{'≤30 / ≤100':>14}")
    print(f"cold start: import + index build {build_s:.2f} s, first answer {first_s * 1000:.0f} ms "
          f"(total {build_s + first_s:.2f} s)")
    ok = med <= 30 and p95 <= 100
    print("targets met" if ok else "targets NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
