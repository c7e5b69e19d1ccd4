"""A budget in euros ("My budget is about 1000€", "a budget of about 30 kEuro", "预算 5000 欧元") is read as a
budget, in euros, and planned in 元 at the dated rate the answer states: the cards within it, or the machines."""

from __future__ import annotations

import pytest

from bot.offline.understand.parse import parse


@pytest.mark.parametrize(
    ("text", "amount"),
    [
        ("What GPU do you recommend for inference? My budget is about 1000€", 1000),
        ("We would have a budget of about 30 kEuro for building a small cluster", 30_000),
        ("预算 5000 欧元，想买显卡跑 7B 模型推理", 5000),
        ("budget: 2,500 EUR for a PC to run a 7B model", 2500),
    ],
)
def test_a_euro_amount_is_a_budget_in_euros(text, amount):
    p = parse(text)
    assert (p.budget_amount, p.budget_currency, p.budget_cny) == (amount, "EUR", None)


def test_a_euro_budget_buys_cards_within_its_yuan(advisor):
    t = advisor.ask(
        "I want to buy the hardware to run a 7B model on a GPU for personal use. What GPU do you recommend? "
        "My budget is about 1000€"
    )
    assert t.ungrounded == [] and t.unused == []
    assert "€1,000 (about 7,850 CNY)" in t.answer
    rec = next(c for c in t.tool_calls if c.tool == "recommend_gpus")
    assert rec.input["budget_eur"] == 1000 and rec.output["budget_cny"] == 7850


def test_a_euro_budget_for_machines_is_planned_at_the_rate_said(advisor):
    t = advisor.ask("预算 5 万欧元，搭一台服务器微调 13B 模型，怎么配？")
    assert t.ungrounded == [] and t.unused == []
    assert "€50,000" in t.answer and "7.85" in t.answer


def test_a_speed_target_beside_a_budget_is_checked_on_the_recommended_cards(advisor):
    t = advisor.ask(
        "I want to buy the hardware to run a 7B model on a GPU at ideally about 5 tokens per second or more. "
        "What GPU, ram, and CPU do you recommend? My budget is about 1000€"
    )
    assert t.ungrounded == [] and t.unused == []
    rec = next(c for c in t.tool_calls if c.tool == "recommend_gpus")
    pick = rec.output["best_value"]
    speed = next(c for c in t.tool_calls if c.tool == "inference_speed")
    assert speed.input["gpu"] == pick["gpu_id"] and speed.input["n_gpus"] == pick["n_gpus"]  # not a default A100
    assert "Your target of “5 tokens per second” is met by this setup" in t.answer
    assert "“5”" not in t.answer  # the one-digit target is quoted with its unit, so it is not listed as unused
    assert f"**Host side (per server, {pick['n_gpus']} × {pick['gpu']}, serving):**" in t.answer


def test_a_one_digit_figure_is_named_only_when_quoted_with_its_words():
    from bot.answer.coverage import _named
    from bot.offline.understand.request.model import Mention

    q = "at about 5 tokens per second or more"
    m = Mention(text="5", role="speed_target", value=5.0, start=q.index("5"), end=q.index("5") + 1)
    assert _named(m, "your target of “5 tokens per second” is met", q)
    assert not _named(m, "about 5 gb per gpu", q)  # the bare digit elsewhere is not the user's figure
