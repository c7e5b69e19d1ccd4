"""A model the catalog lacks is still a named model (issue 23, class missed_model; issue 25, a model nobody
catalogued yet): a name with words between its first word and its size ("Hunyuan-MT-7B", "Mistral Small 3.1 24B"),
and a size written with its active tag ("235B-A22B"), are read whole, said as not in the catalog and sized on the
size the name carries (a MoE on its total and active sizes). The names are from fresh public questions (UMbreLLa #16,
TensorRT-LLM #7818, Qwen3-VL #1489, ollama #9730, Tencent-Hunyuan/Hunyuan-A13B #9) and the dev row gh-hymt-12's repository;
the phrasings around them are ours."""

from __future__ import annotations

import pytest

from bot.offline.understand.parse import parse


@pytest.mark.parametrize(
    ("text", "named", "sized_on"),
    [
        ("Hunyuan-MT-7B 用 vllm 部署在 4090 上要多少显存", "Hunyuan-MT-7B", "7B"),
        ("Is it possible to get Mistral Large 2 123B running on 4 L40S?", "Mistral Large 2 123B", "123B"),
        ("Acme-Coder-24B-Instruct OOM on 8 A10G", "Acme-Coder-24B-Instruct", "24B"),
        ("Foo-Chat-7B on a 4090", "Foo-Chat-7B", "7B"),
        ("Seed-OSS-36B-Instruct 4 张 4090 能跑吗", "Seed-OSS-36B-Instruct", "36B"),
        ("Foo-Bar-13B on a 4090", "Foo-Bar-13B", "13B"),
    ],
)
def test_a_name_with_words_before_its_size_is_one_unknown_model(text, named, sized_on):
    p = parse(text)
    assert p.unknown_models == [named]
    assert p.stand_ins[named] == sized_on
    assert p.models == [sized_on]


@pytest.mark.parametrize(
    ("text", "model"), [("a 235B-A22B model on 8 A100", "235B-A22B"), ("30B-A3B 的模型一张 4090 够吗", "30B-A3B")]
)
def test_a_size_with_its_active_tag_is_one_moe(text, model):
    p = parse(text)
    assert p.models == [model]
    assert not p.gpus or "A22B" not in str(p.unknown_gpus)


def test_a_vision_family_word_reads_the_name_and_not_a_card():
    p = parse("8*A100 (80G) deploy Qwen3vl 235B-A22B-Instruct cuda OOM")
    assert p.models == ["qwen3-vl-235b-a22b"]  # the catalog's vision model, its tower counted
    assert not p.unknown_models and not p.unknown_gpus


@pytest.mark.parametrize(
    "text",
    [
        "LoRA-7B on a 4090",
        "full-sft-7b 要几张卡",
        "qwen lora 7b",
        "llama and 70b",
        "--experiment-name finetune-visualglm-6b",
    ],
)
def test_a_method_or_a_function_word_before_a_size_is_no_name(text):
    assert parse(text).unknown_models == []


@pytest.mark.parametrize(
    ("text", "model"),
    [
        ("Is it possible to get Mistral Small 24b running on an 8GB GPU?", "mistral-small-3.1-24b"),
        ("Mistral-Small-3.1-24B-Instruct-2503 OOM on 8 A10G", "mistral-small-3.1-24b"),
        ("Gemma 3 12b uses 24 GB VRAM", "gemma-3-12b"),
        ("gemma3:4b 在 8G 显卡上能跑吗", "gemma-3-4b"),
    ],
)
def test_the_models_added_in_2026_12_are_read_by_their_names(text, model):
    assert parse(text).models == [model]


def test_a_repository_named_for_its_model_is_that_model():
    from bot.offline.understand.request.source import sourced

    p = sourced(parse("What's the minimum Vram required?"), "Tencent-Hunyuan/Hunyuan-A13B")
    assert p.models == ["hunyuan-a13b"]


@pytest.mark.parametrize(
    ("text", "named", "model"),
    [
        ("DeepSeek-R1-0528-Qwen3-8B 在一张 4090 上能跑吗", "DeepSeek-R1-0528-Qwen3-8B", "qwen3-8b"),
        ("Can I serve deepseek-r1-0528-qwen3-8b on a T4?", "deepseek-r1-0528-qwen3-8b", "qwen3-8b"),
    ],
)
def test_two_catalog_names_written_as_one_are_one_model_on_the_sized_one(text, named, model):
    p = parse(text)
    assert p.models == [model]  # never the 671B DeepSeek-R1 beside it
    assert p.unknown_models == [named] and p.stand_in_basis[named] == "named"


def test_two_models_side_by_side_stay_two():
    assert parse("Qwen2.5-7B 和 Qwen2.5-14B 对比").models == ["qwen2.5-7b", "qwen2.5-14b"]


@pytest.mark.parametrize("text", ["Magistral-Small-2506 on a 4090", "Devstral-Small-2507 在 L40S 上"])
def test_the_fine_tunes_of_mistral_small_keep_its_shape(text):
    assert parse(text).models == ["mistral-small-3.1-24b"]


@pytest.mark.parametrize(
    ("text", "models"),
    [
        ("一张4090 单卡部署qwen2-7b模型占用了20g显存", ["qwen2-7b"]),  # a text model: never Qwen2-VL-7B
        ("7b-awq模型在A10上部署总是oom。请问我部署qwen2VL-7b-awq模型", ["qwen2-vl-7b"]),  # "7b" is its own size
        ("t4 *3 lora微调qwen-vl-chat，显存不够", ["qwen-vl-7b"]),
    ],
)
def test_vision_and_text_names_stay_apart(text, models):
    assert parse(text).models == models
