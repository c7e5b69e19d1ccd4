"""A server killed with SIGKILL in the middle of an answer loses no message and answers none twice.

The real `gpu-advisor serve` runs in a subprocess against fake platforms on loopback (a fake Slack, a fake
WeCom). `CHANNEL_FAULT_DELAY_S` holds every answer for a minute, so the kill lands while the worker holds the
message's lease. The server is restarted on the same store; the platform's redelivery is replayed (what a
platform does when it doubts the first delivery); then what reached the fake platform is counted: exactly one
answer or one apology, never none, never two."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from fake_wecom import AGENT_ID, AIBOT_AES_KEY, AIBOT_TOKEN, APP_AES_KEY, APP_TOKEN, CORP_ID
from loopback import free_port
from served import CLI, clean_env
from slack_fake import BOT_TOKEN, CHANNEL, SIGNING_SECRET, FakeSlack, SlackClient, event_envelope, mention

Q = "8卡H800全参微调7B需要多少显存？"
APOLOGY = ("服务在回答这个问题时重启了", "the service restarted while it was answering")


class Server:
    """`gpu-advisor serve` on one data folder, started, killed and started again."""

    def __init__(self, tmp: Path, **env: str):
        self.tmp, self.port = tmp, free_port()
        self.env = clean_env(tmp / "data", GPU_ADVISOR_RATE_LIMIT="0", CHANNEL_WORKERS="1", **env)
        self.proc: subprocess.Popen | None = None
        self.base = f"http://127.0.0.1:{self.port}"
        self.starts = 0

    def start(self, **extra: str) -> Server:
        self.starts += 1
        log = (self.tmp / f"serve-{self.starts}.log").open("wb")
        self.proc = subprocess.Popen(
            [str(CLI), "serve", "--port", str(self.port), "--log-level", "warning"],
            env={**self.env, **extra},
            cwd=self.tmp,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(self.base + "/readyz", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError((self.tmp / f"serve-{self.starts}.log").read_text(errors="replace")[-3000:])
            time.sleep(0.2)

    def kill(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()  # reaped: the pid is gone, as after a crash

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def lease_state(self) -> str | None:
        engine = sa.create_engine(f"sqlite:///{self.tmp / 'data' / 'gpu-advisor.sqlite3'}")
        try:
            with engine.connect() as conn:
                return conn.execute(sa.text("SELECT state FROM channel_leases")).scalar()
        except sa.exc.OperationalError:
            return None  # the table is not there yet
        finally:
            engine.dispose()

    def until_claimed(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while self.lease_state() != "claimed":
            assert time.monotonic() < deadline, "the message was never claimed"
            time.sleep(0.1)


@pytest.fixture
def server(tmp_path):
    made: list[Server] = []

    def make(**env: str) -> Server:
        made.append(Server(tmp_path, **env))
        return made[-1]

    yield make
    for s in made:
        s.stop()


def _one_of(texts: list[str], answer_mark: str) -> str:
    """The one thing the user saw: the answer (with its figure) or the apology for the restart."""
    assert len(texts) == 1, texts
    text = texts[0]
    assert answer_mark in text or any(a in text for a in APOLOGY), text
    return text


def test_slack_http_killed_mid_answer_gets_one_reply(server, fit_7b_h800):
    fake = FakeSlack()
    try:
        env = {"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_SIGNING_SECRET": SIGNING_SECRET, "SLACK_API_URL": fake.api_url}
        srv = server(**env)
        srv.start(CHANNEL_FAULT_DELAY_S="60")
        slack = SlackClient(srv.base)
        ts = f"{int(time.time())}.000100"
        envelope = event_envelope(mention(Q, ts))
        assert slack.post_event(envelope).status_code == 200  # acknowledged: Slack will not redeliver on its own
        srv.until_claimed()
        srv.kill()
        srv.start()
        slack = SlackClient(srv.base)
        assert slack.post_event(envelope, retry=1).status_code == 200  # the redelivery, replayed
        deadline = time.monotonic() + 30
        while not [m for m in fake.replies(CHANNEL, ts) if not m.streaming] and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(2)  # time for a second reply, if one were coming
        _one_of([m.text for m in fake.replies(CHANNEL, ts)], fit_7b_h800)
        assert srv.lease_state() == "delivered"
    finally:
        fake.close()


@pytest.fixture
def wecom():
    from fake_wecom import FakeWeCom

    fake = FakeWeCom().start()
    yield fake
    fake.stop()


def _wecom_env(fake) -> dict[str, str]:
    return {
        "WECOM_AIBOT_TOKEN": AIBOT_TOKEN,
        "WECOM_AIBOT_AES_KEY": AIBOT_AES_KEY,
        "WECOM_CORP_ID": CORP_ID,
        "WECOM_AGENT_ID": AGENT_ID,
        "WECOM_APP_SECRET": fake.CORP_SECRET,
        "WECOM_APP_TOKEN": APP_TOKEN,
        "WECOM_APP_AES_KEY": APP_AES_KEY,
        "WECOM_API_BASE": fake.base,
    }


def test_wecom_app_killed_mid_answer_gets_one_message(server, wecom, app_maker, fit_7b_h800):
    srv = server(**_wecom_env(wecom))
    srv.start(CHANNEL_FAULT_DELAY_S="60")
    inner = (
        f"<xml><ToUserName><![CDATA[{CORP_ID}]]></ToUserName><FromUserName><![CDATA[lisi]]></FromUserName>"
        f"<CreateTime>{int(time.time())}</CreateTime><MsgType><![CDATA[text]]></MsgType>"
        f"<Content><![CDATA[{Q}]]></Content><MsgId>7300000000000000001</MsgId><AgentID>{AGENT_ID}</AgentID></xml>"
    )
    query, raw = app_maker.xml_callback(inner, AGENT_ID)
    assert httpx.post(f"{srv.base}/wecom/app", params=query, content=raw).status_code == 200
    srv.until_claimed()
    srv.kill()
    srv.start()
    query, raw = app_maker.xml_callback(inner, AGENT_ID)  # WeCom's retry: the same message, a new signature
    assert httpx.post(f"{srv.base}/wecom/app", params=query, content=raw).status_code == 200
    assert wecom.wait_for(lambda: wecom.markdown_to("lisi"), 30)
    time.sleep(2)
    _one_of(wecom.markdown_to("lisi"), fit_7b_h800)


def test_wecom_ai_bot_killed_mid_answer_finishes_its_stream_once(server, wecom, aibot_maker, fit_7b_h800):
    srv = server(**_wecom_env(wecom))
    srv.start(CHANNEL_FAULT_DELAY_S="60")
    body = {
        "msgid": uuid.uuid4().hex,
        "aibotid": "AIBOTID42",
        "chattype": "single",
        "from": {"userid": "wangwu"},
        "msgtype": "text",
        "text": {"content": Q},
        "response_url": wecom.response_url(),
    }

    def post(payload: dict) -> dict:
        query, raw = aibot_maker.json_callback(payload)
        resp = httpx.post(f"{srv.base}/wecom/aibot", params=query, content=raw, timeout=30)
        assert resp.status_code == 200, resp.text
        return aibot_maker.open_reply(resp.json())

    stream_id = post(body)["stream"]["id"]
    srv.until_claimed()
    srv.kill()
    srv.start()
    refresh = {**body, "msgid": uuid.uuid4().hex, "msgtype": "stream", "stream": {"id": stream_id}}
    refresh.pop("text")
    finals, deadline = [], time.monotonic() + 30
    while not finals and time.monotonic() < deadline:  # WeCom keeps refreshing the stream it was given
        reply = post({**refresh, "msgid": uuid.uuid4().hex})["stream"]
        if reply["finish"]:
            finals.append(reply["content"])
        time.sleep(0.2)
    again = post(body)["stream"]  # and the message itself delivered again: the same stream, the same final
    assert again["id"] == stream_id and again["content"] == finals[0]
    time.sleep(2)
    _one_of(finals + [b["markdown"]["content"] for _, b in wecom.responses], fit_7b_h800)


def test_slack_socket_mode_killed_mid_answer_gets_one_reply(tmp_path, fit_7b_h800):
    """`gpu-advisor slack socket` killed while it answers; started again, Slack redelivers the envelope."""
    from slack_fake import APP_TOKEN

    fake = FakeSlack()
    env = clean_env(
        tmp_path / "data",
        SLACK_BOT_TOKEN=BOT_TOKEN,
        SLACK_APP_TOKEN=APP_TOKEN,
        SLACK_API_URL=fake.api_url,
        CHANNEL_WORKERS="1",
    )
    probe = Server(tmp_path)  # for its store reader
    procs: list[subprocess.Popen] = []

    def start(**extra: str) -> subprocess.Popen:
        before = fake.connected
        log = (tmp_path / f"socket-{len(procs)}.log").open("wb")
        cmd = [str(CLI), "slack", "socket", "--log-level", "warning"]
        procs.append(subprocess.Popen(cmd, env={**env, **extra}, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT))
        deadline = time.monotonic() + 180
        while fake.connected <= before:
            assert procs[-1].poll() is None and time.monotonic() < deadline, (tmp_path / "socket-0.log").read_text()
            time.sleep(0.2)
        return procs[-1]

    try:
        ts = f"{int(time.time())}.000900"
        envelope = {
            "envelope_id": "env-1",
            "type": "events_api",
            "accepts_response_payload": False,
            "retry_attempt": 0,
            "retry_reason": "",
            "payload": event_envelope(mention(Q, ts), event_id="EvKILL1"),
        }
        first = start(CHANNEL_FAULT_DELAY_S="60")
        fake.push(envelope)
        probe.until_claimed()
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
        deadline = time.monotonic() + 30
        while fake.connected and time.monotonic() < deadline:  # the fake notices the dropped socket
            time.sleep(0.1)
        start()
        fake.push({**envelope, "envelope_id": "env-2", "retry_attempt": 1, "retry_reason": "timeout"})
        deadline = time.monotonic() + 30
        while not fake.replies(CHANNEL, ts) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(2)
        _one_of([m.text for m in fake.replies(CHANNEL, ts)], fit_7b_h800)
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                p.wait(15)
        fake.close()


def _turns(srv: Server, cid: str) -> list[dict]:
    resp = httpx.get(f"{srv.base}/v1/conversations/{cid}", timeout=10)
    return resp.json()["turns"] if resp.status_code == 200 else []


def test_widget_stream_killed_mid_answer_keeps_the_question_and_says_it_failed(server, fit_7b_h800):
    """The widget's transport, POST /v1/ask/stream, killed while the answer runs. What "never lose a message"
    means there: the question was stored before the answer started; the widget sees the stream break (and
    says so at once); after the restart the conversation shows the question closed as failed (before, it
    stayed `pending` until a sweep that only closes turns older than twice the answer deadline), and the
    same question asked again in that conversation is answered, once."""
    srv = server()
    srv.start(CHANNEL_FAULT_DELAY_S="60")
    with httpx.Client(timeout=30) as http:
        with http.stream("POST", f"{srv.base}/v1/ask/stream", json={"text": Q}) as resp:
            assert resp.status_code == 200
            cid = resp.headers["X-Conversation-ID"]
            deadline = time.monotonic() + 30
            while [t["status"] for t in _turns(srv, cid)] != ["pending"]:  # stored, and being answered
                assert time.monotonic() < deadline, _turns(srv, cid)
                time.sleep(0.1)
            srv.kill()
            with pytest.raises(httpx.HTTPError):  # what the widget sees: the stream breaks, not a silent wait
                for _ in resp.iter_bytes():
                    pass
    srv.start()
    turns = _turns(srv, cid)
    assert [(t["question"], t["status"]) for t in turns] == [(Q, "failed")]
    again = httpx.post(f"{srv.base}/v1/ask", json={"text": Q, "conversation_id": cid}, timeout=60)
    assert again.status_code == 200 and fit_7b_h800 in again.json()["answer"]
    assert [t["status"] for t in _turns(srv, cid)] == ["failed", "answered"]
