"""The systems corpus (issue 26): the offline advisor's answers to real "what should we buy / how many cards for
N users" requests (tests/corpus/systems/), counted right only where a careful reader judged that very answer
right (judgements.yaml, keyed by the answer's digest). An answer nobody judged yet (its digest changed) is
counted as `stale`, never as right.

    .venv/bin/python bench/systems.py                    # development rows
    .venv/bin/python bench/systems.py --held-out         # the frozen held-out rows (measure only at the end)
    .venv/bin/python bench/systems.py --dump answers.yaml  # the answers, for a reader to judge

This benchmark only reads and prints (its store and index live in a temporary folder).
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
FOLDER = ROOT / "tests" / "corpus" / "systems"
#: the share of held-out requests a careful reader must judge answered right (issue 26)
TARGET = 0.90


def digest(answer: str) -> str:
    return hashlib.sha256(answer.encode()).hexdigest()[:16]


def held_out_ids() -> set[str]:
    return set(yaml.safe_load((FOLDER / "held_out.yaml").read_text(encoding="utf-8"))["ids"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--held-out", action="store_true", help="the frozen held-out rows instead of development")
    ap.add_argument("--dump", type=Path, help="write the answers (YAML) here, for judging")
    ap.add_argument("--ids", help="only these row ids (comma-separated)")
    args = ap.parse_args()
    logging.disable(logging.CRITICAL)
    from bot.answer.advisor import Advisor
    from bot.core.store import Store
    from bot.core.toolbox import Toolbox
    from bot.offline.rules import RulesPlanner
    from knowledge.config import KnowledgeConfig
    from knowledge.retrieval import Retriever

    rows = yaml.safe_load((FOLDER / "requests.yaml").read_text(encoding="utf-8"))
    judged = {j["id"]: j for j in yaml.safe_load((FOLDER / "judgements.yaml").read_text(encoding="utf-8")) or []}
    held = held_out_ids()
    rows = [r for r in rows if (r["id"] in held) == args.held_out]
    if args.ids:
        wanted = set(args.ids.split(","))
        rows = [r for r in rows if r["id"] in wanted]
    counts = {"right": 0, "wrong": 0, "stale": 0}
    dumped, times = [], []
    with tempfile.TemporaryDirectory() as tmp:
        toolbox = Toolbox(Retriever.from_config(KnowledgeConfig(data_dir=Path(tmp) / "kb")))
        adv = Advisor(store=Store(f"sqlite:///{tmp}/s.sqlite3"), toolbox=toolbox, offline=RulesPlanner())
        for row in rows:
            t0 = time.perf_counter()
            answer = adv.ask(row["text"]).answer
            times.append(time.perf_counter() - t0)
            d = digest(answer)
            j = judged.get(row["id"])
            state = "stale" if not j or j["digest"] != d else ("right" if j["right"] else "wrong")
            counts[state] += 1
            print(f"{state:<6} {row['id']:<28} {d}")
            dumped.append({"id": row["id"], "lang": row["lang"], "url": row["url"], "question": row["text"],
                           "must": row["must"], "state": state, "digest": d, "answer": answer})  # fmt: skip
    if args.dump:
        args.dump.write_text(yaml.safe_dump(dumped, allow_unicode=True, sort_keys=False, width=120), encoding="utf-8")
    n = len(rows) or 1
    times.sort()
    part = "held-out" if args.held_out else "development"
    print(
        f"{part}: {len(rows)} rows, judged right {counts['right']} ({counts['right'] / n:.1%}), wrong {counts['wrong']},"
        f" stale (not judged) {counts['stale']}; median answer {times[len(times) // 2] * 1000:.0f} ms"
    )
    if args.held_out:
        print("target met (≥ 90%)" if counts["right"] / n >= TARGET else "target NOT met (≥ 90%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
