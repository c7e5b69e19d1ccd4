"""`diagnose` as a caller sees it: causes ranked by the arithmetic that reproduces the evidence, the fix as a
flag and a value, what the calculators predict after it, unknown flags listed, both languages, clean errors."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tools
from tools.diagnose.context import read_setup
from tools.diagnose.serve import kv_pool
from tools.errors import AdvisorError, InvalidInput
from tools.schemas.diagnose import CAUSES, DiagnoseInput

CJK = re.compile(r"[\u4e00-\u9fff]")
ZERO2_OOM = {"model": "Qwen2.5-7B", "gpu": "A100 80GB", "n_gpus": 8, "framework": "deepspeed", "zero_stage": 2,
             "error_kind": "oom", "failed_alloc_gib": 3.55}  # fmt: skip


def test_a_failed_allocation_is_named_by_the_term_that_reproduces_it_and_the_estimate_is_contradicted():
    out = tools.call("diagnose", ZERO2_OOM)
    first = out["causes"][0]
    assert first["cause"] == "zero_stage_buffers" and first["matches_evidence"] and first["error_pct"] < 1
    assert "3.55 GiB = one fp32 partition: 4 B × 7.62B params ÷ 8 GPUs" == first["arithmetic"]
    assert out["contradicts_estimate"] and out["estimate"]["fits"]  # the estimate fits, the log says no: log wins
    assert first["fix"] == {"flag": "zero_optimization.stage", "value": 3}
    assert out["after_fix"]["tool"] == "fit_training" and out["after_fix"]["fits"]
    assert out["after_fix"]["per_gpu_gb"] < out["estimate"]["per_gpu_gb"]


def test_every_cause_speaks_both_languages_and_uses_the_shared_ids():
    for args in (ZERO2_OOM, {"model": "Qwen2.5-7B", "gpu": "4090", "n_gpus": 3, "framework": "vllm", "tp": 3}):
        for c in tools.call("diagnose", args)["causes"]:
            assert c["cause"] in CAUSES
            assert CJK.search(c["explanation_zh"]) and CJK.search(c["cost_zh"]) and not CJK.search(c["explanation"])
            assert c["arithmetic"] and c["arithmetic_zh"]


def test_a_tensor_parallel_size_that_does_not_divide_the_heads_is_refused_with_one_that_does():
    out = tools.call("diagnose", {"model": "Qwen2.5-7B", "gpu": "4090", "n_gpus": 4, "framework": "vllm", "tp": 3})
    first = out["causes"][0]
    assert first["cause"] == "tp_not_divisible" and "28 attention heads ÷ tp 3 = 9.33" in first["arithmetic"]
    assert first["fix"] == {"flag": "--tensor-parallel-size", "value": 4} and out["after_fix"]["starts"]


def test_the_kv_error_alone_gives_the_cause_and_a_length_from_the_log():
    out = tools.call("diagnose", {"framework": "vllm", "error_kind": "kv_too_small", "max_model_len": 32768,
                                  "kv_tokens_reported": 7344})  # fmt: skip
    assert out["causes"][0]["cause"] == "kv_pool_too_small"
    assert out["causes"][0]["fix"] == {"flag": "--max-model-len", "value": 7168}


def test_flags_not_understood_are_listed_and_known_ones_are_not():
    out = tools.call("diagnose", {**ZERO2_OOM, "flags": "foo_bar=1 port=8000 reduce_bucket_size=5e8 --weird-one=2"})
    assert out["unread"] == ["foo_bar", "weird_one"]


def test_inter_node_tensor_parallel_is_named_as_the_slow_term():
    out = tools.call("diagnose", {"model": "DeepSeek-R1", "gpu": "H100", "n_gpus": 16, "framework": "sglang",
                                  "tp": 16, "measured_tokens_per_s": 19})  # fmt: skip
    first = out["causes"][0]
    assert first["cause"] == "communication_bound" and "tp 16 spans 2 nodes of 8" in first["arithmetic"]


def test_more_gpus_slower_on_geforce_is_the_missing_peer_to_peer_first():
    launched = {"model": "ChatGLM-6B", "gpu": "3090", "n_gpus": 2, "symptom": "multi_gpu_slower"}
    out = tools.call("diagnose", {**launched, "framework": "deepspeed"})  # data parallel: the gradients cross PCIe
    assert [c["cause"] for c in out["causes"][:2]] == ["p2p_or_interconnect", "communication_bound"]
    # nothing says how the GPUs share the work: a script that splits the layers runs one GPU at a time
    out = tools.call("diagnose", launched)
    assert [c["cause"] for c in out["causes"][:3]] == ["p2p_or_interconnect", "compute_or_config_slow",
                                                        "communication_bound"]  # fmt: skip
    assert "device_map='auto'" in out["causes"][1]["arithmetic"] and out["causes"][1]["fix"]["flag"] == "device_map"
    split = tools.call("diagnose", {**launched, "layer_split": True})  # the paste says so: it is the cause
    assert split["causes"][0]["cause"] == "compute_or_config_slow" and split["causes"][0]["matches_evidence"]


@settings(max_examples=25, deadline=None)
@given(low=st.floats(0.5, 0.9), high=st.floats(0.9, 0.98), length=st.integers(2048, 65536))
def test_a_larger_memory_fraction_never_shrinks_the_kv_pool(low, high, length):
    s = read_setup(DiagnoseInput(model="Llama-3.1-8B", gpu="A100 80GB", framework="vllm", max_model_len=length))
    assert kv_pool(s, low, length, 1)["kv_tokens"] <= kv_pool(s, high, length, 1)["kv_tokens"]


@settings(max_examples=25, deadline=None)
@given(tp=st.sampled_from([1, 2, 4, 8]), length=st.integers(1024, 32768))
def test_more_tensor_parallel_never_shrinks_the_kv_pool_in_tokens(tp, length):
    s = read_setup(DiagnoseInput(model="Qwen2.5-72B", gpu="H800", n_gpus=8, framework="vllm", max_model_len=length))
    if tp < 8:
        assert kv_pool(s, 0.9, length, tp)["kv_tokens"] <= kv_pool(s, 0.9, length, tp * 2)["kv_tokens"]


def test_bad_input_is_a_clear_bilingual_error():
    with pytest.raises(InvalidInput) as err:
        tools.call("diagnose", {"failed_alloc_gib": -1})
    assert "failed_alloc_gib" in err.value.message("en") and CJK.search(err.value.message("zh"))
    with pytest.raises(AdvisorError) as unknown:
        tools.call("diagnose", {"gpu": "H300", "error_kind": "oom"})
    assert "H300" in unknown.value.message("en")
    with pytest.raises(InvalidInput):
        tools.call("diagnose", {"error_kind": "exploded"})


def test_nothing_to_go_on_is_said_not_invented():
    out = tools.call("diagnose", {"error_kind": "oom"})
    assert out["causes"] and all(not c["matches_evidence"] for c in out["causes"])
    assert out["after_fix"] == {} and out["estimate"] == {}
