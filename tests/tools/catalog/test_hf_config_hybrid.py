"""`gpu-advisor models add --config` reads the 2025-2026 shapes: Llama 4's multimodal wrapper with interleaved dense
layers and chunked attention, gpt-oss's MXFP4 experts and sliding-window layers, Qwen3-Next's Gated DeltaNet layers,
MiniMax-M1's lightning attention, ERNIE-4.5's own MoE keys, Gemma 3's five local layers to one global (its
embeddings tied unless the config says otherwise). Each config read gives the catalog record's sizes.

Config values as the publishers' config.json files state them (the fields the sizes depend on), transcribed from the
copies named in each catalog record's sources (tools/data/models.yaml).
"""

from __future__ import annotations

import pytest

from tools.catalog import lookup, user_models
from tools.catalog.architecture import kv_layout, param_count
from tools.catalog.hf_config import add_from_config, spec_from_config

GPT_OSS_120B = {
    "model_type": "gpt_oss",
    "num_hidden_layers": 36,
    "num_local_experts": 128,
    "num_experts_per_tok": 4,
    "experts_per_token": 4,
    "vocab_size": 201088,
    "hidden_size": 2880,
    "intermediate_size": 2880,
    "head_dim": 64,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "sliding_window": 128,
    "layer_types": ["sliding_attention", "full_attention"] * 18,
    "max_position_embeddings": 131072,
    "tie_word_embeddings": False,
    "quantization_config": {"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn"]},
    "torch_dtype": "bfloat16",
}
LLAMA4_MAVERICK = {
    "model_type": "llama4",
    "text_config": {
        "model_type": "llama4_text",
        "hidden_size": 5120,
        "num_hidden_layers": 48,
        "num_attention_heads": 40,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "intermediate_size": 8192,
        "intermediate_size_mlp": 16384,
        "vocab_size": 202048,
        "max_position_embeddings": 1048576,
        "num_local_experts": 128,
        "num_experts_per_tok": 1,
        "interleave_moe_layer_step": 2,
        "attention_chunk_size": 8192,
        "no_rope_layers": [],
        "tie_word_embeddings": False,
    },
    "vision_config": {"hidden_size": 1408, "intermediate_size": 5632, "num_hidden_layers": 34},
}
QWEN3_NEXT = {
    "model_type": "qwen3_next",
    "hidden_size": 2048,
    "num_hidden_layers": 48,
    "num_attention_heads": 16,
    "num_key_value_heads": 2,
    "head_dim": 256,
    "intermediate_size": 5120,
    "moe_intermediate_size": 512,
    "shared_expert_intermediate_size": 512,
    "num_experts": 512,
    "num_experts_per_tok": 10,
    "decoder_sparse_step": 1,
    "vocab_size": 151936,
    "linear_num_key_heads": 16,
    "linear_num_value_heads": 32,
    "linear_key_head_dim": 128,
    "linear_value_head_dim": 128,
    "linear_conv_kernel_dim": 4,
    "full_attention_interval": 4,
    "max_position_embeddings": 262144,
    "tie_word_embeddings": False,
}
MINIMAX_M1 = {
    "model_type": "minimax_m1",
    "hidden_size": 6144,
    "intermediate_size": 9216,
    "num_hidden_layers": 80,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "vocab_size": 200064,
    "max_position_embeddings": 10240000,
    "num_local_experts": 32,
    "num_experts_per_tok": 2,
    "attn_type_list": [0, 0, 0, 0, 0, 0, 0, 1] * 10,
    "tie_word_embeddings": False,
}
ERNIE_300B = {
    "model_type": "ernie4_5_moe",
    "hidden_size": 8192,
    "intermediate_size": 28672,
    "num_hidden_layers": 54,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "vocab_size": 103424,
    "max_position_embeddings": 131072,
    "moe_num_experts": 64,
    "moe_num_shared_experts": 0,
    "moe_layer_start_index": 3,
    "moe_layer_end_index": 53,
    "moe_intermediate_size": 3584,
    "moe_k": 8,
    "moe_layer_interval": 1,
    "tie_word_embeddings": True,
}
GEMMA3_27B = {
    "model_type": "gemma3",
    "text_config": {
        "model_type": "gemma3_text",
        "hidden_size": 5376,
        "num_hidden_layers": 62,
        "num_attention_heads": 32,
        "num_key_value_heads": 16,
        "head_dim": 128,
        "intermediate_size": 21504,
        "vocab_size": 262208,
        "sliding_window": 1024,
        "sliding_window_pattern": 6,
        "max_position_embeddings": 131072,
    },
    "vision_config": {"hidden_size": 1152, "intermediate_size": 4304, "num_hidden_layers": 27},
}
CASES = [
    (GEMMA3_27B, "gemma-3-27b"),
    (GPT_OSS_120B, "gpt-oss-120b"),
    (LLAMA4_MAVERICK, "llama-4-maverick"),
    (QWEN3_NEXT, "qwen3-next-80b-a3b"),
    (MINIMAX_M1, "minimax-m1"),
    (ERNIE_300B, "ernie-4.5-300b-a47b"),
]


@pytest.mark.parametrize(("cfg", "shipped"), CASES, ids=[c[1] for c in CASES])
def test_a_config_gives_the_catalog_records_sizes_and_kv_cache(cfg, shipped):
    read = spec_from_config(cfg, name=f"acme/{shipped}-copy")
    record = lookup.get_model(shipped)
    assert param_count(read).total == param_count(record).total
    assert param_count(read).active == param_count(record).active
    assert kv_layout(read) == kv_layout(record)
    assert read.expert_precision == record.expert_precision


def test_what_each_kind_is_read_as():
    oss = spec_from_config(GPT_OSS_120B, name="acme/oss")
    assert (oss.n_window_layers, oss.attention_window, oss.window_kind) == (18, 128, "sliding")
    assert oss.expert_precision == "mxfp4" and oss.attention_sinks
    mav = spec_from_config(LLAMA4_MAVERICK, name="acme/mav")
    assert (mav.n_dense_layers, mav.ffn_size, mav.moe_ffn_size, mav.n_shared_experts) == (24, 16384, 8192, 1)
    assert (mav.n_window_layers, mav.window_kind, mav.vision_layers) == (36, "chunked", 34)
    nxt = spec_from_config(QWEN3_NEXT, name="acme/next")
    assert nxt.n_linear_layers == 36 and nxt.linear_attention.kind == "gated_deltanet" and nxt.attention_output_gate
    mm = spec_from_config(MINIMAX_M1, name="acme/m1")
    assert mm.n_linear_layers == 70 and mm.linear_attention.kind == "lightning"
    ernie = spec_from_config(ERNIE_300B, name="acme/ernie")
    assert (ernie.n_dense_layers, ernie.experts_per_token, ernie.n_experts) == (3, 8, 64)


@pytest.fixture
def data_dir(tmp_path):
    user_models.use_data_dir(tmp_path)
    yield tmp_path
    user_models.use_data_dir(None)


def test_an_added_gpt_oss_copy_is_sized_in_its_mxfp4_layout(data_dir):
    from tools.registry import call

    add_from_config(GPT_OSS_120B, name="acme/oss-120b-ft", source_url="https://example.org/config.json")
    out = call("fit_inference", {"model": "acme/oss-120b-ft", "gpu": "H100"})
    assert out["fits"] is True and 61 <= out["breakdown_gb"]["weights"] <= 66
