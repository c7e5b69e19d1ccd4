"""A host-RAM OOM (exit code -9, "Killed") diagnosed in numbers: the host RAM the setup needs by term against the
RAM the user has, and the one change that closes the gap; the data workers only when their setting is shown."""

import re

import tools


def _gb(text: str, before: str) -> float:
    m = re.search(rf"{before}\s*([\d,]+(?:\.\d+)?) GB", text)
    assert m, text
    return float(m.group(1).replace(",", ""))


def test_zero3_offload_of_a_72b_needs_more_than_800_gb_and_more_ram_is_the_fix():
    out = tools.call("diagnose", {"model": "Qwen2.5-72B", "gpu": "A100 80GB", "n_gpus": 8, "error_kind": "host_oom",
                                  "method": "full", "zero_stage": 3, "offload": "optimizer+params",
                                  "host_ram_gb": 800})  # fmt: skip
    first = out["causes"][0]
    assert first["cause"] == "host_ram" and first["matches_evidence"]
    need = _gb(first["arithmetic"], "≈")
    assert 1.3e3 < need < 2.1e3  # 18 B × 72.7B (× 1.5 buffers)
    assert "16 B × 72.7B trainable params" in first["arithmetic"] and "800 GB, which is less" in first["arithmetic"]
    assert first["fix"]["flag"] == "RAM + swap" and first["fix"]["value"].startswith(f"≥ {need:,.0f} GB (")
    less = float(
        re.search(r"\(≥ ([\d,]+) GB: zero_optimization.offload_param", first["fix"]["value"]).group(1).replace(",", "")
    )
    assert 800 < less < need  # keeping the parameters on the GPUs is not enough either: 16 B × 72.7B × 1.5
    assert "preprocessing_num_workers" not in str(out["causes"])
    assert "您有 800 GB，不够" in first["arithmetic_zh"]


def test_every_rank_loading_the_checkpoint_is_the_cause_when_zero_init_would_have_fit():
    out = tools.call("diagnose", {"model": "Llama-2-70B", "gpu": "V100 32GB", "n_gpus": 8, "error_kind": "host_oom",
                                  "zero_stage": 3, "host_ram_gb": 512})  # fmt: skip
    first = out["causes"][0]
    assert "8 rank(s) × 68.98B params × 4 B" in first["arithmetic"]
    assert _gb(first["arithmetic"], "≈") > 512
    assert first["fix"]["flag"] == "deepspeed.zero.Init"
    assert out["after_fix"]["host_ram_gb"] < 512


def test_dpo_loads_a_reference_copy_per_rank_and_bf16_loading_closes_the_gap():
    out = tools.call("diagnose", {"model": "7B", "gpu": "A800", "n_gpus": 8, "error_kind": "host_oom",
                                  "workload": "train", "method": "full", "preference": "dpo",
                                  "host_ram_gb": 400})  # fmt: skip
    first = out["causes"][0]
    assert "reference" in first["arithmetic"] and _gb(first["arithmetic"], "≈") == 448
    assert first["fix"] == {"flag": "torch_dtype", "value": "bfloat16"}
    assert out["after_fix"]["host_ram_gb"] == 224.0 and out["after_fix"]["fits"] is True
    lora = tools.call("diagnose", {"model": "7B", "gpu": "A800", "n_gpus": 8, "error_kind": "host_oom",
                                   "workload": "train", "method": "lora", "preference": "dpo",
                                   "host_ram_gb": 400})  # fmt: skip
    assert "reference" not in lora["causes"][0]["arithmetic"]  # the base with the adapter off is the reference


def test_an_engine_build_needs_a_multiple_of_the_fp16_weights_against_the_ram_and_swap():
    short = tools.call("diagnose", {"model": "Baichuan2-7B", "workload": "infer", "precision": "fp16",
                                    "error_kind": "host_oom", "engine_build": True, "host_ram_gb": 32})  # fmt: skip
    first = short["causes"][0]
    assert "3 × 7.51B params × 2 B" in first["arithmetic"] and "32 GB, which is less" in first["arithmetic"]
    assert first["fix"]["flag"] == "RAM + swap"
    asked = tools.call("diagnose", {"model": "7B", "workload": "infer", "engine_build": True, "host_ram_gb": 32,
                                    "swap_gb": 16})  # fmt: skip
    assert asked["causes"][0]["cause"] == "host_ram"  # no error: the build's host RAM is the question
    assert "32 GB + 16 GB swap, which holds it" in asked["causes"][0]["arithmetic"]


def test_data_workers_are_the_fix_only_when_their_setting_is_in_evidence():
    bare = tools.call("diagnose", {"error_kind": "host_oom"})
    assert bare["causes"][0]["fix"]["flag"] != "preprocessing_num_workers"
    shown = tools.call("diagnose", {"error_kind": "host_oom", "flags": "preprocessing_num_workers=64"})
    assert shown["causes"][0]["fix"] == {"flag": "preprocessing_num_workers", "value": 4}
    # the estimate fits the RAM they have: the workers they set, not a guessed lever
    fits = tools.call("diagnose", {"model": "Qwen2.5-7B", "gpu": "A100 80GB", "n_gpus": 2, "error_kind": "host_oom",
                                   "workload": "train", "host_ram_gb": 1024,
                                   "flags": "preprocessing_num_workers=128"})  # fmt: skip
    assert fits["causes"][0]["fix"] == {"flag": "preprocessing_num_workers", "value": 4}
    assert "which holds that" in fits["causes"][0]["arithmetic"]
