"""Issue 26 as a buyer asks it: serving capacity from traffic, machines within a budget, rent or buy as the cards
will be used. Every figure shown is a tool output (grounding), every figure the user gave is used or explained."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from asking import calls


@pytest.fixture
def clean():
    def check(trace):
        assert trace.ungrounded == [] and trace.unused == [], (trace.ungrounded, trace.unused)
        return trace

    return check


def test_customer_service_traffic_gets_card_counts_a_pick_and_machines(advisor, clean):
    t = clean(advisor.ask("客服大模型 Qwen3-32B，日活 5000，高峰并发 200，要几张卡？H20 还是 4090？"))
    plan = calls(t, "plan_serving")[0]
    assert plan.input["concurrency"] == 200 and set(plan.input["gpus"]) == {"h20", "rtx-4090"}
    assert plan.input["china_purchasable"] is True  # a mainland purchase: the pick can be bought there
    pick = next(c for c in plan.output["candidates"] if f"{c['gpu']} {c['precision']}" == plan.output["pick"])
    assert pick["gpu"] == "NVIDIA H20 96GB" and t.answer.startswith(
        f"**选 {pick['gpu']}（{pick['precision']}）：共 {pick['n_gpus']} 张卡"
    )
    assert "| NVIDIA GeForce RTX 4090 | int4 |" in t.answer  # the 4090 compared, quantised variant included
    assert "出口管制" in t.answer  # and flagged
    assert "日活 5,000" in t.answer and "本方案按您给的高峰并发 200 计算" in t.answer  # both traffic figures
    assert "**整机：**" in t.answer and calls(t, "plan_system")


def test_daily_users_in_english_are_traffic(advisor, clean):
    t = clean(advisor.ask("We expect 2000 daily users for a Llama-3.1-8B chatbot. How many GPUs and which card?"))
    plan = calls(t, "plan_serving")[0]
    assert plan.input["daily_users"] == 2000 and len(plan.input["gpus"]) > 1
    assert "2,000 daily users at 10 requests each" in t.answer and "**Pick " in t.answer


def test_a_finetuning_budget_buys_servers_not_one_card(advisor, clean):
    t = clean(advisor.ask("预算 200 万，做 7B 到 14B 的微调，怎么配？"))
    call = calls(t, "plan_system")[0]
    assert call.input["budget_cny"] == 2_000_000 and call.input["job"] == "finetune" and call.input["model"] == "14B"
    for o in call.output["options"]:
        assert o["n_gpus"] >= 8
        if o["total_high_cny"] is not None:
            assert o["total_high_cny"] <= 2_000_000
    assert "**最省钱**" in t.answer and "**最快**" in t.answer and "**性价比**" in t.answer
    assert "物料清单" in t.answer and "未列出（中国大陆无法正规采购新卡）" in t.answer


def test_a_budget_below_one_server_says_so_and_the_nearest(advisor, clean):
    t = clean(advisor.ask("20 万搭一台跑 Qwen2.5-72B 推理的机器"))
    call = calls(t, "plan_system")[0]
    assert call.input["max_nodes"] == 1 and call.input["budget_cny"] == 200_000
    assert "没有方案满足要求（预算买不下一套）" in t.answer and "最接近的是" in t.answer
    assert "按高峰 10 个并发请求估算" in t.answer  # the traffic it assumed, said


def test_buying_for_one_job_is_compared_with_renting_that_job(advisor, clean):
    t = clean(advisor.ask("我们只跑一个 7B 全参微调 10 亿 token 的任务，买一台 8 卡 H800 服务器划算还是租？"))
    r = calls(t, "rent_vs_buy")[0]
    assert r.input["job_hours"] == calls(t, "training_time")[0].output["hours"]
    assert r.output["cheaper"] == "rent" and t.answer.startswith("**租更划算：只为这一个任务不值得买。**")
    assert "个这样的任务，买才比每次租更省" in t.answer


def test_an_idc_asks_for_payback_at_its_price_and_occupancy(advisor):
    t = advisor.ask("智算中心买 H800 出租，每卡时 20 元，出租率 60%，多久回本？")
    r = calls(t, "rent_vs_buy")[0]
    assert r.input["occupancy"] == 0.6 and r.input["rent_cny_per_hour"] == 20
    assert "回本" in t.answer and "出租率 60%" in t.answer and "永远回不了本" in t.answer
    assert t.ungrounded == []


def test_hours_a_day_the_user_gave_decide_rent_or_buy(advisor, clean):
    t = clean(advisor.ask("每天只用 6 小时，8 张 H800 租还是买？用两年"))
    r = calls(t, "rent_vs_buy")[0]
    assert r.input["hours_per_day"] == 6 and r.input["months"] == 24 and r.output["cheaper"] == "rent"
    assert "每天用 6 小时" in t.answer and "盈亏平衡使用强度" in t.answer


def test_the_targets_a_buyer_states_are_planned_for_and_quoted(advisor, clean):
    t = clean(advisor.ask("Qwen3-32B 高峰并发 200，首字延迟 500ms 以内，每用户 30 token/s，要几张 H20？"))
    plan = calls(t, "plan_serving")[0]
    assert plan.input["ttft_s"] == 0.5 and plan.input["tokens_per_s_per_user"] == 30
    assert "（按您给的目标规划：500ms、30 token/s）" in t.answer and "首字 ≤ 0.5 秒" in t.answer
    machines = calls(t, "plan_system")[0]  # the servers are sized for the same targets
    assert machines.input["ttft_s"] == 0.5 and machines.input["tokens_per_s_per_user"] == 30


def test_an_impossible_latency_says_what_cannot_be_met_and_the_nearest(advisor, clean):
    t = clean(advisor.ask("Serve Llama-3.1-70B to 500 concurrent users with TTFT under 1 ms, how many GPUs?"))
    assert calls(t, "plan_serving")[0].input["ttft_s"] == 0.001
    assert "**None of these cards meets the targets: time to first token.**" in t.answer
    assert "The nearest:" in t.answer and "first token in about" in t.answer and "ttft_s" not in t.answer


def test_a_system_plan_offers_a_follow_up_the_dialogue_answers(advisor):
    t = advisor.ask("客服大模型 Qwen3-32B，日活 5000，高峰并发 200，要几张卡？H20 还是 4090？")
    assert t.follow_ups == []  # the traffic is not carried to the next turn yet: nothing offered that fails
    t = advisor.ask("预算 200 万，做 7B 到 14B 的微调，怎么配？")
    assert t.follow_ups == ["换成国产卡（昇腾）怎么配？"]
    nxt = advisor.ask(t.follow_ups[0], conversation_id=t.conversation_id)
    call = next(c for c in nxt.tool_calls if c.tool == "plan_system")
    assert call.input["domestic"] is True and call.input["budget_cny"] == 2_000_000 and call.input["model"] == "14B"
    assert {o["label"] for o in call.output["options"]} == {"atlas-800t-a2"}


def test_how_many_cards_a_traffic_needs_beside_what_the_users_own_card_holds(advisor, clean):
    t = clean(
        advisor.ask(
            "What is the concurrent request capacity of an NVIDIA A100 80 GB GPU with Llama-2-13b? How much GPUs "
            "power required to serve like 100 requests concurrently when running Llama-2-13b model?"
        )
    )
    plan = calls(t, "plan_serving")[0]
    assert plan.input["concurrency"] == 100 and plan.input["gpus"] == ["a100-sxm4-80gb"]
    assert "**Pick NVIDIA A100 SXM4 80GB" in t.answer  # the count for 100 requests
    assert calls(t, "fit_inference") and "hold about" in t.answer  # and what one A100 holds


def test_which_card_for_a_concurrency_compares_the_cards_and_keeps_the_plan(advisor, clean):
    """ "部署 Llama-3.1-8B 50 并发推荐什么卡" is a choice of card: the shortlist of cards side by side (its best value's
    count shown) beside the serving plan and its pick, not the plan alone."""
    t = clean(advisor.ask("部署 Llama-3.1-8B 50 并发推荐什么卡"))
    shortlist = calls(t, "recommend_gpus")[0]
    assert shortlist.input["workload"] == "infer" and shortlist.input["batch"] == 50
    best = shortlist.output["best_value"]
    assert f"{best['n_gpus']} 张 {best['gpu']}" in t.answer
    plan = calls(t, "plan_serving")[0].output
    pick = next(c for c in plan["candidates"] if f"{c['gpu']} {c['precision']}" == plan["pick"])
    assert t.answer.startswith(f"**选 {pick['gpu']}（{pick['precision']}）：共 {pick['n_gpus']} 张卡")
    assert "按每个请求都用满" in t.answer  # why the shortlist's counts and the plan's differ (window vs requests)


def test_a_pick_that_is_cheapest_fastest_and_best_value_is_said_once_with_why(advisor, clean):
    t = clean(advisor.ask("想给公司搭个 Qwen2.5-72B LoRA 微调环境，预算100万以内，推荐什么配置"))
    system = calls(t, "plan_system")[0].output
    assert system["cheapest"] == system["fastest"] == system["best_value"]
    lines = [line for line in t.answer.splitlines() if system["best_value"] in line and line.startswith("- **")]
    assert len(lines) == 1 and "最省钱、最快、性价比都是" in lines[0] and "（只有这一个方案满足要求）" in lines[0]
    cards = calls(t, "recommend_gpus")[0]  # the cards alone, at their purchase price, mainland-buyable
    assert cards.input["pricing"] == "buy" and cards.input["china_available"] is True
    assert cards.output["best_value"]["price_cny"] and "**只算卡" in t.answer


def test_a_count_set_by_the_default_first_token_target_shows_a_looser_target(advisor, clean):
    """100 concurrent 8K prompts on a 72B: at the default 2 s first token each H20 replica takes about one request,
    so the answer says the default sets the count and plans the same card at a looser target; rows that miss a
    target say so."""
    t = clean(advisor.ask("客户要私有化部署 Qwen2.5-72B，100 并发，8K 上下文，推荐什么配置"))
    first, *others = calls(t, "plan_serving")
    pick = next(c for c in first.output["candidates"] if f"{c['gpu']} {c['precision']}" == first.output["pick"])
    assert pick["limited_by"] == "latency"
    loose = next(c for c in others if c.input.get("ttft_s", 0) > first.output["ttft_s"])
    fewer = next(c for c in loose.output["candidates"] if c["meets_targets"])
    assert fewer["n_gpus"] < pick["n_gpus"] and f"只要 {fewer['n_gpus']} 张" in t.answer
    assert "达不到：首字时延" in t.answer  # a card that misses the target at any count is not shown as meeting it
    given = clean(advisor.ask("客户要私有化部署 Qwen2.5-72B，100 并发，8K 上下文，首字 3 秒以内，推荐什么配置"))
    assert [c.input["ttft_s"] for c in calls(given, "plan_serving")] == [3.0]  # the user's target: not second-guessed


def test_a_token_count_of_no_stated_unit_beside_traffic_is_said_to_be_unclear_not_dropped(advisor, clean):
    t = clean(advisor.ask("We serve Qwen2.5-7B at 200 requests per second, about 2M tokens. Which GPUs and how many?"))
    plan = calls(t, "plan_serving")[0]
    assert "prompt_tokens" not in plan.input  # not guessed into a request length
    assert "“2M tokens” does not say whether it is per request, per second or per day" in t.answer


def test_a_billion_daily_users_said_in_yi_is_planned_as_a_billion(advisor, clean):
    """ "日活 10 亿" is 10^9 users (it was read as 10): the plan sizes that traffic and says the card count; a card
    whose count runs past the planner's limit is marked as not meeting it, never an exception."""
    t = clean(advisor.ask("Qwen2.5-7B 客服，日活 10 亿用户，要几张卡？"))
    plan = calls(t, "plan_serving")[0]
    assert plan.input["daily_users"] == 1_000_000_000 and "budget_cny" not in plan.input
    assert t.answer.startswith("**选 ") and "按高峰 5,902,778 个并发请求" in t.answer


def test_daily_users_in_wan_are_users_not_a_budget(advisor, clean):
    t = clean(advisor.ask("Qwen2.5-7B 客服，日活 5 万，要几张卡？"))
    assert calls(t, "plan_serving")[0].input["daily_users"] == 50_000
    assert not any("budget_cny" in c.input for c in t.tool_calls)


def test_a_peak_concurrency_said_with_its_estimate_is_read(advisor, clean):
    t = clean(
        advisor.ask("公司内部知识库，员工约200人，并发峰值估计100人次，使用INT-4模型，应该选购何种规格的云服务器？")
    )
    assert calls(t, "plan_serving")[0].input["concurrency"] == 100


def test_tensor_times_pipeline_parallel_degrees_are_the_gpus_of_the_run(advisor):
    t = advisor.ask(
        "To train a model(7B) with megatron-deepspeed,\ntensor_parallelism=2\npipeline_parallelism=8\n\nhow many GPUS do i need?"
    )
    assert calls(t, "fit_training")[0].input["n_gpus"] == 16
    assert "**Across servers:** 16 GPUs" in t.answer and "take 2 servers" in t.answer


def test_an_fp8_model_on_a_card_without_fp8_is_sized_in_bf16_throughout(advisor, clean):
    """DeepSeek-V3 is published in FP8; an A800 has no FP8, so the fit runs it in BF16 — and the weights' total the
    answer quotes is the BF16 one it split (it quoted the published 671 GB of FP8 beside 24 cards of BF16)."""
    t = clean(advisor.ask("Hello, how many GPU (A800 80G) to deploy DeepSeek-V3 model with vllm?"))
    fit = next(c for c in calls(t, "fit_inference") if c.output["fits"]).output
    weights = next(c for c in calls(t, "model_memory")).output
    assert weights["precision"] == "bf16" and fit["n_gpus"] == 24
    assert f"The weights (bf16) take about {weights['weights_gb']:,.0f} GB in all, split over 24 GPUs" in t.answer
    assert "**Across servers:** 24 GPUs (NVIDIA A800 SXM4 80GB) take 3 servers" in t.answer


def test_a_budget_below_one_card_names_the_nearest_options_once_each(advisor, clean):
    """$500 for a 70B: nothing fits the budget; the answer says so and names the nearest priced options first (the
    cheapest over-budget one leading), each once — not the same "no price on file" sentence three times."""
    t = clean(advisor.ask("I have a budget of $500, which GPU should I buy to serve Llama-3.1-70B?"))
    r = calls(t, "recommend_gpus")[0].output
    assert not r["options"] or r["cheapest"] is None
    nearest = min((d for d in r["dropped"] if d.get("total_cny")), key=lambda d: d["total_cny"])
    assert t.answer.startswith(f"**No option meets the conditions.** {nearest['gpu']}: Over budget by")
    head = t.answer.split("\n")[0]
    assert head.count("No purchase price on file") <= 1 and ".;" not in head


def test_which_cards_run_a_model_gives_each_cards_count_domestic_included_and_no_domestic_only_rule(advisor):
    # gh-qwen3-888 (a development row): "国产化适配情况" asks how domestic chips do, beside which GPUs run it
    t = advisor.ask("qwen2 72B模型在哪些GPU芯片可以跑起来、国产化适配情况推理速度怎么样呢")
    fits = {(c.input["gpu"], c.input["precision"]): c.output for c in calls(t, "fit_inference")}
    assert ("ascend-910b", "bf16") in fits and ("a100-sxm4-80gb", "bf16") in fits  # NVIDIA and domestic cards
    row = next(line for line in t.answer.splitlines() if line.startswith("| Huawei Ascend 910B |"))
    assert f"| {fits[('ascend-910b', 'bf16')]['min_gpus']}（单路约" in row  # its count, with its speed
    assert "选 NVIDIA" not in t.answer.split("\n\n")[0]  # the probed options are not a pick of their own


def _row(rid: str) -> str:
    rows = yaml.safe_load((Path(__file__).parents[2] / "corpus/systems/requests.yaml").read_text(encoding="utf-8"))
    return next(r["text"] for r in rows if r["id"] == rid)


def test_an_fp8_model_on_cards_without_fp8_also_gets_the_count_on_cards_that_run_it_as_published(advisor):
    t = advisor.ask(_row("gh-deepseekr1-460"))  # a development row: 8×A100, FP8 R1, communication asked
    fp8 = {c.input["gpu"]: c.output for c in calls(t, "fit_inference") if c.input.get("precision") == "fp8"}
    assert set(fp8) == {"h20", "h200-sxm-141gb"}
    assert f"{fp8['h20']['min_gpus']} GPUs (NVIDIA H20 96GB)" in t.answer and "published in FP8" in t.answer
    assert not calls(t, "training_time")  # a serving question's link is not timed as a training run
    assert t.answer.startswith("**It does not fit.**")  # and no "nothing found" for the part the fit answers
    assert "Across servers" in t.answer and "InfiniBand" in t.answer  # the bf16 count's servers and network
