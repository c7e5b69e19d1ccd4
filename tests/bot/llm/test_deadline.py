"""Defects a real model server exposed (issue 18), each against the scripted endpoint: replies are capped
(`max_tokens`), one deadline covers the whole answer (a model that keeps streaming is stopped), and a
request that timed out is never sent again while the server may still be busy with it.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from harness import advisor, results
from scripted_openai import Reply, ScriptedOpenAI, raises, slow, status, text, tool_calls

from bot.answer.llm_turn import FALLBACK_NOTES

FIT = {"model": "Qwen2.5-7B", "gpu": "A100 80GB", "n_gpus": 8, "method": "full"}
QUESTION = "8 张 A100 80GB 全参微调 Qwen2.5-7B 放得下吗？"


def good_answer(body):
    return text(f"放得下：每卡约需 {results(body)[-1]['per_gpu_gb']} GB。")


@pytest.mark.parametrize(
    ("base_url", "model", "key"),
    [
        ("http://127.0.0.1:8080/v1", "smollm2", "max_tokens"),  # llama.cpp, vLLM, Ollama, DeepSeek, DashScope
        ("https://api.deepseek.com/v1", "deepseek-chat", "max_tokens"),
        ("https://api.openai.com/v1", "gpt-4o-mini", "max_completion_tokens"),
    ],
)
def test_every_request_caps_the_reply(tmp_path, base_url, model, key):
    endpoint = ScriptedOpenAI([tool_calls(("fit_training", FIT)), good_answer])
    trace = advisor(tmp_path, endpoint, llm_base_url=base_url, llm_model=model, llm_max_tokens=700).ask(QUESTION)
    assert trace.mode == "llm"
    assert [body.get(key) for body in endpoint.requests] == [700, 700]
    other = {"max_tokens", "max_completion_tokens"} - {key}
    assert all(not (other & body.keys()) for body in endpoint.requests)


def looping(first: str) -> Reply:
    """A model caught in a loop: it streams `first`, then "；" every 20 ms, and never finishes."""

    def events():
        head = {
            "id": "x",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": first}, "finish_reason": None}],
        }
        yield f"data: {json.dumps(head, ensure_ascii=False)}\n\n".encode()
        for _ in range(100_000):
            time.sleep(0.02)
            chunk = {**head, "choices": [{"index": 0, "delta": {"content": "；"}, "finish_reason": None}]}
            yield f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode()

    return Reply(stream=events)


def endless(body):
    return looping("放得下")


def test_a_model_that_keeps_streaming_is_stopped_at_the_answer_deadline(tmp_path):
    endpoint = ScriptedOpenAI([tool_calls(("fit_training", FIT)), endless], then=endless)
    t0 = time.monotonic()
    trace = advisor(tmp_path, endpoint, llm_deadline_s=1.0, llm_timeout_s=30).ask(QUESTION)
    elapsed = time.monotonic() - t0
    assert elapsed < 4, elapsed  # not the 30 s per-request timeout, and certainly not "never"
    assert trace.mode == "llm-fallback" and trace.fallback_reason.startswith("timeout:")
    assert trace.answer.startswith(FALLBACK_NOTES["timeout"]["zh"])
    assert len(endpoint.requests) == 2  # the tool round and the endless one; no repair after the deadline


def test_the_deadline_is_per_answer_not_per_request(tmp_path):
    # each request alone is well within the 5 s request timeout; together they pass the 1 s answer deadline
    endpoint = ScriptedOpenAI([slow(1.2, tool_calls(("fit_training", FIT))), slow(1.2, good_answer)])
    t0 = time.monotonic()
    trace = advisor(tmp_path, endpoint, llm_deadline_s=2.0, llm_timeout_s=5).ask(QUESTION)
    assert time.monotonic() - t0 < 4.0
    assert trace.mode == "llm-fallback" and trace.fallback_reason.startswith("timeout:")


def test_a_timed_out_request_is_not_retried(tmp_path):
    endpoint = ScriptedOpenAI([], then=raises(httpx.ReadTimeout))
    trace = advisor(tmp_path, endpoint, llm_max_retries=3).ask(QUESTION)
    assert len(endpoint.requests) == 1  # the server may still be working on it: do not double its load
    assert trace.mode == "llm-fallback" and trace.fallback_reason.startswith("timeout:")


@pytest.mark.parametrize(
    "failure", [raises(httpx.ConnectError), status(503), status(429)], ids=["refused", "503", "429"]
)
def test_failures_that_never_reached_the_model_are_retried(tmp_path, failure):
    endpoint = ScriptedOpenAI([failure, tool_calls(("fit_training", FIT)), good_answer])
    trace = advisor(tmp_path, endpoint, llm_max_retries=1).ask(QUESTION)
    assert trace.mode == "llm" and len(endpoint.requests) == 3


def test_a_context_length_400_is_a_labelled_fallback(tmp_path):
    too_long = Reply(
        status=400,
        error_body={
            "error": {
                "code": 400,
                "type": "exceed_context_size_error",
                "n_prompt_tokens": 9120,
                "n_ctx": 8192,
                "message": "the request exceeds the available context size, try increasing it",
            }
        },
    )
    endpoint = ScriptedOpenAI([too_long])
    trace = advisor(tmp_path, endpoint).ask(QUESTION)
    assert trace.mode == "llm-fallback" and trace.fallback_reason.startswith("context:")
    assert trace.answer.startswith(FALLBACK_NOTES["context"]["zh"])
    assert len(endpoint.requests) == 1


def test_sentences_already_streamed_stay_the_answer_when_the_model_then_runs_past_the_deadline(tmp_path):
    def verdict_then_loop(body):
        return looping(f"放得下：每卡约需 {results(body)[-1]['per_gpu_gb']} GB。")

    endpoint = ScriptedOpenAI([tool_calls(("fit_training", FIT)), verdict_then_loop])
    events: list[dict] = []
    trace = advisor(tmp_path, endpoint, llm_deadline_s=1.5).ask(QUESTION, emit=events.append)
    sent = "".join(e["text"] for e in events if e["type"] == "delta")
    assert trace.mode == "llm" and trace.answer == sent and sent.startswith("放得下：每卡约需")  # never taken back
    assert "；；" not in trace.answer
