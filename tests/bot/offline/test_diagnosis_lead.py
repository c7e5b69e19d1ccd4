"""Issue 23/24 (lead): a diagnosis opens the answer only when it is earned, and its fixes fit the asker's framework
and setup. Told-only troubles and usual suspects go below the estimate as things to check; a measured speed inside
the calculators' band is said to be normal with no speed fix; a measured speed far below leads with its figure; a
fix is said with the asker's framework's own flag, and never one already set or at the framework's default."""

from tools import call


def test_a_slowness_told_in_words_opens_with_the_estimate_not_a_cause(advisor):
    a = advisor.ask("Qwen2.5-7B LoRA 微调在一张 A100 上非常慢，正常吗？").answer
    assert not a.startswith("**原因：") and "**原因：" not in a
    assert "可以检查的地方" in a or "最可能出问题的地方" in a
    assert "enforce-eager" not in a  # a training run has no serving engine's eager mode


def test_a_measured_speed_far_below_the_estimate_leads_with_its_figure(advisor):
    a = advisor.ask("very slow inference of Qwen2.5-7B on an A100, 3 tokens/s").answer
    assert a.index("**Cause:") < a.index("---") and "3 tokens/s is 3% of the" in a


def test_a_measured_speed_inside_the_band_is_normal_and_gets_no_speed_fix(advisor):
    a = advisor.ask("Qwen2.5-7B on one A100 with vLLM decodes 80 tokens/s for one request, is that normal?").answer
    assert "**Cause:" not in a and "far below what the hardware gives" not in a
    assert "enforce-eager" not in a and "is what this hardware gives" in a


def test_the_default_is_not_offered_but_what_the_asker_set_is():
    base = {"model": "Qwen2.5-7B", "gpu": "A100 80GB", "framework": "vllm", "measured_tokens_per_s": 10.0}
    flags = [c["fix"]["flag"] for c in call("diagnose", base)["causes"]]
    assert "--enforce-eager" not in flags  # already false by default in vLLM
    eager = call("diagnose", {**base, "enforce_eager": True})["causes"][0]
    assert eager["leads"] and eager["fix"] == {"flag": "--enforce-eager", "value": False}


def test_an_engine_pool_fix_is_said_in_lmdeploys_own_knob():
    out = call("diagnose", {"model": "Qwen2.5-7B", "gpu": "A100 80GB", "framework": "lmdeploy",
                            "symptom": "engine_memory"})  # fmt: skip
    flags = [c["fix"]["flag"] for c in out["causes"]]
    assert "--cache-max-entry-count" in flags and "--gpu-memory-utilization" not in flags
    # lmdeploy's own arithmetic: a share of what is left after the weights, not vLLM's 0.9 of the card
    assert "lmdeploy gives its KV cache 0.8 of what is left after the weights" in out["causes"][0]["arithmetic"]


def test_a_transformers_run_gets_no_engine_pool_cause():
    out = call("diagnose", {"model": "Qwen2.5-7B", "gpu": "RTX 4090", "framework": "transformers",
                            "workload": "infer", "error_kind": "oom"})  # fmt: skip
    assert not any(c["fix"]["flag"] in ("--max-num-seqs", "--gpu-memory-utilization") for c in out["causes"])
    assert not any(c["cause"] == "kv_pool_too_small" for c in out["causes"])


def test_a_value_already_set_lower_is_not_offered_again():
    out = call("diagnose", {"model": "Qwen2.5-7B", "gpu": "RTX 4090", "framework": "lmdeploy",
                            "symptom": "engine_memory", "flags": "cache_max_entry_count=0.01"})  # fmt: skip
    assert "--cache-max-entry-count" not in [c["fix"]["flag"] for c in out["causes"]]


def test_a_trainers_setting_is_no_fix_for_a_model_that_only_serves():
    out = call("diagnose", {"model": "Qwen2.5-7B", "gpu": "A100 80GB", "workload": "infer", "symptom": "low_gpu_util"})
    flags = [c["fix"]["flag"] for c in out["causes"]]
    assert "dataloader_num_workers" not in flags and "per_device_train_batch_size" not in flags


def test_a_training_length_and_batch_said_in_words_are_what_the_diagnosis_sizes(advisor):
    # llamafactory-6752: "序列长度是512，batch_size为1" under ZeRO-2 on four 3090s; at 512 tokens ZeRO-3 fits
    trace = advisor.ask("Qwen2.5-3B模型 OOM\n我有四张3090显卡，每张卡24G显存，打算全参数微调，我使用了zero-2，"
                        "序列长度是512，batch_size为1，为啥显存还不够？")  # fmt: skip
    call_ = next(c for c in trace.tool_calls if c.tool == "diagnose")
    assert call_.input["seq_len"] == 512 and call_.input["micro_batch"] == 1
    assert trace.answer.startswith("**原因：ZeRO-3 以下（这里是 ZeRO-2），4 张卡每张都放着完整的")
    assert "`zero_optimization.stage=3`" in trace.answer


def test_tensor_parallel_that_does_not_help_is_read_as_more_gpus_slower(advisor):
    # vllm-1873's wording: no figures, "not as good as running on a single card"
    trace = advisor.ask("I can not improve throughput with tensor-parallel on multi-gpus. I have tested the tensor "
                        "parallelism of vllm on multiple gpus, but the effect is not as good as running on a single "
                        "card. --model /home/models/CodeLlama-13b-hf/ --tensor-parallel-size=4")  # fmt: skip
    call_ = next(c for c in trace.tool_calls if c.tool == "diagnose")
    assert call_.input.get("symptom") == "multi_gpu_slower"
    assert call_.output["causes"][0]["cause"] == "communication_bound"


def test_so_slow_said_with_zhe_me_or_ru_ci_is_slowness():
    from bot.offline.understand.paste.logs import SYMPTOMS

    slow = dict(SYMPTOMS)["slow"]
    for text in ("为啥推理速度如此的慢", "为什么这么慢", "生成怎么那么慢"):
        assert slow.search(text)


def test_a_model_said_to_exceed_one_cards_memory_is_read_as_weights_that_do_not_fit():
    from bot.offline.understand.paste.logs import KINDS

    weights = dict(KINDS)["weights_oom"]
    for text in ("load model that exceed the memory size of a single graphics card",
                 "the single graphics card's memory is not enough to deploy the model", "单卡显存放不下模型"):  # fmt: skip
        assert weights.search(text)


def test_a_quantised_checkpoint_named_in_chinese_text_is_the_precision_the_diagnosis_sizes(advisor):
    # gh-qwen3vl-482: "7b-awq模型" on an A10 under vLLM: the diagnosis sizes 4-bit weights
    trace = advisor.ask("7b-awq模型在A10上使用VLLM镜像部署，显存总是oom。我使用的是A10的24Gb的卡。")
    call_ = next(c for c in trace.tool_calls if c.tool == "diagnose")
    assert call_.input["precision"] == "int4"
    # the pool is sized on 4-bit weights (4.90 GiB, not bf16's 14): on the A10's reported 22.49 GiB (ECC on) it
    # holds 122,432 tokens, a few thousand short of the stand-in's 131,072; the fraction outside it is the other check
    assert "权重 4.90 GiB" in trace.answer and "22.49 GiB" in trace.answer
    assert "--gpu-memory-utilization=0.8" in trace.answer


def test_a_trainers_api_or_chat_command_is_an_inference_run():
    from bot.offline.understand.paste.setup import _TRAINER_SERVES

    assert _TRAINER_SERVES.search("在使用llamafactory-cli api加载qwen2-72B-Instruct-AWQ出现CUDA out of memory")
    assert _TRAINER_SERVES.search("llamafactory-cli chat examples/inference/llama3.yaml")
    assert not _TRAINER_SERVES.search("llamafactory-cli train examples/train_lora/llama3_lora_sft.yaml")
