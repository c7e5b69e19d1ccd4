"""An Ollama tag names the model and its size ("deepseek-r1:32b", "qwen2.5:7b"), and a DeepSeek-R1 size the 671B
model does not have is its distill (issue 23, class 6: "Deepseek R1 32b on a 3060" was sized as the 671B R1)."""

from __future__ import annotations

import pytest

from bot.offline.understand.parse import parse


@pytest.mark.parametrize(
    ("question", "model"),
    [
        ("ollama run deepseek-r1:32b on a 3060 12GB, GPU at 1-3%", "deepseek-r1-distill-qwen-32b"),
        ("Deepseek R1 32b on a 3060", "deepseek-r1-distill-qwen-32b"),
        ("deepseek-r1:8b 能在 4060 上跑吗", "deepseek-r1-distill-llama-8b"),
        ("DeepSeek-R1 70B 要几张 4090", "deepseek-r1-distill-llama-70b"),
        ("ollama run qwen2.5:7b", "qwen2.5-7b"),
        ("DeepSeek-R1 671B 要几张卡", "deepseek-r1"),
    ],
)
def test_a_tag_or_a_distill_size_names_that_model(question, model):
    assert parse(question).models == [model]


def test_a_device_index_is_no_tag():
    assert not parse("cuda:0 OOM").models
