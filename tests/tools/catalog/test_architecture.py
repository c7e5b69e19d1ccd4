"""Parameter counts and KV-cache sizes worked out from a config (tools/catalog/architecture.py).

KV-cache rows are hand-worked from published configs and live in tests/golden/kv_cache.yaml.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from tools.catalog.architecture import (
    ParamCount,
    attention_params,
    kv_bytes_per_token,
    kv_elements_per_token,
    param_count,
)
from tools.catalog.lookup import get_model

GOLDEN = Path(__file__).parents[2] / "golden" / "kv_cache.yaml"
KV_ROWS = yaml.safe_load(GOLDEN.read_text(encoding="utf-8"))


@pytest.mark.parametrize("row", KV_ROWS, ids=[r["id"] for r in KV_ROWS])
def test_kv_bytes_per_token_matches_worked_example(row):
    model = get_model(row["model"])
    got = kv_bytes_per_token(model, row["bytes_per_element"])
    assert got == pytest.approx(row["expect_bytes_per_token"], rel=row["tolerance"], abs=0.5), row["working"]


def test_kv_rows_cite_a_source():
    for row in KV_ROWS:
        assert row["source"] and row["url"].startswith("https://"), row["id"]


def test_mla_caches_the_latent_not_per_head_keys():
    v3 = get_model("DeepSeek-V3")
    assert kv_elements_per_token(v3) == 61 * (512 + 64)
    # what the same shape would cache as plain MHA: 2 · 61 · 128 heads · 128 = 57x more
    assert 2 * v3.n_layers * v3.n_heads * v3.head_dim / kv_elements_per_token(v3) > 50


def test_gqa_cache_shrinks_by_the_head_ratio():
    l2_70b, l2_7b = get_model("Llama-2-70B"), get_model("Llama-2-7B")
    assert kv_elements_per_token(l2_70b) == 2 * 80 * 8 * 128  # 8 KV heads of 64 query heads
    assert kv_elements_per_token(l2_7b) == 2 * 32 * 32 * 128


def test_deepseek_v3_attention_per_layer_by_hand():
    # q: 7168·1536 + 1536·128·(128+64); kv: 7168·(512+64) + 512·128·(128+128); out: 128·128·7168
    q = 7168 * 1536 + 1536 * 128 * 192
    kv = 7168 * 576 + 512 * 128 * 256
    out = 128 * 128 * 7168
    assert attention_params(get_model("DeepSeek-V3")) == q + kv + out == 187_105_280


def test_deepseek_v3_layer_split_and_shared_expert():
    pc = param_count(get_model("DeepSeek-V3"))
    expert = 3 * 7168 * 2048
    assert (pc.n_dense_layers, pc.n_moe_layers) == (3, 58)
    assert pc.mlp_per_layer_dense == 3 * 7168 * 18432
    assert pc.mlp_per_layer_moe_total == 257 * expert + 7168 * 256  # 256 routed + 1 shared + router
    assert pc.mlp_per_layer_moe_active == 9 * expert + 7168 * 256  # top-8 + shared + router


def test_gelu_mlp_has_two_matrices():
    glm = get_model("ChatGLM-6B")
    pc = param_count(glm)
    assert glm.mlp == "gelu"
    assert pc.mlp_per_layer_dense == 2 * 4096 * 16384


def test_tied_embedding_is_counted_once():
    tied = get_model("Qwen2.5-0.5B")
    pc = param_count(tied)
    assert tied.tie_embeddings
    assert pc.embedding == pc.input_embedding == 151936 * 896
    untied = param_count(get_model("Qwen2.5-7B"))
    assert untied.embedding == 2 * untied.input_embedding == 2 * 152064 * 3584


def test_dense_model_active_equals_total():
    pc = param_count(get_model("Llama-3-8B"))
    assert pc.active == pc.total
    assert pc.active_excluding_input_embedding == pc.total - 128256 * 4096


def test_moe_active_is_a_small_part_of_total():
    pc = param_count(get_model("Qwen3-235B-A22B"))
    assert pc.active < pc.total / 10
    # ZeRO-3 gathers experts as they are used, not a whole layer's 128 experts at once: the biggest block is
    # the input embedding (or the untied head), each gathered on its own
    assert pc.largest_layer == max(pc.attention_per_layer + pc.moe_gathered, pc.input_embedding)
    assert pc.largest_layer < pc.attention_per_layer + pc.mlp_per_layer_moe_total


def test_largest_layer_can_be_the_embedding():
    # Qwen2.5-0.5B: 136M embedding table vs about 15M per layer
    pc = param_count(get_model("Qwen2.5-0.5B"))
    assert pc.largest_layer == pc.embedding


def test_kv_bytes_scale_with_element_size():
    m = get_model("Qwen2.5-72B")
    assert kv_bytes_per_token(m, 1) * 2 == kv_bytes_per_token(m, 2)
    assert kv_bytes_per_token(m, 0.5) == kv_elements_per_token(m) / 2


def test_param_count_keeps_its_public_fields():
    names = {"total", "active", "embedding", "attention_per_layer", "largest_layer", "layers_total"}
    public = {f.name for f in dataclasses.fields(ParamCount)} | set(dir(ParamCount))
    assert names <= public
