"""Sizes that depend on the model alone: weights by precision, KV cache, model states by ZeRO stage,
rough training memory. No GPU is needed for any of them, so "Qwen3-14B 的 bf16 权重多大" or "13B 全参
大概吃多少显存" gets a figure without a card being named.

Conventions are those of `fit_training` / `fit_inference` (REFERENCE.md):
- Weights: bytes per parameter of the precision; int8/int4/nf4 keep the embeddings and the output head
  in 16-bit; int4 adds group-128 scales, nf4 the double-quantised constants (QLoRA paper).
- KV cache per token: 2 · layers · kv_heads · head_dim · bytes (GQA's kv_heads; MLA's latent); windowed layers
  (sliding or chunked) hold at most their window, linear-attention layers a fixed state per sequence.
- Model states, mixed-precision AdamW: 16 B per trainable parameter (ZeRO paper, arXiv 1910.02054);
  ZeRO-1 shards the optimizer states, ZeRO-2 also the gradients, ZeRO-3 also the weights, over n GPUs.
- LoRA/QLoRA: frozen base (16-bit or NF4) + adapters r·(in + out) per linear layer, in bf16 with their
  gradients and AdamW states (no master copy).
- Activations (Korthikanti et al., arXiv 2205.05198), 16-bit, flash attention: s·b·h·(18 + 6·f/h) per layer
  (SwiGLU); with checkpointing 2·s·b·h per layer plus one layer in full; logits b·s·V·6 bytes.
"""

from __future__ import annotations

from tools.catalog.architecture import expert_format_delta, kv_bytes_per_sequence, param_count
from tools.catalog.lookup import get_model
from tools.catalog.model_spec import ModelSpec
from tools.memo import per_record
from tools.memory.layout_notes import expert_format_note, layout_assumptions
from tools.memory.train_breakdown import lora_params
from tools.schemas.common import assume
from tools.schemas.memory import ModelMemoryInput, ModelMemoryOutput
from tools.units import BYTES_PER_PARAM, GB, INT4_GROUP_BYTES, NF4_BYTES

PRECISIONS = ("fp32", "bf16", "fp8", "int8", "int4")
OPTIMIZER_BYTES = {"adamw": 8.0, "adamw8bit": 2.0, "sgd": 4.0}  # states per trainable parameter


def weight_bytes(total: float, embedding: float, precision: str) -> float:
    """All weights at a precision; quantised formats keep embeddings and the head in 16-bit."""
    body = total - embedding
    if precision == "nf4":
        return body * NF4_BYTES + embedding * 2.0
    if precision == "int4":
        return body * INT4_GROUP_BYTES + embedding * 2.0
    if precision == "int8":
        return body + embedding * 2.0
    return total * BYTES_PER_PARAM[precision]


def _lora_params(m: ModelSpec, rank: int, targets: str = "all-linear") -> float:
    """Adapters on the target modules: q, k, v, o, and with all-linear the MLP matrices of every layer (every expert
    of a MoE); fit_training's count (`tools.memory.train_breakdown.lora_params`)."""
    return float(lora_params(m, rank, targets))


def _activations(m: ModelSpec, inp: ModelMemoryInput) -> float:
    s, b, h = inp.seq_len, inp.micro_batch, m.hidden_size
    f = (m.moe_ffn_size or m.ffn_size) * (((m.experts_per_token or 1) + (m.n_shared_experts or 0)) if m.is_moe else 1)
    per_layer = s * b * h * (18 + (6 if m.mlp == "swiglu" else 4) * f / h)
    layers = m.n_layers * (2 * s * b * h) + per_layer if inp.grad_checkpointing else m.n_layers * per_layer
    return layers + b * s * m.vocab_size * 6.0


def _gb(x: float) -> float:
    return round(x / GB, 2)


@per_record
def _by_precision(m: ModelSpec) -> dict[str, float]:
    """The weights at each precision (GB): a property of the model alone."""
    p = param_count(m)
    return {q: _gb(weight_bytes(p.total, p.embedding, q) + expert_format_delta(m, p, q)) for q in PRECISIONS}


def model_memory(inp: ModelMemoryInput) -> ModelMemoryOutput:
    """Memory a model needs regardless of the GPU: weights at each precision, KV cache per token and per
    request at a context, model states (weights + gradients + optimizer) per GPU at each ZeRO stage, and a
    rough single-GPU training total. Use it when the question names no GPU or does not depend on one."""
    m = get_model(inp.model)
    p = param_count(m)
    precision = inp.precision or (m.native_precision or "bf16")
    given = inp.model_fields_set
    a = []
    if m.generic:
        a.append(assume("model_architecture", value=m.name, note=m.notes or ""))
    a.append(
        assume(
            "precision",
            value=precision,
            default="precision" not in given,
            note=expert_format_note(m, precision, "the precision the weights are published in")
            or ("the precision the weights are published in" if "precision" not in given else "weights"),
        )
    )
    a.extend(layout_assumptions(m, BYTES_PER_PARAM[inp.kv_precision]))
    total = p.total
    weights = weight_bytes(total, p.embedding, precision) + expert_format_delta(m, p, precision)

    # windowed layers hold at most their window and linear-attention layers a fixed state: per token at this context
    kv_req = kv_bytes_per_sequence(m, inp.context_len, BYTES_PER_PARAM[inp.kv_precision])
    kv_tok = kv_req / inp.context_len
    for key, unit, note in (
        ("kv_precision", "", "KV-cache elements"),
        ("context_len", "tokens", "tokens per request"),
        ("batch", "", "concurrent requests"),
    ):
        a.append(assume(key, value=getattr(inp, key), unit=unit, default=key not in given, note=note))

    if inp.method == "full":
        trainable = float(total)
        w_bytes, g_bytes = 2.0 * trainable, 2.0 * trainable
        o_bytes = (4.0 + OPTIMIZER_BYTES[inp.optimizer]) * trainable  # fp32 master + states
        bpp = 8.0 + OPTIMIZER_BYTES[inp.optimizer]
        note = "bf16 weight 2 + bf16 gradient 2 + fp32 master 4 + optimizer states (ZeRO paper's 16 B for AdamW)"
    else:
        trainable = _lora_params(m, inp.lora_rank, inp.lora_targets)
        base = weight_bytes(total, p.embedding, "nf4" if inp.method == "qlora" else "bf16")
        w_bytes, g_bytes = base + 2.0 * trainable, 2.0 * trainable
        o_bytes = OPTIMIZER_BYTES[inp.optimizer] * trainable
        bpp = 4.0 + OPTIMIZER_BYTES[inp.optimizer]
        note = "bf16 adapter weight 2 + gradient 2 + optimizer states, no master copy; the frozen base as stored"
        a.append(
            assume(
                "lora_rank",
                value=inp.lora_rank,
                default="lora_rank" not in given,
                note="adapters on every linear layer (every expert of a MoE)"
                if inp.lora_targets == "all-linear"
                else "adapters on the attention projections only",
            )
        )
    a.append(assume("bytes_per_trainable_param", value=bpp, unit="B/param", note=note))
    a.append(assume("optimizer", value=inp.optimizer, default="optimizer" not in given))
    n = inp.n_gpus
    stages = []
    for stage in range(4):
        w = w_bytes / n if stage >= 3 else w_bytes
        g = g_bytes / n if stage >= 2 else g_bytes
        o = o_bytes / n if stage >= 1 else o_bytes
        stages.append(
            {
                "stage": stage,
                "n_gpus": n,
                "weights_gb": _gb(w),
                "gradients_gb": _gb(g),
                "optimizer_gb": _gb(o),
                "per_gpu_gb": _gb(w + g + o),
            }
        )
    a.append(assume("n_gpus", value=n, default="n_gpus" not in given, note="GPUs the ZeRO stages shard over"))
    act = _activations(m, inp)
    for key, unit, note in (
        ("seq_len", "tokens", "tokens per training sequence"),
        ("micro_batch", "", "sequences per GPU per step"),
        ("grad_checkpointing", "", "activations recomputed in the backward pass"),
    ):
        a.append(assume(key, value=getattr(inp, key), unit=unit, default=key not in given, note=note))
    a.append(
        assume(
            "runtime_overheads",
            value="excluded",
            note="CUDA context, NCCL buffers and fragmentation come on top; fit_training adds them per GPU",
        )
    )
    return ModelMemoryOutput.trusted(
        model=m.name,
        params_b=round(total / 1e9, 3),
        active_params_b=round(p.active / 1e9, 3),
        precision=precision,
        weights_gb=_gb(weights),
        weights_by_precision_gb=dict(_by_precision(m)),
        kv_precision=inp.kv_precision,
        kv_cache_bytes_per_token=round(kv_tok, 1),
        context_len=inp.context_len,
        batch=inp.batch,
        kv_cache_gb_per_request=_gb(kv_req),
        kv_cache_gb=_gb(kv_req * inp.batch),
        serving_gb=_gb(weights + kv_req * inp.batch),
        method=inp.method,
        trainable_params_b=round(trainable / 1e9, 4),
        bytes_per_trainable_param=bpp,
        model_states_gb=_gb(w_bytes + g_bytes + o_bytes),
        zero_stages=stages,
        activations_gb=_gb(act),
        training_total_gb=_gb(w_bytes + g_bytes + o_bytes + act),
        assumptions=a,
    )
