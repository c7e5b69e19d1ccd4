"""Understanding: intent accuracy, slot F1 and answer pass rate on the corpus's held-out fifth, per language,
next to the previous planner (the offline planner as of the commit before issue 10) measured in the same run.

    .venv/bin/python bench/understanding.py            # held-out fifth (the figure that counts)
    .venv/bin/python bench/understanding.py --all      # every row (the training four-fifths included)

This benchmark only reads and prints (its stores and indexes live in a temporary folder). Writing the training
four-fifths into the intent data and rebuilding the shipped weights is a maintenance command, not a benchmark:
`python -m bot.offline.understand.intent_build --export-corpus` (it was `--export` here).

The previous planner is the package `bot/offline` at BASELINE_COMMIT, extracted from git into a temporary
package (imports rewritten) and run through the same advisor, store and knowledge index. It shares today's
core modules (language rule, toolbox, calculators), so its figures measure its understanding and dialogue
policy, which is what changed. Its intents have other names where it had no such intent (it has no
`weights`, `kv_cache`…): a question of a kind it did not know counts as wrong, as a user would see it.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import real_questions

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
BASELINE_COMMIT = "e3ef10f"  # main before issue 10: "bot/ in wings …"
#: modules outside the offline planner that moved since the baseline (the layout's step two), longest first
#: so that a module is rewritten before its parent package; applied to the old planner's own text
MOVED_SINCE_BASELINE = {
    "tools.schemas.model_memory": "tools.schemas.memory",
    "tools.schemas.precision": "tools.schemas.speed",
    "tools.train_breakdown": "tools.memory.train_breakdown",
    "tools.schemas.select": "tools.schemas.recommend",
    "tools.zero_sharding": "tools.memory.zero_sharding",
    "tools.schemas.power": "tools.schemas.money",
    "tools.architecture": "tools.catalog.architecture",
    "tools.model_memory": "tools.memory.model_memory",
    "tools.train_advice": "tools.memory.train_advice",
    "tools.schemas.cost": "tools.schemas.money",
    "tools.specs_tools": "tools.specs",
    "tools.select_text": "tools.recommend.reasons",
    "tools.model_spec": "tools.catalog.model_spec",
    "tools.specs_base": "tools.catalog.record_base",
    "bot.redis_client": "bot.core.redis_client",
    "tools.precision": "tools.speed.precision_speedup",
    "tools.gpu_spec": "tools.catalog.gpu_spec",
    "tools.capacity": "tools.memory.capacity",
    "tools.catalog": "tools.catalog.lookup",
    "tools.serving": "tools.memory.fit_inference",
    "tools.verdict": "tools.memory.verdict",
    "tools.prices": "tools.catalog.prices",
    "tools.memory": "tools.memory.fit_training",
    "tools.decode": "tools.speed.inference_speed",
    "tools.select": "tools.recommend.recommend_gpus",
    "bot.language": "bot.core.language",
    "bot.settings": "bot.core.settings",
    "tools.specs": "tools.catalog.records",
    "tools.speed": "tools.speed.training_time",
    "tools.flops": "tools.speed.flops",
    "tools.power": "tools.money.power_draw",
    "bot.planner": "bot.core.planner",
    "bot.toolbox": "bot.core.toolbox",
    "tools.comm": "tools.speed.comm",
    "tools.cost": "tools.money.rent_vs_buy",
    "tools.mfu": "tools.catalog.mfu",
    "bot.trace": "bot.core.trace",
    "bot.store": "bot.core.store",
}
_MOVED_RE = re.compile(r"(?<![\w.])(" + "|".join(map(re.escape, MOVED_SINCE_BASELINE)) + r")(?!\w)")
_FROM_RE = re.compile(r"^(\s*)from ((?:tools|bot)(?:\.\w+)*) import (\w+)(?: as (\w+))?[ \t]*$", re.M)


def _from_moved(m: re.Match) -> str:
    indent, package, name, alias = m.groups()
    now = MOVED_SINCE_BASELINE.get(f"{package}.{name}")
    if now is None:
        return m.group(0)
    parent, _, leaf = now.rpartition(".")
    bound = alias or name
    return f"{indent}from {parent} import {leaf}" + ("" if bound == leaf else f" as {bound}")


def _corpus():
    spec = importlib.util.spec_from_file_location("corpus", ROOT / "tests" / "corpus" / "corpus.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _baseline_planner(tmp: Path):
    """The previous offline planner, from git, as a package of its own."""
    pkg = tmp / "baseline_offline"
    pkg.mkdir()
    files = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", BASELINE_COMMIT, "bot/offline"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for name in files:
        body = subprocess.run(
            ["git", "show", f"{BASELINE_COMMIT}:{name}"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.replace("bot.offline", "baseline_offline")
        body = _MOVED_RE.sub(lambda m: MOVED_SINCE_BASELINE[m.group(1)], body)  # what it imports from today's tree
        body = _FROM_RE.sub(
            _from_moved, body
        )  # then "from tools import catalog" -> "from tools.catalog import lookup …"
        target = pkg / Path(name).relative_to("bot/offline")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body, encoding="utf-8")
    sys.path.insert(0, str(tmp))
    rules = importlib.import_module("baseline_offline.rules")
    parse = importlib.import_module("baseline_offline.parse").parse
    return rules.RulesPlanner(), parse


def _old_slots(p) -> dict:
    return {
        "model": p.models[0] if p.models else None,
        "gpu": p.gpus[0] if p.gpus else None,
        "n_gpus": p.n_gpus,
        "method": p.method,
        "precision": p.precision,
        "tokens": p.tokens,
        "seq_len": p.seq_len,
        "context_len": p.context_len,
        "batch": p.batch or p.concurrency,
        "budget_cny": p.budget_cny,
        "hours_per_day": p.hours_per_day,
        "months": p.months,
        "gpu_hours": p.gpu_hours,
        "hours": p.hours,
        "zero_stage": p.zero_stage,
        "domestic_only": p.domestic_only,
        "gpus": list(p.gpus) if len(p.gpus) > 1 else None,
    }


def evaluate(advisor, parse, slots_of, intent_of, rows, c) -> dict:
    stats = defaultdict(lambda: [0, 0, 0, 0, 0, 0])  # turns, intents right, answers right, tp, fp, fn
    failures = []
    times = []
    for row in rows:
        cid = None
        for turn in c.turns(row):
            t0 = time.perf_counter()
            trace = advisor.ask(turn["q"], conversation_id=cid)
            times.append(time.perf_counter() - t0)
            cid = trace.conversation_id
            intent = intent_of(advisor, cid, turn["q"])
            problems = c.check(turn, trace)
            if intent != turn["intent"]:
                problems.insert(0, f"intent {intent} != {turn['intent']}")
            first = turn is c.turns(row)[0]
            predicted = slots_of(parse(turn["q"])) if first else None
            for key in ("all", c.lang_of(turn["q"])):
                s = stats[key]
                s[0] += 1
                s[1] += intent == turn["intent"]
                s[2] += not problems
                if predicted is not None:
                    tp, fp, fn = c.slot_counts(predicted, turn.get("slots") or {})
                    s[3] += tp
                    s[4] += fp
                    s[5] += fn
            if problems:
                failures.append((row["id"], turn["q"], problems))
    return {"stats": dict(stats), "failures": failures, "times": times}


def _f1(tp: int, fp: int, fn: int) -> float:
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--all", action="store_true", help="every row, not only the held-out fifth")
    ap.add_argument("--failures", action="store_true", help="list the turns answered wrong")
    ap.add_argument("--no-baseline", action="store_true")
    ap.add_argument("--real-failures", action="store_true", help="list the real questions whose checks fail")
    ap.add_argument("--dump", type=Path, help="write this planner's answers to the real questions (YAML) here")
    args = ap.parse_args()
    logging.disable(logging.CRITICAL)
    c = _corpus()
    from bot.answer.advisor import Advisor
    from bot.core.store import Store
    from bot.core.toolbox import Toolbox
    from bot.offline.rules import RulesPlanner
    from bot.offline.understand.dialogue import slots_of
    from bot.offline.understand.parse import parse
    from bot.offline.understand.request.reader import read
    from knowledge.config import KnowledgeConfig
    from knowledge.retrieval import Retriever

    rows = [r for r in c.rows() if args.all or c.held_out(r["id"])]
    rc = real_questions.corpus()
    real_rows = [r for r in rc.rows() if args.all or rc.held_out(r["id"])]
    real = {}
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        toolbox = Toolbox(Retriever.from_config(KnowledgeConfig(data_dir=Path(tmp) / "kb")))

        def new_intent(adv, cid, q):
            return (adv.store.last_state(cid) or {}).get("frame", {}).get("intent")

        adv = Advisor(store=Store(f"sqlite:///{tmp}/new.sqlite3"), toolbox=toolbox, offline=RulesPlanner())
        results["this planner"] = evaluate(adv, parse, slots_of, new_intent, rows, c)
        real["this planner"] = real_questions.evaluate(adv, real_rows, rc, read)
        if not args.no_baseline:
            old_planner, old_parse = _baseline_planner(Path(tmp))

            def old_intent(adv, cid, q):
                return (adv.store.last_state(cid) or {}).get("intent")

            old = Advisor(store=Store(f"sqlite:///{tmp}/old.sqlite3"), toolbox=toolbox, offline=old_planner)
            results["previous planner"] = evaluate(old, old_parse, _old_slots, old_intent, rows, c)
            real["previous planner"] = real_questions.evaluate(old, real_rows, rc)
    n_rows = len(rows)
    n_turns = sum(len(c.turns(r)) for r in rows)
    print(f"{'held-out fifth' if not args.all else 'whole corpus'}: {n_rows} rows, {n_turns} questions")
    print(f"{'planner':<18}{'slice':<8}{'questions':>10}{'intent acc':>12}{'slot F1':>9}{'answers right':>15}")
    for name, res in results.items():
        for key in ("all", "zh", "en", "mixed"):
            s = res["stats"].get(key)
            if not s:
                continue
            print(f"{name:<18}{key:<8}{s[0]:>10}{s[1] / s[0]:>12.1%}{_f1(*s[3:]):>9.2f}{s[2] / s[0]:>15.1%}")
    new = results["this planner"]
    times = sorted(new["times"])
    print(f"median answer {times[len(times) // 2] * 1000:.1f} ms over {len(times)} questions (this planner)")
    if args.failures:
        for rid, q, problems in new["failures"]:
            print(f"  {rid}: {q}\n      " + "; ".join(problems))
    real_questions.report(
        f"real questions ({'held-out fifth' if not args.all else 'whole corpus'}, tests/corpus/real): {len(real_rows)} rows",
        real,
    )
    if args.real_failures:
        for rid, problems in real["this planner"]["failures"]:
            print(f"  {rid}: " + "; ".join(problems))
    if args.dump:  # every planner's answers to the real questions, for a reader to judge (judgements.yaml)
        import yaml

        by_id = {r["id"]: r for r in real_rows}
        dumped = [
            {"planner": name, "id": rid, "url": by_id[rid]["url"], "lang": by_id[rid].get("lang"),
             "asks": by_id[rid].get("asks"), "question": by_id[rid]["text"], "thread_answer": by_id[rid].get("accepted"),
             "expect": by_id[rid].get("expect"), "digest": rc.digest(a), "answer": a}
            for name, res in real.items()
            for rid, a in res["answers"].items()
        ]  # fmt: skip
        args.dump.write_text(yaml.safe_dump(dumped, allow_unicode=True, sort_keys=False, width=120), encoding="utf-8")
    s = new["stats"]["all"]
    ok = s[1] / s[0] >= 0.95 and s[2] / s[0] >= 0.90
    print("targets met (intent ≥ 95%, answers ≥ 90%)" if ok else "targets NOT met (intent ≥ 95%, answers ≥ 90%)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
