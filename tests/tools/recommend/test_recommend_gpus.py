"""recommend_gpus: realistic scenarios a user would check, the arithmetic behind each option, errors, CLI."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import tools
from bot.cli import app
from tools.catalog.lookup import get_gpu, gpus
from tools.catalog.prices import prices_for
from tools.errors import InvalidInput, UnknownModel
from tools.memory.fit_training import fit_training
from tools.recommend.recommend_gpus import recommend_gpus, valid_counts
from tools.schemas.memory import FitTrainingInput
from tools.schemas.recommend import RecommendInput
from tools.schemas.speed import TrainingTimeInput
from tools.speed.training_time import training_time
from tools.units import HOURS_PER_MONTH


def rec(**args) -> dict:
    return tools.call("recommend_gpus", args)


def ids(options: list[dict]) -> set[str]:
    return {o["gpu_id"] for o in options}


def dropped(out: dict) -> dict[str, dict]:
    return {d["gpu_id"]: d for d in out["dropped"]}


def quote(gpu_id: str, kind: str):
    return prices_for(get_gpu(gpu_id)).default(kind)


# --- scenarios ---------------------------------------------------------------------------------


def test_7b_lora_finetune_under_50k_yuan():
    """A 7B LoRA fine-tune on 1B tokens under 50,000 元: one card is enough, everything shown fits and is affordable."""
    out = rec(model="Qwen2.5-7B", workload="finetune", tokens="1B", budget_cny=50_000, top_k=100)
    assert out["method"] == "lora"
    assert out["options"], out["verdict_en"]
    for o in out["options"]:
        assert o["fits"] and o["per_gpu_gb"] <= o["usable_gb"]
        assert o["total_cny"] <= 50_000
        assert o["n_gpus"] == 1, "a 7B LoRA fine-tune fits on one card of 24 GB or more"
    cheapest = out["cheapest"]
    assert cheapest["n_gpus"] == 1 and get_gpu(cheapest["gpu_id"]).memory_gb >= 24
    assert cheapest["total_cny"] < 5_000  # a few hundred to a few thousand 元, not a cluster
    assert "cheapest" in cheapest["why"] and "最便宜" in cheapest["why_zh"]
    keys = {a["key"]: a for a in out["assumptions"]}
    assert keys["method"]["value"] == "lora" and keys["method"]["default"] is True
    assert keys["grad_checkpointing"]["value"] is True
    assert "mid" in keys["pricing"]["note"]


def test_china_only_excludes_restricted_cards():
    out = rec(model="Qwen2.5-7B", workload="finetune", tokens="1B", china_available=True, top_k=100)
    opts = ids(out["options"])
    assert all(o["china_available"] for o in out["options"])
    for restricted in ("h100-sxm5-80gb", "a100-sxm4-80gb", "h800-sxm5-80gb", "rtx-4090"):
        assert restricted not in opts
        assert dropped(out)[restricted]["reason"] == "not_in_china"
        assert "China" in dropped(out)[restricted]["reason_en"] and "中国大陆" in dropped(out)[restricted]["reason_zh"]
    assert {"h20", "ascend-910b", "rtx-4090d"} <= opts
    by_id = {o["gpu_id"]: o for o in out["options"]}
    assert by_id["h20"]["total_cny"] is not None and by_id["ascend-910b"]["total_cny"] is not None
    assert by_id["rtx-4090d"]["total_cny"] is None  # no price on file: listed, cost unknown, no budget given
    assert out["cheapest"]["gpu_id"] in {"h20", "ascend-910b"}


def test_china_only_with_budget_drops_unpriced_cards():
    out = rec(model="Qwen2.5-7B", workload="finetune", tokens="1B", china_available=True, budget_cny=50_000, top_k=100)
    assert ids(out["options"]) == {"h20", "ascend-910b"}
    assert dropped(out)["rtx-4090d"]["reason"] == "no_price"


def test_70b_full_finetune_does_not_fit_on_24gb_cards():
    out = rec(model="Llama-2-70B", workload="finetune", method="full", tokens="1B", top_k=100)
    d = dropped(out)
    for gpu_id in ("rtx-4090", "rtx-4090d", "rtx-3090"):
        assert d[gpu_id]["reason"] == "does_not_fit"
        assert "8-GPU machine" in d[gpu_id]["reason_en"] and d[gpu_id]["n_gpus"] > 8
    # a user capping the cluster at 64 GPUs: no 24 GB card of any kind can hold a 70B full fine-tune
    capped = rec(model="Llama-2-70B", workload="finetune", method="full", tokens="1B", max_gpus=64, top_k=100)
    small = [g.id for g in gpus() if g.memory_gb <= 24]
    for gpu_id in small:
        assert gpu_id not in ids(capped["options"])
        assert dropped(capped)[gpu_id]["reason"] == "does_not_fit"
        assert (
            "max_gpus = 64" in dropped(capped)[gpu_id]["reason_en"]
            or "8-GPU" in dropped(capped)[gpu_id]["reason_en"]
            or "any GPU count" in dropped(capped)[gpu_id]["reason_en"]  # a 12 GB card: not even sharded
        )
    assert all(o["n_gpus"] <= 64 for o in capped["options"])


def test_tight_deadline_removes_slow_options():
    base = dict(model="Llama-2-7B", workload="finetune", method="full", tokens="1B", max_gpus=8, top_k=100)
    free = rec(**base)
    tight = rec(**base, deadline_hours=12)
    assert "h20" in ids(free["options"]) and "h20" not in ids(tight["options"])
    late = dropped(tight)["h20"]
    assert late["reason"] == "misses_deadline" and late["hours"] > 12 and late["n_gpus"] == 8
    assert "deadline" in late["reason_en"] and "期限" in late["reason_zh"]
    assert tight["options"], "fast cards still make it"
    assert all(o["hours"] <= 12 for o in tight["options"])
    # more GPUs are taken only where the deadline needs them, and the memory minimum is still reported
    for o in tight["options"]:
        assert o["n_gpus"] >= o["min_gpus"]
        if o["n_gpus"] > o["min_gpus"]:
            assert "deadline" in o["why"]


def test_budget_too_small_gives_no_options_and_says_why():
    out = rec(model="Llama-2-70B", workload="finetune", tokens="1B", budget_cny=100)
    assert out["options"] == [] and out["more_options"] == 0
    assert out["cheapest"] is None and out["fastest"] is None and out["best_value"] is None
    over = [d for d in out["dropped"] if d["reason"] == "over_budget"]
    assert over
    for d in over:
        assert d["total_cny"] > 100
        assert f"{d['total_cny'] - 100:,.0f}" in d["reason_en"] and "超出预算" in d["reason_zh"]
    assert out["verdict_en"].startswith("No GPU passes") and "over budget" in out["verdict_en"]
    cheapest_over = min(over, key=lambda d: d["total_cny"])
    assert f"{cheapest_over['total_cny']:,.0f}" in out["verdict_en"]


@pytest.mark.parametrize(
    "args",
    [
        dict(model="Qwen2.5-7B", workload="finetune", tokens="1B"),
        dict(model="Llama-2-70B", workload="finetune", method="full", tokens="1B"),
        dict(model="70B", workload="train", tokens="100B", deadline_hours=24 * 30),
        dict(model="Qwen2.5-72B", workload="infer", batch=16),
    ],
    ids=["7b-lora", "70b-full", "70b-pretrain", "72b-infer"],
)
def test_picks_are_extremes(args):
    out = rec(**args, top_k=100)
    opts = out["options"]
    assert out["more_options"] == 0
    priced = [o for o in opts if o["total_cny"] is not None]
    assert all(out["cheapest"]["total_cny"] <= o["total_cny"] for o in priced)
    if args["workload"] == "infer":
        fast = [o for o in opts if o["tokens_per_s"] is not None]
        assert all(out["fastest"]["tokens_per_s"] >= o["tokens_per_s"] for o in fast)
        value = [o for o in priced if o["tokens_per_s"]]
        best = out["best_value"]["total_cny"] / out["best_value"]["tokens_per_s"]
        assert all(best <= o["total_cny"] / o["tokens_per_s"] * (1 + 1e-6) for o in value)
    else:
        assert all(out["fastest"]["hours"] <= o["hours"] for o in opts)
        best = out["best_value"]["total_cny"] * out["best_value"]["hours"]
        assert all(best <= o["total_cny"] * o["hours"] * (1 + 1e-6) for o in priced)
    # ranked cheapest first, unpriced last
    costs = [o["total_cny"] for o in opts]
    seen_none = False
    for prev, cur in zip(costs, costs[1:]):
        seen_none |= cur is None
        if cur is not None:
            assert not seen_none and prev <= cur
    assert [o["rank"] for o in opts] == list(range(1, len(opts) + 1))


def test_top_k_limits_options_and_counts_the_rest():
    full = rec(model="Qwen2.5-7B", workload="finetune", tokens="1B", top_k=100)
    top = rec(model="Qwen2.5-7B", workload="finetune", tokens="1B", top_k=3)
    assert [o["gpu_id"] for o in top["options"]] == [o["gpu_id"] for o in full["options"][:3]]
    assert top["more_options"] == len(full["options"]) - 3


# --- the figures behind an option ----------------------------------------------------------------


def test_training_option_figures_come_from_the_calculators():
    out = rec(model="Llama-2-7B", workload="finetune", method="full", tokens="2B", top_k=100)
    h800 = next(o for o in out["options"] if o["gpu_id"] == "h800-sxm5-80gb")
    t = training_time(
        TrainingTimeInput(
            model="Llama-2-7B",
            gpu="h800-sxm5-80gb",
            n_gpus=h800["n_gpus"],
            tokens=2 * 10**9,
            method="full",
            seq_len=4096,
            grad_checkpointing=True,
        )
    )
    assert h800["hours"] == pytest.approx(t.hours, rel=1e-3)
    assert h800["hours_low"] == pytest.approx(t.hours_low, rel=1e-3)
    q = quote("h800-sxm5-80gb", "rental")
    assert h800["price_cny"] == q.mid_cny
    assert h800["total_cny"] == pytest.approx(t.gpu_hours * q.mid_cny, rel=1e-3)
    assert h800["low_cny"] == pytest.approx(t.gpu_hours_low * q.low_cny, rel=1e-3)
    assert h800["high_cny"] == pytest.approx(t.gpu_hours_high * q.high_cny, rel=1e-3)
    fit = fit_training(
        FitTrainingInput(
            model="Llama-2-7B",
            gpu="h800-sxm5-80gb",
            method="full",
            n_gpus=h800["n_gpus"],
            seq_len=4096,
            grad_checkpointing=True,
        )
    )
    assert fit.fits and h800["per_gpu_gb"] == fit.per_gpu_gb and h800["zero_stage"] == fit.zero_stage
    one = fit_training(
        FitTrainingInput(model="Llama-2-7B", gpu="h800-sxm5-80gb", method="full", seq_len=4096, grad_checkpointing=True)
    )
    assert h800["min_gpus"] == h800["n_gpus"] == (1 if one.fits else one.min_gpus)


def test_buy_pricing_is_cards_times_purchase_price():
    out = rec(model="Qwen2.5-7B", workload="finetune", tokens="1B", pricing="buy", top_k=100)
    assert "purchase" in out["cost_basis"] and "not included" in out["cost_basis"]
    for o in out["options"]:
        if o["total_cny"] is None:
            continue
        q = quote(o["gpu_id"], "purchase")
        assert o["total_cny"] == pytest.approx(o["n_gpus"] * q.mid_cny)
        assert (o["low_cny"], o["high_cny"]) == pytest.approx((o["n_gpus"] * q.low_cny, o["n_gpus"] * q.high_cny))
    # a card with no purchase price on file (the L20 has neither) is shown without a total, never a guessed one
    unpriced = [o for o in out["options"] if not (p := prices_for(get_gpu(o["gpu_id"]))) or not p.default("purchase")]
    assert unpriced and all(o["total_cny"] is None for o in unpriced)
    # consumer cards carry their sourced retail price (RTX 4090: 1.3-1.6 万元, card only)
    assert next(o for o in out["options"] if o["gpu_id"] == "rtx-4090")["total_cny"] is not None


def test_inference_costs_one_month_of_rent_and_reports_tokens_per_s():
    out = rec(model="Llama-2-70B", workload="infer", batch=1, context_len=4096, top_k=100)
    assert out["method"] is None and out["tokens"] is None
    a100 = next(o for o in out["options"] if o["gpu_id"] == "a100-sxm4-80gb")
    assert a100["n_gpus"] == 2  # 138 GB of bf16 weights: two 80 GB cards at batch 1
    assert a100["zero_stage"] is None and a100["hours"] is None
    q = quote("a100-sxm4-80gb", "rental")
    assert a100["total_cny"] == pytest.approx(2 * HOURS_PER_MONTH * q.mid_cny)
    # sixteen 4K-token sequences add 11 GB of KV cache per card: two cards no longer hold it (at eight, 77.3 of 77.3
    # GB, the A100's small start-up budget of vLLM's 2,048 tokens leaves them just holding it)
    busy = rec(model="Llama-2-70B", workload="infer", batch=16, context_len=4096, top_k=100)
    assert next(o for o in busy["options"] if o["gpu_id"] == "a100-sxm4-80gb")["n_gpus"] == 4
    assert a100["tokens_per_s"] > 0 and "tokens/s" in a100["why"]
    # the 910B1 bin has no published memory bandwidth: listed, speed not estimated and said so
    ascend = next(o for o in out["options"] if o["gpu_id"] == "ascend-910b1")
    assert ascend["tokens_per_s"] is None and "bandwidth" in ascend["why"]
    assert out["best_value_metric"].startswith("lowest total_cny per token/s")


def test_deadline_is_ignored_for_inference_and_said_so():
    out = rec(model="Qwen2.5-7B", workload="infer", deadline_hours=1)
    note = next(a for a in out["assumptions"] if a["key"] == "deadline_hours")
    assert "ignored" in note["note"]
    assert out["options"]


def test_fp8_inference_drops_cards_without_fp8():
    out = rec(model="Qwen2.5-7B", workload="infer", precision="fp8", top_k=100)
    assert dropped(out)["a100-sxm4-80gb"]["reason"] == "unsupported"
    assert "FP8" in dropped(out)["a100-sxm4-80gb"]["reason_en"]
    assert "h100-sxm5-80gb" in ids(out["options"])


def test_generic_size_is_stated():
    out = rec(model="700亿参数", workload="finetune", tokens="10亿")
    assert out["tokens"] == 10**9
    assert any(a["key"] == "model_architecture" for a in out["assumptions"])


def test_valid_counts_ladder():
    assert valid_counts(1, 1024) == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    assert valid_counts(24, 1024) == [24, 48, 96, 192, 384, 768, 1024]
    assert valid_counts(2, 6) == [2, 4]
    assert valid_counts(16, 100) == [16, 32, 64, 96]


# --- errors ----------------------------------------------------------------------------------


def test_unknown_model():
    with pytest.raises(UnknownModel) as err:
        rec(model="GPT-unknown", workload="infer")
    assert err.value.field == "model"


@pytest.mark.parametrize("workload", ["train", "finetune"])
def test_training_without_tokens_asks_for_them(workload):
    with pytest.raises(InvalidInput) as err:
        rec(model="7B", workload=workload)
    assert err.value.field == "tokens"
    assert "tokens" in err.value.en and "'1B'" in err.value.en
    assert "token" in err.value.zh and "10亿" in err.value.zh


@pytest.mark.parametrize("tokens", [0, -5, "0B", "lots"])
def test_bad_tokens(tokens):
    with pytest.raises(InvalidInput) as err:
        RecommendInput(model="7B", workload="train", tokens=tokens)
    assert err.value.field == "tokens" and err.value.zh != err.value.en


@pytest.mark.parametrize("field", ["budget_cny", "deadline_hours"])
def test_non_positive_budget_or_deadline(field):
    with pytest.raises(InvalidInput) as err:
        rec(model="7B", workload="finetune", tokens="1B", **{field: -1})
    assert err.value.field == field and "0" in err.value.en and "0" in err.value.zh


def test_bad_workload_names_the_field():
    with pytest.raises(InvalidInput) as err:
        rec(model="7B", workload="serve")
    assert err.value.field == "workload"


def test_function_and_registry_agree():
    inp = RecommendInput(model="Qwen2.5-7B", workload="finetune", tokens="1B")
    assert recommend_gpus(inp).model_dump(mode="json") == rec(model="Qwen2.5-7B", workload="finetune", tokens="1B")


# --- CLI -------------------------------------------------------------------------------------

runner = CliRunner()


def test_cli_table_picks_and_dropped():
    res = runner.invoke(
        app,
        [
            "recommend",
            "--model",
            "70B",
            "--workload",
            "finetune",
            "--method",
            "lora",
            "--tokens",
            "1B",
            "--budget",
            "300000",
            "--deadline-hours",
            "72",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "GPU options for finetune (lora)" in res.output
    for word in ("cheapest", "fastest", "best value", "Dropped", "Assumptions", "No rental price on file"):
        assert word in res.output


def test_cli_json_china_and_buy():
    res = runner.invoke(
        app, ["recommend", "-m", "Qwen2.5-7B", "-w", "finetune", "-t", "1B", "--china", "--pricing", "buy", "--json"]
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["pricing"] == "buy" and out["china_available"] is True
    assert all(o["china_available"] for o in out["options"])


def test_cli_chinese_question_gets_chinese_text():
    res = runner.invoke(app, ["recommend", "-m", "700亿参数", "-w", "finetune", "-t", "10亿", "--budget", "100"])
    assert res.exit_code == 0, res.output
    assert "没有符合全部条件的 GPU" in res.output and "超出预算" in res.output


def test_cli_error_is_one_clean_line():
    res = runner.invoke(app, ["recommend", "--model", "7B", "--workload", "train"])
    assert res.exit_code == 2
    assert "error:" in res.output and "tokens" in res.output and "Traceback" not in res.output


def test_domestic_keeps_only_chinese_made_cards():
    r = tools.call("recommend_gpus", {"model": "Qwen2.5-7B", "workload": "infer", "batch": 50, "domestic": True})
    assert r["options"] and all(get_gpu(o["gpu_id"]).domestic for o in r["options"])
    dropped = {d["gpu"]: d["reason"] for d in r["dropped"]}
    assert dropped.get("NVIDIA H20 96GB") == "not_domestic"
    assert r["domestic"] is True


def test_a_dollar_budget_is_held_in_yuan_at_the_rate_it_states():
    r = tools.call("recommend_gpus", {"model": "70B", "workload": "infer", "budget_usd": 200_000, "pricing": "buy"})
    fx = next(a for a in r["assumptions"] if a["key"] == "fx_cny_per_usd")
    assert r["budget_usd"] == 200_000 and r["budget_cny"] == pytest.approx(200_000 * fx["value"])
    assert all(o["total_cny"] <= r["budget_cny"] for o in r["options"] if o["total_cny"] is not None)
    mine = tools.call(
        "recommend_gpus",
        {"model": "70B", "workload": "infer", "budget_usd": 200_000, "pricing": "buy", "fx_cny_per_usd": 7.0},
    )
    assert mine["budget_cny"] == 1_400_000
    with pytest.raises(InvalidInput) as err:
        tools.call("recommend_gpus", {"model": "7B", "workload": "infer", "budget_usd": 1, "budget_cny": 1})
    assert err.value.field == "budget_usd"


def test_an_fp8_native_model_is_sized_in_fp8_where_the_gpu_computes_in_it():
    """Issue 25 (cause 10): DeepSeek-R1 is published in FP8 (671B: ~671 GB of weights); recommendations sized it in
    bf16 (1.3 TB), so one 8 × H200 machine, which serves it in FP8, was never offered."""
    out = tools.call("recommend_gpus", {"model": "DeepSeek-R1", "workload": "infer"})
    precision = next(a for a in out["assumptions"] if a["key"] == "precision")
    assert precision["value"] == "fp8" and precision["default"]
    h200 = [o for o in out["options"] if "H200" in o["gpu"]]
    assert h200 and min(o["n_gpus"] for o in h200) == 8
    a100 = [o for o in out["options"] if "A100" in o["gpu"]]
    assert all(o["n_gpus"] >= 16 for o in a100)  # no FP8 tensor cores: bf16 weights


def test_a_euro_budget_is_held_in_yuan_at_the_dated_euro_rate():
    r = tools.call("recommend_gpus", {"model": "7B", "workload": "infer", "budget_eur": 1000, "pricing": "buy"})
    fx = next(a for a in r["assumptions"] if a["key"] == "fx_cny_per_eur")
    assert fx["value"] == 7.85 and "eatsip365.com" in fx["note"]
    assert r["budget_eur"] == 1000 and r["budget_cny"] == 7850
    assert r["options"] and all(o["total_cny"] <= 7850 for o in r["options"] if o["total_cny"] is not None)
    with pytest.raises(InvalidInput):
        tools.call("recommend_gpus", {"model": "7B", "workload": "infer", "budget_eur": 1, "budget_usd": 1})
