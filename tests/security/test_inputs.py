"""Inputs that used to answer 500, on a real server: NUL characters on PostgreSQL, token counts that
round to zero, integers too large for a float, Infinity and 1e308; a database outage; turns a crash
left pending; a conversation too long to send in one response."""

from __future__ import annotations

import datetime as dt

import httpx
import pytest
from pg import ADMIN_URL, temp_database
from sqlalchemy import update

from bot.answer.advisor import Advisor
from bot.core.store import Store
from bot.core.store_schema import turns
from bot.core.trace import AnswerTrace


@pytest.fixture
def pg_advisor(shared_advisor):
    """The offline advisor on a throw-away PostgreSQL database (skipped when the server is absent)."""
    with temp_database() as url:
        store = Store(url)
        yield Advisor(store=store, toolbox=shared_advisor.toolbox, offline=shared_advisor.offline), url
        store.close()


def _error(resp: httpx.Response, status: int) -> dict:
    assert resp.status_code == status, resp.text
    body = resp.json()["error"]
    assert "Traceback" not in resp.text
    return body


@pytest.mark.postgres
def test_nul_characters_are_422_naming_the_field_on_postgresql(serve, pg_advisor):
    adv, _ = pg_advisor
    with httpx.Client(base_url=serve(use_advisor=adv), timeout=30) as http:
        assert _error(http.post("/v1/ask", json={"text": "H100\x00 显存多大？"}), 422)["field"] == "text"
        chat = {"model": "gpu-advisor", "messages": [{"role": "user", "content": "hi\x00"}]}
        assert _error(http.post("/v1/chat/completions", json=chat), 422)["field"] == "messages.0.content"
        cid = http.post("/v1/ask", json={"text": "H100 显存多大？"}).json()["conversation_id"]
        rate = {"conversation_id": cid, "turn": 0, "rating": 1, "comment": "good\x00"}
        assert _error(http.post("/v1/feedback", json=rate), 422)["field"] == "comment"
        assert _error(http.get("/v1/conversations/abc%00def"), 422)["field"] == "conversation_id"
        assert http.get(f"/v1/conversations/{cid}").status_code == 200  # the store is fine afterwards


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ('{"model": "Llama-2-7B", "gpu": "A100", "n_gpus": 8, "tokens": 0.5}', "tokens"),
        ('{"model": "Llama-2-7B", "gpu": "A100", "n_gpus": 8, "tokens": 1e-308}', "tokens"),
        ('{"model": "Llama-2-7B", "gpu": "A100", "n_gpus": 8, "tokens": 1' + "0" * 400 + "}", "tokens"),
        ('{"model": "Llama-2-7B", "gpu": "A100", "n_gpus": 1' + "0" * 400 + ', "tokens": "1B"}', "n_gpus"),
        ('{"model": "Llama-2-7B", "gpu": "A100", "n_gpus": 8, "tokens": "1B", "mfu": NaN}', "mfu"),
    ],
)
def test_training_time_numbers_out_of_range_are_422(serve, body, field):
    with httpx.Client(base_url=serve(), timeout=30) as http:
        resp = http.post("/v1/tools/training_time", content=body, headers={"Content-Type": "application/json"})
        assert _error(resp, 422)["field"] == field


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("run_cost", '{"gpu": "A100", "gpu_hours": Infinity}', "gpu_hours"),
        ("run_cost", '{"gpu": "A100", "gpu_hours": 1e308}', "gpu_hours"),
        ("run_cost", '{"gpu": "A100", "gpu_hours": 100, "price_cny_per_hour": 1e308}', "price_cny_per_hour"),
        ("rent_vs_buy", '{"gpu": "A100", "n_gpus": 8, "purchase_cny": Infinity}', "purchase_cny"),
        ("fit_inference", '{"model": "Llama-2-7B", "gpu": "A100", "context_len": 1e308}', "context_len"),
    ],
)
def test_infinite_or_huge_numbers_are_422_not_null(serve, path, body, field):
    with httpx.Client(base_url=serve(), timeout=30) as http:
        resp = http.post(f"/v1/tools/{path}", content=body, headers={"Content-Type": "application/json"})
        assert _error(resp, 422)["field"] == field


@pytest.mark.postgres
def test_a_database_outage_is_503_with_retry_after(serve, shared_advisor):
    psycopg = pytest.importorskip("psycopg")
    with temp_database() as url:
        store = Store(url)
        adv = Advisor(store=store, toolbox=shared_advisor.toolbox, offline=shared_advisor.offline)
        with httpx.Client(base_url=serve(use_advisor=adv), timeout=30) as http:
            assert http.post("/v1/ask", json={"text": "H100 显存多大？"}).status_code == 200
            name = url.rsplit("/", 1)[1]
            with psycopg.connect(ADMIN_URL, autocommit=True) as admin:  # the database goes away
                admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
            for resp in (
                http.post("/v1/ask", json={"text": "H100 显存多大？"}),
                http.get("/v1/conversations/abc"),
                http.post("/v1/feedback", json={"conversation_id": "abc", "turn": 0, "rating": 1}),
            ):
                err = _error(resp, 503)
                assert err["code"] == "store_unavailable" and int(resp.headers["retry-after"]) > 0
            assert http.get("/readyz").json()["store"] == "unreachable"
        store.close()


def test_turns_left_pending_by_a_crash_are_closed_as_failed_on_start(serve, advisor):
    store = advisor.store
    cid = store.new_conversation(owner="local")
    old = store.start_turn(cid, "crashed while answering", owner="local")
    recent = store.start_turn(cid, "another worker is answering this now", owner="local")
    long_ago = dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)
    with store.engine.begin() as conn:
        conn.execute(
            update(turns).where(turns.c.conversation_id == cid, turns.c.idx == old).values(created_at=long_ago)
        )
    with httpx.Client(base_url=serve(), timeout=30) as http:
        got = http.get(f"/v1/conversations/{cid}").json()["turns"]
    assert [t["status"] for t in got] == ["failed", "pending"]
    assert recent == 1


def test_a_long_conversation_is_read_a_page_at_a_time(serve, advisor):
    store = advisor.store
    cid = store.new_conversation(owner="local")
    for i in range(130):
        idx = store.start_turn(cid, f"question {i}", owner="local")
        store.finish_turn(
            cid, idx, AnswerTrace(conversation_id=cid, answer=f"answer {i}", language="en", mode="offline")
        )
    with httpx.Client(base_url=serve(), timeout=30) as http:
        first = http.get(f"/v1/conversations/{cid}").json()
        assert len(first["turns"]) == 50 and first["total_turns"] == 130 and first["next_offset"] == 50
        last = http.get(f"/v1/conversations/{cid}", params={"offset": 100, "limit": 200}).json()
        assert [t["turn"] for t in last["turns"]] == list(range(100, 130)) and last["next_offset"] is None
        assert _error(http.get(f"/v1/conversations/{cid}", params={"limit": 100_000}), 422)["field"] == "limit"


@pytest.mark.parametrize(
    "path", ["/v1/ask", "/v1/ask/stream", "/v1/feedback", "/v1/tools/fit_training", "/v1/chat/completions", "/mcp"]
)
def test_json_nested_deeper_than_any_parser_goes_is_refused_not_a_crash(serve, path):
    """20,000 levels of nesting (inside the body limit): a clear refusal on every JSON route, never a 500."""
    base = serve()
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    for body in (b"[" * 20_000 + b"]" * 20_000, b'{"text": ' + b"[" * 20_000 + b"]" * 20_000 + b"}", b'{"a":' * 9_000):
        resp = httpx.post(base + path, content=body, headers=headers, timeout=30)
        assert 400 <= resp.status_code < 500, (path, resp.status_code, resp.text[:200])
        assert "Traceback" not in resp.text and "RecursionError" not in resp.text
