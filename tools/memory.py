"""GPU memory for training: a per-GPU breakdown, fits or not, the minimum GPU count, what would fit.

Serving memory (`fit_inference`) is in `tools.serving`; both share the capacity and overhead conventions here.

Conventions (stated in every output's `assumptions`):
- Model states, mixed-precision AdamW: 16 bytes per trainable parameter (ZeRO paper, Rajbhandari et
  al. 2020, arXiv 1910.02054): bf16 weight 2 + bf16 gradient 2 + fp32 master 4 + Adam m 4 + v 4.
  Megatron keeps fp32 gradients (18 B); we use 16 and say so.
- Activations per layer (Korthikanti et al. 2022, arXiv 2205.05198), 16-bit:
  s·b·h·(c + 5·a·s/h) bytes, with c = 18 + 6·f/h for a SwiGLU MLP (34 when f = 8h/3) and
  18 + 4·f/h for a GELU MLP (34 when f = 4h). Flash attention drops the 5·a·s/h term; tensor
  parallel with sequence parallel divides by t; full recomputation keeps 2·s·b·h per layer plus
  one layer being recomputed. A framework factor scales it (Megatron ≈ 1, HF eager higher).
- Logits: b·s·V elements at 6 bytes (fp32 logits + a bf16 copy), divided by t (vocab-parallel).
- ZeRO stage k shards over the data-parallel degree d: 1 optimizer states, 2 + gradients,
  3 + parameters (plus two gathered layers in flight).
- One memory convention (tools/verdict.py): the process total (allocator peak + CUDA context + NCCL
  buffers) is compared once with the capacity the driver reports; fragmentation and estimate error form
  the ±10% band of the `tight` verdict.
- Gradient checkpointing defaults on for full, LoRA and QLoRA training of models of 7B and more (what
  LLaMA-Factory, PEFT and the DeepSpeed/FSDP examples do), off for smaller models and freeze-tuning.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from tools.architecture import ParamCount, check_parallel, param_count
from tools.catalog import get_gpu, get_model, gpus
from tools.errors import InvalidInput, Unsupported
from tools.gpu_spec import GpuSpec
from tools.model_spec import ModelSpec
from tools.schemas.common import assume
from tools.schemas.memory import (
    FitTrainingInput,
    FitTrainingOutput,
)
from tools.units import GB, GiB
from tools.verdict import convention_assumption, judge

GPUS_PER_NODE = 8
NCCL_BUFFERS_BYTES = 1.5 * GiB  # REFERENCE.md: ≈ 1.5 GiB allocated at the first collective
HOST_RAM_FACTOR = 1.5  # DeepSpeed's estimators: offloaded states × 1.5 of host RAM
NF4_BYTES = 0.5 + 0.127 / 8  # 4-bit weights + double-quantised constants (QLoRA paper, arXiv 2305.14314)
QLORA_UNQUANTISED_BYTES = 4.0  # embeddings/head after prepare_model_for_kbit_training (fp32)
INT4_GROUP_BYTES = 0.5 + 0.25 / 8  # AWQ/GPTQ group 128: fp16 scale + zero per 128 weights ≈ 0.25 bit
PREFILL_CHUNK_TOKENS = 8192  # tokens per scheduler step (vLLM chunked prefill budget)
MAX_COUNT = 1 << 17  # the largest GPU count min_gpus looks at

#: models at least this large get gradient checkpointing by default (full, LoRA, QLoRA); Llama-2-7B is 6.74B
CHECKPOINTING_MIN_PARAMS = 6.5e9

#: optimizer bytes per trainable parameter (states, without the fp32 master copy)
OPTIMIZER_STATE_BYTES = {"adamw": 8.0, "adamw8bit": 2.0, "sgd": 4.0, "adafactor": 0.0}


def default_checkpointing(method: str, total_params: float) -> bool:
    """Gradient checkpointing when the user did not say: on for full/LoRA/QLoRA at ≥ 7B, QLoRA always."""
    if method == "qlora":
        return True  # PEFT's prepare_model_for_kbit_training turns it on at every size
    return method in ("full", "lora") and total_params >= CHECKPOINTING_MIN_PARAMS


def capacity_bytes(gpu: GpuSpec) -> float:
    """What the driver reports: A100/H100 "80 GB" is 80 GiB (81,920 MiB in nvidia-smi)."""
    if gpu.memory_reported_gib:
        return gpu.memory_reported_gib * GiB
    return gpu.memory_gb * GB


@dataclass(frozen=True)
class _Train:
    """Resolved training settings: plain values, cheap to copy for what-if suggestions."""

    model: ModelSpec
    params: ParamCount
    method: str
    n_gpus: int
    precision: str
    optimizer: str
    zero_stage: int
    offload: str
    seq_len: int
    micro_batch: int
    grad_checkpointing: bool
    flash_attention: bool
    tp: int
    pp: int
    lora_rank: int
    lora_targets: str
    adapter_precision: str
    trainable_layers: int
    activation_factor: float
    cuda_context: float

    @property
    def dp(self) -> int:
        return self.n_gpus // (self.tp * self.pp)


def replace(c: _Train, **changes) -> _Train:
    """A copy of the settings with some changed (dataclasses.replace re-runs __init__: 5x slower here)."""
    new = object.__new__(_Train)
    state = dict(c.__dict__)
    state.update(changes)
    object.__setattr__(new, "__dict__", state)
    return new


def _lora_params(m: ModelSpec, p: ParamCount, rank: int, targets: str) -> int:
    """Adapter parameters: r·(in + out) for each adapted linear layer."""
    h, a, k, d = m.hidden_size, m.n_heads, m.n_kv_heads, m.head_dim
    attn = rank * ((h + a * d) * 2 + (h + k * d) * 2)  # q, o, k, v
    if targets == "attention":
        return m.n_layers * attn
    f = m.moe_ffn_size or m.ffn_size
    mats = 3 if m.mlp == "swiglu" else 2
    experts = (m.n_experts or 1) + (m.n_shared_experts or 0) if m.is_moe else 1
    return m.n_layers * (attn + mats * rank * (h + f) * experts)


def _trainable(c: _Train) -> tuple[float, float]:
    """(trainable parameters, frozen parameters)."""
    total = c.params.total
    if c.method == "full":
        return total, 0.0
    if c.method in ("lora", "qlora"):
        return float(_lora_params(c.model, c.params, c.lora_rank, c.lora_targets)), float(total)
    per_layer = c.params.layers_total / c.model.n_layers
    trainable = min(c.trainable_layers, c.model.n_layers) * per_layer
    return trainable, total - trainable


def _activation_coefficient(m: ModelSpec) -> float:
    """Korthikanti's 34, generalised to the model's MLP (and top-k experts for a MoE)."""
    f = m.moe_ffn_size or m.ffn_size
    per_ffn = 6 if m.mlp == "swiglu" else 4
    experts = ((m.experts_per_token or 1) + (m.n_shared_experts or 0)) if m.is_moe else 1
    return 18 + per_ffn * f * experts / m.hidden_size


def _base(c: _Train) -> dict[str, float]:
    """Per-GPU bytes before ZeRO sharding and offload (model states split by tp × pp only)."""
    m, p = c.model, c.params
    mp = c.tp * c.pp
    trainable, frozen = _trainable(c)
    compute_bytes = 4.0 if c.precision == "fp32" else 2.0
    master = 0.0 if c.precision == "fp32" else 4.0
    grad_bytes = 4.0 if c.precision == "fp32" else 2.0
    if c.method in ("lora", "qlora"):
        # adapters are kept in their own dtype and updated directly: no separate master copy
        compute_bytes = grad_bytes = 4.0 if c.adapter_precision == "fp32" else 2.0
        master = 0.0
    # weights: trainable in the compute precision (+ an fp8 copy for fp8 training), frozen as stored
    w_train = trainable * (compute_bytes + (1.0 if c.precision == "fp8" else 0.0))
    if c.method == "qlora":
        # bitsandbytes leaves the embeddings and the output head unquantised, and PEFT's
        # prepare_model_for_kbit_training casts every non-4-bit parameter to fp32
        embed = p.embedding
        w_frozen = (frozen - embed) * NF4_BYTES + embed * QLORA_UNQUANTISED_BYTES
    else:
        w_frozen = frozen * (4.0 if c.precision == "fp32" else 2.0)

    s, b, h, a = c.seq_len, c.micro_batch, m.hidden_size, m.n_heads
    coeff = _activation_coefficient(m) + (0 if c.flash_attention else 5 * a * s / h)
    per_layer_full = s * b * h * coeff * c.activation_factor / c.tp
    layers = m.n_layers if c.method != "freeze" else min(c.trainable_layers, m.n_layers)
    # 1F1B: the first stage holds pp micro-batches of L/pp layers each, i.e. L layers in all
    if c.grad_checkpointing:
        activations = layers * 2 * s * b * h / c.tp + per_layer_full
    else:
        activations = layers * per_layer_full
    return {
        "weights": (w_train + w_frozen) / mp,
        "gradients": trainable * grad_bytes / mp,
        "optimizer": trainable * (master + OPTIMIZER_STATE_BYTES[c.optimizer]) / mp,
        "activations": activations,
        "logits": b * s * m.vocab_size * 6.0 / c.tp,
        # current + prefetched block, gathered in the base weights' dtype (NF4 for QLoRA), not the adapters'
        "zero3_buffers": 2 * p.largest_layer * _gathered_bytes(c) / c.tp,
        "cuda_context": c.cuda_context,
    }


def _gathered_bytes(c: _Train) -> float:
    """Bytes per parameter of a ZeRO-3 gathered block: the frozen or compute dtype of the base weights."""
    if c.method == "qlora":
        return NF4_BYTES
    return 4.0 if c.precision == "fp32" else 2.0


def _assemble(base: dict[str, float], stage: int, dp: int, offload: str, n_gpus: int) -> tuple[dict[str, float], float]:
    """Per-GPU bytes by component at a ZeRO stage and data-parallel degree, and offloaded bytes per GPU."""
    weights, grads, optim = base["weights"], base["gradients"], base["optimizer"]
    if stage >= 1:
        optim /= dp
    if stage >= 2:
        grads /= dp
    if stage >= 3:
        weights /= dp
    host = 0.0
    if offload in ("optimizer", "optimizer+params"):
        host, optim = optim, 0.0
    if offload == "optimizer+params":
        host += weights + grads
        weights, grads = 0.0, 0.0
    parts = {
        "weights": weights,
        "gradients": grads,
        "optimizer": optim,
        "activations": base["activations"],
        "logits": base["logits"],
        "zero3_buffers": base["zero3_buffers"] if stage >= 3 else 0.0,
        "cuda_context": base["cuda_context"],
        "comm_buffers": NCCL_BUFFERS_BYTES if n_gpus > 1 else 0.0,
    }
    return parts, host


def _train_breakdown(c: _Train, base: dict[str, float] | None = None) -> tuple[dict[str, float], float]:
    """Per-GPU bytes by component, and host RAM per node for offload."""
    parts, host = _assemble(base or _base(c), c.zero_stage, c.dp, c.offload, c.n_gpus)
    return parts, host * min(c.n_gpus, GPUS_PER_NODE) * HOST_RAM_FACTOR


def _shardable(parts: dict[str, float], stage: int) -> float:
    """Bytes that shrink as 1/dp at this ZeRO stage (the rest is fixed per GPU)."""
    keys = {0: (), 1: ("optimizer",), 2: ("optimizer", "gradients"), 3: ("optimizer", "gradients", "weights")}[stage]
    return sum(parts[k] for k in keys)


def next_count(n: int) -> int:
    """The next GPU count people buy after n: doubling up to one 8-GPU node, then one more node."""
    return n * 2 if n < GPUS_PER_NODE else n + GPUS_PER_NODE


def _counts_from(n: int) -> int:
    """Round a GPU count up to what people buy: 1, 2, 4, 8, then whole 8-GPU nodes."""
    if n <= 1:
        return 1
    if n <= GPUS_PER_NODE:
        return 1 << math.ceil(math.log2(n))
    return math.ceil(n / GPUS_PER_NODE) * GPUS_PER_NODE


def _min_gpus(c: _Train, usable: float, base: dict[str, float]) -> tuple[int | None, int | None]:
    """Smallest GPU count (1, 2, 4, 8, whole nodes) where some ZeRO stage fits, and that stage.

    Per GPU = fixed + shardable / dp, so the count is solved directly rather than searched.
    """
    mp = c.tp * c.pp
    best: tuple[int, int] | None = None
    stages = (3,) if c.offload == "optimizer+params" else ((1, 2, 3) if c.offload != "none" else (0, 1, 2, 3))
    single = sum(_assemble(base, 0, 1, c.offload, mp)[0].values())
    for stage in stages:
        parts, _ = _assemble(base, stage, 1, c.offload, mp * 2)  # unsharded, with the multi-GPU buffers
        shard = _shardable(parts, stage)
        fixed = sum(parts.values()) - shard
        if single <= usable and (mp > 1 or stage == stages[0]):
            n = mp
        elif fixed >= usable:
            continue
        else:
            n = _counts_from(mp * max(2, math.ceil(shard / (usable - fixed))))
            while n % mp:
                n = next_count(n)
        if n <= MAX_COUNT and (best is None or n < best[0]):
            best = (n, stage)
    return best if best else (None, None)


def _resolve_train(inp: FitTrainingInput) -> tuple[_Train, GpuSpec, list[dict]]:
    model = get_model(inp.model)
    gpu = get_gpu(inp.gpu)
    check_parallel(model, inp.tp, inp.pp)
    if inp.n_gpus % (inp.tp * inp.pp):
        raise InvalidInput(
            f"n_gpus ({inp.n_gpus}) must be a multiple of tp × pp ({inp.tp} × {inp.pp}).",
            f"GPU 数量 {inp.n_gpus} 必须是 tp × pp（{inp.tp} × {inp.pp}）的整数倍。",
            field="n_gpus",
        )
    if inp.offload == "optimizer+params" and inp.zero_stage not in (None, 3):
        raise InvalidInput("Offloading parameters needs ZeRO stage 3.", "参数卸载（offload params）需要 ZeRO-3。", field="zero_stage")
    if inp.offload != "none" and inp.zero_stage == 0:
        raise InvalidInput("ZeRO-Offload needs ZeRO stage 1 or higher.", "ZeRO-Offload 需要 ZeRO 1 级或以上。", field="zero_stage")
    if inp.precision == "fp8" and not gpu.fp8_tflops:
        raise Unsupported(
            f"{gpu.name} has no FP8 tensor cores; choose bf16 or fp16.",
            f"{gpu.name} 不支持 FP8 张量计算，请改用 bf16 或 fp16。",
            field="precision",
        )
    if inp.method == "qlora" and inp.precision == "fp32":
        raise InvalidInput("QLoRA computes in bf16/fp16, not fp32.", "QLoRA 以 bf16/fp16 计算，不支持 fp32。", field="precision")
    params = param_count(model)
    c = _Train(
        model=model,
        params=params,
        method=inp.method,
        n_gpus=inp.n_gpus,
        precision=inp.precision,
        optimizer=inp.optimizer,
        zero_stage=inp.zero_stage if inp.zero_stage is not None else 0,
        offload=inp.offload,
        seq_len=inp.seq_len,
        micro_batch=inp.micro_batch,
        grad_checkpointing=default_checkpointing(inp.method, params.total) if inp.grad_checkpointing is None
        else inp.grad_checkpointing,
        flash_attention=inp.flash_attention,
        tp=inp.tp,
        pp=inp.pp,
        lora_rank=inp.lora_rank,
        lora_targets=inp.lora_targets,
        adapter_precision=inp.adapter_precision,
        trainable_layers=inp.trainable_layers,
        activation_factor=inp.activation_factor,
        cuda_context=inp.cuda_context_gb * GB,
    )
    given = inp.model_fields_set
    notes = {
        "method": {"full": "every weight trained", "lora": "LoRA adapters on a frozen 16-bit base",
                   "qlora": "LoRA adapters on a frozen NF4 base", "freeze": "only the top layers trained"}[inp.method],
        "precision": "mixed precision with an fp32 master copy" if inp.precision != "fp32" else "pure fp32",
        "optimizer": "AdamW",
        "offload": "no ZeRO-Offload",
        "seq_len": "tokens per sequence",
        "micro_batch": "sequences per GPU per step",
        "grad_checkpointing": _checkpointing_note(inp.method, c.grad_checkpointing, inp.grad_checkpointing is None),
        "flash_attention": "on: no s² attention-score matrix is stored",
        "tp": "tensor parallel size",
        "pp": "pipeline stages",
        "activation_factor": "1.0 = Megatron-LM; measured HF eager stacks need more",
        "usable_fraction": "share of the reported capacity the run may use (fragmentation is in the ±10% band)",
        "cuda_context_gb": "CUDA context per process (0.5–2 GiB in practice)",
    }
    if inp.method in ("lora", "qlora"):
        notes["lora_rank"] = "adapter rank r"
        notes["lora_targets"] = "which linear layers get adapters"
        notes["adapter_precision"] = "fp32 (PEFT's default) or bf16 (the QLoRA paper's setup)"
    if inp.method == "freeze":
        notes["trainable_layers"] = "top layers left trainable (LLaMA-Factory's default is 2)"
    units = {"seq_len": "tokens", "cuda_context_gb": "GB", "usable_fraction": "of capacity"}
    assumptions = [
        assume(k, value=c.grad_checkpointing if k == "grad_checkpointing" else getattr(inp, k), unit=units.get(k, ""),
               default=k not in given, note=v)
        for k, v in notes.items()
    ]
    if model.generic:
        assumptions.insert(0, assume("model_architecture", value=model.name, note=model.notes or ""))
    return c, gpu, assumptions


def _checkpointing_note(method: str, on: bool, defaulted: bool) -> str:
    if not defaulted:
        return "each layer's activations are recomputed in the backward pass" if on else "every layer's activations are kept"
    if method == "qlora":
        return "on by default: PEFT's prepare_model_for_kbit_training turns it on for QLoRA"
    if on:
        return ("on by default for full/LoRA training of models of 7B and more (LLaMA-Factory, PEFT and "
                "DeepSpeed/FSDP recipes); costs one extra forward pass in training time")
    return "off by default for models under 7B and for freeze-tuning: every layer's activations are kept"


def _auto_stage(c: _Train, usable: float, explicit: int | None, base: dict[str, float]) -> _Train:
    """The given ZeRO stage, or the lowest that fits (3 when none does); 0 on a single GPU."""
    if explicit is not None:
        return c
    low = 1 if c.offload == "optimizer" else 3 if c.offload == "optimizer+params" else 0
    if c.dp == 1:
        return replace(c, zero_stage=max(low, 0) if c.offload == "none" else low)
    for stage in range(low, 4):
        if sum(_assemble(base, stage, c.dp, c.offload, c.n_gpus)[0].values()) <= usable:
            return replace(c, zero_stage=stage)
    return replace(c, zero_stage=3)


def _total(c: _Train, base: dict[str, float] | None = None) -> float:
    return sum(_train_breakdown(c, base)[0].values())


@functools.cache
def _cards_by_capacity() -> tuple[tuple[float, int, str, GpuSpec], ...]:
    """Catalog GPUs by capacity (datacenter parts first at equal capacity): for "a bigger card"."""
    return tuple(sorted((capacity_bytes(g), g.segment != "datacenter", g.id, g) for g in gpus()))


def _suggest(c: _Train, gpu: GpuSpec, usable: float, min_gpus: int | None, base: dict[str, float]) -> list[dict]:
    """Single changes that make the run fit, each with its new per-GPU figure.

    Changes of ZeRO stage, offload, GPU count or card keep the unsharded breakdown (`base`); only
    method, optimizer and checkpointing changes need it recomputed.
    """
    out: list[dict] = []  # validated as `Suggestion`s with the output, in one pass

    def add(key: str, en: str, zh: str, trial: _Train, settings: dict, card: GpuSpec = gpu, same: bool = False) -> None:
        need = _total(trial, base if same else None)
        cap = capacity_bytes(card) * (usable / capacity_bytes(gpu))
        if need <= cap:
            out.append({"change": key, "description_en": en, "description_zh": zh, "per_gpu_gb": round(need / GB, 1),
                        "fits": True, "n_gpus": trial.n_gpus, "gpu": card.name, "settings": settings})

    if not c.grad_checkpointing:
        add("grad_checkpointing", "Turn on gradient checkpointing.", "开启梯度检查点（重计算）。",
            replace(c, grad_checkpointing=True), {"grad_checkpointing": True})
    if c.method == "full":
        add("lora", "Fine-tune with LoRA instead of all weights.", "改用 LoRA 微调，不训练全部权重。",
            replace(c, method="lora"), {"method": "lora"})
    if c.method in ("full", "lora", "freeze") and c.precision != "fp32":
        add("qlora", "Use QLoRA: an NF4-quantized base with LoRA adapters.", "改用 QLoRA：NF4 量化的底座加 LoRA 适配器。",
            replace(c, method="qlora", grad_checkpointing=True), {"method": "qlora", "grad_checkpointing": True})
    if c.optimizer == "adamw":
        add("adamw8bit", "Use bitsandbytes' 8-bit AdamW.", "改用 bitsandbytes 的 8-bit AdamW。",
            replace(c, optimizer="adamw8bit"), {"optimizer": "adamw8bit"})
    if c.dp > 1 and c.zero_stage < 3:
        add("zero3", "Shard parameters, gradients and optimizer states with ZeRO-3.", "用 ZeRO-3 切分参数、梯度和优化器状态。",
            replace(c, zero_stage=3), {"zero_stage": 3}, same=True)
    if c.offload == "none":
        add("offload_optimizer", "Offload optimizer states to CPU memory (ZeRO-Offload).", "把优化器状态卸载到 CPU 内存（ZeRO-Offload）。",
            replace(c, offload="optimizer", zero_stage=max(c.zero_stage, 2) if c.dp > 1 else max(c.zero_stage, 1)),
            {"offload": "optimizer"}, same=True)
        add("offload_params", "Offload optimizer states and parameters to CPU (ZeRO-3 Offload).", "把优化器状态和参数都卸载到 CPU（ZeRO-3 Offload）。",
            replace(c, offload="optimizer+params", zero_stage=3), {"offload": "optimizer+params", "zero_stage": 3},
            same=True)
    if min_gpus is not None and min_gpus > c.n_gpus:
        add("more_gpus", f"Use {min_gpus} GPUs with ZeRO-3.", f"增加到 {min_gpus} 张卡并使用 ZeRO-3。",
            replace(c, n_gpus=min_gpus, zero_stage=3), {"n_gpus": min_gpus, "zero_stage": 3}, same=True)
    need = _total(c, base)
    own, fraction = capacity_bytes(gpu), usable / capacity_bytes(gpu)
    card = next((g for cap, _, _, g in _cards_by_capacity() if cap > own and cap * fraction >= need), None)
    if card is not None:
        add("bigger_gpu", f"Use a card with more memory: {card.name}.", f"换用显存更大的卡：{card.name}。",
            c, {"gpu": card.name}, card=card, same=True)
    return out


def _assumption_states(c: _Train) -> dict:
    """Bytes per trainable parameter for weight + gradient + optimizer, with the convention used."""
    states = OPTIMIZER_STATE_BYTES[c.optimizer]
    if c.method in ("lora", "qlora"):
        w = 4 if c.adapter_precision == "fp32" else 2
        note = f"{c.adapter_precision} adapter weight {w} + gradient {w} + optimizer states {states:g}, no master copy"
        return assume("bytes_per_trainable_param", value=2 * w + states, unit="B/param", note=note)
    if c.precision == "fp32":
        return assume("bytes_per_trainable_param", value=8 + states, unit="B/param",
                      note=f"fp32 weight 4 + gradient 4 + optimizer states {states:g}")
    note = ("bf16 weight 2 + bf16 gradient 2 + fp32 master 4 + optimizer states "
            "(16 B/param for AdamW, ZeRO paper; Megatron's fp32 gradients would make it 18)")
    return assume("bytes_per_trainable_param", value=2 + 2 + 4 + states + (1 if c.precision == "fp8" else 0),
                  unit="B/param", note=note)


def fit_training(inp: FitTrainingInput) -> FitTrainingOutput:
    """Per-GPU memory of a training or fine-tuning run: breakdown, fits, min GPUs and what would fit.

    Covers full / LoRA / QLoRA / freeze, fp32 / bf16 / fp16 / fp8 mixed precision, AdamW / 8-bit AdamW /
    SGD / Adafactor, ZeRO 0–3 with optimizer or parameter offload, checkpointing, flash attention,
    tensor and pipeline parallel and MoE models.
    """
    c, gpu, assumptions = _resolve_train(inp)
    capacity = capacity_bytes(gpu)
    usable = capacity * inp.usable_fraction
    base = _base(c)  # independent of the ZeRO stage, offload and data-parallel degree
    c = _auto_stage(c, usable, inp.zero_stage, base)
    parts, host = _train_breakdown(c, base)
    per_gpu = sum(parts.values())
    fits = per_gpu <= usable
    judged = judge(parts, usable)
    note_en = note_zh = other_gb = None
    if inp.grad_checkpointing is None:
        note_en, note_zh, other_gb = _flip_note(c, usable, judged["verdict"])
    min_n, min_stage = _min_gpus(c, usable, base)
    fixed, blocker = _unshardable(c, base, usable, min_n)
    suggestions = [] if fits else _suggest(c, gpu, usable, min_n, base)
    trainable, _ = _trainable(c)
    states = _assumption_states(c)
    assumptions += [
        assume("zero_stage", value=c.zero_stage, default=inp.zero_stage is None,
                   note="lowest ZeRO stage that fits" if inp.zero_stage is None and c.dp > 1 else "DeepSpeed ZeRO stage"),
        states,
        assume("capacity", value=round(capacity / GB, 1), unit="GB",
                   note=f"{gpu.memory_reported_gib:g} GiB as the driver reports" if gpu.memory_reported_gib else "vendor figure"),
        assume("logits_bytes_per_element", value=6, unit="B", note="fp32 logits + a bf16 copy"),
        convention_assumption(inp.usable_fraction, serving=False),
    ]
    if c.n_gpus > 1:
        assumptions.append(assume("comm_buffers", value=round(NCCL_BUFFERS_BYTES / GB, 2), unit="GB", note="NCCL buffers at the first collective"))
    if c.offload != "none":
        assumptions.append(assume("host_ram_factor", value=HOST_RAM_FACTOR, note="host RAM = offloaded states × 1.5 (DeepSpeed estimators)"))
    return FitTrainingOutput.trusted(
        model=c.model.name,
        gpu=gpu.name,
        method=c.method,
        n_gpus=c.n_gpus,
        fits=fits,
        per_gpu_gb=round(per_gpu / GB, 2),
        capacity_gb=round(capacity / GB, 2),
        usable_gb=round(usable / GB, 2),
        shortfall_gb=round(max(0.0, per_gpu - usable) / GB, 2),
        headroom_gb=round((usable - per_gpu) / GB, 2),
        breakdown_gb={k: round(v / GB, 2) for k, v in parts.items()},
        zero_stage=c.zero_stage,
        host_ram_gb=round(host / GB, 1),
        trainable_params_b=round(trainable / 1e9, 4),
        total_params_b=round(c.params.total / 1e9, 3),
        bytes_per_param_states=float(states["value"]),
        min_gpus=min_n,
        min_gpus_zero_stage=min_stage,
        suggestions=suggestions,
        unshardable_gb=round(fixed / GB, 2),
        min_gpus_blocker=blocker,
        default_note_en=note_en,
        default_note_zh=note_zh,
        default_other_gb=other_gb,
        assumptions=assumptions,
        **judged,
    )


def _unshardable(c: _Train, base: dict[str, float], usable: float, min_n: int | None) -> tuple[float, str | None]:
    """Per-GPU bytes no GPU count removes (ZeRO-3 sharding everything it can), and why no count fits, if none does.

    "activations": activations and logits alone exceed the usable memory (only method, sequence or
    checkpointing changes help); "unshardable": together with the gathered ZeRO-3 blocks, context and NCCL
    buffers they do; "max_count": it would need more GPUs than the calculators consider.
    """
    parts, _ = _assemble(base, 3, 1, c.offload, 2)
    fixed = sum(v for k, v in parts.items() if k not in ("weights", "gradients", "optimizer"))
    if min_n is not None:
        return fixed, None
    if parts["activations"] + parts["logits"] > usable:
        return fixed, "activations"
    return fixed, "unshardable" if fixed >= usable else "max_count"


def _flip_note(c: _Train, usable: float, verdict: str) -> tuple[str | None, str | None, float | None]:
    """One line when the checkpointing default decides the verdict (the other setting, same ZeRO stage)."""
    other = replace(c, grad_checkpointing=not c.grad_checkpointing)
    parts, _ = _train_breakdown(other)
    alt = judge(parts, usable)
    if alt["verdict"] == verdict:
        return None, None, None
    need, room = _fmt(alt["process_total_gb"]), _fmt(usable / GB)
    words = {"fits": ("it would fit", "放得下"), "tight": ("it would be tight", "比较紧张"),
             "does not fit": ("it would not fit", "放不下")}
    en_word, zh_word = words[alt["verdict"]]
    if c.grad_checkpointing:
        return (f"Gradient checkpointing is on by default; without it {en_word}: {need} GB per GPU of {room} GB.",
                f"默认开启了重计算（梯度检查点）；关闭重计算则{zh_word}：每卡需 {need} GB，可用 {room} GB。",
                alt["process_total_gb"])
    return (f"Gradient checkpointing is off by default; with it {en_word}: {need} GB per GPU of {room} GB.",
            f"默认未开启重计算；开启重计算（梯度检查点）则{zh_word}：每卡需 {need} GB，可用 {room} GB。",
            alt["process_total_gb"])


def _fmt(x: float) -> str:
    return f"{x:,.1f}"
