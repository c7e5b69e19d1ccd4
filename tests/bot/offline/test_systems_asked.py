"""Systems requests answered as asked (issue 26, development rows of tests/corpus/systems/): the method when the
asker asks how to calculate, each setup named with its own count, the job put as the question's condition, "满血版"
with no model, a chat's context window held in the KV cache rather than prefilled on every request, what a count of
cards holds, and a rental's hour. Every figure shown is a tool output; every figure the user gave is used."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
import yaml
from asking import calls

SYSTEMS = Path(__file__).resolve().parents[2] / "corpus" / "systems"


@functools.cache
def request(row_id: str) -> str:
    """A development row's words (never a held-out one)."""
    held = set(yaml.safe_load((SYSTEMS / "held_out.yaml").read_text(encoding="utf-8"))["ids"])
    assert row_id not in held, "rules are never written from the held-out rows"
    rows = yaml.safe_load((SYSTEMS / "requests.yaml").read_text(encoding="utf-8"))
    return next(r["text"] for r in rows if r["id"] == row_id)


@pytest.fixture
def clean():
    def check(trace):
        assert trace.ungrounded == [] and trace.unused == [], (trace.ungrounded, trace.unused)
        return trace

    return check


def test_asked_for_a_method_the_answer_works_time_gpu_hours_and_cost_per_method(advisor, clean):
    t = clean(advisor.ask(request("gh-mlengineering-9")))
    assert "**How to work it out**" in t.answer and "hours = FLOPs ÷ (GPUs × peak FLOP/s × MFU)" in t.answer
    times = {c.input["method"]: c for c in calls(t, "training_time")}
    assert set(times) == {"full", "lora", "qlora"}
    fits = {c.output["method"]: c.output for c in calls(t, "fit_training") if c.output["fits"]}
    for method, c in times.items():  # each run timed on the count its own fit needs
        assert c.input["n_gpus"] == fits[method]["n_gpus"]
        assert f"{c.output['gpu_hours']:,.1f}" in t.answer or f"{c.output['gpu_hours']:,.0f}" in t.answer
    assert not calls(t, "plan_cluster")  # the 72B of "other sizes" sizes no servers for this 7B job


def test_asked_for_a_serving_method_the_steps_carry_the_answers_own_figures(advisor, clean):
    t = clean(advisor.ask(request("gh-elastic-5103")))
    fit = calls(t, "fit_inference")[0].output
    assert "1. **Memory → GPUs:**" in t.answer and f"here {fit['kv_cache_bytes_per_token']:,.0f} B" in t.answer
    assert f"at most about {fit['max_batch']} at" in t.answer and "3. **Load → GPUs:**" in t.answer


def test_each_setup_named_with_its_count_is_weighed_as_said(advisor, clean):
    t = clean(advisor.ask(request("gh-qwen3-686")))
    setups = {(c.input["gpu"], c.input.get("n_gpus")) for c in calls(t, "fit_inference")}
    assert {("rtx-4090", 8), ("v100-sxm2-32gb", 6)} <= setups
    assert "张量并行切不开 6 张卡" in t.answer and "--pipeline-parallel-size 3" in t.answer
    assert t.answer.startswith("**选 NVIDIA GeForce RTX 4090。**")  # the faster of the two setups as they stand
    assert "长文本：" in t.answer and "不支持 bf16" in t.answer  # the long context asked for, and the V100's FP16


def test_the_job_put_as_the_condition_is_the_one_sized(advisor, clean):
    t = clean(advisor.ask(request("gh-ktransformers-594")))
    assert calls(t, "fit_training") and not calls(t, "fit_inference")
    assert "**微调按方法对比**" in t.answer and "DeepSeek-R1" in t.answer


def test_full_strength_with_no_model_is_deepseek_r1_and_quantized_counts_follow(advisor, clean):
    t = clean(advisor.ask(request("gh-xinference-2864")))
    fit = calls(t, "fit_inference")[0]
    assert fit.input["model"] == "deepseek-r1"
    fewer = [c.output for c in calls(t, "fit_inference") if c.input.get("precision") == "int4" and c.output["fits"]]
    assert fewer and f"int4 时最少 {fewer[-1]['n_gpus']} 张" in t.answer


def test_a_context_window_is_held_not_prefilled_on_every_request(advisor, clean):
    t = clean(advisor.ask(request("gh-vllm-12400")))
    plan = calls(t, "plan_serving")[0]
    assert plan.input["model"] == "llama-3.3-70b"  # the model of the body, not the title's loose "Llama-3 70b"
    assert plan.input["context_tokens"] == 131072 and "prompt_tokens" not in plan.input
    assert plan.output["pick"] is not None  # first tokens in seconds, not minutes
    memory = calls(t, "model_memory")[-1].output
    assert f"about {memory['serving_gb']:,.0f} GB in all" in t.answer


def test_one_or_two_cards_named_with_no_model_get_what_they_hold(advisor, clean):
    t = clean(advisor.ask(request("gh-alpacalora-400")))
    assert "**What the cards hold**" in t.answer
    assert "| 1 × NVIDIA H100 SXM5 80GB |" in t.answer and "| 2 × NVIDIA A100 SXM4 80GB |" in t.answer
    assert "| 4 × " not in t.answer  # the counts asked, one or two
    t = clean(advisor.ask("70B LoRA 单卡 A100 80G 够吗"))
    assert "几张卡能放下多大的模型" not in t.answer  # a model named: its own fit answers "enough"


def test_renting_cards_for_a_test_is_their_hourly_price_not_a_purchase(advisor, clean):
    t = clean(advisor.ask(request("gh-instructrag-6")))
    assert not calls(t, "rent_vs_buy")
    hour = calls(t, "run_cost")[0].output
    assert hour["gpu_hours"] == 2 and f"about {hour['total_cny']:,.2f} CNY an hour" in t.answer
    assert "| 2 × NVIDIA H100 SXM5 80GB |" in t.answer


def test_renting_weighed_against_buying_stays_rent_or_buy(advisor, clean):
    t = clean(advisor.ask("TCO 对比，自购 910B 还是租，128 张"))
    assert calls(t, "rent_vs_buy")


def test_a_memory_type_is_no_card_count():
    """ "RTX 4090 24GB GDDR6X + DDR4 64GB" (https://github.com/meta-llama/llama/issues/480): the 6 of GDDR6X and
    the 4 of DDR4 are no counts of cards to weigh."""
    from bot.offline.compose.sizes.holds import counts
    from bot.offline.understand.request.reader import read

    text = "Which model can run on RTX 4090 24GB GDDR6X + DDR4 64GB?"
    assert counts(text, read(text).parsed) == [1, 2, 4, 8]  # none said: the usual ladder
    text = "2x 4090 GDDR6X 够吗"
    assert counts(text, read(text).parsed) == [2]
