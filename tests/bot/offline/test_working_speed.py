"""The speed asked of a setup that cannot hold the model is given for the setups that do (issue 23, class
part_missing: "能跑吗？速度多少" answered with the fit alone and "not computed: the speed"): the same cards with
quantised weights and the fewest cards at the precision asked, each from inference_speed. Phrasings of ours, in
both languages, shaped like the serving rows of tests/corpus/real/."""

from __future__ import annotations

import pytest
from asking import calls

from bot.offline.say.render import num


@pytest.mark.parametrize(
    ("text", "lead"),
    [
        (
            "Can I run Qwen2.5-32B on two RTX 3090s, and how many tokens per second would I get?",
            "**Speed on a setup that holds it:** Qwen2.5-32B does not fit the setup asked; on one that does: int8 weights"
            " on 2 × NVIDIA GeForce RTX 3090",
        ),
        (
            "两张 4090 能跑 Qwen2.5-72B 吗？速度大概多少？",
            "**速度（按放得下的配置）：**Qwen2.5-72B 在您问的配置上放不下，换成放得下的配置时：bf16 权重、8 张",
        ),
    ],
)
def test_the_speed_of_a_setup_too_small_is_the_speed_of_one_that_holds_it(advisor, text, lead):
    t = advisor.ask(text)
    assert t.ungrounded == [] and t.unused == [], t.answer
    assert lead in t.answer
    assert "Not computed in this answer" not in t.answer and "这次没有算出的部分" not in t.answer
    fit = calls(t, "fit_inference")[0].output
    assert not fit["fits"]
    assert t.answer.count(f"{num(fit['per_gpu_gb'])} GB") >= 1  # the fit is said once, before the speed
    speeds = calls(t, "inference_speed")
    assert speeds and all(f"{s.output['decode_tokens_per_s']:,.1f}" in t.answer for s in speeds)


def test_a_setup_that_holds_the_model_keeps_its_own_speed(advisor):
    t = advisor.ask("两张 4090 跑 Qwen2.5-7B，速度大概多少？")
    assert "按放得下的配置" not in t.answer
    assert calls(t, "inference_speed")[0].input["n_gpus"] == 2


def test_a_cpu_gpu_setup_is_not_answered_with_more_cards(advisor):
    # a hybrid run (KTransformers, GGUF) keeps the model partly in RAM on purpose: its speed is not that of 8 GPUs
    t = advisor.ask("ktransformers 跑 DeepSeek-V3 GGUF，一张 H20 96G，cpu_infer 64，速度大概多少？")
    assert "按放得下的配置" not in t.answer
