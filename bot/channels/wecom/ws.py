"""The WeCom AI bot over its long connection (WebSocket): no public URL, no ICP-filed domain.

    gpu-advisor wecom connect        (WECOM_AIBOT_ID, WECOM_AIBOT_SECRET; WECOM_WS_URL to override the endpoint)

Frames are JSON `{"cmd", "headers": {"req_id"}, "body"}`; WeCom acknowledges each frame we send with
`{"headers": {"req_id"}, "errcode", "errmsg"}`. The session: `aibot_subscribe` {bot_id, secret} first,
then `ping` every 30 s; WeCom pushes `aibot_msg_callback` / `aibot_event_callback`; we answer a message
with `aibot_respond_msg` stream frames under the callback's req_id (`finish: false` while tools run, then
`finish: true` with the answer), an `enter_chat` with `aibot_respond_welcome_msg`, and an answer later than
the 6-minute stream window with `aibot_send_msg`. Frames under one req_id go out one at a time, each
waiting for its acknowledgement. A lost connection is re-opened with exponential backoff and jitter;
SIGTERM stops taking messages, lets the answers in progress go out, then closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import threading
import time
import uuid
from collections import defaultdict
from typing import Any

import websockets
from websockets.asyncio.client import ClientConnection, connect

from bot.channels.delivery import Delivery
from bot.channels.render import Answer, phrase, render_wecom, split_utf8
from bot.channels.settings import WeComSettings
from bot.channels.wecom.aibot import (
    STREAM_CONTENT_BYTES,
    markdown_body,
    read_message,
    record_feedback,
    stream_body,
    welcome_body,
)
from bot.channels.wecom.streams import MAX_IN_FLIGHT

log = logging.getLogger("gpu_advisor.channels.wecom.ws")

ACK_TIMEOUT_S = 10.0


class Rejected(RuntimeError):
    """WeCom refused a frame (errcode != 0); for the subscription this ends the run."""


def _req_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


class LongConnection:
    def __init__(
        self,
        settings: WeComSettings,
        delivery: Delivery,
        heartbeat_s: float = 30.0,
        backoff_s: tuple[float, float] = (1.0, 60.0),
        stop_grace_s: float = 30.0,
    ):
        if not settings.aibot_ws:
            raise ValueError("set WECOM_AIBOT_ID and WECOM_AIBOT_SECRET for the long connection")
        self.settings, self.delivery = settings, delivery
        self.heartbeat_s, self.backoff_s, self.stop_grace_s = heartbeat_s, backoff_s, stop_grace_s
        self.connected = threading.Event()
        self.sessions = 0  # successful subscriptions, for operators and tests
        self._ws: ClientConnection | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._acks: dict[str, asyncio.Future] = {}
        self._req_locks: dict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._in_flight: dict[str, int] = defaultdict(int)
        self._stopping = False
        self.replaced = False  # WeCom said a newer connection took the bot over
        self._tasks: set[asyncio.Task] = set()

    # ---- the run loop ------------------------------------------------------------------------------
    async def run(self, stop: asyncio.Event) -> None:
        """Connect, serve, and reconnect until `stop` is set."""
        self._loop = asyncio.get_running_loop()
        attempt = 0
        while not stop.is_set():
            try:
                async with connect(
                    self.settings.ws_url, open_timeout=15, ping_interval=None, max_size=4 * 1024 * 1024
                ) as ws:
                    self._ws = ws
                    await self._subscribe(ws)
                    attempt = 0
                    self.sessions += 1
                    self.connected.set()
                    log.info("WeCom long connection subscribed")
                    await self._serve(ws, stop)
            except Rejected as err:
                log.error("WeCom refused the subscription (%s); check WECOM_AIBOT_ID / WECOM_AIBOT_SECRET", err)
                raise
            except (TimeoutError, OSError, websockets.exceptions.WebSocketException) as err:
                log.warning("WeCom long connection lost: %s %s", type(err).__name__, getattr(err, "rcvd", "") or "")
            finally:
                self.connected.clear()
                self._ws = None
                for fut in self._acks.values():
                    if not fut.done():
                        fut.set_exception(ConnectionError("connection closed"))
                        fut.exception()  # the waiter gets it; nothing is left "never retrieved"
                self._acks.clear()
            if stop.is_set() or self.replaced:
                break
            attempt += 1
            low, high = self.backoff_s
            delay = min(high, low * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)  # exponential, with jitter
            log.info("reconnecting in %.1f s", delay)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), delay)

    async def _subscribe(self, ws: ClientConnection) -> None:
        rid = _req_id("aibot_subscribe")
        await ws.send(
            json.dumps(
                {
                    "cmd": "aibot_subscribe",
                    "headers": {"req_id": rid},
                    "body": {"bot_id": self.settings.aibot_id, "secret": self.settings.aibot_secret.get_secret_value()},
                }
            )
        )
        reply = json.loads(await asyncio.wait_for(ws.recv(), ACK_TIMEOUT_S))
        if reply.get("errcode", 0) != 0:
            raise Rejected(f"errcode {reply.get('errcode')}: {reply.get('errmsg')}")

    async def _serve(self, ws: ClientConnection, stop: asyncio.Event) -> None:
        reader = asyncio.create_task(self._read(ws))
        beat = asyncio.create_task(self._heartbeat(ws))
        stopper = asyncio.create_task(stop.wait())
        done, _ = await asyncio.wait({reader, beat, stopper}, return_when=asyncio.FIRST_COMPLETED)
        if stopper in done:
            self._stopping = True  # no new questions; let the answers in progress go out
            deadline = time.monotonic() + self.stop_grace_s
            while self.delivery.pending and time.monotonic() < deadline and not reader.done():
                await asyncio.sleep(0.05)
            await ws.close(1000, "stopping")
        for task in (reader, beat, stopper):
            task.cancel()
        for task in (reader, beat):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if reader.done() and not reader.cancelled() and reader.exception() and stopper not in done:
            raise reader.exception()  # type: ignore[misc]

    async def _heartbeat(self, ws: ClientConnection) -> None:
        missed = 0
        while True:
            await asyncio.sleep(self.heartbeat_s)
            try:
                await self._send(
                    {"cmd": "ping", "headers": {"req_id": _req_id("ping")}},
                    timeout=max(self.heartbeat_s, ACK_TIMEOUT_S / 2),
                )
                missed = 0
            except (TimeoutError, Rejected):
                missed += 1
                if missed >= 2:
                    log.warning("two heartbeats unanswered: reconnecting")
                    await ws.close(1001, "heartbeat lost")
                    return

    async def _read(self, ws: ClientConnection) -> None:
        async for raw in ws:
            try:
                frame = json.loads(raw)
            except ValueError:
                log.warning("unreadable frame ignored")
                continue
            rid = (frame.get("headers") or {}).get("req_id", "")
            cmd = frame.get("cmd")
            if not cmd:  # an acknowledgement of something we sent
                fut = self._acks.pop(rid, None)
                if fut and not fut.done():
                    fut.set_result(frame)
                continue
            # handled in its own task: the reader must keep reading, or the acks its replies wait for never arrive
            task = asyncio.create_task(self._handle(cmd, rid, frame.get("body") or {}))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _handle(self, cmd: str, rid: str, body: dict[str, Any]) -> None:
        try:
            await self._on_frame(cmd, rid, body)
        except Exception:
            log.exception("frame %s could not be handled", cmd)

    # ---- sending -------------------------------------------------------------------------------------
    async def _send(self, frame: dict[str, Any], timeout: float = ACK_TIMEOUT_S) -> dict[str, Any]:
        """Send one frame and wait for its acknowledgement; frames under one req_id go one at a time."""
        rid = frame["headers"]["req_id"]
        lock = self._req_locks[rid] if frame.get("cmd") == "aibot_respond_msg" else asyncio.Lock()
        async with lock:
            ws = self._ws
            if ws is None:
                raise ConnectionError("not connected")
            fut = asyncio.get_running_loop().create_future()
            self._acks[rid] = fut
            await ws.send(json.dumps(frame, ensure_ascii=False))
            try:
                ack = await asyncio.wait_for(fut, timeout)
            finally:
                self._acks.pop(rid, None)
        if ack.get("errcode", 0) != 0:
            raise Rejected(f"{frame.get('cmd')}: errcode {ack.get('errcode')}: {ack.get('errmsg')}")
        return ack

    def send_from_thread(self, frame: dict[str, Any], reconnect_wait_s: float = 0.0) -> None:
        """For delivery workers: send on the connection's loop and wait for the acknowledgement (and, with
        `reconnect_wait_s`, for the connection to come back first if it is down)."""
        if self._loop is None:
            raise ConnectionError("not running")
        if reconnect_wait_s and not self.connected.wait(reconnect_wait_s):
            raise ConnectionError("not connected")
        asyncio.run_coroutine_threadsafe(self._send(frame), self._loop).result(ACK_TIMEOUT_S + 5)

    # ---- callbacks ---------------------------------------------------------------------------------------
    async def _on_frame(self, cmd: str, rid: str, body: dict[str, Any]) -> None:
        if cmd == "aibot_event_callback":
            await self._on_event(rid, body)
            return
        if cmd != "aibot_msg_callback" or self._stopping:
            return
        if not self.settings.corp_allowed(body):
            log.info("WeCom AI bot message from a corp outside WECOM_CORP_IDS ignored")
            return
        incoming = read_message(body)
        if incoming.kind == "unsupported":
            await self._respond(rid, stream_body(_req_id("stream"), phrase("unsupported", incoming.lang), True))
            return
        if incoming.kind != "question" or incoming.inbound is None:
            return
        if self._in_flight[incoming.user_key] >= MAX_IN_FLIGHT:
            text = phrase("wait_in_flight", incoming.lang, n=self._in_flight[incoming.user_key])
            await self._respond(rid, stream_body(_req_id("stream"), text, True))
            return
        msg = incoming.inbound
        sink = WsSink(self, rid, _req_id("stream"), body, incoming.user_key, incoming.lang)
        ticket = self.delivery.accept(msg, sink)  # no I/O: the worker claims the message in the shared set
        if ticket.status == "duplicate":
            return
        if ticket.status == "busy":
            await self._respond(rid, stream_body(sink.stream_id, ticket.reply or phrase("busy", incoming.lang), True))
            return
        self._in_flight[incoming.user_key] += 1
        try:  # the first frame opens the stream ("正在思考…") with the feedback id; the worker's frames wait for it
            await self._respond(
                rid, stream_body(sink.stream_id, phrase("thinking", incoming.lang), False, feedback_id=sink.stream_id)
            )
        except Exception as err:
            log.warning("could not open the stream (%s)", type(err).__name__)
        finally:
            sink.opened.set()

    async def _respond(self, rid: str, body: dict[str, Any], cmd: str = "aibot_respond_msg") -> None:
        await self._send({"cmd": cmd, "headers": {"req_id": rid}, "body": body})

    async def _on_event(self, rid: str, body: dict[str, Any]) -> None:
        event = body.get("event") or {}
        kind = event.get("eventtype")
        if kind == "enter_chat":
            await self._respond(rid, welcome_body("zh"), cmd="aibot_respond_welcome_msg")
        elif kind == "feedback_event":
            event_id = f"event:wecom:{self.settings.aibot_id}:{body.get('msgid') or rid}"
            await asyncio.to_thread(record_feedback, self.delivery, event, event_id)
        elif kind == "disconnected_event":  # a newer connection for this bot took over: do not fight it
            log.warning("another connection took over this bot; this one stops")
            self.replaced = True
            if self._ws is not None:
                await self._ws.close(1000, "replaced")

    def done_with(self, user_key: str, req_id: str) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._release, user_key, req_id)

    def _release(self, user_key: str, req_id: str) -> None:
        self._in_flight[user_key] = max(0, self._in_flight[user_key] - 1)
        lock = self._req_locks.get(req_id)
        if lock is not None and not lock.locked():
            del self._req_locks[req_id]  # the last frame under this req_id has gone


class WsSink:
    """One answer over the long connection: progress and the final as stream frames under the callback's req_id."""

    def __init__(
        self, conn: LongConnection, req_id: str, stream_id: str, body: dict[str, Any], user_key: str, lang: str
    ):
        self.conn, self.req_id, self.stream_id, self.user_key, self.lang = conn, req_id, stream_id, user_key, lang
        self.reply_id = stream_id  # the feedback id of the answer
        self.chat_id = str(body.get("chatid") or (body.get("from") or {}).get("userid") or "")
        self.chat_type = 2 if body.get("chattype") == "group" else 1
        self.started = time.monotonic()
        self.notes: list[str] = []
        self.opened = threading.Event()  # set once the stream's first frame has gone

    def _frame(self, body: dict[str, Any]) -> dict[str, Any]:
        return {"cmd": "aibot_respond_msg", "headers": {"req_id": self.req_id}, "body": body}

    def progress(self, text: str) -> None:
        self.notes.append(text)
        self.opened.wait(ACK_TIMEOUT_S)
        if self.conn.connected.is_set():
            self.conn.send_from_thread(self._frame(stream_body(self.stream_id, "\n".join(self.notes), False)))

    def answer(self, answer: Answer) -> None:
        self._final(render_wecom(answer))

    def apology(self, text: str) -> None:
        self._final(text)

    def duplicate(self) -> None:  # answered before a restart: close the stream opened for it
        self._final(phrase("duplicate", self.lang))

    def _final(self, text: str) -> None:
        self.opened.wait(ACK_TIMEOUT_S)
        try:
            pieces = split_utf8(text, STREAM_CONTENT_BYTES)
            if time.monotonic() - self.started < self.conn.settings.stream_window_s:
                try:
                    self.conn.send_from_thread(self._frame(stream_body(self.stream_id, pieces[0], True)))
                    pieces = pieces[1:]
                except (ConnectionError, Rejected, TimeoutError) as err:  # e.g. the connection dropped meanwhile
                    log.warning("stream reply failed (%s); sending the answer as a new message", type(err).__name__)
            for piece in pieces:  # too late for the stream, or too long for one frame: an active message
                self.conn.send_from_thread(
                    {
                        "cmd": "aibot_send_msg",
                        "headers": {"req_id": _req_id("aibot_send_msg")},
                        "body": {"chatid": self.chat_id, "chat_type": self.chat_type, **markdown_body(piece)},
                    },
                    reconnect_wait_s=30,
                )
        finally:
            self.conn.done_with(self.user_key, self.req_id)
