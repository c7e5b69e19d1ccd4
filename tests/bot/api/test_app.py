"""The API against the app in-process (FastAPI TestClient): routes, wire formats, errors, metrics."""

from __future__ import annotations

import pytest

from bot.answer.advisor import Advisor
from bot.api.routes.openai import ChatCompletionRequest
from bot.api.routes.openai import conversation_id as chat_conversation_id

FULL_70B = "70B 全参训练，单卡 A100 够吗？"


def _error(resp, status: int) -> dict:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert set(body) == {"error"}
    assert body["error"]["message"]
    assert "Traceback" not in resp.text
    return body["error"]


# ---- /v1/ask and conversations -----------------------------------------------------------------------


def test_ask_returns_a_trace_whose_numbers_all_have_sources(client):
    resp = client.post("/v1/ask", json={"text": FULL_70B})
    assert resp.status_code == 200
    trace = resp.json()
    assert trace["language"] == "zh" and trace["mode"] == "offline"
    assert "fit_training" in [c["tool"] for c in trace["tool_calls"]]
    assert trace["numbers"] and trace["ungrounded"] == []
    assert resp.headers["x-request-id"]


def test_conversation_continues_across_two_asks_and_is_readable(client):
    first = client.post("/v1/ask", json={"text": FULL_70B}).json()
    cid = first["conversation_id"]
    second = client.post("/v1/ask", json={"text": "换成 8 卡呢？", "conversation_id": cid}).json()
    assert second["conversation_id"] == cid
    fit = [c for c in second["tool_calls"] if c["tool"] == "fit_training"]
    assert fit and fit[0]["input"]["n_gpus"] == 8  # the follow-up inherited model and GPU from the first turn
    assert (
        fit[0]["input"]["model"]
        == next(c for c in first["tool_calls"] if c["tool"] == "fit_training")["input"]["model"]
    )

    conv = client.get(f"/v1/conversations/{cid}").json()
    assert [t["question"] for t in conv["turns"]] == [FULL_70B, "换成 8 卡呢？"]
    assert [t["turn"] for t in conv["turns"]] == [0, 1]
    assert conv["turns"][1]["trace"]["answer"] == second["answer"]
    assert [t["trace"] for t in conv["turns"]] == [first, second]  # the stored traces are the answers sent, whole
    assert all(t["status"] == "answered" for t in conv["turns"])


def test_unknown_conversation_is_404(client):
    err = _error(client.get("/v1/conversations/nope"), 404)
    assert err["code"] == "unknown_conversation"


def test_answer_language_can_be_forced(client):
    trace = client.post("/v1/ask", json={"text": FULL_70B, "lang": "en"}).json()
    assert trace["language"] == "en"


@pytest.mark.parametrize(
    "body, field",
    [
        ({}, "text"),
        ({"text": "   "}, "text"),
        ({"text": "x" * 4001}, "text"),
        ({"text": "hi", "lang": "fr"}, "lang"),
        ({"text": "hi", "conversation_id": "a b"}, "conversation_id"),
        ({"text": "hi", "extra": 1}, "extra"),
    ],
)
def test_bad_ask_bodies_are_422_naming_the_field(client, body, field):
    err = _error(client.post("/v1/ask", json=body), 422)
    assert err["field"] == field and err["code"] == "invalid_input"


def test_malformed_json_is_422(client):
    resp = client.post("/v1/ask", content=b"{not json", headers={"content-type": "application/json"})
    assert _error(resp, 422)["field"] == "body"


@pytest.mark.parametrize(
    "raw",
    [
        b'{"text":' + b"[" * 5000 + b"]" * 5000 + b"}",  # nested deeper than the parser goes
        '{"text": "8卡H800显存够吗"}'.encode("gb18030"),  # not UTF-8
        b'{"text": "\xff\xfe"}',  # invalid UTF-8 bytes
    ],
    ids=["depth", "gb18030", "bad-utf8"],
)
def test_json_that_cannot_be_parsed_is_the_documented_422_never_a_500(client, raw):
    """docs/api.md: a body that is not JSON is 422 (field `body`); depth and encoding included."""
    resp = client.post("/v1/ask", content=raw, headers={"content-type": "application/json", "Accept-Language": "zh"})
    err = _error(resp, 422)
    assert err["field"] == "body" and err["message"] == "请求体不是有效的 JSON。"


def test_validation_message_follows_accept_language(client):
    err = _error(client.post("/v1/ask", json={}, headers={"Accept-Language": "zh-CN,zh;q=0.9"}), 422)
    assert err["message"] == "缺少字段“text”。"


# ---- streaming ------------------------------------------------------------------------------------------


def test_ask_stream_sends_tool_events_deltas_and_the_final_trace(client, sse_json):
    with client.stream("POST", "/v1/ask/stream", json={"text": FULL_70B}) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        assert resp.headers["x-accel-buffering"] == "no"
        events = sse_json(resp.read().decode())
    names = [name for name, _ in events]
    assert names[0] == "tool_started" and names[-1] == "final"
    assert "tool_finished" in names and "delta" in names
    for name, data in events:
        assert data["type"] == name
    final = events[-1][1]["trace"]
    assert "".join(d["text"] for n, d in events if n == "delta") == final["answer"]
    conv = client.get(f"/v1/conversations/{final['conversation_id']}").json()
    assert conv["turns"][0]["answer"] == final["answer"]


def test_ask_stream_reports_failures_as_an_error_event(make_client, advisor, sse_json):
    broken = Advisor(store=advisor.store, toolbox=advisor.toolbox, offline=_Exploding())
    client = make_client(use_advisor=broken)
    with client.stream("POST", "/v1/ask/stream", json={"text": FULL_70B}) as resp:
        assert resp.status_code == 200
        events = sse_json(resp.read().decode())
    assert events[-1][0] == "error"
    assert events[-1][1]["code"] == "internal" and "boom" not in str(events)
    turns = advisor.store.turns(_only_conversation(advisor))
    assert turns[0].question == FULL_70B and turns[0].status == "failed"  # the question was kept


class _Exploding:
    mode = "offline"

    def plan(self, *args, **kwargs):
        raise RuntimeError("boom: secret internals")


def _only_conversation(advisor: Advisor) -> str:
    from sqlalchemy import select

    from bot.core.store_schema import conversations

    with advisor.store.engine.connect() as conn:
        (cid,) = conn.execute(select(conversations.c.id)).one()
    return cid


def test_unhandled_errors_are_500_json_with_the_request_id_and_no_trace(make_client, advisor):
    broken = Advisor(store=advisor.store, toolbox=advisor.toolbox, offline=_Exploding())
    client = make_client(use_advisor=broken, raise_server_exceptions=False)
    resp = client.post("/v1/ask", json={"text": FULL_70B}, headers={"X-Request-ID": "req-42"})
    err = _error(resp, 500)
    assert err["code"] == "internal" and err["request_id"] == "req-42"
    assert resp.headers["x-request-id"] == "req-42"
    assert "boom" not in resp.text and "RuntimeError" not in resp.text


# ---- feedback -------------------------------------------------------------------------------------------


def test_feedback_is_stored_and_shown_with_the_conversation(client, advisor):
    cid = client.post("/v1/ask", json={"text": FULL_70B}).json()["conversation_id"]
    resp = client.post("/v1/feedback", json={"conversation_id": cid, "turn": 0, "rating": -1, "comment": "太贵"})
    assert resp.status_code == 201
    assert advisor.store.feedback_for(cid)[0]["rating"] == -1
    assert client.get(f"/v1/conversations/{cid}").json()["feedback"][0]["comment"] == "太贵"


def test_feedback_for_a_missing_turn_is_404_and_bad_rating_422(client):
    cid = client.post("/v1/ask", json={"text": FULL_70B}).json()["conversation_id"]
    assert _error(client.post("/v1/feedback", json={"conversation_id": cid, "turn": 5, "rating": 1}), 404)
    err = _error(client.post("/v1/feedback", json={"conversation_id": cid, "turn": 0, "rating": 3}), 422)
    assert err["field"] == "rating"


# ---- catalog and tools ----------------------------------------------------------------------------------


def test_catalog_lists_and_resolves_aliases(client):
    gpus = client.get("/v1/catalog/gpus").json()
    assert len(gpus) > 10 and all(g["sources"] for g in gpus)
    assert any(m["id"].startswith("llama") for m in client.get("/v1/catalog/models").json())
    one = client.get("/v1/catalog/gpus/A100 80G").json()
    assert one["id"] == "a100-sxm4-80gb" and one["memory_gb"] == 80


def test_unknown_gpu_is_404_with_suggestions_in_chinese(client):
    resp = client.get("/v1/catalog/gpus/A10000", headers={"Accept-Language": "zh-CN,zh;q=0.9,en;q=0.8"})
    err = _error(resp, 404)
    assert err["code"] == "unknown_gpu"
    assert "未知" in err["message"] and "A10000" in err["message"]
    assert any("A100" in s for s in err["suggestions"])
    en = _error(client.get("/v1/catalog/gpus/A10000?lang=en"), 404)
    assert en["message"].startswith("Unknown GPU")


def test_tool_endpoint_runs_the_calculator(client):
    resp = client.post("/v1/tools/fit_training", json={"model": "70B", "gpu": "A100 80GB", "method": "full"})
    assert resp.status_code == 200
    out = resp.json()
    assert out["fits"] is False and out["min_gpus"] > 1 and out["assumptions"]


def test_tool_errors_name_the_field(client):
    err = _error(client.post("/v1/tools/fit_training", json={"model": "70B", "gpu": "A100", "n_gpus": 0}), 422)
    assert err["field"] == "n_gpus"
    err = _error(client.post("/v1/tools/fit_training", json={"model": "70B", "gpu": "B9000"}), 404)
    assert err["code"] == "unknown_gpu" and err["suggestions"]
    err = _error(client.post("/v1/tools/fit_trainin", json={}), 404)
    assert err["suggestions"][0] == "fit_training"


def test_search_knowledge_endpoint_returns_citable_passages(client):
    out = client.post("/v1/tools/search_knowledge", json={"query": "H20 显存", "k": 3}).json()
    assert 0 < len(out["passages"]) <= 3 and all(p["id"] and p["source"] for p in out["passages"])


def test_every_tool_has_its_own_schema_in_openapi(client):
    spec = client.get("/openapi.json").json()
    from bot.core.toolbox import Toolbox

    for name in Toolbox(None).names():
        op = spec["paths"][f"/v1/tools/{name}"]["post"]
        body_ref = op["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        out_ref = op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
        assert body_ref != out_ref
        assert body_ref.rsplit("/", 1)[1] in spec["components"]["schemas"]
        assert {"401", "404", "413", "422", "429"} <= set(op["responses"])


# ---- OpenAI-compatible, in-process -----------------------------------------------------------------------


def test_models_lists_gpu_advisor(client):
    assert [m["id"] for m in client.get("/v1/models").json()["data"]] == ["gpu-advisor"]


def test_streamed_chat_chunks_follow_the_openai_wire_format(client, sse_json):
    body = {
        "model": "gpu-advisor",
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [{"role": "user", "content": "Llama 3 8B LoRA on one RTX 4090?"}],
    }
    with client.stream("POST", "/v1/chat/completions", json=body) as resp:
        assert resp.status_code == 200 and resp.headers["x-accel-buffering"] == "no"
        events = sse_json(resp.read().decode())
    assert events[-1][1] == "[DONE]"
    chunks = [data for _, data in events[:-1]]
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    finish = [c for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
    assert len(finish) == 1 and finish[0]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] > 0
    assert chunks.index(finish[0]) == len(chunks) - 2
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    plain = client.post("/v1/chat/completions", json={**body, "stream": False}).json()
    assert text == plain["choices"][0]["message"]["content"]


def test_chat_with_unknown_model_or_no_user_message_is_refused(client):
    err = _error(
        client.post("/v1/chat/completions", json={"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}),
        404,
    )
    assert err["code"] == "model_not_found"
    err = _error(
        client.post(
            "/v1/chat/completions",
            json={"model": "gpu-advisor", "messages": [{"role": "system", "content": "be brief"}]},
        ),
        422,
    )
    assert err["field"] == "messages"


def test_chat_conversation_id_is_stable_while_messages_grow():
    first = ChatCompletionRequest(model="gpu-advisor", messages=[{"role": "user", "content": "q1"}])
    later = ChatCompletionRequest(
        model="gpu-advisor",
        messages=[
            {"role": "user", "content": "q1"},
            {"role": "assistant", "content": "a1"},
            {"role": "user", "content": "q2"},
        ],
    )
    other_user = ChatCompletionRequest(model="gpu-advisor", user="u2", messages=[{"role": "user", "content": "q1"}])
    assert chat_conversation_id(first, None) == chat_conversation_id(later, None)
    assert chat_conversation_id(first, None) != chat_conversation_id(other_user, None)
    # a chosen id is namespaced by the caller; one the caller already owns is used as it is
    mine = chat_conversation_id(first, "owui-chat-1", "key:a", "s3cret")
    assert mine == chat_conversation_id(later, "owui-chat-1", "key:a", "s3cret") != "owui-chat-1"
    assert mine != chat_conversation_id(first, "owui-chat-1", "key:b", "s3cret")
    assert chat_conversation_id(first, "owui-chat-1", "key:a", "s3cret", owns=lambda cid: True) == "owui-chat-1"
    # two callers who open with the same words never share; the id depends on the server's secret
    assert chat_conversation_id(first, None, "key:a", "s3cret") != chat_conversation_id(first, None, "key:b", "s3cret")
    assert chat_conversation_id(first, None, "key:a", "s3cret") != chat_conversation_id(first, None, "key:a", "other")


# ---- operations -----------------------------------------------------------------------------------------


def test_health_ready_and_metrics(client):
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["index_chunks"] > 0 and ready.json()["store"] == "ok"
    client.post("/v1/ask", json={"text": FULL_70B})
    client.get("/v1/conversations/missing")
    text = client.get("/metrics").text
    assert 'gpu_advisor_answers_total{mode="offline"} 1.0' in text
    assert 'gpu_advisor_http_requests_total{method="POST",route="/v1/ask",status="200"} 1.0' in text
    assert 'route="/v1/conversations/{conversation_id}",status="404"' in text
    assert 'gpu_advisor_http_request_duration_seconds_bucket{le="0.005",route="/v1/ask"}' in text


def test_readyz_is_503_when_the_store_is_unreachable(make_client, advisor):
    client = make_client()
    advisor.store.ping = _unreachable  # type: ignore[method-assign]
    resp = client.get("/readyz")
    assert resp.status_code == 503 and resp.json()["store"] == "unreachable"


def _unreachable() -> bool:
    raise OSError("database is down")


def test_request_id_is_echoed_or_made(client):
    assert client.get("/healthz", headers={"X-Request-ID": "abc-123"}).headers["x-request-id"] == "abc-123"
    made = client.get("/healthz", headers={"X-Request-ID": "bad id with spaces"}).headers["x-request-id"]
    assert made != "bad id with spaces" and len(made) == 32
