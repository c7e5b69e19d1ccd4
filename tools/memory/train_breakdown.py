"""Training memory before sharding: the resolved settings of a run and its per-GPU bytes by component.

Conventions (stated in `fit_training`'s `assumptions`):
- Model states, mixed-precision AdamW: 16 bytes per trainable parameter (ZeRO paper, Rajbhandari et
  al. 2020, arXiv 1910.02054): bf16 weight 2 + bf16 gradient 2 + fp32 master 4 + Adam m 4 + v 4.
  Megatron keeps fp32 gradients (18 B); we use 16 and say so.
- Activations per layer (Korthikanti et al. 2022, arXiv 2205.05198), 16-bit:
  s·b·h·(c + 5·a·s/h) bytes, with c = 18 + 6·f/h for a SwiGLU MLP (34 when f = 8h/3) and
  18 + 4·f/h for a GELU MLP (34 when f = 4h). Flash attention drops the 5·a·s/h term; tensor
  parallel with sequence parallel divides by t; full recomputation keeps 2·s·b·h per layer plus
  one layer being recomputed. A framework factor scales it (Megatron ≈ 1, HF eager higher).
- Logits: b·s·V elements at 6 bytes (fp32 logits + a bf16 copy), divided by t (vocab-parallel).
- ZeRO-3 keeps two gathered blocks in flight (current + prefetched) in the base weights' dtype. A bitsandbytes
  4-bit base in its default uint8 storage is not partitioned by DeepSpeed ZeRO-3 (every rank holds all of it);
  a float storage or FSDP shards it (`tools.memory.quant_sharding`).
- ZeRO stages 1 and 2 with a master copy (DeepSpeed's stage-1/2 mixed-precision optimizer) also hold the fp32
  gradients of their optimizer partition (4 bytes per trainable parameter / d) and one reduce and one all-gather
  bucket (5e8 elements each by default, in the gradients' dtype): the allocation real ZeRO-2 runs OOM on. ZeRO-3
  (and FSDP, whose sharded fp32 parameter carries its own fp32 gradient) is counted as before.
- Gradient checkpointing defaults on for full, LoRA and QLoRA training of models of 7B and more (what
  LLaMA-Factory, PEFT and the DeepSpeed/FSDP examples do), off for smaller models and freeze-tuning.

Everything here is plain float arithmetic on numbers derived once per model record (`shape_of`).
"""

from __future__ import annotations

from dataclasses import dataclass

from tools.catalog.architecture import ParamCount, param_count, per_record
from tools.catalog.model_spec import ModelSpec
from tools.memory.preference import terms
from tools.memory.quant_sharding import base_shardable
from tools.units import NF4_BYTES

QLORA_UNQUANTISED_BYTES = 4.0  # embeddings/head after prepare_model_for_kbit_training (fp32)
#: QLoRA's unquantised embeddings and head by stack: PEFT's prepare_model_for_kbit_training casts them to fp32,
#: Unsloth keeps them in bf16
QLORA_UNQUANTISED_BY_FRAMEWORK = {"unsloth": 2.0, "torchtune": 2.0}

#: bytes per logit element (micro batch × sequence × vocabulary) by loss implementation:
#: fused: fp32 logits + a bf16 copy (Megatron's fused vocab-parallel cross-entropy; the convention so far);
#: fp32_upcast: bf16 logits, their fp32 copy and the fp32 log-probabilities kept for backward (torchtitan's
#: cross_entropy_loss upcasts the whole prediction); chunked: the fused figure over 8 chunks (torchtune's
#: num_output_chunks default; Unsloth and Liger never hold all logits either)
LOGIT_BYTES = {"fused": 6.0, "fp32_upcast": 10.0, "chunked": 6.0 / 8}
#: the loss implementation each stack uses by default (auto, deepspeed, llm-foundry: fused). The Hugging Face
#: Trainer (and LLaMA-Factory, axolotl, TRL on it) computes the loss with transformers' ForCausalLMLoss, which upcasts
#: the whole prediction (`logits = logits.float()`, src/transformers/loss/loss_utils.py; before 4.46 the same
#: `.float()` sat in each *ForCausalLM.forward): fp32_upcast, as torchtitan
LOSS_BY_FRAMEWORK = {"unsloth": "chunked", "torchtitan": "fp32_upcast", "torchtune": "chunked", "hf": "fp32_upcast"}

#: Korthikanti's activations hold for stacks with fused kernels (Megatron-LM, torchtitan, torchtune, llm-foundry,
#: Unsloth's own kernels); eager PyTorch stacks keep more copies per layer. 1.3 from LitGPT's resource table
#: (A100 40GB, Llama-2-7B LoRA without checkpointing: 29.07 GB at micro-batch 2 less 21.30 GB at 1 = 7.77 GB per
#: 1,304-token sequence, 45.5 bytes per hidden element per layer against Korthikanti's 34, i.e. x1.34)
FUSED_ACTIVATION_FRAMEWORKS = frozenset({"megatron", "torchtitan", "torchtune", "llm-foundry", "unsloth"})
EAGER_ACTIVATION_FACTOR = 1.3


def activation_factor(framework: str, asked: float | None) -> float:
    """The factor on Korthikanti's activations: as asked, else 1.0 for fused stacks and 1.3 for eager ones."""
    if asked is not None:
        return asked
    return 1.0 if framework in FUSED_ACTIVATION_FRAMEWORKS else EAGER_ACTIVATION_FACTOR


#: stacks that train a full model in the dtype it was loaded in on one GPU with no ZeRO optimizer: the Hugging Face
#: Trainer (and axolotl, LLaMA-Factory, TRL on top of it) with bf16 on a bf16-loaded model lets the optimizer update
#: the bf16 weights in place, with no fp32 master copy; DeepSpeed's ZeRO optimizers and fp16 (loss scaling) keep one
NO_MASTER_BF16_FRAMEWORKS = frozenset({"hf", "unsloth"})


def loss_impl(framework: str, asked: str) -> str:
    """The loss implementation in use: as asked, else the stack's default."""
    return asked if asked != "auto" else LOSS_BY_FRAMEWORK.get(framework, "fused")


#: models at least this large get gradient checkpointing by default (full, LoRA, QLoRA); Llama-2-7B is 6.74B
CHECKPOINTING_MIN_PARAMS = 6.5e9

#: DeepSpeed's default reduce_bucket_size and allgather_bucket_size (elements); one bucket of each is in flight
#: (DeepSpeed configuration docs: overlap_comm would take 4.5x both, 9 GB at 5e8)
ZERO_BUCKET_ELEMENTS = 5e8

#: optimizer bytes per trainable parameter (states, without the fp32 master copy)
OPTIMIZER_STATE_BYTES = {
    "adamw": 8.0,
    "adamw8bit": 2.0,
    "paged_adamw": 8.0,  # bitsandbytes' paged optimizers: the same states in unified memory (QLoRA paper, section 3)
    "paged_adamw8bit": 2.0,
    "sgd": 4.0,
    "adafactor": 0.0,
}


def default_checkpointing(method: str, total_params: float) -> bool:
    """Gradient checkpointing when the user did not say: on for full/LoRA/QLoRA at ≥ 7B, QLoRA always."""
    if method == "qlora":
        return True  # PEFT's prepare_model_for_kbit_training turns it on at every size
    return method in ("full", "lora") and total_params >= CHECKPOINTING_MIN_PARAMS


@dataclass(frozen=True)
class Shape:
    """What the training breakdown reads of a model, derived once per record."""

    total: int  # all parameters
    embedding: int  # input embedding + untied output head
    per_layer: float  # parameters of an average transformer layer (freeze-tuning trains the top k)
    layers: int
    hidden: int
    heads: int
    vocab: int
    coefficient: float  # Korthikanti's 34, generalised to the MLP (and top-k experts for a MoE)
    largest_block: int  # the largest block ZeRO-3 gathers at once
    lora_per_rank: dict[str, int]  # adapter parameters per unit of rank, by target set


@per_record
def shape_of(m: ModelSpec) -> Shape:
    p: ParamCount = param_count(m)
    h, a, k, d = m.hidden_size, m.n_heads, m.n_kv_heads, m.head_dim
    f = m.moe_ffn_size or m.ffn_size
    # adapters: r·(in + out) for each adapted linear layer (q, o, k, v; the MLP matrices of every expert)
    attn = (h + a * d) * 2 + (h + k * d) * 2
    mats = 3 if m.mlp == "swiglu" else 2
    experts = (m.n_experts or 1) + (m.n_shared_experts or 0) if m.is_moe else 1
    active = ((m.experts_per_token or 1) + (m.n_shared_experts or 0)) if m.is_moe else 1
    return Shape(
        total=p.total,
        embedding=p.embedding,
        per_layer=p.layers_total / m.n_layers,
        layers=m.n_layers,
        hidden=h,
        heads=a,
        vocab=m.vocab_size,
        coefficient=18 + (6 if m.mlp == "swiglu" else 4) * f * active / h,
        largest_block=p.largest_layer,
        lora_per_rank={"attention": m.n_layers * attn, "all-linear": m.n_layers * (attn + mats * (h + f) * experts)},
    )


@dataclass
class Train:
    """Resolved training settings: plain values. Treated as immutable; what-if copies go through `replace`."""

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
    framework: str = "auto"
    loss: str = "fused"
    quant_storage: str = "uint8"  # QLoRA: the packed 4-bit weights' storage dtype (tools.memory.quant_sharding)
    objective: str = "sft"  # sft, dpo, orpo, kto, ppo, grpo (tools.memory.preference)

    @property
    def dp(self) -> int:
        return self.n_gpus // (self.tp * self.pp)


def replace(c: Train, **changes) -> Train:
    """A copy of the settings with some changed (dataclasses.replace re-runs __init__: several times slower)."""
    new = object.__new__(Train)
    new.__dict__.update(c.__dict__)
    new.__dict__.update(changes)
    return new


def lora_params(m: ModelSpec, rank: int, targets: str) -> int:
    """Adapter parameters: r·(in + out) for each adapted linear layer."""
    return rank * shape_of(m).lora_per_rank[targets]


def trainable(c: Train) -> tuple[float, float]:
    """(trainable parameters, frozen parameters)."""
    sh = shape_of(c.model)
    if c.method == "full":
        return sh.total, 0.0
    if c.method in ("lora", "qlora"):
        return float(c.lora_rank * sh.lora_per_rank[c.lora_targets]), float(sh.total)
    n = min(c.trainable_layers, sh.layers) * sh.per_layer
    return n, sh.total - n


def activations(c: Train, checkpointing: bool) -> float:
    """Activation bytes per GPU with or without full recomputation (the only part checkpointing changes): every
    sequence the objective puts through each trained model (DPO's chosen and rejected, PPO's policy and value)."""
    sh = shape_of(c.model)
    t = terms(c.objective, c.method)
    s, b, h = c.seq_len, c.micro_batch * t.sequences * t.trained_models, sh.hidden
    coeff = sh.coefficient + (0 if c.flash_attention else 5 * sh.heads * s / h)
    per_layer_full = s * b * h * coeff * c.activation_factor / c.tp
    layers = sh.layers if c.method != "freeze" else min(c.trainable_layers, sh.layers)
    # 1F1B: the first stage holds pp micro-batches of L/pp layers each, i.e. L layers in all
    if checkpointing:
        return layers * 2 * s * b * h / c.tp + per_layer_full
    return layers * per_layer_full


def gathered_bytes(c: Train) -> float:
    """Bytes per parameter of a ZeRO-3 gathered block: the frozen or compute dtype of the base weights."""
    if c.method == "qlora":
        return NF4_BYTES
    return 4.0 if c.precision == "fp32" else 2.0


def keeps_master(c: Train) -> bool:
    """Whether a full or freeze run keeps an fp32 master copy of its trainable weights (adapters never do)."""
    if c.precision == "fp32" or c.method in ("lora", "qlora"):
        return False
    # one GPU, no ZeRO: with several, a ZeRO stage may be chosen later (DeepSpeed's optimizer keeps the copy)
    alone = c.n_gpus == 1 and c.zero_stage == 0
    return not (alone and c.framework in NO_MASTER_BF16_FRAMEWORKS and c.precision == "bf16")


def base(c: Train) -> dict[str, float]:
    """Per-GPU bytes before ZeRO sharding and offload (model states split by tp × pp only)."""
    sh = shape_of(c.model)
    mp = c.tp * c.pp
    n_train, frozen = trainable(c)
    fp32 = c.precision == "fp32"
    compute_bytes = grad_bytes = 4.0 if fp32 else 2.0
    master = 4.0 if keeps_master(c) else 0.0
    if c.method in ("lora", "qlora"):
        # adapters are kept in their own dtype and updated directly: no separate master copy
        compute_bytes = grad_bytes = 4.0 if c.adapter_precision == "fp32" else 2.0
    # weights: trainable in the compute precision (+ an fp8 copy for fp8 training), frozen as stored
    w_train = n_train * (compute_bytes + (1.0 if c.precision == "fp8" else 0.0))
    if c.method == "qlora":
        # bitsandbytes leaves the embeddings and the output head unquantised, and PEFT's
        # prepare_model_for_kbit_training casts every non-4-bit parameter to fp32
        embed = sh.embedding
        unquantised = QLORA_UNQUANTISED_BY_FRAMEWORK.get(c.framework, QLORA_UNQUANTISED_BYTES)
        quantised = (frozen - embed) * NF4_BYTES
        w_frozen = quantised + embed * unquantised
        # DeepSpeed ZeRO-3 leaves a uint8-stored 4-bit base whole on every rank (tools.memory.quant_sharding)
        resident = 0.0 if base_shardable(c.method, c.quant_storage) else quantised
    else:
        w_frozen = frozen * (4.0 if fp32 else 2.0)
        resident = 0.0
    # the objective: models trained like the policy (PPO's value model), frozen models of its size beside it
    t = terms(c.objective, c.method)
    k = t.trained_models
    n_train *= k
    return {
        "weights": k * (w_train + w_frozen) / mp,
        # not a component of the breakdown: the part of `weights` that ZeRO-3 cannot shard
        "weights_resident": k * resident / mp,
        "gradients": n_train * grad_bytes / mp,
        "optimizer": n_train * (master + OPTIMIZER_STATE_BYTES[c.optimizer]) / mp,
        "frozen_models": t.frozen_models * sh.total * (4.0 if fp32 else 2.0) / mp,
        "activations": activations(c, c.grad_checkpointing),
        # the policy's logits for every sequence (a value head's are one per token: left out)
        "logits": c.micro_batch * t.sequences * c.seq_len * sh.vocab * LOGIT_BYTES[c.loss] / c.tp,
        # current + prefetched block, gathered in the base weights' dtype (NF4 for QLoRA), not the adapters'
        "zero3_buffers": 2 * sh.largest_block * gathered_bytes(c) / c.tp,
        "cuda_context": c.cuda_context,
        # not components of the breakdown: what ZeRO stages 1 and 2 add (tools.memory.zero_sharding)
        "fp32_gradients": n_train * 4.0 / mp if master else 0.0,
        "zero_buckets": 2 * min(ZERO_BUCKET_ELEMENTS, n_train / mp) * grad_bytes,
    }
