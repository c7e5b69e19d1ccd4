"""The consumer cards people run models on (issue 25 item 3): a question naming one is read as that card, a
variant the catalog lacks is said as an unknown card (never the listed sibling's memory), a memory size alone
picks a card of that size, and a fit on one of them is answered with figures."""

from __future__ import annotations

import re

import pytest
from asking import ask, calls

from bot.offline.understand.cards.memory import card_by_memory
from bot.offline.understand.parse import parse
from tools.catalog import lookup as catalog

NAMED = {
    "我的显卡是2080Ti 11G，想微调 Qwen2.5-7B": "rtx-2080-ti",
    "3070 能跑 Qwen2.5-7B 吗": "rtx-3070",
    "3070Ti 8G 能跑 Qwen2.5-7B 吗": "rtx-3070-ti",
    "RTX 3070 Ti 8 GB 能跑 llama 7B 吗": "rtx-3070-ti",
    "3090 Ti 跑 70B 4bit 够吗": "rtx-3090-ti",
    "RTX 4060 8G 能跑 Qwen2.5-7B 吗": "rtx-4060",
    "4060Ti 8G 能跑什么模型": "rtx-4060-ti-8gb",
    "4060 Ti 16G 跑 Qwen2.5-14B 4bit 够吗": "rtx-4060-ti-16gb",
    "我有一张 4070 显卡，能跑 14B 吗": "rtx-4070",
    "4070 Ti 12G 能跑 14B 吗": "rtx-4070-ti",
    "RTX 4070S 12G 能跑 DeepSeek-R1-Distill-Qwen-14B 吗": "rtx-4070-super",
    "4070TiS 能不能 LoRA 微调 7B": "rtx-4070-ti-super",
    "Can a 4070 Ti Super 16GB run Llama-3-8B in fp16?": "rtx-4070-ti-super",
    "RTX 4080 16GB 跑 Qwen2.5-14B": "rtx-4080",
    "4080S 能跑 Qwen2.5-32B 吗": "rtx-4080-super",
    "5060 Ti 16G 能跑 Qwen3-30B-A3B 吗": "rtx-5060-ti-16gb",
    "5070 Ti 能跑 Qwen2.5-14B 吗": "rtx-5070-ti",
    "RTX 5080 16G 跑 Gemma 2 27B q4": "rtx-5080",
}


@pytest.mark.parametrize(("question", "gpu_id"), sorted(NAMED.items()))
def test_a_question_naming_the_card_is_read_as_that_card(question, gpu_id):
    p = parse(question)
    assert p.gpus == [gpu_id] and p.unknown_gpus == []


@pytest.mark.parametrize(
    ("question", "said"),
    [
        ("3060 Ti 能跑 7B 吗", "3060 Ti"),  # the catalog has the 12 GB RTX 3060, not the 8 GB 3060 Ti
        ("3080 Ti 12G 跑 14B", "3080 Ti 12G"),  # nor the 3080 Ti (the 10 GB RTX 3080 is listed)
        ("5060 Ti 8G 能跑 7B 吗", "5060 Ti 8G"),  # only the 16 GB 5060 Ti is listed
        ("2080Ti 22G 跑 32B 4bit", "2080Ti 22G"),  # a board rebuilt with 22 GB is not the 11 GB card
    ],
)
def test_a_variant_the_catalog_lacks_is_an_unknown_card_not_its_sibling(question, said):
    p = parse(question)
    assert p.gpus == [] and p.unknown_gpus == [said]


@pytest.mark.parametrize("question", ["4090 24G 跑 70B", "T4 15G 能跑 7B 吗", "RTX 3060 12GB 跑 7B"])
def test_a_cards_own_memory_after_its_name_keeps_the_card(question):
    assert len(parse(question).gpus) == 1 and parse(question).unknown_gpus == []


def test_a_memory_size_alone_picks_a_card_of_that_size():
    assert card_by_memory(8) == "rtx-3070"  # the 8 GB card longest on the market (there was none before)
    assert card_by_memory(11) == "rtx-2080-ti"  # no longer the 10 GB RTX 3080 "a little under 11"
    sixteen = catalog.get_gpu(card_by_memory(16))
    assert sixteen.memory_gb == 16 and sixteen.vendor == "nvidia" and sixteen.china.available


def test_a_bare_4060_ti_is_the_8gb_model_and_says_so():
    assert catalog.get_gpu("4060 Ti").memory_gb == 8 and catalog.get_gpu("4060Ti 16G").memory_gb == 16
    assert "resolves" in catalog.get_gpu("4060 Ti").notes


CONSUMER_NEW = [
    "rtx-3070",
    "rtx-3070-ti",
    "rtx-3090-ti",
    "rtx-4060",
    "rtx-4060-ti-8gb",
    "rtx-4060-ti-16gb",
    "rtx-4070",
    "rtx-4070-ti",
    "rtx-4070-super",
    "rtx-4070-ti-super",
    "rtx-4080",
    "rtx-4080-super",
    "rtx-5060-ti-16gb",
    "rtx-5070-ti",
    "rtx-5080",
]


@pytest.mark.parametrize("gpu_id", CONSUMER_NEW)
def test_geforce_tensor_rate_is_the_fp32_accumulate_rate(gpu_id):
    """Twice the FP32 rate on Ampere GA10x/Ada/Blackwell GeForce (the RTX 4090's 82.6 -> 165.2): never the
    FP16-accumulate or sparse headline, which would double or quadruple every training-time estimate."""
    g = catalog.get_gpu(gpu_id)
    assert g.segment == "consumer" and g.bf16_tflops == g.fp16_tflops
    assert g.fp16_tflops == pytest.approx(2 * g.fp32_tflops, rel=0.01)
    if g.fp8_tflops is not None:
        assert g.fp8_tflops == pytest.approx(2 * g.fp16_tflops, rel=0.01)


def test_turing_has_no_bf16_and_its_rate_is_four_times_fp32():
    g = catalog.get_gpu("2080 Ti")
    assert g.bf16_tflops is None and g.tf32_tflops is None
    assert g.fp16_tflops == pytest.approx(4 * g.fp32_tflops, rel=0.01) and g.memory_gb == 11


def test_eight_lane_cards_store_half_the_x16_bus():
    assert catalog.get_gpu("4060").interconnect_gb_s == 32  # PCIe 4.0 x8
    assert catalog.get_gpu("5060 Ti").interconnect_gb_s == 64  # PCIe 5.0 x8
    assert catalog.get_gpu("5080").interconnect_gb_s == 128  # PCIe 5.0 x16


def test_a_7b_on_a_3070_ti_does_not_fit_in_bf16_and_fits_in_int4(advisor, caplog):
    (t,) = ask(advisor, caplog, "3070Ti 8G 能跑 Qwen2.5-7B 吗")
    fits = calls(t, "fit_inference")
    assert fits and {c.input["gpu"] for c in fits} == {"rtx-3070-ti"}
    assert t.answer.startswith("**放不下。**") and "NVIDIA GeForce RTX 3070 Ti" in t.answer
    assert "7.2 GiB" in t.answer  # the 8 GB card's usable share, not another card's memory
    int4 = re.search(r"int4 量化权重 → 每卡约 ([\d.]+) GB", t.answer)
    assert int4 and float(int4.group(1)) < 7.7


def test_a_listed_card_with_an_unlisted_memory_is_checked_on_the_memory_given(advisor, caplog):
    (t,) = ask(advisor, caplog, "5060 Ti 8G 能跑 Qwen2.5-7B 吗")
    assert "目录里没有“5060 Ti 8G”" in t.answer and "按您说的显存 8 GB 核对" in t.answer
    assert "16 GB" not in t.answer  # never the listed 16 GB model's memory
