"""model_memory: GPU-independent sizes against published figures and the other calculators."""

import pytest

import tools
from tools.errors import AdvisorError


def test_llama2_7b_weights_and_kv_cache_match_published_figures():
    # Llama-2-7B: 6.74B parameters (Meta's model card); 32 layers × 32 KV heads × 128 dims
    # -> 2·32·32·128·2 B = 524,288 B (0.5 MiB) of bf16 KV cache per token (the widely quoted figure)
    out = tools.call("model_memory", {"model": "Llama-2-7B"})
    assert out["params_b"] == pytest.approx(6.74, rel=0.01)
    assert out["weights_gb"] == pytest.approx(13.48, rel=0.01)
    assert out["kv_cache_bytes_per_token"] == 524_288
    assert out["kv_cache_gb_per_request"] == pytest.approx(524_288 * 4096 / 1e9, rel=0.01)


def test_gqa_shrinks_the_kv_cache_llama3_8b():
    # Llama-3-8B has 8 KV heads: a quarter of Llama-2-7B's per-token cache
    out = tools.call("model_memory", {"model": "Llama-3-8B", "context_len": 8192, "batch": 4})
    assert out["kv_cache_bytes_per_token"] == 131_072
    assert out["kv_cache_gb"] == pytest.approx(131_072 * 8192 * 4 / 1e9, rel=0.01)


def test_precisions_order_and_quantised_formats_keep_16bit_embeddings():
    w = tools.call("model_memory", {"model": "Qwen2.5-7B"})["weights_by_precision_gb"]
    assert w["fp32"] > w["bf16"] > w["int8"] > w["int4"]
    assert w["fp32"] == pytest.approx(2 * w["bf16"], rel=0.01)
    assert w["int8"] > w["fp8"]  # int8 keeps the embeddings in 16-bit


def test_zero_stages_follow_the_zero_paper():
    # ZeRO paper (arXiv 1910.02054), 7.5B model on 64 GPUs: 120 GB baseline, 31.4 GB with Pos, 16.6 GB with
    # Pos+g, 1.9 GB with Pos+g+p (states only, 16 B/param); our generic 7.5B model and 64 GPUs reproduce it
    out = tools.call("model_memory", {"model": "7.5B", "n_gpus": 64})
    params = out["params_b"] * 1e9
    per = {z["stage"]: z["per_gpu_gb"] for z in out["zero_stages"]}
    assert per[0] == pytest.approx(16 * params / 1e9, rel=0.01)
    assert per[1] == pytest.approx((4 + 12 / 64) * params / 1e9, rel=0.01)
    assert per[2] == pytest.approx((2 + 14 / 64) * params / 1e9, rel=0.01)
    assert per[3] == pytest.approx(16 / 64 * params / 1e9, rel=0.01)
    assert per[0] == pytest.approx(120, rel=0.02) and per[1] == pytest.approx(31.4, rel=0.03)


def test_lora_and_qlora_need_far_less_than_full_training():
    full = tools.call("model_memory", {"model": "13B"})
    lora = tools.call("model_memory", {"model": "13B", "method": "lora"})
    qlora = tools.call("model_memory", {"model": "13B", "method": "qlora"})
    assert full["training_total_gb"] > lora["training_total_gb"] > qlora["training_total_gb"]
    assert lora["trainable_params_b"] < 0.02 * full["trainable_params_b"]


def test_full_training_states_agree_with_fit_training():
    mm = tools.call("model_memory", {"model": "Llama-2-7B", "n_gpus": 1})
    ft = tools.call("fit_training", {"model": "Llama-2-7B", "gpu": "H100", "method": "full", "n_gpus": 1})
    states = ft["breakdown_gb"]["weights"] + ft["breakdown_gb"]["gradients"] + ft["breakdown_gb"]["optimizer"]
    assert mm["model_states_gb"] == pytest.approx(states, rel=0.02)


def test_unknown_model_is_a_clear_error():
    with pytest.raises(AdvisorError) as err:
        tools.call("model_memory", {"model": "Lama-9"})
    assert "Lama-9" in err.value.message("en")


@pytest.mark.parametrize("targets", ["all-linear", "attention"])
def test_moe_adapters_are_counted_only_on_the_target_modules(targets):
    """Issue 25 (cause 6): on a MoE, attention-only adapters never touch the experts; all-linear adapts every expert
    (PEFT's all-linear, LLaMA-Factory's 'all'). model_memory and fit_training count the same adapters."""
    args = {"model": "Qwen3-30B-A3B", "method": "qlora", "lora_targets": targets}
    mm = tools.call("model_memory", args)
    ft = tools.call("fit_training", args | {"gpu": "A100"})
    assert mm["trainable_params_b"] == ft["trainable_params_b"]
    attention = tools.call("model_memory", args | {"lora_targets": "attention"})["trainable_params_b"]
    assert (mm["trainable_params_b"] > 10 * attention) if targets == "all-linear" else mm["trainable_params_b"] < 0.05
