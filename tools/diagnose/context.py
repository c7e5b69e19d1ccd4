"""The setup read once for every cause: the model and card records, the workload, the capacity the log reports
(or the catalog's), and a candidate cause as the rankers see it."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tools.catalog.architecture import ParamCount, param_count
from tools.catalog.gpu_spec import GpuSpec
from tools.catalog.lookup import get_gpu, get_model
from tools.catalog.model_spec import ModelSpec
from tools.memory.capacity import capacity_bytes
from tools.schemas.diagnose import DiagnoseInput
from tools.units import GiB

SERVING = frozenset({"vllm", "sglang"})
#: serving engines that pre-allocate memory and batch requests: vLLM and SGLang, whose start-up arithmetic the tool
#: reproduces (serve.py), and engines it only knows the usual causes of
ENGINES = SERVING | {"tgi", "lmdeploy"}
#: runtimes on one machine that choose for themselves how many layers go on the GPU (the rest run on the CPU)
LOCAL = frozenset({"ollama", "llama.cpp"})
#: what a GPU too small for the model's weights needs, when they are 4-bit already: a smaller model or more memory
SMALLER = "a smaller one (fewer parameters or a lower-bit quantisation), or a GPU with more memory"
#: errors that mean "out of GPU memory" in one form or another
OOM_KINDS = frozenset({"oom", "kv_too_small", "no_cache_memory", "weights_oom", "load_oom", "too_many_tokens"})


@dataclass
class Candidate:
    """A cause with its arithmetic; `figure` (bytes) is what it predicts for the evidence it is compared with."""

    cause: str
    arith: tuple[str, str]
    flag: str
    value: Any
    figure: float | None = None  # bytes (or tokens, with `unit`)
    reported: float | None = None  # the log's figure it is compared with, same unit
    named: bool = False  # the error message itself names this cause
    prior: float = 0.0  # how likely without a figure to compare (0–1)
    after: Callable[[], dict[str, Any]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def error(self) -> float | None:
        if self.figure is None or not self.reported:
            return None
        return abs(self.figure - self.reported) / self.reported


@dataclass(frozen=True)
class Setup:
    inp: DiagnoseInput
    model: ModelSpec | None
    gpu: GpuSpec | None
    workload: str | None
    capacity: float | None  # bytes per GPU: the log's "total capacity" where given, else the catalog's
    params: ParamCount | None
    #: fit_training's output per distinct argument set, for this diagnosis only (the causes and the fixes ask
    #: the calculator the same question several times; it is a pure function of its arguments)
    fits: dict[tuple, Any] = field(default_factory=dict, compare=False, repr=False)
    #: the measured speed against the estimate (slow.py): measured, expected, ratio_pct, verdict, bound
    speed: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def framework(self) -> str | None:
        return self.inp.framework

    @property
    def tp(self) -> int:
        if self.inp.tp:
            return self.inp.tp
        return self.inp.n_gpus if self.workload == "infer" else 1

    @property
    def oom(self) -> bool:
        return self.inp.error_kind in OOM_KINDS


def read_setup(inp: DiagnoseInput) -> Setup:
    if inp.failed_alloc_gb and not inp.failed_alloc_gib:
        inp = inp.model_copy(update={"failed_alloc_gib": inp.failed_alloc_gb * 1e9 / GiB})
    model = get_model(inp.model) if inp.model else None
    gpu = get_gpu(inp.gpu) if inp.gpu else None
    workload = inp.workload or (
        "infer" if inp.framework in ENGINES else "train" if inp.framework or inp.zero_stage is not None else None
    )
    if workload is None and (inp.error_kind in ("kv_too_small", "no_cache_memory", "heads_not_divisible", "too_many_tokens")
                             or inp.quant_misaligned or inp.symptom in ("engine_memory", "concurrency", "serial")):  # fmt: skip
        workload = "infer"
    if inp.framework in SERVING and inp.error_kind == "load_oom":  # an engine's start-up OOM: weights, profile, pool
        inp = inp.model_copy(update={"error_kind": "oom"})
    if inp.capacity_gib:
        capacity = inp.capacity_gib * GiB
    elif gpu is not None:
        capacity = capacity_bytes(gpu)
    else:
        capacity = None
    return Setup(inp, model, gpu, workload, capacity, param_count(model) if model else None)


#: troubles that say the run is running (slowly, idly, or holding more memory than expected): it fits, whatever a
#: default setup would need
RUNNING = frozenset({"engine_memory", "slow", "low_gpu_util", "multi_gpu_slower", "serial", "busy_low_power"})


def runs(inp: DiagnoseInput) -> bool:
    """It ran (a speed was measured, or the user says it runs slow or the engine holds more memory than expected) and
    nothing reports an error: memory causes do not apply (the evidence beats a default setup that would not fit)."""
    return inp.error_kind is None and (bool(inp.measured_tokens_per_s) or inp.symptom in RUNNING)


def gib(n_bytes: float) -> str:
    """Bytes as GiB, two decimals (how PyTorch and vLLM print them)."""
    return f"{n_bytes / GiB:.2f}"


def count(n: float) -> str:
    """A parameter or element count in words people write: 5.4B, 500M, 7,168."""
    if n >= 1e9:
        return f"{n / 1e9:.2f}".rstrip("0").rstrip(".") + "B"
    if n >= 1e6:
        return f"{n / 1e6:.1f}".rstrip("0").rstrip(".") + "M"
    return f"{n:,.0f}"


def flag_values(inp: DiagnoseInput) -> dict[str, str]:
    """The `flags` list ('name=value') as a dict, names normalised (no dashes, lower case)."""
    out = {}
    for item in re.split(r"[\s,]+", inp.flags or ""):
        if not item:
            continue
        name, _, val = item.partition("=")
        out[name.strip().lstrip("-").replace("-", "_").lower()] = val.strip()
    return out
