"""A training speed the asker measured gets a verdict on THEIR figure, first (issue 23 kind 1, issue 24 part 3:
"is this normal?" of a training run): s/it, it/s, a logged step_time, TFLOPS per GPU, tokens per GPU, converted on
the setup the answer sized, with the MFU it implies, normal / slow / very slow / faster, the settings assumed named,
and for a slow run the causes its setup shows; a GRPO/PPO step is said to be generation first. Phrasings are ours,
shaped like the development rows (gh-qwen-503, gh-lingbot-vla-27, gh-megatron-lm-1000, gh-ms-swift-3331)."""

from __future__ import annotations

import pytest

from bot.offline.compose.measured.training import figure
from bot.offline.understand.request.reader import read


def head(trace) -> str:
    return next(b for b in trace.answer.split("\n\n") if not b.startswith(("（", "(")))


@pytest.mark.parametrize(
    ("text", "unit", "value"),
    [
        ("lora 微调 qwen-7b，0%| 1/61500 [00:48<827:56:03, 48.47s/it]", "s_per_step", 48.47),
        ('8*A100 {"step": 22, "loss": 0.08, "step_time": 2.98}', "s_per_step", 2.98),
        ("Llama3 70B on 8 x A100 only achieves low throughput of 20 TFLOPS", "tflops_per_gpu", 20.0),
        ("A100*8，其它模型可以达到3300token/s/gpu,百川只有2200token/s/gpu", "tokens_per_s_per_gpu", 2200.0),
        ("The README gets 420.5 TFLOPs/s/GPU. However on 128 H100s I only get 296.5 TFLOPs/s/GPU", "tflops_per_gpu",
         296.5),
        ("4 张 A100 全参微调，当前训练速度是1.93it/s", "steps_per_s", 1.93),
        ("elapsed time per iteration (ms): 9496.4 | throughput", "s_per_step", 9.4964),
        ("lora on a 4090, it's showing 3000 steps and does about 2 steps per minute", "s_per_step", 30.0),
    ],
)  # fmt: skip
def test_the_measured_training_figure_and_its_unit(text, unit, value):
    _, got_unit, got = figure(read(text))
    assert got_unit == unit and got == pytest.approx(value)


def test_a_step_time_with_its_batch_given_gets_a_verdict_first(advisor):
    first = head(advisor.ask(
        "用 A100 lora 微调 qwen-7b，per_device_train_batch_size 2，gradient_accumulation_steps 8，"
        "model_max_length 512，迭代一步要48秒，正常吗？"
    ))  # fmt: skip
    assert first.startswith("**您实测的“一步要48秒”明显偏慢")
    assert "MFU 只有约" in first and "2 × 梯度累积 8 × 1 卡 × 512 token = 8,192 token" in first


def test_english_step_time_on_its_setup_is_judged(advisor):
    answer = advisor.ask(
        "Fine-tuning Llama-3-8B with LoRA on 2x RTX 4090, per_device_train_batch_size 4, "
        "gradient_accumulation_steps 4, max_length 1024, I get 6.5 s/it. Is this normal?"
    ).answer
    assert "**Your measured “6.5 s/it”" in answer
    assert "micro-batch 4 × accumulation 4 × 2 GPUs × 1,024 tokens = 32,768 tokens" in answer


def test_a_step_time_without_the_batch_cannot_be_judged_and_the_yardstick_is_given(advisor):
    answer = advisor.ask('8*A100 Is the training speed normal?  {"step": 22, "epoch": 1, "step_time": 2.98}').answer
    assert "**“step_time: 2.98” alone cannot be judged:**" in answer
    assert "your step time is normal if a step holds about" in answer
    assert "the micro-batch, accumulation, sequence length assumed" in answer


def test_tflops_far_below_the_peak_on_a_setup_that_does_not_fit(advisor):
    answer = advisor.ask("Training Llama3 70B on 8 x A100 only achieves low throughput of 20 TFLOPS").answer
    assert "**Your measured “20 TFLOPS” is far below what this hardware gives:**" in answer
    assert "an MFU of only about 6.4%" in answer
    assert "This setup does not fit these cards" in answer


def test_a_grpo_step_is_generation_first(advisor):
    first = head(advisor.ask("用GRPO训练qwen2.5-7b，8张A800，每步大概300秒，这个速度正常吗？"))
    assert first.startswith("**您的“每步大概300秒”不能按普通微调每步的 token 来衡量：**")
    assert "num_generations" in first and "max_completion_length" in first


def test_no_speed_measured_is_not_said_beside_a_judged_speed(advisor):
    answer = advisor.ask(
        "一张 A100 上 lora 微调 qwen-7b 训练很慢，python finetune.py --per_device_train_batch_size 2 "
        "--gradient_accumulation_steps 8 --model_max_length 512 --use_lora\n 1/61500 [00:48<827:56:03, 48.47s/it]"
    ).answer
    assert "明显偏慢" in answer
    assert "没有实测速度" not in answer


@pytest.mark.parametrize(
    ("text", "lead"),
    [
        ("在4张A100上用GRPO全参训练qwen2.5-1.5b，训练速度不知道是否为正常速度？", "**GRPO/PPO 的训练速度不能按普通微调来衡量：**"),
        ("GRPO full fine-tuning of Qwen2.5-1.5B on 4 A100s with TRL, is this training speed normal? It feels very slow.",
         "**A GRPO/PPO run's speed is not a fine-tuning run's:**"),
    ],
)  # fmt: skip
def test_a_grpo_speed_asked_without_a_figure_is_told_what_a_step_spends(advisor, text, lead):
    first = head(advisor.ask(text))
    assert first.startswith(lead)
    assert "vLLM" in first


def test_an_oom_in_a_grpo_run_gets_no_speed_line(advisor):
    answer = advisor.ask("GRPO 训练 qwen2.5-7b，8张A100，报错 CUDA out of memory，训练速度也很慢").answer
    assert "GRPO/PPO 的训练速度" not in answer


def test_two_methods_compared_get_no_verdict_on_one_figure(advisor):
    answer = advisor.ask(
        "Qwen2-72B on 8 * A100 80G, Deepspeed zero 3. Freeze: train_samples_per_second = 1.051. "
        "LoRA: train_samples_per_second = 0.394. Is this normal?"
    ).answer
    assert "alone cannot be judged" not in answer and "Your measured" not in answer
