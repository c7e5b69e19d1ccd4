"""The WeCom self-built app (自建应用): XML callbacks at `/wecom/app`, answers through `message/send`.

A message callback is verified (`WeComCrypto.open_callback`, as the AI bot's), queued without I/O and
acknowledged with an empty passive reply at once; the answer follows as markdown
through `POST {WECOM_API_BASE}/cgi-bin/message/send`, split at line boundaries into pieces of at most
2,048 bytes. The access token is cached process-wide (valid 7,200 s, refreshed 5 minutes early by one
caller while the others wait, and again when WeCom answers 40014 / 42001 / 40001), and no member gets
more than 30 messages a minute from the app (WeCom's limit; the sender waits instead).
"""

from __future__ import annotations

import collections
import logging
import re
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable

import httpx
from fastapi import APIRouter, Request
from fastapi.responses import Response

from bot.channels.delivery import Delivery, Inbound
from bot.channels.render import Answer, phrase, render_wecom, split_numbered
from bot.channels.settings import WeComSettings
from bot.channels.wecom.crypto import CallbackRejected, WeComCrypto
from bot.channels.wecom.http import callback_crypto, delivery_of, rejected, url_check
from bot.core.language import detect_language

log = logging.getLogger("gpu_advisor.channels.wecom")

TOKEN_ERRORS = {40001, 40014, 42001}  # invalid credential, invalid token, expired token
BUSY_ERRORS = {-1}  # 系统繁忙 (system busy): worth trying again, like an HTTP 5xx
TRANSIENT_BACKOFF_S = (0.5, 1.0, 2.0)
REFRESH_EARLY_S = 300
PER_MEMBER_PER_MINUTE = 30
_ENCRYPT = re.compile(rb"<Encrypt>\s*<!\[CDATA\[([A-Za-z0-9+/=]*)\]\]>\s*</Encrypt>")


class WeComApiError(RuntimeError):
    def __init__(self, errcode: int, errmsg: str):
        super().__init__(f"WeCom API errcode {errcode}: {errmsg}")
        self.errcode = errcode


class AccessToken:
    """The app's access token, one per process; thread-safe, one refresher at a time."""

    def __init__(
        self,
        api_base: str,
        corp_id: str,
        secret: str,
        client: httpx.Client,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.api_base, self.corp_id, self._secret = api_base.rstrip("/"), corp_id, secret
        self.client, self.clock = client, clock
        self._token: str | None = None
        self._expires = 0.0
        self._lock = threading.Lock()

    def get(self) -> str:
        with self._lock:
            if self._token is None or self.clock() >= self._expires - REFRESH_EARLY_S:
                self._refresh()
            return self._token  # type: ignore[return-value]

    def invalidate(self, stale: str) -> None:
        with self._lock:
            if self._token == stale:
                self._token = None

    def _refresh(self) -> None:
        resp = self.client.get(
            f"{self.api_base}/cgi-bin/gettoken", params={"corpid": self.corp_id, "corpsecret": self._secret}
        )
        data = resp.json()
        if data.get("errcode", 0) != 0 or not data.get("access_token"):
            raise WeComApiError(int(data.get("errcode", -1)), str(data.get("errmsg", "no access_token")))
        self._token = data["access_token"]
        self._expires = self.clock() + float(data.get("expires_in", 7200))


class MemberRate:
    """At most `limit` messages a minute to one member; `wait(member)` blocks until one may go."""

    def __init__(
        self,
        limit: int = PER_MEMBER_PER_MINUTE,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.limit, self.clock, self.sleep = limit, clock, sleep
        self._sent: dict[str, collections.deque] = collections.defaultdict(collections.deque)
        self._lock = threading.Lock()

    def wait(self, member: str) -> None:
        while True:
            with self._lock:
                now = self.clock()
                sent = self._sent[member]
                while sent and now - sent[0] >= 60:
                    sent.popleft()
                if len(sent) < self.limit:
                    sent.append(now)
                    return
                delay = 60 - (now - sent[0])
            self.sleep(max(delay, 0.05))


class AppSender:
    """`message/send` for the app: markdown pieces within 2,048 bytes, token refresh, member rate."""

    def __init__(self, settings: WeComSettings, client: httpx.Client | None = None):
        self.client = client or httpx.Client(timeout=10.0)
        self.api_base = settings.api_base.rstrip("/")
        self.agent_id = int(settings.agent_id or 0)
        self.token = AccessToken(
            self.api_base, settings.corp_id or "", settings.app_secret.get_secret_value(), self.client
        )
        self.rate = MemberRate()

    def send_markdown(self, user: str, content: str, lang: str) -> None:
        for piece in split_numbered(content, lang):
            self.rate.wait(user)
            self._send(
                {"touser": user, "msgtype": "markdown", "agentid": self.agent_id, "markdown": {"content": piece}}
            )

    def _send(self, body: dict) -> None:
        """One piece, once: a refused token is refreshed once; a server error (HTTP 5xx, errcode -1 busy) or a
        connection that never opened is tried again after 0.5, 1 and 2 s, so a short outage of WeCom's API
        delays the answer instead of losing it (the core's apology would meet the same outage)."""
        refreshed = False
        for pause in (*TRANSIENT_BACKOFF_S, None):
            token = self.token.get()
            try:
                resp = self.client.post(
                    f"{self.api_base}/cgi-bin/message/send", params={"access_token": token}, json=body
                )
            except (httpx.ConnectError, httpx.ConnectTimeout) as err:  # never reached WeCom
                data, problem = None, type(err).__name__
            else:
                data, problem = (resp.json() if resp.status_code < 500 else None), f"HTTP {resp.status_code}"
            if data is None or int(data.get("errcode", 0)) in BUSY_ERRORS:
                if pause is None:
                    raise WeComApiError(-1, f"WeCom's API did not take the message ({problem})")
                log.warning("WeCom message/send failed (%s); trying again in %.1f s", problem, pause)
                time.sleep(pause)
                continue
            code = int(data.get("errcode", 0))
            if code == 0:
                return
            if code in TOKEN_ERRORS and not refreshed:
                refreshed = True
                self.token.invalidate(token)
                continue
            raise WeComApiError(code, str(data.get("errmsg", "")))


class AppSink:
    def __init__(self, sender: AppSender, user: str, lang: str):
        self.sender, self.user, self.lang = sender, user, lang

    def progress(self, text: str) -> None:
        return None  # app messages cannot be edited: only the answer is sent

    def answer(self, answer: Answer) -> None:
        self.sender.send_markdown(self.user, render_wecom(answer), answer.language)

    def apology(self, text: str) -> None:
        self.sender.send_markdown(self.user, text, self.lang)


def _field(root: ET.Element, name: str) -> str:
    node = root.find(name)
    return (node.text or "").strip() if node is not None else ""


def app_router(settings: WeComSettings) -> APIRouter:
    """`GET /wecom/app` (URL check) and `POST /wecom/app` (encrypted XML callbacks)."""
    router = APIRouter(tags=["wecom"], include_in_schema=False)
    corp = settings.corp_id or ""
    holder: dict = {}

    def parts(delivery: Delivery) -> tuple[WeComCrypto, AppSender]:
        if "crypto" not in holder:
            holder["crypto"] = callback_crypto(
                delivery, settings.app_token.get_secret_value(), settings.app_aes_key.get_secret_value(), corp, "app"
            )
            holder["sender"] = AppSender(settings)
        return holder["crypto"], holder["sender"]

    @router.get("/wecom/app")
    async def verify_url(request: Request) -> Response:
        return url_check(parts(await delivery_of(request))[0], request, "app")

    @router.post("/wecom/app")
    async def callback(request: Request) -> Response:
        raw = await request.body()
        delivery = await delivery_of(request)
        crypto, sender = parts(delivery)
        try:
            found = _ENCRYPT.search(raw)  # the ciphertext only: nothing else is read before the signature holds
            if not found:
                raise CallbackRejected("body has no <Encrypt> element", 400)
            plain = crypto.open_callback(request.query_params, found.group(1).decode())
            try:
                root = ET.fromstring(plain)
            except (ET.ParseError, ValueError):
                raise CallbackRejected.after_signature("decrypted message is not XML") from None
            if _field(root, "ToUserName") != corp:
                raise CallbackRejected.after_signature("message is for another corp id")
            if settings.agent_id and _field(root, "AgentID") not in ("", str(settings.agent_id)):
                raise CallbackRejected.after_signature("message is for another agent")
        except CallbackRejected as err:
            return rejected(err, "app")
        kind, user = _field(root, "MsgType"), _field(root, "FromUserName")
        text = _field(root, "Content") if kind == "text" else _field(root, "Recognition") if kind == "voice" else ""
        if kind == "event" or not user:
            return Response(status_code=200)
        msg_id = _field(root, "MsgId") or f"{user}:{_field(root, 'CreateTime')}"
        lang = detect_language(text) if text else "zh"
        if not text.strip():
            _later(sender.send_markdown, user, phrase("unsupported", lang), lang)
            return Response(status_code=200)
        msg = Inbound(channel="wecom", tenant=corp, chat=user, message_id=msg_id, text=text.strip(), user=user)
        ticket = delivery.accept(msg, AppSink(sender, user, lang), route="wecom-app", reply_to={"user": user})
        if ticket.status == "busy":
            _later(sender.send_markdown, user, ticket.reply or phrase("busy", lang), lang)
        return Response(status_code=200)  # the empty passive reply: the answer follows via message/send

    def recover(reply_to: dict, lang: str) -> AppSink:
        """A sink for a message an earlier process left unanswered: the member gets it through message/send."""
        if "recovery_sender" not in holder:
            holder["recovery_sender"] = holder.get("sender") or AppSender(settings)
        return AppSink(holder["recovery_sender"], str(reply_to["user"]), lang)

    router.sender_parts = parts  # type: ignore[attr-defined]
    router.recoverers = {"wecom-app": recover}  # type: ignore[attr-defined]
    return router


def _later(fn, *args) -> None:
    """A short notice sent off the request path, so the callback is acknowledged at once."""

    def run():
        try:
            fn(*args)
        except Exception:
            log.exception("WeCom notice could not be sent")

    threading.Thread(target=run, daemon=True).start()
