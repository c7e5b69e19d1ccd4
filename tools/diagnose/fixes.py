"""A fix said in the asker's framework, or not at all (frameworks.yaml `knobs`).

Each knob a fix turns (CUDA graphs, the engine's KV-pool fraction, the scheduled sequences, the longest sequence,
tensor and data parallel, a trainer's settings) has its flag per framework. A cause whose fix turns a knob is
kept with that framework's own flag; where the asker's framework is known and has no such knob (vLLM's
`--max-num-seqs` for a transformers run, a trainer's batch for a model that only serves), the cause is not one
this run can have and is dropped, when it is a serving engine's cause (`ENGINE_CAUSES`); a cause that any run
can have (a slow setting, the all-reduce) keeps its place with no flag to set (`NO_FLAG`). A fix that proposes
what is already set, or the framework's default where the asker set nothing, changes nothing: its cause, too,
keeps its place with no flag.
"""

from __future__ import annotations

import functools
from typing import Any

from tools.diagnose.context import Candidate, Setup, flag_values
from tools.diagnose.facts import facts

#: the flag of a cause that stays with nothing to set in this framework (said as a thing to check, without a flag)
NO_FLAG = ""
#: causes that only a serving engine has (its pre-allocated KV pool, its start-up check of the heads): no such
#: engine, no such cause
ENGINE_CAUSES = frozenset(
    {"kv_pool_too_small", "memory_utilization_setting", "batch_or_concurrency_too_high", "tp_not_divisible"}
)

#: frameworks whose knobs the table names: an asker on another known framework has none of the engine knobs
KNOWN = frozenset(
    {"vllm", "sglang", "tgi", "lmdeploy", "deepspeed", "pytorch", "llamafactory", "transformers", "accelerate",
     "ollama", "llama.cpp", "torch_npu"}
)  # fmt: skip


@functools.cache
def _by_flag() -> dict[str, tuple[dict[str, Any], str | None]]:
    """Every flag a cause can carry as its fix -> (its knob, the framework it is spelled for; None: a trainer's
    name). An entry that proposes its own value or translates only one value is a translation's target, never a
    cause's own flag (`device_map` is many fixes besides fewer GPUs per replica)."""
    out: dict[str, tuple[dict[str, Any], str | None]] = {}
    for knob in facts()["knobs"].values():
        for fw, entry in knob["flags"].items():
            if "propose" not in entry and "when" not in entry:
                out.setdefault(entry["flag"], (knob, fw))
        for name in knob.get("names", ()):
            out[name] = (knob, None)
    return out


def _current(s: Setup, entry: dict[str, Any]) -> Any:
    """What the asker set for this knob (the launch command, the config), or None."""
    if (field := entry.get("input")) and field in s.inp.model_fields_set:
        return getattr(s.inp, field)
    if key := entry.get("key"):
        return flag_values(s.inp).get(key)
    return None


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return str(a).lower() == str(b).lower()
    try:
        return abs(float(a) - float(b)) < 1e-9
    except (TypeError, ValueError):
        return str(a).strip().lower() == str(b).strip().lower()


def _past(current: Any, proposed: Any, direction: str) -> bool:
    """The asker's setting is already at or beyond what the fix proposes."""
    if _same(current, proposed):
        return True
    try:
        c, p = float(current), float(proposed)
    except (TypeError, ValueError):
        return False
    return (direction == "lower" and c <= p) or (direction == "higher" and c >= p)


#: a trainer's fix the asker's run already has (the config, the command or the words say so) -> whether it has it
_ALREADY = {
    "zero_optimization.stage": lambda i, v: i.zero_stage is not None and i.zero_stage >= int(v),
    "zero_optimization.offload_optimizer.device": lambda i, v: i.offload != "none",
    "zero_optimization.offload_param.device": lambda i, v: i.offload == "optimizer+params",
    "gradient_checkpointing": lambda i, v: i.grad_checkpointing is True and v is True,
}
#: causes whose only remedy is that setting: with it already made (the states sharded, the optimizer offloaded), the
#: cause is not this run's and is dropped; other causes keep their place with nothing to set
_REMEDIED = frozenset({"optimizer_states_unsharded", "needs_offload"})


#: DeepSpeed's own names: a run that shards with PyTorch FSDP has none of them (its offload has its own spelling)
_DEEPSPEED = ("zero_optimization.", "stage3_", "reduce_bucket_size", "allgather_bucket_size", "sub_group_size")


def fit(c: Candidate, s: Setup) -> Candidate | None:
    """The candidate with its fix in the asker's framework, or None where it is no fix for this run."""
    if (
        (has := _ALREADY.get(c.flag)) and has(s.inp, c.value) and not c.extra.get("lower")
    ):  # (a lower stage: less traffic)
        return None if c.cause in _REMEDIED else _unset(c)
    if c.flag.startswith(_DEEPSPEED) and "fsdp" in flag_values(s.inp):
        if c.flag.startswith("zero_optimization.offload_"):
            offload = facts()["pytorch"]["fsdp_cpu_offload"]
            c.flag, c.value = offload["flag"], offload["propose"]
            return c
        return None if c.cause == "zero_stage_buffers" else _unset(c)  # (ZeRO's buckets are no FSDP buffers)
    found = _by_flag().get(c.flag)
    if found is None:
        return c  # framework-neutral (or not a knob the table names)
    knob, spelled = found
    rules = knob["value"]
    if rules.get("workload") and s.workload and s.workload != rules["workload"]:
        return _unset(c)  # a trainer's setting for a model that only serves
    if spelled is None:
        return c
    fw = s.framework if s.framework in KNOWN else spelled  # unknown framework: the flag as the cause wrote it
    entry = knob["flags"].get(fw)
    if entry is not None and "when" in entry and not _same(entry["when"], c.value):
        entry = None  # this framework spells only another value of the knob
    if entry is None:  # the asker's framework has no such knob
        return None if c.cause in ENGINE_CAUSES else _unset(c)
    proposed = entry.get("propose", c.value) if fw != spelled else c.value
    current = _current(s, entry)
    if _tried(s, entry, proposed):
        return _unset(c)  # the asker tried it and it failed: no fix to propose again
    raises = c.extra.get("raise") and knob.get("id") == "kv_pool_fraction"  # a KV pool given more room
    direction = "higher" if raises else rules["direction"]
    if current is not None and _past(current, proposed, direction):
        return _unset(c)  # already set so (or further)
    if current is None and "default" in entry and _same(entry["default"], proposed):
        return _unset(c)  # the framework's default: nothing to change
    if fw != spelled:
        c.flag, c.value = entry["flag"], proposed
    return c


def _tried(s: Setup, entry: dict[str, Any], proposed: Any) -> bool:
    """The asker says they set this knob to this value and it failed (`tried` items, 'field=value')."""
    name = entry.get("input") or entry.get("key")
    for item in (s.inp.tried or "").split():
        field, _, val = item.partition("=")
        if name and field == name and _same(val, proposed):
            return True
    return False


def _unset(c: Candidate) -> Candidate:
    c.flag, c.value, c.after = NO_FLAG, NO_FLAG, None
    return c


def fitted(found: list[Candidate], s: Setup) -> list[Candidate]:
    return [f for c in found if (f := fit(c, s)) is not None]
