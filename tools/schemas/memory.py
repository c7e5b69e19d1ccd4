"""Inputs and outputs of the memory tools: `fit_training`, `fit_inference` and `model_memory`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tools.errors import InvalidInput
from tools.schemas.architecture import ModelRef, resolve_model
from tools.schemas.common import ToolInput, ToolOutput, fit_layout, when
from tools.schemas.plan import SharedCard

TrainFramework = Literal["auto", "hf", "unsloth", "torchtitan", "torchtune", "megatron", "deepspeed", "llm-foundry"]
QuantStorage = Literal["auto", "uint8", "bf16", "fp16", "fp32"]
LossImpl = Literal["auto", "fused", "fp32_upcast", "chunked"]

Method = Literal["full", "lora", "qlora", "freeze"]
Objective = Literal["sft", "dpo", "orpo", "kto", "ppo", "grpo", "rloo", "reinforce++", "dapo", "gspo"]
TrainPrecision = Literal["fp32", "bf16", "fp16", "fp8"]
Optimizer = Literal["adamw", "adamw8bit", "paged_adamw", "paged_adamw8bit", "sgd", "adafactor"]
Offload = Literal["none", "optimizer", "optimizer+params"]
WeightPrecision = Literal["fp32", "bf16", "fp16", "fp8", "int8", "int4", "nf4"]
KvPrecision = Literal["fp32", "bf16", "fp16", "fp8", "int8"]


class FitTrainingInput(ToolInput):
    """Will a training or fine-tuning run fit in GPU memory?"""

    model: ModelRef = Field(
        description="Model name or size, e.g. 'Llama-3-70B', 'Qwen2.5-7B', '70B', '700亿参数' (or its architecture)."
    )
    gpu: str = Field(description="GPU name or alias, e.g. 'A100 80GB', 'H800', '4090D', '910B'.")
    method: Method = Field("full", description="full fine-tune/pretrain, lora, qlora (NF4 base) or freeze.")
    n_gpus: int = Field(
        1,
        ge=1,
        le=100_000,
        description="Total GPUs (data × tensor × pipeline parallel); not a "
        "multiple of tp × pp: sized for whole tp × pp groups.",
    )
    precision: TrainPrecision = Field("bf16", description="bf16/fp16/fp8 mixed precision, or pure fp32.")
    optimizer: Optimizer = Field(
        "adamw",
        description="Optimizer whose states are kept per trainable parameter (adamw8bit: 8-bit states; paged_*: "
        "bitsandbytes' paged optimizers, whose states spill to CPU RAM instead of running out of GPU memory).",
    )
    zero_stage: int | None = Field(
        None, ge=0, le=3, description="DeepSpeed ZeRO stage 0–3; omitted: the lowest stage that fits."
    )
    offload: Offload = Field(
        "none",
        description="ZeRO-Offload of optimizer states (needs ZeRO 1+), or optimizer and parameters (needs ZeRO-3).",
    )
    seq_len: int = Field(2048, ge=1, le=10_000_000, description="Tokens per sequence.")
    micro_batch: int = Field(1, ge=1, le=100_000, description="Sequences per GPU per step.")
    grad_checkpointing: bool | None = Field(
        None,
        description="Full activation recomputation per layer; omitted: on for full, LoRA and QLoRA "
        "training of models of 7B and more (as LLaMA-Factory, PEFT and DeepSpeed/FSDP recipes do), off otherwise.",
    )
    flash_attention: bool = Field(True, description="Memory-efficient attention (no s² score matrix).")
    tp: int = Field(1, ge=1, le=1024, description="Tensor-parallel size.")
    pp: int = Field(1, ge=1, le=1024, description="Pipeline-parallel stages.")
    lora_rank: int = Field(16, ge=1, le=4096, description="LoRA/QLoRA adapter rank r.")
    lora_targets: Literal["all-linear", "attention"] = Field(
        "all-linear", description="Linear layers given adapters: all of them, or the attention projections only."
    )
    adapter_precision: Literal["fp32", "bf16"] = Field(
        "fp32", description="LoRA/QLoRA adapter dtype: fp32 (PEFT default) or bf16 (QLoRA paper)."
    )
    trainable_layers: int = Field(2, ge=1, description="freeze: number of top layers left trainable.")
    activation_factor: float | None = Field(
        None,
        gt=0,
        le=10,
        description="Framework factor on Korthikanti activations; omitted: by framework (1.0 Megatron, torchtitan, "
        "torchtune, llm-foundry, Unsloth; 1.3 eager PyTorch stacks: the HF Trainer, DeepSpeed, LitGPT).",
    )
    usable_fraction: float = Field(
        1.0,
        gt=0.1,
        le=1.0,
        description="Share of the reported capacity the run may use; 1.0: the breakdown already "
        "counts the CUDA context and NCCL buffers, and allocator fragmentation is in the verdict's uncertainty band.",
    )
    cuda_context_gb: float = Field(
        1.0, ge=0, le=10, description="CUDA context per GPU process, GB (0.5–2 in practice)."
    )
    framework: TrainFramework = Field(
        "auto",
        description="Training stack: sets the loss implementation (logits memory) and, for QLoRA, the dtype of the "
        "unquantised embeddings: auto/hf (PEFT), unsloth, torchtitan, megatron, deepspeed, llm-foundry.",
    )
    objective: Objective = Field(
        "sft",
        description="Training objective: sft; dpo and kto (a frozen reference model, none with LoRA/QLoRA; dpo: chosen "
        "+ rejected per sample), orpo (chosen + rejected, no reference), ppo (reference, reward and a trained value "
        "model), grpo, rloo and reinforce++ (a reference for the KL term, no value model; micro_batch counts completions, as TRL's "
        "per_device_train_batch_size does), dapo and gspo (as grpo without a reference: no KL term).",
    )
    quant_storage: QuantStorage = Field(
        "auto",
        description="QLoRA: bnb_4bit_quant_storage, the dtype the packed 4-bit weights are stored in. uint8 "
        "(bitsandbytes' default): DeepSpeed ZeRO-3 does not shard the quantised base, every GPU holds all of it; "
        "bf16/fp16/fp32: ZeRO-3 and FSDP shard it (same bytes; FSDP-QLoRA needs it: bf16). auto: uint8.",
    )
    loss_impl: LossImpl = Field(
        "auto",
        description="Cross-entropy over the vocabulary: fused (fp32 logits + a bf16 copy), fp32_upcast (every "
        "logit upcast and kept for backward), chunked (Unsloth/Liger/torchtune: never all logits at once); auto: the "
        "framework's.",
    )

    @classmethod
    def schema_rules(cls) -> dict[str, Any]:
        return {
            "offload": when(
                "offload",
                ["optimizer+params"],
                {"properties": {"zero_stage": {"enum": [3, None]}}},
                when("offload", ["optimizer"], {"properties": {"zero_stage": {"not": {"enum": [0]}}}}),
            ),
            "method": when("method", ["qlora"], {"properties": {"precision": {"not": {"enum": ["fp32"]}}}}),
        }

    @model_validator(mode="after")
    def _consistent(self) -> FitTrainingInput:
        if self.offload == "optimizer+params" and self.zero_stage not in (None, 3):
            raise InvalidInput(
                "Offloading parameters needs ZeRO stage 3.",
                "参数卸载（offload params）需要 ZeRO-3。",
                field="zero_stage",
            )
        if self.offload != "none" and self.zero_stage == 0:
            raise InvalidInput(
                "ZeRO-Offload needs ZeRO stage 1 or higher.", "ZeRO-Offload 需要 ZeRO 1 级或以上。", field="zero_stage"
            )
        if self.method == "qlora" and self.precision == "fp32":
            raise InvalidInput(
                "QLoRA computes in bf16/fp16, not fp32.", "QLoRA 以 bf16/fp16 计算，不支持 fp32。", field="precision"
            )
        resolve_model(self)
        fit_layout(self)
        return self


class VerdictFields(BaseModel):
    """The three-way verdict (tools/memory/verdict.py): one convention for training and serving."""

    verdict: Literal["fits", "tight", "does not fit"]
    margin_gb: float  # usable − process total; negative: over
    uncertainty_gb: float  # ± band around the estimate; |margin| inside it is "tight"
    allocator_peak_gb: float  # tensors at the peak: what torch.cuda.max_memory_allocated and published tables report
    process_total_gb: float  # allocator peak + CUDA context + NCCL buffers: what nvidia-smi shows (= per_gpu_gb)


class Suggestion(BaseModel):
    """One change that makes the run fit, with what it would need per GPU."""

    model_config = ConfigDict(frozen=True)

    change: str  # stable key: "qlora", "lora", "zero3", "offload_optimizer", "grad_checkpointing", ...
    description_en: str
    description_zh: str
    per_gpu_gb: float
    fits: bool
    n_gpus: int
    gpu: str
    settings: dict[str, str | int | float | bool] = Field(default_factory=dict)


class FitTrainingOutput(VerdictFields, ToolOutput):
    model: str
    gpu: str
    method: Method
    objective: Objective = "sft"
    n_gpus: int
    fits: bool
    per_gpu_gb: float
    capacity_gb: float
    usable_gb: float
    #: the same usable memory in GiB where the card's advertised size is binary (NVIDIA's "24 GB" = 24 GiB), else None
    usable_gib: float | None = None
    shortfall_gb: float  # 0 when it fits
    headroom_gb: float  # usable − per_gpu (negative when it does not fit)
    breakdown_gb: dict[str, float]
    zero_stage: int
    host_ram_gb: float  # per node, for offload
    trainable_params_b: float
    total_params_b: float
    bytes_per_param_states: float  # weight + gradient + optimizer bytes per trainable parameter
    min_gpus: int | None  # None: does not fit at any count we consider
    min_gpus_zero_stage: int | None
    suggestions: list[Suggestion]
    #: per-GPU GB that no GPU count removes: activations, logits, gathered ZeRO-3 blocks, CUDA context, NCCL
    unshardable_gb: float = 0.0
    #: why min_gpus is None: "activations" (they alone exceed a card), "unshardable" (with the gathered blocks,
    #: context and NCCL buffers), "max_count" (beyond the largest count considered); None when some count fits
    min_gpus_blocker: Literal["activations", "unshardable", "max_count"] | None = None

    @classmethod
    def _nested(cls):
        return {"suggestions": Suggestion}

    #: one line when a default (gradient checkpointing) decides the verdict, e.g. "关闭重计算则放不下：…"
    default_note_en: str | None = None
    default_note_zh: str | None = None
    #: per-GPU GB with the other checkpointing setting, when that changes the verdict (the figure in the note)
    default_other_gb: float | None = None


class FitInferenceInput(ToolInput):
    """Will a model serve from GPU memory, and at what batch?"""

    model: ModelRef = Field(description="Model name or size, e.g. 'Qwen2.5-72B', '70B' (or its architecture).")
    gpu: str = Field(description="GPU name or alias, e.g. 'H20', 'A100 80GB', '4090'.")
    n_gpus: int = Field(1, ge=1, le=100_000, description="GPUs serving one replica (tensor × pipeline parallel).")
    precision: WeightPrecision | None = Field(
        None,
        description="Weight precision: bf16/fp16, fp8, int8, int4 (AWQ/GPTQ), nf4; omitted: the model's published "
        "precision (FP8 for DeepSeek-V3/R1 where the GPU has FP8), else bf16.",
    )
    kv_precision: KvPrecision | None = Field(None, description="KV-cache precision; omitted: bf16 (fp16 for fp16).")
    engine: Literal["vllm", "sglang", "trt-llm", "lmdeploy", "hf"] = Field(
        "vllm",
        description="Serving stack: the engines preallocate a paged KV cache; hf (transformers generate) grows it a "
        "token at a time, and the allocator then holds about twice the live cache.",
    )
    batch: int = Field(1, ge=1, le=1_000_000, description="Concurrent sequences.")
    context_len: int | None = Field(None, ge=1, le=10_000_000, description="Tokens per sequence (prompt + output).")
    usable_fraction: float = Field(0.9, gt=0.1, le=1.0, description="vLLM's gpu_memory_utilization default is 0.9.")
    cuda_context_gb: float = Field(
        1.0, ge=0, le=10, description="CUDA context per GPU process, GB (0.5–2 in practice)."
    )
    host_ram_gb: float | None = Field(
        None, gt=0, le=1e6, description="Host RAM for a CPU+GPU hybrid run (KTransformers, llama.cpp), GB."
    )
    host_bandwidth_gb_s: float | None = Field(
        None, gt=0, le=1e5, description="Host memory bandwidth, GB/s; omitted: 8 channels of DDR5-4800."
    )
    loader: Literal["vllm", "hf", "llamacpp"] | None = Field(
        None,
        description="With it, the host RAM per node to load and serve (vLLM: checkpoint through the page cache + "
        "swap space + CPU offload; hf: from_pretrained copies; llamacpp: the mapped GGUF file) and the disk.",
    )
    alongside: list[str] | None = Field(
        None, max_length=7, description="Other models served on the same GPUs at once (own engines)."
    )

    @model_validator(mode="after")
    def _model(self) -> FitInferenceInput:
        resolve_model(self)
        return self


class HybridRow(BaseModel):
    """One weight format of a CPU+GPU hybrid run: where the weights sit, whether VRAM + RAM hold them, and the
    decode speed bound (GPU part over GPU bandwidth + RAM part over host bandwidth)."""

    model_config = ConfigDict(frozen=True)
    format: str
    bits_per_weight: float
    weights_gb: float
    gpu_gb: float
    ram_gb: float
    fits: bool
    decode_tokens_per_s: float | None = Field(
        None, description="Decode bound, tokens/s; None where the card has no published memory bandwidth."
    )


class ServingHostRam(BaseModel):
    """Host RAM per node for serving (tools/memory/serving_host.py), by term and phase, and the checkpoint's disk."""

    model_config = ConfigDict(frozen=True)
    loader: str
    per_node_gb: float  # the larger phase
    peak_phase: str
    terms_gb: dict[str, float]
    phases_gb: dict[str, float]
    disk_gb: float
    gpus_per_node: int
    nodes: int


class FitInferenceOutput(VerdictFields, ToolOutput):
    model: str
    gpu: str
    n_gpus: int
    tp: int
    pp: int
    fits: bool
    per_gpu_gb: float
    capacity_gb: float
    usable_gb: float
    #: as in FitTrainingOutput
    usable_gib: float | None = None
    shortfall_gb: float
    headroom_gb: float
    breakdown_gb: dict[str, float]
    kv_cache_bytes_per_token: float
    kv_cache_gb_per_sequence: float
    context_len: int
    batch: int
    min_gpus: int | None
    max_batch: int  # at this context on these GPUs (0: weights alone do not fit)
    max_context: int  # at this batch on these GPUs
    #: with host_ram_gb: the CPU+GPU hybrid run at each format (tools/memory/hybrid.py), largest first
    hybrid: list[HybridRow] = Field(default_factory=list)
    host_bandwidth_gb_s: float | None = None
    #: with loader: the host RAM per node to load and serve, and the disk (tools/memory/serving_host.py)
    host_ram: ServingHostRam | None = None
    #: with alongside: this model and the others on the same cards, summed (tools/memory/capacity.py shared_card)
    shared: SharedCard | None = None

    @classmethod
    def _nested(cls):
        return {"hybrid": HybridRow}


# ---- Input and output of `model_memory`: sizes that depend on the model alone, not on a GPU.

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
    lora_rank: int = Field(16, ge=1, le=4096, description="LoRA/QLoRA adapter rank.")
    lora_targets: Literal["all-linear", "attention"] = Field(
        "all-linear",
        description="Linear layers given adapters: all of them (every expert of a MoE, as PEFT's all-linear and "
        "LLaMA-Factory's 'all' do), or the attention projections only.",
    )


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
