"""HTTP request bodies take the JSON types their schema states.

pydantic's lax mode turns "5" into 5, true into 1 and "yes" into True, so a body the schema calls invalid
(`"turn": "0"`) would be answered. Over HTTP the schema is the contract, so a body is checked against the
JSON types of each field's schema first. The Python, LLM and MCP callers of the same tool models stay
lax (a model sending "8" for n_gpus is still answered); only `strict_body` classes and the API's own
request models (`JsonTyped`) are exact.
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic import BaseModel, model_validator

from tools.errors import InvalidInput

_NAMES = {
    "integer": ("a number", "数字"),
    "number": ("a number", "数字"),
    "string": ("text", "文本"),
    "boolean": ("true or false", "true 或 false"),
    "object": ("an object", "对象"),
    "array": ("a list", "列表"),
    "null": ("null", "null"),
}


def _types(prop: dict[str, Any]) -> set[str]:
    """The JSON types a property's schema allows; empty when it does not say (then nothing is checked)."""
    kind = prop.get("type")
    if kind is not None:
        return set(kind) if isinstance(kind, list) else {kind}
    found = {"object"} if "$ref" in prop else set()
    for key in ("anyOf", "oneOf"):
        for sub in prop.get(key, ()):
            more = _types(sub)
            if not more:
                return set()
            found |= more
    return found


@functools.cache
def allowed_types(cls: type[BaseModel]) -> dict[str, frozenset[str]]:
    return {name: frozenset(_types(prop)) for name, prop in cls.model_json_schema()["properties"].items()}


def _given(value: Any) -> str | None:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, str):
        return "string"
    if isinstance(value, int | float):
        return "number"
    return None  # lists, objects and null: pydantic's own checks are exact for them


def check(cls: type[BaseModel], data: Any) -> None:
    if not isinstance(data, dict):
        return
    allowed = allowed_types(cls)
    for key, value in data.items():
        ok, given = allowed.get(key), _given(value)
        if not ok or given is None or given in ok or (given == "number" and "integer" in ok):
            continue
        want_en = " or ".join(dict.fromkeys(_NAMES[t][0] for t in sorted(ok) if t in _NAMES))
        want_zh = "或".join(dict.fromkeys(_NAMES[t][1] for t in sorted(ok) if t in _NAMES))
        raise InvalidInput(
            f"Invalid {key}: expected {want_en}, not {_NAMES[given][0]}.",
            f"字段“{key}”的值无效：应为{want_zh}，而不是{_NAMES[given][1]}。",
            field=str(key),
        )


class JsonTyped(BaseModel):
    """A request body whose fields must have the JSON types the schema gives them."""

    @model_validator(mode="before")
    @classmethod
    def _json_types(cls, data: Any) -> Any:
        check(cls, data)
        return data


@functools.cache
def strict_body(model: type[BaseModel]) -> type[BaseModel]:
    """`model` as an HTTP body: the same class, name and schema, with the JSON types checked."""
    return type(model.__name__, (JsonTyped, model), {"__module__": model.__module__, "__doc__": model.__doc__})
