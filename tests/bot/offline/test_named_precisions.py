"""Each weight precision a serving question names gets its own answer (issue 23, class part_missing: "如果使用
4-bit / 8-bit 量化" sized at 4-bit only, gh-ktransformers-1679): one fit per precision, labelled, in the order
said; two names of one width ("fp16 / bf16") are one, and a KV-cache precision is no weight alternative."""

from __future__ import annotations

from asking import calls

from bot.offline.understand.request.reader import read
from bot.offline.understand.request.variants import variants


def test_each_precision_named_is_sized_on_the_card(advisor):
    t = advisor.ask("请问在 RTX 5090 32GB 上能部署 Qwen2.5-32B 吗？如果使用 4-bit / 8-bit 量化，能放下吗？")
    assert t.ungrounded == [] and t.unused == [], t.answer
    fits = {c.input.get("precision"): c.output for c in calls(t, "fit_inference") if c.input.get("n_gpus") == 1}
    assert fits["int4"]["fits"] and not fits["int8"]["fits"]  # 32B: ~19 GB of int4 weights, ~33 GB of int8
    assert t.answer.index("**int4：**") < t.answer.index("**int8：**")


def test_a_kv_precision_or_two_names_of_one_width_are_no_alternatives():
    for text in (
        "bf16 weights with fp8 kv cache, Llama-3-70B on 2 H100: does it fit?",
        "Llama-3-8B 用 fp16/bf16 能跑吗",
    ):
        assert variants("fit", read(text).parsed) == []


def test_training_is_not_split_by_precision():
    assert variants("fit", read("Qwen2.5-7B 用 bf16 还是 int8 做 LoRA 微调，A100 能放下吗").parsed) == []
