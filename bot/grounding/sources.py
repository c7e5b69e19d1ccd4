"""The sources an answer's figures are looked up in: every numeric leaf of the tool calls (with a unit
read from its key), the figures of cited passages and of the question, indexed by dimension; and the
look-up that matches one written figure to its nearest source within its rounding (rules: `check.py`)."""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from pydantic import BaseModel

from bot.grounding.numbers import UNITS, Number, extract_numbers, name_sizes

QUESTION_ID = "question"
DEFAULT_REL_TOL = 1e-4  # float noise and conversions of rounded figures; small enough to catch "184,230"
PARAMS_NOMINAL_TOL = 0.10  # "7B" for 6.74e9, "72B" for 72.7e9


_KEY_UNITS: list[tuple[re.Pattern, str | None]] = [
    (re.compile(p), u)
    for p, u in [
        (r"(^|_)gpu_hours?$", "GPU-h"),
        (r"_gib$", "GiB"),
        (r"_gb_s$|_gb_per_s$", "GB/s"),
        (r"_tb_s$", "TB/s"),
        (r"_gb$|^gb$", "GB"),
        (r"_tb$", "TB"),
        (r"_mb$", "MB"),
        (r"_bytes$", "bytes"),
        (r"_tflops$", "TFLOPS"),
        (r"_pflops$", "PFLOPS"),
        (r"_tops$", "TOPS"),
        (r"flops", "FLOP"),
        (r"_kwh$", "kWh"),
        (r"_kw$", "kW"),
        (r"_w$|watts", "W"),
        (r"cny_per_(gpu_)?hour$|cny_per_h$", "CNY/h"),
        (r"cny_per_kwh$", "CNY/kWh"),
        (r"cny_per_month$", "CNY/month"),
        (r"cny_per_year$", "CNY/year"),
        (r"(^|_)cny($|_)", "CNY"),
        (r"usd_per_(gpu_)?hour$", "USD/h"),
        (r"(^|_)usd($|_)", "USD"),
        (r"tokens_per_s(ec)?$|_per_s$", "tokens/s"),
        (r"(^|_)tokens$", "tokens"),
        (r"(^|_)hours$|_h$", "h"),
        (r"(^|_)days$", "day"),
        (r"(^|_)weeks$", "week"),
        (r"(^|_)months$", "month"),
        (r"(^|_)years$", "year"),
        (r"(^|_)seconds$|_s$", "s"),
        (r"^(mfu|hfu)$|_mfu$|_fraction$|_frac$|utili[sz]ation|efficiency|_share$", "fraction"),
        (r"_pct$|_percent$|^percent", "%"),
        (r"^(n_|min_|max_)?gpus$|gpu_count|^n_cards$", "GPU"),
        (r"^(n_)?nodes$", "node"),
        (r"params_b$", "B_params"),
        (r"(^|_)params$", "params"),
    ]
]
_UNIT_WORDS = {
    "gb": "GB",
    "gib": "GiB",
    "tb": "TB",
    "mb": "MB",
    "w": "W",
    "kw": "kW",
    "kwh": "kWh",
    "h": "h",
    "hour": "h",
    "hours": "h",
    "小时": "h",
    "day": "day",
    "days": "day",
    "天": "day",
    "month": "month",
    "months": "month",
    "月": "month",
    "year": "year",
    "years": "year",
    "cny": "CNY",
    "元": "CNY",
    "usd": "USD",
    "%": "%",
    "percent": "%",
    "fraction": "fraction",
    "ratio": "fraction",
    "x": "x",
    "tflops": "TFLOPS",
    "gb/s": "GB/s",
    "tokens": "tokens",
    "tokens/s": "tokens/s",
    "gpu-h": "GPU-h",
    "gpu_hours": "GPU-h",
    "gpus": "GPU",
    "gpu": "GPU",
    "cny/h": "CNY/h",
    "元/卡时": "CNY/GPU-h",
    "cny/kwh": "CNY/kWh",
    "元/度": "CNY/kWh",
    "b": "B_params",
    "params": "params",
    "flop": "FLOP",
    "flops": "FLOP",
}


@lru_cache(maxsize=4096)
def unit_from_key(key: str) -> str | None:
    """The unit a field name spells (`per_gpu_gb` -> "GB", `mfu` -> "fraction"); None when none."""
    k = re.sub(r"_(low|high|mid|min|max|default)$", "", key.lower())  # "hours_low" is in hours
    for pattern, unit in _KEY_UNITS:
        if pattern.search(k):
            return unit
    return None


def _unit_word(word: Any) -> str | None:
    if not isinstance(word, str) or not word.strip():
        return None
    w = word.strip()
    if w in UNITS or w.split("/")[0] in ("CNY", "USD"):
        return w
    if w.lower() in _UNIT_WORDS:
        return _UNIT_WORDS[w.lower()]
    return "CNY" + w[1:] if w.startswith("元/") else None  # "元/kWh", "元/卡", "元/kW·月": a price in 元


class _Index:
    """Source values bucketed by dimension ("bytes", "time", ...), plus "raw" (leaves with no unit)
    and "any" (every source by its number as written). Each bucket holds two sorted lists: exact
    values (tool leaves) and values read from text, which carry their own rounding tolerance."""

    def __init__(self) -> None:
        self._rows: dict[tuple[str, bool], list[tuple[float, int, str, float]]] = {}
        self._values: dict[tuple[str, bool], list[float]] = {}
        self._ratio: dict[str, float] = {}  # largest tolerance/value among a bucket's text values

    def add(self, bucket: str, value: float, priority: int, source_id: str, tol: float = 0.0) -> None:
        value = abs(value)
        fuzzy = tol > 0 and value > 0
        self._rows.setdefault((bucket, fuzzy), []).append((value, priority, source_id, tol if fuzzy else 0.0))

    def add_value(
        self,
        value: float,
        unit: str | None,
        priority: int,
        source_id: str,
        tol: float = 0.0,
        *,
        text: bool = False,
        question: bool = False,
    ) -> None:
        """A source value. A unitless value from a tool's structured output may ground a figure of any
        unit ("raw"); a unitless number read from text (a note, a tool's prose, the question) never
        grounds a price ("raw-text"): "99" in a note or a tool's remark does not ground "99 元". A number
        in the question grounds only the same quantity: one with a unit, figures of that dimension;
        one without, figures without a unit."""
        if not math.isfinite(value):
            return
        self.add("any", value, priority, source_id, tol)
        dim, factor = _dimension_factor(unit)
        if dim is None:
            if not question:
                self.add("raw-text" if text else "raw", value, priority, source_id, tol)
        else:
            self.add(dim, value * factor, priority, source_id, tol * factor)

    def add_number(self, n: Number, priority: int, source_id: str) -> None:
        for v in (n.value, *n.alt_values):
            self.add_value(
                v, n.unit or None, priority, source_id, n.tolerance, text=True, question=source_id == QUESTION_ID
            )

    def freeze(self) -> None:
        for key, rows in self._rows.items():
            rows.sort()
            self._values[key] = [r[0] for r in rows]
            if key[1]:
                self._ratio[key[0]] = min(0.99, max(r[3] / r[0] for r in rows))

    def best(self, bucket: str, target: float, tol: float) -> tuple[int, str] | None:
        target = abs(target)
        best: tuple[int, str] | None = None
        for fuzzy in (False, True):
            values = self._values.get((bucket, fuzzy))
            if not values:
                continue
            rows = self._rows[(bucket, fuzzy)]
            ratio = self._ratio[bucket] if fuzzy else 0.0
            i = bisect_left(values, (target - tol) / (1 + ratio))
            high = (target + tol) / (1 - ratio)
            while i < len(values) and values[i] <= high:
                value, priority, source_id, src_tol = rows[i]
                if abs(value - target) <= tol + src_tol and (best is None or priority < best[0]):
                    best = (priority, source_id)
                i += 1
        return best


def dimension(unit: str | None) -> str | None:
    if not unit:
        return None
    if unit in UNITS:
        return UNITS[unit][0]
    head = unit.split("/")[0]
    return head if head in ("CNY", "USD") else None


@lru_cache(maxsize=512)
def _dimension_factor(unit: str | None) -> tuple[str | None, float]:
    """A unit's dimension and its factor to the dimension's base unit (1 when UNITS does not list it)."""
    dim = dimension(unit)
    return dim, (UNITS.get(unit, (dim, 1.0))[1] if dim is not None else 1.0)  # type: ignore[arg-type]


_DIGIT_RE = re.compile(r"[0-9]")
#: strings under these keys are provenance or identifiers, not statements: their digits are not read
_NOT_STATEMENTS = frozenset(
    {
        "url",
        "urls",
        "href",
        "link",
        "as_of",
        "date",
        "retrieved",
        "published",
        "id",
        "key",
        "field",
        "fields",
        "title",
        "verified",
    }
)


def _walk(node: Any, hint: str | None, source_id: str, index: _Index, texts: list[str]) -> None:
    # the exact built-in types first (nearly every node of a dumped output), each read as its branch below reads
    # it: the chain of isinstance checks (BaseModel's and the ABCs' are slow) was most of the walk's own time
    kind = type(node)
    if kind is dict:
        _walk_mapping(node, hint, source_id, index, texts)
    elif kind is list or kind is tuple:
        for child in node:
            _walk(child, hint, source_id, index, texts)
    elif kind is str:
        if _DIGIT_RE.search(node):
            texts.append(node)
    elif kind is float or kind is int:
        index.add_value(float(node), hint, 0, source_id)
    else:
        _walk_other(node, hint, source_id, index, texts)


def _walk_other(node: Any, hint: str | None, source_id: str, index: _Index, texts: list[str]) -> None:
    if isinstance(node, BaseModel):
        node = node.model_dump()
    if isinstance(node, bool) or node is None:
        return
    if isinstance(node, int | float):
        index.add_value(float(node), hint, 0, source_id)
    elif isinstance(node, str):
        if _DIGIT_RE.search(node):
            texts.append(node)
    elif isinstance(node, Mapping):
        _walk_mapping(node, hint, source_id, index, texts)
    elif isinstance(node, Iterable):
        for child in node:
            _walk(child, hint, source_id, index, texts)


def _walk_mapping(node: Mapping, hint: str | None, source_id: str, index: _Index, texts: list[str]) -> None:
    value = node.get("value")
    if isinstance(value, int | float) and not isinstance(value, bool):
        own = _unit_word(node.get("unit")) or unit_from_key(str(node.get("key", ""))) or hint
        index.add_value(float(value), own, 0, source_id)
    for key, child in node.items():
        if (key == "value" and child is value) or (key in _NOT_STATEMENTS and isinstance(child, str)):
            continue
        _walk(child, unit_from_key(str(key)) or hint, source_id, index, texts)


@lru_cache(maxsize=2048)
def _text_numbers(text: str) -> tuple[Number, ...]:
    """Figures in a source text (catalog notes and passages recur across calls and repair rounds)."""
    return (*extract_numbers(text), *name_sizes(text))


def build_index(tool_outputs: Mapping[str, Any], passages: Mapping[str, str], question: str) -> _Index:
    index = _Index()
    texts: list[tuple[str, int, str]] = []
    for call_id, output in tool_outputs.items():
        strings: list[str] = []
        _walk(output, None, call_id, index, strings)
        texts += [(text, 0, call_id) for text in dict.fromkeys(strings)]
    texts += [(text, 1, passage_id) for passage_id, text in passages.items()]
    texts.append((question, 2, QUESTION_ID))
    for text, priority, source_id in texts:
        for n in _text_numbers(text):
            index.add_number(n, priority, source_id)
    index.freeze()
    return index


# ---- matching -----------------------------------------------------------------------------------
_LABEL_SWAP = {
    "GB": 2.0**30,
    "GiB": 1e9,
    "TB": 2.0**40,
    "TiB": 1e12,
    "MB": 2.0**20,
    "MiB": 1e6,
    "GB/s": 2.0**30,
    "GiB/s": 1e9,
}


def lookup(n: Number, index: _Index, rel_tol: float) -> str | None:
    dim = dimension(n.unit)
    queries: list[tuple[str, float, float]] = []
    for v in (n.value, *n.alt_values):
        tol = n.tolerance
        if dim == "params":
            tol = max(tol, PARAMS_NOMINAL_TOL * v)
        if dim is None:
            queries.append(("any", v, tol + rel_tol * v))
            continue
        factor = UNITS.get(n.unit, (dim, 1.0))[1]
        queries.append((dim, v * factor, (tol + rel_tol * v) * factor))
        if n.unit in _LABEL_SWAP:
            swap = _LABEL_SWAP[n.unit]
            queries.append((dim, v * swap, (tol + rel_tol * v) * swap))
        queries.append(("raw", v, tol + rel_tol * v))
        if dim not in ("CNY", "USD"):
            queries.append(("raw-text", v, tol + rel_tol * v))
        if n.unit == "%":
            queries.append(("raw", v / 100, (tol + rel_tol * v) / 100))
    best: tuple[int, str] | None = None
    for bucket, target, tol in queries:
        hit = index.best(bucket, target, tol)
        if hit and (best is None or hit[0] < best[0]):
            best = hit
            if best[0] == 0:
                break
    return best[1] if best else None
