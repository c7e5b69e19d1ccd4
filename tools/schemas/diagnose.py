"""Input and output of `diagnose`: a setup and the evidence from a log -> causes with arithmetic and the flag to set.

The setup is what a launch command or a config says (model, GPUs, framework, parallelism, precision, lengths,
batch, flags); the evidence is what the log shows (the allocation that failed and the memory figures, an error
kind, a measured speed). Memory figures from PyTorch and vLLM logs are GiB (2^30 bytes), as those logs print.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tools.schemas.common import ToolInput, ToolOutput

Framework = Literal[
    "vllm", "sglang", "tgi", "lmdeploy", "deepspeed", "pytorch", "llamafactory", "transformers", "accelerate", "ollama",
    "llama.cpp", "torch_npu", "other",
]  # fmt: skip
ErrorKind = Literal[
    "oom", "kv_too_small", "no_cache_memory", "heads_not_divisible", "weights_oom", "load_oom", "host_oom",
    "nccl_timeout", "nccl_error", "unsupported_precision", "too_many_tokens", "crash", "slow", "other",
]  # fmt: skip
Symptom = Literal[
    "multi_gpu_slower", "low_gpu_util", "slow", "engine_memory", "other_process", "hang", "logits", "cpu_fallback",
    "one_gpu_used", "silent_exit", "concurrency", "merge_export", "serial", "uneven_growth", "busy_low_power",
]  # fmt: skip
CAUSES = (
    "weights_exceed_memory", "kv_pool_too_small", "memory_utilization_setting", "other_process_memory",
    "tp_not_divisible", "optimizer_states_unsharded", "zero_stage_buffers", "needs_offload", "activations_too_large",
    "logits_memory", "fragmentation", "load_time_peak", "host_ram", "precision_unsupported", "p2p_or_interconnect",
    "communication_bound", "compute_or_config_slow", "dataloader_bound", "nccl_timeout_or_env",
    "batch_or_concurrency_too_high", "requests_not_batched", "layer_split_headroom", "loaded_in_fp32", "version_or_bug",
)  # fmt: skip
Cause = Literal[CAUSES]


class DiagnoseInput(ToolInput):
    """Why did it break (or run slow)? The setup and what the log shows -> the causes, with arithmetic."""

    model: str | None = Field(None, description="Model name or size ('Qwen2.5-72B', '7B'); omitted: not known.")
    gpu: str | None = Field(None, description="GPU name or alias ('A100 80GB', '4090'); omitted: not known.")
    n_gpus: int = Field(1, ge=1, le=100_000, description="GPUs the job runs on.")
    framework: Framework | None = Field(None, description="What ran: vllm, sglang, deepspeed, pytorch, llamafactory, …")
    workload: Literal["train", "infer"] | None = Field(
        None, description="Training or serving; omitted: from the framework (vLLM/SGLang serve, others train)."
    )
    method: Literal["full", "lora", "qlora", "freeze"] = Field("full", description="Training method.")
    precision: Literal["fp32", "bf16", "fp16", "fp8", "int8", "int4", "nf4"] | None = Field(
        None, description="Weight / compute precision; omitted: bf16."
    )
    kv_precision: Literal["bf16", "fp16", "fp8"] | None = Field(None, description="KV-cache precision (serving).")
    tp: int | None = Field(None, ge=1, le=1024, description="Tensor-parallel size (vLLM --tensor-parallel-size).")
    pp: int = Field(1, ge=1, le=1024, description="Pipeline-parallel size.")
    zero_stage: int | None = Field(None, ge=0, le=3, description="DeepSpeed ZeRO stage; omitted: none (DDP).")
    offload: Literal["none", "optimizer", "optimizer+params"] = Field("none", description="ZeRO offload.")
    seq_len: int | None = Field(None, ge=1, le=10_000_000, description="Training tokens per sequence (cutoff_len).")
    micro_batch: int = Field(1, ge=1, le=100_000, description="Sequences per GPU per step.")
    grad_accum: int = Field(1, ge=1, le=100_000, description="Gradient accumulation steps.")
    samples: int | None = Field(None, ge=1, le=10**12, description="Training samples in the dataset (with the steps).")
    epochs: float | None = Field(None, gt=0, le=100_000, description="Passes over the dataset (num_train_epochs).")
    stated_steps: float | None = Field(None, gt=0, le=10**12, description="A step count the log or user states.")
    stated_epochs: float | None = Field(None, gt=0, le=10**7, description="An epoch count the log or user states.")
    expected_steps: float | None = Field(None, gt=0, le=10**12, description="The step count the user worked out.")
    grad_checkpointing: bool | None = Field(None, description="Gradient checkpointing; omitted: the trainer's default.")
    max_model_len: int | None = Field(None, ge=1, le=10_000_000, description="vLLM --max-model-len / SGLang context.")
    gpu_memory_utilization: float | None = Field(
        None, gt=0, le=1, description="vLLM --gpu-memory-utilization / SGLang --mem-fraction-static."
    )
    max_num_seqs: int | None = Field(None, ge=1, le=1_000_000, description="vLLM --max-num-seqs.")
    max_num_batched_tokens: int | None = Field(None, ge=1, le=10_000_000, description="vLLM --max-num-batched-tokens.")
    enforce_eager: bool = Field(False, description="vLLM --enforce-eager (no CUDA graphs).")
    flags: str | None = Field(
        None,
        max_length=20_000,
        description="Other flags read from the command or config: 'name=value' items separated by spaces or commas.",
    )
    tried: str | None = Field(
        None,
        max_length=2_000,
        description="Settings the asker says they already tried and saw fail: 'name=value' items (diagnose field "
        "names, e.g. 'tp=2'); a fix does not propose them again as they were.",
    )
    # ---- evidence
    error_kind: ErrorKind | None = Field(None, description="What the log reports.")
    failed_alloc_gib: float | None = Field(None, gt=0, le=1e6, description="'Tried to allocate X GiB': X, in GiB.")
    failed_alloc_gb: float | None = Field(
        None,
        gt=0,
        le=1e6,
        description="The same allocation in GB (10^9 bytes); failed_alloc_gib wins when both are given.",
    )
    capacity_gib: float | None = Field(None, gt=0, le=1e6, description="'total capacity of X GiB', GiB.")
    allocated_gib: float | None = Field(None, ge=0, le=1e6, description="Allocated by PyTorch, GiB.")
    reserved_gib: float | None = Field(None, ge=0, le=1e6, description="Reserved by PyTorch (total), GiB.")
    free_gib: float | None = Field(None, ge=0, le=1e6, description="Free on the device, GiB.")
    process_gib: float | None = Field(None, ge=0, le=1e6, description="Memory this process holds, GiB.")
    used_gb: float | None = Field(None, gt=0, le=1e6, description="Memory the user says the run takes, GB.")
    other_process_gib: float | None = Field(None, ge=0, le=1e6, description="Memory other processes hold, GiB.")
    heads_reported: int | None = Field(None, ge=1, le=100_000, description="Attention heads the error message names.")
    cuda_runtime_oom: bool = Field(False, description="'CUDA error: out of memory' without 'Tried to allocate'.")
    quant_misaligned: bool = Field(
        False, description="The engine refused: quantized weights not aligned with the tensor-parallel size."
    )
    layers_on_gpu: int | None = Field(None, ge=0, le=100_000, description="Layers a local runtime put on the GPU.")
    layers_total: int | None = Field(None, ge=1, le=100_000, description="The model's layers (llama.cpp / Ollama).")
    gpu_layers_unset: bool = Field(
        False, description="A llama.cpp command that sets no -ngl / --n-gpu-layers: its layers stay on the CPU."
    )
    required_gib: float | None = Field(
        None, gt=0, le=1e6, description="Memory a local runtime says a full GPU offload needs (Ollama), GiB."
    )
    symptom: Symptom | None = Field(None, description="The trouble the user describes in words, without a figure.")
    vision_inputs: bool = Field(False, description="Images or video in the training data (their tokens count).")
    layer_split: bool = Field(
        False, description="The model is split by layers across GPUs (device_map='auto', naive model parallel)."
    )
    unsupported: Literal["bf16", "fp8", "flash_attn"] | None = Field(
        None, description="What the error says the card does not support."
    )
    kv_tokens_reported: int | None = Field(
        None, ge=0, le=100_000_000, description="Tokens vLLM says its KV pool holds."
    )
    measured_tokens_per_s: float | None = Field(None, gt=0, le=1e9, description="Measured throughput, tokens/s.")
    single_gpu_tokens_per_s: float | None = Field(None, gt=0, le=1e9, description="The same job on one GPU, tokens/s.")
    gpu_util_percent: float | None = Field(None, ge=0, le=100, description="GPU-Util from nvidia-smi, %.")
    p2p: bool | None = Field(
        None, description="Peer-to-peer between the GPUs; omitted: from the card (none on GeForce)."
    )
    host_ram_gb: float | None = Field(None, gt=0, le=1e6, description="Host RAM per node the user has, GB.")
    swap_gb: float | None = Field(None, ge=0, le=1e6, description="Swap beside it, GB.")
    preference: Literal["dpo", "kto", "ppo", "orpo", "simpo"] | None = Field(
        None, description="Preference stage (reference/reward models loaded beside the policy)."
    )
    engine_build: bool = Field(False, description="Building an inference engine (TensorRT-LLM convert + build).")


class Fix(BaseModel):
    model_config = ConfigDict(frozen=True)
    flag: str  # the flag or setting, as the framework spells it
    value: str | int | float | bool


class CauseOut(BaseModel):
    """One cause: the arithmetic that reproduces the evidence (or says why it is likely), the fix and its cost."""

    model_config = ConfigDict(frozen=True)
    cause: str
    arithmetic: str  # English, every figure computed here
    arithmetic_zh: str
    matches_evidence: bool  # its figure agrees with the log's (within MATCH_TOLERANCE) or the error names it
    #: earned the answer's lead: a failure or slowness is reported and this cause's arithmetic from the asker's setup
    #: reproduces it, or the evidence names it; otherwise it is a thing to check, not "the cause"
    leads: bool = False
    figure_gib: float | None = None  # the size this cause predicts, GiB, where it has one
    error_pct: float | None = None  # |predicted − reported| ÷ reported × 100
    fix: Fix
    cost: str
    cost_zh: str
    explanation: str
    explanation_zh: str


class DiagnoseOutput(ToolOutput):
    framework: str | None
    workload: Literal["train", "infer"] | None
    causes: list[CauseOut]
    #: what the calculators predict with the first cause's fix applied (tool, change, figures)
    after_fix: dict[str, str | int | float | bool | None]
    #: the estimate for the setup as given said it fits, but the log shows it failed: the log wins
    contradicts_estimate: bool
    estimate: dict[str, str | int | float | bool | None]
    unread: list[str]  # flags read but not understood
    #: a measured speed against the estimate for the setup (tools/speed/measured.py): measured_tokens_per_s,
    #: expected_tokens_per_s, ratio_pct, verdict (high, normal, low, very_low), bound; empty when none was measured
    speed: dict[str, str | int | float | None] = {}
    #: the run's optimizer steps from its samples and batch settings against a count the user saw
    #: (tools/speed/steps.py): global_batch, steps_per_epoch, total_steps, stated, ratio, agrees, factor, implied_batch;
    #: empty when no samples were given
    steps: dict[str, str | int | float | bool | None] = {}

    @classmethod
    def _nested(cls):
        return {"causes": CauseOut}
