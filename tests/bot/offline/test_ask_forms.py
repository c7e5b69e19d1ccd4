"""A config ask and an explanation ask are read from the sentence's form whatever its topic (request/forms.py):
"应该使用什么启动参数", "batchsize为多少", "when to use max_num_tokens" ask for settings; "是怎么算的", "为什么…1800steps",
"有文档不", "what does X do" ask for an explanation; a doubt of the asker's own figures ("这样算对吗", "Is my
understanding incorrect?") asks for one too, after the parts. A configuration of cards or machines ("什么显卡配置")
is a count or a choice, not a setting, and a sentence found by its form alone is answered only by a note that
holds most of its own words, else said as not answered."""

from __future__ import annotations

import pytest
from asking import ask

from bot.offline.understand.request.asks import form_only, knowledge_clauses
from bot.offline.understand.request.reader import read

CONFIG = [
    "请问应该使用什么启动参数来运行Qwen3-235B-A22B？",  # dev gh-vllm-17327's form, another model
    "正常微调需要几张？batchsize为多少？",
    "用 zero3-offload 有机会吗",
    "batch size最大只能设置到16，这是否合理。",
    "What is the best command line to run a 13B on a 3090?",
    "When to use max_num_tokens and max_batch_size to build the engine?",
    "How to set gpu_memory_utilization when using mlc_llm chat?",  # fresh gh-mlcllm-2691
    "有没有其他方法可以跑 13B 的微调？",
]
EXPLAIN = [
    "请问在微调中我们使用的数据集有29450条，batch_size=1，为什么训练一个epoch使用约1800steps？",  # fresh gh-msswift-808
    "这里的 epoch 具体是指？",
    "租卡账单上的卡时是怎么算的？",
    "R1 的各个版本的显存占用情况有文档不？",
    "Is there a heuristic relative to the size of the model?",
    "What does gpu_memory_utilization do in vLLM?",
    "Why is it 2007 steps when 8031 / 28 is about 287?",
    "想请教下并发越高，模型使用的显存是越多的吗？",
]
DOUBT = [
    "8 卡跑 24 小时，我算的是 192 卡时，这样算对吗？",
    "It says 300 GB for 70B full fine-tuning. Is my understanding incorrect?",
    "7B 模型在 A800 上单卡 70tokens/s，比较怀疑",
    "0.6 req/s on 4 A100 is kinda low, for real?",
]


@pytest.mark.parametrize("text", CONFIG)
def test_a_setting_asked_for_is_a_config_ask(text):
    assert "config" in read(text).asks


@pytest.mark.parametrize("text", EXPLAIN)
def test_an_explanation_asked_for_is_a_knowledge_ask_and_a_part(text):
    assert "knowledge" in read(text).asks
    assert knowledge_clauses(text)


@pytest.mark.parametrize("text", DOUBT)
def test_a_doubt_of_the_askers_figures_asks_for_an_explanation_after_the_parts(text):
    r = read(text)
    assert "knowledge" in r.asks
    assert "knowledge" not in r.cued  # no part of its own: the figures answer it, first


@pytest.mark.parametrize("text", ["部署 R1 需要什么显卡配置？", "请问需要什么机器配置才能训练 72B？"])
def test_a_configuration_of_cards_is_no_setting(text):
    assert "config" not in read(text).asks


def test_a_part_found_by_its_form_alone_is_told_apart():
    assert form_only("R1 的各个版本的显存占用情况有文档不？")
    assert not form_only("KV cache 的大小是哪里控制的？")


def test_a_form_only_part_with_no_note_on_it_is_said_not_answered(advisor, caplog):
    (t,) = ask(advisor, caplog, "8 张 A800 推理 DeepSeek-R1 放得下吗？R1 的各个版本的显存占用情况有文档不？")
    assert "R1 的各个版本的显存占用情况有文档不" in t.answer.split("这次没有答到的问题")[-1]
    assert "KV 缓存池" not in t.answer  # an off-topic note (the engine's KV pool) is not quoted for it
