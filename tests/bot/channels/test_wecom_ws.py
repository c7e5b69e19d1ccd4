"""The WeCom AI bot over its long connection, against a fake WeCom WebSocket endpoint on loopback that
speaks the documented frames: subscribe, heartbeat, callbacks, stream replies, reconnects, SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from fake_wecom import FakeWeCom

from bot.channels.delivery import Delivery
from bot.channels.settings import DeliverySettings, WeComSettings
from bot.channels.wecom.ws import LongConnection, Rejected

Q = "@GPU顾问 8卡H800全参微调7B需要多少显存？"


class Running:
    """A LongConnection on its own event loop in a thread."""

    def __init__(self, conn: LongConnection):
        self.conn = conn
        self.error: BaseException | None = None
        self.loop = asyncio.new_event_loop()
        self.stop_event: asyncio.Event | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        async def main():
            self.stop_event = asyncio.Event()
            await self.conn.run(self.stop_event)

        try:
            self.loop.run_until_complete(main())
        except BaseException as err:  # surfaced to the test
            self.error = err

    def stop(self) -> None:
        if self.stop_event is not None and self.thread.is_alive():
            self.loop.call_soon_threadsafe(self.stop_event.set)
        self.thread.join(15)


@pytest.fixture
def run_conn(advisor, fake_wecom):
    running: list[Running] = []

    def start(secret: str = FakeWeCom.BOT_SECRET, **kw) -> Running:
        settings = WeComSettings(
            _env_file=None, aibot_id=FakeWeCom.BOT_ID, aibot_secret=secret, ws_url=fake_wecom.ws_url
        )
        delivery = Delivery(advisor, DeliverySettings(workers=2, queue=16))
        kw.setdefault("heartbeat_s", 0.5)
        kw.setdefault("backoff_s", (0.05, 0.3))
        r = Running(LongConnection(settings, delivery, **kw))
        running.append(r)
        return r

    yield start
    for r in running:
        r.stop()
        r.conn.delivery.close(wait=False)


def _message(msgid: str, text: str = Q, user: str = "zhangsan", chat: str | None = "wrkGroup9") -> dict:
    body = {
        "msgid": msgid,
        "aibotid": FakeWeCom.BOT_ID,
        "chattype": "group" if chat else "single",
        "from": {"userid": user},
        "msgtype": "text",
        "text": {"content": text},
    }
    if chat:
        body["chatid"] = chat
    return body


def _final(fake: FakeWeCom, req_id: str, timeout: float = 60) -> list[dict]:
    assert fake.wait_for(lambda: any(f["body"]["stream"]["finish"] for f in fake.respond_frames(req_id)), timeout)
    return fake.respond_frames(req_id)


def test_a_question_streams_over_the_long_connection(fit_7b_h800, run_conn, fake_wecom, advisor):
    run_conn()
    assert fake_wecom.subscribed.wait(10)
    rid = fake_wecom.push("aibot_msg_callback", _message("ws-1"))
    frames = _final(fake_wecom, rid)
    streams = [f["body"]["stream"] for f in frames]
    assert len({s["id"] for s in streams}) == 1  # one stream, opened then finished
    assert streams[0] == {
        "id": streams[0]["id"],
        "finish": False,
        "content": "正在思考…",
        "feedback": {"id": streams[0]["id"]},
    }  # WeCom reads the feedback id from the first reply
    assert [s["finish"] for s in streams].count(True) == 1 and streams[-1]["finish"] is True
    assert streams[-1]["content"].startswith("**放得下。**") and fit_7b_h800 in streams[-1]["content"]
    assert [t.question for t in advisor.store.turns(f"wecom:{FakeWeCom.BOT_ID}:wrkGroup9")] == [
        "8卡H800全参微调7B需要多少显存？"
    ]


def test_feedback_on_a_streamed_answer_lands_on_its_turn(run_conn, fake_wecom, advisor):
    run_conn()
    assert fake_wecom.subscribed.wait(10)
    rid = fake_wecom.push("aibot_msg_callback", _message("ws-fb", text="H800 的显存是多少？", chat=None, user="qin"))
    sid = _final(fake_wecom, rid)[-1]["body"]["stream"]["id"]
    fake_wecom.push(
        "aibot_event_callback",
        {
            "msgid": "fb-1",
            "aibotid": FakeWeCom.BOT_ID,
            "msgtype": "event",
            "chattype": "single",
            "from": {"userid": "qin"},
            "event": {"eventtype": "feedback_event", "feedback_event": {"id": sid, "type": 2, "content": "偏小"}},
        },
    )
    cid = f"wecom:{FakeWeCom.BOT_ID}:qin"
    assert fake_wecom.wait_for(lambda: advisor.store.feedback_for(cid), 10)
    [fb] = advisor.store.feedback_for(cid)
    assert (fb["turn"], fb["rating"], fb["comment"]) == (0, -1, "偏小")


def test_a_message_pushed_three_times_is_answered_once(run_conn, fake_wecom, advisor):
    run_conn()
    assert fake_wecom.subscribed.wait(10)
    rids = [fake_wecom.push("aibot_msg_callback", _message("ws-dup")) for _ in range(3)]

    def finished(rid: str) -> bool:
        return any(f["body"]["stream"]["finish"] for f in fake_wecom.respond_frames(rid))

    assert fake_wecom.wait_for(lambda: any(finished(r) for r in rids), 60)
    time.sleep(0.5)
    assert sorted(len(fake_wecom.respond_frames(r)) > 0 for r in rids) == [False, False, True]  # one answers
    assert len(advisor.store.turns(f"wecom:{FakeWeCom.BOT_ID}:wrkGroup9")) == 1


def test_heartbeat_reconnect_with_backoff_and_welcome(run_conn, fake_wecom):
    r = run_conn()
    assert fake_wecom.subscribed.wait(10)
    assert fake_wecom.wait_for(lambda: sum(f.get("cmd") == "ping" for f in fake_wecom.frames_in) >= 2, 5)
    fake_wecom.drop_next_connection = True  # the first reconnect attempt fails too
    fake_wecom.kick()
    assert fake_wecom.wait_for(lambda: r.conn.sessions >= 2 and fake_wecom.subscribed.is_set(), 10)
    assert fake_wecom.connections >= 3
    rid = fake_wecom.push(
        "aibot_event_callback",
        {
            "msgid": "e1",
            "aibotid": FakeWeCom.BOT_ID,
            "msgtype": "event",
            "from": {"userid": "zhangsan"},
            "event": {"eventtype": "enter_chat"},
        },
    )
    assert fake_wecom.wait_for(
        lambda: any(
            f.get("cmd") == "aibot_respond_welcome_msg" and f["headers"]["req_id"] == rid for f in fake_wecom.frames_in
        ),
        5,
    )
    rid = fake_wecom.push("aibot_msg_callback", _message("ws-after", text="H800 的显存是多少？", chat=None))
    assert "H800" in _final(fake_wecom, rid)[-1]["body"]["stream"]["content"]


def test_a_failing_model_gets_an_apology_frame(run_conn, fake_wecom, held):
    held.fail = True
    run_conn()
    assert fake_wecom.subscribed.wait(10)
    rid = fake_wecom.push("aibot_msg_callback", _message("ws-fail"))
    final = _final(fake_wecom, rid)[-1]["body"]["stream"]["content"]
    assert final.startswith("抱歉") and "请求编号" in final


def test_a_wrong_secret_stops_with_a_clear_error(run_conn, fake_wecom):
    r = run_conn(secret="not-the-secret")
    r.thread.join(10)
    assert isinstance(r.error, Rejected) and "40001" in str(r.error)


@pytest.mark.slow
def test_the_cli_connects_and_stops_cleanly_on_sigterm(fake_wecom, shared_advisor, shared_folder, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WECOM_", "CHANNEL_"))}
    env.update(
        WECOM_AIBOT_ID=FakeWeCom.BOT_ID,
        WECOM_AIBOT_SECRET=FakeWeCom.BOT_SECRET,
        WECOM_WS_URL=fake_wecom.ws_url,
        GPU_ADVISOR_DATA_DIR=str(shared_folder / "data"),
        DATABASE_URL=f"sqlite:///{tmp_path}/cli.sqlite3",
    )
    exe = Path(sys.executable).with_name("gpu-advisor")
    proc = subprocess.Popen(
        [str(exe), "wecom", "connect", "--heartbeat-s", "1"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert fake_wecom.subscribed.wait(60), proc.stderr.read() if proc.poll() is not None else "no subscribe"
        rid = fake_wecom.push("aibot_msg_callback", _message("cli-" + uuid.uuid4().hex[:6], chat=None, user="cli"))
        _final(fake_wecom, rid)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "stopped" in err and "Traceback" not in err
    assert FakeWeCom.BOT_SECRET not in err + out


def test_the_cli_without_credentials_says_what_to_set():
    from typer.testing import CliRunner

    from bot.cli import app

    done = CliRunner().invoke(app, ["wecom", "connect"])
    assert done.exit_code == 2 and "WECOM_AIBOT_ID" in done.output and "Traceback" not in done.output


def test_a_newer_connection_taking_over_stops_this_one(run_conn, fake_wecom):
    r = run_conn()
    assert fake_wecom.subscribed.wait(10)
    fake_wecom.push(
        "aibot_event_callback",
        {"msgid": "d1", "aibotid": FakeWeCom.BOT_ID, "msgtype": "event", "event": {"eventtype": "disconnected_event"}},
    )
    r.thread.join(10)
    assert not r.thread.is_alive() and r.error is None and r.conn.replaced and r.conn.sessions == 1
