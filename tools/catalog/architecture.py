"""Parameter counts and KV-cache sizes worked out from a model's published config.

All counts are in parameters (not bytes); biases and norm weights are ignored (< 0.1%: the
QKV biases of Qwen2/GLM add about 0.01%). Symbols: h hidden size, L layers, a query heads,
k KV heads, d head dim, f ffn size, V vocabulary.

Conventions checked against published totals (tests/tools/catalog/test_catalog_models.py):
- a tied output head shares the input embedding (counted once);
- MoE "active" counts both embeddings plus, per layer, attention, the top-k routed experts, the
  shared experts and the router. DeepSeek publishes activated counts without the input embedding
  (DeepSeek-V3 README_WEIGHTS: 36.6B "including 0.9B for the output head"), which is
  `active_excluding_input_embedding`; a model's `active_excludes_embedding` flag says which one
  its published figure uses.
- hybrid attention: a linear-attention layer (Gated DeltaNet, lightning) has its own projections in place of the
  softmax attention's; a gated attention adds one query-sized projection (h·a·d); a vision encoder counts in the
  total, not in the active parameters.
- KV cache per sequence: full-attention layers hold every token, windowed layers (sliding or chunked) at most
  `attention_window` tokens, linear-attention layers a fixed state whatever the context.
"""

from __future__ import annotations

from dataclasses import dataclass

from tools.catalog.model_spec import ModelSpec
from tools.errors import Unsupported
from tools.memo import per_record
from tools.units import BYTES_PER_PARAM, MXFP4_BYTES


@dataclass(frozen=True)
class ParamCount:
    embedding: int  # input embedding + untied output head
    attention_per_layer: int
    mlp_per_layer_dense: int  # a dense layer's MLP (0 when every layer is MoE)
    mlp_per_layer_moe_total: int  # a MoE layer: all experts + shared experts + router
    mlp_per_layer_moe_active: int  # a MoE layer: routed top-k + shared experts + router
    n_dense_layers: int
    n_moe_layers: int
    input_embedding: int = 0  # the V·h input table alone (part of `embedding`)
    #: a MoE layer's MLP parameters gathered at once under ZeRO-3: shared experts + router + the top-k routed
    #: experts (each expert is its own module, gathered as it is used, not the whole layer's experts together)
    moe_gathered: int = 0
    #: every layer's attention, when the layers differ (linear-attention layers beside softmax ones); 0: all alike
    attention_all_layers: int = 0
    vision: int = 0  # a vision encoder's parameters: in the total, never active
    routed_experts: int = 0  # every routed expert of every MoE layer (what an expert-only format stores)

    @property
    def attention_total(self) -> int:
        return self.attention_all_layers or (self.n_dense_layers + self.n_moe_layers) * self.attention_per_layer

    @property
    def layers_total(self) -> int:
        return self.attention_total + (
            self.n_dense_layers * self.mlp_per_layer_dense + self.n_moe_layers * self.mlp_per_layer_moe_total
        )

    @property
    def total(self) -> int:
        return self.embedding + self.layers_total + self.vision

    @property
    def active(self) -> int:
        return (
            self.embedding
            + self.attention_total
            + self.n_dense_layers * self.mlp_per_layer_dense
            + self.n_moe_layers * self.mlp_per_layer_moe_active
        )

    @property
    def active_excluding_input_embedding(self) -> int:
        """Activated parameters that do arithmetic per token: the input lookup is not a matmul."""
        return self.active - self.input_embedding

    @property
    def largest_layer(self) -> int:
        """The biggest single block ZeRO-3 must gather at once: a layer, the input embedding or the output head.

        The input embedding and an untied output head are separate modules, gathered one at a time (counting
        their sum as one block overstated every large-vocabulary run).
        """
        per_layer = self.attention_per_layer + max(self.mlp_per_layer_dense, self.moe_gathered)
        table = self.input_embedding or self.embedding
        return max(per_layer, table, self.embedding - table)


def attention_params(m: ModelSpec) -> int:
    h, a, k, d = m.hidden_size, m.n_heads, m.n_kv_heads, m.head_dim
    if m.attention == "MLA":
        rope = m.qk_rope_head_dim or 64
        nope = m.qk_nope_head_dim or d
        v = m.v_head_dim or d
        kv_rank = m.kv_lora_rank or 512
        if m.q_lora_rank:
            q = h * m.q_lora_rank + m.q_lora_rank * a * (nope + rope)
        else:
            q = h * a * (nope + rope)
        kv = h * (kv_rank + rope) + kv_rank * a * (nope + v)
        return q + kv + a * v * h
    gate = h * a * d if m.attention_output_gate else 0
    return h * a * d + 2 * h * k * d + a * d * h + gate


def linear_attention_params(m: ModelSpec) -> int:
    """One linear-attention layer's projections (the per-head decay and norm vectors, a few hundred, left out).

    Gated DeltaNet: in-projections to q, k (n_key_heads · key_head_dim each), v and the output gate
    (n_value_heads · value_head_dim each) and the two per-value-head gates (β, decay); the causal convolution over
    q, k, v; the out-projection. Lightning attention: q, k, v, an output gate and the out-projection, all at the
    model's heads × head dim.
    """
    la, h = m.linear_attention, m.hidden_size
    if la is None:
        return 0
    if la.kind == "lightning":
        return 5 * h * m.n_heads * m.head_dim
    keys = (la.n_key_heads or m.n_heads) * (la.key_head_dim or m.head_dim)
    values = (la.n_value_heads or m.n_heads) * (la.value_head_dim or m.head_dim)
    heads = la.n_value_heads or m.n_heads
    return h * (2 * keys + 2 * values + 2 * heads) + la.conv_kernel * (2 * keys + values) + values * h


def linear_state_elements(m: ModelSpec) -> int:
    """Elements of one linear-attention layer's recurrent state for one sequence (fixed, whatever the context)."""
    la = m.linear_attention
    if la is None:
        return 0
    if la.kind == "lightning":
        return m.n_heads * m.head_dim * m.head_dim
    dk, dv = la.key_head_dim or m.head_dim, la.value_head_dim or m.head_dim
    nk, nv = la.n_key_heads or m.n_heads, la.n_value_heads or m.n_heads
    conv = max(0, la.conv_kernel - 1) * (2 * nk * dk + nv * dv)
    return nv * dk * dv + conv


def vision_params(m: ModelSpec) -> int:
    """A ViT encoder: per layer attention 4·h² and a two-matrix MLP 2·h·f (patch embedding and projector left out);
    an encoder-decoder's encoder the same, plus the decoder's cross-attention (4·h² per decoder layer)."""
    if not m.vision_layers:
        return 0
    h, f = m.vision_hidden_size or 0, m.vision_ffn_size or 0
    cross = m.n_layers * 4 * m.hidden_size * m.hidden_size if m.cross_attention else 0
    return m.vision_layers * (4 * h * h + 2 * h * f) + cross


def mlp_params(h: int, f: int, kind: str) -> int:
    return (3 if kind == "swiglu" else 2) * h * f


@per_record
def param_count(m: ModelSpec) -> ParamCount:
    """Parameter counts of a model (memoised per record: every calculator call needs them)."""
    h = m.hidden_size
    table = m.vocab_size * h
    embedding = table * (1 if m.tie_embeddings else 2)
    attn = attention_params(m)
    extra: dict[str, int] = {"vision": vision_params(m)}
    if m.n_linear_layers:  # a hybrid: the largest layer's attention for ZeRO-3, every layer's for the total
        linear = linear_attention_params(m)
        extra["attention_all_layers"] = m.n_linear_layers * linear + (m.n_layers - m.n_linear_layers) * attn
        attn = max(attn, linear)
    dense = mlp_params(h, m.ffn_size, m.mlp)
    if m.is_moe:
        expert = mlp_params(h, m.moe_ffn_size or m.ffn_size, m.mlp)
        shared = (m.n_shared_experts or 0) * expert
        router = h * (m.n_experts or 0)
        moe_total = (m.n_experts or 0) * expert + shared + router
        moe_active = (m.experts_per_token or 0) * expert + shared + router
        n_dense = m.n_dense_layers or 0
        return ParamCount(
            embedding,
            attn,
            dense if n_dense else 0,
            moe_total,
            moe_active,
            n_dense,
            m.n_layers - n_dense,
            table,
            moe_gathered=moe_active,
            routed_experts=(m.n_layers - n_dense) * (m.n_experts or 0) * expert,
            **extra,
        )
    return ParamCount(embedding, attn, dense, 0, 0, m.n_layers, 0, table, **extra)


def kv_elements_per_layer_token(m: ModelSpec) -> int:
    """Elements one softmax-attention layer caches per token.

    GQA/MHA/MQA: 2 · k · d (keys and values of the KV heads).
    MLA: kv_lora_rank + qk_rope_head_dim (the compressed latent plus the decoupled RoPE key).
    """
    if m.attention == "MLA":
        return (m.kv_lora_rank or 512) + (m.qk_rope_head_dim or 64)
    return 2 * m.n_kv_heads * m.head_dim


def kv_elements_per_token(m: ModelSpec) -> int:
    """Elements cached per token by every layer that keeps a KV cache (full and windowed layers): exact while the
    context is within the window; beyond it see `kv_elements_per_sequence`. Linear-attention layers keep none."""
    return (m.n_layers - m.n_linear_layers) * kv_elements_per_layer_token(m)


@dataclass(frozen=True)
class KvLayout:
    """What one sequence caches, in elements: `full` per token of the context (full-attention layers), `windowed`
    per token up to `window` tokens (sliding or chunked layers), `state` once (linear-attention layers)."""

    full: int
    windowed: int
    window: int
    state: int

    def elements(self, context: int) -> int:
        return self.full * context + self.windowed * min(context, self.window) + self.state


def kv_layout(m: ModelSpec) -> KvLayout:
    per = kv_elements_per_layer_token(m)
    return KvLayout(
        full=m.n_full_attention_layers * per,
        windowed=m.n_window_layers * per,
        window=m.attention_window or 0,
        state=m.n_linear_layers * linear_state_elements(m),
    )


def kv_elements_per_sequence(m: ModelSpec, context: int) -> int:
    """Elements cached for one sequence of `context` tokens: full-attention layers hold every token, windowed layers
    at most `attention_window`, linear-attention layers their fixed state."""
    return kv_layout(m).elements(context)


def kv_bytes_per_token(m: ModelSpec, bytes_per_element: float) -> float:
    return kv_elements_per_token(m) * bytes_per_element


def kv_bytes_per_sequence(m: ModelSpec, context: int, bytes_per_element: float) -> float:
    return kv_elements_per_sequence(m, context) * bytes_per_element


def expert_format_delta(m: ModelSpec, p: ParamCount, precision: str) -> float:
    """Bytes to add to the weights at `precision` (counted as if every weight were in it) for routed experts the
    checkpoint stores in their own format (gpt-oss: MXFP4): applied when the weights are served at the precision the
    rest is published in, which is how engines load such a checkpoint; 0 for every other model or precision."""
    own = published_expert_bytes(m, precision)
    return 0.0 if own is None else p.routed_experts * (own - BYTES_PER_PARAM[precision])


def published_expert_bytes(m: ModelSpec, precision: str) -> float | None:
    """Bytes per routed-expert weight where the checkpoint keeps the experts in their own format and the rest is
    served at its published precision (`expert_format_delta`); None otherwise."""
    if m.expert_precision is None or precision != (m.native_precision or "bf16"):
        return None
    return MXFP4_BYTES


def tp_splits(m: ModelSpec, tp: int) -> bool:
    """A tensor-parallel size the engines accept: it divides the attention heads, and it divides the KV heads or
    is a multiple of them (each KV head then replicated on tp / kv GPUs, as vLLM and SGLang do). A generic shape's
    head count is our assumption (hidden ÷ 128), not the model's: any power-of-two size splits it, as the real models
    of every size are built for (a "27B" on 42 heads would otherwise refuse the tp=2 its user runs)."""
    if m.generic:
        return tp >= 1 and tp & (tp - 1) == 0
    return m.n_heads % tp == 0 and (m.n_kv_heads % tp == 0 or tp % m.n_kv_heads == 0)


def check_parallel(m: ModelSpec, tp: int, pp: int) -> None:
    """Tensor parallel must split the heads (and the KV heads, or be split by them); pp ≤ layers."""
    if not tp_splits(m, tp):
        sizes = ", ".join(str(t) for t in range(1, m.n_heads + 1) if tp_splits(m, t) and t <= 64)
        raise Unsupported(
            f"tp={tp} does not divide {m.name}'s {m.n_heads} attention heads ({m.n_kv_heads} KV heads): serving "
            f"engines (vLLM, SGLang, TensorRT-LLM) refuse it. Tensor-parallel sizes that work: {sizes}; "
            "for other GPU counts use pipeline parallelism or separate replicas.",
            f"张量并行 tp={tp} 不能整除 {m.name} 的 {m.n_heads} 个注意力头（{m.n_kv_heads} 个 KV 头），vLLM、SGLang、"
            f"TensorRT-LLM 等推理引擎会拒绝启动。可用的张量并行规模：{sizes}；其他卡数请用流水线并行或多副本。",
            field="tp",
        )
    if pp > m.n_layers:
        raise Unsupported(
            f"pp={pp} is more pipeline stages than {m.name}'s {m.n_layers} layers.",
            f"流水线并行 pp={pp} 超过了 {m.name} 的层数 {m.n_layers}。",
            field="pp",
        )
