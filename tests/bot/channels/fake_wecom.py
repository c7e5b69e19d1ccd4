"""A fake WeCom on loopback, speaking the documented protocol, recording what the bot sent it.

    API host (WECOM_API_BASE):   GET  /cgi-bin/gettoken?corpid&corpsecret   -> {errcode, access_token, expires_in}
                                 POST /cgi-bin/message/send?access_token=…  -> {errcode, errmsg}
                                 POST /response/{key}                       (a message's response_url)
    long connection (WECOM_WS_URL): ws://…/ws — frames {cmd, headers: {req_id}, body}: aibot_subscribe,
                                 ping, aibot_msg_callback / aibot_event_callback (pushed by the test),
                                 aibot_respond_msg / aibot_respond_welcome_msg / aibot_send_msg (recorded, acked)

And `CallbackMaker`: encrypted callbacks built the way WeCom builds them — the ciphertext made by an
independent implementation (wechatpy), the signature computed here — plus decryption of the replies,
each checked against the documented reply formats (`check_reply`: stream, stream_with_template_card with
a button_interaction card, template_card_event clicks, response_url markdown).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import re
import threading
import time
import uuid
from typing import Any

from fastapi import FastAPI, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import PlainTextResponse
from loopback import ServerThread, free_port  # noqa: F401  (re-exported for the channel tests)
from wechatpy.enterprise.crypto import PrpCrypto
from wechatpy.utils import to_text

AIBOT_TOKEN = "aibotTokenForTests42"
AIBOT_AES_KEY = "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C"  # 43 characters, as the console shows
APP_TOKEN = "appTokenForTests42"
APP_AES_KEY = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG"
CORP_ID = "ww0123456789abcdef"
AGENT_ID = "1000002"


class FakeWeCom:
    CORP_SECRET = "app-secret-for-tests-0001"
    BOT_ID = "aibot-ws-1"
    BOT_SECRET = "bot-secret-for-tests-0001"

    def __init__(self):
        self.lock = threading.Lock()
        self.tokens_issued: list[str] = []
        self.valid_tokens: set[str] = set()
        self.expire_next_send = False
        self.fail_sends = 0  # the next n message/send calls answer HTTP 500 before anything is sent (an outage)
        self.failed_sends = 0
        self.sent: list[dict] = []  # message/send bodies
        self.responses: list[tuple[str, dict]] = []  # response_url posts
        self.frames_in: list[dict] = []  # every frame the bot sent over the long connection
        self.subscribed = threading.Event()
        self.connections = 0
        self.drop_next_connection = False
        self._ws: WebSocket | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._send_lock: asyncio.Lock | None = None
        self.app = self._build()
        self.thread: ServerThread | None = None

    # ---- lifecycle --------------------------------------------------------------------------------
    def start(self) -> FakeWeCom:
        self.thread = ServerThread(self.app)
        return self

    def stop(self) -> None:
        if self.thread:
            self.thread.stop()

    @property
    def base(self) -> str:
        return self.thread.base

    @property
    def ws_url(self) -> str:
        return self.thread.base.replace("http://", "ws://") + "/ws"

    def response_url(self) -> str:
        return f"{self.base}/response/{uuid.uuid4().hex}"

    # ---- what the bot sent -------------------------------------------------------------------------
    def markdown_to(self, user: str) -> list[str]:
        with self.lock:
            return [
                b["markdown"]["content"] for b in self.sent if b.get("touser") == user and b["msgtype"] == "markdown"
            ]

    def respond_frames(self, req_id: str) -> list[dict]:
        with self.lock:
            return [
                f for f in self.frames_in if f.get("cmd") == "aibot_respond_msg" and f["headers"]["req_id"] == req_id
            ]

    def wait_for(self, predicate, timeout: float = 60.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.05)
        return False

    # ---- pushing callbacks over the long connection -------------------------------------------------
    def push(self, cmd: str, body: dict, req_id: str | None = None) -> str:
        req_id = req_id or uuid.uuid4().hex
        frame = {"cmd": cmd, "headers": {"req_id": req_id}, "body": body}
        assert self._ws is not None and self._loop is not None, "no bot connected"
        asyncio.run_coroutine_threadsafe(self._send(self._ws, frame), self._loop).result(5)
        return req_id

    async def _send(self, websocket: WebSocket, frame: dict) -> None:
        async with self._send_lock:  # one frame at a time on the socket, pushes and acks alike
            await websocket.send_text(json.dumps(frame, ensure_ascii=False))

    def kick(self) -> None:
        """Close the bot's connection from the server side (a network blip)."""
        assert self._ws is not None and self._loop is not None
        asyncio.run_coroutine_threadsafe(self._ws.close(code=1011), self._loop).result(5)

    # ---- the fake's app ------------------------------------------------------------------------------
    def _build(self) -> FastAPI:
        app = FastAPI()

        @app.get("/cgi-bin/gettoken")
        def gettoken(corpid: str = "", corpsecret: str = ""):
            if corpsecret != self.CORP_SECRET:
                return {"errcode": 40001, "errmsg": "invalid credential"}
            token = "tok-" + uuid.uuid4().hex
            with self.lock:
                self.tokens_issued.append(token)
                self.valid_tokens.add(token)
            return {"errcode": 0, "errmsg": "ok", "access_token": token, "expires_in": 7200}

        @app.post("/cgi-bin/message/send")
        async def send(request: Request, access_token: str = ""):
            body = await request.json()
            with self.lock:
                if self.fail_sends > 0:
                    self.fail_sends -= 1
                    self.failed_sends += 1
                    return PlainTextResponse("<html>502 Bad Gateway</html>", status_code=500)
                if self.expire_next_send:
                    self.expire_next_send = False
                    self.valid_tokens.discard(access_token)
                if access_token not in self.valid_tokens:
                    return {"errcode": 42001, "errmsg": "access_token expired"}
                content = (body.get("markdown") or body.get("text") or {}).get("content", "")
                if len(content.encode("utf-8")) > 2048:
                    return {"errcode": 40058, "errmsg": "content exceed max length"}
                self.sent.append(body)
            return {"errcode": 0, "errmsg": "ok", "msgid": uuid.uuid4().hex}

        @app.post("/response/{key}")
        async def response(key: str, request: Request):
            body = await request.json()
            try:
                check_active_reply(body)
            except AssertionError as err:
                return {"errcode": 40058, "errmsg": f"invalid message: {err}"}
            with self.lock:
                if any(k == key for k, _ in self.responses):
                    return {"errcode": 40008, "errmsg": "response_url used"}  # single use
                self.responses.append((key, body))
            return {"errcode": 0, "errmsg": "ok"}

        @app.websocket("/ws")
        async def ws(websocket: WebSocket):
            await websocket.accept()
            with self.lock:
                self.connections += 1
                drop = self.drop_next_connection
                self.drop_next_connection = False
            if drop:
                await websocket.close(code=1011)
                return
            try:
                first = json.loads(await websocket.receive_text())
                ok = (
                    first.get("cmd") == "aibot_subscribe"
                    and first["body"].get("bot_id") == self.BOT_ID
                    and first["body"].get("secret") == self.BOT_SECRET
                )
                await websocket.send_text(
                    json.dumps(
                        {
                            "headers": {"req_id": first["headers"]["req_id"]},
                            "errcode": 0 if ok else 40001,
                            "errmsg": "ok" if ok else "invalid secret",
                        }
                    )
                )
                if not ok:
                    await websocket.close()
                    return
                self._ws, self._loop = websocket, asyncio.get_running_loop()
                self._send_lock = asyncio.Lock()
                self.subscribed.set()
                while True:
                    frame = json.loads(await websocket.receive_text())
                    with self.lock:
                        self.frames_in.append(frame)
                    await self._send(
                        websocket, {"headers": {"req_id": frame["headers"]["req_id"]}, "errcode": 0, "errmsg": "ok"}
                    )
            except WebSocketDisconnect:
                pass
            finally:
                self.subscribed.clear()

        return app


class CallbackMaker:
    """Builds encrypted AI-bot (JSON) and app (XML) callbacks the way WeCom does, and opens replies."""

    def __init__(self, token: str, aes_key: str, receive_id: str):
        self.token, self.aes_key, self.receive_id = token, aes_key, receive_id
        self.prp = PrpCrypto(base64.b64decode(aes_key + "="))

    def sign(self, timestamp: str, nonce: str, encrypted: str) -> str:
        return hashlib.sha1("".join(sorted([self.token, timestamp, nonce, encrypted])).encode()).hexdigest()

    def encrypt(self, text: str, receive_id: str | None = None) -> str:
        return to_text(self.prp.encrypt(text, self.receive_id if receive_id is None else receive_id))

    def query(self, encrypted: str, timestamp: str | None = None, nonce: str | None = None) -> dict[str, str]:
        timestamp = timestamp or str(int(time.time()))
        nonce = nonce or uuid.uuid4().hex[:10]
        return {"msg_signature": self.sign(timestamp, nonce, encrypted), "timestamp": timestamp, "nonce": nonce}

    def json_callback(self, body: dict[str, Any], **kw) -> tuple[dict[str, str], bytes]:
        enc = self.encrypt(json.dumps(body, ensure_ascii=False), kw.pop("receive_id", None))
        return self.query(enc, **kw), json.dumps({"encrypt": enc}).encode()

    def xml_callback(self, inner_xml: str, agent_id: str, **kw) -> tuple[dict[str, str], bytes]:
        enc = self.encrypt(inner_xml, kw.pop("receive_id", None))
        outer = (
            f"<xml><ToUserName><![CDATA[{self.receive_id}]]></ToUserName>"
            f"<AgentID><![CDATA[{agent_id}]]></AgentID><Encrypt><![CDATA[{enc}]]></Encrypt></xml>"
        )
        return self.query(enc, **kw), outer.encode()

    def open_reply(self, reply: dict[str, str]) -> dict[str, Any]:
        assert reply["msgsignature"] == self.sign(reply["timestamp"], reply["nonce"], reply["encrypt"])
        body = json.loads(self.prp.decrypt(reply["encrypt"], self.receive_id))
        check_reply(body)
        return body

    @staticmethod
    def card_click(
        card: dict[str, Any], button: int, user: str, aibot: str, response_url: str, chat: str | None = None
    ) -> dict[str, Any]:
        """The template_card_event WeCom sends when `user` presses button number `button` of `card`."""
        body = {
            "msgid": uuid.uuid4().hex,
            "create_time": int(time.time()),
            "aibotid": aibot,
            "from": {"corpid": CORP_ID, "userid": user},
            "chattype": "group" if chat else "single",
            "response_url": response_url,
            "msgtype": "event",
            "event": {
                "eventtype": "template_card_event",
                "template_card_event": {
                    "card_type": card["card_type"],
                    "event_key": card["button_list"][button]["key"],
                    "task_id": card["task_id"],
                },
            },
        }
        if chat:
            body["chatid"] = chat
        return body


_TASK_ID = re.compile(r"^[A-Za-z0-9_@-]{1,128}$")
STREAM_BYTES = 20480


def check_card(card: dict[str, Any]) -> None:
    """A button_interaction template card as the WeCom docs describe it (模板卡片类型 / 按钮交互模版卡片)."""
    assert card["card_type"] == "button_interaction", card
    assert (card.get("main_title") or {}).get("title") or card.get("sub_title_text"), "title or sub_title_text"
    buttons = card["button_list"]
    assert 1 <= len(buttons) <= 6, "button_list holds 1 to 6 buttons"
    keys = [b["key"] for b in buttons]
    assert len(set(keys)) == len(keys) and all(0 < len(k.encode()) <= 1024 for k in keys), "unique keys <= 1024 bytes"
    assert all(b["text"] for b in buttons) and all(b.get("style", 1) in (1, 2, 3, 4) for b in buttons)
    assert _TASK_ID.match(card["task_id"]), "task_id: letters, digits, _-@, at most 128 bytes"


def check_reply(body: dict[str, Any]) -> None:
    """A passive reply to an AI-bot callback, in one of the documented shapes (被动回复消息)."""
    kind = body["msgtype"]
    assert kind in ("stream", "stream_with_template_card", "template_card", "text"), kind
    if kind in ("stream", "stream_with_template_card"):
        stream = body["stream"]
        assert stream["id"] and len(stream["content"].encode()) <= STREAM_BYTES
        if "feedback" in stream:
            assert 0 < len(stream["feedback"]["id"].encode()) <= 256
    if kind in ("stream_with_template_card", "template_card"):
        check_card(body["template_card"])


def check_active_reply(body: dict[str, Any]) -> None:
    """A message posted to a response_url (主动回复消息): markdown within 20,480 bytes, or a card."""
    if body.get("msgtype") == "template_card":
        check_card(body["template_card"])
        return
    assert body.get("msgtype") == "markdown", "markdown or template_card"
    assert 0 < len(body["markdown"]["content"].encode()) <= STREAM_BYTES
    if "feedback" in body["markdown"]:
        assert 0 < len(body["markdown"]["feedback"]["id"].encode()) <= 256
