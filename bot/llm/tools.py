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
import threading
from typing import Any

from langchain_core.tools import StructuredTool
from pydantic import BaseModel

from bot.toolbox import SEARCH, Toolbox, ToolRun, ToolSpec
from tools.errors import AdvisorError

log = logging.getLogger("gpu_advisor.agent")

#: one line per tool on when to use it, added to the tool's docstring for the model
WHEN: dict[str, str] = {
    "gpu_specs": "Use it for any spec of one GPU (memory, bandwidth, TFLOPS, interconnect, power, China availability).",
    "compare_gpus": "Use it when the user compares GPUs or asks whether one can replace another (e.g. 910B vs A100).",
    "fit_training": "Use it for 'will training/fine-tuning fit', out-of-memory questions and how many GPUs a run needs.",
    "fit_inference": "Use it for 'can we serve/deploy this model', memory for inference, max batch or context.",
    "training_time": "Use it for how long training or fine-tuning takes; its gpu_hours feed run_cost.",
    "inference_speed": "Use it for serving speed: tokens per second, latency, throughput.",
    "run_cost": "Use it for what a run costs at rental prices (give gpu_hours from training_time, or hours and n_gpus).",
    "rent_vs_buy": "Use it when the user weighs renting against buying, TCO or the break-even month.",
    "recommend_gpus": "Use it when the user asks what to buy or rent, possibly under a budget or deadline.",
    SEARCH: "Use it for background, policy, availability in China, channels, prices and to check a claim; "
            "cite passages as [ref].",
}

DROP_KEYS = frozenset({"sources", "cumulative", "score", "source"})
ERROR_PREFIX = "ERROR: "


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
    doc = " ".join(line.strip() for line in spec.description.strip().splitlines() if line.strip())
    when = WHEN.get(spec.name)
    return f"{doc}\n{when}" if when else doc


def compact(name: str, output: dict[str, Any], lang: str, run: ToolRun) -> str:
    """The part of a tool output the model needs, as compact JSON."""
    if name == SEARCH:
        refs = {c.id: i for i, c in enumerate(run.citations, start=1)}
        passages = [{"ref": refs.get(p["id"]), "title": p["title"], "text": p["text"]} for p in output["passages"]]
        return _dumps({"passages": passages} if passages else {"passages": [], "note": "no passage found"})
    return _dumps(_shrink(output, lang))


def _shrink(node: Any, lang: str) -> Any:
    if isinstance(node, dict):
        out = {}
        other = "description_en" if lang == "zh" else "description_zh"
        for key, value in node.items():
            if key in DROP_KEYS or key == other or value is None:
                continue
            if key == "assumptions" and isinstance(value, list):
                out[key] = [_assumption(a) for a in value]
            else:
                out[key] = _shrink(value, lang)
        return out
    if isinstance(node, list):
        return [_shrink(v, lang) for v in node]
    return node


def _assumption(a: Any) -> Any:
    if not isinstance(a, dict):
        return a
    item = {"key": a.get("key"), "value": a.get("value")}
    if a.get("unit"):
        item["unit"] = a["unit"]
    if a.get("default") is False:
        item["given_by_user"] = True
    if a.get("note"):
        item["note"] = a["note"]
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
        tools.append(StructuredTool.from_function(
            func=_runner(name, run, lang, budget),
            name=name,
            description=description(spec),
            args_schema=model_schema(spec.input_model),
        ))
    return tools


def _runner(name: str, run: ToolRun, lang: str, budget: ToolBudget):
    def call(**args: Any) -> str:
        with budget.lock:  # ToolRun numbers calls: never two at once
            if budget.left <= 0:
                return ERROR_PREFIX + ("工具调用次数已用完，请用已有结果回答。" if lang == "zh"
                                       else "the tool-call budget for this answer is used up; answer with what you have.")
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
