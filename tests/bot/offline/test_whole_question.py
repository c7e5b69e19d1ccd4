"""Issue 23's classes met on the outside development set, one behaviour each, with questions of the same kind
written here (not the outside set's): a period of use is billed, GPU-hours a month set how the cards are used,
a follow-up about buying gets the purchase price, a serving comparison gets speeds and a pick, and a card the
catalog lacks is named with what the job needs."""

import logging

import pytest

from bot.offline.understand.request.reader import read
from tools.catalog.lookup import gpus
from tools.catalog.prices import prices_for


def ask(advisor, caplog, *questions):
    caplog.set_level(logging.ERROR, logger="gpu_advisor.advisor")
    cid, traces = None, []
    for q in questions:
        t = advisor.ask(q, conversation_id=cid)
        cid = t.conversation_id
        assert t.ungrounded == [] and t.unused == [], t.answer
        traces.append(t)
    return traces


def calls(trace, tool):
    return [c for c in trace.tool_calls if c.tool == tool]


# --- a period of use is wall-clock time on the cards (class 2: "32 卡跑两周" priced as one card-hour) ---------


@pytest.mark.parametrize(
    "q, hours",
    [("租 8 张 H800 跑 10 天，总共要多少钱？", 240), ("What would renting 4 H100 for three weeks cost?", 504)],
)
def test_a_period_of_use_is_billed_on_every_card(advisor, caplog, q, hours):
    (t,) = ask(advisor, caplog, q)
    (cost,) = calls(t, "run_cost")
    assert cost.input["hours"] == hours and cost.output["gpu_hours"] == hours * cost.input["n_gpus"]
    assert f"{cost.output['gpu_hours']:,.0f}" in t.answer


def test_a_deadline_or_days_a_week_is_not_a_period_of_use():
    assert read("两周内训完 13B 要几张 A100").parsed.hours is None
    assert read("每周用 3 天 H800，租多少钱").parsed.hours is None


def test_asking_for_gpu_hours_is_not_asking_for_a_card_count():
    r = read("8 张 H20 跑 5 天，一共多少卡时？")
    assert "min_count" not in r.asks and r.parsed.hours == 120

