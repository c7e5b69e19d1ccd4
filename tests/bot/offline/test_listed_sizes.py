"""Sizes listed with the unit on the last one only ("llama7/13/70b", "7、14、72B") are each a size asked: the middle
ones were read as bare numbers and their part of the answer was missing. A list with no size unit at its end
(hours, card counts, dates) is not sizes."""

from __future__ import annotations

import pytest
from asking import ask

from bot.offline.understand.request.reader import read


@pytest.mark.parametrize(
    ("text", "sizes"),
    [
        ("How many A100 80G to fine tune llama7/13/70b?", ["13B", "70B"]),
        ("微调 Baichuan2 的 7/13B 各需要几张 4090？", ["13B"]),
        ("Qwen2.5 的 7、14、72B 推理各要多少显存", ["14B", "72B"]),
        ("Mistral 7, 22, 123B: which fits one H100?", ["22B", "123B"]),
    ],
)
def test_each_listed_size_is_read_in_order(text, sizes):
    models = read(text).parsed.models
    assert [m for m in models if m in sizes] == sizes
    assert len(models) == len(sizes) + 1  # the first size, read with the name or bare


@pytest.mark.parametrize(
    ("text", "models"),
    [
        ("每天 7/24 小时跑 70B 推理", ["70B"]),
        ("1/2/4/8 张 A100 能跑 70B 吗", ["70B"]),
        ("2023/12/31 之前训完 7B", ["7B"]),
    ],
)
def test_a_list_without_a_size_unit_is_not_sizes(text, models):
    assert read(text).parsed.models == models


def test_the_middle_size_gets_its_part_of_the_answer(advisor, caplog):
    (t,) = ask(advisor, caplog, "How many A100 80GB to full fine-tune llama 7/13/70b?")
    assert t.answer.index("13B") < t.answer.index("70B")
    assert "208 GB" in t.answer  # the 13B's model states (16 bytes per parameter)


def test_the_middle_size_gets_its_part_of_the_answer_zh(advisor, caplog):
    (t,) = ask(advisor, caplog, "Qwen2.5 的 7、14、72B 推理各要多少显存？")
    assert "14B" in t.answer and "72B" in t.answer
