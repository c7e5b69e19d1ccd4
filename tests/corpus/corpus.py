"""The understanding corpus (`questions.yaml`): loading, the fixed held-out fifth, and the checks that say
whether an answer is right. Used by tests/bot/offline/test_corpus.py and bench/understanding.py.

A turn is right when the intent is right, the tool a correct answer calls was called, the answer shows
the key figure that the calculator gives for the correct call (computed here, never stored), within the
turn's tolerance, and holds the words in `contains`.
"""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path
from typing import Any

import yaml

import tools
from bot.grounding.numbers import UNITS, extract_numbers
from tools import registry
from tools.catalog.lookup import get_gpu, get_model
from tools.errors import AdvisorError

CORPUS = Path(__file__).parent / "questions.yaml"
TOLERANCE = 0.03
#: slots compared for slot F1 (the planner's names)
SLOT_KEYS = (
    "model",
    "gpu",
    "gpus",
    "n_gpus",
    "method",
    "precision",
    "tokens",
    "seq_len",
    "context_len",
    "batch",
    "budget_cny",
    "hours_per_day",
    "months",
    "gpu_hours",
    "hours",
    "zero_stage",
    "grad_checkpointing",
    "currency",
    "domestic_only",
)
_HAN = re.compile(r"[\u3400-\u9fff]")
_EN_WORD = re.compile(r"\b[a-z]{3,}\b", re.I)


@functools.cache
def rows() -> list[dict[str, Any]]:
    return yaml.safe_load(CORPUS.read_text(encoding="utf-8"))["rows"]


def held_out(row_id: str) -> bool:
    """The fixed held-out fifth: never trained on, never used to write rules."""
    return int(hashlib.sha256(row_id.encode()).hexdigest(), 16) % 5 == 0


def turns(row: dict[str, Any]) -> list[dict[str, Any]]:
    return row.get("turns") or [row]


def lang_of(q: str) -> str:
    """zh, en, or mixed (Han characters and at least two English words that are not names)."""
    if not _HAN.search(q):
        return "en"
    words = [w for w in _EN_WORD.findall(q) if not re.search(r"\d", w)]
    return "mixed" if len(words) >= 2 else "zh"


def _resolve(key: str, value: Any) -> Any:
    if key == "gpu":
        return get_gpu(value).id
    if key == "gpus":
        return [get_gpu(v).id for v in value]
    if key == "model":
        try:
            return get_model(value).id
        except AdvisorError:  # a bare size such as "70B" names no catalog model
            return str(value).upper()
    return value


def normalise(slots: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in slots.items():
        if key in SLOT_KEYS and value not in (None, [], False):
            out[key] = _resolve(key, value)
    if len(out.get("gpus") or []) < 2:
        out.pop("gpus", None)  # one card is the `gpu` slot; `gpus` counts when several are named
    return out


def correct_call(turn: dict[str, Any]) -> tuple[str, int | None, dict[str, Any]]:
    """(tool, call index or None for the last call, input of the correct call)."""
    name = turn["tool"]
    index = None
    if name.endswith("]"):
        name, idx = name[:-1].split("[")
        index = int(idx)
    fields = set(registry.get(name).input_model.model_fields) if name in registry.names() else set()
    args = {k: v for k, v in (turn.get("slots") or {}).items() if k in fields and k != "gpus"}
    args.update(turn.get("add") or {})
    return name, index, args


@functools.lru_cache(maxsize=2048)
def _expected(name: str, args_key: str, field: str) -> float | None:
    args = yaml.safe_load(args_key)
    node: Any = tools.call(name, args)
    for part in field.split("."):
        node = node[int(part)] if part.isdigit() else node[part]
    return None if node is None else float(node)


def expected_figure(turn: dict[str, Any]) -> float | None:
    if not turn.get("field") or turn["tool"] in ("none", "search_knowledge"):
        return None
    name, _, args = correct_call(turn)
    return _expected(name, yaml.safe_dump(args, sort_keys=True), turn["field"])


_FIELD_UNITS = (
    ("bytes_per_token", "bytes"),
    ("_gb_s", "GB/s"),
    ("_gb", "GB"),
    ("gpu_hours", "h"),
    ("hours", "h"),
    ("_cny", "CNY"),
    ("_usd", "USD"),
    ("tokens_per_s", "tokens/s"),
    ("kwh", "kWh"),
    ("_kw", "kW"),
    ("tdp_w", "W"),
    ("tflops", "TFLOPS"),
)


def _field_unit(field: str) -> str | None:
    last = field.split(".")[-1]
    for suffix, unit in _FIELD_UNITS:
        if last.endswith(suffix) or last == suffix.strip("_"):
            return unit
    return None


def shows_figure(answer: str, value: float, field: str, tol: float = TOLERANCE) -> bool:
    """Whether the answer writes `value` (in any unit of the same dimension) within `tol`."""
    unit = _field_unit(field)
    for n in extract_numbers(answer):
        candidates = (n.value, *n.alt_values)
        if unit and n.unit in UNITS and unit in UNITS:
            dim, factor = UNITS[unit]
            ndim, nfactor = UNITS[n.unit]
            if ndim != dim:
                continue
            got = [c * nfactor / factor for c in candidates]
        elif unit in ("CNY", "USD") and n.unit.startswith(unit):
            got = list(candidates)
        else:
            got = list(candidates)
        for g in got:
            if abs(g - value) <= max(tol * abs(value), n.tolerance, 0.5 if float(value).is_integer() else 0.0):
                return True
    return False


def check(turn: dict[str, Any], trace: Any) -> list[str]:
    """What is wrong with an answer to one turn (empty when it is right)."""
    problems = []
    name = turn["tool"].split("[")[0]
    calls = [c for c in trace.tool_calls if c.tool == name]
    if name != "none" and not calls:
        problems.append(f"{name} not called (called {[c.tool for c in trace.tool_calls]})")
    value = expected_figure(turn)
    if value is not None and not shows_figure(trace.answer, value, turn["field"], turn.get("tol", TOLERANCE)):
        problems.append(f"figure {turn['field']} = {value:g} not in the answer")
    for word in turn.get("contains") or []:
        if word not in trace.answer:
            problems.append(f"{word!r} not in the answer")
    return problems


def slot_counts(predicted: dict[str, Any], labelled: dict[str, Any]) -> tuple[int, int, int]:
    """(true positives, false positives, false negatives) over SLOT_KEYS."""
    p, lab = normalise(predicted), normalise(labelled)
    tp = sum(1 for k, v in lab.items() if k in p and _same(p[k], v))
    return tp, len(p) - tp, len(lab) - tp


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool):
        return abs(a - b) <= 1e-6 * max(1.0, abs(b))
    if isinstance(a, str) and isinstance(b, str):
        return a.lower() == b.lower()
    return a == b
