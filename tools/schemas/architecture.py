"""A model that is not in the catalog, given by its shape: the `model` object of fit_training / fit_inference.

The input is laid out so that every combination its JSON schema allows is a model the calculators can
size: query heads are given as KV heads × heads per KV head (so they always divide), mixture-of-experts
and multi-head latent attention are nested objects (their fields come together or not at all), and the
parameter counts are worked out from the shape rather than typed in. Two leftovers are resolved and
stated: a top-k above the expert count routes to every expert, and dense leading layers are capped at
the layer count. Python callers may still pass a catalog `ModelSpec` record itself.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, InstanceOf, Tag, model_validator
from pydantic.json_schema import SkipJsonSchema

from tools.catalog.architecture import param_count
from tools.catalog.model_spec import ModelSpec
from tools.schemas.common import ToolInput


class MoeLayers(ToolInput):
    """Mixture-of-experts layers (Hugging Face names in brackets)."""

    n_experts: int = Field(ge=1, le=1024, description="Routed experts per MoE layer [n_routed_experts].")
    experts_per_token: int = Field(ge=1, le=1024, description="Routed experts per token, top-k [num_experts_per_tok].")
    expert_ffn_size: int | None = Field(
        None, ge=1, le=1_048_576, description="One expert's FFN width; omitted: ffn_size [moe_intermediate_size]."
    )
    n_shared_experts: int = Field(0, ge=0, le=64, description="Experts every token uses.")
    n_dense_layers: int = Field(
        0, ge=0, le=1024, description="Dense layers, leading or interleaved [first_k_dense_replace]."
    )
    expert_precision: Literal["mxfp4"] | None = Field(
        None, description="The routed experts' published format when it is not the rest's (gpt-oss: mxfp4)."
    )


class MlaAttention(ToolInput):
    """Multi-head latent attention (DeepSeek-V2/V3): the KV cache holds a compressed latent per token."""

    kv_lora_rank: int = Field(ge=1, le=65_536, description="Rank of the compressed KV latent.")
    qk_rope_head_dim: int = Field(64, ge=1, le=1024, description="Decoupled RoPE key width.")
    qk_nope_head_dim: int | None = Field(None, ge=1, le=1024, description="Omitted: head_dim.")
    v_head_dim: int | None = Field(None, ge=1, le=1024, description="Omitted: head_dim.")
    q_lora_rank: int | None = Field(None, ge=1, le=65_536, description="Rank of the compressed query; omitted: none.")


class WindowedLayers(ToolInput):
    """Layers whose attention sees only a window of tokens: their KV cache stops growing there."""

    n_layers: int = Field(ge=1, le=1024, description="Layers with windowed attention (the rest attend to everything).")
    window: int = Field(ge=1, le=10_000_000, description="Tokens each keeps [sliding_window, attention_chunk_size].")
    kind: Literal["sliding", "chunked"] = Field("sliding", description="Sliding window (gpt-oss) or chunks (Llama 4).")


class LinearLayers(ToolInput):
    """Linear-attention layers (no KV cache, a fixed state per sequence) in place of softmax attention."""

    n_layers: int = Field(ge=1, le=1024, description="Layers with linear attention.")
    kind: Literal["gated_deltanet", "lightning"] = Field(
        "gated_deltanet", description="Gated DeltaNet (Qwen3-Next; the head fields below) or lightning (MiniMax)."
    )
    n_key_heads: int | None = Field(None, ge=1, le=1024, description="[linear_num_key_heads]; omitted: heads.")
    n_value_heads: int | None = Field(None, ge=1, le=1024, description="[linear_num_value_heads]; omitted: heads.")
    key_head_dim: int | None = Field(None, ge=1, le=1024, description="[linear_key_head_dim]; omitted: head_dim.")
    value_head_dim: int | None = Field(None, ge=1, le=1024, description="[linear_value_head_dim]; omitted: head_dim.")
    conv_kernel: int = Field(0, ge=0, le=64, description="Causal convolution taps [linear_conv_kernel_dim].")


class Architecture(ToolInput):
    """A decoder-only transformer by its config (Hugging Face config.json names in brackets)."""

    name: str = Field("custom model", min_length=1, max_length=100, pattern=r"^[^\x00-\x1f\x7f]*$")
    n_layers: int = Field(ge=1, le=1024, description="Transformer layers [num_hidden_layers].")
    hidden_size: int = Field(ge=1, le=65_536)
    n_kv_heads: int = Field(ge=1, le=1024, description="Key/value heads [num_key_value_heads].")
    heads_per_kv: int = Field(
        1, ge=1, le=256, description="Query heads per KV head: num_attention_heads / num_key_value_heads (1: MHA)."
    )
    head_dim: int = Field(ge=1, le=1024)
    ffn_size: int = Field(ge=1, le=1_048_576, description="Dense MLP width [intermediate_size].")
    vocab_size: int = Field(ge=1, le=1_048_576)
    mlp: Literal["swiglu", "gelu"] = Field("swiglu", description="swiglu (gate, up, down) or gelu (up, down).")
    tie_embeddings: bool = Field(False, description="Output head shares the input embedding [tie_word_embeddings].")
    max_context: int = Field(131_072, ge=1, le=10_000_000, description="[max_position_embeddings]")
    native_precision: Literal["bf16", "fp16", "fp8"] | None = Field(None, description="Published weight precision.")
    moe: MoeLayers | None = Field(None, description="Mixture-of-experts layers; omitted: dense.")
    mla: MlaAttention | None = Field(None, description="Multi-head latent attention; omitted: MHA/GQA/MQA.")
    windowed: WindowedLayers | None = Field(None, description="Sliding-window or chunked layers; omitted: none.")
    linear: LinearLayers | None = Field(None, description="Linear-attention layers; omitted: none.")
    attention_output_gate: bool = Field(False, description="A sigmoid output gate on attention (Qwen3-Next).")

    @model_validator(mode="after")
    def _resolve(self) -> Architecture:
        moe = self.moe
        if moe is not None and moe.experts_per_token > moe.n_experts:
            self.note(
                "experts_per_token",
                moe.n_experts,
                note=f"top-{moe.experts_per_token} of {moe.n_experts} experts: every token uses all of them",
            )
            moe.resolve(experts_per_token=moe.n_experts)
        if moe is not None and moe.n_dense_layers > self.n_layers:
            self.note(
                "n_dense_layers",
                self.n_layers,
                note=f"{moe.n_dense_layers} dense layers of {self.n_layers}: every layer is dense, none has experts",
            )
            moe.resolve(n_dense_layers=self.n_layers)
        linear = self.linear.n_layers if self.linear else 0
        if self.linear is not None and linear > self.n_layers:
            self.note("linear.n_layers", self.n_layers, note=f"{linear} linear layers of {self.n_layers}: every layer")
            self.linear.resolve(n_layers=self.n_layers)
            linear = self.n_layers
        if self.windowed is not None and self.windowed.n_layers > self.n_layers - linear:
            left = self.n_layers - linear
            self.note(
                "windowed.n_layers", left, note=f"{self.windowed.n_layers} windowed layers of the {left} with attention"
            )
            if left:
                self.windowed.resolve(n_layers=left)
            else:
                self.resolve(windowed=None)
        return self

    def spec(self) -> ModelSpec:
        """The record the calculators size, with the parameter counts worked out from the shape."""
        heads = self.n_kv_heads * self.heads_per_kv
        attention = "MLA" if self.mla else "MHA" if self.heads_per_kv == 1 else "MQA" if self.n_kv_heads == 1 else "GQA"
        fields: dict[str, Any] = dict(
            id="custom",
            name=self.name,
            family="custom",
            org="user",
            n_layers=self.n_layers,
            hidden_size=self.hidden_size,
            n_heads=heads,
            n_kv_heads=self.n_kv_heads,
            head_dim=self.head_dim,
            ffn_size=self.ffn_size,
            vocab_size=self.vocab_size,
            params_b=1.0,
            attention=attention,
            mlp=self.mlp,
            max_context=self.max_context,
            native_precision=self.native_precision,
            tie_embeddings=self.tie_embeddings,
            sources=(),
            notes="an architecture given in the request",
        )
        if self.mla:
            fields.update(self.mla.model_dump())
        if self.windowed:
            w = self.windowed
            fields.update(n_window_layers=w.n_layers, attention_window=w.window, window_kind=w.kind)
        if self.linear:
            la = self.linear.model_dump()
            fields.update(n_linear_layers=la.pop("n_layers"), linear_attention=la)
        fields["attention_output_gate"] = self.attention_output_gate
        if self.moe:
            m = self.moe
            fields.update(
                n_experts=m.n_experts,
                experts_per_token=m.experts_per_token,
                moe_ffn_size=m.expert_ffn_size,
                n_shared_experts=m.n_shared_experts,
                n_dense_layers=m.n_dense_layers,
                expert_precision=m.expert_precision,
                active_params_b=1.0,
            )
        counts = param_count(ModelSpec(**fields))
        fields["params_b"] = counts.total / 1e9
        if self.moe:
            fields["active_params_b"] = counts.active / 1e9
        return ModelSpec(**fields)


def _kind(value: Any) -> str:
    return (
        "spec" if isinstance(value, ModelSpec) else "architecture" if isinstance(value, dict | Architecture) else "name"
    )


#: a model as a tool takes it: a name or size ("Qwen2.5-7B", "70B"), an `Architecture` object, or (Python callers
#: only, not in the JSON schema) a catalog `ModelSpec` record; an `Architecture` becomes a `ModelSpec` through
#: `resolve_model` before the calculator runs
ModelRef = Annotated[
    Annotated[str, Tag("name")]
    | Annotated[Architecture, Tag("architecture")]
    | Annotated[SkipJsonSchema[InstanceOf[ModelSpec]], Tag("spec")],
    Discriminator(_kind),
]


def resolve_model(inp: ToolInput) -> None:
    """Swap an `Architecture` for the `ModelSpec` it describes, keeping what it assumed (validators only)."""
    arch = getattr(inp, "model", None)
    if isinstance(arch, Architecture):
        for n in arch.notes:
            inp.note(f"model.{n.key}", n.value, n.unit, n.note)
        inp.resolve(model=arch.spec())
