"""A choice or a yes/no asked in a multi-part message gets its verdict (issue 23, class "a choice or a yes/no question
without its verdict"): the reader finds the sentences that ask for one from their form, whatever the topic
(`understand/request/verdicts.py`), and the plan gives each yes/no asked of a setup one verdict line, in the order
asked, under the headline, from the fits the answer computed (`compose/sizes/verdicts.py`). Real development rows
(tests/corpus/real) and fresh rows of tests/corpus/real/fresh_s11_asks11a.yaml."""

from __future__ import annotations

from asking import row


def _verdicts(answer: str) -> list[str]:
    """The lines of the answer's verdict block, in order."""
    for head in ("**逐问作答：**", "**Your questions, one by one:**"):
        if head in answer:
            block = answer.split(head, 1)[1].split("\n\n", 1)[0]
            return [line.strip() for line in block.strip().splitlines()]
    return []


def test_each_setup_asked_gets_its_yes_or_no_in_the_order_asked(advisor):
    t = advisor.ask(
        "继续微调alpaca-7B-plus的硬件资源询问\n继续微调的话，能否在1张4090 24GB上完成呢，如果不行2张3090 24GB是否可以"
    )
    lines = _verdicts(t.answer)
    assert len(lines) == 2
    assert (
        "能否在1张4090 24GB上完成呢" in lines[0]
        and "**不行。**" in lines[0]
        and "1 张 NVIDIA GeForce RTX 4090" in lines[0]
    )
    assert (
        "2张3090 24GB是否可以" in lines[1] and "**不行。**" in lines[1] and "2 张 NVIDIA GeForce RTX 3090" in lines[1]
    )
    assert "至少要 8 张" in lines[1]  # the fewest cards that hold the same run, from the fit
    assert t.answer.index("**放不下。**") < t.answer.index("**逐问作答：**")  # under the headline


def test_training_and_serving_asked_of_two_setups_get_a_verdict_each(advisor):
    # gh-ms-swift-8488: "微调8卡a800够吗 … 推理 … 8卡4090够吗": the serving fit is run on the model the answer sized
    lines = _verdicts(advisor.ask(row("gh-ms-swift-8488")).answer)
    assert len(lines) == 2
    assert "8卡a800" in lines[0] and "全参训练" in lines[0] and "**不行。**" in lines[0]
    assert "8卡4090" in lines[1] and "部署" in lines[1] and "**不行。**" in lines[1]


def test_either_card_of_an_alternative_gets_its_verdict_for_each_job_sized(advisor):
    # gh-llamachinese-338: "两张A100/A800 80G足够吗？" beside 微调与推理: serving fits on both, full training on neither
    lines = _verdicts(advisor.ask(row("gh-llamachinese-338")).answer)
    body = "\n".join(lines)
    assert body.count("**可以。**部署 Llama-3-70B") == 2
    assert body.count("**不行。**全参训练 Llama-3-70B") == 2
    assert "A800" in body and "A100" in body


def test_a_choice_keeps_its_pick_first_and_the_yes_no_lines_follow_the_headline(advisor):
    # gh-yi-55: "单卡3090或4090能跑吗？": the pick (int4 on one card) leads, each card's bf16 verdict follows
    t = advisor.ask(row("gh-yi-55"))
    assert t.answer.startswith("**选 ")
    assert "int4" in t.answer.split("\n\n")[0]
    lines = _verdicts(t.answer)
    assert "单卡3090或4090能跑吗" in lines[0]
    assert sum("**不行。**部署 Yi-34B 在 1 张" in x for x in lines) == 2  # each card, on its own


def test_one_question_of_the_setup_the_headline_sized_gets_no_second_line(advisor):
    t = advisor.ask("请问4张4090能部署 Qwen2.5-72B 吗？")
    assert _verdicts(t.answer) == []


def test_english_questions_get_yes_or_no_in_english(advisor):
    t = advisor.ask("Can I fine-tune Llama-3-8B with LoRA on one RTX 4090? If not, would 2 RTX 3090 be enough?")
    lines = _verdicts(t.answer)
    assert lines and all(("**Yes.**" in x or "**No.**" in x) for x in lines)
    assert any("3090" in x for x in lines)
