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
"""

from __future__ import annotations

from dataclasses import dataclass

from tools.catalog.model_spec import ModelSpec
from tools.errors import Unsupported
from tools.memo import per_record


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

    @property
    def layers_total(self) -> int:
        return (self.n_dense_layers + self.n_moe_layers) * self.attention_per_layer + (
            self.n_dense_layers * self.mlp_per_layer_dense + self.n_moe_layers * self.mlp_per_layer_moe_total
        )

    @property
    def total(self) -> int:
        return self.embedding + self.layers_total

    @property
    def active(self) -> int:
        return (
            self.embedding
            + (self.n_dense_layers + self.n_moe_layers) * self.attention_per_layer
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
    return h * a * d + 2 * h * k * d + a * d * h


def mlp_params(h: int, f: int, kind: str) -> int:
    return (3 if kind == "swiglu" else 2) * h * f


@per_record
def param_count(m: ModelSpec) -> ParamCount:
    """Parameter counts of a model (memoised per record: every calculator call needs them)."""
    h = m.hidden_size
    table = m.vocab_size * h
    embedding = table * (1 if m.tie_embeddings else 2)
    attn = attention_params(m)
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
        )
    return ParamCount(embedding, attn, dense, 0, 0, m.n_layers, 0, table)


def kv_elements_per_token(m: ModelSpec) -> int:
    """Elements cached per token across all layers.

    GQA/MHA/MQA: 2 · L · k · d (keys and values of the KV heads).
    MLA: L · (kv_lora_rank + qk_rope_head_dim) (the compressed latent plus the decoupled RoPE key).
    """
    if m.attention == "MLA":
        return m.n_layers * ((m.kv_lora_rank or 512) + (m.qk_rope_head_dim or 64))
    return 2 * m.n_layers * m.n_kv_heads * m.head_dim


def kv_bytes_per_token(m: ModelSpec, bytes_per_element: float) -> float:
    return kv_elements_per_token(m) * bytes_per_element


def tp_splits(m: ModelSpec, tp: int) -> bool:
    """A tensor-parallel size the engines accept: it divides the attention heads, and it divides the KV heads or
    is a multiple of them (each KV head then replicated on tp / kv GPUs, as vLLM and SGLang do)."""
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
