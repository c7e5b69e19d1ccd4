"""Over HTTP a body takes the JSON types its schema states (pydantic alone would read "8" as 8 and 1 as
true); the tools' other callers, language models among them, still get the lenient reading."""

from __future__ import annotations

import pytest

import tools

FIT = {"model": "Llama-2-7B", "gpu": "A100 80GB", "n_gpus": 8}


@pytest.mark.parametrize(
    ("path", "body", "field", "zh"),
    [
        ("/v1/tools/fit_training", {**FIT, "n_gpus": "8"}, "n_gpus", "应为数字，而不是文本"),
        ("/v1/tools/fit_training", {**FIT, "flash_attention": 1}, "flash_attention", "应为true 或 false，而不是数字"),
        ("/v1/feedback", {"conversation_id": "c1", "turn": "0", "rating": 1}, "turn", "应为数字，而不是文本"),
        (
            "/v1/chat/completions",
            {"model": "gpu-advisor", "messages": [{"role": "user", "content": "hi"}], "stream": "true"},
            "stream",
            "应为true 或 false，而不是文本",
        ),
    ],
)
def test_a_value_of_the_wrong_json_type_is_422_naming_the_field(client, path, body, field, zh):
    res = client.post(path, json=body, headers={"Accept-Language": "zh-CN"})
    assert res.status_code == 422
    assert res.json()["error"]["field"] == field and zh in res.json()["error"]["message"]


def test_whole_floats_and_token_phrases_keep_their_json_types(client):
    assert client.post("/v1/tools/fit_training", json={**FIT, "n_gpus": 8.0}).status_code == 200  # JSON's 8.0 is 8
    assert client.post("/v1/tools/training_time", json={**FIT, "tokens": "1B"}).status_code == 200  # text allowed


def test_the_same_arguments_from_a_language_model_are_still_read():
    assert tools.call("fit_training", {**FIT, "n_gpus": "8"}) == tools.call("fit_training", FIT)
