"""Servers of a card that comes only on multi-GPU boards (issue 23, class 1: a figure in the wrong role). "4台H100"
and "4 H100 machines" are four 8-GPU servers, 32 GPUs: an H100 SXM, H20 or MI300X is not sold one to a box. A PCIe
card counted in 台 ("两台4090") stays that many cards. The answer says the GPUs it took per server."""

from __future__ import annotations

import pytest

from bot.offline.understand.parse import parse


@pytest.mark.parametrize(
    ("question", "gpus", "nodes"),
    [
        ("qwen3-235B-moe在4台H100（80GB）上能否训练成功", 32, 4),
        (  # the question again in English below it: the same four servers
            "qwen3-235B-moe在4台H100（80GB）上能否训练成功？\n\nCan qwen3-235B moe be trained on 4 H100 (80GB) machines? "
            "The official sample was trained on 4 H20 (96GB) machines.",
            32,
            4,
        ),
        ("两台H800服务器，每台8卡", 16, 2),
        ("can Qwen3-235B be trained on 4 H100 (80GB) machines?", 32, 4),
        ("4台H20部署DeepSeek-R1够不够", 32, 4),
        ("2 nodes of H100 to full fine-tune a 70B: does it fit?", 16, 2),
        ("3 台 8 卡 A800 训练 70B", 24, 3),  # the count per server said: kept
        ("两台4090能跑72B吗", 2, None),  # a PCIe card: two cards
        ("4 H100s for Llama-3-70B", 4, None),
    ],
)
def test_servers_of_a_board_only_card_hold_eight(question, gpus, nodes):
    p = parse(question)
    assert (p.n_gpus, p.n_nodes) == (gpus, nodes)


def test_the_answer_says_the_gpus_it_took_per_server(advisor):
    t = advisor.ask("qwen3-235B-moe在4台H100（80GB）上能否全参训练？")
    assert "4 台 NVIDIA H100 SXM5 80GB" in t.answer and "按每台 8 张算，共 32 张" in t.answer
    assert "32 张" in t.answer.split("\n\n")[1]  # the verdict is on 32 cards, not 4
    en = advisor.ask("Can we fully fine-tune Qwen3-235B-A22B on 4 H100 machines?")
    assert "each is taken as 8 GPUs, 32 in all" in en.answer


def test_an_inline_quoted_launch_command_keeps_its_tensor_parallel_size(advisor):
    """`vllm serve … --tensor-parallel-size 4` quoted in backticks inside a sentence: the size is 4, not 1."""
    t = advisor.ask(
        "环境是 vLLM v0.8.5 & 4 * H20 96GB。我使用默认的 `vllm serve ./Qwen3-235B-A22B --tensor-parallel-size 4` 来运行，"
        "会出现OOM的情况。是否意味着4卡H20是没法运行的"
    )
    assert "÷ tp 4" in t.answer and "÷ tp 1" not in t.answer


@pytest.mark.parametrize(
    ("question", "gpus"),
    [
        ("官方benchmark说，2张a100的80G可以到128k，可是我这里4张a100 40G，输入长度到2w多显存就满了", 4),
        ("the README runs it on 8 A100s, but I have 2 A100s: enough for Llama-3-70B?", 2),
        ("2 张 4090 和 4 张 3090 哪个好", 2),  # no reference said: the first count stands
    ],
)
def test_the_askers_own_cards_win_over_a_reference_setup(question, gpus):
    assert parse(question).n_gpus == gpus


def test_memory_seen_full_on_a_reserving_engine_is_its_reservation_on_the_askers_card(advisor):
    """ "显存就要满了" on vLLM with nothing failing: the engine's 0.9 reservation, worked out on the asker's own
    40 GB card, not the benchmark's 80 GB one named first."""
    t = advisor.ask(
        "官方benchmark说，2张a100的80G，vllm推理qwen2-72b-instruct-gptq-int4输入长度可以到128k，可是我这里4张a100 40G，"
        "输入长度到2w多，显存就要满了。\n启动参数python -m vllm.entrypoints.openai.api_server --quantization gptq "
        "--tensor-parallel-size 4 --enforce-eager"
    )
    head = t.answer.split("---")[0]
    assert "0.9 × 40.00 GiB" in head and "预留" in head
