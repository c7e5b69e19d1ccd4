"""The default utilisation of a training run: a few rules read from `tools/data/mfu.yaml`.

    u = base[generation] × precision_factor[precision] × method_factor[method]

`u` is the hardware FLOPs utilisation of the compute phase of a step inside one node (the share of
the dense tensor peak the matmuls of forward, backward and any recomputation reach). Communication
between GPUs is not in `u`: `tools.speed.comm` adds it, so scale (GPU count, fabric, NVLink speed) enters
through physics, not through a fitted curve. The low–high band multiplies `u` by the generation's
`band` factors. The calibration rows in the same file (published runs) are what the bases were set
from; `tests/golden/speed.yaml` checks the whole model against them and other runs.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from tools.catalog.gpu_spec import GpuSpec
from tools.catalog.lookup import DATA_DIR
from tools.memo import per_record
from tools.yaml_data import load_yaml


@dataclass(frozen=True)
class Generation:
    id: str
    families: tuple[str, ...]
    base: float
    low: float  # multiplier on base for the pessimistic end
    high: float  # multiplier on base for the optimistic end
    calibrated: bool
    note: str


@dataclass(frozen=True)
class Factor:
    value: float
    low: float
    high: float
    note: str


@dataclass(frozen=True)
class MfuRules:
    generations: tuple[Generation, ...]
    precision: dict[str, Factor]
    method: dict[str, Factor]
    free_parameters: int
    width_knee: int = 2048
    width_exponent: float = 0.5
    width_note: str = ""
    framework_fp8: dict[str, Factor] | None = None
    framework_no_recompute: tuple[str, ...] = ()
    #: stack -> generation -> factor on the generation's base (every precision), where a stack's published runs on
    #: that generation sit apart from the base set on other stacks
    framework_base: dict[str, dict[str, Factor]] | None = None


def _factor(row) -> Factor:
    if isinstance(row, int | float):
        return Factor(float(row), float(row), float(row), "")
    value = float(row["value"])
    return Factor(value, float(row.get("low", value)), float(row.get("high", value)), row.get("note", ""))


@functools.cache
def rules() -> MfuRules:
    with open(DATA_DIR / "mfu.yaml", encoding="utf-8") as fh:
        doc = load_yaml(fh)
    gens = tuple(
        Generation(
            id=g["id"],
            families=tuple(f.lower() for f in g["families"]),
            base=float(g["base"]),
            low=float(g["band"][0]),
            high=float(g["band"][1]),
            calibrated=bool(g["calibrated"]),
            note=g["note"],
        )
        for g in doc["generations"]
    )
    return MfuRules(
        generations=gens,
        precision={k: _factor(v) for k, v in doc["precision_factor"].items()},
        method={k: _factor(v) for k, v in doc["method_factor"].items()},
        free_parameters=int(doc["free_parameters"]),
        width_knee=int(doc["gemm_width"]["knee"]),
        width_exponent=float(doc["gemm_width"]["exponent"]),
        width_note=doc["gemm_width"]["note"],
        framework_fp8={k: _factor(v) for k, v in doc.get("framework_fp8", {}).items()},
        framework_no_recompute=tuple(doc.get("framework_no_recompute", ())),
        framework_base={k: {g: _factor(f) for g, f in v.items()} for k, v in doc.get("framework_base", {}).items()},
    )


@per_record
def generation_of(gpu: GpuSpec) -> Generation:
    """The generation rule for a GPU's `family` ("Hopper", "CDNA3", "Da Vinci", ...); `other` if none matches."""
    family = gpu.family.lower()
    fallback = None
    for g in rules().generations:
        if any(family.startswith(f) for f in g.families):
            return g
        if g.id == "other":
            fallback = g
    assert fallback is not None, "mfu.yaml needs an 'other' generation"
    return fallback


@dataclass(frozen=True)
class Utilisation:
    value: float
    low: float
    high: float
    generation: Generation
    precision: Factor
    method: Factor


def default_utilisation(gpu: GpuSpec, precision: str, method: str, framework: str = "auto") -> Utilisation:
    return _utilisation(generation_of(gpu), precision, method, framework)


@functools.lru_cache(maxsize=256)
def _utilisation(gen: Generation, precision: str, method: str, framework: str = "auto") -> Utilisation:
    r = rules()
    prec = r.precision[precision]
    stack = (r.framework_fp8 or {}).get(framework) if precision == "fp8" else None
    if stack is not None:  # the stack's own FP8 efficiency, in the generic FP8 band
        prec = Factor(stack.value, min(prec.low, stack.value), max(prec.high, stack.value), stack.note)
    meth = r.method[method]
    own = stack_base(framework, gen.id)
    base = gen.base * (own.value if own else 1.0)
    value = base * prec.value * meth.value
    low = base * gen.low * prec.low * meth.low
    high = min(0.95, base * gen.high * prec.high * meth.high)
    return Utilisation(value, low, high, gen, prec, meth)


def stack_base(framework: str, generation: str) -> Factor | None:
    """The training stack's own factor on a generation's base (mfu.yaml framework_base), or None."""
    return ((rules().framework_base or {}).get(framework) or {}).get(generation)


def width_factor(hidden: int, tp: int) -> float:
    """Utilisation factor for narrow per-GPU matmuls: min(1, (h / tp) / knee) ** exponent.

    A tensor-parallel shard of a small model (Llama-3.1-8B at tp 8: 512 columns) keeps the tensor cores
    less busy than a wide one (405B at tp 8: 2,048); the knee and exponent are in tools/data/mfu.yaml.
    """
    r = rules()
    width = hidden / tp
    return min(1.0, width / r.width_knee) ** r.width_exponent
