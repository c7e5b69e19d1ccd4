"""Offline answer latency over the golden question corpus, and cold start to the first answer.

    .venv/bin/python bench/advisor.py [--rounds 3] [--cold 5]

Targets: median ≤ 30 ms and p95 ≤ 100 ms per offline answer on this machine (issue 5); cold start ≤ 2 s
(issue 10). The baseline of the answers is parsing the same questions alone (bot.offline.understand.parse), measured
in the same run.

Cold start is a fresh process running `gpu-advisor ask "…"` to its printed answer (wall clock, interpreter
start included; user and user+system CPU), median of `--cold` processes over a data folder whose index is
already built (the first process on an empty folder builds it; that one is reported on its own line). Its
baseline, in the same run and interleaved, is the same command with GPU_ADVISOR_TRAIN_INTENTS=1: the shipped
intent weights ignored and the model trained in process, as every fresh process did before the weights
shipped. Also interleaved: the same command in the tree of COLD_BEFORE_COMMIT (extracted from git, its own
data folder), before the start stopped loading jieba's whole dictionary and re-reading every note.
"""

from __future__ import annotations

import argparse
import io
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

COLD = """
import time, sys
t0 = time.perf_counter()
from bot.answer.advisor import Advisor
from bot.core.settings import Settings
a = Advisor.from_settings(Settings())
t1 = time.perf_counter()
a.ask("70B 全参训练，单卡 A100 够吗？")
t2 = time.perf_counter()
print(f"{t1 - t0:.3f} {t2 - t1:.3f}")
"""


CLI = "import sys; from bot.cli import main; sys.argv = ['gpu-advisor', 'ask', sys.argv[1]]; main()"
COLD_QUESTION = "70B 全参训练，单卡 A100 够吗？"
#: main before the cold-start work of issue 10 (jieba's whole dictionary loaded and every note read at each start)
COLD_BEFORE_COMMIT = "6abc857"


def _cpu_children() -> tuple[float, float]:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime, r.ru_utime + r.ru_stime


def _tree_at(commit: str, folder: Path) -> Path | None:
    """The repository's files at `commit`, extracted into `folder`; None without git or that commit."""
    done = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", commit], capture_output=True)
    if done.returncode:
        return None
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as tar:
        tar.extractall(folder, filter="data")
    return folder


def _ask(root: Path, env: dict[str, str]) -> tuple[float, float, float]:
    """(wall, user CPU, user+system CPU) seconds of one fresh `gpu-advisor ask` in the tree at `root`."""
    t0, (u0, c0) = time.perf_counter(), _cpu_children()
    done = subprocess.run(
        [sys.executable, "-c", CLI, COLD_QUESTION],
        capture_output=True,
        text=True,
        cwd=root,
        env={"PATH": "/usr/bin:/bin", "ANONYMIZED_TELEMETRY": "False", **env},
    )
    wall, (u1, c1) = time.perf_counter() - t0, _cpu_children()
    if done.returncode:
        raise RuntimeError(done.stderr[-2000:])
    return wall, u1 - u0, c1 - c0


def _cold_runs(n: int, tmp: str) -> dict[str, list[tuple[float, float, float]]]:
    """(wall, user, CPU) of n fresh `gpu-advisor ask` processes with the shipped weights, of n forced to train,
    and of n in the tree before the cold-start work (when git has it), interleaved so that a busy machine
    weighs on all alike."""
    kinds = {
        "shipped": (ROOT, {"GPU_ADVISOR_DATA_DIR": f"{tmp}/cold"}),
        "trained": (ROOT, {"GPU_ADVISOR_DATA_DIR": f"{tmp}/cold", "GPU_ADVISOR_TRAIN_INTENTS": "1"}),
    }
    before = _tree_at(COLD_BEFORE_COMMIT, Path(tmp) / "before")
    if before is not None:
        kinds["before"] = (before, {"GPU_ADVISOR_DATA_DIR": f"{tmp}/cold-before"})
        _ask(*kinds["before"])  # builds that tree's own index
    runs: dict[str, list[tuple[float, float, float]]] = {k: [] for k in kinds}
    for _ in range(n):
        for key, (root, env) in kinds.items():
            runs[key].append(_ask(root, env))
    return runs


def _questions() -> list[list[str]]:
    rows = yaml.safe_load((ROOT / "tests" / "golden" / "questions.yaml").read_text(encoding="utf-8"))
    return [[t["q"] for t in (r.get("turns") or [r])] for r in rows]


def _pct(xs: list[float], q: int) -> float:
    return statistics.quantiles(xs, n=100)[q - 1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cold", type=int, default=5, help="fresh processes per cold-start figure")
    args = ap.parse_args()

    import logging

    logging.disable(logging.CRITICAL)
    from bot.answer.advisor import Advisor
    from bot.core.store import Store
    from bot.core.toolbox import Toolbox
    from bot.offline.rules import RulesPlanner
    from bot.offline.understand.parse import parse
    from knowledge.config import KnowledgeConfig
    from knowledge.retrieval import Retriever

    dialogs = _questions()
    with tempfile.TemporaryDirectory() as tmp:
        cold = subprocess.run(
            [sys.executable, "-c", COLD],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env={"GPU_ADVISOR_DATA_DIR": f"{tmp}/cold", "PATH": "/usr/bin:/bin", "ANONYMIZED_TELEMETRY": "False"},
        )
        if cold.returncode:
            print(cold.stderr[-2000:])
            return 1
        build_s, first_s = map(float, cold.stdout.split()[-2:])
        cold_runs = _cold_runs(args.cold, tmp)

        retriever = Retriever.from_config(KnowledgeConfig(data_dir=Path(tmp) / "warm"))
        advisor = Advisor(
            store=Store(f"sqlite:///{tmp}/bench.sqlite3"), toolbox=Toolbox(retriever), offline=RulesPlanner()
        )
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
    print(
        f"first process on an empty data folder: import + index build {build_s:.2f} s, first answer "
        f"{first_s * 1000:.0f} ms (total {build_s + first_s:.2f} s)"
    )
    med3 = {k: [statistics.median(x) for x in zip(*v, strict=True)] for k, v in cold_runs.items()}
    wall_base = med3["trained"][0]
    print(f"cold start, fresh `gpu-advisor ask` to its answer (median of {args.cold} processes, index built):")
    print(f"{'':<50}{'wall s':>8}{'user s':>8}{'CPU s':>8}{'× baseline':>12}{'target':>10}")
    rows = [
        ("trained", "baseline: intent model trained in process", ""),
        ("before", f"before the cold-start work ({COLD_BEFORE_COMMIT})", ""),
        ("shipped", "now: shipped intent weights, word store, stamp", "≤2 wall"),
    ]
    for key, label, target in rows:
        if key in med3:
            wall, user, cpu = med3[key]
            print(f"{label:<50}{wall:>8.2f}{user:>8.2f}{cpu:>8.2f}{wall / wall_base:>12.2f}{target:>10}")
    if "before" not in med3:
        print(f"(before: commit {COLD_BEFORE_COMMIT} not in this repository's git)")
    cold = med3["shipped"][0]
    ok = med <= 30 and p95 <= 100 and cold <= 2
    print("targets met" if ok else "targets NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
