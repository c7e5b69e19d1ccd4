"""Base classes shared by every calculator's input and output."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ToolInput(BaseModel):
    """A calculator input: unknown fields are errors, so a typo never passes silently."""

    model_config = ConfigDict(extra="forbid", frozen=True)


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


def assume(key: str, value: float | int | str | bool | None, unit: str = "", default: bool = True, note: str = "") -> dict:
    """An assumption as a plain dict; the output model validates the whole list at once (fast)."""
    return {"key": key, "value": value, "unit": unit, "default": default, "note": note}


class ToolOutput(BaseModel):
    model_config = ConfigDict(frozen=True)

    assumptions: list[Assumption] = Field(default_factory=list)

    def assumption(self, key: str) -> Assumption:
        for a in self.assumptions:
            if a.key == key:
                return a
        raise KeyError(key)
