"""What a serving request states about itself reaches plan_serving: its prompt and output lengths, a context window,
its traffic written with a space between thousands; and a sizing request that names no model asks for it."""

from __future__ import annotations

import pytest
from asking import calls

from bot.offline.understand.request.reader import read


@pytest.mark.parametrize(
    ("text", "role", "value"),
    [
        ("Qwen2.5-32B 客服，高峰并发 100，每次输入 8k token，输出 1000 token，要几张卡？", "prompt_len", 8192),
        ("Qwen2.5-32B 客服，高峰并发 100，每次输入 8k token，输出 1000 token，要几张卡？", "output_len", 1000),
        ("Llama-3.1-8B, 200 concurrent, 2000 input tokens and 500 output tokens, how many L40S?", "prompt_len", 2000),
        ("Llama-3.1-8B, 200 concurrent, 2000 input tokens and 500 output tokens, how many L40S?", "output_len", 500),
        ("Let's imagine i want to deploy Llama-3.1-8B for 10 000 users, which hardware?", "daily_users", 10000),
    ],
)  # fmt: skip
def test_lengths_and_spaced_thousands_are_read(text, role, value):
    assert [m.value for m in read(text).mentions if m.role == role][:1] == [value]


def test_a_speed_after_output_is_no_length():
    assert not [m for m in read("Qwen2.5-7B 输出 30 token/s 要几张卡").mentions if m.role == "output_len"]


def test_the_plan_uses_the_lengths_the_user_gave(advisor):
    t = advisor.ask("Qwen2.5-32B 客服，高峰并发 100，每次输入 8k token，输出 1000 token，要几张卡？")
    plan = calls(t, "plan_serving")[0]
    assert plan.input["prompt_tokens"] == 8192 and plan.input["output_tokens"] == 1000
    assert "每请求输入 8,192 / 输出 1,000 token" in t.answer
    machines = calls(t, "plan_system")[0]  # the servers are sized for the same requests
    assert machines.input["prompt_tokens"] == 8192 and machines.input["output_tokens"] == 1000
    assert t.unused == []


def test_a_context_window_alone_sizes_the_prompt_as_the_window_less_the_output(advisor):
    t = advisor.ask("Serve Llama-3.1-70B to 50 concurrent users with 32k context. How many GPUs?")
    plan = calls(t, "plan_serving")[0]
    assert plan.input["prompt_tokens"] + plan.output["output_tokens"] == 32768


@pytest.mark.parametrize(
    "text",
    [
        "Are there any guidelines to estimate the hardware requirements? How many graphics cards would be appropriate?",
        "推理硬件要求是什么？需要什么配置？",
    ],
)
def test_a_sizing_request_without_a_model_is_answered_on_the_stated_default_and_asks_for_it(advisor, text):
    t = advisor.ask(text)
    assert "Which model" in t.answer or "哪个模型" in t.answer
    assert "a 7B model" in t.answer or "7B 模型" in t.answer  # the default is said, never silent
    computed = [c for c in t.tool_calls if c.tool != "search_knowledge"]
    assert computed and {c.input["model"] for c in computed} <= {"7B", "14B", "72B"}  # the default and its sizes


def test_both_jobs_for_two_models_are_four_answers_each_at_the_window_asked(advisor):
    t = advisor.ask(
        "Hardware requirements for finetuning and inference? Could you please provide the GPU RAM required, "
        "Especially the Llama2 70B 32k and the Llama2 13B 32k."
    )
    for header in ("Serving · Llama-2-70B", "Serving · Llama-2-13B", "Fine-tuning · Llama-2-70B",
                   "Fine-tuning · Llama-2-13B"):  # fmt: skip
        assert f"**{header}:**" in t.answer
    serving = calls(t, "fit_inference")
    assert serving and all(c.input["context_len"] == 32768 for c in serving)
    training = calls(t, "fit_training")
    assert training and all(c.input["seq_len"] == 32768 for c in training)


def test_a_recommendation_for_two_models_answers_each(advisor):
    t = advisor.ask("llama2-13B和llama2-70b微调所需要的显卡配置")
    assert {c.input["model"] for c in calls(t, "recommend_gpus")} >= {"llama-2-13b", "llama-2-70b"}
    assert "**Llama-2-13B：**" in t.answer and "**Llama-2-70B：**" in t.answer


def test_a_capacity_answer_says_what_each_user_adds_and_that_it_needs_a_batching_server(advisor):
    t = advisor.ask(
        "A10 24G使用chatglm3-6B，大概能够满足什么量级的用户数量正常使用？多个用户同时提问会导致显存占用明显增大吗？"
    )
    f = calls(t, "fit_inference")[0].output
    kv = f["kv_cache_gb_per_sequence"]
    assert f"每多一路并发，KV 缓存多占约 {kv:.2f} GB" in t.answer and "vLLM" in t.answer
    assert t.ungrounded == []


def test_a_card_named_with_its_memory_in_brackets_is_that_variant():
    assert read("How many A100 GPUs (40GB) required to tune 13B model (full parameter)?").parsed.gpus == [
        "a100-sxm4-40gb"
    ]


def test_which_cards_run_a_model_is_a_shortlist_with_each_cards_speed(advisor):
    t = advisor.ask("Qwen2.5-72B 模型在哪些 GPU 芯片可以跑起来、推理速度怎么样呢")
    r = calls(t, "recommend_gpus")[0]
    assert r.input["workload"] == "infer" and len(r.output["options"]) >= 2
    assert "token/s" in t.answer and t.ungrounded == []


@pytest.mark.parametrize(
    ("text", "amount", "currency"),
    [
        ("We have a budget of 100,000 USD for GPUs to serve Qwen2.5-32B", 100_000, "USD"),
        ("budget $100,000 to serve Qwen2.5-32B", 100_000, "USD"),
        ("预算 1,500,000 元，部署 Qwen2.5-72B", 1_500_000, "CNY"),
    ],
)
def test_a_budget_with_thousands_separators_is_the_whole_amount(text, amount, currency):
    p = read(text).parsed
    assert (p.budget_amount, p.budget_currency) == (amount, currency)


def test_a_list_of_counts_is_not_one_number():
    assert read("8,16 张卡哪个快").parsed.n_gpus == 16


def test_requests_in_flight_with_a_speed_asked_are_a_sizing_question_not_a_trouble(advisor):
    t = advisor.ask(
        "I would like to know the concurrent request capacity of an NVIDIA A100 80 GB GPU with Llama-2-13b, with low "
        "latency and maximum throughput. How much GPUs are required to serve 100 requests concurrently?"
    )
    assert not calls(t, "diagnose") and "Cause:" not in t.answer
    assert calls(t, "plan_serving")


@pytest.mark.parametrize(
    "text",
    [
        "Let's imagine i want to deploy for 10 000 users on 8 A100 GPUs, which hardware will be necessary ?",
        "要上线一个客服机器人，日活 2000，需要多少张卡？",
    ],
)
def test_traffic_without_a_model_is_planned_on_the_stated_default_model(advisor, text):
    """Traffic asks what serves it: planned on the default model (said, with how to change it) rather than asked
    back first; the answer says how more GPUs raise the requests in flight it holds."""
    t = advisor.ask(text)
    plan = calls(t, "plan_serving")[0]
    assert plan.input["model"] == "7B" and plan.input["daily_users"] in (10_000, 2000)
    assert "7B" in t.answer.split("\n")[0]  # the assumed model said up front
    assert "More GPUs hold more concurrent requests" in t.answer or "卡越多，并发越高" in t.answer
    assert t.ungrounded == [] and t.unused == []
