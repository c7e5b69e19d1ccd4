"""Input and output of `model_memory`: sizes that depend on the model alone, not on a GPU."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tools.schemas.common import ToolInput, ToolOutput

WeightPrecision = Literal["fp32", "bf16", "fp16", "fp8", "int8", "int4", "nf4"]
KvPrecision = Literal["fp32", "bf16", "fp16", "fp8", "int8"]


class ModelMemoryInput(ToolInput):
    """A model and, optionally, the settings that change its footprint; no GPU is needed."""

    model: str = Field(description="Model name or a parameter count such as '13B' or '700亿'.")
    precision: WeightPrecision | None = Field(
        None, description="Weight precision; omitted: the precision the model is published in (bf16 for most)."
    )
    kv_precision: KvPrecision = Field("bf16", description="KV-cache element precision.")
    context_len: int = Field(4096, ge=1, le=10_000_000, description="Tokens per request for the KV-cache figure.")
    batch: int = Field(1, ge=1, le=100_000, description="Concurrent requests for the KV-cache figure.")
    method: Literal["full", "lora", "qlora"] = Field("full", description="Training method for the training figures.")
    optimizer: Literal["adamw", "adamw8bit", "sgd"] = Field("adamw", description="Optimizer for the model states.")
    n_gpus: int = Field(8, ge=1, le=1_000_000, description="Data-parallel GPUs the ZeRO stages shard over.")
    seq_len: int = Field(2048, ge=1, le=1_000_000, description="Training tokens per sequence (activations).")
    micro_batch: int = Field(1, ge=1, le=4096, description="Training sequences per GPU per step (activations).")
    grad_checkpointing: bool = Field(True, description="Recompute activations in the backward pass.")
    lora_rank: int = Field(16, ge=1, le=4096, description="LoRA/QLoRA adapter rank (all linear layers adapted).")


class ZeroStageMemory(BaseModel):
    model_config = ConfigDict(frozen=True)

    stage: int
    n_gpus: int
    weights_gb: float
    gradients_gb: float
    optimizer_gb: float
    per_gpu_gb: float  # model states per GPU at this stage (no activations)


class ModelMemoryOutput(ToolOutput):
    model: str
    params_b: float
    active_params_b: float
    precision: str
    weights_gb: float
    weights_by_precision_gb: dict[str, float]
    kv_precision: str
    kv_cache_bytes_per_token: float
    context_len: int
    batch: int
    kv_cache_gb_per_request: float
    kv_cache_gb: float  # all `batch` requests at `context_len`
    serving_gb: float  # weights + KV cache for the batch, before runtime overheads
    method: str
    trainable_params_b: float
    bytes_per_trainable_param: float
    model_states_gb: float  # weights + gradients + optimizer, unsharded
    zero_stages: list[ZeroStageMemory]
    activations_gb: float  # per GPU at seq_len × micro_batch
    training_total_gb: float  # unsharded model states + activations of one GPU: the single-GPU figure

    @classmethod
    def _nested(cls):
        return {"zero_stages": ZeroStageMemory}
