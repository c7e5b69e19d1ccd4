"""The training objective in the user's words (DPO, ORPO, KTO, PPO, GRPO, RLHF, 偏好对齐, 强化学习) reaches
fit_training the way method words do, and the answer says what it added (issue 25)."""

from __future__ import annotations

import pytest
from asking import calls

from bot.offline.understand.parse import parse


@pytest.mark.parametrize(
    ("text", "objective"),
    [
        ("Qwen2.5-7B 全参 DPO 需要几张 A100？", "dpo"),
        ("ORPO fine-tune Mistral-7B on one A100 80GB, does it fit?", "orpo"),
        ("KTO 训练 Llama-3-8B 用 LoRA，4090 够吗", "kto"),
        ("GRPO 训练 Qwen2.5-7B，一张 H100 放得下吗", "grpo"),
        ("RLHF 训练 7B 模型要几张 H100", "ppo"),
        ("用强化学习微调 Qwen2.5-7B 需要几张 A800", "ppo"),
        ("做偏好对齐 Qwen2-7B 全参 8 张 A800 够不够", "dpo"),
        ("Qwen2.5-7B 全参微调需要几张 A100？", None),
    ],
)
def test_objective_words_are_read(text, objective):
    assert parse(text).objective == objective


def test_a_dpo_question_sizes_the_reference_and_both_sequences(advisor):
    t = advisor.ask("Qwen2.5-7B 全参 DPO 训练，一张 A100 80GB 够吗")
    fit = next(c for c in calls(t, "fit_training") if c.input.get("objective") == "dpo")
    assert fit.output["breakdown_gb"]["frozen_models"] > 14  # a bf16 copy of 7.6B parameters
    assert "全参 DPO 训练" in t.answer and "参考/奖励模型" in t.answer
    assert "chosen 和 rejected" in t.answer
    assert t.ungrounded == []


def test_lora_dpo_says_no_reference_copy_is_loaded(advisor):
    t = advisor.ask("DPO Llama-3-8B with LoRA on one RTX 4090, does it fit?")
    fit = next(c for c in calls(t, "fit_training") if c.input.get("objective") == "dpo")
    assert fit.input["method"] == "lora" and fit.output["breakdown_gb"]["frozen_models"] == 0
    assert "LoRA DPO training" in t.answer and "adapter off is the reference" in t.answer


def test_a_serving_question_never_carries_an_objective(advisor):
    t = advisor.ask("用 vLLM 部署 DPO 训练好的 Qwen2.5-7B，一张 4090 够吗")
    assert calls(t, "fit_inference") and not calls(t, "fit_training")


def test_a_follow_up_that_names_an_objective_edits_the_run(advisor):
    first = advisor.ask("Qwen2.5-7B 全参微调，8 张 A100 80GB 够吗")
    then = advisor.ask("换成 DPO 呢", conversation_id=first.conversation_id)
    fit = calls(then, "fit_training")[-1]
    assert fit.input.get("objective") == "dpo" and fit.input["n_gpus"] == 8 and fit.input["method"] == "full"


@pytest.mark.parametrize(
    ("text", "storage"),
    [
        ("What gpus can finetune qwen2 72B by using qlora? Is 8*24G possible?", "bf16"),  # dev gh-qwen3-780
        ("FSDP + QLoRA Llama-2-70B on 2 RTX 3090, does it fit?", "bf16"),
        ("QLoRA 70B 用 4 张 4090 DeepSpeed ZeRO-3 够吗", "uint8"),
    ],
)
def test_a_multi_gpu_qlora_base_is_stored_as_the_named_stack_stores_it(advisor, text, storage):
    # FSDP-QLoRA and a plan store the 4-bit base in bf16 (sharded); DeepSpeed's default is bitsandbytes' uint8
    t = advisor.ask(text)
    fit = next(c for c in calls(t, "fit_training") if c.input["method"] == "qlora")
    assert fit.input["quant_storage"] == storage
