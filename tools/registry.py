"""The one registry of calculators: name -> function, input model, output model.

Every calculator is a function `fn(inp: InputModel) -> OutputModel`. `call(name, args)` validates a
plain dict against the input model, runs the function and returns the output as a plain dict.
Validation errors become `InvalidInput` naming the field, in English and Chinese.
The LangChain tools, the HTTP endpoints, the CLI and the offline planner are generated from here.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from tools.errors import InvalidInput

#: tool name -> "module:function"
_TOOLS: dict[str, str] = {
    "gpu_specs": "tools.specs:gpu_specs",
    "compare_gpus": "tools.specs:compare_gpus",
    "fit_training": "tools.memory.fit_training:fit_training",
    "fit_inference": "tools.memory.fit_inference:fit_inference",
    "training_time": "tools.speed.training_time:training_time",
    "inference_speed": "tools.speed.inference_speed:inference_speed",
    "run_cost": "tools.money.run_cost:run_cost",
    "rent_vs_buy": "tools.money.rent_vs_buy:rent_vs_buy",
    "recommend_gpus": "tools.recommend.recommend_gpus:recommend_gpus",
    "model_memory": "tools.memory.model_memory:model_memory",
    "power_draw": "tools.money.power_draw:power_draw",
    "precision_speedup": "tools.speed.precision_speedup:precision_speedup",
    "diagnose": "tools.diagnose.diagnose:diagnose",
    "plan_serving": "tools.plan.plan_serving:plan_serving",
    "plan_system": "tools.plan.plan_system:plan_system",
    "plan_cluster": "tools.plan.cluster:plan_cluster",
}


@dataclass(frozen=True)
class Tool:
    name: str
    fn: Callable[[Any], BaseModel]
    input_model: type[BaseModel]
    output_model: type[BaseModel]

    @property
    def description(self) -> str:
        return (self.fn.__doc__ or "").strip()


def names() -> list[str]:
    return list(_TOOLS)


@functools.cache
def get(name: str) -> Tool:
    if name not in _TOOLS:
        raise InvalidInput(
            f"Unknown tool {name!r}; known tools: {', '.join(_TOOLS)}.",
            f"未知的工具“{name}”；可用工具：{'、'.join(_TOOLS)}。",
            field="name",
        )
    module_name, fn_name = _TOOLS[name].split(":")
    fn = getattr(importlib.import_module(module_name), fn_name)
    hints = typing.get_type_hints(fn)
    params = [h for k, h in hints.items() if k != "return"]
    return Tool(name=name, fn=fn, input_model=params[0], output_model=hints["return"])


def field_names(model: type[BaseModel]) -> list[str]:
    """The fields a caller may send: each field's name, or its alias where it has one."""
    return [info.alias or name for name, info in model.model_fields.items()]


def invalid_from_validation(err: ValidationError, known: list[str] = ()) -> InvalidInput:
    """The first validation error as one bilingual sentence naming the field; an unknown field also
    names the closest of the `known` fields (or all of them when none is close)."""
    first = err.errors()[0]
    field = ".".join(str(p) for p in first["loc"]) or "input"
    msg = first["msg"].removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        near = difflib.get_close_matches(field, known, n=3, cutoff=0.6)
        hint_en = (
            f" Did you mean: {', '.join(near)}?" if near else f" Known fields: {', '.join(known)}." if known else ""
        )
        hint_zh = f" 您是否指：{'、'.join(near)}？" if near else f" 可用字段：{'、'.join(known)}。" if known else ""
        return InvalidInput(f"Unknown field {field!r}.{hint_en}", f"未知的字段“{field}”。{hint_zh}", field=field)
    if first["type"] == "missing":
        return InvalidInput(f"Missing field {field!r}.", f"缺少字段“{field}”。", field=field)
    return InvalidInput(f"Invalid {field}: {msg}.", f"字段“{field}”的值无效：{msg}。", field=field)


def validate(name: str, args: dict) -> BaseModel:
    tool = get(name)
    try:
        return tool.input_model.model_validate(args)
    except ValidationError as err:
        raise invalid_from_validation(err, field_names(tool.input_model)) from None


def run(name: str, inp: BaseModel) -> BaseModel:
    """Run the calculator `name` on a validated input; what the input model assumed while reading the
    request (`ToolInput.notes`: one hour when run_cost has no duration, …) joins the output's assumptions."""
    result = get(name).fn(inp)
    notes = getattr(inp, "notes", ())
    if notes:
        result = result.model_copy(update={"assumptions": [*result.assumptions, *notes]})
    return result


def call(name: str, args: dict) -> dict:
    """Validate `args`, run the calculator `name`, return its output as a JSON-ready dict."""
    return run(name, validate(name, args)).model_dump(mode="json")
