"""Causes `diagnose` gives for kinds of trouble the arithmetic alone used to miss: weights that leave no room for
any training, a local runtime whose own layer split still ran out, a merge that fills host RAM, an engine that
holds more than the model, and several GPUs slower than one when nothing says how they share the work."""

import re

import tools

CJK = re.compile(r"[\u4e00-\u9fff]")


def test_weights_that_fill_most_of_the_card_are_the_cause_when_even_lora_does_not_fit():
    out = tools.call("diagnose", {"model": "ChatGLM3-6B", "gpu": "T4", "framework": "pytorch", "error_kind": "oom",
                                  "capacity_gib": 14.56})  # fmt: skip
    first = out["causes"][0]
    assert first["cause"] == "weights_exceed_memory" and first["fix"] == {"flag": "finetuning_type", "value": "qlora"}
    share = re.search(r"alone are ([\d.]+) GiB, (\d+)% of the 14\.56 GiB card: even LoRA needs ([\d.]+) GiB", first["arithmetic"])  # fmt: skip
    assert share and int(share.group(2)) == round(float(share.group(1)) / 14.56 * 100)
    assert float(share.group(3)) > 14.56  # LoRA does not fit: that is why the weights, not the optimizer, are named
    assert out["after_fix"]["fits"]  # QLoRA's 4-bit base weights do
    # a card the weights leave room on keeps the optimizer as the cause (full fine-tuning of 7B on 80 GB)
    big = tools.call(
        "diagnose", {"model": "Qwen2.5-7B", "gpu": "A100 80GB", "framework": "pytorch", "error_kind": "oom"}
    )
    assert big["causes"][0]["cause"] != "weights_exceed_memory"


def test_a_local_runtime_that_split_the_layers_itself_and_still_ran_out_under_counted():
    out = tools.call("diagnose", {"model": "7B", "framework": "ollama", "workload": "infer", "error_kind": "oom",
                                  "layers_on_gpu": 6, "layers_total": 33})  # fmt: skip
    first = out["causes"][0]
    assert first["cause"] == "version_or_bug" and first["fix"]["flag"] == "num_gpu" and first["fix"]["value"] < 6
    assert "6 of 33 layers" in first["arithmetic"] and "estimate" in first["explanation"]
    assert CJK.search(first["explanation_zh"]) and not first["explanation"].startswith("Nothing in the arithmetic")
    # the same split without an OOM is a slow run: the layers on the CPU are why, as before
    slow = tools.call("diagnose", {"model": "7B", "framework": "ollama", "workload": "infer", "symptom": "slow",
                                   "layers_on_gpu": 6, "layers_total": 33})  # fmt: skip
    assert slow["causes"][0]["cause"] == "weights_exceed_memory"
    # no layer line pasted: Ollama still chose the split itself, so its estimate is the first suspect
    bare = tools.call("diagnose", {"model": "7B", "framework": "ollama", "workload": "infer", "error_kind": "oom"})
    assert bare["causes"][0]["cause"] == "version_or_bug" and bare["causes"][0]["fix"]["flag"] == "num_gpu"
    # the user set num_gpu: the split is theirs, not the runtime's estimate
    theirs = tools.call("diagnose", {"model": "7B", "framework": "ollama", "workload": "infer", "error_kind": "oom",
                                     "flags": "num_gpu=99"})  # fmt: skip
    assert not any("runtime chose" in c["arithmetic"] or c["fix"]["flag"] == "num_gpu" for c in theirs["causes"])


def test_a_failed_merge_or_export_is_host_ram_with_the_16_bit_model_as_its_figure():
    out = tools.call("diagnose", {"model": "Qwen2.5-7B", "symptom": "merge_export"})
    first = out["causes"][0]
    assert first["cause"] == "host_ram"
    fig = re.search(r"2 B × ([\d.]+)B params = ([\d.]+) GiB", first["arithmetic"])
    assert fig and abs(float(fig.group(2)) - 2 * float(fig.group(1)) * 1e9 / 2**30) < 0.05
    assert first["fix"]["flag"] == "RAM + swap" and first["fix"]["value"].startswith("≥ ")
    unknown = tools.call("diagnose", {"symptom": "merge_export"})  # no model: said as the usual cause, no figure
    assert unknown["causes"][0]["cause"] == "host_ram" and not unknown["causes"][0]["matches_evidence"]


def test_an_engine_that_started_and_holds_more_than_the_model_is_its_memory_fraction_not_an_oom():
    out = tools.call("diagnose", {"model": "Llama-2-70B", "gpu": "V100 32GB", "n_gpus": 8, "precision": "int4",
                                  "symptom": "engine_memory"})  # fmt: skip
    causes = [c["cause"] for c in out["causes"]]
    assert causes[0] == "memory_utilization_setting" and "weights_exceed_memory" not in causes
    assert "0.9 × 32.00 GiB = 28.80 GiB" in out["causes"][0]["arithmetic"]
    # the engine named: the message is its own; unnamed, the same cause is a likely one, not a matched figure
    named = tools.call("diagnose", {"model": "Llama-2-70B", "gpu": "V100 32GB", "framework": "vllm", "tp": 8,
                                    "precision": "int4", "symptom": "engine_memory"})  # fmt: skip
    assert named["causes"][0]["matches_evidence"] and not out["causes"][0]["matches_evidence"]


def test_reserved_memory_that_covers_the_request_is_fragmentation_when_nothing_else_can_be_computed():
    # PyTorch 2.x figures (kaito issue 976): 736.86 MiB reserved but unallocated, 546 MiB asked, no model named
    log = {"framework": "pytorch", "error_kind": "oom", "failed_alloc_gib": 0.533, "capacity_gib": 15.77,
           "allocated_gib": 13.73, "reserved_gib": 13.73 + 0.7196}  # fmt: skip
    first = tools.call("diagnose", log)["causes"][0]
    assert first["cause"] == "fragmentation" and "0.72 GiB reserved but unallocated" in first["arithmetic"]
    short = tools.call("diagnose", {**log, "reserved_gib": 13.73 + 0.2})  # less loose than asked: not the cause
    assert short["causes"][0]["cause"] != "fragmentation"


def test_a_local_runtime_on_the_cpu_may_be_its_own_estimate_over_counting():
    out = tools.call("diagnose", {"framework": "ollama", "workload": "infer", "symptom": "cpu_fallback"})
    causes = [c["cause"] for c in out["causes"]]
    assert causes[:2] == ["weights_exceed_memory", "version_or_bug"]
    assert (
        out["causes"][1]["fix"] == {"flag": "num_gpu", "value": 999} and "estimate" in out["causes"][1]["explanation"]
    )
    other = tools.call("diagnose", {"framework": "transformers", "workload": "infer", "symptom": "cpu_fallback"})
    assert "version_or_bug" not in [c["cause"] for c in other["causes"]][:2]


def test_several_gpus_slower_than_one_names_the_term_that_dominates_with_its_figures():
    setup = {"model": "Qwen2.5-1.5B", "n_gpus": 2, "framework": "pytorch", "measured_tokens_per_s": 2500,
             "single_gpu_tokens_per_s": 3000}  # fmt: skip
    pcie = tools.call("diagnose", {**setup, "gpu": "4090"})["causes"][0]  # GeForce: no P2P, 3 GB per step over PCIe
    assert pcie["cause"] == "p2p_or_interconnect" and "communication is the term that dominates" in pcie["arithmetic"]
    comm, compute = map(float, re.search(r"all-reduce ([\d.]+) s per step .* vs ([\d.]+) s of compute", pcie["arithmetic"]).groups())  # fmt: skip
    assert comm > 0.5 * compute and pcie["fix"]["flag"] == "gradient_accumulation_steps"
    nvlink = tools.call("diagnose", {**setup, "gpu": "A100 80GB"})["causes"][0]  # NVLink: the all-reduce is small
    assert nvlink["cause"] == "compute_or_config_slow" and "compute dominates" in nvlink["arithmetic"]
    comm, compute = map(float, re.search(r"all-reduce ([\d.]+) s per step .* vs ([\d.]+) s of compute", nvlink["arithmetic"]).groups())  # fmt: skip
    assert comm < 0.5 * compute and nvlink["fix"]["flag"] == "device_map"
    assert "0.83×" in nvlink["arithmetic"] and CJK.search(nvlink["arithmetic_zh"])
