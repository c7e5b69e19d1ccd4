"""Issue 26, what a set of serving cards does beyond one replica: the other ways to split the same cards, what more
concurrency needs, a per-request memory figure corrected (weights once, KV per request), and the least memory by
precision. Every figure shown is a tool output; every figure the user gave is used or explained."""

from __future__ import annotations

import pytest
from asking import calls


@pytest.fixture
def clean():
    def check(trace):
        assert trace.ungrounded == [] and trace.unused == [], (trace.ungrounded, trace.unused)
        return trace

    return check


def _max_batch(trace, n_gpus):
    return next(c.output["max_batch"] for c in calls(trace, "fit_inference") if c.input.get("n_gpus") == n_gpus)


def test_eight_cards_in_pods_of_four_are_compared_with_one_replica_of_eight(advisor):
    t = advisor.ask(
        "Qwen2.5-72B on 8 A100 80GB GPUs, currently 2 replica pods with 4 GPU each. "
        "How many concurrent users does it hold, or is one replica of 8 better?"
    )
    assert "| 2 × TP=4 |" in t.answer and "| 1 × TP=8 |" in t.answer
    four, eight = _max_batch(t, 4), _max_batch(t, 8)
    assert f"| 2 × TP=4 | {four:,} |" in t.answer and f"| 1 × TP=8 | {eight:,} |" in t.answer
    speeds = {c.input["n_gpus"]: c.output["total_tokens_per_s"] for c in calls(t, "inference_speed")}
    best = max(speeds, key=lambda tp: (8 // tp) * speeds[tp])  # replicas x each replica's throughput
    assert f"the most total throughput on the 8 GPUs is {8 // best} × TP={best}" in t.answer or t.answer.count(
        f"{8 // best} × TP={best} gives both the most total throughput"
    )
    assert t.ungrounded == []


def test_a_fit_that_speaks_of_concurrency_says_what_more_of_it_needs(advisor, clean):
    t = clean(advisor.ask("4张4090 部署 Qwen2.5-72B int4 够吗？会有并发问题吗？"))
    fit = calls(t, "fit_inference")[0].output
    assert fit["fits"] and fit["n_gpus"] == 4
    assert f"再加一套同样的 4 张 {fit['gpu']}" in t.answer and f"每套多约 {fit['max_batch']:,} 路" in t.answer
    full = calls(t, "inference_speed")[0]
    assert full.input["batch"] == fit["max_batch"]  # the speed at the concurrency the cards hold
    assert f"单路约 {full.output['decode_tokens_per_s']:,.1f} token/s" in t.answer


def test_a_fit_without_concurrency_gets_no_scaling_line(advisor, clean):
    t = clean(advisor.ask("4张4090 部署 Qwen2.5-72B int4 放得下吗？"))
    assert "要更多并发" not in t.answer


def test_a_per_request_memory_figure_is_corrected_weights_once_kv_per_request(advisor):
    t = advisor.ask("单次推理需要13G的显存，那一张 A100 80GB 是不是只能同时支持 6 个请求？")
    assert "显存不是每个请求各占一份" in t.answer and "“13G”" in t.answer
    one = next(c.output for c in calls(t, "fit_inference") if c.input.get("n_gpus") == 1)
    assert f"约可同时处理 {one['max_batch']:,} 个请求" in t.answer
    assert one["max_batch"] > 6  # the correction is worth making: far more than memory / per-run footprint
    assert t.ungrounded == []


def test_least_memory_is_given_per_precision_with_the_smallest_card(advisor, clean):
    t = clean(advisor.ask("部署一个 11B 参数的模型至少需要多大显存？"))
    memory = calls(t, "model_memory")[-1].output["weights_by_precision_gb"]
    assert "推理按精度的最低显存" in t.answer
    assert f"fp32：权重约 {memory['fp32']:g} GB" in t.answer and f"bf16：权重约 {memory['bf16']:g} GB" in t.answer
    fp32 = next(
        c.output
        for c in calls(t, "fit_inference")
        if c.input.get("precision") == "fp32" and c.output["verdict"] == "fits"
    )
    assert f"fp32：权重约 {memory['fp32']:g} GB，1 张 {fp32['gpu']} 放得下" in t.answer


def test_how_many_gpus_with_no_card_named_gets_a_count_per_card_type(advisor, clean):
    t = clean(advisor.ask("I want to run a 30B LLM for inference, how many GPUs are needed?"))
    assert "How many of each card serve" in t.answer
    for precision in ("bf16", "int4"):
        fits = [
            c.output
            for c in calls(t, "fit_inference")
            if c.input.get("precision") == precision and c.input.get("gpu") == "rtx-4090"
        ]
        assert fits, precision
    bf16 = next(
        c.output for c in calls(t, "fit_inference") if c.input.get("precision") == "bf16" and c.input.get("gpu") == "t4"
    )
    int4 = next(
        c.output for c in calls(t, "fit_inference") if c.input.get("precision") == "int4" and c.input.get("gpu") == "t4"
    )
    assert not bf16["fits"] and f"| {bf16['gpu']} | {bf16['min_gpus']} | {int4['min_gpus'] or 1} |" in t.answer


@pytest.mark.parametrize(
    "question",
    ["Qwen2.5-32B 推理至少需要多少显存？", "部署 Qwen2.5-72B 要几张卡？", "How many GPUs to serve Qwen2.5-72B?"],
)
def test_a_survey_of_card_classes_plans_no_servers_for_its_rows(advisor, question):
    """The minimum-by-precision list and the count per card type probe small cards (a T4 needs 16 for a 72B in
    bf16): those rows are options shown, so no 'across servers' block is planned for 16 T4."""
    t = advisor.ask(question)
    assert "跨节点" not in t.answer and "Across servers" not in t.answer
    assert not calls(t, "plan_cluster")


def test_the_job_s_own_count_beyond_one_server_still_gets_its_servers(advisor):
    t = advisor.ask("72B 全参微调要多少张 A100 80GB？")
    assert "跨节点" in t.answer and calls(t, "plan_cluster")
