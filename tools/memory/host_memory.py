"""Host RAM (CPU memory) a run needs per node, by term: what each rank loads, the reference models a preference
run loads beside the policy, the optimizer states and parameters ZeRO offloads, and an engine build.

The rules and their sources are in tools/data/frameworks.yaml:
- loading (`transformers.load_per_rank`, `transformers.from_pretrained_dtype`, `deepspeed.zero3_init`): every rank
  that calls from_pretrained holds the whole checkpoint, in fp32 unless torch_dtype says otherwise; under zero.Init
  each rank holds its partition only, so the node holds its share of one copy;
- reference models (`trl.reference_models`): DPO/KTO one frozen copy of the policy, PPO three (reference, reward,
  value), loaded the same way as the policy;
- offload (`deepspeed.zero3_estimator`): 16 B per trainable parameter for offload_optimizer (fp32 master, Adam m and
  v, fp32 gradients), 2 B per parameter for offload_param, each node holding its share, × 1.5 for the pinned and
  staging buffers, as DeepSpeed's own estimator sizes it;
- an engine build (`tensorrt_llm.build_host_ram`): about 3 × the weights at the build dtype, one process.

The load phase (the checkpoint and the reference copies) ends before training starts, when the weights have
moved to the GPUs; the offloaded states live through training. The run needs the larger of the phases.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tools.yaml_data import load_yaml

_FRAMEWORKS = Path(__file__).resolve().parent.parent / "data" / "frameworks.yaml"

Offload = Literal["none", "optimizer", "optimizer+params"]


@functools.cache
def _rules() -> dict[str, dict[str, Any]]:
    raw = load_yaml(_FRAMEWORKS.read_text(encoding="utf-8"))
    return {f"{fw}.{f['id']}": f for fw, items in raw.items() for f in items}


def value(framework: str, key: str) -> Any:
    """A rule's value from tools/data/frameworks.yaml (the same records tools/diagnose/facts.py reads)."""
    return _rules()[f"{framework}.{key}"]["value"]


def _ds(key: str) -> float:
    return float(value("deepspeed", "zero3_estimator")[key])


@dataclass(frozen=True)
class HostRun:
    """One run's setup as host RAM sees it. Parameter counts are plain counts; bytes are per parameter."""

    params: float  # total parameters
    trainable: float | None = None  # trainable parameters (None: all of them, full fine-tuning)
    ranks_per_node: int = 1  # processes on one node that each load the model
    nodes: int = 1
    offload: Offload = "none"
    load_bytes: float = 4.0  # the dtype the checkpoint is loaded in: fp32 when torch_dtype is not set
    zero_init: bool = False  # the model is built under deepspeed.zero.Init (partitioned as it loads)
    reference_models: int = 0  # DPO/KTO 1, PPO 3: loaded beside the policy, the same way
    engine_build_bytes: float = 0.0  # an engine build at this many bytes per parameter (0: no build)


@dataclass(frozen=True)
class HostRam:
    """Bytes of host RAM per node, by term, and the phase that needs the most."""

    terms: dict[str, float]
    phases: dict[str, float]

    @property
    def total(self) -> float:
        return max(self.phases.values(), default=0.0)

    @property
    def peak_phase(self) -> str:
        return max(self.phases, key=self.phases.get) if self.phases else "load"


def host_ram(run: HostRun) -> HostRam:
    """Host RAM per node for the run: {load, reference, offload_optimizer, offload_params, offload_buffers,
    engine_build} in bytes, and the phases they add up to (load, train, build); `total` is the largest phase."""
    one_copy = run.params * run.load_bytes
    if run.zero_init:  # each rank materialises its partition: the node holds its share of one copy
        load = one_copy / run.nodes
    else:
        load = one_copy * run.ranks_per_node
    reference = load * run.reference_models
    trainable = run.params if run.trainable is None else run.trainable
    optimizer = params = 0.0
    if run.offload in ("optimizer", "optimizer+params"):
        optimizer = _ds("offload_optimizer_bytes") * trainable / run.nodes
    if run.offload == "optimizer+params":
        params = _ds("offload_param_bytes") * run.params / run.nodes
    buffers = (optimizer + params) * (_ds("buffer_factor") - 1)
    build = run.engine_build_bytes * run.params * float(value("tensorrt_llm", "build_host_ram")["multiple"])
    terms = {
        "load": load, "reference": reference, "offload_optimizer": optimizer, "offload_params": params,
        "offload_buffers": buffers, "engine_build": build,
    }  # fmt: skip
    phases = {"load": load + reference}
    if optimizer or params:
        phases["train"] = optimizer + params + buffers
    if build:
        phases["build"] = build
    return HostRam(terms=terms, phases=phases)
