"""The figures the user gave are the ones computed on (issue 23, classes misread_context / missed_model): a
fine-tuning set given as samples × a per-sample length (a range taken at its middle, "hundred" and "million" read)
× epochs in words; a bare size said before the one catalog model the text names ("(13b) … llama 2 13b") is that
model, not a generic one beside it. Phrasings are ours, shaped like the development rows, in both languages."""

from __future__ import annotations

import pytest

from bot.offline.understand.parse import parse


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("About 1 million samples; my sample size is probably 5-6 hundred tokens. One epoch on an H100?", 550e6),
        ("200k samples, each about 300-500 tokens, two epochs on 8 A100", 160e6),
        ("2 million conversations, sample length around 800 tokens, 3 epochs", 4.8e9),
        ("100万条数据，每条约500 token，3 个 epoch", 1.5e9),
    ],
)
def test_samples_times_their_length_times_epochs_are_the_tokens(text, tokens):
    assert parse(text).tokens == pytest.approx(tokens)


@pytest.mark.parametrize(
    ("text", "model"),
    [
        (
            "Time to fine-tune on 1m samples(13b)\nhow long will fine-tuning llama 2 13b for one epoch take?",
            "llama-2-13b",
        ),
        ("[72B] 部署问题\n用 vLLM 起 Qwen2.5-72B 要几张 A800？", "qwen2.5-72b"),
        ("65B on one 48GB card? The paper trains LLaMA-65B with QLoRA", "llama-65b"),
    ],
)
def test_a_size_said_before_the_model_it_belongs_to_is_that_model(text, model):
    assert parse(text).models == [model]


def test_sizes_set_beside_a_model_stay_models_of_their_own():
    assert parse("13B 和 Llama-2-13B 哪个好").models == ["13B", "llama-2-13b"]
    assert parse("7B 够吗？Qwen2.5-14B 呢").models == ["7B", "qwen2.5-14b"]  # another size, another model


def test_the_answer_computes_on_the_named_model_and_the_tokens_given(advisor):
    t = advisor.ask(
        "Time to fine-tune on 1m samples(13b)\nOn an H100, how long will fine-tuning llama 2 13b for one epoch take? "
        "My sample size is probably 5-6 hundred tokens"
    )
    times = [c for c in t.tool_calls if c.tool == "training_time"]
    assert times and {c.input["model"] for c in times} == {"llama-2-13b"}
    assert "550M tokens" in t.answer and "generic dense 13B" not in t.answer


@pytest.mark.parametrize(
    ("text", "gpu"),
    [
        ("DeepSeek-V2-Chat SFT，8*80G 够用吗？", "a100-sxm4-80gb"),
        ("我们有 4 张 80G 的卡，能 LoRA 微调 Qwen2.5-72B 吗", "a100-sxm4-80gb"),
        ("Atlas 服务器每个 chip 64 GB 显存，能跑 32B 吗", "ascend-910b"),  # the vendor the words name still decides
    ],
)
def test_a_card_said_only_by_its_memory_is_the_usual_card_of_that_size(text, gpu):
    assert parse(text).gpus == [gpu]
