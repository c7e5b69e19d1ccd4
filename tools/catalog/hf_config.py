"""A Hugging Face `config.json` read into the catalog's model record (`ModelSpec`).

Field names are those of transformers' configs: `hidden_size`, `num_hidden_layers`, `num_attention_heads`,
`num_key_value_heads`, `head_dim`, `intermediate_size`, `vocab_size`, `max_position_embeddings`,
`tie_word_embeddings`, `torch_dtype`; mixture of experts: `num_experts` (Qwen), `n_routed_experts` (DeepSeek)
or `num_local_experts` (Mixtral), `num_experts_per_tok`, `moe_intermediate_size`, `n_shared_experts` or
`shared_expert_intermediate_size`, `first_k_dense_replace`; MLA (DeepSeek-V2/V3): `kv_lora_rank`, `q_lora_rank`,
`qk_rope_head_dim`, `qk_nope_head_dim`, `v_head_dim`; `quantization_config`.

The parameter counts are computed from the shape (`architecture.param_count`), since a config states none: a
model added this way is sized on what its config says, and its record says so.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from pydantic import ValidationError

from tools.catalog import lookup, user_models
from tools.catalog.architecture import param_count
from tools.catalog.records import ModelSpec, Source
from tools.errors import InvalidInput

#: MLPs without a gate (two matrices) in these model types; every other type is read as gated (SwiGLU/GeGLU)
_UNGATED = frozenset({"gpt2", "gpt_neox", "gptj", "falcon", "bloom", "opt", "phi", "starcoder2", "gpt_bigcode"})
_EXPERT_KEYS = ("num_experts", "n_routed_experts", "num_local_experts")
#: a shape beyond these is a typo, not a model (the largest published: 126 layers, hidden 25,600, 384 experts)
_LIMITS = {
    "num_hidden_layers": 2000,
    "hidden_size": 200_000,
    "num_attention_heads": 4096,
    "intermediate_size": 2_000_000,
    "vocab_size": 20_000_000,
    "max_position_embeddings": 100_000_000,
    "experts": 100_000,
}
MIN_PARAMS_B, MAX_PARAMS_B = 0.01, 100_000.0
_SHAPE_FIELDS = (
    "n_layers",
    "hidden_size",
    "n_heads",
    "n_kv_heads",
    "head_dim",
    "ffn_size",
    "vocab_size",
    "max_context",
    "tie_embeddings",
    "attention",
    "mlp",
)


def _bad(en: str, zh: str, field: str | None = None) -> InvalidInput:
    return InvalidInput(f"This config.json cannot be read: {en}", f"无法读取这个 config.json：{zh}", field=field)


def _int(cfg: dict, key: str, *, required: bool = True, limit: str | None = None) -> int | None:
    value = cfg.get(key)
    if value is None:
        if required:
            raise _bad(f"the field '{key}' is missing.", f"缺少字段 '{key}'。", key)
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value) or value <= 0:
        raise _bad(
            f"'{key}' must be a positive whole number, not {value!r}.", f"'{key}' 应为正整数，而不是 {value!r}。", key
        )
    cap = _LIMITS.get(limit or key)
    if cap is not None and value > cap:
        raise _bad(
            f"'{key}' = {int(value):,} is beyond any real model (at most {cap:,}).",
            f"'{key}' = {int(value):,} 超出了任何真实模型的范围（最多 {cap:,}）。",
            key,
        )
    return int(value)


def model_id(name: str) -> str:
    """The catalog id of a name: lower case, runs of other characters as one hyphen ("Org/My Model 7B" -> "org-my-model-7b")."""
    return re.sub(r"[^a-z0-9.]+", "-", name.lower()).strip("-.") or "model"


def _precision(cfg: dict) -> str | None:
    quant = cfg.get("quantization_config") or {}
    method = str(quant.get("quant_method", "")).lower() if isinstance(quant, dict) else ""
    if method == "fp8" or "fp8" in str(quant.get("fmt", "") if isinstance(quant, dict) else ""):
        return "fp8"
    dtype = str(cfg.get("torch_dtype") or cfg.get("dtype") or "").lower()
    return "fp16" if dtype in ("float16", "fp16", "half") else None


def _moe_fields(cfg: dict, ffn: int) -> dict[str, Any]:
    experts = next((cfg[k] for k in _EXPERT_KEYS if cfg.get(k)), None)
    if not experts:
        return {}
    n_experts = _int({"experts": experts}, "experts")
    top_k = _int(cfg, "num_experts_per_tok")
    if top_k > n_experts:
        raise _bad(
            f"num_experts_per_tok ({top_k}) is more than the {n_experts} experts.",
            f"num_experts_per_tok（{top_k}）大于专家总数 {n_experts}。",
            "num_experts_per_tok",
        )
    expert = _int(cfg, "moe_intermediate_size", required=False, limit="intermediate_size") or ffn
    shared = cfg.get("n_shared_experts")
    if shared is None and cfg.get("shared_expert_intermediate_size"):  # Qwen2-MoE: one wide shared expert
        shared = max(1, round(_int(cfg, "shared_expert_intermediate_size", limit="intermediate_size") / expert))
    dense = cfg.get("first_k_dense_replace") or 0
    if not isinstance(dense, int) or not 0 <= dense < _int(cfg, "num_hidden_layers"):
        raise _bad(
            f"first_k_dense_replace must be 0 or more and fewer than the layers, not {dense!r}.",
            f"first_k_dense_replace 应在 0 与层数之间，而不是 {dense!r}。",
        )
    return {
        "n_experts": n_experts,
        "experts_per_token": top_k,
        "moe_ffn_size": expert,
        "n_shared_experts": int(shared or 0),
        "n_dense_layers": dense,
    }


def _mla_fields(cfg: dict) -> dict[str, Any]:
    if not cfg.get("kv_lora_rank"):
        return {}
    return {
        "kv_lora_rank": _int(cfg, "kv_lora_rank"),
        "q_lora_rank": _int(cfg, "q_lora_rank", required=False),
        "qk_rope_head_dim": _int(cfg, "qk_rope_head_dim", required=False),
        "qk_nope_head_dim": _int(cfg, "qk_nope_head_dim", required=False),
        "v_head_dim": _int(cfg, "v_head_dim", required=False),
    }


def spec_from_config(
    cfg: object, *, name: str | None = None, source_url: str | None = None, as_of: dt.date | None = None
) -> ModelSpec:
    """The catalog record of a model from its config.json (a parsed dict); raises `InvalidInput` in both languages."""
    if not isinstance(cfg, dict):
        raise _bad("it is not a JSON object ({...}).", "它不是一个 JSON 对象（{...}）。")
    if "hidden_size" not in cfg and isinstance(cfg.get("text_config"), dict):  # a multimodal config's language model
        cfg = {"_name_or_path": cfg.get("_name_or_path"), **cfg["text_config"]}
    name = (name or str(cfg.get("_name_or_path") or "")).strip()
    if not name:
        raise _bad("it names no model: give one with --name.", "配置里没有模型名称，请用 --name 指定。", "name")
    h = _int(cfg, "hidden_size")
    layers = _int(cfg, "num_hidden_layers")
    heads = _int(cfg, "num_attention_heads")
    kv = _int(cfg, "num_key_value_heads", required=False, limit="num_attention_heads") or heads
    if heads % kv:
        raise _bad(
            f"num_attention_heads ({heads}) is not a multiple of num_key_value_heads ({kv}).",
            f"num_attention_heads（{heads}）不是 num_key_value_heads（{kv}）的整数倍。",
            "num_key_value_heads",
        )
    ffn = _int(cfg, "intermediate_size")
    mla = _mla_fields(cfg)
    head_dim = mla.get("v_head_dim") or _int(cfg, "head_dim", required=False, limit="hidden_size") or h // heads
    attention = "MLA" if mla else ("MHA" if kv == heads else "MQA" if kv == 1 else "GQA")
    moe = _moe_fields(cfg, ffn)
    url = source_url or "config.json given to gpu-advisor models add"
    record: dict[str, Any] = {
        "id": model_id(name),
        "name": name,
        "family": str(cfg.get("model_type") or "user model"),
        "org": name.split("/")[0] if "/" in name else "user-added",
        "aliases": tuple(a for a in {name.split("/")[-1]} if a != name),
        "n_layers": layers,
        "hidden_size": h,
        "n_heads": heads,
        "n_kv_heads": kv,
        "head_dim": max(1, head_dim),
        "ffn_size": ffn,
        "vocab_size": _int(cfg, "vocab_size"),
        "max_context": _int(cfg, "max_position_embeddings", required=False) or 4096,
        "tie_embeddings": bool(cfg.get("tie_word_embeddings", False)),
        "attention": attention,
        "mlp": "gelu" if str(cfg.get("model_type", "")).lower() in _UNGATED else "swiglu",
        "native_precision": _precision(cfg),
        **moe,
        **mla,
        "params_b": 1.0,
        "active_params_b": 1.0 if moe else None,
        "sources": (
            Source(
                title=f"{name} config.json",
                url=url,
                as_of=as_of or dt.date.today(),
                fields=(*_SHAPE_FIELDS, *moe, *mla),
                verified=False,
                note="added by a user with `gpu-advisor models add`; read as given, not checked at the publisher",
            ),
            Source(
                title="parameter counts computed by gpu-advisor from the config's shape",
                url=url,
                as_of=as_of or dt.date.today(),
                fields=("params_b", "active_params_b"),
                verified=False,
                note="tools/catalog/architecture.py param_count: biases and norms left out (< 0.1%)",
            ),
        ),
        "notes": "Added from its config.json; sizes computed from the shape (biases and norms left out).",
    }
    shaped = _validated(record)
    count = param_count(shaped)
    total_b = round(count.total / 1e9, 3)
    if not MIN_PARAMS_B <= total_b <= MAX_PARAMS_B:
        raise _bad(
            f"its shape gives {total_b:,}B parameters, outside what the calculators size ({MIN_PARAMS_B}B to "
            f"{MAX_PARAMS_B:,.0f}B).",
            f"按其结构算得 {total_b:,}B 参数，超出可估算范围（{MIN_PARAMS_B}B 到 {MAX_PARAMS_B:,.0f}B）。",
        )
    record["params_b"] = total_b
    if moe:
        record["active_params_b"] = round(count.active / 1e9, 3)
    return _validated(record)


def _validated(record: dict[str, Any]) -> ModelSpec:
    try:
        return ModelSpec.model_validate(record)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "config"
        raise _bad(
            f"{where}: {first.get('msg', 'invalid value')}.", f"{where}：取值无效（{first.get('msg', '')}）。"
        ) from None


def add_from_config(
    cfg: object, *, name: str | None = None, source_url: str | None = None, replace: bool = False
) -> ModelSpec:
    """Read a config.json (parsed) into a record, check its names against the catalog and store it.

    A name that is a shipped model's is refused (the shipped record is the published one); a name of a model
    added before is refused unless `replace`. Raises `InvalidInput` with an English and a Chinese message.
    """
    spec = spec_from_config(cfg, name=name, source_url=source_url)
    taken = lookup.clashes(spec)
    if taken is not None and not (replace and taken.id == spec.id and taken not in lookup.shipped_models()):
        shipped = taken in lookup.shipped_models()
        raise InvalidInput(
            f"The name '{spec.name}' is already the catalog's {taken.name}"
            + (
                " (a shipped model, which stays as published): add it under another --name."
                if shipped
                else ", added before: give --replace to overwrite it, or another --name."
            ),
            f"名称 '{spec.name}' 已是目录中的 {taken.name}"
            + (
                "（随软件发布的模型，保持其公开配置）：请用 --name 换一个名称添加。"
                if shipped
                else "（此前添加的）：加 --replace 覆盖，或用 --name 换一个名称。"
            ),
            field="name",
        )
    user_models.save(spec, replace=replace)
    return spec
