"""A small budget turns into cards that fit it (issue 26, "budget not turned into servers"): consumer cards carry
sourced purchase prices, so "预算 1w 以内" or "a $3000 PC" gets a card and its price within the budget, not
"nothing fits" among data-centre cards."""

from __future__ import annotations

import pytest
from asking import calls


@pytest.mark.parametrize(
    ("question", "budget_cny"),
    [
        ("想问下什么显卡可以跑 Qwen2.5-7B 推理，自己玩，预算 1w以内", 10_000),
        ("预算 2 万，配一台跑 Qwen2.5-14B 推理的电脑", 20_000),
        ("My budget is about $3000, I want to build a PC to run Llama-3.1-8B locally, what GPU should I buy?", 21_300),
    ],
)
def test_a_small_budget_gets_a_consumer_card_within_it(advisor, question, budget_cny):
    t = advisor.ask(question)
    assert t.ungrounded == [], t.ungrounded
    rec = calls(t, "recommend_gpus")[0]
    best = rec.output["best_value"]
    assert best["total_cny"] <= budget_cny and "GeForce RTX" in best["gpu"]
    assert best["gpu"] in t.answer.split("\n")[0]  # the pick leads the answer
    assert "No option meets" not in t.answer and "没有符合条件" not in t.answer
