"""Figures a model passed *into* a tool: a price, duration, size or token count that is neither in the
question nor in an earlier trusted tool output was made up, and what the tool returns from it is no
source for the answer (`trusted_tool_outputs`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from bot.grounding.numbers import extract_numbers, name_sizes
from bot.grounding.sources import DEFAULT_REL_TOL, build_index, dimension, unit_from_key

__all__ = ["trusted_tool_outputs", "unsourced_inputs"]

#: input units that state a fact (a price, a duration, a size, a rate): the model may not invent them
_FACT_DIMENSIONS = {
    "CNY",
    "USD",
    "time",
    "tokens",
    "tokens/s",
    "bytes",
    "bytes/s",
    "bits/s",
    "flop",
    "power",
    "energy",
    "ratio",
    "params",
}


def unsourced_inputs(
    tool_input: Mapping[str, Any],
    question: str,
    sources: Mapping[str, Any] | None = None,
    *,
    rel_tol: float = DEFAULT_REL_TOL,
) -> list[str]:
    """The input fields of a tool call holding a figure that is neither in the question nor in
    `sources` (earlier trusted tool outputs, e.g. a catalog lookup): a price, duration, size or token
    count the model made up. Counts and knobs (GPUs, TP, batch) are the model's choices, not claims."""
    index = build_index(sources or {}, {}, question)
    bad: list[str] = []
    for key, value in tool_input.items():
        unit = unit_from_key(str(key))
        if dimension(unit) not in _FACT_DIMENSIONS or isinstance(value, bool):
            continue
        if isinstance(value, str):
            found = extract_numbers(value) or list(name_sizes(value))
            values = [n.value for n in found]
        elif isinstance(value, int | float):
            values = [float(value)]
        else:
            continue
        for v in values:
            if index.best("any", v, rel_tol * abs(v) + 1e-9) is None:
                bad.append(str(key))
                break
    return bad


def trusted_tool_outputs(calls: Iterable[Any], question: str) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """Split tool calls ({id, tool, input, output}) into those whose figures may ground an answer and
    those fed a made-up figure (with the fields): a number the model passed as an input is not a
    source for what the tool returns unless it came from the question or an earlier trusted output."""
    trusted: dict[str, Any] = {}
    tainted: dict[str, list[str]] = {}
    for call in calls:
        if call.tool == "search_knowledge":
            continue
        bad = unsourced_inputs(call.input, question, {k: v["output"] for k, v in trusted.items()})
        if bad:
            tainted[call.id] = bad
        else:
            trusted[call.id] = {"input": call.input, "output": call.output}
    return trusted, tainted
