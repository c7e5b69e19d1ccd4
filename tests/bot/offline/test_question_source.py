"""A question that names no model, asked in a model's repository, is about that model (`Advisor.ask(source=…)`),
and the answer says where the model came from; the question's own words win, and with no place nothing changes.
Development rows of tests/corpus/real/."""

from __future__ import annotations

from asking import row


def _inputs(trace, key="model"):
    return [c.input.get(key) for c in trace.tool_calls if key in c.input]


def test_the_repositorys_model_is_sized_and_said(advisor):
    question = row("gh-deepseekv3-241")  # "用多少卡4090可以哇，或者H100需要多少卡" in deepseek-ai/DeepSeek-V3
    trace = advisor.ask(question, source="deepseek-ai/DeepSeek-V3")
    assert "deepseek-v3" in _inputs(trace) and "deepseek-ai/DeepSeek-V3 仓库" in trace.answer
    plain = advisor.ask(question)  # no place: no repository's model, nothing said about one
    assert "deepseek-v3" not in _inputs(plain) and "仓库" not in plain.answer


def test_a_bare_size_picks_the_familys_model_of_that_size(advisor):
    trace = advisor.ask("32B 的模型 4 张 4090 能跑吗", source="https://github.com/QwenLM/Qwen3/issues/1")
    assert "qwen3-32b" in _inputs(trace)


def test_the_askers_own_size_and_name_win(advisor):
    other_size = advisor.ask("13B 全参训练 8 张 A100 要多久", source="baichuan-inc/Baichuan-7B")
    assert "baichuan2-7b" not in _inputs(other_size) and "仓库" not in other_size.answer
    named = advisor.ask("Llama-2-7B LoRA 8 张 A100 要多久", source="QwenLM/Qwen3")
    assert set(_inputs(named)) == {"llama-2-7b"}


def test_a_frameworks_repository_names_no_model(advisor):
    trace = advisor.ask(row("gh-deepseekv3-241"), source="vllm-project/vllm")
    assert "仓库" not in trace.answer
