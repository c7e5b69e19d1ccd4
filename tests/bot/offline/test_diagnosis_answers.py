"""The answer to a pasted log, command or config, as the user reads it: the cause with its figure first, then
the flag and value to change, then what to expect after it; every figure grounded, nothing the user said dropped;
a reported OOM is never answered "it fits"; an error the engine raised is the whole answer."""

import re

KV_3090 = (
    "RTX 3090, vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 29000\n"
    "ValueError: The model's max seq len (29000) is larger than the maximum number of tokens that can be stored in "
    "KV cache (23648). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the "
    "engine."
)
ZERO2_ZH = (
    "8张A100 80G 全参微调 Qwen2.5-7B，deepspeed zero2，为什么还是OOM？\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.55 GiB. GPU 3 has a total capacity of 79.15 GiB "
    "of which 1.20 GiB is free. Including non-PyTorch memory, this process has 77.93 GiB memory in use. Of the "
    "allocated memory 74.10 GiB is allocated by PyTorch, and 2.31 GiB is reserved by PyTorch but unallocated."
)
TP3_ZH = (
    "4张4090，vllm serve Qwen/Qwen2.5-7B-Instruct --tensor-parallel-size 3 启动报错：\n"
    "ValueError: Total number of attention heads (28) must be divisible by tensor parallel size (3)."
)


def _paragraphs(answer: str) -> list[str]:
    return [p for p in answer.split("\n\n") if p.strip()]


def test_the_vllm_kv_error_is_answered_cause_fix_then_what_to_expect(advisor):
    t = advisor.ask(KV_3090)
    first, second, third, fourth = _paragraphs(t.answer)[:4]
    assert first.startswith("**Cause: KV pool = 23.58 GiB × 0.9 − 14.96 GiB weights")
    assert "23,984 tokens" in first and "max_model_len 29,000 > 23,984 tokens" in first
    assert second.startswith("By the estimate this setup fits") and "the log wins" in second
    assert third.startswith("**Fix:** set `--gpu-memory-utilization=0.93`")
    assert fourth.startswith("**After the fix:**") and "29,776 tokens" in fourth and "starts" in fourth
    assert next(c.tool for c in t.tool_calls) == "diagnose"
    assert t.ungrounded == [] and t.unused == []
    assert "It fits" not in t.answer  # the engine refused: the diagnosis is the whole answer


def test_a_zero2_oom_names_the_fp32_partition_in_chinese_and_keeps_the_estimate_below(advisor):
    t = advisor.ask(ZERO2_ZH)
    paras = _paragraphs(t.answer)
    assert paras[0].startswith("**原因：3.55 GiB = 一份 fp32 分片：4 B × 7.62B 参数 ÷ 8 卡。**")
    assert "以实测为准" in paras[1]
    assert paras[2].startswith("**改法：** 设 `zero_optimization.stage=3`")
    assert paras[3].startswith("**改后预计：**") and "放得下" in paras[3]
    assert "**按您的配置（问题里写的）的估算：**" in t.answer  # the planner's own estimate follows
    assert {"diagnose", "fit_training"} <= {c.tool for c in t.tool_calls}
    assert t.ungrounded == [] and t.unused == []


def test_a_tensor_parallel_size_vllm_refuses_is_never_approved(advisor):
    t = advisor.ask(TP3_ZH)
    assert t.answer.startswith("**原因：28 个注意力头 ÷ tp 3 = 9.33")
    assert "`--tensor-parallel-size=4`" in t.answer and "放得下" not in t.answer
    assert t.ungrounded == [] and t.unused == []


def test_a_reported_oom_is_never_answered_it_fits_first(advisor):
    for q in (
        ZERO2_ZH,
        "Why does a 70B model OOM on one A100 80GB?",
        "4张3090 lora微调Qwen2.5-7B 爆显存了，cutoff_len 4096，per_device_train_batch_size 8，怎么办",
        "CUDA out of memory. Tried to allocate 2.00 GiB，A100 40G，Mixtral-8x7B，bf16，batch 8",
    ):
        t = advisor.ask(q)
        opening = _paragraphs(t.answer)[0]
        assert not re.search(r"(?<![不没])放得下|\bit fits\b", opening, re.I), (q, opening)
        assert any(c.tool == "diagnose" for c in t.tool_calls), q
        assert t.ungrounded == [], q


def test_slow_on_two_geforce_cards_names_the_terms_and_the_flag(advisor):
    t = advisor.ask(
        "why is this so slow? 2x RTX 4090, vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 2\n"
        "INFO: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 31.5 tokens/s"
    )
    assert t.answer.startswith("Your measured “31.5 tokens/s” against what the setup should give:")
    assert "roofline" in t.answer and "`--tensor-parallel-size=1`" in t.answer and "without P2P" in t.answer
    assert t.ungrounded == [] and t.unused == []
