"""A tool input's JSON schema is its whole contract: what the schema allows is answered, what it refuses is
refused, and rules between fields are said in it (or resolved with a stated assumption). The HTTP side of
this is tests/bot/api/test_schema.py (schemathesis); here are the rules themselves."""

from __future__ import annotations

import itertools

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tools
from tools import registry
from tools.catalog.lookup import get_model
from tools.errors import AdvisorError, InvalidInput, UnknownModel
from tools.schemas.speed import TOKENS_PATTERN, parse_token_count

LLAMA3_8B = {
    "name": "my llama",
    "n_layers": 32,
    "hidden_size": 4096,
    "n_kv_heads": 8,
    "heads_per_kv": 4,
    "head_dim": 128,
    "ffn_size": 14336,
    "vocab_size": 128256,
    "max_context": 8192,
}
DEEPSEEK_V3 = {
    "name": "my v3",
    "n_layers": 61,
    "hidden_size": 7168,
    "n_kv_heads": 128,
    "head_dim": 128,
    "ffn_size": 18432,
    "vocab_size": 129280,
    "native_precision": "fp8",
    "moe": {
        "n_experts": 256,
        "experts_per_token": 8,
        "expert_ffn_size": 2048,
        "n_shared_experts": 1,
        "n_dense_layers": 3,
    },
    "mla": {
        "kv_lora_rank": 512,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "v_head_dim": 128,
        "q_lora_rank": 1536,
    },
}


def schema_allows(name: str, args: dict) -> bool:
    schema = registry.get(name).input_model.model_json_schema()
    return jsonschema.Draft202012Validator(schema).is_valid(args)


def server_allows(name: str, args: dict) -> bool:
    try:
        registry.validate(name, args)
    except AdvisorError:
        return False
    return True


@pytest.mark.parametrize("name", registry.names())
def test_every_input_schema_is_a_plain_object_at_the_root(name):
    """MCP clients backed by Claude, OpenAI or Gemini drop (or fail on) a tool whose input schema has
    anyOf/oneOf/allOf at the root: rules between fields live under dependentSchemas instead."""
    schema = registry.get(name).input_model.model_json_schema()
    assert schema["type"] == "object"
    assert not {"anyOf", "oneOf", "allOf"} & set(schema)


@pytest.mark.parametrize(
    ("offload", "zero_stage", "method", "precision"),
    list(
        itertools.product(
            ["none", "optimizer", "optimizer+params", None], [None, 0, 1, 2, 3], ["full", "qlora"], ["bf16", "fp32"]
        )
    ),
)
def test_fit_training_schema_and_validation_agree_on_offload_zero_and_qlora(offload, zero_stage, method, precision):
    args = {"model": "7B", "gpu": "H800", "method": method, "precision": precision}
    args |= {k: v for k, v in (("offload", offload), ("zero_stage", zero_stage)) if v is not None}
    assert schema_allows("fit_training", args) == server_allows("fit_training", args)


@pytest.mark.parametrize(
    ("workload", "tokens"), list(itertools.product(["train", "finetune", "infer"], [..., None, 10**9, "1B", 0, "lots"]))
)
def test_recommend_schema_and_validation_agree_on_tokens(workload, tokens):
    args = {"model": "7B", "workload": workload} | ({} if tokens is ... else {"tokens": tokens})
    assert schema_allows("recommend_gpus", args) == server_allows("recommend_gpus", args)


def test_a_training_recommendation_without_tokens_still_asks_for_them():
    with pytest.raises(InvalidInput) as err:
        tools.call("recommend_gpus", {"model": "7B", "workload": "finetune"})
    assert err.value.field == "tokens" and "10亿" in err.value.zh


@settings(max_examples=300, deadline=None)
@given(st.from_regex(TOKENS_PATTERN, fullmatch=True))
def test_every_token_phrase_the_schema_allows_is_read(phrase):
    assert 1 <= parse_token_count(phrase) <= 1e15


@pytest.mark.parametrize(
    ("phrase", "count"),
    [("15.6e12", 15_600_000_000_000), ("14.8e12", 14_800_000_000_000), ("1.5E+12", 1_500_000_000_000), ("2e13", 2e13)],
)
def test_a_token_count_in_exponent_form_is_read(phrase, count):
    """Issue 25 (cause 10): DeepSeek-V3's '14.8T' is written 14.8e12 in papers and configs; it was refused."""
    assert parse_token_count(phrase) == count
    out = tools.call("training_time", {"model": "7B", "gpu": "H100", "n_gpus": 8, "tokens": phrase})
    assert out["tokens"] == count


@pytest.mark.parametrize(("n_gpus", "used", "why"), [(6, 4, "2 left idle"), (2, 4, "the fewest GPUs")])
def test_a_gpu_count_that_does_not_tile_tp_is_sized_for_whole_groups(n_gpus, used, why):
    out = tools.call("fit_training", {"model": "Llama-2-7B", "gpu": "A100", "n_gpus": n_gpus, "tp": 4})
    same = tools.call("fit_training", {"model": "Llama-2-7B", "gpu": "A100", "n_gpus": used, "tp": 4})
    assert out["n_gpus"] == used and out["per_gpu_gb"] == same["per_gpu_gb"]
    note = next(a for a in out["assumptions"] if a["key"] == "n_gpus")
    assert note["value"] == used and why in note["note"]


def test_tensor_parallel_wider_than_a_node_crosses_the_fabric():
    base = {
        "model": "Llama-2-70B",
        "gpu": "H100",
        "n_gpus": 16,
        "tokens": "1B",
        "tp": 16,
        "nodes_fabric": "ethernet-100g",
    }
    across = tools.call("training_time", {**base, "gpus_per_node": 8})
    inside = tools.call("training_time", {**base, "gpus_per_node": 16})
    assert across["hours"] > inside["hours"]
    assert any(a["key"] == "tensor_parallel_nodes" and a["value"] == 2 for a in across["assumptions"])


def test_an_architecture_sizes_like_the_catalog_model_of_the_same_shape():
    for tool in ("fit_training", "fit_inference"):
        mine = tools.call(tool, {"model": LLAMA3_8B, "gpu": "H800", "n_gpus": 8})
        catalog = tools.call(tool, {"model": "Llama-3-8B", "gpu": "H800", "n_gpus": 8})
        assert mine["model"] == "my llama" and mine["per_gpu_gb"] == catalog["per_gpu_gb"]
    v3 = tools.call("fit_inference", {"model": DEEPSEEK_V3, "gpu": "H800", "n_gpus": 16})
    assert v3["per_gpu_gb"] == pytest.approx(
        tools.call("fit_inference", {"model": "DeepSeek-V3", "gpu": "H800", "n_gpus": 16})["per_gpu_gb"], rel=0.02
    )
    assert get_model("DeepSeek-V3").n_heads == 128  # what heads_per_kv 1 × 128 KV heads gives


def test_an_architecture_s_leftover_combinations_are_resolved_and_stated():
    odd = {**DEEPSEEK_V3, "n_layers": 2, "moe": {**DEEPSEEK_V3["moe"], "experts_per_token": 300, "n_dense_layers": 5}}
    out = tools.call("fit_inference", {"model": odd, "gpu": "H800", "n_gpus": 8})
    notes = {a["key"]: a["value"] for a in out["assumptions"]}
    assert notes["model.experts_per_token"] == 256 and notes["model.n_dense_layers"] == 2


@pytest.mark.parametrize(
    ("model", "field"),
    [
        ({**LLAMA3_8B, "n_layers": 0}, "model.architecture.n_layers"),
        ({"n_layers": 32}, "model.architecture.hidden_size"),
        ({**LLAMA3_8B, "n_heads": 32}, "model.architecture.n_heads"),  # heads are n_kv_heads × heads_per_kv
        ({**LLAMA3_8B, "moe": {"n_experts": 8}}, "model.architecture.moe.experts_per_token"),
    ],
)
def test_a_bad_architecture_names_the_field(model, field):
    with pytest.raises(InvalidInput) as err:
        tools.call("fit_training", {"model": model, "gpu": "H800"})
    assert err.value.field == field and "str" not in err.value.en


@pytest.mark.parametrize(
    ("tool", "args", "field"),
    [
        ("rent_vs_buy", {"gpu": "A100 80GB", "hours_per_day": 5e-324}, "hours_per_day"),
        ("inference_speed", {"model": "7B", "gpu": "H800", "bandwidth_efficiency": 1e-300}, "bandwidth_efficiency"),
    ],
)
def test_a_share_or_duration_too_small_to_mean_anything_is_refused(tool, args, field):
    """5e-324 hours a day once divided into an infinite cost (500) or an answer of null."""
    assert not schema_allows(tool, args)
    with pytest.raises(InvalidInput) as err:
        tools.call(tool, args)
    assert err.value.field == field


def test_a_size_the_calculators_cannot_stand_in_for_is_an_unknown_model():
    """ "4M" parses as a size but no generic model is built below 0.01B: a name that resolves to nothing (404),
    as a typo would, not a refusal of a well-formed request."""
    with pytest.raises(UnknownModel) as err:
        tools.call("fit_inference", {"model": "4M", "gpu": "H800"})
    assert err.value.field == "model" and "0.004B" in err.value.en and "0.004B" in err.value.zh
