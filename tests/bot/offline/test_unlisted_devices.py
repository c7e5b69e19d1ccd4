"""Accelerators the catalog does not list, named without a model number (a Tenstorrent QuietBox, an AMD Strix
Halo, an Apple M-series, a Jetson): said as unknown, never silently computed on the default A100; with the memory
said beside the name, the fit is checked on that memory (issue 23, class 6)."""

from __future__ import annotations

import pytest

from bot.offline.understand.parse import parse


@pytest.mark.parametrize(
    ("question", "unknown"),
    [
        ("Llama-3.1-70B on a Tenstorrent QuietBox gives 1.4 tokens/s, expected?", "Tenstorrent QuietBox"),
        ("Qwen3-30B-A3B on Strix Halo 128GB, 36 tok/s normal?", "Strix Halo"),
        ("M2 Ultra 192GB 能跑 70B 吗", "M2 Ultra"),
        ("jetson orin 跑 7B 能多快", "jetson orin"),
    ],
)
def test_an_unlisted_accelerator_is_an_unknown_card(question, unknown):
    p = parse(question)
    assert unknown in p.unknown_gpus and not p.gpus


def test_a_listed_card_stays_the_catalogs():
    assert parse("用昆仑芯 P800 训练 7B").gpus == ["kunlunxin-p800"]


def test_the_memory_said_beside_it_is_what_the_fit_is_checked_on(advisor):
    t = advisor.ask("M2 Ultra 192GB 能跑 Llama-3-70B 吗")
    assert "目录里没有“M2 Ultra”" in t.answer and "192 GB" in t.answer and "A100 SXM4" not in t.answer
    en = advisor.ask("Llama-3.1-70B on a Tenstorrent QuietBox gives 1.4 tokens/s, expected?")
    assert "Tenstorrent QuietBox" in en.answer and "A100 SXM4" not in en.answer  # (an example hint may name one)


@pytest.mark.parametrize(
    ("question", "gpus"),
    [
        ("qwen2.5-vl-72b oom in 4 A100\n- GPU type: NVIDIA A100-PCIE-40GB\n- GPU number: 8", ["a100-pcie-40gb"]),
        ("4 张 A100，型号 A100-SXM4-40GB，跑 70B 够吗", ["a100-sxm4-40gb"]),
        ("H100 还是 H100 NVL 跑 70B", ["h100-sxm5-80gb", "h100-nvl-94gb"]),  # the choice asked keeps both
        ("A100 vs H100 for 70B", ["a100-sxm4-80gb", "h100-sxm5-80gb"]),
    ],
)
def test_a_card_named_by_family_and_by_variant_is_the_variant(question, gpus):
    assert parse(question).gpus == gpus
