"""A real uvicorn server on 127.0.0.1: the official openai SDK for chat completions, httpx for the rest."""

from __future__ import annotations

import httpx
import openai
import pytest
from openai import OpenAI

KEY = "k-test-0123456789abcdef0123"
Q1 = "70B 全参训练，单卡 A100 够吗？"


@pytest.fixture
def base(serve) -> str:
    return serve(api_keys=KEY)


@pytest.fixture
def sdk(base) -> OpenAI:
    return OpenAI(base_url=f"{base}/v1", api_key=KEY, max_retries=0, timeout=30)


def test_sdk_lists_the_model_and_refuses_a_wrong_key(sdk, base):
    assert [m.id for m in sdk.models.list()] == ["gpu-advisor"]
    with pytest.raises(openai.AuthenticationError):
        OpenAI(base_url=f"{base}/v1", api_key="sk-wrong-key-0123456789", max_retries=0).models.list()


def test_sdk_plain_chat_completion(sdk):
    done = sdk.chat.completions.create(model="gpu-advisor", messages=[{"role": "user", "content": Q1}])
    content = done.choices[0].message.content
    assert done.choices[0].finish_reason == "stop" and done.model == "gpu-advisor"
    assert "A100" in content and "**参考：**" in content  # cited sources stay in the markdown
    assert done.usage.total_tokens == done.usage.prompt_tokens + done.usage.completion_tokens


def test_sdk_streamed_chat_completion_with_usage(sdk):
    stream = sdk.chat.completions.create(
        model="gpu-advisor",
        stream=True,
        stream_options={"include_usage": True},
        messages=[{"role": "user", "content": "Llama 3 8B LoRA on one RTX 4090?"}],
    )
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert "RTX 4090" in text
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens > 0


def test_sdk_chat_continues_the_conversation_as_messages_grow(sdk, base):
    messages = [{"role": "user", "content": Q1}]
    first = sdk.chat.completions.create(model="gpu-advisor", messages=messages)
    messages += [
        {"role": "assistant", "content": first.choices[0].message.content},
        {"role": "user", "content": "换成 8 卡呢？"},
    ]
    second = sdk.chat.completions.create(model="gpu-advisor", messages=messages)
    extra_1, extra_2 = first.model_extra["gpu_advisor"], second.model_extra["gpu_advisor"]
    assert extra_1["conversation_id"] == extra_2["conversation_id"]
    assert "8" in second.choices[0].message.content and "A100" in second.choices[0].message.content
    conv = httpx.get(
        f"{base}/v1/conversations/{extra_1['conversation_id']}", headers={"Authorization": f"Bearer {KEY}"}
    )
    assert [t["question"] for t in conv.json()["turns"]] == [Q1, "换成 8 卡呢？"]
    fit = [c for c in conv.json()["turns"][1]["trace"]["tool_calls"] if c["tool"] == "fit_training"]
    assert fit[0]["input"]["n_gpus"] == 8


def test_sdk_sees_a_mid_stream_error_as_an_api_error(serve, advisor):
    from bot.answer.advisor import Advisor

    class Exploding:
        mode = "offline"

        def plan(self, *args, **kwargs):
            raise RuntimeError("internal detail")

    advisor.offline = Exploding()  # this test's advisor only; the index is shared, the planner is not
    assert isinstance(advisor, Advisor)
    base = serve()
    sdk = OpenAI(base_url=f"{base}/v1", api_key="unused", max_retries=0)
    with pytest.raises(openai.APIError) as caught:
        list(sdk.chat.completions.create(model="gpu-advisor", stream=True, messages=[{"role": "user", "content": Q1}]))
    assert "internal detail" not in str(caught.value)


def test_httpx_ask_twice_and_stream_over_a_socket(base, sse):
    headers = {"Authorization": f"Bearer {KEY}"}
    with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
        first = client.post("/v1/ask", json={"text": Q1}).json()
        second = client.post("/v1/ask", json={"text": "换成 8 卡呢？", "conversation_id": first["conversation_id"]})
        assert second.json()["conversation_id"] == first["conversation_id"]
        with client.stream("POST", "/v1/ask/stream", json={"text": "H20 显存多大？"}) as resp:
            raw = "".join(resp.iter_text())
        names = [name for name, _ in sse(raw)]
        assert names[-1] == "final" and "delta" in names
        assert client.get("/readyz").json()["status"] == "ready"
        assert "gpu_advisor_http_requests_total" in client.get("/metrics").text
        assert client.post("/v1/ask", json={"text": Q1}, headers={"Authorization": ""}).status_code == 401
