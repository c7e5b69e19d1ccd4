"""`fit_training`: will a training or fine-tuning run fit in GPU memory, and if not, what would?

The arithmetic lives in three modules, each stating its conventions: `tools.memory.train_breakdown` (model states,
activations, logits and gathered blocks per GPU before sharding), `tools.memory.zero_sharding` (ZeRO stages, offload,
the stage chosen and the fewest GPUs) and `tools.memory.train_advice` (single changes that make a run fit, and the
line said when the checkpointing default decides the verdict). The memory convention and the three-way verdict
are in `tools.memory.verdict`; serving memory (`fit_inference`) is in `tools.memory.fit_inference`.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from tools.catalog.architecture import check_parallel, param_count
from tools.catalog.gpu_spec import GpuSpec
from tools.catalog.lookup import get_gpu, get_model
from tools.errors import InvalidInput, Unsupported
from tools.memory import preference, quant_sharding
from tools.memory.capacity import (
    GPUS_PER_NODE,
    MAX_COUNT,
    NCCL_BUFFERS_BYTES,
    capacity_assumption,
    capacity_bytes,
    next_count,
    usable_gib,
)
from tools.memory.train_advice import checkpointing_note, flip_note, suggest
from tools.memory.train_breakdown import (
    CHECKPOINTING_MIN_PARAMS,
    LOGIT_BYTES,
    OPTIMIZER_STATE_BYTES,
    QLORA_UNQUANTISED_BYTES,
    Train,
    activation_factor,
    base,
    default_checkpointing,
    keeps_master,
    loss_impl,
    trainable,
)
from tools.memory.verdict import convention_assumption, judge
from tools.memory.zero_sharding import HOST_RAM_FACTOR, auto_stage, breakdown, min_gpus, unshardable
from tools.schemas.common import Assumption, assume
from tools.schemas.memory import FitTrainingInput, FitTrainingOutput
from tools.units import GB, INT4_GROUP_BYTES, NF4_BYTES

#: names other modules imported from here before the split; they live in the modules named above
__all__ = [
    "CHECKPOINTING_MIN_PARAMS",
    "GPUS_PER_NODE",
    "HOST_RAM_FACTOR",
    "INT4_GROUP_BYTES",
    "MAX_COUNT",
    "NCCL_BUFFERS_BYTES",
    "NF4_BYTES",
    "OPTIMIZER_STATE_BYTES",
    "QLORA_UNQUANTISED_BYTES",
    "capacity_bytes",
    "default_checkpointing",
    "fit_training",
    "next_count",
    "training_memory",
]

_METHOD_NOTES = {
    "full": "every weight trained",
    "lora": "LoRA adapters on a frozen 16-bit base",
    "qlora": "LoRA adapters on a frozen NF4 base",
    "freeze": "only the top layers trained",
}
#: input field -> (unit, note) of its assumption, in the order they are stated; None: worked out per call
_NOTES: dict[str, tuple[str, str | None]] = {
    "method": ("", None),
    "precision": ("", None),
    "optimizer": ("", "AdamW"),
    "offload": ("", "no ZeRO-Offload"),
    "seq_len": ("tokens", "tokens per sequence"),
    "micro_batch": ("", "sequences per GPU per step"),
    "grad_checkpointing": ("", None),
    "flash_attention": ("", "on: no s² attention-score matrix is stored"),
    "tp": ("", "tensor parallel size"),
    "pp": ("", "pipeline stages"),
    "activation_factor": (
        "",
        "1.0 = Megatron-LM and other fused stacks; eager PyTorch stacks (HF Trainer, DeepSpeed, LitGPT) 1.3",
    ),
    "usable_fraction": (
        "of capacity",
        "share of the reported capacity the run may use (fragmentation is in the ±10% band)",
    ),
    "cuda_context_gb": ("GB", "CUDA context per process (0.5–2 GiB in practice)"),
    "framework": ("", "training stack: its loss implementation and QLoRA embedding dtype are the defaults"),
}
_LORA_NOTES = {
    "lora_rank": ("", "adapter rank r"),
    "lora_targets": ("", "which linear layers get adapters"),
    "adapter_precision": ("", "fp32 (PEFT's default) or bf16 (the QLoRA paper's setup)"),
}
_FREEZE_NOTES = {"trainable_layers": ("", "top layers left trainable (LLaMA-Factory's default is 2)")}
_NOTES_BY_METHOD = {
    "full": _NOTES,
    "lora": {**_NOTES, **_LORA_NOTES},
    "qlora": {**_NOTES, **_LORA_NOTES},
    "freeze": {**_NOTES, **_FREEZE_NOTES},
}
_LOSS_NOTES = {
    "fused": "fp32 logits + a bf16 copy (a fused cross-entropy)",
    "fp32_upcast": "bf16 logits, their fp32 copy and fp32 log-probabilities kept for backward",
    "chunked": "a chunked cross-entropy (Unsloth, Liger, torchtune): one of 8 chunks of the fused figure at a time",
}
_LOGITS = {
    k: assume("logits_bytes_per_element", value=LOGIT_BYTES[k], unit="B", note=f"loss {k}: {note}")
    for k, note in _LOSS_NOTES.items()
}
_COMM_BUFFERS = assume(
    "comm_buffers", value=round(NCCL_BUFFERS_BYTES / GB, 2), unit="GB", note="NCCL buffers at the first collective"
)
_HOST_RAM = assume(
    "host_ram_factor", value=HOST_RAM_FACTOR, note="host RAM = offloaded states × 1.5 (DeepSpeed estimators)"
)


def _settings(inp: FitTrainingInput) -> tuple[Train, GpuSpec]:
    """The resolved model, GPU and settings; a combination that cannot run is refused in the user's words."""
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
        raise InvalidInput(
            "Offloading parameters needs ZeRO stage 3.", "参数卸载（offload params）需要 ZeRO-3。", field="zero_stage"
        )
    if inp.offload != "none" and inp.zero_stage == 0:
        raise InvalidInput(
            "ZeRO-Offload needs ZeRO stage 1 or higher.", "ZeRO-Offload 需要 ZeRO 1 级或以上。", field="zero_stage"
        )
    if inp.precision == "fp8" and not gpu.fp8_tflops:
        raise Unsupported(
            f"{gpu.name} has no FP8 tensor cores; choose bf16 or fp16.",
            f"{gpu.name} 不支持 FP8 张量计算，请改用 bf16 或 fp16。",
            field="precision",
        )
    if inp.method == "qlora" and inp.precision == "fp32":
        raise InvalidInput(
            "QLoRA computes in bf16/fp16, not fp32.", "QLoRA 以 bf16/fp16 计算，不支持 fp32。", field="precision"
        )
    params = param_count(model)
    c = Train(
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
        grad_checkpointing=default_checkpointing(inp.method, params.total)
        if inp.grad_checkpointing is None
        else inp.grad_checkpointing,
        flash_attention=inp.flash_attention,
        tp=inp.tp,
        pp=inp.pp,
        lora_rank=inp.lora_rank,
        lora_targets=inp.lora_targets,
        adapter_precision=inp.adapter_precision,
        trainable_layers=inp.trainable_layers,
        activation_factor=activation_factor(inp.framework, inp.activation_factor),
        cuda_context=inp.cuda_context_gb * GB,
        framework=inp.framework,
        loss=loss_impl(inp.framework, inp.loss_impl),
        quant_storage=quant_sharding.quant_storage(inp.quant_storage, inp.framework),
        objective=inp.objective,
    )
    return c, gpu


def _input_assumptions(inp: FitTrainingInput, c: Train) -> list[Assumption]:
    """The input settings as stated assumptions, defaults marked."""
    model = c.model
    given = inp.model_fields_set
    notes = _NOTES_BY_METHOD[inp.method]
    computed = {
        "method": _METHOD_NOTES[inp.method],
        "precision": "pure fp32"
        if inp.precision == "fp32"
        else "mixed precision with an fp32 master copy"
        if keeps_master(c) or inp.method in ("lora", "qlora")
        else "bf16 weights updated in place, no fp32 master copy (the Hugging Face Trainer on a bf16 model, one GPU, no ZeRO)",
        "grad_checkpointing": checkpointing_note(inp.method, c.grad_checkpointing, inp.grad_checkpointing is None),
    }
    assumptions = [  # positional: the cache key is built faster than from keywords
        assume(
            k,
            c.grad_checkpointing
            if k == "grad_checkpointing"
            else c.activation_factor
            if k == "activation_factor"
            else getattr(inp, k),
            unit,
            k not in given,
            computed[k] if note is None else note,
        )
        for k, (unit, note) in notes.items()
    ]
    if model.generic:
        assumptions.insert(0, assume("model_architecture", model.name, "", True, model.notes or ""))
    return assumptions


def _assumption_states(c: Train) -> Assumption:
    """Bytes per trainable parameter for weight + gradient + optimizer, with the convention used."""
    adapters = c.method in ("lora", "qlora")
    master = keeps_master(c) or adapters or c.precision == "fp32"
    return _states_assumption(adapters, c.adapter_precision if adapters else "", c.precision, c.optimizer, master)


@functools.lru_cache(maxsize=64)
def _states_assumption(
    adapters: bool, adapter_precision: str, precision: str, optimizer: str, master: bool = True
) -> Assumption:
    states = OPTIMIZER_STATE_BYTES[optimizer]
    if adapters:
        w = 4 if adapter_precision == "fp32" else 2
        note = f"{adapter_precision} adapter weight {w} + gradient {w} + optimizer states {states:g}, no master copy"
        return assume("bytes_per_trainable_param", value=2 * w + states, unit="B/param", note=note)
    if precision == "fp32":
        return assume(
            "bytes_per_trainable_param",
            value=8 + states,
            unit="B/param",
            note=f"fp32 weight 4 + gradient 4 + optimizer states {states:g}",
        )
    if not master:
        return assume(
            "bytes_per_trainable_param",
            value=2 + 2 + states,
            unit="B/param",
            note=f"bf16 weight 2 + bf16 gradient 2 + optimizer states {states:g}, no fp32 master copy",
        )
    note = (
        "bf16 weight 2 + bf16 gradient 2 + fp32 master 4 + optimizer states "
        "(16 B/param for AdamW, ZeRO paper; Megatron's fp32 gradients would make it 18)"
    )
    return assume(
        "bytes_per_trainable_param",
        value=2 + 2 + 4 + states + (1 if precision == "fp8" else 0),
        unit="B/param",
        note=note,
    )


class _Solved(NamedTuple):
    """The figures of a run: settings with the ZeRO stage chosen, capacity, breakdown, fewest GPUs."""

    c: Train
    capacity: float
    usable: float
    unsharded: dict[str, float]
    parts: dict[str, float]
    host: float
    per_gpu: float
    fits: bool
    min_gpus: int | None
    min_stage: int | None


def _solve(c: Train, gpu: GpuSpec, inp: FitTrainingInput) -> _Solved:
    capacity = capacity_bytes(gpu)
    usable = capacity * inp.usable_fraction
    unsharded = base(c)  # independent of the ZeRO stage, offload and data-parallel degree
    c = auto_stage(c, usable, inp.zero_stage, unsharded)
    parts, host = breakdown(c, unsharded)
    per_gpu = sum(parts.values())
    min_n, min_stage = min_gpus(c, usable, unsharded)
    # paged optimizers keep their states in unified memory: what does not fit is evicted to CPU RAM at the peak
    # instead of failing (QLoRA paper, section 3); an fp32 master copy, where one is kept, is not theirs to page
    states = OPTIMIZER_STATE_BYTES[c.optimizer]
    pageable = parts["optimizer"] * states / (states + (4.0 if keeps_master(c) else 0.0)) if states else 0.0
    if c.optimizer.startswith("paged") and per_gpu > usable and per_gpu - pageable < usable:
        resident = usable - (per_gpu - pageable)
        host += pageable - resident
        parts = {**parts, "optimizer": parts["optimizer"] - pageable + resident}
        per_gpu = sum(parts.values())
        min_n, min_stage = (c.n_gpus, c.zero_stage) if min_n is None or min_n > c.n_gpus else (min_n, min_stage)
    return _Solved(c, capacity, usable, unsharded, parts, host, per_gpu, per_gpu <= usable, min_n, min_stage)


class TrainingMemory(NamedTuple):
    """`fit_training`'s figures without its words (assumptions, suggestions, notes), rounded as it rounds them:
    what `recommend_gpus` reads for every card and count it tries."""

    fits: bool
    per_gpu_gb: float
    usable_gb: float
    min_gpus: int | None
    zero_stage: int


def training_memory(inp: FitTrainingInput) -> TrainingMemory:
    """The memory verdict of `fit_training` for the same input, without building its answer."""
    s = _solve(*_settings(inp), inp)
    return TrainingMemory(s.fits, round(s.per_gpu / GB, 2), round(s.usable / GB, 2), s.min_gpus, s.c.zero_stage)


def fit_training(inp: FitTrainingInput) -> FitTrainingOutput:
    """Per-GPU memory of a training or fine-tuning run: breakdown, fits, min GPUs and what would fit.

    Covers full / LoRA / QLoRA / freeze, fp32 / bf16 / fp16 / fp8 mixed precision, AdamW / 8-bit AdamW /
    SGD / Adafactor, ZeRO 0–3 with optimizer or parameter offload, checkpointing, flash attention,
    tensor and pipeline parallel and MoE models.
    """
    c, gpu = _settings(inp)
    assumptions = _input_assumptions(inp, c)
    s = _solve(c, gpu, inp)
    c, capacity, usable, unsharded, parts, host = s.c, s.capacity, s.usable, s.unsharded, s.parts, s.host
    per_gpu, fits, min_n, min_stage = s.per_gpu, s.fits, s.min_gpus, s.min_stage
    judged = judge(parts, usable)
    note_en = note_zh = other_gb = None
    if inp.grad_checkpointing is None:
        note_en, note_zh, other_gb = flip_note(c, usable, judged["verdict"], unsharded)
    fixed, blocker = unshardable(c, unsharded, usable, min_n)
    suggestions = [] if fits else suggest(c, gpu, usable, min_n, unsharded)
    n_train, _ = trainable(c)
    states = _assumption_states(c)
    assumptions += [
        assume(
            "zero_stage",
            c.zero_stage,
            "",
            inp.zero_stage is None,
            "lowest ZeRO stage that fits" if inp.zero_stage is None and c.dp > 1 else "DeepSpeed ZeRO stage",
        ),
        states,
        capacity_assumption(gpu),
        _LOGITS[c.loss],
        convention_assumption(inp.usable_fraction, serving=False),
    ]
    if c.n_gpus > 1:
        assumptions.append(_COMM_BUFFERS)
    if c.objective != "sft":
        assumptions.append(preference.assumption(c.objective, c.method, False))
    if c.method == "qlora" and c.dp > 1 and c.zero_stage >= 3:
        assumptions.append(quant_sharding.assumption(c.quant_storage, inp.quant_storage == "auto"))
    if c.offload != "none":
        assumptions.append(_HOST_RAM)
    if c.optimizer.startswith("paged") and host > 0:
        assumptions.append(
            assume(
                "paged_optimizer",
                round(host / GB, 1),
                "GB",
                False,
                "optimizer states that do not fit stay in CPU RAM (bitsandbytes paged optimizer, QLoRA paper): "
                "the run fits, each step pages them in",
            )
        )
    return FitTrainingOutput.trusted(
        model=c.model.name,
        gpu=gpu.name,
        method=c.method,
        objective=c.objective,
        n_gpus=c.n_gpus,
        fits=fits,
        per_gpu_gb=round(per_gpu / GB, 2),
        capacity_gb=round(capacity / GB, 2),
        usable_gb=round(usable / GB, 2),
        usable_gib=usable_gib(gpu, usable),
        shortfall_gb=round(max(0.0, per_gpu - usable) / GB, 2),
        headroom_gb=round((usable - per_gpu) / GB, 2),
        breakdown_gb={k: round(v / GB, 2) for k, v in parts.items()},
        zero_stage=c.zero_stage,
        host_ram_gb=round(host / GB, 1),
        trainable_params_b=round(n_train / 1e9, 4),
        total_params_b=round(c.params.total / 1e9, 3),
        bytes_per_param_states=float(states.value),
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
