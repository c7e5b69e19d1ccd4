"""Inputs and outputs of the speed tools: `training_time`, `inference_speed` and `precision_speedup`."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema, model_validator

from tools.schemas.common import MAX_INPUT_MAGNITUDE, ToolInput, ToolOutput, fit_layout

Method = Literal["full", "lora", "qlora", "freeze"]
TrainPrecision = Literal["fp32", "tf32", "bf16", "fp16", "fp8"]
#: the unit of a training speed the user measured (tools/speed/measured.py converts each into tokens/s)
TrainSpeedUnit = Literal["s_per_step", "steps_per_s", "samples_per_s", "tokens_per_s", "tokens_per_s_per_gpu",
                         "tflops_per_gpu"]  # fmt: skip
WeightPrecision = Literal["fp32", "bf16", "fp16", "fp8", "int8", "int4", "nf4"]
KvPrecision = Literal["fp32", "bf16", "fp16", "fp8", "int8"]
Framework = Literal["auto", "megatron", "torchtitan", "llm-foundry", "deepspeed", "hf"]

_EN_SCALE = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}
_ZH_SCALE = {"万亿": 1e12, "千亿": 1e11, "百亿": 1e10, "亿": 1e8, "千万": 1e7, "百万": 1e6, "万": 1e4}
_TOKENS_RE = re.compile(
    r"^\s*(\d+(?:\.\d+)?(?:e\+?\d+)?)\s*([kmbgt]|万亿|千亿|百亿|亿|千万|百万|万)?\s*(?:个?tokens?|词元)?\s*$", re.I
)


def _mantissa(digits: int) -> str:
    """1 to `digits` integer digits with up to 6 decimals, or 0.001 to 0.999…"""
    return rf"(?:[1-9][0-9]{{0,{digits - 1}}}(?:\.[0-9]{{1,6}})?|0\.(?:[1-9]|0[1-9]|00[1-9])[0-9]{{0,3}})"


#: a token count written as a phrase, exactly the phrases `parse_token_count` reads: every match is between 1 and
#: 1e15 tokens (digits are capped per unit), so the JSON schema can promise that each one is accepted
TOKENS_PATTERN = (
    r"^ *(?:[1-9][0-9]{0,14}|[1-9][0-9]{0,2}(?:,[0-9]{3}){1,4}"  # 2000000000, 2,000,000,000
    r"|[1-9][0-9]{0,2}(?:\.[0-9]{1,6})?[eE]\+?(?:1[0-2]|[0-9])"  # 2e12, 15.6e12, 1.5E+12
    r"|[1-9](?:\.[0-9]{1,6})?[eE]\+?1[34]"  # 2e13, 1e14 (a pattern match never exceeds 1e15)
    rf"|{_mantissa(6)} ?(?:[kKmM]|万|百万|千万|亿)"  # 500M, 10亿
    rf"|{_mantissa(4)} ?(?:[bBgG]|百亿|千亿)"  # 1.5B
    rf"|{_mantissa(3)} ?(?:[tT]|万亿))"  # 2T, 2万亿
    r" *(?:个?[tT][oO][kK][eE][nN][sS]?|词元)? *$"
)
_TOKENS_FULL = re.compile(TOKENS_PATTERN)
_PHRASE_HELP = "write e.g. '2T', '500M', '10亿' or 2000000000"


def parse_token_count(value: int | float | str) -> int:
    """A token count from a number or a phrase: 2e12, "2T", "1B", "500M", "10亿", "2万亿" -> int.

    Raises ValueError (turned into InvalidInput naming `tokens`) for anything else or a count below 1.
    """
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"tokens must be a whole number such as 2000000000 or a phrase; {_PHRASE_HELP}")
    if isinstance(value, str):
        if not _TOKENS_FULL.fullmatch(value):
            raise ValueError(f"cannot read {value!r} as a token count of 1 to 1e15; {_PHRASE_HELP}")
        m = _TOKENS_RE.match(value.replace(",", ""))
        assert m is not None  # every TOKENS_PATTERN phrase is one the reader knows
        unit = (m.group(2) or "").lower()
        return round(float(m.group(1)) * (_ZH_SCALE.get(unit) or _EN_SCALE.get(unit) or 1.0))
    if isinstance(value, float) and not value.is_integer():
        raise ValueError("tokens must be a whole number")
    if not 1 <= value <= MAX_INPUT_MAGNITUDE:  # 0.5 or 1e-308 would round to 0 tokens and divide by zero
        raise ValueError(f"tokens must be at least 1 and at most {MAX_INPUT_MAGNITUDE:.0e}")
    return int(value)


#: a token count: a whole number, or a phrase (`TOKENS_PATTERN`); the bounds apply to numbers, the pattern to text
Tokens = Annotated[
    int,
    BeforeValidator(parse_token_count),
    WithJsonSchema(
        {"type": ["integer", "string"], "minimum": 1, "maximum": MAX_INPUT_MAGNITUDE, "pattern": TOKENS_PATTERN}
    ),
]


class TrainingTimeInput(ToolInput):
    """How long does a pretraining or fine-tuning run take, and how many GPU-hours?"""

    model: str = Field(description="Model name or size, e.g. 'Llama-2-7B', 'DeepSeek-V3', '37B', '700亿参数'.")
    gpu: str = Field(description="GPU name or alias, e.g. 'A100 80GB', 'H800', '910B'.")
    n_gpus: int = Field(1, ge=1, le=200_000, description="Total GPUs (data × tensor × pipeline parallel).")
    tokens: Tokens = Field(description="Training tokens: an integer or '2T', '1B', '500M', '10亿', '2万亿'.")
    method: Method = Field("full", description="full (pretrain / full fine-tune), lora, qlora or freeze.")
    precision: TrainPrecision = Field(
        "bf16", description="Compute precision of the matmuls: bf16, fp16, fp8, tf32, fp32."
    )
    seq_len: int = Field(4096, ge=1, le=10_000_000, description="Tokens per training sequence.")
    mfu: float | None = Field(
        None, gt=0, le=1, description="Model FLOPs utilisation to use; omitted: the calibrated default for this GPU."
    )
    grad_checkpointing: bool | None = Field(
        None,
        description="Full activation recomputation (one extra forward pass); omitted: the fit_training default "
        "(on for full/LoRA/QLoRA of models of 7B and more, QLoRA always), off for pretraining runs (over 50B tokens).",
    )
    tp: int = Field(1, ge=1, le=1024, description="Tensor-parallel size (best inside a node).")
    pp: int = Field(1, ge=1, le=1024, description="Pipeline-parallel stages.")
    nodes_fabric: str = Field(
        "ib-ndr", description="Fabric between nodes when n_gpus > 8: ib-ndr, ib-hdr, roce, roce-200, ethernet-100g, ..."
    )
    gpus_per_node: int = Field(8, ge=1, le=72, description="GPUs sharing one scale-up (NVLink/PCIe) domain.")
    global_batch_tokens: int = Field(
        4_194_304, ge=1, description="Tokens per optimizer step across all GPUs (Llama 1/2 used 4M)."
    )
    comm_overlap: float = Field(
        0.5, ge=0, le=1, description="Share of the data-parallel gradient traffic hidden behind backward compute."
    )
    zero_stage: int | None = Field(
        None,
        ge=0,
        le=3,
        description="Data-parallel sharding: 0-2 (DDP, ZeRO-1/2, Megatron's distributed optimizer: one gradient "
        "all-reduce's bytes per step) or 3 (ZeRO-3 / FSDP: parameters all-gathered for forward and backward and "
        "gradients reduce-scattered on every micro-step); omitted: 3 on torchtitan and llm-foundry (FSDP), else 0.",
    )
    shard_within_node: bool = Field(
        False, description="ZeRO-3 / FSDP sharded inside each node only (HSDP), gradients all-reduced across nodes."
    )
    micro_batch: int | None = Field(
        None,
        ge=1,
        le=100_000,
        description="Sequences per GPU per forward/backward (ZeRO-3 gathers the parameters once per micro-step); "
        "omitted: torchtitan runs each GPU's share of the global batch in one pass, other stacks 1 sequence "
        "with gradient accumulation (HF per_device_train_batch_size).",
    )
    lora_rank: int = Field(16, ge=1, le=4096, description="LoRA/QLoRA adapter rank r.")
    lora_targets: Literal["all-linear", "attention"] = Field(
        "all-linear", description="Linear layers given adapters: all of them, or the attention projections only."
    )
    trainable_layers: int = Field(2, ge=1, description="freeze: number of top layers left trainable.")
    framework: Framework = Field(
        "auto",
        description="Training stack: megatron (Megatron-LM, NeMo, Megatron-Bridge), torchtitan, llm-foundry, deepspeed, "
        "hf (transformers Trainer, LLaMA-Factory, axolotl), or auto. Sets its published FP8 efficiency and its "
        "checkpointing default.",
    )
    measured: float | None = Field(
        None, gt=0, description="A speed the user measured on this run, in measured_unit: judged against the estimate."
    )
    measured_unit: TrainSpeedUnit | None = Field(
        None, description="The unit of measured (a step holds global_batch_tokens tokens)."
    )

    @model_validator(mode="after")
    def _parallel(self) -> TrainingTimeInput:
        if (self.measured is None) != (self.measured_unit is None):  # half a measurement: nothing to judge, said
            given = "measured" if self.measured is not None else "measured_unit"
            self.note("measured_ignored", given, note=f"{given} was given without the other half "
                      "(measured and measured_unit go together), so no measured speed is judged")  # fmt: skip
            self.resolve(measured=None, measured_unit=None)
        fit_layout(self)
        if self.tp > self.gpus_per_node:
            self.note(
                "tensor_parallel_nodes",
                -(-self.tp // self.gpus_per_node),
                "nodes",
                f"tp {self.tp} is more than gpus_per_node {self.gpus_per_node}: the tensor-parallel "
                "all-reduces cross the nodes_fabric (slow; Megatron keeps tp inside a node)",
            )
        return self


class TrainingTimeOutput(ToolOutput):
    model: str
    gpu: str
    n_gpus: int
    tokens: int
    method: Method
    precision: TrainPrecision
    flops_per_token: float = Field(description="Model FLOPs per training token (MFU convention, no recompute).")
    total_flops: float
    hours: float
    days: float
    gpu_hours: float
    hours_low: float
    hours_high: float
    gpu_hours_low: float
    gpu_hours_high: float
    mfu: float = Field(description="End-to-end model FLOPs utilisation, communication included.")
    mfu_low: float
    mfu_high: float
    hfu: float = Field(description="Hardware FLOPs utilisation (counts recomputed FLOPs).")
    tokens_per_s: float
    tokens_per_s_per_gpu: float
    comm_share: float = Field(description="Share of step time spent in exposed (not overlapped) communication.")
    peak_tflops: float
    step_tokens: int = Field(0, description="Tokens per optimizer step across all GPUs (the global batch).")
    seconds_per_step: float = Field(0.0, description="Estimated wall-clock seconds per optimizer step.")
    # the user's measured speed (given `measured`), in the estimate's units, and its verdict
    measured_tokens_per_s: float | None = None
    measured_tokens_per_s_per_gpu: float | None = None
    measured_seconds_per_step: float | None = None
    measured_mfu: float | None = Field(None, description="The model FLOPs utilisation the measured speed implies.")
    measured_ratio: float | None = Field(None, description="Measured tokens/s over the estimate's.")
    measured_verdict: Literal["faster", "normal", "slow", "very_slow"] | None = None
    normal_tokens: int | None = Field(
        None,
        description="Tokens a step (a sample, for samples_per_s) would hold for the measured figure to run at "
        "the estimate's pace.",
    )


class InferenceSpeedInput(ToolInput):
    """How fast does a model generate on a GPU (decode tokens/s, prefill, time to first token)?"""

    model: str = Field(description="Model name or size, e.g. 'Llama-2-7B', 'Qwen2.5-72B', '70B'.")
    gpu: str = Field(description="GPU name or alias, e.g. 'A100 80GB', 'H20', '4090'.")
    n_gpus: int = Field(1, ge=1, le=64, description="GPUs serving one model replica (tensor parallel).")
    precision: WeightPrecision | None = Field(
        None,
        description="Weight precision: bf16, fp16, fp8, int8, int4 (nf4); omitted: the model's published "
        "precision (FP8 for DeepSeek-V3/R1 where the GPU has FP8), else bf16.",
    )
    kv_precision: KvPrecision = Field("bf16", description="KV-cache precision.")
    batch: int = Field(1, ge=1, le=100_000, description="Sequences decoded together.")
    context_len: int = Field(4096, ge=1, le=10_000_000, description="Average KV length read per decode step.")
    prompt_len: int | None = Field(
        None, ge=1, le=10_000_000, description="Prompt tokens for TTFT; omitted: context_len."
    )
    attention_kernel: Literal["grouped", "per-head"] = Field(
        "grouped",
        description="Decode attention kernel: grouped reads each KV head once per query group (FlashAttention, "
        "TensorRT-LLM XQA); per-head reads it again per query head (TensorRT-LLM before v0.8).",
    )
    output_len: int | None = Field(
        None,
        ge=1,
        le=10_000_000,
        description="Tokens each request generates: with batch > 1 the other requests' prefills run among the decode "
        "steps and lengthen the time per token; omitted: decode steps alone.",
    )
    eager: bool = Field(
        False,
        description="Eager PyTorch decode without CUDA graphs (transformers generate, LitGPT or gpt-fast without "
        "compile): the host launches every layer's kernels each step, and a small model waits on it; omitted: an "
        "engine that replays captured graphs (vLLM, SGLang, TensorRT-LLM).",
    )
    kernel: Literal["auto", "marlin", "torch"] = Field(
        "auto",
        description="Weight-only int4/int8 kernel family: marlin (vLLM's AWQ/GPTQ kernels), torch (gpt-fast, "
        "PyTorch tinygemm); auto: marlin on NVIDIA Ampere and newer, torch elsewhere. bf16/fp8/nf4 ignore it.",
    )
    bandwidth_efficiency: float | None = Field(
        None,
        gt=0,
        le=1,
        description="Achieved share of spec memory bandwidth; omitted: default by weight precision and kernel.",
    )
    compute_efficiency: float = Field(
        0.5, gt=0, le=1, description="Achieved share of dense peak in matmul-bound phases."
    )
    prefill_efficiency: float | None = Field(
        None,
        gt=0,
        le=1,
        description="Achieved share of dense peak in prefill; omitted: by compute precision (or compute_efficiency "
        "when that is given).",
    )


class InferenceSpeedOutput(ToolOutput):
    model: str
    gpu: str
    n_gpus: int
    precision: WeightPrecision
    batch: int
    context_len: int
    prompt_len: int
    decode_tokens_per_s: float = Field(description="Tokens per second for one sequence.")
    total_tokens_per_s: float = Field(description="Decode tokens per second over the whole batch.")
    tpot_ms: float = Field(description="Time per output token (one decode step), milliseconds.")
    prefill_tokens_per_s: float
    ttft_s: float = Field(description="Time to first token for one prompt of prompt_len tokens.")
    bound: Literal["memory", "compute"]
    bytes_per_step_gb: float = Field(description="Bytes read from memory per GPU per decode step, GB.")
    achieved_bandwidth_gb_s: float
    batch_requested: int | None = Field(
        None, description="The batch asked for, when more than fits (then `batch` is what fits)."
    )
    max_batch_that_fits: int | None = Field(
        None,
        description="Sequences of context_len that fit in memory on these GPUs (fit_inference's max_batch); 0: none.",
    )


# ---- Input and output of `precision_speedup`: one training run timed at two compute precisions.

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


class TrainingStepsInput(ToolInput):
    """How many optimizer steps a training run takes, from its samples and batch settings, and how a step or epoch
    count the user saw compares with it (which of their settings the gap equals)."""

    samples: int = Field(ge=1, description="Training samples (examples, rows, images) in the dataset.")
    epochs: float = Field(1, gt=0, le=100_000, description="Passes over the dataset (num_train_epochs).")
    micro_batch: int = Field(1, ge=1, le=1_000_000, description="Samples per GPU per forward pass.")
    grad_accum: int = Field(1, ge=1, le=1_000_000, description="Gradient accumulation steps.")
    n_gpus: int = Field(1, ge=1, le=1_000_000, description="Data-parallel GPUs (processes) training.")
    stated_steps: float | None = Field(None, gt=0, description="A total step count the user saw, to compare.")
    stated_epochs: float | None = Field(None, gt=0, description="An epoch count the user saw, to compare.")


class StepsFactor(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str  # the setting the gap equals: grad_accum, n_gpus, micro_batch, epochs
    value: float


class TrainingStepsOutput(ToolOutput):
    samples: int
    epochs: float
    micro_batch: int
    grad_accum: int
    n_gpus: int
    global_batch: int  # micro_batch × grad_accum × n_gpus: samples per optimizer step
    batches_per_epoch: int  # ⌈samples ÷ (micro_batch × n_gpus)⌉: forward passes per GPU per epoch
    steps_per_epoch: int  # batches_per_epoch ÷ grad_accum, rounded down (at least 1), as the HF Trainer counts
    total_steps: int  # steps_per_epoch × epochs, rounded up
    stated_steps: float | None = None
    stated_epochs: float | None = None
    agrees: bool | None = None  # the stated figure within 5% of the computed one
    ratio: float | None = None  # stated ÷ computed
    factors: list[StepsFactor] = Field(default_factory=list)  # settings the ratio (or its inverse) equals
    implied_global_batch: float | None = None  # samples × epochs ÷ stated steps: the batch the stated count implies
