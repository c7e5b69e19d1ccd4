"""The host side of each GPU server a plan buys: CPU cores, system RAM and local disk, sized for the job.

    cores = GPUs per server × cores per GPU (tco.yaml `host`: serving 8–12, training 12–24)
    RAM   = the server's GPU memory × the multiple (serving 2×, training 3–4×), at least a server's floor (128 GB; a
            PC of consumer cards has none) and any
            host RAM a calculator computed for this run (an offload, the checkpoint's load), up to a 64 GB step
    disk  = one checkpoint: training in full, the 16-bit weights plus the fp32 master and Adam states (DeepSpeed's
            estimator's 16 B per trainable parameter less its 4 B fp32 gradient, which no checkpoint keeps, plus the
            2 B weight: 14 B per parameter); LoRA/QLoRA, the base model's 16-bit file (the adapters are small);
            serving, the weights file at the serving precision

The rules are sizing guides' rules of thumb, each with its source; a published 8-GPU server (tco.yaml
`host_reference`) is returned beside them to set them against. Pure: catalog data in, figures out.
"""

from __future__ import annotations

import math

from tools.catalog.architecture import param_count
from tools.catalog.lookup import get_model
from tools.catalog.prices import host_params, host_reference
from tools.memory.host_memory import value
from tools.schemas.plan import HostSide
from tools.units import BYTES_PER_PARAM

#: system RAM comes in steps of this many GB (DIMM populations: 8 × 16, 16 × 32, 32 × 64 …)
RAM_STEP_GB = 64


def _step(gb: float) -> float:
    return float(math.ceil(gb / RAM_STEP_GB) * RAM_STEP_GB)


def full_checkpoint_bytes() -> float:
    """Bytes per parameter of a full-training checkpoint: the 16-bit weight, the fp32 master and Adam m and v."""
    ds = value("deepspeed", "zero3_estimator")
    return float(ds["offload_param_bytes"]) + float(ds["offload_optimizer_bytes"]) - float(ds["load_bytes_fp32"])


def _checkpoint(model: str | None, workload: str, method: str, precision: str) -> tuple[float | None, str | None]:
    if model is None:
        return None, None
    params = float(param_count(get_model(model)).total)  # the architecture's count, not the size-class label
    if workload == "infer":
        b = BYTES_PER_PARAM.get(precision, 2.0)
        return round(params * b / 1e9, 1), f"the weights at {precision} ({b:g} B per parameter)"
    if method == "full":
        b = full_checkpoint_bytes()
        return round(params * b / 1e9, 1), f"16-bit weights + fp32 master + Adam states ({b:g} B per parameter)"
    return round(params * 2.0 / 1e9, 1), "the base model's 16-bit file; the adapters add little"


def host_side(
    gpus_per_node: int,
    gpu_memory_gb: float,
    workload: str,
    model: str | None = None,
    method: str = "full",
    precision: str = "bf16",
    need_gb: float | None = None,
    consumer: bool = False,
) -> HostSide:
    """The CPU cores, system RAM and disk of one server of `gpus_per_node` cards of `gpu_memory_gb` each; a PC of
    consumer cards is held to the multiple only (the floor is a server's)."""
    h = host_params()
    cores = h["cpu_cores_per_gpu_train" if workload == "train" else "cpu_cores_per_gpu_infer"]
    mult = h["ram_vs_vram_train" if workload == "train" else "ram_vs_vram_infer"]
    floor = 0.0 if consumer else h["ram_floor_gb"].default
    vram = gpus_per_node * gpu_memory_gb
    least = max(floor, need_gb or 0.0)
    ram_low, ram_high = _step(max(vram * mult.low, least)), _step(max(vram * mult.high, least))
    ckpt, note = _checkpoint(model, workload, method, precision)
    ref = host_reference()
    return HostSide(
        workload=workload, gpus_per_node=gpus_per_node, cores_per_gpu_low=cores.low, cores_per_gpu_high=cores.high,
        cores_low=math.ceil(gpus_per_node * cores.low), cores_high=math.ceil(gpus_per_node * cores.high),
        vram_gb=round(vram, 1), ram_multiple_low=mult.low, ram_multiple_high=mult.high, ram_low_gb=ram_low,
        ram_high_gb=ram_high, ram_floor_gb=floor, ram_need_gb=round(need_gb, 1) if need_gb else None, checkpoint_gb=ckpt,
        checkpoint_note=note, reference=f"{ref['name']}: {ref['cpu']} ({ref['cores']} cores), {ref['ram_gb']} GB RAM",
        reference_zh=f"{ref['name_zh']}：{ref['cpu_zh']}（共 {ref['cores']} 核），内存 {ref['ram_gb']} GB",
    )  # fmt: skip
