"""Every calculator's output on a fixed input set, as one JSON-lines file: the guard of calculator speed work
(an optimisation must leave every output byte-identical; `bench/answers_dump.py` is the same guard for answers).

    .venv/bin/python bench/outputs_dump.py FILE          # then, after the change:
    .venv/bin/python bench/outputs_dump.py FILE2 && cmp FILE FILE2

The inputs: every `input`/`args` mapping in tests/golden/*.yaml, the contract test's inputs
(tests/tools/test_contract.py TRUSTED) and bench/calculators.py's inputs, each run through every registered tool
(a tool the input does not fit answers with its bilingual error, which is dumped too). Each line is the output
of `tools.call` (validation, the calculator, the notes, the JSON dump) or the error's class and message, so what
the API, the LLM and the planner receive is compared whole. It only reads and writes FILE.
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
    args.file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(lines)} calls ({answered} answered) written to {args.file}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
