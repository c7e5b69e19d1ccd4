"""ZeRO sharding and offload over the data-parallel degree: per-GPU bytes, the stage to use, the fewest GPUs.

ZeRO stage k shards over the data-parallel degree d: 1 the optimizer states, 2 also the gradients, 3 also the
parameters (plus the two gathered blocks in flight that `tools.memory.train_breakdown` counts). ZeRO-Offload moves the
optimizer states (and with parameter offload the weights and gradients too) to host RAM; DeepSpeed's estimators
size host RAM at 1.5 × the offloaded states. Once several GPUs talk, NCCL's buffers are added per GPU.

Per GPU = fixed + shardable / d at a given stage, so the stage and the GPU count are solved with a few float
operations on the unsharded breakdown rather than by assembling breakdowns in a search. The sums here add the
components in the breakdown's own order, so they equal the sum of the reported breakdown to the last bit.
"""

from __future__ import annotations

import math

from tools.memory.capacity import GPUS_PER_NODE, MAX_COUNT, NCCL_BUFFERS_BYTES, next_count, round_count
from tools.memory.train_breakdown import Train, replace

HOST_RAM_FACTOR = 1.5  # DeepSpeed's estimators: offloaded states × 1.5 of host RAM


def _states(base: dict[str, float], stage: int, dp: int, offload: str) -> tuple[float, float, float, float, float]:
    """(weights, gradients, optimizer) bytes left on each GPU at a stage and degree, offloaded bytes per GPU, and
    the frozen models beside the policy (reference, reward: ZeRO-3 shards them, nothing offloads them)."""
    weights, grads, optim = base["weights"], base["gradients"], base["optimizer"]
    if stage in (1, 2) and offload == "none":  # DeepSpeed's ZeRO-1/2 optimizer: its fp32 gradient partition
        grads_fp32 = base["fp32_gradients"] / dp
    else:
        grads_fp32 = 0.0
    if stage >= 1:
        optim /= dp
    if stage >= 2:
        grads /= dp
    resident = base["weights_resident"]  # a quantised base ZeRO-3 cannot partition or offload (QLoRA, uint8)
    frozen = base["frozen_models"]
    if stage >= 3:
        weights = (weights - resident) / dp + resident
        frozen /= dp
    host = 0.0
    if offload in ("optimizer", "optimizer+params"):
        host, optim = optim, 0.0
    if offload == "optimizer+params":
        host += weights - resident + grads
        weights, grads = resident, 0.0
    return weights, grads + grads_fp32, optim, host, frozen


def assemble(base: dict[str, float], stage: int, dp: int, offload: str, n_gpus: int) -> tuple[dict[str, float], float]:
    """Per-GPU bytes by component at a ZeRO stage and data-parallel degree, and offloaded bytes per GPU."""
    weights, grads, optim, host, frozen = _states(base, stage, dp, offload)
    parts = {
        "weights": weights,
        "gradients": grads + _buckets(base, stage, n_gpus > 1),  # reduce and all-gather buckets are tensors
        "optimizer": optim,
        "frozen_models": frozen,
        "activations": base["activations"],
        "logits": base["logits"],
        "zero3_buffers": base["zero3_buffers"] if stage >= 3 else 0.0,
        "cuda_context": base["cuda_context"],
        "comm_buffers": NCCL_BUFFERS_BYTES if n_gpus > 1 else 0.0,
    }
    return parts, host


def _buckets(base: dict[str, float], stage: int, multi: bool) -> float:
    """ZeRO-1/2's reduce and all-gather buckets once several GPUs share the optimizer (ZeRO-3 and FSDP prefetch
    whole blocks instead: `zero3_buffers`)."""
    return base["zero_buckets"] if multi and stage in (1, 2) else 0.0


def per_gpu(base: dict[str, float], stage: int, dp: int, offload: str, n_gpus: int) -> float:
    """The sum of `assemble`'s breakdown without building it (the searches call this many times)."""
    weights, grads, optim, _, frozen = _states(base, stage, dp, offload)
    if n_gpus > 1 and (stage == 1 or stage == 2):
        grads += base["zero_buckets"]  # as _buckets, inlined: the searches call this many times
    return _plus_rest(weights + grads + optim + frozen, base, stage, n_gpus > 1)


def _plus_rest(states: float, base: dict[str, float], stage: int, multi: bool) -> float:
    """Model states on a GPU plus the components sharding leaves alone, added in the breakdown's order."""
    return (
        states
        + base["activations"]
        + base["logits"]
        + (base["zero3_buffers"] if stage >= 3 else 0.0)
        + base["cuda_context"]
        + (NCCL_BUFFERS_BYTES if multi else 0.0)
    )


def breakdown(c: Train, base: dict[str, float]) -> tuple[dict[str, float], float]:
    """Per-GPU bytes by component at the run's settings, and host RAM per node for offload."""
    parts, host = assemble(base, c.zero_stage, c.dp, c.offload, c.n_gpus)
    return parts, host * min(c.n_gpus, GPUS_PER_NODE) * HOST_RAM_FACTOR


def total(c: Train, base: dict[str, float]) -> float:
    """Per-GPU bytes at the run's settings."""
    return per_gpu(base, c.zero_stage, c.dp, c.offload, c.n_gpus)


def auto_stage(c: Train, usable: float, explicit: int | None, base: dict[str, float]) -> Train:
    """The given ZeRO stage, or the lowest that fits (3 when none does); 0 on a single GPU."""
    if explicit is not None:
        return c
    low = 1 if c.offload == "optimizer" else 3 if c.offload == "optimizer+params" else 0
    dp = c.dp
    if dp == 1:
        return _at_stage(c, max(low, 0) if c.offload == "none" else low)
    for stage in range(low, 4):
        if per_gpu(base, stage, dp, c.offload, c.n_gpus) <= usable:
            return _at_stage(c, stage)
    return _at_stage(c, 3)


def _at_stage(c: Train, stage: int) -> Train:
    return c if c.zero_stage == stage else replace(c, zero_stage=stage)


def _fixed_and_shard(base: dict[str, float], stage: int, offload: str) -> tuple[float, float]:
    """(bytes per GPU that no data-parallel degree removes, bytes that shrink as 1/dp) on several GPUs."""
    weights, grads, optim, _, frozen = _states(base, stage, 1, offload)
    whole = _plus_rest(weights + (grads + _buckets(base, stage, True)) + optim + frozen, base, stage, True)
    fp32 = base["fp32_gradients"] if offload == "none" and stage in (1, 2) else 0.0  # sharded (part of `grads`)
    shard = (
        0
        if stage == 0
        else optim + fp32
        if stage == 1
        else optim + grads
        if stage == 2
        else optim + grads + weights - base["weights_resident"] + frozen
    )
    return whole - shard, shard


def min_gpus(c: Train, usable: float, base: dict[str, float]) -> tuple[int | None, int | None]:
    """Smallest GPU count (1, 2, 4, 8, whole nodes) where some ZeRO stage fits, and that stage.

    Per GPU = fixed + shardable / dp, so the count is solved directly rather than searched.
    """
    mp = c.tp * c.pp
    best: tuple[int, int] | None = None
    stages = (3,) if c.offload == "optimizer+params" else ((1, 2, 3) if c.offload != "none" else (0, 1, 2, 3))
    single = per_gpu(base, 0, 1, c.offload, mp)
    for stage in stages:
        fixed, shard = _fixed_and_shard(base, stage, c.offload)
        if single <= usable and (mp > 1 or stage == stages[0]):
            n = mp
        elif fixed >= usable:
            continue
        else:
            n = round_count(mp * max(2, math.ceil(shard / (usable - fixed))))
            while n % mp:
                n = next_count(n)
        if n <= MAX_COUNT and (best is None or n < best[0]):
            best = (n, stage)
    return best if best else (None, None)


def unshardable(c: Train, base: dict[str, float], usable: float, min_n: int | None) -> tuple[float, str | None]:
    """Per-GPU bytes no GPU count removes (ZeRO-3 sharding everything it can), and why no count fits, if none does.

    "activations": activations and logits alone exceed the usable memory (only method, sequence or
    checkpointing changes help); "unshardable": together with the gathered ZeRO-3 blocks, context and NCCL
    buffers (and a quantised base ZeRO-3 leaves whole) they do; "max_count": it would need more GPUs than the calculators consider.
    """
    act, logits = base["activations"], base["logits"]
    fixed = (
        act
        + logits
        + base["zero3_buffers"]
        + base["cuda_context"]
        + NCCL_BUFFERS_BYTES
        + base["zero_buckets"]
        + base["weights_resident"]
    )
    if min_n is not None:
        return fixed, None
    if act + logits > usable:
        return fixed, "activations"
    return fixed, "unshardable" if fixed >= usable else "max_count"
