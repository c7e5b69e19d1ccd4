"""The people who will use a model are its traffic (issue 26, "traffic not read"): "200 名员工要用", "a workgroup
with 50 people", "30 位同事" are daily users that plan_serving turns into requests in flight, replicas and GPUs;
a buying question that gives them needs no budget first, and a service to run is never sized as the frame's
default fine-tune. A team that says it will fine-tune stays a training question."""

from __future__ import annotations

import pytest
from asking import calls


@pytest.mark.parametrize(
    ("question", "users", "line"),
    [
        ("公司 200 名员工要用 Qwen2.5-32B，买什么服务器？", 200, "日活 200 按每人每天"),
        ("30 位同事要用 Qwen2.5-7B 写代码，需要几张卡？", 30, "日活 30 按每人每天"),
        ("We have 50 employees who will use Llama-3.1-8B as a chatbot, which GPU servers should we buy?", 50,
         "50 daily users at"),
        ("a team of 80 people will use Qwen2.5-14B for RAG, how many GPUs?", 80, "80 daily users at"),
    ],
)  # fmt: skip
def test_the_people_who_use_it_are_daily_users_planned_into_gpus(advisor, question, users, line):
    t = advisor.ask(question)
    assert t.ungrounded == [] and t.unused == [], (t.ungrounded, t.unused)
    plan = calls(t, "plan_serving")[0]
    assert plan.input["daily_users"] == users and plan.output["pick"]
    assert line in t.answer
    assert not calls(t, "training_time") and "1B token" not in t.answer  # no fine-tune's default job or tokens
    assert t.answer.startswith(("**选 ", "**Pick "))  # the pick first, then the plan
    assert calls(t, "plan_system")  # and the machines


def test_a_team_that_will_fine_tune_stays_a_training_question(advisor):
    t = advisor.ask("我们 10 个人的团队要微调 Qwen2.5-7B，买什么卡？")
    assert not calls(t, "plan_serving") and calls(t, "fit_training")


def test_people_read_as_daily_users_in_both_languages():
    from bot.offline.compose.systems.capacity import traffic
    from bot.offline.understand.request.reader import read

    for text, users in [
        ("a workgroup with 50 people planned", 50),
        ("公司 200 名员工", 200),
        ("120 employees will use it", 120),
        ("30 位同事在用", 30),
    ]:
        assert traffic(read(text)).get("daily_users") == users, text


def test_a_whole_server_for_a_plan_of_fewer_cards_says_so(advisor):
    t = advisor.ask("30 位同事要用 Qwen2.5-7B 写代码，需要几张卡？")
    plan = calls(t, "plan_serving")[0]
    pick = next(c for c in plan.output["candidates"] if f"{c['gpu']} {c['precision']}" == plan.output["pick"])
    machines = calls(t, "plan_system")[-1]
    full = min(o["n_gpus"] for o in machines.output["options"] if o["meets"] and o["total_low_cny"] is not None)
    assert pick["n_gpus"] < full
    assert f"这台整机按满配 {full} 张卡计价；本方案只需 {pick['n_gpus']} 张" in t.answer
