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
        ("公司 200 名员工要用 Qwen2.5-32B，买什么服务器？", 200, "这里把“200 人”读作使用它的人数"),
        ("30 位同事要用 Qwen2.5-7B 写代码，需要几张卡？", 30, "这里把“30 人”读作使用它的人数"),
        ("We have 50 employees who will use Llama-3.1-8B as a chatbot, which GPU servers should we buy?", 50,
         "“50 people” is read as the people who use it"),
        ("a team of 80 people will use Qwen2.5-14B for RAG, how many GPUs?", 80,
         "“80 people” is read as the people who use it"),
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


@pytest.mark.parametrize(
    "question",
    ["公司内部部署 Qwen2.5-72B 知识库，给 300 人用，要几张卡？", "300 人使用 Qwen2.5-32B，要几张卡？",
     "I want to serve Qwen2.5-32B to about 300 people with vLLM, how many GPUs?"],
)  # fmt: skip
def test_a_count_of_people_is_its_users_with_the_all_at_once_bound_said(advisor, question):
    # issue 26: "给 300 人用" is the people who use it (daily users), not 300 requests at one moment; the answer says
    # the reading and what the other one would take on the picked card (a plan at 300 in flight)
    t = advisor.ask(question)
    plans = calls(t, "plan_serving")
    assert plans[0].input["daily_users"] == 300 and "concurrency" not in plans[0].input
    bound = next(c for c in plans[1:] if c.input.get("concurrency") == 300)
    pick = next(c for c in plans[0].output["candidates"] if f"{c['gpu']} {c['precision']}" == plans[0].output["pick"])
    assert bound.input["gpus"] == [pick["gpu"]] and bound.input["precision"] == pick["precision"]
    n = next(c["n_gpus"] for c in bound.output["candidates"] if c["n_gpus"])
    assert n > pick["n_gpus"]
    assert (f"要 {n:,} 张 {pick['gpu']}" in t.answer) or (f"it would take {n:,} × {pick['gpu']}" in t.answer)


@pytest.mark.parametrize(
    ("text", "role", "value"),
    [("给 300 人用", "daily_users", 300), ("300 人使用", "daily_users", 300), ("serve it to about 12 people", "daily_users", 12),
     ("100 人同时使用", "concurrency", 100), ("支持 100 人同时在线", "concurrency", 100),
     ("64 concurrent users", "concurrency", 64), ("日活 5000", "daily_users", 5000),
     ("如果并行有100个人请求的话", "concurrency", 100)],
)  # fmt: skip
def test_people_are_users_and_simultaneity_makes_a_concurrency(text, role, value):
    from bot.offline.compose.systems.capacity import traffic
    from bot.offline.understand.request.reader import read

    assert traffic(read(text)) == {role: value}


def test_people_who_each_keep_a_context_window_are_sessions_at_once(advisor):
    # a conversation's window stays in the KV cache per person: 5 people at 128k are 5 sessions, not a day's requests
    t = advisor.ask(
        "I want to use vLLM to serve Llama-3.3-70b to about 5 people with a full context window of 128k tokens"
    )
    plan = calls(t, "plan_serving")[0]
    assert plan.input["concurrency"] == 5 and "daily_users" not in plan.input
    assert "planned as 5 sessions at once" in t.answer


@pytest.mark.parametrize(
    ("text", "n", "gpu"),
    [("4个80G A100显卡可以进行推理和微调嘛", 4, "a100-sxm4-80gb"), ("8 张 40GB 的 A100 训练 7B", 8, "a100-sxm4-40gb"),
     ("4 x A100 推理", 4, "a100-sxm4-80gb"), ("用 2 个 4090", 2, "rtx-4090")],
)  # fmt: skip
def test_a_count_of_cards_is_read_with_their_memory_between(text, n, gpu):
    # "4个80G A100": the count and the card with the card's memory between them, the variant kept
    from bot.offline.understand.request.reader import read

    p = read(text).parsed
    assert p.n_gpus == n and p.gpus == [gpu]


def test_a_budget_in_dollars_buys_machines_at_the_stated_rate(advisor):
    # issue 26 "budgets into servers": a budget in US dollars is a budget for the machines, planned in 元 at the TCO
    # exchange rate, the dollars and the rate said in the header
    from tools.money.run_cost import usd_rate

    t = advisor.ask("budget $300,000 for servers to fine-tune Qwen2.5-32B with LoRA, what should we buy?")
    plan = calls(t, "plan_system")[0]
    rate = usd_rate(None)[0]
    assert plan.input["budget_cny"] == round(300_000 * rate)
    assert f"budget $300,000 (about {plan.input['budget_cny']:,} CNY at {rate:.2f} CNY/$)" in t.answer
    assert t.ungrounded == []


def test_an_idc_payback_answers_how_long_and_reads_occupancy_in_both_word_orders(advisor):
    # the other side of the market: "多久回本" is answered by the payback months (no "not computed: how long" line),
    # and "with 70% occupancy" is the occupancy as "出租率 70%" is
    t = advisor.ask("我们是 IDC，打算买 64 张 H20 出租，每卡每小时 12 元，出租率 70%，多久回本？")
    assert "个月 回本" in t.answer and "没有算出的部分" not in t.answer and t.unanswered == []
    t = advisor.ask("We run a GPU cloud: if we buy 32 H100s and rent them at $2.5 per GPU-hour with 70% occupancy, "
                    "how many months to pay back?")  # fmt: skip
    rvb = calls(t, "rent_vs_buy")[0]
    assert rvb.input.get("occupancy") in (0.7, 70) and "70% occupancy" in t.answer and t.unused == []


def test_running_a_model_within_a_budget_is_serving_with_no_training_tokens(advisor):
    # "什么显卡可以跑 … 预算 1w以内": running, with no training word, is inference: the budget buys cards that serve
    # the (stated default) model, and no fine-tune's token count is assumed or said
    t = advisor.ask("想问下 什么显卡可以跑 自己玩 不想花太多钱  预算 1w以内")
    rec = next(c for c in t.tool_calls if c.tool == "recommend_gpus")
    assert rec.input["workload"] == "infer" and "tokens" not in rec.input
    assert "1B token" not in t.answer and rec.input["budget_cny"] == 10_000


def test_machines_to_serve_with_assume_no_training_tokens(advisor):
    # "预算 50 万买服务器跑 Qwen2.5-72B": a serving plan of machines; no fine-tune's 1B tokens is assumed or said
    t = advisor.ask("预算 50 万买服务器跑 Qwen2.5-72B")
    plan = calls(t, "plan_system")[0]
    assert plan.input["job"] == "serve" and "tokens" not in plan.input
    assert "1B token" not in t.answer


def test_a_machines_plan_for_people_says_how_they_were_read(advisor):
    # "采购预算 50 万，部署 Qwen2.5-14B 给 100 人用": servers for the people's traffic, the reading said once
    t = advisor.ask("采购预算 50 万，部署 Qwen2.5-14B 给 100 人用")
    plan = calls(t, "plan_system")[0]
    assert plan.input["daily_users"] == 100
    flight = next(
        o["capacity"]["concurrency"] for o in plan.output["options"] if (o["capacity"] or {}).get("concurrency")
    )
    assert f"高峰 {flight:.1f} 个并发请求" in t.answer and "这里把“100 人”读作使用它的人数" in t.answer
