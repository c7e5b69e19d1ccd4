"""Issue 23, class 3 and 4: every part asked is answered, or said not to be, and a yes-or-no about the memory a
user has gets its yes or no. Questions of the kinds met on the real corpus's development rows, written here."""

import pytest
from asking import ask, calls

from bot.answer import asked
from bot.core.trace import ToolCall
from bot.offline.understand.request.reader import read


def _call(tool: str) -> ToolCall:
    return ToolCall(id=tool, tool=tool, input={}, output={})


# --- the reader finds the ask in the words people use --------------------------------------------------------


@pytest.mark.parametrize(
    "q, ask_",
    [
        ("How many t/s should I expect from Llama-3.1-8B on an L40S?", "speed"),
        ("Qwen2.5-7B 在 A100 上 8并发性能数据能达到多少？", "speed"),
        ("How many A100s and the number of hours to fine-tune a 13B model?", "time"),
        ("微调 Qwen2.5-14B 要多少个小时？", "time"),
    ],
)
def test_the_ask_is_read_in_the_words_people_use(q, ask_):
    assert ask_ in read(q).asks


def test_people_served_are_its_users_not_a_concurrency():
    # issue 26: people are the users of a service (daily users); only a word of simultaneity makes a concurrency
    r = read("I want to serve Qwen2.5-32B to about 12 people with vLLM")
    assert r.parsed.concurrency is None and any(m.role == "daily_users" and m.value == 12 for m in r.mentions)


def test_a_batch_size_said_with_is_is_read():
    # "if the batch size is 1, do I still need 4 A100": the batch is a figure of the run, not an unread "1"
    r = read("Hi, if the batch size is 1, do I still need 4 A100 to start the training process?")
    assert r.parsed.micro_batch == 1 and r.parsed.n_gpus == 4


def test_a_markdown_escaped_star_is_the_star_it_shows():
    # GitHub text escapes stars: "3\\*8*A100 (40G)" is 3 servers of 8 A100 40GB, 24 cards
    r = read("Is it possible to fine tune the llama-2-70B for a 3\\*8*A100 (40G) configuration, thanks!")
    assert r.parsed.n_gpus == 24 and r.parsed.gpus == ["a100-sxm4-40gb"]


def test_the_card_written_with_the_count_is_sized_beside_a_card_named_with_its_memory():
    # "requires 80GB A100 GPUs … nodes that each have 8 48GB A40 GPUs": the asker's cards are the counted A40s
    from bot.offline.understand.dialogue import slots_of
    from bot.offline.understand.parse import parse

    p = parse("the readme says it requires 80GB A100 GPUs. I have access to nodes that each have 8 48GB A40 GPUs.")
    assert slots_of(p)["gpu"] == "a40" and p.n_gpus == 8


# --- the plan answers every ask its calculators answer ----------------------------------------------------------


def test_a_speed_asked_at_several_concurrencies_gets_a_figure_at_each(advisor, caplog):
    (t,) = ask(advisor, caplog, "Qwen2.5-14B 部署在 H100 上，4并发和32并发的速度分别是多少？")
    speeds = calls(t, "inference_speed")
    assert {c.input.get("batch") for c in speeds} >= {4, 32}
    for c in speeds:
        assert f"{c.output['total_tokens_per_s']:,.0f}" in t.answer
    assert "并发 4" in t.answer and "并发 32" in t.answer


def test_a_second_ask_the_first_frame_leaves_gets_its_own_calculator(advisor, caplog):
    (t,) = ask(advisor, caplog, "Serving Llama-3.1-8B on one L40S: does it fit, and how many t/s per user?")
    assert calls(t, "fit_inference") and calls(t, "inference_speed")
    assert t.unanswered == []


def test_an_ask_no_calculator_answered_is_named():
    class Result:
        answer, language, state = "**放得下。**", "zh", {}
        tool_calls = [_call("fit_inference")]

    result = Result()
    assert asked.gate(["fits", "speed", "diagnose"], result) == ["speed"]
    assert "速度" in result.answer and "没有算出" in result.answer


def test_a_question_back_names_nothing_yet():
    class Result:
        answer, language, state = "Which model?", "en", {"pending": {"missing": "model"}}
        tool_calls = []

    result = Result()
    assert asked.gate(["fits", "speed"], result) == [] and result.answer == "Which model?"


# --- a yes-or-no about the memory the user has gets its yes or no ------------------------------------------------


@pytest.mark.parametrize(
    "q, word",
    [
        ("部署 Qwen2.5-72B，是不是 300G 显存就够了？", "300G够"),
        ("部署 Qwen2.5-72B，是不是 100G 显存就可以了？", "100G不够"),
    ],
)
def test_the_memory_a_user_has_in_all_gets_a_yes_or_no(advisor, caplog, q, word):
    (t,) = ask(advisor, caplog, q)
    (memory,) = calls(t, "model_memory")
    assert word in t.answer and f"{memory.output['serving_gb']:.0f}" in t.answer.replace(",", "")
