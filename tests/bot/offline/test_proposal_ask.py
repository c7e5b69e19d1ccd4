"""What reads as "make the proposal" in a chat, and the requirement a conversation's state gives it."""

from __future__ import annotations

import pytest

from bot.offline.compose.proposal import SYSTEM_STATE, asked, requirement


@pytest.mark.parametrize(
    "text",
    [
        "生成方案",
        "出个方案",
        "帮我生成一份方案。",
        "做个方案吧",
        "导出方案书",
        "make this a proposal",
        "Make it into a proposal, please",
    ],
)
def test_a_request_for_the_proposal(text):
    assert asked(text)


@pytest.mark.parametrize(
    "text",
    [
        "预算 200 万做 14B 微调，出个方案",  # a question of its own: the planner answers it first
        "这个方案靠谱吗？",
        "方案二的功耗是多少",
        "what is a proposal",
        "give me a proposal for 8 H100s and a 70B model with a 1M budget, thanks a lot",
    ],
)
def test_not_a_request_for_the_proposal(text):
    assert not asked(text)


def test_the_requirement_is_the_last_plan_else_the_frame():
    planned = {"job": "serve", "model": "qwen3-32b", "concurrency": 200}
    assert requirement({"frame": {"slots": {"model": "x"}}, SYSTEM_STATE: planned}) == planned
    frame = {
        "intent": "fit",
        "slots": {"model": "qwen2.5-14b", "gpus": ["a100-sxm4-80gb", "h20"], "method": "lora", "workload": "finetune"},
    }
    assert requirement({"frame": frame}) == {
        "job": "finetune",
        "model": "qwen2.5-14b",
        "method": "lora",
        "platforms": ["a100-sxm4-80gb", "h20"],
    }
    assert requirement({"frame": {"intent": "specs", "slots": {"gpu": "h20"}}}) is None
    assert requirement(None) is None
