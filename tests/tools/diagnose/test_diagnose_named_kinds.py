"""Causes `diagnose` names from what the error or the words say, for kinds the fresh December threads showed it
missed: a quantized checkpoint that tensor parallel cannot cut into whole groups, a freeze on several GPUs, the CUDA
runtime's own out-of-memory error, an engine OOM with its pool already reserved, one huge allocation during
hand-run generation (eager attention scores), and a slow run on a base loaded in 8 or 4 bits."""

import math
import re

import tools
from tools.units import GiB

CJK = re.compile(r"[\u4e00-\u9fff]")


def _first(args: dict) -> dict:
    return tools.call("diagnose", args)["causes"][0]


def test_a_quantized_checkpoint_that_tp_cannot_cut_into_whole_groups():
    first = _first({"model": "Qwen2.5-72B-Instruct", "framework": "vllm", "precision": "int4", "n_gpus": 2, "tp": 2,
                    "error_kind": "other", "quant_misaligned": True})  # fmt: skip
    assert first["cause"] == "tp_not_divisible" and first["leads"]
    # 29,568 ÷ 128 = 231 groups, and 231 does not split in two
    assert "29,568" in first["arithmetic"] and "231 groups" in first["arithmetic"] and "115.50" in first["arithmetic"]
    assert first["fix"]["flag"] == "--pipeline-parallel-size" and str(first["fix"]["value"]).startswith("2")
    assert CJK.search(first["arithmetic_zh"])
    # the size that failed not shown, the model not in the catalog: the engine's own words, and one GPU
    bare = _first({"error_kind": "other", "quant_misaligned": True, "framework": "vllm"})
    assert bare["cause"] == "tp_not_divisible" and bare["fix"] == {"flag": "--tensor-parallel-size", "value": 1}


def test_a_freeze_on_several_geforce_cards_is_the_p2p_path_first():
    out = tools.call("diagnose", {"gpu": "RTX 4090", "n_gpus": 4, "symptom": "hang", "framework": "pytorch"})
    first, second = out["causes"][:2]
    assert first["cause"] == "p2p_or_interconnect" and first["fix"] == {"flag": "NCCL_P2P_DISABLE", "value": 1}
    assert second["cause"] == "nccl_timeout_or_env"
    # data-centre cards: NCCL's environment first, the P2P path still second
    dc = tools.call("diagnose", {"gpu": "A100 80GB", "n_gpus": 8, "symptom": "hang", "framework": "pytorch"})
    assert [c["cause"] for c in dc["causes"][:2]] == ["nccl_timeout_or_env", "p2p_or_interconnect"]
    # one GPU that hangs has no collective to wait on
    one = tools.call("diagnose", {"gpu": "A100 80GB", "n_gpus": 1, "symptom": "hang", "framework": "pytorch"})
    assert "p2p_or_interconnect" not in [c["cause"] for c in one["causes"]]


def test_the_cuda_runtimes_own_oom_points_at_memory_held_before_the_run():
    first = _first({"gpu": "T4", "error_kind": "oom", "cuda_runtime_oom": True, "workload": "train"})
    assert first["cause"] == "other_process_memory" and first["fix"]["flag"] == "CUDA_VISIBLE_DEVICES"
    assert "Tried to allocate" in first["arithmetic"]
    # the allocator's own message (no runtime flag) keeps the usual training suspects first
    plain = _first({"gpu": "T4", "error_kind": "oom", "workload": "train"})
    assert plain["cause"] != "other_process_memory"


def test_an_engine_oom_with_its_pool_reserved_is_the_memory_outside_the_fraction():
    out = tools.call("diagnose", {"model": "Qwen2.5-7B-Instruct", "gpu": "A10", "framework": "vllm",
                                  "error_kind": "oom", "max_model_len": 8192})  # fmt: skip
    util = next(c for c in out["causes"] if c["cause"] == "memory_utilization_setting")
    assert util["fix"]["flag"] == "--gpu-memory-utilization" and util["fix"]["value"] == 0.8
    assert "0.9" in util["arithmetic"] and "2.25 GiB" in util["arithmetic"]  # 22.49 GiB reported (ECC on) × (1 − 0.9)
    assert [c["cause"] for c in out["causes"]].index("memory_utilization_setting") < 2
    # SGLang on a card it was not told: nothing to size, its memory share is the first suspect
    blind = tools.call("diagnose", {"model": "Qwen2.5-7B-Instruct", "framework": "sglang", "error_kind": "oom"})
    assert blind["causes"][0]["cause"] == "memory_utilization_setting"


def test_one_huge_allocation_in_hand_run_generation_is_the_eager_attention_scores():
    # ChatGLM3-6B: 32 heads; 12 GiB in one piece is 32 × L² × 2 B at L ≈ 14,190 tokens
    first = _first({"model": "ChatGLM3-6B", "gpu": "A100 80GB", "framework": "pytorch", "workload": "infer",
                    "error_kind": "oom", "failed_alloc_gib": 12.0, "max_model_len": 32768})  # fmt: skip
    assert first["cause"] == "activations_too_large"
    assert first["fix"] == {"flag": "attn_implementation", "value": "sdpa"}
    tokens = int(math.sqrt(12.0 * GiB / (32 * 2)))
    assert f"{tokens:,}" in first["arithmetic"] and "32 heads" in first["arithmetic"]
    # a small request is no score matrix: not named
    small = tools.call("diagnose", {"model": "ChatGLM3-6B", "gpu": "A100 80GB", "framework": "pytorch",
                                    "workload": "infer", "error_kind": "oom", "failed_alloc_gib": 0.5})  # fmt: skip
    assert all("attention scores" not in c["arithmetic"] for c in small["causes"])
    # an engine computes attention in tiles: never this cause
    engine = tools.call("diagnose", {"model": "ChatGLM3-6B", "gpu": "A100 80GB", "framework": "vllm",
                                     "error_kind": "oom", "failed_alloc_gib": 12.0})  # fmt: skip
    assert all("attention scores" not in c["arithmetic"] for c in engine["causes"])


def test_a_slow_run_on_an_8_bit_base_is_the_dequantisation():
    first = _first({"gpu": "RTX 4090", "symptom": "slow", "workload": "train", "method": "lora",
                    "precision": "int8", "flags": "load_in_8bit=true"})  # fmt: skip
    assert first["cause"] == "compute_or_config_slow" and first["fix"] == {"flag": "load_in_8bit", "value": False}
    assert "8-bit" in first["arithmetic"] and "dequantis" in first["arithmetic"]
    four = _first({"gpu": "RTX 4090", "symptom": "slow", "workload": "train", "method": "qlora"})
    assert four["fix"] == {"flag": "load_in_4bit", "value": False}
    # a GPTQ/AWQ checkpoint's int4 is no bitsandbytes load: not this cause
    gptq = _first({"gpu": "RTX 4090", "symptom": "slow", "workload": "train", "precision": "int4"})
    assert gptq["fix"].get("flag") not in ("load_in_4bit", "load_in_8bit")
    # the same base with an OOM beside it: the OOM is the question, not the speed
    oom = tools.call("diagnose", {"gpu": "RTX 4090", "symptom": "slow", "workload": "train", "method": "lora",
                                  "precision": "int8", "flags": "load_in_8bit=true", "error_kind": "oom"})  # fmt: skip
    assert oom["causes"][0]["fix"].get("flag") != "load_in_8bit"
