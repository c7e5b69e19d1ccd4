"""The reader finds the sentences that ask for a verdict from their form, whatever the topic (issue 23, class "a
choice or a yes/no question without its verdict"; `understand/request/verdicts.py`): a choice ("A 还是 B", "which
should we pick") and a yes/no ("…吗", "是否", "is this expected"), and the asks their form places in the request
(`choose` for a pick or for setups weighed, `compare` for a comparative). Real development rows and fresh rows of
tests/corpus/real/fresh_s11_asks11a.yaml."""

from __future__ import annotations

import pytest
from asking import row

from bot.offline.understand.request.reader import read
from bot.offline.understand.request.verdicts import clauses


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        ("继续微调的话，能否在1张4090 24GB上完成呢，如果不行2张3090 24GB是否可以", ["yes_no", "yes_no"]),
        ("H20 还是 4090 选哪个？", ["choose"]),
        ("Is this speed to be expected?", ["yes_no"]),
        ("I want to set this up. Would 2H100 in a cluster be enough ?", ["yes_no"]),
        ("8*A100 Is the training speed normal?", ["yes_no"]),
        ("A100 or H100, which should we pick?", ["choose"]),
        ("模型为什么还是会报错", []),  # "还是会": still, no options; no question form
    ],
)
def test_the_sentence_form_marks_a_choice_or_a_yes_no(text, kinds):
    assert [c.kind for c in clauses(text.lower())] == kinds


def test_yes_no_sentences_that_weigh_two_setups_ask_for_a_choice():
    # the fresh gh-chinese-llama-alpaca-332 and dev gh-ms-swift-8488: two setups, each asked "enough?"
    assert "choose" in read("继续微调的话，能否在1张4090 24GB上完成呢，如果不行2张3090 24GB是否可以").asks
    assert "choose" in read(row("gh-ms-swift-8488")).asks
    assert "choose" in read(row("gh-llamachinese-338")).asks  # "两张A100/A800 80G足够吗": either card
    # one setup said twice (a title repeated in the body) weighs nothing
    assert (
        "choose"
        not in read("请问用2张a100 40g可以全参数微调bloom 7b吗\n请问用2张a100 40g可以全参数微调bloom 7b吗").asks
    )


def test_a_relative_which_and_a_comparison_with_expectation_ask_nothing():
    assert "choose" not in read("we get 30 tokens/s, which is slower than expected on 8 H100").asks
    assert "compare" not in read("微调时显存比预期的大很多，为什么？").asks


def test_a_comparative_between_two_things_asks_compare():
    assert "compare" in read("昇腾 910B 训练效率显著低于英伟达 A100").asks
    assert "compare" in read("qwen.15 72b比qwen 72b所需的gpu多啊，一块80G跑不起vllm服务").asks
