"""The models people deploy in 2025-2026 (issue 25 item 3): MoE with a shared expert and interleaved dense layers
(Llama 4), MXFP4 experts and alternating sliding-window attention (gpt-oss), hybrid linear attention (Qwen3-Next).

Parameter counts from the shape against the publishers' totals, KV bytes by hand-worked arithmetic, the weights of
the published checkpoint format, and the fit verdicts a user sees.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tools.catalog.architecture import kv_bytes_per_sequence, kv_bytes_per_token, param_count
from tools.catalog.lookup import get_model
from tools.memory.fit_inference import fit_inference
from tools.memory.model_memory import model_memory
from tools.schemas.memory import FitInferenceInput, ModelMemoryInput
from tools.units import GB, GiB

#: (id, published total B, source) - totals within 1%
TOTALS = [
    ("gpt-oss-120b", 116.83, "OpenAI gpt-oss model card: 116.83B total"),
    ("gpt-oss-20b", 20.91, "OpenAI gpt-oss model card: 20.91B total"),
    ("llama-4-scout", 109, "Meta Llama 4 model card: 109B total (vision encoder included)"),
    ("llama-4-maverick", 400, "Meta Llama 4 model card: 400B total"),
    ("qwen3-next-80b-a3b", 80, "Qwen3-Next model card: 80B total"),
    ("minimax-m1", 456, "MiniMax-M1 README: 456B total"),
    ("ernie-4.5-300b-a47b", 300, "ERNIE 4.5 model card: 300B total"),
    ("gemma-3-27b", 27.4, "Hugging Face safetensors size of google/gemma-3-27b-it (vision encoder included)"),
]


@pytest.mark.parametrize(("model_id", "published", "source"), TOTALS)
def test_total_from_the_shape_is_within_1_percent_of_published(model_id, published, source):
    assert param_count(get_model(model_id)).total / 1e9 == pytest.approx(published, rel=0.01), source


def test_gpt_oss_active_counts_match_the_model_card_to_1_percent():
    """OpenAI counts the active parameters without the input embedding (5.13B and 3.61B per token)."""
    for model_id, published in (("gpt-oss-120b", 5.13), ("gpt-oss-20b", 3.61)):
        active = param_count(get_model(model_id)).active_excluding_input_embedding / 1e9
        assert active == pytest.approx(published, rel=0.01), model_id


def test_rounded_active_counts_round_to_the_published_figure():
    """Meta's "17B activated" and Qwen's "3B activated" are rounded: the shape's count rounds to them (Llama 4 with both
    embeddings; Qwen3-Next without the embeddings, as Qwen states its activated sizes)."""
    for model_id in ("llama-4-scout", "llama-4-maverick"):
        assert round(param_count(get_model(model_id)).active / 1e9) == 17, model_id
    p = param_count(get_model("qwen3-next-80b-a3b"))
    assert round((p.active - p.embedding) / 1e9) == 3


def test_llama4_maverick_interleaves_dense_and_moe_layers():
    m = get_model("llama-4-maverick")
    p = param_count(m)
    assert (p.n_dense_layers, p.n_moe_layers) == (24, 24)
    assert p.mlp_per_layer_dense == 3 * 5120 * 16384  # the dense layers' 16,384-wide SwiGLU
    assert p.mlp_per_layer_moe_active == 2 * 3 * 5120 * 8192 + 5120 * 128  # top-1 routed + shared expert + router


def test_kv_per_token_gpt_oss_120b_by_hand():
    """36 layers: 18 full attention, 18 with a 128-token sliding window; 8 KV heads × 64 dims, K and V, bf16."""
    m = get_model("gpt-oss-120b")
    full = 18 * 2 * 8 * 64 * 2  # 36,864 B for every token of the context
    window = 18 * 2 * 8 * 64 * 2  # the same per token, for at most 128 tokens
    assert kv_bytes_per_sequence(m, 4096, 2.0) == full * 4096 + window * 128
    out = fit_inference(FitInferenceInput(model="gpt-oss-120b", gpu="H100", context_len=4096))
    assert out.kv_cache_bytes_per_token == (full * 4096 + window * 128) / 4096 == 38_016
    assert kv_bytes_per_sequence(m, 100, 2.0) == (full + window) * 100  # inside the window every layer holds it all


def test_kv_per_token_llama4_scout_by_hand():
    """48 layers: 36 chunked (8,192-token chunks), 12 global; 8 KV heads × 128 dims, K and V, bf16."""
    m = get_model("llama-4-scout")
    full, chunked = 12 * 2 * 8 * 128 * 2, 36 * 2 * 8 * 128 * 2  # 49,152 B and 147,456 B per token
    assert kv_bytes_per_token(m, 2.0) == full + chunked == 196_608
    assert kv_bytes_per_sequence(m, 100_000, 2.0) == full * 100_000 + chunked * 8192 == 6_123_159_552
    mm = model_memory(ModelMemoryInput(model="llama-4-scout", context_len=100_000))
    assert mm.kv_cache_gb_per_request == pytest.approx(6.12, abs=0.01)


def test_kv_per_token_gemma3_27b_by_hand():
    """62 layers: 52 with a 1,024-token sliding window, 10 global; 16 KV heads × 128 dims, K and V, bf16."""
    m = get_model("gemma-3-27b")
    full, local = 10 * 2 * 16 * 128 * 2, 52 * 2 * 16 * 128 * 2  # 81,920 B and 425,984 B per token
    assert kv_bytes_per_sequence(m, 32_768, 2.0) == full * 32_768 + local * 1024 == 3_120_562_176


def test_kv_and_state_minimax_m1_by_hand():
    """80 layers: 10 softmax (8 KV heads × 128), 70 lightning layers each holding a 128 × 128 state per head (64)."""
    m = get_model("minimax-m1")
    full, state = 10 * 2 * 8 * 128 * 2, 70 * 64 * 128 * 128 * 2  # 40,960 B per token; 146,800,640 B per sequence
    assert kv_bytes_per_sequence(m, 100_000, 2.0) == full * 100_000 + state


def test_kv_and_state_qwen3_next_by_hand():
    """12 gated full-attention layers cache 2 KV heads × 256 dims; 36 Gated DeltaNet layers hold a fixed state: 32 value
    heads × 128 × 128 plus 3 conv taps over q, k, v (2·16·128 + 32·128 channels)."""
    m = get_model("qwen3-next-80b-a3b")
    full = 12 * 2 * 2 * 256 * 2  # 24,576 B per token
    state = 36 * (32 * 128 * 128 + 3 * (2 * 16 * 128 + 32 * 128)) * 2  # 39,518,208 B per sequence
    for ctx in (1, 4096, 262_144):
        assert kv_bytes_per_sequence(m, ctx, 2.0) == full * ctx + state
    out = fit_inference(FitInferenceInput(model="qwen3-next-80b-a3b", gpu="H200", context_len=32_768))
    assert out.kv_cache_gb_per_sequence == pytest.approx((full * 32_768 + state) / GB, abs=1e-3)
    notes = {a.key: a.note for a in out.assumptions}
    assert "fixed state of 39.5 MB per sequence" in notes["kv_linear_layers"]


@given(ctx=st.integers(min_value=1, max_value=2_000_000))
def test_a_window_never_holds_more_than_full_attention_would(ctx):
    """Monotone in the context, equal to every layer's cache within the window, smaller beyond it."""
    m = get_model("gpt-oss-20b")
    seq, longer = kv_bytes_per_sequence(m, ctx, 2.0), kv_bytes_per_sequence(m, ctx + 1, 2.0)
    every_layer = kv_bytes_per_token(m, 2.0) * ctx
    assert seq <= longer and seq <= every_layer
    assert (seq == every_layer) == (ctx <= 128)


def test_gpt_oss_weights_are_the_published_mxfp4_checkpoint():
    """MXFP4 experts (4.25 bits with scales), attention, router and embeddings in bf16: the checkpoints are 60.8 GiB
    and 12.8 GiB (OpenAI model card)."""
    for model_id, gib in (("gpt-oss-120b", 60.8), ("gpt-oss-20b", 12.8)):
        weights = model_memory(ModelMemoryInput(model=model_id)).weights_gb
        assert weights == pytest.approx(gib * GiB / GB, rel=0.02), model_id
    p = param_count(get_model("gpt-oss-120b"))
    rest = p.total - p.routed_experts
    assert model_memory(ModelMemoryInput(model="gpt-oss-120b")).weights_gb == pytest.approx(
        (p.routed_experts * 4.25 / 8 + rest * 2) / GB, abs=0.01
    )


def test_gpt_oss_120b_fits_one_h100_80gb():
    """ "gpt-oss-120b 能在一张 H100 80GB 上跑吗": yes, with the MXFP4 weights about 61-65 GB."""
    out = fit_inference(FitInferenceInput(model="gpt-oss-120b", gpu="H100 80GB"))
    assert out.fits and out.verdict == "fits"
    assert 61 <= out.breakdown_gb["weights"] <= 66
    note = next(a.note for a in out.assumptions if a.key == "precision")
    assert "routed experts stay in mxfp4" in note


def test_llama4_scout_fits_one_h100_in_int4_not_in_bf16():
    """Meta: "Llama 4 Scout ... can fit within a single H100 GPU with on-the-fly int4 quantization"."""
    int4 = fit_inference(FitInferenceInput(model="Llama 4 Scout", gpu="H100", precision="int4"))
    bf16 = fit_inference(FitInferenceInput(model="Llama 4 Scout", gpu="H100"))
    assert int4.fits and not bf16.fits
    assert bf16.min_gpus == 4  # 217 GB of bf16 weights


def test_maverick_fp8_fits_one_8x_h100_host():
    """Meta: the FP8 weights of Maverick fit on a single H100 DGX host (8 GPUs)."""
    assert fit_inference(FitInferenceInput(model="Llama 4 Maverick", gpu="H100", precision="fp8", n_gpus=8)).fits


def test_an_architecture_object_sizes_a_hybrid_like_the_catalog_model():
    """The tool input's `model` object carries the same kinds: gpt-oss and Qwen3-Next given by their shapes."""
    import tools

    oss = {
        "name": "my gpt-oss",
        "n_layers": 36,
        "hidden_size": 2880,
        "n_kv_heads": 8,
        "heads_per_kv": 8,
        "head_dim": 64,
        "ffn_size": 2880,
        "vocab_size": 201088,
        "moe": {"n_experts": 128, "experts_per_token": 4, "expert_precision": "mxfp4"},
        "windowed": {"n_layers": 18, "window": 128},
    }
    nxt = {
        "name": "my next",
        "n_layers": 48,
        "hidden_size": 2048,
        "n_kv_heads": 2,
        "heads_per_kv": 8,
        "head_dim": 256,
        "ffn_size": 5120,
        "vocab_size": 151936,
        "attention_output_gate": True,
        "moe": {"n_experts": 512, "experts_per_token": 10, "expert_ffn_size": 512, "n_shared_experts": 1},
        "linear": {"n_layers": 36, "n_key_heads": 16, "n_value_heads": 32, "key_head_dim": 128, "value_head_dim": 128,
                   "conv_kernel": 4},
    }  # fmt: skip
    for shape, name in ((oss, "gpt-oss-120b"), (nxt, "qwen3-next-80b-a3b")):
        mine = tools.call("fit_inference", {"model": shape, "gpu": "H200", "context_len": 65_536})
        catalog = tools.call("fit_inference", {"model": name, "gpu": "H200", "context_len": 65_536})
        assert mine["per_gpu_gb"] == catalog["per_gpu_gb"] and mine["kv_cache_gb_per_sequence"] == pytest.approx(
            catalog["kv_cache_gb_per_sequence"]
        ), name


def test_an_architecture_with_more_hybrid_layers_than_layers_is_resolved_and_stated():
    import tools

    odd = {
        "n_layers": 4, "hidden_size": 512, "n_kv_heads": 2, "heads_per_kv": 4, "head_dim": 64, "ffn_size": 1024,
        "vocab_size": 1000, "linear": {"n_layers": 3, "kind": "lightning"}, "windowed": {"n_layers": 9, "window": 64},
    }  # fmt: skip
    out = tools.call("fit_inference", {"model": odd, "gpu": "H200"})
    notes = {a["key"]: a["value"] for a in out["assumptions"]}
    assert notes["model.windowed.n_layers"] == 1
