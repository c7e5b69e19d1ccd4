"""A Hugging Face config.json read into a catalog record, and a model added from one known by the catalog.

The config values are those of the official configs (fields as transformers writes them):
- Qwen3-30B-A3B: https://huggingface.co/Qwen/Qwen3-30B-A3B/blob/main/config.json (30.5B total, 3.3B activated
  on its model card);
- Llama-3.1-8B: https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json (8.03B on the model page);
- DeepSeek-V3: https://huggingface.co/deepseek-ai/DeepSeek-V3/blob/main/config.json (671B total, 37B activated
  in its README).
"""

from __future__ import annotations

import pytest

from tools.catalog import lookup, user_models
from tools.catalog.hf_config import add_from_config, spec_from_config
from tools.errors import InvalidInput

QWEN3_30B_A3B = {
    "model_type": "qwen3_moe",
    "hidden_size": 2048,
    "intermediate_size": 6144,
    "moe_intermediate_size": 768,
    "num_hidden_layers": 48,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
    "head_dim": 128,
    "num_experts": 128,
    "num_experts_per_tok": 8,
    "vocab_size": 151936,
    "max_position_embeddings": 40960,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}
LLAMA_31_8B = {
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}
DEEPSEEK_V3 = {
    "model_type": "deepseek_v3",
    "hidden_size": 7168,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "num_hidden_layers": 61,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "num_experts_per_tok": 8,
    "first_k_dense_replace": 3,
    "kv_lora_rank": 512,
    "q_lora_rank": 1536,
    "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 128,
    "v_head_dim": 128,
    "vocab_size": 129280,
    "max_position_embeddings": 163840,
    "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8"},
}


def test_qwen3_moe_counts_match_the_published_total_and_active():
    m = spec_from_config(QWEN3_30B_A3B, name="Qwen/Qwen3-30B-A3B")
    assert m.attention == "GQA" and m.n_experts == 128 and m.experts_per_token == 8 and m.moe_ffn_size == 768
    assert m.params_b == pytest.approx(30.5, rel=0.01)
    assert m.active_params_b == pytest.approx(3.3, rel=0.03)


def test_llama_dense_count_matches_the_published_8_03b():
    m = spec_from_config(LLAMA_31_8B, name="meta-llama/Llama-3.1-8B")
    assert m.params_b == pytest.approx(8.03, abs=0.01) and not m.is_moe and m.head_dim == 128


def test_deepseek_v3_mla_fp8_total_671b_active_37b():
    m = spec_from_config(DEEPSEEK_V3, name="deepseek-ai/DeepSeek-V3")
    assert m.attention == "MLA" and m.kv_lora_rank == 512 and m.n_dense_layers == 3 and m.native_precision == "fp8"
    assert m.params_b == pytest.approx(671, rel=0.005)
    assert m.active_params_b == pytest.approx(37, rel=0.03)  # 37.5 with the input embedding, 36.6 without


@pytest.mark.parametrize(
    ("cfg", "en", "zh"),
    [
        ([1, 2], "not a JSON object", "JSON 对象"),
        ({**LLAMA_31_8B, "hidden_size": None}, "'hidden_size' is missing", "缺少字段 'hidden_size'"),
        ({**LLAMA_31_8B, "num_hidden_layers": 10**7}, "beyond any real model", "超出了任何真实模型"),
        ({**LLAMA_31_8B, "num_key_value_heads": 5}, "not a multiple", "整数倍"),
        ({**QWEN3_30B_A3B, "num_experts_per_tok": 500}, "more than the 128 experts", "大于专家总数"),
        ({**LLAMA_31_8B, "vocab_size": "big"}, "positive whole number", "正整数"),
    ],
)
def test_bad_configs_say_what_is_wrong_in_both_languages(cfg, en, zh):
    with pytest.raises(InvalidInput) as err:
        spec_from_config(cfg, name="x")
    assert en in err.value.message("en") and zh in err.value.message("zh")


@pytest.fixture
def data_dir(tmp_path):
    user_models.use_data_dir(tmp_path)
    yield tmp_path
    user_models.use_data_dir(None)


def test_an_added_model_is_in_the_catalog_and_sized_by_the_calculators(data_dir):
    from tools.registry import call

    add_from_config(QWEN3_30B_A3B, name="acme/Shenzhen-MoE-30B", source_url="https://example.org/c.json")
    assert (data_dir / "models.yaml").exists()
    m = lookup.get_model("Shenzhen-MoE-30B")
    assert m.name == "acme/Shenzhen-MoE-30B" and m in lookup.models()
    out = call("fit_inference", {"model": "Shenzhen-MoE-30B", "gpu": "H100 SXM"})
    assert out["fits"] is True


def test_a_shipped_name_is_refused_and_a_second_add_needs_replace(data_dir):
    with pytest.raises(InvalidInput) as err:
        add_from_config(QWEN3_30B_A3B, name="Qwen3-30B-A3B")
    assert "shipped model" in err.value.message("en") and "随软件发布" in err.value.message("zh")
    add_from_config(LLAMA_31_8B, name="acme-8b")
    with pytest.raises(InvalidInput, match="--replace"):
        add_from_config(LLAMA_31_8B, name="acme-8b")
    add_from_config({**LLAMA_31_8B, "num_hidden_layers": 40}, name="acme-8b", replace=True)
    assert lookup.get_model("acme-8b").n_layers == 40


@pytest.mark.parametrize(
    "typed", ["400B-A20B", "400B total, 20B active MoE", "总参 400B、激活 20B 的 MoE", "a MoE with 20B active of 400B"]
)
def test_a_moe_given_by_total_and_active_is_a_generic_moe_of_those_sizes(typed):
    from tools.catalog.architecture import param_count
    from tools.registry import call

    m = lookup.get_model(typed)
    assert m.generic and m.is_moe and m.name == "generic MoE 400B-A20B" and "generic MoE" in m.notes
    count = param_count(m)
    assert count.total / 1e9 == pytest.approx(400, rel=0.005) and count.active / 1e9 == pytest.approx(20, rel=0.03)
    mem = call("model_memory", {"model": typed})
    dense = call("model_memory", {"model": "400B"})
    assert mem["weights_gb"] == pytest.approx(dense["weights_gb"], rel=0.01)  # weights on the total
    fast = call("inference_speed", {"model": typed, "gpu": "H200", "n_gpus": 8})
    slow = call("inference_speed", {"model": "400B", "gpu": "H200", "n_gpus": 8})
    assert fast["bytes_per_step_gb"] < 0.1 * slow["bytes_per_step_gb"]  # each decode step reads the active 20B
