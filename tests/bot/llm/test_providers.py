"""Provider quirks, each replayed from a recorded response shape (written down here in our own data,
after each provider's documentation and issue reports): what each server sends back, and what the
advisor does with it.

    DeepSeek   thinking mode streams `reasoning_content` before the answer or the tool calls, and with
               tools wants it sent back on every later request (400 otherwise): we turn thinking off.
    DashScope  hybrid Qwen3 models stream `reasoning_content` unless `enable_thinking: false`; a
               non-streamed call with thinking on is a 400.
    vLLM       without `--enable-auto-tool-choice --tool-call-parser …` any request with tools is a 400.
    Ollama     streams a tool call whole in one chunk and may end the turn with `finish_reason: "stop"`.
    llama.cpp  without `--jinja` a request with tools is a 500; with a template that has no tool
               section, the model writes `<tool_call>` markup as text.
    OpenAI     with `stream_options.include_usage` the last chunk has `usage` and no choices.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from harness import advisor
from scripted_openai import Reply, ScriptedOpenAI, raw

import tools
from bot.answer.llm_turn import FALLBACK_NOTES

FIT = {"model": "Qwen2.5-7B", "gpu": "A100 80GB", "n_gpus": 8, "method": "full"}
QUESTION = "8 张 A100 80GB 全参微调 Qwen2.5-7B 放得下吗？"
PER_GPU = tools.call("fit_training", FIT)["per_gpu_gb"]
ANSWER = f"放得下：每卡约需 {PER_GPU} GB。"


def sse(*deltas: dict[str, Any], finish: str = "stop", model: str = "m", usage: dict | None = None) -> bytes:
    """A recorded stream: one chunk per delta, the finish chunk, an optional usage chunk, [DONE]."""

    def chunk(delta, fin=None):
        return {
            "id": "chatcmpl-rec",
            "object": "chat.completion.chunk",
            "created": 1764500000,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": fin}],
        }

    events = [chunk({"role": "assistant", "content": ""}), *(chunk(d) for d in deltas), chunk({}, finish)]
    if usage is not None:
        events.append(
            {
                "id": "chatcmpl-rec",
                "object": "chat.completion.chunk",
                "created": 1764500000,
                "model": model,
                "choices": [],
                "usage": usage,
            }
        )
    body = "".join(f"data: {json.dumps(e, ensure_ascii=False)}\n\n" for e in events)
    return (body + "data: [DONE]\n\n").encode()


def call_delta(name: str, args: dict, call_id: str = "call_0", whole: bool = True) -> list[dict]:
    arguments = json.dumps(args, ensure_ascii=False)
    if whole:
        return [
            {
                "tool_calls": [
                    {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
                ]
            }
        ]
    return [
        {"tool_calls": [{"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}]},
        *(
            {"tool_calls": [{"index": 0, "function": {"arguments": arguments[i : i + 9]}}]}
            for i in range(0, len(arguments), 9)
        ),
    ]


# ---- DeepSeek -----------------------------------------------------------------------------------------------
def deepseek(body: dict) -> Reply:
    """DeepSeek's API: thinking on unless disabled; then a tool-call turn streams reasoning_content, and a
    later request whose assistant tool-call message lacks it is refused."""
    thinking = (body.get("thinking") or {}).get("type", "enabled") != "disabled"
    if thinking and any(
        m.get("role") == "assistant" and m.get("tool_calls") and not m.get("reasoning_content")
        for m in body["messages"]
    ):
        return Reply(
            status=400,
            error_body={
                "error": {
                    "message": "The reasoning_content in the thinking mode must be passed back to the API.",
                    "type": "invalid_request_error",
                    "code": "invalid_request_error",
                }
            },
        )
    tool_turn = not any(m.get("role") == "tool" for m in body["messages"])
    reasoning = [{"reasoning_content": "先算显存。"}] if thinking else []
    if tool_turn:
        return raw(
            sse(*reasoning, *call_delta("fit_training", FIT, whole=False), finish="tool_calls", model="deepseek-chat")
        )
    return raw(sse(*reasoning, {"content": ANSWER}, model="deepseek-chat"))


def test_deepseek_runs_without_thinking_so_tool_turns_need_no_reasoning_echo(tmp_path):
    endpoint = ScriptedOpenAI([], then=deepseek)
    trace = advisor(tmp_path, endpoint, llm_base_url="https://api.deepseek.com/v1", llm_model="deepseek-chat").ask(
        QUESTION
    )
    assert [b["thinking"] for b in endpoint.requests] == [{"type": "disabled"}] * 2
    assert trace.mode == "llm" and trace.answer == ANSWER


def test_deepseek_reasoning_content_never_reaches_the_answer(tmp_path):
    thinking = [raw(sse({"reasoning_content": "用户问的是 999 GB 吗？"}, {"content": ANSWER}, model="deepseek-chat"))]
    endpoint = ScriptedOpenAI([raw(sse(*call_delta("fit_training", FIT), finish="tool_calls")), *thinking])
    trace = advisor(tmp_path, endpoint, llm_base_url="https://api.deepseek.com/v1", llm_model="deepseek-chat").ask(
        QUESTION
    )
    assert trace.answer == ANSWER and "999" not in trace.answer


# ---- DashScope (Qwen) ----------------------------------------------------------------------------------------
def dashscope(body: dict) -> Reply:
    if body.get("enable_thinking", True) and not body.get("stream"):
        return Reply(
            status=400,
            error_body={
                "error": {
                    "code": "invalid_parameter_error",
                    "type": "invalid_request_error",
                    "message": "parameter.enable_thinking must be set to false for non-streaming calls",
                }
            },
        )
    tool_turn = not any(m.get("role") == "tool" for m in body["messages"])
    think = [] if body.get("enable_thinking") is False else [{"reasoning_content": "嗯，先调用工具……"}]
    if tool_turn:
        return raw(sse(*think, *call_delta("fit_training", FIT), finish="tool_calls", model="qwen3-32b"))
    return raw(
        sse(
            *think,
            {"content": ANSWER},
            model="qwen3-32b",
            usage={"prompt_tokens": 2100, "completion_tokens": 30, "total_tokens": 2130},
        )
    )


@pytest.mark.parametrize(("model", "thinking_flag"), [("qwen3-32b", False), ("qwq-plus", None)])
def test_dashscope_thinking_switch_and_reasoning_stream(tmp_path, model, thinking_flag):
    endpoint = ScriptedOpenAI([], then=dashscope)
    trace = advisor(
        tmp_path, endpoint, llm_base_url="https://dashscope.aliyuncs.com/compatible-mode/v1", llm_model=model
    ).ask(QUESTION)
    assert [b.get("enable_thinking") for b in endpoint.requests] == [thinking_flag] * 2
    assert trace.mode == "llm" and trace.answer == ANSWER  # a thinking-only model's reasoning stays out


# ---- vLLM -------------------------------------------------------------------------------------------------------
def test_vllm_without_tool_parser_flags_is_a_fallback_that_names_the_flags(tmp_path, caplog):
    refused = Reply(
        status=400,
        error_body={
            "object": "error",
            "type": "BadRequestError",
            "code": 400,
            "param": None,
            "message": '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
        },
    )
    endpoint = ScriptedOpenAI([refused])
    trace = advisor(
        tmp_path, endpoint, llm_base_url="http://gpu-box:8000/v1", llm_model="Qwen/Qwen2.5-7B-Instruct"
    ).ask(QUESTION)
    assert trace.mode == "llm-fallback" and trace.answer.startswith(FALLBACK_NOTES["endpoint"]["zh"])
    assert "--enable-auto-tool-choice" in trace.fallback_reason and "hermes" in trace.fallback_reason
    assert len(endpoint.requests) == 1  # a 400 is not retried


def test_vllm_hermes_parser_streams_tool_calls_in_pieces(tmp_path):
    endpoint = ScriptedOpenAI(
        [
            raw(
                sse(
                    *call_delta("fit_training", FIT, call_id="chatcmpl-tool-5d1e", whole=False),
                    finish="tool_calls",
                    model="Qwen/Qwen2.5-7B-Instruct",
                )
            ),
            raw(sse({"content": ANSWER}, model="Qwen/Qwen2.5-7B-Instruct")),
        ]
    )
    trace = advisor(
        tmp_path, endpoint, llm_base_url="http://gpu-box:8000/v1", llm_model="Qwen/Qwen2.5-7B-Instruct"
    ).ask(QUESTION)
    assert trace.mode == "llm" and trace.tool_calls[0].input == FIT


# ---- Ollama -----------------------------------------------------------------------------------------------------
def test_ollama_whole_tool_call_chunk_with_finish_stop_still_runs_the_tool(tmp_path):
    endpoint = ScriptedOpenAI(
        [
            raw(sse(*call_delta("fit_training", FIT, call_id="call_k3x9w2"), finish="stop", model="qwen2.5:7b")),
            raw(sse({"content": ANSWER}, model="qwen2.5:7b")),
        ]
    )
    trace = advisor(
        tmp_path, endpoint, llm_base_url="http://localhost:11434/v1", llm_model="qwen2.5:7b", llm_api_key=None
    ).ask(QUESTION)
    assert trace.mode == "llm" and [c.tool for c in trace.tool_calls] == ["fit_training"]
    assert endpoint.headers[0]["authorization"] == "Bearer ollama"


# ---- llama.cpp --------------------------------------------------------------------------------------------------
def test_llama_cpp_without_jinja_is_a_fallback_that_names_the_flag(tmp_path):
    endpoint = ScriptedOpenAI(
        [
            Reply(
                status=500,
                error_body={
                    "error": {"code": 500, "message": "tools param requires --jinja flag", "type": "server_error"}
                },
            )
        ],
        then=Reply(
            status=500,
            error_body={"error": {"code": 500, "message": "tools param requires --jinja flag", "type": "server_error"}},
        ),
    )
    trace = advisor(
        tmp_path, endpoint, llm_base_url="http://127.0.0.1:8080/v1", llm_model="smollm2", llm_api_key=None
    ).ask(QUESTION)
    assert trace.mode == "llm-fallback" and "--jinja" in trace.fallback_reason


def test_llama_cpp_tool_call_written_as_text_is_refused_by_the_gate(tmp_path):
    leaked = (
        '<tool_call>\n{"name": "fit_training", "arguments": {"model": "Qwen2.5-7B", "gpu": "A100 80GB"}}\n</tool_call>'
    )
    endpoint = ScriptedOpenAI([raw(sse({"content": leaked}, model="smollm2"))], then=raw(sse({"content": leaked})))
    trace = advisor(
        tmp_path, endpoint, llm_base_url="http://127.0.0.1:8080/v1", llm_model="smollm2", llm_api_key=None
    ).ask(QUESTION)
    assert trace.mode == "llm-fallback" and "markup" in trace.gate and "<tool_call>" not in trace.answer


# ---- OpenAI -----------------------------------------------------------------------------------------------------
def test_openai_usage_chunk_without_choices_is_read_not_crashed_on(tmp_path):
    usage = {"prompt_tokens": 2410, "completion_tokens": 18, "total_tokens": 2428}
    endpoint = ScriptedOpenAI(
        [
            raw(
                sse(
                    *call_delta("fit_training", FIT, call_id="call_Ab12"),
                    finish="tool_calls",
                    model="gpt-4o-mini-2024-07-18",
                    usage=usage,
                )
            ),
            raw(sse({"content": ANSWER}, model="gpt-4o-mini-2024-07-18", usage=usage)),
        ]
    )
    trace = advisor(tmp_path, endpoint, llm_base_url="https://api.openai.com/v1", llm_model="gpt-4o-mini").ask(QUESTION)
    assert trace.mode == "llm" and trace.answer == ANSWER
    assert all(b["stream_options"] == {"include_usage": True} for b in endpoint.requests)
