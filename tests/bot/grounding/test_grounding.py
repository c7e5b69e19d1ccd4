"""Number grounding: extraction (bot/grounding/numbers.py), matching the tool-input check (inputs.py) and the repair helpers (repair.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from bot.grounding.check import GroundingResult, ground, unit_from_key
from bot.grounding.numbers import extract_numbers
from bot.grounding.repair import drop_ungrounded_sentences

GOLDEN = yaml.safe_load((Path(__file__).parents[2] / "golden" / "grounding.yaml").read_text(encoding="utf-8"))


def test_golden_file_is_large_and_bilingual():
    assert len(GOLDEN) >= 40
    assert len({row["id"] for row in GOLDEN}) == len(GOLDEN)
    assert any(row["id"].startswith("zh-") for row in GOLDEN) and any(row["id"].startswith("en-") for row in GOLDEN)
    assert all(row.get("origin") for row in GOLDEN)


@pytest.mark.parametrize("row", GOLDEN, ids=[row["id"] for row in GOLDEN])
def test_golden(row):
    result = ground(row["answer"], row.get("tool_outputs") or {}, row.get("passages") or {}, row["question"])
    assert [[n.text, n.source_id] for n in result.numbers] == row["grounded"]
    assert [u.text for u in result.ungrounded] == row["ungrounded"]
    assert result.ok is (not row["ungrounded"])


# ---- extraction ---------------------------------------------------------------------------------
def _vu(text: str) -> list[tuple[float, str]]:
    return [(n.value, n.unit) for n in extract_numbers(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("需要 6万", [(60000, "")]),
        ("2万亿 token", [(2e12, "tokens")]),
        ("700亿参数", [(7e10, "params")]),
        ("10亿 token", [(1e9, "tokens")]),
        ("1B token", [(1e9, "tokens")]),
        ("2T tokens", [(2e12, "tokens")]),
        ("70B", [(7e10, "params")]),
        ("7 billion parameters", [(7e9, "params")]),
        ("共 184,320 卡时", [(184320, "GPU-h")]),
        ("1.2e21 FLOPs", [(1.2e21, "FLOP")]),
        ("1.2×10^21 FLOPs", [(1.2e21, "FLOP")]),
        ("1.3×10²¹", [(1.3e21, "")]),
        ("8×H800", [(8, "GPU")]),
        ("8x A100", [(8, "GPU")]),
        ("H800×16", [(16, "GPU")]),
        ("8 A100 GPUs", [(8, "GPU")]),
        ("快 3.2×", [(3.2, "x")]),
        ("2x faster", [(2, "x")]),
        ("3.2 倍", [(3.2, "x")]),
        ("6–9万", [(60000, ""), (90000, "")]),
        ("6-9万元", [(60000, "CNY"), (90000, "CNY")]),
        ("15~25 元/卡时", [(15, "CNY/GPU-h"), (25, "CNY/GPU-h")]),
        ("¥30,000–¥45,000", [(30000, "CNY"), (45000, "CNY")]),
        ("$1.8–2.5/GPU-hour", [(1.8, "USD/GPU-h"), (2.5, "USD/GPU-h")]),
        ("¥1.2万/月", [(12000, "CNY/month")]),
        ("约 123.5 万元", [(1235000, "CNY")]),
        ("1.2亿元", [(1.2e8, "CNY")]),
        ("0.8 元/度", [(0.8, "CNY/kWh")]),
        ("45 tokens/s", [(45, "tokens/s")]),
        ("900 GB/s 和 3.35 TB/s", [(900, "GB/s"), (3.35, "TB/s")]),
        ("80 GiB 即 85.9 GB，A100 80G", [(80, "GiB"), (85.9, "GB"), (80, "GB")]),
        ("1.12 TB", [(1.12, "TB")]),
        ("989 TFLOPS，624 TOPS", [(989, "TFLOPS"), (624, "TOPS")]),
        ("700 W，5.6 kW，4.9 万度电", [(700, "W"), (5.6, "kW"), (49000, "kWh")]),
        (
            "3.5 天，83 小时，10 hours，2 周，14 个月，3 年",
            [(3.5, "day"), (83, "h"), (10, "h"), (2, "week"), (14, "month"), (3, "year")],
        ),
        ("MFU 40%，利用率 99.5％", [(40, "%"), (99.5, "%")]),
        ("8 张卡，16 张 H800，2 台服务器", [(8, "GPU"), (16, "GPU"), (2, "node")]),
        ("2.788M H800 GPU 小时", [(2.788e6, "GPU-h")]),
        ("128K 上下文", [(128000, "")]),
        ("Owning costs -30%", [(30, "%")]),
        ("P99 延迟 350ms", [(350, "ms")]),
    ],
)
def test_extract_values_and_units(text, expected):
    got = _vu(text)
    assert [u for _, u in got] == [u for _, u in expected]
    assert [v for v, _ in got] == pytest.approx([v for v, _ in expected])


@pytest.mark.parametrize(
    "text",
    [
        "A100、H800、H100、H20、L40S、B200、MI300X、RTX 4090、910B、昇腾910B、Ascend 910B、4090",
        "Llama-3.1-8B、Qwen2.5-72B、DeepSeek-V3、GPT-4o、Mixtral 8x7B、Llama 3、Qwen 2.5",
        "CUDA 12.1、PyTorch 2.3、vLLM 0.6、Python 3.11、CANN 8.0、ROCm 6.1、PCIe 5.0 x16、NVLink 4",
        "ZeRO-3、fp16、bf16、int4、NF4、fp8、W4A16、Top-5、A100-80GB、call_1",
        "4-bit 量化、8 bit、16 位精度、3D 并行、1F1B、2nd",
        "见 [1]、[^2]、【3】、[kb:tco-breakeven#3]、kb:prices#2",
        "2026-11-29、2024年5月、2023年、in 2024、Nov 2024、(2023)、10:30、截至 2025 年底",
        "`torchrun --nproc_per_node 8`、https://example.com/a/123、[链接](https://x.org/v/2)",
        "第 3 步、step 1、方案 2、option 3、#4、表 1、Figure 2",
        "## 2.1 成本\n1. 先做\n2) 再做\n3、最后\n（4）备注\n- 5. 不是数字",
        "```\nbatch = 64\nlr = 3e-4\n```",
    ],
)
def test_ignored_spans(text):
    assert extract_numbers(text) == []


def test_span_and_text_as_written():
    text = "总费用约 6–9万元，单卡 1,120 GB。"
    numbers = extract_numbers(text)
    assert [n.text for n in numbers] == ["6–9万元", "6–9万元", "1,120 GB"]
    for n in numbers:
        assert text[n.start : n.end] == n.text


@pytest.mark.parametrize(
    ("text", "tolerance"),
    [
        ("172万", 5000),
        ("3.5 天", 0.05),
        ("1,720,320", 0.5),
        ("1,200 GB", 50),
        ("1,120 GB", 0.5),
        ("1,720,000", 5000),
        ("80 GB", 0.5),
        ("100 元", 5),
        ("1.26e21", 5e18),
    ],
)
def test_tolerance_is_half_the_last_written_digit(text, tolerance):
    (n,) = extract_numbers(text)
    assert n.tolerance == pytest.approx(tolerance)


@pytest.mark.parametrize(
    ("text", "prose"),
    [
        ("给出 3 个建议", True),
        ("有 2 options", True),
        ("TP=8", False),
        ("MFU 约 4", False),
        ("batch 2", False),
        ("| H800 | 4 |", False),
        ("8 张卡", False),
        ("0.5", False),
        ("12 个", False),
        ("3:1", False),
    ],
)
def test_small_integer_policy(text, prose):
    (n, *_) = extract_numbers(text)
    assert n.prose_count is prose


def test_k_suffix_has_binary_reading():
    (n,) = extract_numbers("128K 上下文")
    assert n.alt_values == pytest.approx((131072,))


@given(st.floats(min_value=0.01, max_value=1e7, allow_nan=False))
def test_formatted_figures_round_trip(value):
    for text, unit in ((f"{value:,.2f} GB", "GB"), (f"{value:.1f} 小时", "h"), (f"¥{value:,.0f}", "CNY")):
        (n,) = extract_numbers(f"约 {text}。")
        assert n.unit == unit
        assert n.value == pytest.approx(float(text.split()[0].lstrip("¥").replace(",", "")))


# ---- matching -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("key", "unit"),
    [
        ("per_gpu_gb", "GB"),
        ("memory_reported_gib", "GiB"),
        ("total_cny", "CNY"),
        ("low_cny", "CNY"),
        ("price_cny_per_hour", "CNY/h"),
        ("hours", "h"),
        ("days", "day"),
        ("breakeven_months", "month"),
        ("gpu_hours", "GPU-h"),
        ("bf16_tflops", "TFLOPS"),
        ("total_flops", "FLOP"),
        ("tdp_w", "W"),
        ("decode_tokens_per_s", "tokens/s"),
        ("mfu", "fraction"),
        ("n_gpus", "GPU"),
        ("min_gpus", "GPU"),
        ("params_b", "B_params"),
        ("bandwidth_gb_s", "GB/s"),
        ("tp", None),
        ("fits", None),
    ],
)
def test_unit_from_key(key, unit):
    assert unit_from_key(key) == unit


def _one(answer, tools=None, passages=None, question=""):
    result = ground(answer, tools or {}, passages or {}, question)
    return [n.source_id for n in result.numbers], [u.text for u in result.ungrounded]


def test_gib_and_gb_convert_both_ways():
    assert _one("约 85.9 GB", {"c": {"memory_reported_gib": 80}}) == (["c"], [])
    assert _one("约 74.5 GiB", {"c": {"memory_gb": 80}}) == (["c"], [])
    assert _one("约 90 GB", {"c": {"memory_gb": 80}}) == ([], ["90 GB"])


def test_fraction_and_percent():
    assert _one("MFU 45%", {"c": {"mfu": 0.45}}) == (["c"], [])
    assert _one("MFU 45%", {"c": {"ratio": 0.45}}) == (["c"], [])  # a leaf with no unit: fraction or %
    assert _one("MFU 46%", {"c": {"mfu": 0.45}}) == ([], ["46%"])


def test_unit_dimension_must_agree():
    # 72 hours is not 72 GB, even though the number is the same
    assert _one("约 72 小时", {"c": {"usable_gb": 72.0}}) == ([], ["72 小时"])
    # a figure written without a unit matches by the number as written
    assert _one("可用 72", {"c": {"usable_gb": 72.0}}) == (["c"], [])


def test_source_priority_tool_then_passage_then_question():
    tools, passages = {"call_1": {"capacity_gb": 80}}, {"p#1": "A100 有 80 GB 显存"}
    assert _one("80 GB", tools, passages, "80 GB 够吗") == (["call_1"], [])
    assert _one("80 GB", {}, passages, "80 GB 够吗") == (["p#1"], [])
    assert _one("80 GB", {}, {}, "80 GB 够吗") == (["question"], [])
    assert _one("80 GB", {}, {}, "") == ([], ["80 GB"])


def test_rel_tol_is_a_parameter():
    tools = {"c": {"hours": 100.0}}
    assert ground("约 103 小时", tools, {}, "").ok is False
    assert ground("约 103 小时", tools, {}, "", rel_tol=0.05).ok is True


def test_pydantic_tool_output_is_walked():
    from pydantic import BaseModel

    class Out(BaseModel):
        per_gpu_gb: float

    assert _one("需要 61.5 GB", {"c": Out(per_gpu_gb=61.5)}) == (["c"], [])


def test_dumps_fit_the_answer_trace():
    from bot.core.trace import NumberRef as TraceNumber
    from bot.core.trace import Ungrounded as TraceUngrounded

    result = ground("需要 61.5 GB，约 9 天。", {"c": {"per_gpu_gb": 61.5}}, {}, "")
    assert result.numbers[0].model_dump() == {"text": "61.5 GB", "value": 61.5, "unit": "GB", "source_id": "c"}
    TraceNumber(**result.numbers[0].model_dump())
    TraceUngrounded(**result.ungrounded[0].model_dump())


# ---- repair helpers -----------------------------------------------------------------------------
TOOLS = {"call_1": {"per_gpu_gb": 1120.4, "usable_gb": 72.0, "days": 3.47}}


def _repair(answer: str) -> str:
    result = ground(answer, TOOLS, {}, "")
    repaired = drop_ungrounded_sentences(answer, result)
    assert ground(repaired, TOOLS, {}, "").ok  # what is left is clean
    return repaired


def test_drop_zh_sentences():
    answer = "单卡需要约 1,120 GB。可用约 72 GB！成本约 9.9 万元。约需 3.5 天？"
    assert _repair(answer) == "单卡需要约 1,120 GB。可用约 72 GB！约需 3.5 天？"


def test_drop_en_sentences_keeps_decimals_whole():
    answer = "It needs 1,120 GB per GPU. It costs $9,900 in total. It takes 3.5 days."
    assert _repair(answer) == "It needs 1,120 GB per GPU. It takes 3.5 days."


def test_drop_list_items_and_headings():
    answer = "## 结论\n\n- 显存：1,120 GB\n- 成本：9.9 万元\n- 时间：3.5 天\n\n## 成本 9.9 万元\n\n以上。\n"
    assert _repair(answer) == "## 结论\n\n- 显存：1,120 GB\n- 时间：3.5 天\n\n以上。\n"


def test_drop_table_rows_keeps_header():
    answer = "| 项 | 值 |\n|---|---|\n| 显存 | 1,120 GB |\n| 成本 | 9.9 万元 |\n\n完。"
    assert _repair(answer) == "| 项 | 值 |\n|---|---|\n| 显存 | 1,120 GB |\n\n完。"


def test_drop_table_without_rows_goes_whole():
    answer = "对比：\n\n| GPU | 天数 |\n|---|---|\n| H800 | 12.3 |\n| A100 | 9.9 |\n\n完。"
    assert _repair(answer) == "对比：\n\n完。"


def test_drop_figure_in_table_header_becomes_dash():
    answer = "| 方案 | 9.9 万元 |\n|---|---|\n| A | 72 GB |\n"
    assert _repair(answer) == "| 方案 | — |\n|---|---|\n| A | 72 GB |\n"


def test_drop_keeps_markdown_balanced_and_code_untouched():
    answer = "**需要 1,120 GB。成本 9.9 万元。**\n\n```\nprice = 99000\n```\n"
    repaired = _repair(answer)
    assert repaired == "**需要 1,120 GB。**\n\n```\nprice = 99000\n```\n"
    answer = "**需要 1,120 GB。成本 9.9 万元**，约 3.5 天。"
    assert _repair(answer) == "需要 1,120 GB。"


def test_drop_is_identity_when_nothing_is_ungrounded():
    answer = "需要 1,120 GB。"
    assert drop_ungrounded_sentences(answer, GroundingResult(numbers=[], ungrounded=[])) == answer


def test_provenance_strings_are_not_sources_but_notes_are():
    tools = {
        "c": {
            "sources": [
                {"title": "H100 datasheet (989 TFLOPS)", "url": "https://example.com/989", "as_of": "2026-11-29"}
            ],
            "notes": "NVLink cut to 400 GB/s",
        }
    }
    assert _one("400 GB/s，989 TFLOPS", tools) == (["c"], ["989 TFLOPS"])


def test_a_name_the_user_typed_and_we_quote_back_is_not_a_new_figure():
    answer = "未知的模型“通义30万”。"
    assert ground(answer, {}, {}, "通义30万 能跑吗").ok
    assert not ground(answer, {}, {}, "通义 能跑吗").ok  # not what the user wrote: still flagged


# ---- figures in disguise (issue 17) -------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "value", "unit", "span"),
    [
        ("只要两元/卡时", 2, "CNY/GPU-h", "两元/卡时"),
        ("总价十万元", 1e5, "CNY", "十万元"),
        ("官方价壹万元", 1e4, "CNY", "壹万元"),
        ("预算三千五百元", 3500, "CNY", "三千五百元"),
        ("MFU 百分之五十", 50, "%", "百分之五十"),
        ("约 ８０ GB", 80, "GB", "８０ GB"),
        ("优惠 1\u200b200 元", 1200, "CNY", "1\u200b200 元"),
        ("只要 1 2 0 0 元", 1200, "CNY", "1 2 0 0 元"),
        ("共 1\u2009000\u2009000 tokens", 1e6, "tokens", "1\u2009000\u2009000 tokens"),
        ("训练 1900.0 小时", 1900, "h", "1900.0 小时"),
        ("预算 2024.5 万元", 20_245_000, "CNY", "2024.5 万元"),
        ("约 ٩٩ 元", 99, "CNY", "٩٩ 元"),
        ("三点五倍", 3.5, "x", "三点五倍"),
    ],
)
def test_figures_in_disguise_are_extracted_with_the_span_a_reader_sees(text, value, unit, span):
    (n,) = extract_numbers(text)
    assert (n.value, n.unit, n.text) == (pytest.approx(value), unit, span)
    assert text[n.start : n.end] == span


@pytest.mark.parametrize(
    "text", ["一些人统一了口径", "两种方案", "千万不要", "万一不够", "1000 元一张", "二〇二四年发布"]
)
def test_chinese_words_with_numerals_are_not_figures(text):
    assert [n.text for n in extract_numbers(text) if n.text != "1000 元"] == []


def test_injected_figures_in_disguise_are_ungrounded_and_dropped():
    tools = {"call_1": {"total_cny": 2500.0}}
    answer = "总价 2500 元。其实只要两元/卡时。内部价 ９９ 元。"
    result = ground(answer, tools, {}, "H100 跑 100 卡时多少钱？")
    assert [u.text for u in result.ungrounded] == ["两元/卡时", "９９ 元"]
    assert drop_ungrounded_sentences(answer, result) == "总价 2500 元。"


def test_a_question_number_grounds_only_the_same_quantity():
    q = "8 张 H100 跑 100 卡时"
    assert _one("需要 100 卡时", question=q) == (["question"], [])
    assert _one("每卡时 100 元", question=q) == ([], ["100 元"])
    assert _one("约 8 小时", question=q) == ([], ["8 小时"])
    assert _one("预算 50 万元", question="预算 50 万") == ([], ["50 万元"])  # a unitless number is not a price


def test_unitless_numbers_in_tool_text_do_not_ground_a_price():
    tools = {"c": {"notes": "rank 99 of the list"}}
    assert _one("99 元", tools) == ([], ["99 元"])
    assert _one("排名 99", tools) == (["c"], [])


def test_a_tool_call_fed_a_made_up_price_is_not_a_source():
    from bot.core.trace import ToolCall
    from bot.grounding.inputs import trusted_tool_outputs

    q = "H100 跑 100 卡时多少钱？"
    made_up = ToolCall(
        id="call_1",
        tool="run_cost",
        input={"gpu": "H100", "gpu_hours": 100, "price_cny_per_hour": 1},
        output={"total_cny": 100.0},
    )
    honest = ToolCall(
        id="call_2", tool="run_cost", input={"gpu": "H100", "gpu_hours": 100}, output={"total_cny": 2500.0}
    )
    trusted, tainted = trusted_tool_outputs([made_up, honest], q)
    assert list(trusted) == ["call_2"] and tainted == {"call_1": ["price_cny_per_hour"]}


def test_a_notes_figure_grounds_only_beside_its_citation():
    from bot.core.trace import Citation
    from bot.grounding.check import citation_markers

    cite = Citation(id="kb:prices#1", doc_id="kb:prices", title="prices", text="H100 租金 12 元/卡时。", source="x")
    shown = citation_markers([cite])
    passages = {cite.id: cite.text}
    assert ground("H100 租金 12 元/卡时 [1]。", {}, passages, "", shown=shown).ok
    assert not ground("H100 租金 12 元/卡时。", {}, passages, "", shown=shown).ok
    assert not ground("H100 租金 12 元/卡时。\n\n见 [1]。", {}, passages, "", shown=shown).ok
