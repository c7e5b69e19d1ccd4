"""The evidence wins over the catalog and over what was already tried: a heads count the engine's error names, a
tensor-parallel fix that must also start on the GPUs given (else pipeline parallel), and a setting the asker says
they tried and saw fail is not proposed again as it was."""

import tools


def _first(**inp):
    out = tools.call("diagnose", {"framework": "vllm", "error_kind": "heads_not_divisible", **inp})
    return out["causes"][0], out["after_fix"]


def test_the_heads_the_error_names_win_over_the_catalog_record():
    # the catalog's 7B has 28 heads (4 KV heads); the engine says 52: the model that ran is not the record
    first, _ = _first(model="Qwen2.5-7B", gpu="RTX 4090", n_gpus=4, tp=3, heads_reported=52)
    assert first["cause"] == "tp_not_divisible" and "52 attention heads ÷ tp 3 = 17.33" in first["arithmetic"]
    assert first["fix"] == {"flag": "--tensor-parallel-size", "value": 4}  # 52 = 4 × 13 (28 heads would not split)
    record, _ = _first(model="Qwen2.5-7B", gpu="RTX 4090", n_gpus=4, tp=3, heads_reported=28)
    assert record["fix"] == {"flag": "--tensor-parallel-size", "value": 4}  # 28 = 4 × 7, 4 KV heads: 1 per GPU


def test_a_valid_size_that_cannot_hold_the_weights_gives_way_to_pipeline_parallel():
    # 32B in bf16 (61 GiB) on 3 × 24 GB: tp 2 divides the 40 heads but 30.5 GiB per card does not fit; 3 stages do
    first, after = _first(model="Qwen2.5-32B", gpu="RTX 4090", n_gpus=3, tp=3, max_model_len=1024)
    assert first["fix"] == {"flag": "--pipeline-parallel-size", "value": 3}
    assert "pipeline parallel over 3 GPUs" in first["arithmetic"] and "tp 2 at most" in first["arithmetic"]
    assert after["pp"] == 3 and after["starts"] and 20 < after["weights_gib_per_gpu"] < 21  # 61.03 / 3
    # SGLang: the arithmetic is vLLM's, so no pipeline fix; the largest valid size, said not to start
    sglang = tools.call("diagnose", {"framework": "sglang", "error_kind": "heads_not_divisible", "model": "Qwen2.5-32B",
                                     "gpu": "RTX 4090", "n_gpus": 3, "tp": 3, "max_model_len": 1024})  # fmt: skip
    assert sglang["after_fix"]["tp"] == 2 and sglang["after_fix"]["starts"] is False
    # a longer context that three stages cannot hold either: the largest valid size, said to still not start
    long_ctx, after = _first(model="Qwen2.5-32B", gpu="RTX 4090", n_gpus=3, tp=3, max_model_len=32768)
    assert long_ctx["fix"]["value"] == 2 and after["tp"] == 2 and after["starts"] is False


def test_fewer_gpus_than_visible_are_shown_to_the_engine_and_a_tried_size_is_not_the_bare_fix():
    first, after = _first(model="Qwen2.5-14B", gpu="RTX 4090", n_gpus=3, tp=3, max_model_len=8192, tried="tp=2")
    assert first["fix"] == {"flag": "CUDA_VISIBLE_DEVICES", "value": "0,1 --tensor-parallel-size 2"}
    assert after["tp"] == 2 and after["starts"]
    # not tried: the size alone is the fix (current releases use the first tp GPUs they see)
    bare, _ = _first(model="Qwen2.5-14B", gpu="RTX 4090", n_gpus=3, tp=3, max_model_len=8192)
    assert bare["fix"] == {"flag": "--tensor-parallel-size", "value": 2}
    four, _ = _first(model="Qwen2.5-14B", gpu="RTX 4090", n_gpus=4, tp=3, max_model_len=8192, tried="tp=2")
    assert four["fix"] == {"flag": "--tensor-parallel-size", "value": 4}  # (2 tried; 4 divides 40 and 8)


def test_a_memory_fraction_the_asker_tried_is_not_proposed_again():
    base = {"model": "Qwen2.5-7B", "gpu": "RTX 4090", "framework": "vllm", "error_kind": "kv_too_small",
            "max_model_len": 32768, "gpu_memory_utilization": 0.8}  # fmt: skip
    first = tools.call("diagnose", base)["causes"][0]  # (a raise above the 0.8 set is a change, not "already so")
    assert first["cause"] == "kv_pool_too_small" and first["fix"]["flag"] == "--gpu-memory-utilization"
    assert 0.8 < first["fix"]["value"] <= 0.95
    again = tools.call("diagnose", {**base, "tried": f"gpu_memory_utilization={first['fix']['value']}"})["causes"][0]
    assert again["cause"] == "kv_pool_too_small" and again["fix"]["flag"] == "--max-model-len"
    assert again["fix"]["value"] < 32768


def test_a_setting_the_run_already_has_is_not_its_fix_and_its_cause_goes():
    base = {"model": "Llama-2-7B", "gpu": "RTX 4090", "n_gpus": 4, "framework": "deepspeed", "error_kind": "oom"}
    plain = tools.call("diagnose", {**base, "zero_stage": 3})
    offloaded = tools.call("diagnose", {**base, "zero_stage": 3, "offload": "optimizer+params"})
    assert "zero_optimization.offload_optimizer.device" not in [c["fix"]["flag"] for c in offloaded["causes"]]
    assert "needs_offload" not in [c["cause"] for c in offloaded["causes"]]
    assert "zero_optimization.stage" not in [c["fix"]["flag"] for c in plain["causes"]]  # already ZeRO-3
    bare = tools.call("diagnose", {"framework": "deepspeed", "workload": "train", "error_kind": "oom", "zero_stage": 3,
                                   "offload": "optimizer+params"})  # fmt: skip
    assert bare["causes"][0]["cause"] == "activations_too_large"  # the states are in host RAM: activations stay


def test_an_oom_while_fsdp_wraps_the_model_is_the_whole_model_on_every_gpu():
    out = tools.call("diagnose", {"model": "Llama-2-7B", "gpu": "RTX 3090", "n_gpus": 8, "workload": "train",
                                  "zero_stage": 3, "error_kind": "load_oom", "flags": "fsdp=full_shard"})  # fmt: skip
    first = out["causes"][0]
    assert first["cause"] == "load_time_peak" and first["fix"]["flag"] == "device_id"
    fig = __import__("re").search(
        r"4 B × ([\d.]+)B params = ([\d.]+) GiB on every one of the 8 GPUs", first["arithmetic"]
    )
    assert fig and float(fig.group(2)) > 23.5  # fp32 copy > a 24 GB card: that is the OOM


def test_the_engines_kv_refusal_leads_whatever_the_estimate_says():
    kv = {"framework": "vllm", "error_kind": "kv_too_small", "max_model_len": 32768}
    # the estimate says the weights alone overflow one card (72B in bf16): the engine built a pool all the same
    big = tools.call("diagnose", {**kv, "model": "Qwen2.5-72B", "gpu": "A100 80GB", "kv_tokens_reported": 20000})
    assert big["causes"][0]["cause"] == "kv_pool_too_small" and big["causes"][0]["leads"]
    assert big["causes"][0]["fix"] == {"flag": "--max-model-len", "value": 19456}  # from the log's 20,000
    assert "weights_exceed_memory" not in [c["cause"] for c in big["causes"]]
    # the estimate's pool is far from the log's: the log's figure gives the fix
    off = tools.call("diagnose", {**kv, "model": "Qwen2.5-72B", "gpu": "A100 80GB", "n_gpus": 2, "tp": 2,
                                  "kv_tokens_reported": 20000})  # fmt: skip
    assert off["causes"][0]["fix"] == {"flag": "--max-model-len", "value": 19456}
    # a windowed model the estimate says holds the length: the refusal still names the pool, said as the log's
    window = tools.call("diagnose", {**kv, "model": "Mistral-7B", "gpu": "A10"})
    assert window["causes"][0]["cause"] == "kv_pool_too_small" and window["causes"][0]["leads"]
    assert window["causes"][0]["fix"]["flag"] == "--gpu-memory-utilization"


def test_a_run_sharded_by_fsdp_gets_no_deepspeed_names():
    base = {"model": "Llama-2-7B", "gpu": "RTX 3090", "n_gpus": 8, "workload": "train", "zero_stage": 3,
            "error_kind": "oom"}  # fmt: skip
    deepspeed = [c["fix"]["flag"] for c in tools.call("diagnose", {**base, "framework": "deepspeed"})["causes"]]
    causes = tools.call("diagnose", {**base, "flags": "fsdp=full_shard"})["causes"]
    fsdp = [c["fix"] for c in causes]
    assert "zero_stage_buffers" not in [c["cause"] for c in causes]
    assert any(f.startswith(("zero_optimization.", "stage3_")) for f in deepspeed)
    assert not any(f["flag"].startswith(("zero_optimization.", "stage3_", "reduce_bucket")) for f in fsdp)
    offload = [f for f in fsdp if f["flag"] == "cpu_offload"]
    assert not offload or offload[0]["value"] == "CPUOffload(offload_params=True)"


def test_a_whole_model_the_card_holds_is_not_named_as_the_wrap_oom():
    base = {"gpu": "A100 80GB", "n_gpus": 4, "workload": "train", "zero_stage": 3, "error_kind": "load_oom",
            "flags": "fsdp=full_shard"}  # fmt: skip
    qlora = tools.call("diagnose", {**base, "model": "Qwen2.5-72B", "method": "qlora"})
    assert not any("4 B × 72.7" in c["arithmetic"] for c in qlora["causes"])  # NF4, not fp32, is what loads
    assert not any("FSDP(model)" in c["arithmetic"] and c["leads"] for c in qlora["causes"])  # 34 GiB fits 80 GB
    full = tools.call("diagnose", {**base, "model": "Qwen2.5-72B"})
    assert full["causes"][0]["cause"] == "load_time_peak" and full["causes"][0]["leads"]  # 4 B × 72.7B does not
