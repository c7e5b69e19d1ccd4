"""A model the asker names is the model sized (issue 23, class missed_model): the first Baichuan-13B is its own
catalog model (13.26B, a 64,000-token vocabulary), not Baichuan2-13B; a name glued to the Chinese before it
("请问Orion-14B-Chat-RAG", "微调Mini-Gemini-8x7B") is read whole; and a name the catalog lacks keeps its place
among the models in the order written (the asker's own model before the one it is set against). The questions are
from the dev rows gh-llamafactory-634, gh-baichuan13b-113, gh-vllm-ascend-11260, gh-mgm-75 and the fresh rows
gh-baichuan-13b-107, gh-baichuan-13b-75 and gh-orion-37; the other phrasings are ours."""

from __future__ import annotations

import pytest

from bot.offline.understand.parse import parse
from bot.offline.understand.request.source import sourced
from tools.catalog.lookup import get_model
from tools.catalog.stand_in import families, published_size
from tools.memory.model_memory import model_memory
from tools.schemas.memory import ModelMemoryInput


@pytest.mark.parametrize(
    "text",
    [
        "1650显卡 40G内存可以跑起来Baichuan-13B-chat吗？",
        "如何在多张卡上部署，例如我有两张4090，我想部署非量化的baichuan 13b",
        "双卡4090 lora微调Baichuan13b发生OOM错误",
        "请问4*A100 40G能全参数微调Baichuan-13B吗？",
    ],
)
def test_baichuan_13b_is_the_first_baichuan_not_baichuan2(text):
    p = parse(text)
    assert p.models == ["baichuan-13b"]
    assert not p.unknown_models


def test_baichuan2_13b_is_still_baichuan2():
    assert parse("Baichuan2-13B-Chat 推理要多少显存").models == ["baichuan2-13b"]


def test_baichuan_13b_weights_are_its_published_count_at_two_bytes():
    spec = get_model("Baichuan-13B-Chat")
    assert spec.vocab_size == 64000
    out = model_memory(ModelMemoryInput(model="baichuan-13b", precision="fp16"))
    assert out.params_b == pytest.approx(13.26, abs=0.01)
    assert out.weights_gb == pytest.approx(26.5, abs=0.1)  # the checkpoint index's 26,529,802,240 bytes


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("请问Orion-14B-Chat-RAG需要多大显存可以实现推理呢？", "Orion-14B-Chat"),
        ("为啥我6张4090 24G,微调Mini-Gemini-8x7B会显存不够QAQ", "Mini-Gemini-8x7B"),
    ],
)
def test_a_name_glued_to_chinese_is_read_whole(text, named):
    assert parse(text).unknown_models == [named]


def test_an_unknown_model_keeps_its_place_in_the_order_written():
    p = parse("910B部署Ornith-1.0-35B为什么推理很慢，比27b的都慢")
    assert p.models == ["35B", "27B"]
    assert parse("Llama-2-7B 和 Foo-13B 哪个快").models == ["llama-2-7b", "13B"]


@pytest.mark.parametrize(
    ("question", "repository", "named", "sized_on"),
    [
        ("请问部署这个模型需要什么机器配置？主要是需要什么显卡，多大显存？", "OrionStarAI/Orion", "Orion-14B", "14B"),
        ("lora微调训练时间，数据集大小、batch size、训练速度和时长？", "zjunlp/KnowLM", "KnowLM-13B", "13B"),
        ("7B 的版本 4090 能跑吗", "zjunlp/KnowLM", "KnowLM-7B", "7B"),  # a size the publisher has: that size
    ],
)
def test_a_repository_known_by_its_published_sizes_is_the_model_asked_about(question, repository, named, sized_on):
    p = sourced(parse(question), repository)
    assert (p.unknown_models, p.stand_ins, p.models) == ([named], {named: sized_on}, [sized_on])
    assert p.model_source == repository


def test_a_size_the_publisher_never_released_stays_the_askers():
    p = sourced(parse("70B 的版本要几张卡"), "zjunlp/KnowLM")
    assert (p.models, p.unknown_models) == (["70B"], [])


def test_every_published_family_is_sourced_and_its_default_is_a_size_it_released():
    for family in families():
        assert family.default_b in family.sizes_b
        assert all(s.url.startswith("https://") for s in family.sources)
    assert published_size("OrionStarAI/Orion") == 14
    assert published_size("vllm") is None


def test_the_answer_says_the_repositorys_model_and_sizes_it(advisor):
    answer = advisor.ask(
        "请问部署这个模型需要什么机器配置？主要是需要什么显卡，多大显存？", source="OrionStarAI/Orion"
    ).answer
    assert "Orion-14B" in answer and "28 GB" in answer
    assert "哪个模型" not in answer and "哪款模型" not in answer


def test_a_name_without_a_family_word_is_the_repositorys_family_at_its_size():
    # fresh row gh-qwen3-embedding-148: "Reranker-0.6B" asked in QwenLM/Qwen3-Embedding is Qwen3-Reranker-0.6B
    p = sourced(parse("一张T4 16GB的卡，使用 vllm 运行 Reranker-0.6B 模型报显存溢出"), "QwenLM/Qwen3-Embedding")
    assert (p.models, p.stand_ins) == (["qwen3-0.6b"], {"Reranker-0.6B": "qwen3-0.6b"})
    assert p.model_source is None  # the question named its model: nothing is said of the place
    # a name with its own catalog family keeps it, and a framework's repository names no family
    assert sourced(parse("Llama-5-13B 4090 能跑吗"), "QwenLM/Qwen3").models == ["llama-2-13b"]
    assert sourced(parse("Foo-13B 4090 能跑吗"), "vllm-project/vllm").models == ["13B"]
