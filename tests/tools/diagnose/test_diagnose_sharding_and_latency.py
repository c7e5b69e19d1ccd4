"""Three classes of real threads (session 10): several GPUs below ZeRO-3 that each hold the whole weights, tensor
parallel measured slower than one GPU while the all-reduce bytes are negligible, and full training whose model
states fill the card although the estimate fits. Each is checked as a caller sees it: the lead cause, its
arithmetic, the flag to change and what the calculators predict after it."""

import re

from hypothesis import given, settings
from hypothesis import strategies as st

import tools

CJK = re.compile(r"[\u4e00-\u9fff]")


def _lead(args):
    out = tools.call("diagnose", args)
    return out, out["causes"][0]


def test_lora_on_several_cards_below_zero3_leads_with_sharding_the_weights_not_a_smaller_base():
    # gh-qwen-708's class: 72B LoRA on 8 x A800 80GB with no ZeRO stage said: each card holds the whole base
    out, first = _lead({"model": "Qwen2.5-72B", "gpu": "A800 80GB", "n_gpus": 8, "method": "lora",
                        "error_kind": "oom", "workload": "train"})  # fmt: skip
    assert first["cause"] == "zero_stage_buffers" and first["fix"] == {"flag": "zero_optimization.stage", "value": 3}
    assert "each of the 8 GPUs holds the whole" in first["arithmetic"] and "ZeRO-3 splits them" in first["arithmetic"]
    assert "only ZeRO-3" in first["explanation"] and CJK.search(first["explanation_zh"])
    assert out["after_fix"]["fits"] and out["after_fix"]["per_gpu_gb"] < 80
    # offloading is not offered beside a ZeRO-3 that fits by itself
    assert not any(c["cause"] == "needs_offload" for c in out["causes"])


def test_zero2_full_training_whose_states_overflow_is_sent_to_zero3_before_offload():
    # llamafactory-6752's class: full fine-tuning of 3B on 4 x RTX 3090 under ZeRO-2 at 512 tokens
    out, first = _lead({"model": "Qwen2.5-3B", "gpu": "RTX 3090", "n_gpus": 4, "method": "full", "zero_stage": 2,
                        "seq_len": 512, "micro_batch": 1, "error_kind": "oom", "workload": "train"})  # fmt: skip
    assert first["cause"] == "zero_stage_buffers" and first["fix"]["value"] == 3
    assert "here ZeRO-2" in first["arithmetic"] and out["after_fix"]["fits"]


def test_activations_that_overflow_keep_the_lead_over_sharding():
    # the weights are a small share and a micro-batch of 8 is what overflows: a smaller batch, not ZeRO-3
    _, first = _lead({"model": "ChatGLM3-6B", "gpu": "A800 80GB", "n_gpus": 4, "method": "full", "zero_stage": 2,
                        "seq_len": 1024, "micro_batch": 8, "error_kind": "oom", "workload": "train"})  # fmt: skip
    assert first["cause"] == "activations_too_large"


def test_one_gpu_and_zero3_runs_are_never_told_to_shard():
    for args in ({"n_gpus": 1}, {"n_gpus": 4, "zero_stage": 3}):
        out = tools.call("diagnose", {"model": "Qwen2.5-32B", "gpu": "RTX 4090", "method": "lora",
                                      "error_kind": "oom", "workload": "train", **args})  # fmt: skip
        assert not any("holds the whole" in c["arithmetic"] for c in out["causes"])


def test_tensor_parallel_slower_than_one_gpu_is_the_per_collective_latency_computed_from_the_two_speeds():
    # gh-lmdeploy-2534: Qwen2.5-7B, 2 cards at 22 tok/s vs 32 on one
    _, first = _lead({"model": "Qwen2.5-7B", "gpu": "Ascend 910B", "n_gpus": 2, "tp": 2, "framework": "vllm",
                        "workload": "infer", "measured_tokens_per_s": 22, "single_gpu_tokens_per_s": 32})  # fmt: skip
    assert first["cause"] == "communication_bound"
    extra_ms = 1000 / 22 - 1000 / 32  # 14.2 ms per token, over 2 x 28 layers of all-reduce
    assert f"{extra_ms:.1f} ms more per token" in first["arithmetic"] and "56 all-reduces" in first["arithmetic"]
    assert f"({extra_ms / 56 * 1000:.0f} µs each)" in first["arithmetic"]
    assert first["fix"] == {"flag": "--data-parallel-size", "value": 2}  # a replica per card: no all-reduce


@settings(max_examples=25, deadline=None)
@given(single=st.floats(20, 200), slowdown=st.floats(0.3, 0.95))
def test_the_latency_per_all_reduce_is_the_measured_gap_spread_over_the_all_reduces(single, slowdown):
    measured = round(single * slowdown, 1)
    out = tools.call("diagnose", {"model": "Qwen2.5-7B", "gpu": "A100 80GB", "n_gpus": 2, "tp": 2,
                                  "framework": "vllm", "workload": "infer", "measured_tokens_per_s": measured,
                                  "single_gpu_tokens_per_s": round(single, 1)})  # fmt: skip
    lead = out["causes"][0]
    if "µs each" not in lead["arithmetic"]:
        return  # the bandwidth term dominates instead (a different, computed cause)
    gap = 1000 / measured - 1000 / round(single, 1)
    us = float(re.search(r"\((\d+) µs each\)", lead["arithmetic"]).group(1))
    assert abs(us - gap / 56 * 1000) <= 1


def test_an_engines_queue_on_consumer_cards_without_p2p_points_at_pcie_and_the_narrowest_tp_that_holds_it():
    # gh-vllm-16444's class: a 32B model under vLLM on 8 x RTX 4090, requests slow while others queue
    out = tools.call("diagnose", {"model": "DeepSeek-R1-Distill-Qwen-32B", "gpu": "RTX 4090", "n_gpus": 8,
                                  "framework": "vllm", "workload": "infer", "symptom": "serial"})  # fmt: skip
    pcie = next(c for c in out["causes"] if c["cause"] == "p2p_or_interconnect")
    assert pcie["fix"] == {"flag": "--tensor-parallel-size", "value": 4}  # 65 GB of bf16 weights: 4 x 24 GB hold it
    assert "128 all-reduces" in pcie["arithmetic"] and "TP 4 with 2 replicas" in pcie["arithmetic"]
    assert "host memory" in pcie["explanation"] and CJK.search(pcie["explanation_zh"])
    # on data-centre cards with NVLink there is no such cause
    nvlink = tools.call("diagnose", {"model": "DeepSeek-R1-Distill-Qwen-32B", "gpu": "A100 80GB", "n_gpus": 8,
                                     "framework": "vllm", "workload": "infer", "symptom": "serial"})  # fmt: skip
    assert not any(c["cause"] == "p2p_or_interconnect" for c in nvlink["causes"])


def test_tensor_parallel_across_servers_told_slow_keeps_tp_inside_a_node_and_a_running_engine_is_not_refused():
    # gh-vllmascend-5178's class: TP 16 over two 8-card servers, "why so slow", the engine answered
    out = tools.call("diagnose", {"model": "Qwen3-235B-A22B", "gpu": "Ascend 910B", "n_gpus": 16, "tp": 16,
                                  "framework": "vllm", "workload": "infer", "symptom": "slow"})  # fmt: skip
    inter = next(c for c in out["causes"] if c["cause"] == "communication_bound")
    assert "tp 16 spans 2 nodes of 8 GPUs" in inter["arithmetic"]
    assert inter["fix"] == {"flag": "tensor × pipeline parallel", "value": "tp 8, pp 2"}
    assert not any(c["cause"] == "tp_not_divisible" for c in out["causes"])  # it started: the sizes divide


def test_a_multi_gpu_training_oom_with_nothing_to_compute_with_names_whole_copies_per_gpu_first():
    # llamafactory-3025's class: "2张卡训练报错 OOM", no model, no card, no ZeRO stage
    out = tools.call("diagnose", {"n_gpus": 2, "framework": "pytorch", "error_kind": "oom", "workload": "train"})
    first = out["causes"][0]
    assert first["cause"] == "zero_stage_buffers" and first["fix"] == {"flag": "zero_optimization.stage", "value": 3}
    assert "copy the whole weights to every GPU" in first["explanation"] and not first["matches_evidence"]
    one = tools.call("diagnose", {"n_gpus": 1, "framework": "pytorch", "error_kind": "oom", "workload": "train"})
    assert one["causes"][0]["cause"] != "zero_stage_buffers"


def test_weights_said_not_to_fit_one_card_are_the_cause_and_more_cards_or_4_bit_the_fix():
    engine = tools.call("diagnose", {"framework": "vllm", "error_kind": "weights_oom"})["causes"][0]
    assert engine["cause"] == "weights_exceed_memory" and engine["fix"]["flag"] == "--tensor-parallel-size"
    by_hand = tools.call("diagnose", {"framework": "transformers", "error_kind": "weights_oom"})["causes"][0]
    assert by_hand["cause"] == "weights_exceed_memory" and by_hand["fix"]["flag"] == "--quantization"


def test_weights_that_went_whole_to_one_of_several_cards_and_exceed_it_lead_with_the_split():
    # gh-llamafactory-4326's class: a 72B AWQ checkpoint served by a trainer's API on 40 GB A100s, one card used
    out = tools.call("diagnose", {"model": "Qwen2.5-72B", "gpu": "A100 40GB", "n_gpus": 2, "precision": "int4",
                                  "workload": "infer", "error_kind": "load_oom", "symptom": "one_gpu_used"})  # fmt: skip
    first = out["causes"][0]
    assert first["cause"] == "weights_exceed_memory" and first["fix"] == {"flag": "device_map", "value": "auto"}
    assert "went whole to one GPU" in first["arithmetic"] and "split over the 2 GPUs" in first["arithmetic"]
    assert "one GPU computes at a time" in first["cost"]  # the layer split's price for serving, not a trainer's
