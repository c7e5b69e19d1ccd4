"""LangChain tools generated from the one registry (`Toolbox.specs()`), executed through a `ToolRun`.

Each tool is a `StructuredTool` whose arguments schema is the JSON schema of the tool's pydantic
input model, with three changes for the model's sake: `model` is a plain string (the full
`ModelSpec` architecture object stays available to Python callers, not to the LLM), optional
fields are plain types rather than unions with null, and titles are dropped. Arguments are validated once, by the registry, so the model gets the same bilingual
`InvalidInput` message a CLI or HTTP user would, as the tool's result text, and can correct them.

What the model sees of an output is compacted (`compact()`): lists of sources and long series
such as `cumulative` are dropped, suggestions keep the user's language only, and
`search_knowledge` passages carry their citation number `ref`. The `ToolRun` keeps every full
output for the trace and for grounding.
"""

from __future__ import annotations

import copy
import functools
import json
import logging
import re
import threading
from typing import Any

from langchain_core.tools import StructuredTool
from pydantic import BaseModel

from bot.core.toolbox import SEARCH, Toolbox, ToolRun, ToolSpec
from tools.errors import AdvisorError

log = logging.getLogger("gpu_advisor.agent")

#: when to use each tool, in a few words (after the first sentence of the calculator's docstring)
WHEN: dict[str, str] = {
    "gpu_specs": "For any spec of one GPU.",
    "compare_gpus": "Comparing GPUs, or whether one can replace another.",
    "fit_training": "OOM; how many GPUs.",
    "fit_inference": "Max batch or context.",
    "training_time": "Its gpu_hours feed run_cost.",
    "inference_speed": "Latency.",
    "run_cost": "Give gpu_hours, or hours and n_gpus.",
    "rent_vs_buy": "TCO, break-even.",
    "recommend_gpus": "What to buy or rent, under a budget or deadline.",
    "model_memory": "Weights, KV cache or training memory of a model, no GPU needed.",
    "power_draw": "Server/rack kW, yearly kWh and electricity bill.",
    "precision_speedup": "How much faster FP8 trains than BF16.",
    "diagnose": "For a pasted error, command or config.",
    "plan_serving": "How many cards for N users.",
    "plan_system": "What machines to buy.",
    "plan_cluster": "Network, racks, BOM.",
    SEARCH: "Background, policy, China availability, channels, prices, checking a claim. Cite passages as [ref].",
}
#: the inputs the model is shown (DESIGN.md's "main inputs"); the calculator still accepts every field of its
#: input model, with the same validation, so an answer can use an advanced option the user names
MAIN_INPUTS: dict[str, tuple[str, ...]] = {
    "gpu_specs": ("gpu",),
    "compare_gpus": ("gpus",),
    "fit_training": (
        "model",
        "gpu",
        "method",
        "n_gpus",
        "precision",
        "zero_stage",
        "offload",
        "seq_len",
        "micro_batch",
    ),
    "fit_inference": ("model", "gpu", "n_gpus", "precision", "kv_precision", "batch", "context_len"),
    "training_time": ("model", "gpu", "n_gpus", "tokens", "method", "precision", "mfu"),
    "inference_speed": ("model", "gpu", "n_gpus", "precision", "batch", "context_len"),
    "run_cost": ("gpu", "gpu_hours", "hours", "n_gpus", "price_cny_per_hour"),
    "rent_vs_buy": ("gpu", "n_gpus", "hours_per_day", "months", "rent_cny_per_hour", "purchase_cny"),
    "recommend_gpus": (
        "model",
        "workload",
        "method",
        "tokens",
        "budget_cny",
        "deadline_hours",
        "china_available",
        "domestic",
    ),
    "model_memory": ("model", "precision", "context_len", "batch", "method"),
    "power_draw": ("gpu", "n_gpus", "hours_per_day"),
    "precision_speedup": ("model", "gpu", "n_gpus", "tokens", "method"),
    "diagnose": ("model", "gpu", "n_gpus", "error_kind", "failed_alloc_gib"),
    "plan_serving": ("model", "gpus", "concurrency"),
    "plan_system": ("job", "model"),
    "plan_cluster": ("gpu", "n_gpus"),
    SEARCH: ("query",),
}
DESCRIPTION_CHARS = 36  # a field's description: its first clause or the head of it, at most this long
#: fields nearly every tool takes, explained once in the system prompt ("`model` is a model name or a size …")
#: instead of in each tool's schema, where the same words cost tokens a dozen times over
SAID_IN_PROMPT = frozenset({"model", "gpu", "precision"})

DROP_KEYS = frozenset({"sources", "cumulative", "score", "source", "price_source", "gpu_id", "url", "urls"})
MAX_ITEMS = 4  # list items the model sees (recommend_gpus options …); the trace keeps them all
PICKS = ("cheapest", "fastest", "best_value")  # recommend_gpus repeats ranked options under these: name them only
ERROR_PREFIX = "ERROR: "


def lean_schema(name: str, input_model: type[BaseModel]) -> dict[str, Any]:
    """The terse JSON schema the LLM sees: the tool's main inputs only, each with its type, its choices
    and the first clause of its description; no titles, defaults or bounds (the registry checks those)."""
    full = model_schema(input_model)
    keep = MAIN_INPUTS.get(name) or tuple(full.get("properties", {}))
    required = [k for k in full.get("required", []) if k in keep]
    props: dict[str, Any] = {}
    for key in keep:
        prop = full.get("properties", {}).get(key)
        if prop is None:
            continue
        lean = {
            k: prop[k] for k in ("type", "enum", "items") if k in prop and (k != "enum" or key not in SAID_IN_PROMPT)
        }
        if "type" not in lean and "anyOf" in prop:
            lean["anyOf"] = [{k: o[k] for k in ("type", "enum", "items") if k in o} for o in prop["anyOf"]]
        if isinstance(lean.get("items"), dict):
            lean["items"] = {k: v for k, v in lean["items"].items() if k in ("type", "enum")}
        text = "" if key in SAID_IN_PROMPT else _clause(prop.get("description", ""))
        if text and (key in required or "enum" not in lean):
            lean["description"] = text
        props[key] = lean
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    return schema


def _clause(text: str) -> str:
    """The first clause of a field description ("e.g." does not end it) if it is short; else its head before a
    comma, colon or example if that is short; else nothing (a half sentence tells a small model less than the
    field's name does, and costs tokens)."""
    text = re.split(r"(?<!e\.g)(?<!i\.e)\.\s|;\s|\s\(", " ".join(text.split()), maxsplit=1)[0].rstrip(".")
    if len(text) > DESCRIPTION_CHARS:
        text = re.split(r"[,:]\s|\s+e\.g\.", text, maxsplit=1)[0].strip()
    return text if len(text) <= DESCRIPTION_CHARS and " " in text else ""  # one word ("True") says nothing


def model_schema(input_model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema the LLM sees for a tool input: `model` as a plain string, no titles."""
    schema = copy.deepcopy(_schema(input_model))
    props = schema.get("properties", {})
    if "model" in props and "type" not in props["model"]:
        description = props["model"].get("description", "Model name or size, e.g. 'Qwen2.5-72B' or '70B'.")
        description = description.replace(" (or a full architecture)", "")
        props["model"] = {"type": "string", "description": description}
    for key, prop in props.items():
        props[key] = _optional_plain(prop)
    _strip_titles(schema)
    defs = schema.pop("$defs", {})
    used = _refs(schema, defs)
    if used:
        schema["$defs"] = {k: v for k, v in defs.items() if k in used}
    return schema


@functools.cache
def _schema(input_model: type[BaseModel]) -> dict[str, Any]:
    return input_model.model_json_schema()


def _optional_plain(prop: dict[str, Any]) -> dict[str, Any]:
    """`anyOf: [X, null], default: null` as plain X: leaving the field out means null, and some
    models and tool-call parsers handle nullable unions badly."""
    options = prop.get("anyOf")
    if not (isinstance(options, list) and len(options) == 2 and prop.get("default", ...) is None):
        return prop
    kept = [o for o in options if o != {"type": "null"}]
    if len(kept) != 1:
        return prop
    plain = {k: v for k, v in prop.items() if k not in ("anyOf", "default")}
    return {**kept[0], **plain}


def _strip_titles(node: Any) -> None:
    if isinstance(node, dict):
        if isinstance(node.get("title"), str):
            del node["title"]
        for key, value in node.items():
            if key != "properties":
                _strip_titles(value)
            else:
                for prop in value.values():
                    _strip_titles(prop)
    elif isinstance(node, list):
        for item in node:
            _strip_titles(item)


def _refs(node: Any, defs: dict[str, Any], seen: set[str] | None = None) -> set[str]:
    """Names of the `$defs` reachable from `node`."""
    seen = set() if seen is None else seen
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            if name not in seen and name in defs:
                seen.add(name)
                _refs(defs[name], defs, seen)
        for value in node.values():
            _refs(value, defs, seen)
    elif isinstance(node, list):
        for item in node:
            _refs(item, defs, seen)
    return seen


def description(spec: ToolSpec) -> str:
    """The first sentence of the tool's docstring and, after it, when to use it."""
    first = spec.description.strip().split("\n\n", 1)[0]
    doc = " ".join(line.strip() for line in first.splitlines() if line.strip())
    doc = re.split(r"(?<=[.!?])\s", doc, maxsplit=1)[0]
    doc = re.split(r"[:(]", doc, maxsplit=1)[0].rstrip(" .,")  # the subject; the list after it costs tokens
    when = WHEN.get(spec.name)
    return f"{doc}. {when}" if when else doc + "."


def compact(name: str, output: dict[str, Any], lang: str, run: ToolRun) -> str:
    """The part of a tool output the model needs, as compact JSON."""
    if name == SEARCH:
        refs = {c.id: i for i, c in enumerate(run.citations, start=1)}
        passages = [{"ref": refs.get(p["id"]), "title": p["title"], "text": p["text"]} for p in output["passages"]]
        return _dumps({"passages": passages} if passages else {"passages": [], "note": "no passage found"})
    return _dumps(_shrink(output, lang))


def _shrink(node: Any, lang: str) -> Any:
    """The output without provenance, long series and the other language's text, lists cut to MAX_ITEMS."""
    if isinstance(node, dict):
        out = {}
        mine, other = ("_zh", "_en") if lang == "zh" else ("_en", "_zh")
        for key, value in node.items():
            if key in DROP_KEYS or value is None or key.endswith(other) or (mine == "_zh" and f"{key}_zh" in node):
                continue
            if key == "assumptions" and isinstance(value, list):
                out[key] = [_assumption(a) for a in value]
            elif key in PICKS and isinstance(value, dict):
                out[key] = {k: value[k] for k in ("rank", "gpu", "n_gpus") if k in value}
            else:
                out[key] = _shrink(value, lang)
        return out
    if isinstance(node, list):
        kept = [_shrink(v, lang) for v in node[:MAX_ITEMS]]
        return kept + [f"… {len(node) - MAX_ITEMS} more"] if len(node) > MAX_ITEMS else kept
    return node


def _assumption(a: Any) -> Any:
    if not isinstance(a, dict):
        return a
    item = {"key": a.get("key"), "value": a.get("value")}
    if a.get("unit"):
        item["unit"] = a["unit"]
    if a.get("default") is False:
        item["given_by_user"] = True
    return item


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class ToolBudget:
    """Tool calls left in one answer; parallel calls share it (and run one at a time)."""

    def __init__(self, limit: int):
        self.left = limit
        self.lock = threading.Lock()


def langchain_tools(box: Toolbox, run: ToolRun, lang: str, budget: ToolBudget) -> list[StructuredTool]:
    """One StructuredTool per tool in the registry, bound to this answer's `ToolRun`."""
    tools = []
    for name in box.names():
        try:
            spec = box.spec(name)
        except ImportError as err:  # a calculator module not installed yet: leave the tool out, loudly
            log.warning("tool %s unavailable to the LLM: %s", name, err)
            continue
        tools.append(
            StructuredTool.from_function(
                func=_runner(name, run, lang, budget),
                name=name,
                description=description(spec),
                args_schema=lean_schema(name, spec.input_model),
            )
        )
    return tools


def _runner(name: str, run: ToolRun, lang: str, budget: ToolBudget):
    def call(**args: Any) -> str:
        with budget.lock:  # ToolRun numbers calls: never two at once
            if budget.left <= 0:
                return ERROR_PREFIX + (
                    "工具调用次数已用完，请用已有结果回答。"
                    if lang == "zh"
                    else "the tool-call budget for this answer is used up; answer with what you have."
                )
            budget.left -= 1
            try:
                output = run(name, args)
            except AdvisorError as err:  # back to the model, which can correct its arguments
                return ERROR_PREFIX + err.message(lang)
            except Exception:  # a calculator bug must not abort the answer; the log keeps it
                log.exception("tool %s failed on %s", name, args)
                return ERROR_PREFIX + f"{name} failed internally; do not retry it."
            return compact(name, output, lang, run)

    call.__name__ = name
    return call
