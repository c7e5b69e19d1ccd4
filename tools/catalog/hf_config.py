"""A Hugging Face `config.json` read into the catalog's model record (`ModelSpec`).

Field names are those of transformers' configs: `hidden_size`, `num_hidden_layers`, `num_attention_heads`,
`num_key_value_heads`, `head_dim`, `intermediate_size`, `vocab_size`, `max_position_embeddings`,
`tie_word_embeddings`, `torch_dtype`; mixture of experts: `num_experts` (Qwen), `n_routed_experts` (DeepSeek)
or `num_local_experts` (Mixtral), `num_experts_per_tok`, `moe_intermediate_size`, `n_shared_experts` or
`shared_expert_intermediate_size`, `first_k_dense_replace`; MLA (DeepSeek-V2/V3): `kv_lora_rank`, `q_lora_rank`,
`qk_rope_head_dim`, `qk_nope_head_dim`, `v_head_dim`; `quantization_config`.
2025-2026 shapes: ERNIE-4.5's `moe_num_experts`, `moe_k`, `moe_layer_start_index` / `moe_layer_end_index`; Llama 4's
`interleave_moe_layer_step`, `intermediate_size_mlp` (dense layers), `attention_chunk_size` with `no_rope_layers`
(chunked layers) and `vision_config`; gpt-oss's `layer_types` with `sliding_window` and MXFP4 experts
(`quant_method: mxfp4`); Qwen3-Next's `full_attention_interval` and `linear_*` Gated DeltaNet heads; MiniMax's
`attn_type_list` (lightning attention).

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
_EXPERT_KEYS = ("num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts")
_TOP_K_KEYS = ("num_experts_per_tok", "experts_per_token", "moe_k")
#: model types whose softmax attention always has the output gate (later Qwen configs say `attn_output_gate`)
_GATED_ATTENTION = frozenset({"qwen3_next"})
#: the linear-attention kinds by model type (every other hybrid with `linear_*` head fields is a Gated DeltaNet)
_LIGHTNING = frozenset({"minimax", "minimax_m1", "minimax_text_01"})
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


def _quant_method(cfg: dict) -> str:
    quant = cfg.get("quantization_config") or {}
    return str(quant.get("quant_method", "")).lower() if isinstance(quant, dict) else ""


def _precision(cfg: dict) -> str | None:
    quant = cfg.get("quantization_config") or {}
    method = _quant_method(cfg)
    if method == "fp8" or "fp8" in str(quant.get("fmt", "") if isinstance(quant, dict) else ""):
        return "fp8"
    dtype = str(cfg.get("torch_dtype") or cfg.get("dtype") or "").lower()
    return "fp16" if dtype in ("float16", "fp16", "half") else None


def _moe_fields(cfg: dict, ffn: int) -> dict[str, Any]:
    experts = next((cfg[k] for k in _EXPERT_KEYS if cfg.get(k)), None)
    if not experts:
        return {}
    n_experts = _int({"experts": experts}, "experts")
    top_k = _int(cfg, next((k for k in _TOP_K_KEYS if cfg.get(k)), "num_experts_per_tok"))
    if top_k > n_experts:
        raise _bad(
            f"num_experts_per_tok ({top_k}) is more than the {n_experts} experts.",
            f"num_experts_per_tok（{top_k}）大于专家总数 {n_experts}。",
            "num_experts_per_tok",
        )
    expert = _int(cfg, "moe_intermediate_size", required=False, limit="intermediate_size") or ffn
    shared = cfg.get("n_shared_experts", cfg.get("moe_num_shared_experts"))
    if shared is None and cfg.get("shared_expert_intermediate_size"):  # Qwen2-MoE: one wide shared expert
        shared = max(1, round(_int(cfg, "shared_expert_intermediate_size", limit="intermediate_size") / expert))
    if shared is None and str(cfg.get("model_type", "")).startswith("llama4"):  # Llama 4: one shared expert
        shared = 1
    layers = _int(cfg, "num_hidden_layers")
    dense = cfg.get("first_k_dense_replace", cfg.get("moe_layer_start_index")) or 0
    if not isinstance(dense, int) or not 0 <= dense < layers:
        raise _bad(
            f"first_k_dense_replace must be 0 or more and fewer than the layers, not {dense!r}.",
            f"first_k_dense_replace 应在 0 与层数之间，而不是 {dense!r}。",
        )
    step = next(
        (cfg[k] for k in ("interleave_moe_layer_step", "moe_layer_interval", "decoder_sparse_step") if cfg.get(k)), 1
    )
    end = cfg.get("moe_layer_end_index")
    end = end if isinstance(end, int) and dense <= end < layers else layers - 1  # ERNIE-4.5 names its last MoE layer
    if not isinstance(step, int) or not 1 <= step <= layers:
        raise _bad(
            f"interleave_moe_layer_step must be a whole number from 1 to the layers, not {step!r}.",
            f"interleave_moe_layer_step 应为 1 到层数之间的整数，而不是 {step!r}。",
        )
    dense = layers - max(1, (end + 1 - dense) // step)  # every other layer dense in Llama 4 Maverick
    return {
        "n_experts": n_experts,
        "experts_per_token": top_k,
        "moe_ffn_size": expert,
        "n_shared_experts": int(shared or 0),
        "n_dense_layers": dense,
    }


def _layer_kinds(cfg: dict, layers: int) -> list[str]:
    """Each layer's attention: "full", "window" (sliding or chunked) or "linear", from the config's own list
    (`layer_types`, MiniMax's `attn_type_list`) or the periodic rule it states (`full_attention_interval`, Llama 4's
    `no_rope_layers` / every fourth layer global when `attention_chunk_size` is set); all "full" when it states none."""
    types = cfg.get("layer_types")
    if isinstance(types, list) and len(types) == layers:
        names = {"sliding_attention": "window", "chunked_attention": "window", "linear_attention": "linear"}
        return [names.get(str(t), "full") for t in types]
    if isinstance(cfg.get("attn_type_list"), list) and len(cfg["attn_type_list"]) == layers:  # MiniMax: 1 = softmax
        return ["full" if t == 1 else "linear" for t in cfg["attn_type_list"]]
    pattern = cfg.get("sliding_window_pattern")  # Gemma 3: every pattern-th layer global, the others windowed
    if isinstance(pattern, int) and pattern > 1 and cfg.get("sliding_window"):
        return ["full" if (i + 1) % pattern == 0 else "window" for i in range(layers)]
    interval = cfg.get("full_attention_interval")
    if isinstance(interval, int) and interval > 0:
        return ["full" if (i + 1) % interval == 0 else "linear" for i in range(layers)]
    if cfg.get("attention_chunk_size"):
        rope = cfg.get("no_rope_layers")
        if not (isinstance(rope, list) and len(rope) == layers):
            every = cfg.get("no_rope_layer_interval") or 4
            rope = [int((i + 1) % every != 0) for i in range(layers)]
        return ["window" if r else "full" for r in rope]  # RoPE layers are chunked, NoPE layers global
    return ["full"] * layers


def _attention_fields(cfg: dict, layers: int) -> dict[str, Any]:
    kinds = _layer_kinds(cfg, layers)
    out: dict[str, Any] = {}
    model_type = str(cfg.get("model_type", "")).lower()
    if "window" in kinds:
        chunked = bool(cfg.get("attention_chunk_size"))
        key = "attention_chunk_size" if chunked else "sliding_window"
        out |= {
            "n_window_layers": kinds.count("window"),
            "attention_window": _int(cfg, key, limit="max_position_embeddings"),
            "window_kind": "chunked" if chunked else "sliding",
        }
    if "linear" in kinds:
        lightning = model_type in _LIGHTNING or not cfg.get("linear_num_value_heads")
        linear: dict[str, Any] = {"kind": "lightning" if lightning else "gated_deltanet"}
        if not lightning:
            linear |= {
                "n_key_heads": _int(cfg, "linear_num_key_heads", limit="num_attention_heads"),
                "n_value_heads": _int(cfg, "linear_num_value_heads", limit="num_attention_heads"),
                "key_head_dim": _int(cfg, "linear_key_head_dim", limit="hidden_size"),
                "value_head_dim": _int(cfg, "linear_value_head_dim", limit="hidden_size"),
                "conv_kernel": _int(cfg, "linear_conv_kernel_dim", required=False, limit="num_attention_heads") or 0,
            }
        out |= {"n_linear_layers": kinds.count("linear"), "linear_attention": linear}
    if cfg.get("attn_output_gate", model_type in _GATED_ATTENTION):
        out["attention_output_gate"] = True
    if model_type == "gpt_oss":
        out["attention_sinks"] = True
    return out


def _vision_fields(cfg: dict) -> dict[str, Any]:
    """A vision encoder beside the decoder (Llama 4's `vision_config`): layers, width and MLP width."""
    vision = cfg.get("vision_config")
    if not isinstance(vision, dict) or not vision.get("hidden_size"):
        return {}
    layers = vision.get("num_hidden_layers") or vision.get("depth")
    return {
        "vision_layers": _int({"num_hidden_layers": layers}, "num_hidden_layers"),
        "vision_hidden_size": _int(vision, "hidden_size"),
        "vision_ffn_size": _int(vision, "intermediate_size"),
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
    vision = _vision_fields(cfg)
    if "hidden_size" not in cfg and isinstance(cfg.get("text_config"), dict):  # a multimodal config's language model
        keep = ("_name_or_path", "quantization_config", "torch_dtype", "tie_word_embeddings")
        outer = {k: cfg[k] for k in keep if k in cfg}
        cfg = {**outer, **cfg["text_config"]}
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
    dense_ffn = _int(cfg, "intermediate_size_mlp", required=False, limit="intermediate_size") or ffn  # Llama 4
    mla = _mla_fields(cfg)
    head_dim = mla.get("v_head_dim") or _int(cfg, "head_dim", required=False, limit="hidden_size") or h // heads
    attention = "MLA" if mla else ("MHA" if kv == heads else "MQA" if kv == 1 else "GQA")
    moe = _moe_fields(cfg, ffn)
    if moe and _quant_method(cfg) == "mxfp4":  # gpt-oss: the experts in MXFP4, the rest in bf16
        moe["expert_precision"] = "mxfp4"
    hybrid = _attention_fields(cfg, layers) | vision
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
        "ffn_size": dense_ffn,
        "vocab_size": _int(cfg, "vocab_size"),
        "max_context": _int(cfg, "max_position_embeddings", required=False) or 4096,
        "tie_embeddings": bool(cfg.get("tie_word_embeddings", str(cfg.get("model_type", "")).startswith("gemma"))),
        "attention": attention,
        "mlp": "gelu" if str(cfg.get("model_type", "")).lower() in _UNGATED else "swiglu",
        "native_precision": _precision(cfg),
        **moe,
        **mla,
        **hybrid,
        "params_b": 1.0,
        "active_params_b": 1.0 if moe else None,
        "sources": (
            Source(
                title=f"{name} config.json",
                url=url,
                as_of=as_of or dt.date.today(),
                fields=(*_SHAPE_FIELDS, *moe, *mla, *hybrid),
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
