"""The generic dense model a bare size stands for ("70B", "700亿参数"): exactly that size, on a real family's shape."""

from __future__ import annotations

import datetime as dt
import functools
import math

from tools.catalog.records import ModelSpec, Source
from tools.units import plain

_GENERIC_SOURCE = Source(
    title="Generic modern dense decoder (Llama-3 proportions: GQA with 8 KV heads, head_dim 128, SwiGLU ffn = 3.5·h, "
    "128,256-token vocabulary)",
    url="https://arxiv.org/abs/2407.21783",
    as_of=dt.date(2024, 7, 31),
    fields=(
        "n_layers",
        "hidden_size",
        "n_heads",
        "n_kv_heads",
        "head_dim",
        "ffn_size",
        "vocab_size",
        "params_b",
        "max_context",
    ),
    verified=False,
    note="shape chosen by gpu-advisor to match the requested parameter count, in the proportions of Llama 3 "
    "(8B: 32 × 4096, ffn 14336; 70B: 80 × 8192, ffn 28672; vocabulary 128,256) and Qwen2.5 (GQA, 152K vocabulary); "
    "not a published model",
)

_HIDDEN_LADDER = (
    512,
    768,
    1024,
    1536,
    2048,
    2560,
    3072,
    4096,
    5120,
    6144,
    7168,
    8192,
    12288,
    16384,
    18432,
    20480,
    25600,
)
GENERIC_VOCAB = 128256  # Llama 3's; Qwen2.5's is 151,936 (both in the 128K–152K range of 2024–2026 models)
GENERIC_KV_HEADS = 8
GENERIC_TIED_BELOW = 4e9  # Llama-3.2-1B/3B and Qwen2.5 ≤ 3B tie the output head to the embedding


@functools.cache
def shaped_model(params_b: float, typed: str | None, anchor: ModelSpec | None) -> ModelSpec:
    """A modern dense decoder of exactly `params_b` billion parameters, on the shape of a real family.

    Depth and width are those of the catalog's dense model nearest in size ("7B" and "13B": Llama 2's 32 × 4096
    and 40 × 5120, "70B": 80 × 8192) when one is within `GENERIC_NEAR` of it, else the hidden size of the ladder
    whose layer count is closest to L ≈ h / 102 (Llama 3: 32 layers at 4096, 80 at 8192, 126 at 16384). Attention
    is GQA with 8 KV heads of 128, the vocabulary Llama 3's (tied below 4B), and the SwiGLU MLP width f is solved
    so that the parameters are the size said: "70B" is 70·10⁹ parameters, 140 GB of bf16 weights.
    """
    n = params_b * 1e9
    vocab = GENERIC_VOCAB
    tied = n < GENERIC_TIED_BELOW
    tables = 1 if tied else 2
    if anchor is not None:
        h, layers = anchor.hidden_size, anchor.n_layers
    else:
        h, layers = _ladder_shape(n, tables * vocab)
    heads = max(1, h // 128)
    kv = _kv_heads(heads)
    attn = 2 * h * h + 2 * h * kv * 128
    ffn = max(1, round((n - tables * vocab * h - layers * attn) / (3 * h * layers)))
    if (n - tables * vocab * h - layers * attn) <= 0:  # a size below one layer's attention: the smallest shape
        h, layers, heads, kv, ffn = 512, 1, 4, 4, 1792
    label = f"{plain(params_b)}B"
    shape = f"on the shape of {anchor.name}" if anchor is not None else "in Llama-3 proportions"
    return ModelSpec(
        id=f"generic-{label.lower()}",
        name=f"generic dense {label}",
        family="generic",
        org="gpu-advisor",
        n_layers=layers,
        hidden_size=h,
        n_heads=heads,
        n_kv_heads=kv,
        head_dim=h // heads,
        ffn_size=ffn,
        vocab_size=vocab,
        params_b=params_b,
        attention="GQA" if kv < heads else "MHA",
        max_context=131072,
        tie_embeddings=tied,
        sources=(_GENERIC_SOURCE,),
        generic=True,
        notes=(f"{typed!r} is not in the catalog; " if typed else "")
        + f"treated as a modern dense {label} model {shape} ({layers} layers, hidden {h}, "
        f"GQA with {kv} KV heads, Llama 3's vocabulary, MLP width {ffn} so that it has {label} parameters); "
        "name the model for its exact shape.",
    )


#: how far (ratio) the catalog's nearest dense model may be from a typed size to lend it its depth and width
GENERIC_NEAR = 1.25


def _ladder_shape(n: float, table_params: float) -> tuple[int, int]:
    """(hidden, layers) of the ladder entry whose depth is closest to h / 102 for n parameters."""
    best = None
    for h in _HIDDEN_LADDER:
        heads = max(1, h // 128)
        kv = _kv_heads(heads)
        ffn = int(math.ceil(3.5 * h / 256) * 256)
        per_layer = 2 * h * h + 2 * h * kv * 128 + 3 * h * ffn
        layers = round((n - table_params * h) / per_layer)
        if layers < 1:
            continue
        score = abs(math.log(layers / (h / 102)))
        if best is None or score < best[0]:
            best = (score, h, layers)
    return (512, 1) if best is None else (best[1], best[2])


def _kv_heads(heads: int) -> int:
    """8 KV heads, or the largest divisor of the head count below 8."""
    return max(k for k in range(1, min(GENERIC_KV_HEADS, heads) + 1) if heads % k == 0)


#: a generic MoE routes each token to 8 experts (Qwen3-235B-A22B, DeepSeek-V3 and Kimi-K2 all pick 8)
GENERIC_TOP_K = 8

_GENERIC_MOE_SOURCE = Source(
    title="Generic MoE decoder (Qwen3-MoE proportions: every layer MoE, 8 routed experts per token, GQA with 8 KV "
    "heads of 128, SwiGLU experts, 128,256-token vocabulary)",
    url="https://huggingface.co/Qwen/Qwen3-235B-A22B/blob/main/config.json",
    as_of=dt.date(2025, 4, 29),
    fields=(*_GENERIC_SOURCE.fields, "active_params_b", "n_experts", "experts_per_token"),
    verified=False,
    note="shape chosen by gpu-advisor to match the stated total and active parameter counts: depth and width those "
    "of a dense model of the active size, the expert count and width solved for both counts; not a published model",
)


@functools.cache
def shaped_moe(total_b: float, active_b: float, typed: str | None = None) -> ModelSpec:
    """A MoE of `total_b` billion parameters with `active_b` billion activated per token.

    Depth and width are those of a dense model of the active size (the ladder of `shaped_model`); every layer is
    MoE with 8 routed experts per token. With `base` the embeddings and attention, the expert count E solves
    (total − base) / (active − base) = E / 8, then the expert width makes the total exact (the active count
    lands within a few percent: E is a whole number). Weights are counted on the total, FLOPs and decode
    bandwidth on the active parameters, as for any catalog MoE.
    """
    total, active = total_b * 1e9, active_b * 1e9
    vocab = GENERIC_VOCAB
    h, layers = _ladder_shape(active, 2 * vocab)
    heads = max(1, h // 128)
    kv = _kv_heads(heads)
    attn = 2 * h * h + 2 * h * kv * 128
    base = 2 * vocab * h + layers * attn
    if active <= base:  # an active size below the embeddings and attention: a smaller shape
        h, layers, heads, kv = 512, 1, 4, 4
        attn = 2 * h * h + 2 * h * kv * 128
        base = 2 * vocab * h + layers * attn
    experts = max(GENERIC_TOP_K + 1, round(GENERIC_TOP_K * (total - base) / max(active - base, 1.0)))
    width = max(1, round((total - base - layers * h * experts) / (3 * h * layers * experts)))
    label = f"{plain(total_b)}B-A{plain(active_b)}B"
    return ModelSpec(
        id=f"generic-moe-{label.lower()}",
        name=f"generic MoE {label}",
        family="generic",
        org="gpu-advisor",
        n_layers=layers,
        hidden_size=h,
        n_heads=heads,
        n_kv_heads=kv,
        head_dim=h // heads,
        ffn_size=width,
        vocab_size=vocab,
        params_b=total_b,
        active_params_b=active_b,
        n_experts=experts,
        n_shared_experts=0,
        experts_per_token=GENERIC_TOP_K,
        moe_ffn_size=width,
        n_dense_layers=0,
        attention="GQA" if kv < heads else "MHA",
        max_context=131072,
        sources=(_GENERIC_MOE_SOURCE,),
        generic=True,
        notes=(f"{typed!r} is not in the catalog; " if typed else "")
        + f"treated as a generic MoE of {plain(total_b)}B total, {plain(active_b)}B active ({layers} layers, hidden "
        f"{h}, {experts} experts of width {width}, {GENERIC_TOP_K} per token, GQA with {kv} KV heads): weights on the "
        "total, compute and decode bandwidth on the active parameters; name the model for its exact shape.",
    )
