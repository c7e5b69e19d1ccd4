"""One language model in the model catalog (tools/data/models.yaml)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from tools.catalog.record_base import Frozen, Source


class LinearAttention(Frozen):
    """The linear-attention layers of a hybrid model: no KV cache, a fixed recurrent state per sequence.

    "gated_deltanet" (Qwen3-Next; Hugging Face `linear_*` fields): q, k from `n_key_heads` × `key_head_dim`, v and
    an output gate from `n_value_heads` × `value_head_dim`, a short causal convolution of `conv_kernel` taps over
    q, k, v; the state is one key_head_dim × value_head_dim matrix per value head plus the last conv_kernel − 1
    inputs. "lightning" (MiniMax-M1): the model's own heads (n_heads × head_dim) with an output gate; the state is
    one head_dim × head_dim matrix per head.
    """

    kind: Literal["gated_deltanet", "lightning"]
    n_key_heads: int | None = Field(default=None, gt=0)
    n_value_heads: int | None = Field(default=None, gt=0)
    key_head_dim: int | None = Field(default=None, gt=0)
    value_head_dim: int | None = Field(default=None, gt=0)
    conv_kernel: int = Field(default=0, ge=0)


class ModelSpec(Frozen):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9.\-]*$")
    name: str
    family: str
    org: str
    aliases: tuple[str, ...] = ()
    n_layers: int = Field(gt=0)
    hidden_size: int = Field(gt=0)
    n_heads: int = Field(gt=0)
    n_kv_heads: int = Field(gt=0)
    head_dim: int = Field(gt=0)
    ffn_size: int = Field(gt=0)  # per expert for MoE
    vocab_size: int = Field(gt=0)
    params_b: float = Field(gt=0)  # total parameters, billions
    active_params_b: float | None = Field(default=None, gt=0)  # MoE: activated per token
    #: True when the published activated count leaves out the input embedding (DeepSeek's convention)
    active_excludes_embedding: bool = False
    n_experts: int | None = Field(default=None, gt=0)  # routed experts
    n_shared_experts: int | None = Field(default=None, ge=0)
    experts_per_token: int | None = Field(default=None, gt=0)
    moe_ffn_size: int | None = Field(default=None, gt=0)
    #: dense layers in a MoE: leading (DeepSeek's first_k_dense_replace) or interleaved (Llama 4 Maverick's every
    #: other layer); the counts, not the positions, size the model. Their MLP is `ffn_size` wide.
    n_dense_layers: int | None = Field(default=None, ge=0)
    #: the format the routed experts' weights are published in when it is not the rest's: gpt-oss ships its
    #: experts in MXFP4 (4-bit values with one 8-bit scale per 32, 4.25 bits) and everything else in bf16
    expert_precision: Literal["mxfp4"] | None = None
    attention: Literal["MHA", "GQA", "MQA", "MLA"]
    #: MLA: the compressed KV latent rank and the decoupled RoPE key dim (DeepSeek-V2/V3)
    kv_lora_rank: int | None = Field(default=None, gt=0)
    qk_rope_head_dim: int | None = Field(default=None, gt=0)
    qk_nope_head_dim: int | None = Field(default=None, gt=0)
    v_head_dim: int | None = Field(default=None, gt=0)
    q_lora_rank: int | None = Field(default=None, gt=0)
    #: layers whose attention sees only the last `attention_window` tokens (sliding window: gpt-oss, 128) or the
    #: current chunk of that many tokens (chunked attention: Llama 4, 8192): their KV cache stops growing there
    n_window_layers: int = Field(default=0, ge=0)
    attention_window: int | None = Field(default=None, gt=0)
    window_kind: Literal["sliding", "chunked"] | None = None
    #: layers with linear attention instead of softmax attention (no KV cache; `linear_attention` gives the shape)
    n_linear_layers: int = Field(default=0, ge=0)
    linear_attention: LinearAttention | None = None
    #: softmax attention with a sigmoid output gate from a second query-sized projection (Qwen3-Next)
    attention_output_gate: bool = False
    #: learned per-head attention sinks (gpt-oss): one logit per head, too few parameters to count
    attention_sinks: bool = False
    #: a vision encoder beside the text decoder (ViT: attention 4·h² + MLP 2·h·f per layer), counted in the total
    #: and the weights, never in the parameters a text token activates
    vision_layers: int | None = Field(default=None, gt=0)
    vision_hidden_size: int | None = Field(default=None, gt=0)
    vision_ffn_size: int | None = Field(default=None, gt=0)
    #: an encoder-decoder (Whisper): the encoder is the plain transformer of the `vision_*` fields (an audio encoder
    #: there) and every decoder layer adds a cross-attention over its output (q, k, v, o: 4·h²), counted with it
    cross_attention: bool = False
    #: "swiglu" (gate, up, down: 3 matrices) or "gelu" (up, down: 2 matrices)
    mlp: Literal["swiglu", "gelu"] = "swiglu"
    max_context: int = Field(gt=0)
    #: the precision the weights are published in (DeepSeek-V3/R1 ship FP8); None means bf16/fp16
    native_precision: Literal["bf16", "fp16", "fp8"] | None = None
    tie_embeddings: bool = False
    license: str | None = None
    release: str | None = None  # "2024-09"
    sources: tuple[Source, ...]
    notes: str | None = None
    #: True for the generic dense architecture built for a bare size ("65B")
    generic: bool = False
    #: a family's name written without a size that means this model ("ChatGLM" is ChatGLM-6B, "Mistral" is
    #: Mistral-7B): the size the family is known for. Read only when the question names no size; the answer says so.
    family_default: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _consistent(self) -> ModelSpec:
        if self.n_heads % self.n_kv_heads:
            raise ValueError("n_heads must be a multiple of n_kv_heads")
        if self.attention == "MLA" and not self.kv_lora_rank:
            raise ValueError("MLA models need kv_lora_rank")
        if self.n_experts and not (self.experts_per_token and self.active_params_b):
            raise ValueError("MoE models need experts_per_token and active_params_b")
        if self.n_window_layers and not self.attention_window:
            raise ValueError("windowed attention layers need attention_window")
        if self.n_linear_layers and not self.linear_attention:
            raise ValueError("linear attention layers need linear_attention")
        if self.n_window_layers + self.n_linear_layers > self.n_layers:
            raise ValueError("n_window_layers + n_linear_layers must not exceed n_layers")
        if self.expert_precision and not self.n_experts:
            raise ValueError("expert_precision is for MoE models")
        if bool(self.vision_layers) != bool(self.vision_hidden_size and self.vision_ffn_size):
            raise ValueError("a vision encoder needs vision_layers, vision_hidden_size and vision_ffn_size")
        if self.cross_attention and not self.vision_layers:
            raise ValueError(
                "cross_attention needs the encoder's vision_layers, vision_hidden_size and vision_ffn_size"
            )
        return self

    @property
    def is_moe(self) -> bool:
        return bool(self.n_experts)

    @property
    def n_full_attention_layers(self) -> int:
        """Layers whose KV cache grows with the whole context."""
        return self.n_layers - self.n_window_layers - self.n_linear_layers

    @property
    def active_b(self) -> float:
        return self.active_params_b or self.params_b
