"""Input and output of `precision_speedup`: one training run timed at two compute precisions."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tools.schemas.common import ToolInput, ToolOutput

TrainPrecision = Literal["fp32", "tf32", "bf16", "fp16", "fp8"]


class PrecisionSpeedupInput(ToolInput):
    """The run (as for `training_time`) and the two precisions to compare."""

    model: str = Field(description="Model name or size, e.g. 'Llama-3-8B', '70B'.")
    gpu: str = Field(description="GPU name or alias; FP8 needs FP8 tensor cores (Hopper or newer).")
    n_gpus: int = Field(8, ge=1, le=200_000, description="Total GPUs (data × tensor × pipeline parallel).")
    tokens: int = Field(1_000_000_000, ge=1, description="Training tokens.")
    method: Literal["full", "lora", "qlora", "freeze"] = Field("full", description="full, lora, qlora or freeze.")
    seq_len: int = Field(4096, ge=1, le=10_000_000, description="Tokens per training sequence.")
    precision: TrainPrecision = Field("fp8", description="The faster precision to try.")
    baseline: TrainPrecision = Field("bf16", description="The precision it is compared with.")


class PrecisionTime(BaseModel):
    model_config = ConfigDict(frozen=True)

    precision: str
    hours: float
    gpu_hours: float
    mfu: float
    tokens_per_s: float


class PrecisionSpeedupOutput(ToolOutput):
    model: str
    gpu: str
    n_gpus: int
    tokens: int
    baseline: PrecisionTime
    faster: PrecisionTime
    speedup: float  # baseline hours / faster hours
    peak_ratio: float | None  # peak TFLOPS of `precision` / peak of `baseline` (dense)
    hours_saved: float
