"""A fake Slack on 127.0.0.1 (Web API + Socket Mode WebSocket) that records every call, and Slack's side of
the HTTP conversation (signed event and interaction deliveries). Used by the Slack tests (tests/bot/channels/slack) and bench/channels_slack.py.

The fake speaks Slack's wire format as slack_sdk sends and reads it: `POST|GET /api/<method>` with the
token in `Authorization: Bearer …`, arguments as JSON, form fields or the query string, and answers
`{"ok": true, …}` or `{"ok": false, "error": "<code>"}` with HTTP 200. The streaming methods keep a
message open between chat.startStream and chat.stopStream; apps.connections.open hands out a WebSocket URL
that sends `hello` and then whatever envelopes a test pushes, recording the acknowledgements.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import json
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from aiohttp import WSMsgType, web

BOT_TOKEN = "xoxb-1111-2222-fakebottokenvalue"
APP_TOKEN = "xapp-1-A111-3333-fakeapptokenvalue"
SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
TEAM, BOT_USER, USER, CHANNEL, DM = "T0TEAM0001", "U0BOT00001", "U0USER0001", "C0CHAN0001", "D0DM000001"


@dataclass
class Call:
    method: str
    args: dict[str, Any]
    token: str | None
    at: float


@dataclass
class Message:
    """A message as the fake workspace holds it: text streamed or posted, the final blocks, timeline steps."""

    channel: str
    ts: str
    thread_ts: str | None
    text: str = ""
    blocks: list[dict] = field(default_factory=list)
    tasks: dict[str, dict] = field(default_factory=dict)  # task_update chunks by id (last status wins)
    streaming: bool = False
    streamed: bool = False
    updates: int = 0
    recipient: tuple[str | None, str | None] = (None, None)


class FakeSlack:
    """Slack's Web API and Socket Mode endpoint on 127.0.0.1, in its own thread and event loop."""

    def __init__(self, streaming: bool = True, locales: dict[str, str] | None = None):
        self.streaming = streaming  # False: chat.startStream answers as a workspace without it does
        self.fail_append_after: int | None = None  # make appendStream fail after n calls (a broken stream)
        self.fail_calls = 0  # the next n Web API calls answer HTTP 500 before doing anything (an outage)
        self.failed_calls = 0
        self.locales = locales or {}
        self.calls: list[Call] = []
        self.messages: dict[tuple[str, str], Message] = {}
        self.ephemeral: list[dict] = []
        self.acks: list[dict] = []
        self._ts = itertools.count(1)
        self._sockets: list[web.WebSocketResponse] = []
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("fake Slack did not start")

    # ---- the server ------------------------------------------------------------------------------
    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_get("/link", self._socket)
        self._runner = web.AppRunner(app)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    def close(self) -> None:
        async def stop():
            for ws in list(self._sockets):
                await ws.close()
            await self._runner.cleanup()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        args: dict[str, Any] = dict(request.query)
        if request.method == "POST" and request.can_read_body:
            if request.content_type == "application/json":
                args.update(await request.json())
            else:
                for k, v in (await request.post()).items():
                    args[k] = json.loads(v) if k in ("blocks", "chunks", "prompts") else v
        auth = request.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else args.pop("token", None)
        self.calls.append(Call(method, args, token, time.monotonic()))
        if self.fail_calls > 0:
            self.fail_calls -= 1
            self.failed_calls += 1
            return web.Response(status=500, text="<html>500 Internal Server Error</html>", content_type="text/html")
        expected = APP_TOKEN if method == "apps.connections.open" else BOT_TOKEN
        if token is None:
            return web.json_response({"ok": False, "error": "not_authed"})
        if token != expected:
            return web.json_response({"ok": False, "error": "invalid_auth"})
        handler = getattr(self, "m_" + method.replace(".", "_"), None)
        if handler is None:
            return web.json_response({"ok": False, "error": "unknown_method"})
        return web.json_response(handler(args))

    def _new_ts(self) -> str:
        return f"{int(time.time())}.{next(self._ts):06d}"

    # ---- Web API methods -------------------------------------------------------------------------
    def m_auth_test(self, args):
        return {"ok": True, "team_id": TEAM, "user_id": BOT_USER, "bot_id": "B0BOT00001"}

    def m_users_info(self, args):
        user = args.get("user", "")
        return {"ok": True, "user": {"id": user, "team_id": TEAM, "locale": self.locales.get(user, "en-US")}}

    def m_chat_postMessage(self, args):
        if not args.get("channel"):
            return {"ok": False, "error": "channel_not_found"}
        ts = self._new_ts()
        msg = Message(
            args["channel"], ts, args.get("thread_ts"), text=args.get("text", ""), blocks=list(args.get("blocks") or [])
        )
        self.messages[(msg.channel, ts)] = msg
        return {"ok": True, "channel": msg.channel, "ts": ts, "message": {"ts": ts, "text": msg.text}}

    def m_chat_update(self, args):
        msg = self.messages.get((args.get("channel"), args.get("ts")))
        if msg is None:
            return {"ok": False, "error": "message_not_found"}
        msg.text, msg.blocks, msg.streaming = args.get("text", ""), list(args.get("blocks") or []), False
        msg.updates += 1
        return {"ok": True, "channel": msg.channel, "ts": msg.ts}

    def m_chat_postEphemeral(self, args):
        self.ephemeral.append(args)
        return {"ok": True, "message_ts": self._new_ts()}

    def m_chat_startStream(self, args):
        if not self.streaming:
            return {"ok": False, "error": "unknown_method"}
        channel, thread = args.get("channel"), args.get("thread_ts")
        if not channel:
            return {"ok": False, "error": "channel_not_found"}
        if not thread:
            return {"ok": False, "error": "invalid_arguments"}
        if channel.startswith("C") and not (args.get("recipient_user_id") and args.get("recipient_team_id")):
            return {"ok": False, "error": "invalid_arguments"}  # channels need the recipient
        ts = self._new_ts()
        msg = Message(
            channel,
            ts,
            thread,
            streaming=True,
            streamed=True,
            recipient=(args.get("recipient_team_id"), args.get("recipient_user_id")),
        )
        self.messages[(channel, ts)] = msg
        self._chunks(msg, args)
        return {"ok": True, "channel": channel, "ts": ts}

    def m_chat_appendStream(self, args):
        msg = self.messages.get((args.get("channel"), args.get("ts")))
        if msg is None:
            return {"ok": False, "error": "message_not_found"}
        if not msg.streaming:
            return {"ok": False, "error": "message_not_in_streaming_state"}
        if self.fail_append_after is not None:
            if self.fail_append_after <= 0:
                msg.streaming = False  # the stream expired on Slack's side
                return {"ok": False, "error": "message_not_in_streaming_state"}
            self.fail_append_after -= 1
        self._chunks(msg, args)
        return {"ok": True, "channel": msg.channel, "ts": msg.ts}

    def m_chat_stopStream(self, args):
        msg = self.messages.get((args.get("channel"), args.get("ts")))
        if msg is None:
            return {"ok": False, "error": "message_not_found"}
        if not msg.streaming:
            return {"ok": False, "error": "message_not_in_streaming_state"}
        self._chunks(msg, args)
        msg.blocks, msg.streaming = list(args.get("blocks") or []), False
        return {"ok": True, "channel": msg.channel, "ts": msg.ts, "message": {"ts": msg.ts, "text": msg.text}}

    def _chunks(self, msg: Message, args: dict) -> None:
        msg.text += args.get("markdown_text") or ""
        for chunk in args.get("chunks") or []:
            if chunk.get("type") == "markdown_text":
                msg.text += chunk.get("text", "")
            elif chunk.get("type") == "task_update":
                msg.tasks[chunk["id"]] = chunk

    def m_assistant_threads_setSuggestedPrompts(self, args):
        if not (args.get("channel_id") and args.get("thread_ts") and args.get("prompts")):
            return {"ok": False, "error": "invalid_arguments"}
        return {"ok": True}

    def m_apps_connections_open(self, args):
        return {"ok": True, "url": f"ws://127.0.0.1:{self.port}/link?ticket={uuid.uuid4().hex}"}

    # ---- Socket Mode -----------------------------------------------------------------------------
    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        self._sockets.append(ws)
        await ws.send_json(
            {
                "type": "hello",
                "num_connections": 1,
                "debug_info": {"host": "fake", "approximate_connection_time": 3600},
                "connection_info": {"app_id": "A0APP00001"},
            }
        )
        async for frame in ws:
            if frame.type == WSMsgType.TEXT:
                self.acks.append(json.loads(frame.data))
        self._sockets.remove(ws)
        return ws

    def push(self, envelope: dict) -> None:
        """Send an envelope to every connected Socket Mode client."""

        async def send():
            for ws in list(self._sockets):
                await ws.send_json(envelope)

        asyncio.run_coroutine_threadsafe(send(), self._loop).result(10)

    @property
    def connected(self) -> int:
        return len(self._sockets)

    # ---- what a test looks at --------------------------------------------------------------------
    def replies(self, channel: str, thread_ts: str) -> list[Message]:
        return [
            m
            for (c, _), m in sorted(self.messages.items(), key=lambda kv: kv[0][1])
            if c == channel and m.thread_ts == thread_ts
        ]

    def called(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]


def wait_until(check: Callable[[], Any], timeout: float = 30.0, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(interval)


def sign(body: bytes, timestamp: int | None = None, secret: str = SIGNING_SECRET) -> dict[str, str]:
    """The headers Slack adds: X-Slack-Request-Timestamp and X-Slack-Signature (v0=HMAC-SHA256 over
    `v0:<timestamp>:<raw body>` with the signing secret)."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), f"v0:{ts}:".encode() + body, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": f"v0={digest}"}


def event_envelope(event: dict, event_id: str | None = None) -> dict:
    return {
        "token": "legacy-verification-token",
        "team_id": TEAM,
        "api_app_id": "A0APP00001",
        "type": "event_callback",
        "event": {"event_ts": event.get("ts", ""), **event},
        "event_id": event_id or f"Ev{uuid.uuid4().hex[:10].upper()}",
        "event_time": int(time.time()),
        "is_ext_shared_channel": False,
        "authorizations": [
            {
                "enterprise_id": None,
                "team_id": TEAM,
                "user_id": BOT_USER,
                "is_bot": True,
                "is_enterprise_install": False,
            }
        ],
    }


def mention(text: str, ts: str, thread_ts: str | None = None, channel: str = CHANNEL, user: str = USER) -> dict:
    event = {
        "type": "app_mention",
        "user": user,
        "text": f"<@{BOT_USER}> {text}",
        "ts": ts,
        "channel": channel,
        "team": TEAM,
    }
    if thread_ts:
        event["thread_ts"] = thread_ts
    return event


class SlackClient:
    """Slack's side of the HTTP conversation with the app: signed event and interaction deliveries."""

    def __init__(self, base: str):
        self.url = base + "/slack/events"
        self.http = httpx.Client(timeout=30)

    def post_event(
        self, envelope: dict, retry: int = 0, timestamp: int | None = None, secret: str = SIGNING_SECRET
    ) -> httpx.Response:
        body = json.dumps(envelope, ensure_ascii=False).encode()
        headers = {"Content-Type": "application/json", **sign(body, timestamp, secret)}
        if retry:
            headers |= {"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"}
        return self.http.post(self.url, content=body, headers=headers)

    def post_interaction(self, payload: dict) -> httpx.Response:
        body = urllib.parse.urlencode({"payload": json.dumps(payload, ensure_ascii=False)}).encode()
        headers = {"Content-Type": "application/x-www-form-urlencoded", **sign(body)}
        return self.http.post(self.url, content=body, headers=headers)
