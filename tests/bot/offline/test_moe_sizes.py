"""A MoE given by its total and active sizes in a question is sized on a generic MoE of those sizes, and the
answer says so (issue 25): weights on the total, compute and decode bandwidth on the active parameters."""

import pytest

from bot.offline.understand.parse import parse


@pytest.mark.parametrize(
    "question",
    [
        "A 400B total, 20B active MoE model: how many H100 to serve it?",
        "总参 400B、激活 20B 的 MoE 模型，推理要几张 H100？",
        "MoE, 20B activated out of 400B: serve it on H200?",
    ],
)
def test_total_and_active_are_one_moe_not_two_models(question):
    assert parse(question).models == ["400B-A20B"]


def test_two_dense_sizes_stay_two_models():
    assert parse("70B 和 7B 在 H100 上哪个快？").models == ["70B", "7B"]


def test_the_answer_is_computed_on_the_generic_moe_and_says_so(advisor):
    zh = advisor.ask("总参 400B、激活 20B 的 MoE 模型，推理要几张 H100？")
    assert "通用 MoE 400B-A20B" in zh.answer and "按总参 400B、激活 20B 的通用 MoE 结构估算" in zh.answer
    assert {c.input.get("model") for c in zh.tool_calls if isinstance(c.input, dict)} >= {"400B-A20B"}
    en = advisor.ask("A 400B total, 20B active MoE model: how many H100 to serve it?")
    assert "generic MoE of 400B total, 20B active" in en.answer and "weights on the total" in en.answer


def test_a_named_moe_outside_the_catalog_stands_on_the_generic_moe(advisor):
    trace = advisor.ask("GLM-5.2，总参 355B、激活 32B，H200 要几张？")
    assert "“GLM-5.2”不在目录里，下面按总参 355B、激活 32B 的通用 MoE 结构估算" in trace.answer
