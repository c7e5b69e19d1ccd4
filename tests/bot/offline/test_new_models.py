"""The 2025-2026 models in questions (issue 25 item 3): their names are read from what people type, and the fit
answers say what the publishers state (gpt-oss-120b on one H100 80GB; Llama 4 Scout on one H100 in int4)."""

import pytest

from bot.offline.understand.parse import parse


@pytest.mark.parametrize(
    ("question", "model_id"),
    [
        ("gpt-oss-120b 能在一张 H100 80GB 上跑吗", "gpt-oss-120b"),
        ("openai/gpt-oss-120b on 2x A100?", "gpt-oss-120b"),
        ("gpt oss 20b 4090 能跑吗", "gpt-oss-20b"),
        ("GPT-OSS-20B 微调要多少显存", "gpt-oss-20b"),
        ("Can Llama 4 Scout run on one H100?", "llama-4-scout"),
        ("llama4 scout int4 单卡 H100", "llama-4-scout"),
        ("Llama-4-Maverick 要几张 H200", "llama-4-maverick"),
        ("Qwen3-Next-80B-A3B 推理需要几张 H100", "qwen3-next-80b-a3b"),
        ("千问3-Next-80B 用 H20 部署", "qwen3-next-80b-a3b"),
        ("MiniMax-M1-80k on 8x H800", "minimax-m1"),
        ("文心4.5-300B-A47B 需要几张 H20", "ernie-4.5-300b-a47b"),
        ("ERNIE-4.5-21B-A3B on an RTX 4090?", "ernie-4.5-21b-a3b"),
    ],
)
def test_the_names_people_type_are_the_catalog_models(question, model_id):
    assert parse(question).models == [model_id]


def test_gpt_oss_120b_fits_one_h100_with_its_mxfp4_weights(advisor):
    trace = advisor.ask("gpt-oss-120b 能在一张 H100 80GB 上跑吗")
    assert "放得下" in trace.answer and "gpt-oss-120b" in trace.answer
    assert "| 权重 | 65.2 GB |" in trace.answer
    assert "路由专家保持发布时的 mxfp4 格式" in trace.answer


def test_llama4_scout_on_one_h100_needs_int4(advisor):
    trace = advisor.ask("Can Llama 4 Scout run on one H100?")
    assert "does not fit" in trace.answer  # 217 GB of bf16 weights
    assert "Quantize the weights to int4" in trace.answer and "64.0 GB per GPU" in trace.answer
    int4 = advisor.ask("Llama 4 Scout in int4 on one H100?")
    assert "It fits" in int4.answer


def test_gemma3_is_read_by_the_names_people_type():
    for question in (
        "Gemma 3 27B 用 4090 能跑吗",
        "gemma3:27b on an RTX 5090?",
        "google/gemma-3-27b-it 推理要几张 L40S",
    ):
        assert parse(question).models == ["gemma-3-27b"], question
