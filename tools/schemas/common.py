"""Base classes shared by every calculator's input and output.

A tool input's JSON schema is its whole contract: every request the schema allows is answered (or
refused only for what the catalog says about a named GPU or model, `tools.errors.Unsupported`).
Rules between fields are therefore either said in the schema (`schema_rules`, JSON-schema conditions
under `dependentSchemas`, which keeps the root a plain object, as MCP clients need) or resolved by the
input model with a stated assumption (`note`), e.g. run_cost without hours prices one hour.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from annotated_types import Gt
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, TypeAdapter, model_validator

from tools.errors import InvalidInput

#: no input quantity is larger (15T tokens is 1.5e13; a price in 元 is far below): bigger is a typo or an
#: attack, and products of such numbers would overflow to infinity
MAX_INPUT_MAGNITUDE = 1e15
#: the characters `str.isspace()` calls whitespace, as a regex class body (JSON schema and Python regexes agree on it,
#: unlike `\s`): text made only of these is empty
WHITESPACE = r"\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
#: the least value of a field that must be more than 0 (a share, a price, hours): smaller ones (5e-324) are
#: not quantities anyone means, and dividing by them overflows to infinity
MIN_POSITIVE = 1e-6


def _check_number(value: Any, field: str, positive: bool = False) -> None:
    if isinstance(value, bool):
        return
    if isinstance(value, int) and abs(value) > MAX_INPUT_MAGNITUDE:
        too_big = True
    elif isinstance(value, float):
        too_big = not math.isfinite(value) or abs(value) > MAX_INPUT_MAGNITUDE
    else:
        return
    if too_big:
        raise InvalidInput(
            f"Invalid {field}: the number must be finite and at most {MAX_INPUT_MAGNITUDE:.0e}.",
            f"字段“{field}”的值无效：数值必须是有限的，且不超过 {MAX_INPUT_MAGNITUDE:.0e}。",
            field=field,
        )
    if positive and 0 < value < MIN_POSITIVE:
        raise InvalidInput(
            f"Invalid {field}: the number must be at least {MIN_POSITIVE:g}.",
            f"字段“{field}”的值无效：数值不能小于 {MIN_POSITIVE:g}。",
            field=field,
        )


def _bound_numbers(schema: dict[str, Any]) -> None:
    """Say the magnitude limits in the JSON schema of every number field that has no tighter one."""
    for prop in schema.get("properties", {}).values():
        for sub in [prop, *prop.get("anyOf", [])]:
            if sub.get("type") in ("number", "integer"):
                if "maximum" not in sub and "exclusiveMaximum" not in sub:
                    sub["maximum"] = MAX_INPUT_MAGNITUDE
                if sub.get("type") == "number" and sub.get("exclusiveMinimum") == 0:
                    del sub["exclusiveMinimum"]
                    sub["minimum"] = MIN_POSITIVE
                if "minimum" not in sub and "exclusiveMinimum" not in sub:
                    sub["minimum"] = -MAX_INPUT_MAGNITUDE


def _schema_extra(schema: dict[str, Any], cls: type[ToolInput]) -> None:
    _bound_numbers(schema)
    rules = cls.schema_rules()
    if rules:
        schema["dependentSchemas"] = rules


@functools.cache
def _positive_fields(cls: type[BaseModel]) -> frozenset[str]:
    """Fields declared `gt=0`: their values must also be at least MIN_POSITIVE."""
    return frozenset(
        name for name, f in cls.model_fields.items() if any(isinstance(m, Gt) and m.gt == 0 for m in f.metadata)
    )


class ToolInput(BaseModel):
    """A calculator input: unknown fields are errors, so a typo never passes silently. Numbers must be
    finite (no Infinity or NaN) and at most `MAX_INPUT_MAGNITUDE`, whatever the field; a field that must be
    more than 0 must be at least `MIN_POSITIVE`.

    Subclasses say rules between fields in `schema_rules()` (and enforce them in a validator with the same
    message), or resolve a combination the schema allows with `note()`: the notes join the output's
    assumptions (`tools.registry.run`), so an answer states what was assumed.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, json_schema_extra=_schema_extra)

    _notes: tuple[Assumption, ...] = PrivateAttr(default=())

    @classmethod
    def trusted(cls, **fields):
        """An input from values another input model has already validated, without validating them again (a
        calculator calling another). The caller answers for the values lying within this model's limits."""
        return _construct(cls, fields)

    @model_validator(mode="before")
    @classmethod
    def _finite_numbers(cls, data: Any) -> Any:
        if isinstance(data, dict):
            positive = _positive_fields(cls)
            for key, value in data.items():
                for item in value if isinstance(value, list | tuple) else (value,):
                    _check_number(item, str(key), key in positive)
        return data

    @classmethod
    def schema_rules(cls) -> dict[str, Any]:
        """JSON-schema `dependentSchemas`: property name -> the condition that applies when it is given."""
        return {}

    def note(self, key: str, value: Any, unit: str = "", note: str = "", default: bool = True) -> None:
        """Record an assumption made while reading the input (validators only)."""
        self._notes = (*self._notes, assume(key, value, unit, default=default, note=note))

    def resolve(self, **values: Any) -> None:
        """Set fields the input model works out from the others (validators only; the model is frozen)."""
        for key, value in values.items():
            object.__setattr__(self, key, value)

    @property
    def notes(self) -> tuple[Assumption, ...]:
        return self._notes


def fit_layout(inp: ToolInput) -> None:
    """n_gpus that is not a multiple of tp × pp: the run is sized for the GPUs whole tp × pp groups use (the
    rest idle), or for one group when n_gpus is smaller than it; the change is stated (validators only)."""
    n, group = inp.n_gpus, inp.tp * inp.pp  # type: ignore[attr-defined]
    if n % group == 0:
        return
    used = max(group, n // group * group)
    why = f"{n - used} left idle" if used < n else f"the fewest GPUs one group of tp × pp = {group} needs"
    inp.note(
        "n_gpus",
        used,
        "卡",
        f"n_gpus {n} is not a multiple of tp × pp = {inp.tp} × {inp.pp}: sized for "  # type: ignore[attr-defined]
        f"{used} GPUs ({why})",
    )
    inp.resolve(n_gpus=used)


def when(field: str, values: list[Any], then: dict[str, Any], otherwise: dict[str, Any] | None = None) -> dict:
    """A JSON-schema condition: if `field` is one of `values`, `then` applies (else `otherwise`)."""
    rule = {"if": {"properties": {field: {"enum": values}}, "required": [field]}, "then": then}
    if otherwise:
        rule["else"] = otherwise
    return rule


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
def assume(
    key: str, value: float | int | str | bool | None, unit: str = "", default: bool = True, note: str = ""
) -> Assumption:
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
def _list_of(model: type) -> TypeAdapter:
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
