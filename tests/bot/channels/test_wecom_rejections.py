"""What a stranger, or a holder of the callback token, learns from a WeCom callback URL that refuses them.

Nothing is parsed before the signature holds (a body nested twenty thousand levels deep is refused like any
other garbage, never a server error), and once the signature holds every message that cannot be read gets the
same status and the same body, whatever the cause: bad padding, a wrong receive-id, a message that is not UTF-8.
Only the log says which (no oracle on the plaintext)."""

from __future__ import annotations

import base64
import logging
import os
import struct

import httpx
import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from fake_wecom import AGENT_ID, AIBOT_AES_KEY, APP_AES_KEY, CORP_ID

from bot.channels.ledger import DeliveryLog

DEEP = b'{"encrypt": ' + b"[" * 20_000 + b"]" * 20_000 + b"}"


def _aes(aes_key: str, data: bytes) -> str:
    """AES-256-CBC over `data` as given (no padding added): lets a test choose every byte of the plaintext."""
    key = base64.b64decode(aes_key + "=")
    enc = Cipher(algorithms.AES(key), modes.CBC(key[:16])).encryptor()
    return base64.b64encode(enc.update(data) + enc.finalize()).decode()


def _pkcs7(data: bytes) -> bytes:
    pad = 32 - len(data) % 32
    return data + bytes([pad]) * pad


def _plain(message: bytes, receive_id: bytes) -> bytes:
    return os.urandom(16) + struct.pack(">I", len(message)) + message + receive_id


def _unreadable(aes_key: str, receive_id: str) -> dict[str, str]:
    """Ciphertexts that decrypt, under the right key, to something the bot must not read."""
    good = receive_id.encode()
    message = b'{"msgid": "m1", "msgtype": "text", "text": {"content": "hi"}}'
    return {
        "bad padding": _aes(aes_key, _plain(message, good) + b"\x00" * (32 - len(_plain(message, good)) % 32 or 32)),
        "wrong receive-id": _aes(aes_key, _pkcs7(_plain(message, b"ww-somebody-else"))),
        "not UTF-8": _aes(aes_key, _pkcs7(_plain(b"\xff\xfe\xfa not text", good))),
        "length out of range": _aes(aes_key, _pkcs7(os.urandom(16) + struct.pack(">I", 10_000) + b"x" + good)),
    }


def test_an_unsigned_deeply_nested_body_is_a_400_and_never_parsed(bot_server, aibot_maker, advisor):
    base = bot_server()
    for body in (DEEP, b"[" * 50_000, b"\xff\xfe", b'{"encrypt": 1}'):
        resp = httpx.post(f"{base}/wecom/aibot", params=aibot_maker.query("x"), content=body, timeout=30)
        assert resp.status_code == 400, (body[:20], resp.status_code, resp.text[:200])
    app = httpx.post(f"{base}/wecom/app", params=aibot_maker.query("x"), content=b"<a>" * 20_000, timeout=30)
    assert app.status_code == 400
    assert DeliveryLog(advisor.store.engine).for_channel("wecom") == []


def test_after_the_signature_every_unreadable_ai_bot_message_gets_one_answer(bot_server, aibot_maker, advisor, caplog):
    caplog.set_level(logging.WARNING, logger="gpu_advisor.channels.wecom")
    base = bot_server()
    answers = {}
    for cause, enc in _unreadable(AIBOT_AES_KEY, "").items():
        query = aibot_maker.query(enc)  # signed with the real token: only the plaintext is wrong
        resp = httpx.post(f"{base}/wecom/aibot", params=query, json={"encrypt": enc}, timeout=30)
        answers[cause] = (resp.status_code, resp.text)
    assert len(set(answers.values())) == 1, answers
    status, text = next(iter(answers.values()))
    assert status == 400 and "padding" not in text and "receive" not in text and "UTF" not in text
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "bad padding" in logged and "wrong receive-id" in logged and "not UTF-8" in logged  # the detail is logged
    assert DeliveryLog(advisor.store.engine).for_channel("wecom") == []


def test_after_the_signature_every_unreadable_app_message_gets_one_answer(bot_server, app_maker, fake_wecom):
    base = bot_server()
    answers = {}
    for cause, enc in _unreadable(APP_AES_KEY, CORP_ID).items():
        outer = f"<xml><ToUserName><![CDATA[{CORP_ID}]]></ToUserName><AgentID>{AGENT_ID}</AgentID><Encrypt><![CDATA[{enc}]]></Encrypt></xml>"
        resp = httpx.post(f"{base}/wecom/app", params=app_maker.query(enc), content=outer.encode(), timeout=30)
        answers[cause] = (resp.status_code, resp.text)
    inner = f"<xml><ToUserName>ww-other</ToUserName><FromUserName>m</FromUserName><MsgType>text</MsgType><Content>hi</Content><AgentID>{AGENT_ID}</AgentID></xml>"
    query, raw = app_maker.xml_callback(inner, AGENT_ID)
    resp = httpx.post(f"{base}/wecom/app", params=query, content=raw, timeout=30)
    answers["another corp"] = (resp.status_code, resp.text)
    assert len(set(answers.values())) == 1, answers
    assert fake_wecom.sent == []


@pytest.mark.parametrize("path", ["/wecom/aibot", "/wecom/app"])
def test_before_the_signature_the_reason_is_still_said(bot_server, aibot_maker, path):
    """A forged signature is told so: it reveals nothing about a plaintext the sender cannot make."""
    base = bot_server()
    query = aibot_maker.query("abcd")
    query["msg_signature"] = "0" * 40
    body = b'{"encrypt": "abcd"}' if path.endswith("aibot") else b"<xml><Encrypt><![CDATA[abcd]]></Encrypt></xml>"
    resp = httpx.post(base + path, params=query, content=body, timeout=30)
    assert resp.status_code == 403 and "signature" in resp.text
