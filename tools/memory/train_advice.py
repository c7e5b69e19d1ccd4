"""What would make a training run fit, and the one line said when a default decides the verdict.

Suggestions are single changes (checkpointing, LoRA, QLoRA, 8-bit AdamW, ZeRO-3, offload, more GPUs, a bigger
card), each with its new per-GPU figure, listed only when it makes the run fit. Changes of ZeRO stage, offload,
GPU count or card keep the unsharded breakdown; checkpointing changes only the activations; method and
optimizer changes recompute it.
"""

from __future__ import annotations

import functools

from tools.catalog.gpu_spec import GpuSpec
from tools.catalog.lookup import gpus
from tools.memory.capacity import NCCL_BUFFERS_BYTES, capacity_bytes
from tools.memory.train_breakdown import Train, activations, base, replace
from tools.memory.verdict import verdict_word
from tools.memory.zero_sharding import min_gpus as fewest_gpus
from tools.memory.zero_sharding import total
from tools.units import GB


@functools.cache
def _cards_by_capacity() -> tuple[tuple[float, int, str, GpuSpec], ...]:
    """Catalog GPUs by capacity (datacenter parts first at equal capacity): for "a bigger card"."""
    return tuple(sorted((capacity_bytes(g), g.segment != "datacenter", g.id, g) for g in gpus()))


def _with_checkpointing(c: Train, unsharded: dict[str, float], on: bool) -> tuple[Train, dict[str, float]]:
    """The settings and unsharded breakdown with checkpointing set: only the activations change."""
    other = replace(c, grad_checkpointing=on)
    return other, {**unsharded, "activations": activations(other, on)}


def suggest(c: Train, gpu: GpuSpec, usable: float, min_gpus: int | None, unsharded: dict[str, float]) -> list[dict]:
    """Single changes that make the run fit, each with its new per-GPU figure (validated with the output)."""
    out: list[dict] = []
    own = capacity_bytes(gpu)
    fraction = usable / own

    def add(
        key: str,
        en: str,
        zh: str,
        trial: Train,
        settings: dict,
        trial_base: dict[str, float] | None = None,
        card: GpuSpec = gpu,
    ) -> None:
        need = total(trial, unsharded if trial_base is None else trial_base)
        if need <= capacity_bytes(card) * fraction:
            out.append(
                {
                    "change": key,
                    "description_en": en,
                    "description_zh": zh,
                    "per_gpu_gb": round(need / GB, 1),
                    "fits": True,
                    "n_gpus": trial.n_gpus,
                    "gpu": card.name,
                    "settings": settings,
                }
            )

    def rebuilt(**changes) -> tuple[Train, dict[str, float]]:
        trial = replace(c, **changes)
        return trial, base(trial)

    for m in range(c.micro_batch - 1, 0, -1):  # the largest smaller micro-batch that fits, same effective batch
        trial, trial_base = rebuilt(micro_batch=m)
        if total(trial, trial_base) <= usable:
            k = -(-c.micro_batch // m)
            add(
                "micro_batch",
                f"Lower the micro-batch to {m} per GPU and set gradient_accumulation_steps={k} to keep the batch of "
                f"{c.micro_batch} per step.",
                f"把每卡 micro-batch 降到 {m}，并设 gradient_accumulation_steps={k}，每步的有效 batch 仍是 {c.micro_batch}。",
                trial,
                {"micro_batch": m, "grad_accum": k},
                trial_base,
            )
            break
    if not c.grad_checkpointing:
        trial, trial_base = _with_checkpointing(c, unsharded, True)
        add(
            "grad_checkpointing",
            "Turn on gradient checkpointing.",
            "开启梯度检查点（重计算）。",
            trial,
            {"grad_checkpointing": True},
            trial_base,
        )
    if c.method == "full":
        trial, trial_base = rebuilt(method="lora")
        add(
            "lora",
            "Fine-tune with LoRA instead of all weights.",
            "改用 LoRA 微调，不训练全部权重。",
            trial,
            {"method": "lora"},
            trial_base,
        )
    if c.method in ("full", "lora", "freeze") and c.precision != "fp32":
        # on several GPUs the 4-bit base is planned in bf16 storage, the setup ZeRO-3 and FSDP shard
        many = c.dp > 1
        trial, trial_base = rebuilt(method="qlora", grad_checkpointing=True, quant_storage="bf16" if many else "uint8")
        add(
            "qlora",
            "Use QLoRA: an NF4-quantized base with LoRA adapters"
            + (", stored in bf16 (bnb_4bit_quant_storage) so that ZeRO-3 shards it." if many else "."),
            "改用 QLoRA：NF4 量化的底座加 LoRA 适配器"
            + ("，底座按 bf16 存储（bnb_4bit_quant_storage），ZeRO-3 才会切分它。" if many else "。"),
            trial,
            {"method": "qlora", "grad_checkpointing": True, **({"quant_storage": "bf16"} if many else {})},
            trial_base,
        )
    if c.optimizer == "adamw":
        trial, trial_base = rebuilt(optimizer="adamw8bit")
        add(
            "adamw8bit",
            "Use bitsandbytes' 8-bit AdamW.",
            "改用 bitsandbytes 的 8-bit AdamW。",
            trial,
            {"optimizer": "adamw8bit"},
            trial_base,
        )
    if c.dp > 1 and c.zero_stage < 3:
        add(
            "zero3",
            "Shard parameters, gradients and optimizer states with ZeRO-3.",
            "用 ZeRO-3 切分参数、梯度和优化器状态。",
            replace(c, zero_stage=3),
            {"zero_stage": 3},
        )
    if unsharded["weights_resident"]:
        # a uint8-stored 4-bit base stays whole on every GPU under ZeRO-3: stored in bf16 it shards
        trial, trial_base = rebuilt(quant_storage="bf16", zero_stage=3)
        n, _ = fewest_gpus(trial, usable, trial_base)
        if n is not None and n > 1:
            n = max(n, c.n_gpus)
            trial = replace(trial, n_gpus=n)
            add(
                "quant_storage",
                f"Store the 4-bit base in bf16 (bnb_4bit_quant_storage=torch.bfloat16) so ZeRO-3 shards it, or use "
                f"FSDP: {n} GPUs.",
                f"把 4-bit 底座的存储类型设为 bf16（bnb_4bit_quant_storage=torch.bfloat16），ZeRO-3 才会切分它，"
                f"或改用 FSDP：{n} 张卡。",
                trial,
                {"quant_storage": "bf16", "zero_stage": 3, "n_gpus": n},
                trial_base,
            )
    if c.offload == "none":
        add(
            "offload_optimizer",
            "Offload optimizer states to CPU memory (ZeRO-Offload).",
            "把优化器状态卸载到 CPU 内存（ZeRO-Offload）。",
            replace(c, offload="optimizer", zero_stage=max(c.zero_stage, 2) if c.dp > 1 else max(c.zero_stage, 1)),
            {"offload": "optimizer"},
        )
        add(
            "offload_params",
            "Offload optimizer states and parameters to CPU (ZeRO-3 Offload).",
            "把优化器状态和参数都卸载到 CPU（ZeRO-3 Offload）。",
            replace(c, offload="optimizer+params", zero_stage=3),
            {"offload": "optimizer+params", "zero_stage": 3},
        )
    if min_gpus is not None and min_gpus > c.n_gpus:
        add(
            "more_gpus",
            f"Use {min_gpus} GPUs with ZeRO-3.",
            f"增加到 {min_gpus} 张卡并使用 ZeRO-3。",
            replace(c, n_gpus=min_gpus, zero_stage=3),
            {"n_gpus": min_gpus, "zero_stage": 3},
        )
    need = total(c, unsharded)
    card = next((g for cap, _, _, g in _cards_by_capacity() if cap > own and cap * fraction >= need), None)
    if card is not None:
        add(
            "bigger_gpu",
            f"Use a card with more memory: {card.name}.",
            f"换用显存更大的卡：{card.name}。",
            c,
            {"gpu": card.name},
            card=card,
        )
    return out


def flip_note(
    c: Train, usable: float, verdict: str, unsharded: dict[str, float]
) -> tuple[str | None, str | None, float | None]:
    """One line when the checkpointing default decides the verdict (the other setting, same ZeRO stage)."""
    other, other_base = _with_checkpointing(c, unsharded, not c.grad_checkpointing)
    need_bytes = total(other, other_base)
    outside = other_base["cuda_context"] + (NCCL_BUFFERS_BYTES if other.n_gpus > 1 else 0.0)
    alt = verdict_word(need_bytes, outside, usable)  # as `judge` of that breakdown would say, without building it
    if alt == verdict:
        return None, None, None
    need_gb = round(need_bytes / GB, 2)
    need, room = _fmt(need_gb), _fmt(usable / GB)
    words = {
        "fits": ("it would fit", "放得下"),
        "tight": ("it would be tight", "比较紧张"),
        "does not fit": ("it would not fit", "放不下"),
    }
    en_word, zh_word = words[alt]
    if c.grad_checkpointing:
        return (
            f"Gradient checkpointing is on by default; without it {en_word}: {need} GB per GPU of {room} GB.",
            f"默认开启了重计算（梯度检查点）；关闭重计算则{zh_word}：每卡需 {need} GB，可用 {room} GB。",
            need_gb,
        )
    return (
        f"Gradient checkpointing is off by default; with it {en_word}: {need} GB per GPU of {room} GB.",
        f"默认未开启重计算；开启重计算（梯度检查点）则{zh_word}：每卡需 {need} GB，可用 {room} GB。",
        need_gb,
    )


def checkpointing_note(method: str, on: bool, defaulted: bool) -> str:
    """The words of the checkpointing assumption: what it does, and why it is the default when it is one."""
    if not defaulted:
        return (
            "each layer's activations are recomputed in the backward pass"
            if on
            else "every layer's activations are kept"
        )
    if method == "qlora":
        return "on by default: PEFT's prepare_model_for_kbit_training turns it on for QLoRA"
    if on:
        return (
            "on by default for full/LoRA training of models of 7B and more (LLaMA-Factory, PEFT and "
            "DeepSpeed/FSDP recipes); costs one extra forward pass in training time"
        )
    return "off by default for models under 7B and for freeze-tuning: every layer's activations are kept"


def _fmt(x: float) -> str:
    return f"{x:,.1f}"
