"""What a card holds and the GPU counts people buy: shared by the training and serving memory calculators.

- Capacity is what the driver reports: an A100/H100 "80 GB" is 80 GiB (81,920 MiB in nvidia-smi).
- GPU counts go 1, 2, 4, 8, then whole 8-GPU nodes; nothing beyond `MAX_COUNT` is considered.
- Once several GPUs talk, NCCL allocates its buffers (≈ 1.5 GiB at the first collective, REFERENCE.md).
"""

from __future__ import annotations

import math
from typing import Any

from tools.catalog.gpu_spec import GpuSpec
from tools.memo import per_record
from tools.schemas.common import Assumption, assume
from tools.schemas.plan import SharedCard, TogetherPart
from tools.units import GB, GiB

GPUS_PER_NODE = 8
NCCL_BUFFERS_BYTES = 1.5 * GiB  # REFERENCE.md: ≈ 1.5 GiB allocated at the first collective
MAX_COUNT = 1 << 17  # the largest GPU count min_gpus looks at


def capacity_bytes(gpu: GpuSpec) -> float:
    """What the driver reports: A100/H100 "80 GB" is 80 GiB (81,920 MiB in nvidia-smi). NVIDIA's memory sizes are
    binary (the RTX 4090's "24 GB" is 23.99 GiB, the V100's "32 GB" 31.75 GiB), so an NVIDIA card whose driver
    figure is not catalogued is taken at its size in GiB: every "24 GB" NVIDIA card gets the same capacity
    (issue 25: they gave 25.8 or 24). Other vendors' figures stay decimal unless the catalog says otherwise."""
    if gpu.memory_reported_gib:
        return gpu.memory_reported_gib * GiB
    if gpu.vendor == "nvidia":
        return gpu.memory_gb * GiB
    return gpu.memory_gb * GB


def binary_size(gpu: GpuSpec) -> bool:
    """Whether the card's advertised size is in GiB (NVIDIA's): its usable memory is then also said in GiB, so
    "25.8 GB usable" on a "24 GB" card reads as the same 24. Other vendors' sizes are decimal (a driver figure
    below the label is less memory, not another unit)."""
    return gpu.vendor == "nvidia"


def usable_gib(gpu: GpuSpec, usable: float) -> float | None:
    """The usable bytes in GiB where the card is sold in GiB (see `binary_size`), else None."""
    return round(usable / GiB, 1) if binary_size(gpu) else None


@per_record
def capacity_assumption(gpu: GpuSpec) -> Assumption:
    """The capacity the verdict compares with, as the driver reports it (`fit_training` and `fit_inference`)."""
    return assume(
        "capacity",
        value=round(capacity_bytes(gpu) / GB, 1),
        unit="GB",
        note=f"{gpu.memory_reported_gib:g} GiB as the driver reports"
        if gpu.memory_reported_gib
        else f"{gpu.memory_gb:g} GiB (NVIDIA sizes are binary; with ECC on, GDDR cards report several percent less)"
        if gpu.vendor == "nvidia"
        else "vendor figure",
    )


def next_count(n: int) -> int:
    """The next GPU count people buy after n: doubling up to one 8-GPU node, then one more node."""
    return n * 2 if n < GPUS_PER_NODE else n + GPUS_PER_NODE


def round_count(n: int) -> int:
    """Round a GPU count up to what people buy: 1, 2, 4, 8, then whole 8-GPU nodes."""
    if n <= 1:
        return 1
    if n <= GPUS_PER_NODE:
        return 1 << math.ceil(math.log2(n))
    return math.ceil(n / GPUS_PER_NODE) * GPUS_PER_NODE


def shared_card(fits: list[tuple[str, Any]]) -> SharedCard:
    """Several models on the same cards, each its own engine (a chat model beside an embedding model): each one's
    `fit_inference` alone (`fits`: the name asked, its output), their needs summed against the usable memory, and
    the share of the card each engine must be allowed, ⌈need / capacity⌉ to 0.01 (vLLM preallocates its share, so
    the first to start must not take the whole card)."""
    parts = [
        TogetherPart(model=typed, name=out.model, per_gpu_gb=out.per_gpu_gb,
                     weights_gb=out.breakdown_gb.get("weights", 0.0), kv_cache_gb=out.breakdown_gb.get("kv_cache", 0.0),
                     share_fraction=math.ceil(out.per_gpu_gb / out.capacity_gb * 100 - 1e-9) / 100)
        for typed, out in fits
    ]  # fmt: skip
    need, usable = round(sum(p.per_gpu_gb for p in parts), 2), fits[0][1].usable_gb
    return SharedCard(
        parts=parts, per_gpu_gb=need, usable_gb=usable, fits=need <= usable,
        headroom_gb=round(max(0.0, usable - need), 2), shortfall_gb=round(max(0.0, need - usable), 2),
        share_fraction=round(sum(p.share_fraction for p in parts), 2),
    )  # fmt: skip
