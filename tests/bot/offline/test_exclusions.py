"""Cards the user rules out ("不用 H100", "除了 4090", "without H100", "not NVIDIA") are never candidates, in every
answer kind, and the answer says they were left out as asked (the coverage gate's `excluded` role)."""

from __future__ import annotations

import pytest
from asking import calls

from bot.offline.understand.request.reader import read


@pytest.mark.parametrize(
    ("text", "out", "kept"),
    [
        ("不用 H100，300 QPS 跑 Qwen2.5-7B 要几张卡？", {"h100-sxm5-80gb"}, []),
        ("不要 A100 和 H800，Qwen2.5-14B 推理用什么卡", {"a100-sxm4-80gb", "h800-sxm5-80gb"}, []),
        ("除了 4090 还有什么卡能跑 Qwen2.5-32B", {"rtx-4090"}, []),
        ("Serve Llama-3.1-8B for 100 concurrent users without H100, on L40S or A100", {"h100-sxm5-80gb"},
         ["l40s", "a100-sxm4-80gb"]),
        ("H100 和 A100 哪个好", set(), ["h100-sxm5-80gb", "a100-sxm4-80gb"]),  # nothing negated: both compared
    ],
)  # fmt: skip
def test_negated_cards_leave_the_candidates_for_the_excluded_role(text, out, kept):
    r = read(text)
    assert set(r.parsed.excluded_gpus) == out
    assert r.parsed.gpus == kept
    assert {m.value for m in r.mentions if m.role == "excluded"} == out


def test_a_negated_vendor_is_excluded():
    r = read("not NVIDIA: which cards should we buy to serve Qwen2.5-72B?")
    assert r.parsed.excluded_vendors == ["nvidia"] and any(m.role == "excluded" for m in r.mentions)


def test_a_capacity_plan_never_compares_a_ruled_out_card(advisor):
    t = advisor.ask("模型 13B，集群总 QPS 300–500，不用 H100，成本尽量低")
    plan = calls(t, "plan_serving")[0]
    assert plan.input["qps"] == 500  # a range is sized for its peak end
    assert not any("H100" in g for g in plan.input["gpus"])
    assert "H100" not in t.answer.split("**您提到")[0]
    assert "按您的要求，“H100” 不在候选之内" in t.answer and t.unused == []


def test_a_recommendation_never_picks_a_ruled_out_card(advisor):
    plain = advisor.ask("推理 Qwen2.5-72B 用什么卡最划算？")
    head = plain.answer.split("\n")[0]
    name = next(o["gpu"] for o in calls(plain, "recommend_gpus")[0].output["options"] if o["gpu"] in head)
    t = advisor.ask(f"推理 Qwen2.5-72B 用什么卡最划算？不用 {name}")
    shown = t.answer.split("**您提到")[0]
    assert name not in shown and calls(t, "recommend_gpus")  # still a recommendation, on the other cards
    assert t.unused == []


def test_english_without_is_read_in_a_system_plan(advisor):
    t = advisor.ask("Budget 2,000,000 CNY to build servers for fine-tuning Qwen2.5-14B, without H800")
    for c in calls(t, "plan_system"):
        assert c.input.get("platforms") and not any("h800" in p for p in c.input["platforms"])
