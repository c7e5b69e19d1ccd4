"""The memory convention, applied once, and the three-way verdict shared by `fit_training` and `fit_inference`.

Three figures, one comparison:

- **allocator peak**: the tensors PyTorch's caching allocator holds at the step's peak (weights, gradients,
  optimizer states, activations, logits, gathered ZeRO-3 layers, KV cache). It is what
  `torch.cuda.max_memory_allocated()` reports, and what published memory tables (Qwen's profiling table,
  the QLoRA paper, DeepSpeed's estimators) report.
- **process total**: the allocator peak plus what lives outside the allocator, the CUDA context and NCCL's
  buffers: what `nvidia-smi` shows for the process.
- **capacity**: what the driver reports (an A100 "80 GB" is 80 GiB = 85.9 GB).

The verdict compares the process total with capacity × `usable_fraction` once. Training leaves that
fraction at 1.0: the breakdown already counts the context and NCCL buffers, so the old 0.9 on top counted
them twice. Serving keeps 0.9 because it is vLLM's own `gpu_memory_utilization` budget, inside which vLLM
places the weights, activations, non-torch memory and KV cache, exactly the breakdown we compute.

Allocator fragmentation and our estimate's own error sit in one uncertainty band, ±`ESTIMATE_BAND` of the
allocator peak: the published memory rows in tests/golden/memory.yaml lie within ±15% of our allocator
peak, most within ±10%. A run whose margin is inside the band is `tight`: it may or may not run, and the
answer says so rather than guessing.
"""

from __future__ import annotations

import functools
from typing import Literal

from tools.schemas.common import Assumption, assume
from tools.units import GB

Verdict = Literal["fits", "tight", "does not fit"]

#: ± share of the allocator peak: fragmentation plus the estimate's own error
ESTIMATE_BAND = 0.10

#: the components that live outside PyTorch's caching allocator
OUTSIDE_ALLOCATOR = ("cuda_context", "comm_buffers")


def verdict_word(total: float, outside: float, usable: float) -> Verdict:
    """The verdict alone, from the process total and the part of it outside the allocator (bytes)."""
    band = ESTIMATE_BAND * (total - outside)
    margin = usable - total
    return "fits" if margin >= band else "tight" if margin > -band else "does not fit"


def judge(parts: dict[str, float], usable: float) -> dict:
    """Verdict fields for a per-GPU breakdown in bytes against the usable bytes."""
    total = sum(parts.values())
    outside = sum(parts.get(k, 0.0) for k in OUTSIDE_ALLOCATOR)
    peak = total - outside
    band = ESTIMATE_BAND * peak
    margin = usable - total
    word = verdict_word(total, outside, usable)
    return {
        "verdict": word,
        "margin_gb": round(margin / GB, 2),
        "uncertainty_gb": round(band / GB, 2),
        "allocator_peak_gb": round(peak / GB, 2),
        "process_total_gb": round(total / GB, 2),
    }


@functools.lru_cache(maxsize=256)
def convention_assumption(usable_fraction: float, serving: bool) -> Assumption:
    """The memory convention as one stated assumption."""
    where = (
        "vLLM's gpu_memory_utilization budget, which already holds the CUDA context and KV cache"
        if serving
        else "nothing held back: the breakdown already counts the CUDA context and NCCL buffers"
    )
    return assume(
        "memory_convention",
        value=f"process total ≤ {usable_fraction:g} × capacity",
        note=(
            f"allocator peak (what torch.cuda.max_memory_allocated and published tables report) + CUDA context + "
            f"NCCL buffers = process total (what nvidia-smi shows), compared once with {usable_fraction:g} × the "
            f"capacity the driver reports ({where}); 'tight' = the margin is within ±{ESTIMATE_BAND:.0%} of the "
            f"allocator peak (fragmentation and estimate error)"
        ),
    )


Seen = Literal["as_estimated", "cached", "larger_card", "below"]

#: ± share of the process total within which memory seen in use is what the estimate says: the published rows
#: lie within ±15% of the estimate (tests/golden/memory.yaml)
SEEN_BAND = 0.15


def seen_verdict(seen_gb: float, need_gb: float, capacity_gb: float) -> Seen:
    """Memory a run was seen using per GPU (nvidia-smi, a log) against the estimate's process total and the
    card's capacity (GB): what the estimate says (`as_estimated`); more, which is PyTorch's caching allocator
    keeping freed blocks reserved up to the card's size (`cached`); more than this card holds, so it was read on a
    larger card (`larger_card`); or less (`below`: something was offloaded, quantised or not yet allocated)."""
    if seen_gb > capacity_gb * (1 + SEEN_BAND / 3):
        return "larger_card"
    if seen_gb > need_gb * (1 + SEEN_BAND):
        return "cached"
    return "as_estimated" if seen_gb >= need_gb * (1 - SEEN_BAND) else "below"


Stated = Literal["close", "above", "below"]


def stated_verdict(stated_gb: float, need_gb: float) -> Stated:
    """A memory figure the user gives for a whole job (their estimate, a documented requirement) against the
    estimate of the same job (GB): within `SEEN_BAND` of it (`close`), more (`above`) or less (`below`)."""
    if stated_gb > need_gb * (1 + SEEN_BAND):
        return "above"
    return "close" if stated_gb >= need_gb * (1 - SEEN_BAND) else "below"
