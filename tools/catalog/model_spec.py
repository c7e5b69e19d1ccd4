"""One language model in the model catalog (tools/data/models.yaml)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from tools.catalog.record_base import Frozen, Source


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
    n_dense_layers: int | None = Field(default=None, ge=0)  # leading dense layers in a MoE
    attention: Literal["MHA", "GQA", "MQA", "MLA"]
    #: MLA: the compressed KV latent rank and the decoupled RoPE key dim (DeepSeek-V2/V3)
    kv_lora_rank: int | None = Field(default=None, gt=0)
    qk_rope_head_dim: int | None = Field(default=None, gt=0)
    qk_nope_head_dim: int | None = Field(default=None, gt=0)
    v_head_dim: int | None = Field(default=None, gt=0)
    q_lora_rank: int | None = Field(default=None, gt=0)
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

    @model_validator(mode="after")
    def _consistent(self) -> ModelSpec:
        if self.n_heads % self.n_kv_heads:
            raise ValueError("n_heads must be a multiple of n_kv_heads")
        if self.attention == "MLA" and not self.kv_lora_rank:
            raise ValueError("MLA models need kv_lora_rank")
        if self.n_experts and not (self.experts_per_token and self.active_params_b):
            raise ValueError("MoE models need experts_per_token and active_params_b")
        return self

    @property
    def is_moe(self) -> bool:
        return bool(self.n_experts)

    @property
    def active_b(self) -> float:
        return self.active_params_b or self.params_b
