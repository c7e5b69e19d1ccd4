"""Issue 23's classes met on the outside development set, one behaviour each, with questions of the same kind
written here (not the outside set's): a period of use is billed, GPU-hours a month set how the cards are used,
a follow-up about buying gets the purchase price, a serving comparison gets speeds and a pick, and a card the
catalog lacks is named with what the job needs."""

import pytest
from asking import ask, calls

from bot.offline.understand.request.reader import read
from tools.catalog.lookup import gpus
from tools.catalog.prices import prices_for

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


# --- GPU-hours a month are how the cards are used (class 2: the use dropped, 8 cards at 24 h assumed) -----------


def test_gpu_hours_a_month_set_the_hours_a_day_of_a_rent_or_buy(advisor, caplog):
    (t,) = ask(advisor, caplog, "每个月差不多 1000 卡时的 A100，用三年，自己买还是租？")
    (r,) = calls(t, "rent_vs_buy")
    # 1,000 GPU-hours a month need two cards (one gives at most 730), each busy ~16.4 h a day, over 36 months
    assert r.input["n_gpus"] == 2 and abs(r.input["hours_per_day"] - 16.44) < 0.01 and r.input["months"] == 36
    assert "按8 卡" not in t.answer and "1000 卡时" in t.answer


def test_rent_or_buy_without_a_purchase_price_still_prices_the_rent(advisor, caplog, monkeypatch):
    from tools.catalog import prices

    # every card with a rental quote now has a purchase price too: one is made rent-only for this deployment
    table = dict(prices.price_table())
    table["rtx-4090"] = prices.GpuPrices(
        gpu="rtx-4090", quotes=tuple(q for q in table["rtx-4090"].quotes if q.kind == "rental")
    )
    monkeypatch.setattr(prices, "price_table", lambda: table)
    rent_only = next(g for g in gpus() if (pr := prices_for(g)) and pr.default("rental") and not pr.default("purchase"))
    (t,) = ask(advisor, caplog, f"{rent_only.name} 一个月大概用 300 卡时，租还是买？")
    (cost,) = calls(t, "run_cost")
    assert cost.output["gpu_hours"] == 300
    assert "租" in t.answer and "采购" in t.answer and f"{cost.output['total_cny']:,.0f}"[:2] in t.answer


# --- a follow-up keeps what the dialogue said and asks what it asks (class 5) ---------------------------------


def test_a_follow_up_about_buying_gets_the_purchase_price(advisor, caplog):
    _, t = ask(advisor, caplog, "H800 租一卡时多少钱", "那要是采购呢？")
    (specs,) = calls(t, "gpu_specs")
    assert specs.output["purchase_low_cny"] and "采购" in t.answer


def test_hours_a_day_said_with_an_approximation_are_read():
    assert read("每天大概用 10 小时，用两年，买 4 张 H20 还是租").parsed.hours_per_day == 10


# --- a comparison for serving ends with speeds and a pick (classes 3 and 4) -----------------------------------


def test_a_serving_comparison_without_a_model_shows_speeds_on_a_stated_example(advisor, caplog):
    (t,) = ask(advisor, caplog, "H20 和 L40S 做推理，哪个性价比高？")
    speeds = calls(t, "inference_speed")
    assert {c.input["gpu"] for c in speeds} == {"h20", "l40s"}
    assert "token/s" in t.answer and speeds[0].output["model"] in t.answer.replace("通用稠密", "generic dense")
    assert t.answer.startswith("**选 ")


# --- a card the catalog lacks is said, with what the job needs whatever the card (class 6) ---------------------


@pytest.mark.parametrize(
    "q, name",
    [("一张 Q7700 显卡能 LoRA 微调 Qwen2.5-14B 吗", "Q7700"), ("Can a ZX5000 GPU serve Qwen2.5-7B?", "ZX5000")],
)
def test_an_unknown_card_is_named_never_replaced(advisor, caplog, q, name):
    (t,) = ask(advisor, caplog, q)
    assert name in t.answer and "A100 80GB" not in t.answer  # no stand-in card, no defaults note
    assert not calls(t, "fit_training") and not calls(t, "fit_inference")
    (need,) = calls(t, "model_memory")
    figure = need.output["training_total_gb" if "微调" in q else "serving_gb"]
    assert f"{figure:.1f}".rstrip("0").rstrip(".") in t.answer


def test_a_count_of_gpus_is_not_a_card_name():
    r = read("we have 4000 GPUs and 5000 GPU-hours")
    assert r.parsed.unknown_gpus == [] and r.parsed.n_gpus == 4000 and r.parsed.gpu_hours == 5000


# --- a question back names what decides, and never replaces what can be said now (class 7) -------------------


@pytest.mark.parametrize("q", ["？？", "…"])
def test_a_message_with_nothing_in_it_gets_what_decides_in_both_languages(advisor, caplog, q):
    (t,) = ask(advisor, caplog, q)
    assert not t.tool_calls
    for words in ("训练还是推理", "预算", "显卡", "training or serving", "budget"):
        assert words in t.answer


def test_a_card_named_without_a_model_is_sized_on_the_default_beside_the_model_question(advisor, caplog):
    (t,) = ask(advisor, caplog, "昇腾 910B 能不能微调大模型？")
    fits = calls(t, "fit_training")
    assert fits and {c.input["gpu"] for c in fits} == {"ascend-910b"}  # the card named, not the default card
    assert "哪个模型" in t.answer and "7B 模型" in t.answer
    assert f"每卡可用约 {fits[0].output['usable_gb']:.1f} GB" in t.answer and "换个规模" in t.answer


def test_serving_on_several_cards_states_the_weights_they_split(advisor, caplog):
    (t,) = ask(advisor, caplog, "Llama-3.1-70B 用 bf16 部署要几张 A100 80GB？")
    (fit,) = [c for c in calls(t, "fit_inference") if c.output["fits"]][:1]
    (whole,) = calls(t, "model_memory")
    assert fit.output["n_gpus"] > 1 and f"{whole.output['weights_gb']:.0f}" in t.answer


def test_nodes_of_cards_written_with_a_times_sign_are_all_the_gpus():
    assert read("3 servers of 8x H20, is RoCE enough?").parsed.n_gpus == 24


# --- the network between nodes, asked about by name, is answered on the cluster's run (class 3) ---------------


@pytest.mark.parametrize(
    "q, fabrics", [("3 台 8 卡 H20 做训练，用 RoCE 行不行？", {"roce", "ib-ndr"}),
                   ("Is 100G ethernet fine for 4 nodes of 8 A800, or do we need InfiniBand?", {"ethernet-100g", "ib-ndr"})]
)  # fmt: skip
def test_a_question_about_the_network_times_the_run_on_each_fabric(advisor, caplog, q, fabrics):
    (t,) = ask(advisor, caplog, q)
    runs = calls(t, "training_time")
    assert {c.input["nodes_fabric"] for c in runs} == fabrics and {c.input["n_gpus"] for c in runs} in ({24}, {32})
    assert "哪个模型" not in t.answer and "which model" not in t.answer
    for c in runs:
        assert f"{c.output['comm_share'] * 100:.0f}%" in t.answer


@pytest.mark.parametrize(
    "q", ["4 张 L40S 没有 NVLink，训练时卡间通信够吗？", "Will PCIe be a bottleneck training on 8 RTX 4090s?"]
)
def test_a_question_about_the_cards_link_names_it_and_times_the_wait(advisor, caplog, q):
    (t,) = ask(advisor, caplog, q)
    (specs,) = calls(t, "gpu_specs")
    (run,) = calls(t, "training_time")
    kind = specs.output["interconnect_kind_zh" if "训练" in q else "interconnect_kind"]
    assert kind in t.answer and f"{run.output['comm_share'] * 100:.0f}%" in t.answer
