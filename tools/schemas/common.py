"""Base classes shared by every calculator's input and output."""

from __future__ import annotations

import functools
import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

from tools.errors import InvalidInput

#: no input quantity is larger (15T tokens is 1.5e13; a price in 元 is far below): bigger is a typo or an
#: attack, and products of such numbers would overflow to infinity
MAX_INPUT_MAGNITUDE = 1e15


def _check_number(value: Any, field: str) -> None:
    if isinstance(value, bool):
        return
    if isinstance(value, int) and abs(value) > MAX_INPUT_MAGNITUDE:
        too_big = True
    elif isinstance(value, float):
        too_big = not math.isfinite(value) or abs(value) > MAX_INPUT_MAGNITUDE
    else:
        return
    if too_big:
        raise InvalidInput(f"Invalid {field}: the number must be finite and at most {MAX_INPUT_MAGNITUDE:.0e}.",
                           f"字段“{field}”的值无效：数值必须是有限的，且不超过 {MAX_INPUT_MAGNITUDE:.0e}。", field=field)


def _bound_numbers(schema: dict[str, Any]) -> None:
    """Say the magnitude limit in the JSON schema of every number field that has no tighter one."""
    for prop in schema.get("properties", {}).values():
        for sub in [prop, *prop.get("anyOf", [])]:
            if sub.get("type") in ("number", "integer"):
                if "maximum" not in sub and "exclusiveMaximum" not in sub:
                    sub["maximum"] = MAX_INPUT_MAGNITUDE
                if "minimum" not in sub and "exclusiveMinimum" not in sub:
                    sub["minimum"] = -MAX_INPUT_MAGNITUDE


class ToolInput(BaseModel):
    """A calculator input: unknown fields are errors, so a typo never passes silently. Numbers must be
    finite (no Infinity or NaN) and at most `MAX_INPUT_MAGNITUDE`, whatever the field."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, json_schema_extra=_bound_numbers)

    @classmethod
    def trusted(cls, **fields):
        """An input from values another input model has already validated, without validating them again (a
        calculator calling another). The caller answers for the values lying within this model's limits."""
        return _construct(cls, fields)

    @model_validator(mode="before")
    @classmethod
    def _finite_numbers(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key, value in data.items():
                for item in value if isinstance(value, list | tuple) else (value,):
                    _check_number(item, str(key))
        return data


class Assumption(BaseModel):
    """A value the calculator used that the user did not give (or gave), stated in the output.

    `key` is stable (for templates and tests), `value` is the figure, `unit` its unit,
    `default` says whether the user left it out, and `note` says where it comes from.
    """

    model_config = ConfigDict(frozen=True)

    key: str
    value: float | int | str | bool | None
    unit: str = ""
    default: bool = True
    note: str = ""


@functools.lru_cache(maxsize=8192, typed=True)  # typed: 1, 1.0 and True stay three different values
def assume(key: str, value: float | int | str | bool | None, unit: str = "", default: bool = True,
           note: str = "") -> Assumption:
    """An assumption, validated once per distinct content (and spelling of the call): calculators state the same
    ones call after call, and validating a record costs several times a cache hit. Records are frozen, so
    outputs may share them."""
    return Assumption(key=key, value=value, unit=unit, default=default, note=note)


class ToolOutput(BaseModel):
    model_config = ConfigDict(frozen=True)

    assumptions: list[Assumption] = Field(default_factory=list)

    @classmethod
    def trusted(cls, **fields):
        """Build an output from values the calculator computed itself, skipping re-validation (hot path).

        The top-level fields are taken as the calculator computed them; the assumptions and the nested lists a
        subclass names in `_nested` are validated in one pydantic-core pass. tests/tools/test_contract.py
        re-validates real outputs against their models in strict mode, so a wrong type still fails a test.
        """
        fields["assumptions"] = _list_of(Assumption).validate_python(fields.get("assumptions", ()))
        for name, model in cls._nested().items():
            if name in fields:
                fields[name] = _list_of(model).validate_python(fields[name])
        return _construct(cls, fields)

    @classmethod
    def _nested(cls) -> dict[str, type[BaseModel]]:
        """List-of-model fields other than `assumptions` (overridden where a subclass has them)."""
        return {}

    def assumption(self, key: str) -> Assumption:
        for a in self.assumptions:
            if a.key == key:
                return a
        raise KeyError(key)


@functools.cache
def _list_of(model: type[BaseModel]) -> TypeAdapter:
    """Validates a list of nested records in one pass in pydantic-core (faster than constructing each in Python)."""
    return TypeAdapter(list[model])


@functools.cache
def _defaults(cls: type[BaseModel]) -> tuple[dict, dict]:
    """(plain defaults, default factories) of a model's optional fields."""
    plain, factories = {}, {}
    for name, f in cls.model_fields.items():
        if f.is_required():
            continue
        if f.default_factory is not None:
            factories[name] = f.default_factory
        else:
            plain[name] = f.default
    return plain, factories


def _construct(cls: type[BaseModel], data: dict) -> BaseModel:
    """`model_construct` without its per-field Python loop: defaults filled, values taken as given."""
    plain, factories = _defaults(cls)
    values = {**plain, **data}
    for name, factory in factories.items():
        if name not in data:
            values[name] = factory()
    obj = cls.__new__(cls)
    object.__setattr__(obj, "__dict__", values)
    object.__setattr__(obj, "__pydantic_fields_set__", set(data))
    object.__setattr__(obj, "__pydantic_extra__", None)
    object.__setattr__(obj, "__pydantic_private__", None)
    return obj
