"""A serving fit that misses only by the KV cache of the assumed length (issue 23, class 4: a verdict the asker's
own setup contradicts): "能否在 4*16G V100 上跑起来" with 4-bit weights that fit and a 4,096-token KV that does not
gets the longest context that fits on those cards (fit_inference's max_context), before "more cards"."""

from __future__ import annotations

import re

from bot.offline.understand.parse import parse


def test_a_near_miss_says_the_context_that_fits(advisor):
    t = advisor.ask("Qwen1.5-72B-Chat-GPTQ-Int4 能否在4*16G V100上跑起来？")
    m = re.search(r"上下文（max_model_len）不超过 ([\d,]+) token 时放得下", t.answer)
    assert m, t.answer
    fitted = int(m.group(1).replace(",", ""))
    assert 1024 <= fitted < 4096
    call = next(c for c in t.tool_calls if c.tool == "fit_inference")
    assert call.output["max_context"] == fitted  # the calculator's figure, not the composer's
    assert parse("Qwen1.5-72B-Chat-GPTQ-Int4 能否在4*16G V100上跑起来？").n_gpus == 4


def test_no_context_line_where_even_a_short_one_does_not_fit(advisor):
    t = advisor.ask("Can Llama-3-70B in bf16 run on one RTX 4090?")
    assert "fits with a context" not in t.answer


def test_a_knowledge_answer_is_never_a_bare_command_line(advisor):
    """A note's "check it" section (command lines only) supports and answers nothing (dev row gh-open-llama-58)."""
    t = advisor.ask(
        "how much gpu resources is needed to run this?\nok. sorry, i was asking about training the model not inferencing."
    )
    assert "gpu-advisor fit" not in t.answer
