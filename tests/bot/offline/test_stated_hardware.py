"""The hardware the user states is the hardware the answer computes on (issue 23, classes misread_gpu_name and
misread_count: an A100 80GB sized when the user wrote "A100=40G", one card when they wrote "4块A100", a board's
slot count taken for their cards, a motherboard's chipset taken for a GPU, their 128 GB of host RAM never set
against what an offload needs). Questions: development rows of tests/corpus/real/, fresh public ones kept verbatim
in tests/corpus/real/fresh_s11_given11.yaml, and phrasings of ours in both languages."""

from __future__ import annotations

import pytest
from asking import calls, row

from bot.answer.coverage import covers
from bot.core.planner import PlanResult
from bot.core.trace import ToolCall
from bot.offline.understand.parse import parse
from bot.offline.understand.request.reader import read


@pytest.mark.parametrize(
    ("text", "gpu"),
    [
        ("请问14B全参数训练需要多少显卡？假设是A100=40G.", "a100-sxm4-40gb"),  # gh-qwen-436
        ("Based on a cluster of 96 NVIDIA DGX-A100 (8X40G), how long will training take?", "a100-sxm4-40gb"),
        ("4块A100（40G）不能全参数微调吗", "a100-sxm4-40gb"),  # gh-qwenvl-105 (fresh)
        ("GPU: A100：40GB，能跑 Qwen2.5-32B 推理吗", "a100-sxm4-40gb"),
        ("8*(v100 16G）可以全参微调 7B 吗", "v100-sxm2-16gb"),
        ("我有 4 张 A100 80G", "a100-sxm4-80gb"),  # the card's own default memory stays
    ],
)
def test_a_memory_said_right_after_a_card_is_that_cards_variant(text, gpu):
    assert parse(text).gpus == [gpu]


@pytest.mark.parametrize(
    ("text", "n"),
    [
        ("4块A100（40G）不能全参数微调吗", 4),  # 块 before a card counts it (not 4 yuan)
        ("全参数微调是不是在8*(v100 32G）上才跑得动", 8),  # gh-billa-37
        ("GPU: NVIDIA RTX 4090 24G 涡轮显卡 *2\n主板：INTEL C621服务器主板 (最大支持4张GPU)", 2),  # gh-qwen-846
        ("8 x (A100 80GB) 训练 70B 要多久", 8),
    ],
)
def test_the_users_own_count_is_read(text, n):
    assert parse(text).n_gpus == n


def test_a_price_in_kuai_is_still_money():
    assert parse("H100 租一小时 20块钱，8 张跑一天多少钱").price_per_hour == 20


def test_a_board_and_its_slots_are_no_cards():
    p = parse("主板：INTEL C621服务器主板 (最大支持4张GPU)，GPU: RTX 4090 *2，能微调 14B 吗")
    assert p.unknown_gpus == [] and p.gpus == ["rtx-4090"] and p.n_gpus == 2


def test_the_size_of_the_card_computed_on_is_used_not_explained():
    # "4卡3090（24GB）": the 24GB is the RTX 3090's memory, which the fit used (gh-qwenvl-471)
    request = read("Qwen-VL 在 4卡3090（24GB），可否实现LoRA 微调呢？")
    call = ToolCall(
        id="c1", tool="fit_training", input={"model": "qwen-vl-7b", "gpu": "rtx-3090", "n_gpus": 4}, output={}
    )
    uses = covers(request, PlanResult(answer="放得下。", language="zh", tool_calls=[call]))
    assert {u.text: u.use for u in uses}["24GB"] == "input"
    other = ToolCall(id="c1", tool="fit_training", input={"model": "qwen-vl-7b", "gpu": "a100-sxm4-80gb"}, output={})
    uses = covers(request, PlanResult(answer="放得下。", language="zh", tool_calls=[other]))
    assert {u.text: u.use for u in uses}["24GB"] == "unused"  # another card's memory is no use of it


def test_a_40g_a100_question_is_sized_on_40_gb_cards(advisor):
    t = advisor.ask(row("gh-qwen-436"), source="QwenLM/Qwen")
    fit = calls(t, "fit_training")[0]
    assert fit.input["gpu"] == "a100-sxm4-40gb"
    assert "A100 SXM4 40GB" in t.answer and "80GB" not in t.answer
    assert t.unused == [] and t.ungrounded == []


def test_the_stated_host_ram_total_is_set_against_an_offload(advisor):
    t = advisor.ask(row("gh-qwen-846"), source="QwenLM/Qwen")
    # the setup asked of (not the method table's count probes, which set checkpointing): "RTX 4090 24G 涡轮显卡 *2",
    # not the board's 4 slots
    asked = [c.input for c in calls(t, "fit_training") if not {"grad_checkpointing", "offload"} & set(c.input)]
    assert asked and {c["n_gpus"] for c in asked} == {2}
    assert "您的主机内存“128G”不够放卸载的部分" in t.answer  # the machine's total, not one 32G module
    assert "C621" not in t.answer


@pytest.mark.parametrize(
    ("text", "gpu"),
    [
        ("昇腾910 32G 8卡，微调 Qwen2.5-14B 任然OOM", "ascend-910b4"),  # gh-llamafactory-7528: Huawei's 32 GB card
        ("MI50 32G 能跑 14B 推理吗", "v100-sxm2-32gb"),  # no AMD card of that memory on file: NVIDIA's
    ],
)
def test_a_card_the_catalog_lacks_named_with_its_memory_is_computed_on_that_memory(text, gpu):
    p = parse(text)
    assert p.gpus == [gpu] and p.unknown_gpus == []
    assert p.gpu_from_memory["memory_gb"] == 32 and p.gpu_from_memory["named"]


def test_the_memory_given_with_an_unknown_card_is_said_and_not_asked_for(advisor):
    t = advisor.ask("昇腾910 32G 8卡，全参微调 DeepSeek-R1-Distill-Qwen-14B 放得下吗")
    assert "（目录里没有“昇腾910”，按您说的显存 32 GB、同样显存的 Huawei Ascend 910B4 估算" in t.answer
    assert "每张有多少显存" not in t.answer and "8 张 Huawei Ascend 910B4" in t.answer
    assert t.unused == [] and t.ungrounded == []


@pytest.mark.parametrize(
    ("text", "precision"),
    [
        ('When I run "ollama run llama3.1:70b", only 42/81 layers are offloaded to GPU', "int4"),
        ("ollama run qwen2.5:7b-instruct-q8_0 很慢", None),  # the tag names its build
        ("ollama 跑 llama3 8b fp16 要多少显存", "fp16"),  # the words name it
        ("vllm 跑 llama3 70b 要几张卡", None),  # no runtime default outside Ollama
    ],
)
def test_ollamas_default_tag_is_its_4_bit_build(text, precision):
    assert parse(text).precision == precision


def test_an_ollama_model_is_sized_in_its_default_4_bit_build_and_says_so(advisor):
    t = advisor.ask(row("gh-ollama-6008"), source="ollama/ollama")
    assert (
        "(A model Ollama pulls by its name and size alone is the library's default quantised build (Q4_K_M)" in t.answer
    )
    assert "load_in_4bit" not in t.answer  # 4-bit already: the fix is a smaller model or more GPU memory
    assert all(c.input.get("precision") == "int4" for c in calls(t, "fit_inference"))
    assert t.ungrounded == []


def test_ollama_beside_another_engine_sets_no_precision():
    assert parse("并发数超过100的，一般采用什么工具部署呢，用ollama和vllm是不是就很难支持了").precision is None


def test_a_settings_value_beside_a_size_is_its_length_not_a_second_model():
    # gh-llama2accessory-91 (fresh): "8 GPUs, max_words = 512, 7B" is a 7B at 512 tokens, not a 512B model
    p = parse("full parameter finetuning on A100 40G. 8 GPUs, max_words = 512, 7B")
    assert p.models == ["7B"] and p.seq_len == 512 and p.n_gpus == 8 and p.gpus == ["a100-sxm4-40gb"]
    assert parse("How much did it take to fine tune llama7/13/70b?").models[-2:] == ["13B", "70B"]  # a list stays
