"""Tenancy on a real server: a conversation belongs to the key that started it; every other key gets
404 on read, continue and feedback; an admin key reads all. Chat ids are keyed by caller and secret.
Keys are checked before a body is read, and failed attempts are limited per address."""

from __future__ import annotations

import hashlib
import json
import socket
import time

import httpx
import pytest

from bot.api import keys

Q = "70B 全参训练，单卡 A100 够吗？"


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def three_keys(advisor):
    _, alice = keys.create(advisor.store, "alice")
    _, bob = keys.create(advisor.store, "bob")
    _, ops = keys.create(advisor.store, "ops", admin=True)
    return alice, bob, ops


def test_another_key_cannot_read_continue_or_rate_a_conversation(serve, three_keys):
    alice, bob, ops = three_keys
    with httpx.Client(base_url=serve(), timeout=30) as http:
        first = http.post("/v1/ask", json={"text": Q}, headers=auth(alice))
        assert first.status_code == 200
        cid = first.json()["conversation_id"]

        read = http.get(f"/v1/conversations/{cid}", headers=auth(bob))
        assert read.status_code == 404 and read.json()["error"]["code"] == "unknown_conversation"
        assert Q not in read.text
        cont = http.post("/v1/ask", json={"text": "换成 8 卡呢？", "conversation_id": cid}, headers=auth(bob))
        assert cont.status_code == 404 and Q not in cont.text
        rate = http.post("/v1/feedback", json={"conversation_id": cid, "turn": 0, "rating": -1}, headers=auth(bob))
        assert rate.status_code == 404
        with http.stream(
            "POST", "/v1/ask/stream", json={"text": "换成 8 卡呢？", "conversation_id": cid}, headers=auth(bob)
        ) as resp:
            streamed = "".join(resp.iter_text())
        assert "unknown_conversation" in streamed and "final" not in streamed

        # the owner still sees exactly its one turn: nothing bob sent was added
        mine = http.get(f"/v1/conversations/{cid}", headers=auth(alice)).json()
        assert [t["question"] for t in mine["turns"]] == [Q] and mine["feedback"] == []
        assert (
            http.post(
                "/v1/feedback", json={"conversation_id": cid, "turn": 0, "rating": 1}, headers=auth(alice)
            ).status_code
            == 201
        )
        # an admin key reads every conversation
        admin = http.get(f"/v1/conversations/{cid}", headers=auth(ops))
        assert admin.status_code == 200 and admin.json()["turns"][0]["question"] == Q


def test_chat_callers_opening_with_the_same_words_never_share_a_conversation(serve, three_keys):
    alice, bob, _ = three_keys
    body = {"model": "gpu-advisor", "messages": [{"role": "user", "content": Q}]}
    with httpx.Client(base_url=serve(), timeout=30) as http:
        a = http.post("/v1/chat/completions", json=body, headers=auth(alice)).json()["gpu_advisor"]["conversation_id"]
        b = http.post("/v1/chat/completions", json=body, headers=auth(bob)).json()["gpu_advisor"]["conversation_id"]
        assert a != b
        # the old scheme (a hash of user, system prompt and first message) no longer names the conversation
        seed = json.dumps(["", [], Q], ensure_ascii=False)
        assert a != "chat-" + hashlib.sha256(seed.encode()).hexdigest()[:32]
        assert [t["question"] for t in http.get(f"/v1/conversations/{a}", headers=auth(alice)).json()["turns"]] == [Q]
        assert http.get(f"/v1/conversations/{a}", headers=auth(bob)).status_code == 404

        # the same client-chosen chat id from two callers: two conversations
        chosen = {"X-OpenWebUI-Chat-Id": "owui-chat-42"}
        a2 = http.post("/v1/chat/completions", json=body, headers={**auth(alice), **chosen}).json()
        b2 = http.post("/v1/chat/completions", json=body, headers={**auth(bob), **chosen}).json()
        assert a2["gpu_advisor"]["conversation_id"] != b2["gpu_advisor"]["conversation_id"]
        meta = {**body, "metadata": {"conversation_id": a2["gpu_advisor"]["conversation_id"]}}
        # bob naming alice's conversation in metadata gets a conversation of his own, not hers
        b3 = http.post("/v1/chat/completions", json=meta, headers=auth(bob)).json()["gpu_advisor"]["conversation_id"]
        assert b3 != a2["gpu_advisor"]["conversation_id"]
        # alice continues hers by the id she was given
        a3 = http.post("/v1/chat/completions", json=meta, headers=auth(alice)).json()["gpu_advisor"]["conversation_id"]
        assert a3 == a2["gpu_advisor"]["conversation_id"]


def _raw(base: str, head: bytes, body: bytes = b"", wait: float = 5.0) -> tuple[bytes, float]:
    host, port = base.removeprefix("http://").split(":")
    started = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=wait) as sock:
        sock.sendall(head + body)
        data = b""
        try:
            while chunk := sock.recv(65536):
                data += chunk
        except TimeoutError:
            pass
    return data, time.monotonic() - started


def test_a_bad_key_is_refused_before_the_body_is_read(serve, three_keys):
    base = serve()
    head = (
        b"POST /v1/ask HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer gpa_wrong-key-0123456789abcdef\r\n"
        b"Content-Type: application/json\r\nContent-Length: 60000\r\n\r\n"
    )
    data, took = _raw(base, head)  # the 60,000 promised bytes never come
    assert data.startswith(b"HTTP/1.1 401") and took < 3
    assert b"connection: close" in data.lower()


def test_failed_authentications_are_limited_per_address(serve, three_keys):
    _alice, _, _ = three_keys
    with httpx.Client(base_url=serve(auth_failures_per_minute=5), timeout=30) as http:
        codes = [
            http.get("/v1/models", headers=auth(f"gpa_guess-{i:04d}-0123456789abcdef")).status_code for i in range(8)
        ]
        assert codes[:5] == [401] * 5 and set(codes[5:]) == {429}
        blocked = http.get("/v1/models", headers=auth("gpa_guess-9999-0123456789abcdef"))
        assert blocked.status_code == 429 and int(blocked.headers["retry-after"]) >= 1
        assert blocked.json()["error"]["code"] == "too_many_auth_failures"
        assert http.get("/healthz").status_code == 200  # probes are not part of it


def test_docs_and_redoc_load_every_asset_from_this_server(serve):
    import re

    base = serve()
    with httpx.Client(base_url=base, timeout=30) as http:
        for page in ("/docs", "/redoc"):
            html = http.get(page).text
            urls = re.findall(r"""(?:src|href)=["']([^"']+)["']|url\(["']?([^"')]+)""", html)
            assets = [a or b for a, b in urls] + re.findall(r"""['"](/docs/static/[^'"]+)['"]""", html)
            assert assets, page
            assert not [a for a in assets if a.startswith(("http://", "https://", "//"))], (page, assets)
            assert "cdn" not in html.lower() and "fonts.googleapis" not in html
            for asset in {a for a in assets if a.startswith("/docs/static/")}:
                assert http.get(asset).status_code == 200, asset
        assert "Apache License 2.0" in http.get("/docs/static/LICENSES.txt").text


@pytest.mark.parametrize(
    "cid", ["wecom:AIBOTID42:zhangsan", "slack:T0123:C01:1700000000.000100", "widget:abc:x", "WeCom:x"]
)
def test_a_key_cannot_take_a_channel_conversation_before_its_user(serve, three_keys, advisor, cid):
    """A /v1 caller naming a channel's id is refused in its own language, and nothing is written: the WeCom or
    Slack user whose conversation that id is still gets their own answers later."""
    alice, _, _ = three_keys
    with httpx.Client(base_url=serve(), timeout=60) as http:
        en = http.post("/v1/ask", json={"text": Q, "conversation_id": cid}, headers=auth(alice))
        assert en.status_code == 422 and en.json()["error"]["code"] == "reserved_conversation_id"
        assert "chat channels" in en.json()["error"]["message"]
        zh = http.post(
            "/v1/ask", json={"text": Q, "conversation_id": cid}, headers={**auth(alice), "Accept-Language": "zh-CN"}
        )
        assert "聊天渠道" in zh.json()["error"]["message"]
        streamed = http.post("/v1/ask/stream", json={"text": Q, "conversation_id": cid}, headers=auth(alice))
        assert streamed.status_code == 422
    assert not advisor.store.exists(cid)


def test_ids_a_key_chooses_live_in_its_own_namespace(serve, three_keys, advisor):
    alice, bob, _ = three_keys
    with httpx.Client(base_url=serve(), timeout=60) as http:
        a = http.post("/v1/ask", json={"text": Q, "conversation_id": "chat-1"}, headers=auth(alice)).json()
        b = http.post("/v1/ask", json={"text": Q, "conversation_id": "chat-1"}, headers=auth(bob)).json()
        assert a["conversation_id"] != b["conversation_id"]  # the same choice, two conversations
        assert a["conversation_id"].endswith(":chat-1") and b["conversation_id"].endswith(":chat-1")
        again = http.post("/v1/ask", json={"text": "换成 8 卡呢？", "conversation_id": "chat-1"}, headers=auth(alice))
        assert again.json()["conversation_id"] == a["conversation_id"]  # the key's own choice continues
        direct = http.post(
            "/v1/ask", json={"text": "换成 4 卡呢？", "conversation_id": a["conversation_id"]}, headers=auth(alice)
        )
        assert direct.json()["conversation_id"] == a["conversation_id"]
        turns = http.get(f"/v1/conversations/{a['conversation_id']}", headers=auth(alice)).json()["turns"]
        assert len(turns) == 3
        by_name = http.get("/v1/conversations/chat-1", headers=auth(alice)).json()  # read by the name it chose
        assert by_name["id"] == a["conversation_id"] and len(by_name["turns"]) == 3
        rated = http.post(
            "/v1/feedback", json={"conversation_id": "chat-1", "turn": 0, "rating": 1}, headers=auth(alice)
        )
        assert rated.status_code == 201
        assert http.get("/v1/conversations/chat-1", headers=auth(bob)).json()["id"] == b["conversation_id"]
        # bob naming alice's id gets the 404 a missing id gets, and writes nothing into it
        stolen = http.post("/v1/ask", json={"text": Q, "conversation_id": a["conversation_id"]}, headers=auth(bob))
        assert stolen.status_code == 404
    assert len(advisor.store.turns(a["conversation_id"])) == 3
