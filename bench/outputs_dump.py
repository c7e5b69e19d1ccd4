"""Every calculator's output on a fixed input set, as one JSON-lines file: the guard of calculator speed work
(an optimisation must leave every output byte-identical; `bench/answers_dump.py` is the same guard for answers).

    .venv/bin/python bench/outputs_dump.py FILE          # then, after the change:
    .venv/bin/python bench/outputs_dump.py FILE2 && cmp FILE FILE2

The inputs: every `input`/`args` mapping in tests/golden/*.yaml, the contract test's inputs
(tests/tools/test_contract.py TRUSTED) and bench/calculators.py's inputs, each run through every registered tool
(a tool the input does not fit answers with its bilingual error, which is dumped too). Each line is the output
of `tools.call` (validation, the calculator, the notes, the JSON dump) or the error's class and message, so what
the API, the LLM and the planner receive is compared whole. Then a sweep over the catalog (`sweep`) through the
tools whose searches the planners run (plan_serving, plan_system, inference_speed, training_time): every catalog
model on a spread of cards, traffic shapes, batches and jobs, since the fixed inputs above reach the planners only a
few times. It only reads and writes FILE.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def _module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _mappings(node, out: list[dict]) -> None:
    if isinstance(node, dict):
        for key in ("input", "args"):
            if isinstance(node.get(key), dict):
                out.append(node[key])
        for v in node.values():
            _mappings(v, out)
    elif isinstance(node, list):
        for v in node:
            _mappings(v, out)


def inputs() -> list[tuple[str, dict]]:
    """(where it came from, the input) in a fixed order, without repeats."""
    out: list[tuple[str, dict]] = []
    for path in sorted((ROOT / "tests" / "golden").glob("*.yaml")):
        found: list[dict] = []
        _mappings(yaml.safe_load(path.read_text(encoding="utf-8")), found)
        out += [(path.name, m) for m in found]
    contract = _module("contract", ROOT / "tests" / "tools" / "test_contract.py")
    out += [(f"contract:{name}", a) for name, rows in contract.TRUSTED.items() for a in rows]
    import calculators

    out += [(f"bench:{name}", a) for name, rows in calculators._inputs().items() for a in rows]
    seen, unique = set(), []
    for src, m in out:
        key = json.dumps(m, sort_keys=True, default=str)
        if key not in seen:
            seen.add(key)
            unique.append((src, m))
    return unique


def sweep() -> list[tuple[str, dict]]:
    """(tool, input) over every catalog model: serving plans on three card sets and three traffic shapes, system
    plans for the three jobs, inference_speed over batches and contexts, training_time over GPU counts."""
    from tools.catalog.lookup import gpus, models

    cards = [g.id for g in gpus()]
    sets = [["H20", "4090"], cards[0:3], ["H200 SXM", "910B", "L40S"]]
    traffic = [{"concurrency": 64}, {"qps": 10, "output_tokens": 500}, {"daily_users": 20000, "prompt_tokens": 4000}]
    jobs = [
        {"job": "serve", "concurrency": 200},
        {"job": "finetune", "budget_cny": 2_000_000},
        {"job": "train", "tokens": "100B", "deadline_hours": 336},
    ]
    out: list[tuple[str, dict]] = []
    for i, m in enumerate(models()):
        for j, t in enumerate(traffic):
            out.append(("plan_serving", {"model": m.id, "gpus": sets[(i + j) % len(sets)], **t}))
        out += [("plan_system", {"model": m.id, **job}) for job in jobs]
        for k, batch in enumerate((1, 7, 64, 1000)):
            gpu = cards[(i * 4 + k) % len(cards)]
            out.append(("inference_speed", {"model": m.id, "gpu": gpu, "batch": batch, "context_len": 512 << k}))
        out += [
            ("training_time", {"model": m.id, "gpu": cards[(i + n) % len(cards)], "n_gpus": n, "tokens": "10B"})
            for n in (8, 64)
        ]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", type=Path)
    args = ap.parse_args()
    from tools import registry
    from tools.errors import AdvisorError

    lines, answered = [], 0
    for src, m in inputs():
        for name in registry.names():
            try:
                result = registry.call(name, dict(m))
                answered += 1
            except AdvisorError as err:
                result = {"error": type(err).__name__, "message": str(err), **vars(err)}
            line = {"src": src, "tool": name, "input": m, "output": result}
            lines.append(json.dumps(line, ensure_ascii=False, default=str))
    for name, m in sweep():
        try:
            result = registry.call(name, dict(m))
            answered += 1
        except AdvisorError as err:
            result = {"error": type(err).__name__, "message": str(err), **vars(err)}
        lines.append(json.dumps({"src": "sweep", "tool": name, "input": m, "output": result}, ensure_ascii=False))
    args.file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(lines)} calls ({answered} answered) written to {args.file}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
