"""Model FLOPs per token, worked out from a model's shape.

With N the parameters that take part in a matmul (every transformer layer plus the output head; the
input-embedding lookup is not a matmul and is not counted; tied embeddings count once as the head; MoE: the
active path only), per training token:
    full        6·N + 6·L·s·(d_qk + d_v)               (PaLM appendix B: 6N + 12·L·H·s for d_qk = d_v = H)
    lora/qlora  4·N + 6·L·s·(d_qk + d_v) + 6·N_adapter  (frozen weights get no weight gradient)
    freeze      2·N + 2·N_head + 4·k·N_layer + 2·L·s·(d_qk + d_v) + 4·k·s·(d_qk + d_v)   (k trainable top layers)
where d_qk, d_v are the summed query-key and value widths of all heads (a·head_dim; MLA: a·(nope + rope), a·v)
and s the sequence length (no causal discount, as PaLM and nanoGPT `estimate_mfu` count it).
Full recomputation adds one forward pass to the hardware FLOPs (HFU) but not to the model FLOPs (MFU).
"""

from __future__ import annotations

from dataclasses import dataclass

from tools.catalog.architecture import ParamCount, mlp_params, param_count
from tools.catalog.gpu_spec import GpuSpec
from tools.catalog.model_spec import ModelSpec
from tools.errors import Unsupported
from tools.memo import per_record
from tools.units import TFLOPS


@dataclass(frozen=True)
class Shape:
    n_matmul: float  # N: parameters in matmuls on the active path (layers + head)
    n_head: float
    n_layer: float  # average active matmul parameters of one transformer layer
    n_sync: float  # parameters whose gradients are all-reduced across data-parallel replicas (full training)
    qk_dim: int
    v_dim: int
    layers: int
    hidden: int


@per_record
def shape(m: ModelSpec) -> Shape:
    p: ParamCount = param_count(m)
    head = m.vocab_size * m.hidden_size
    n_matmul = p.active - (p.embedding - head)  # drop the input lookup (0 when tied)
    experts = 0.0
    if m.is_moe:
        expert = mlp_params(m.hidden_size, m.moe_ffn_size or m.ffn_size, m.mlp)
        experts = p.n_moe_layers * (m.n_experts or 0) * expert
    if m.attention == "MLA":
        qk = m.n_heads * ((m.qk_nope_head_dim or m.head_dim) + (m.qk_rope_head_dim or 64))
        v = m.n_heads * (m.v_head_dim or m.head_dim)
    else:
        qk = v = m.n_heads * m.head_dim
    return Shape(
        n_matmul=float(n_matmul),
        n_head=float(head),
        n_layer=float((n_matmul - head) / m.n_layers),
        n_sync=float(p.total - experts),
        qk_dim=qk,
        v_dim=v,
        layers=m.n_layers,
        hidden=m.hidden_size,
    )


def lora_params(m: ModelSpec, rank: int, targets: str) -> float:
    """Adapter parameters, r·(d_in + d_out) per adapted linear layer (attention q, k, v, o; MLP matrices)."""
    h, a, k, d = m.hidden_size, m.n_heads, m.n_kv_heads, m.head_dim
    attn = rank * (2 * (h + a * d) + 2 * (h + k * d))
    if targets == "attention":
        return float(m.n_layers * attn)
    f = m.moe_ffn_size or m.ffn_size
    mats = 3 if m.mlp == "swiglu" else 2
    experts = (m.experts_per_token or 1) + (m.n_shared_experts or 0) if m.is_moe else 1  # active experts only
    return float(m.n_layers * (attn + mats * rank * (h + f) * experts))


def training_flops_per_token(
    m: ModelSpec,
    method: str,
    seq_len: int,
    *,
    recompute: bool,
    lora_rank: int = 16,
    lora_targets: str = "all-linear",
    trainable_layers: int = 2,
) -> tuple[float, float, float]:
    """(model FLOPs, hardware FLOPs, forward FLOPs) per training token."""
    s = shape(m)
    attn_fwd = 2 * s.layers * seq_len * (s.qk_dim + s.v_dim)  # QKᵀ and A·V, 2 FLOPs per MAC
    fwd = 2 * s.n_matmul + attn_fwd
    if method == "full":
        model = 3 * fwd
        extra = fwd
    elif method in ("lora", "qlora"):
        n_adapter = lora_params(m, lora_rank, lora_targets)
        model = 4 * s.n_matmul + 3 * attn_fwd + 6 * n_adapter
        fwd += 2 * n_adapter
        extra = fwd
    else:  # freeze: backward stops below the k-th layer from the top
        k = min(trainable_layers, s.layers)
        attn_layer = attn_fwd / s.layers
        model = fwd + 2 * s.n_head + 4 * k * s.n_layer + 2 * k * attn_layer
        extra = k * (2 * s.n_layer + attn_layer)
    return model, model + (extra if recompute else 0.0), fwd


def peak_flops(gpu: GpuSpec, precision: str, field: str = "precision") -> float:
    """The dense tensor peak of a GPU at a precision, FLOP/s; refused when the catalog has none."""
    value = gpu.peak_tflops(precision)
    if value is None:
        raise Unsupported(
            f"{gpu.name} has no published dense {precision} tensor rate; choose another precision.",
            f"{gpu.name} 没有公开的 {precision} 稠密算力；请换一种精度。",
            field=field,
        )
    return value * TFLOPS
