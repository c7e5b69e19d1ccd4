"""The fault suite: the store paused or gone, Redis stopped, the platform's API failing, each while messages
are being answered. Loopback fakes only: the real app under uvicorn, the real delivery core, a fake WeCom.

Every scenario sends a few WeCom app messages (one member each), injects its fault while they are being
answered, replays WeCom's retry of every message afterwards, and counts what each member received: one
answer or one apology (never none: lost; never two: duplicate), and every message's lease `delivered`, so no
restarted or other worker answers it again. Each prints a line `fault <scenario>: ...` with its counts
(`bench/faults.py` collects them)."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import time
import uuid

import httpx
import pytest
import sqlalchemy as sa
from fake_wecom import AGENT_ID, CORP_ID, ServerThread, free_port

from bot.answer.advisor import Advisor
from bot.api.app import create_app
from bot.api.settings import ApiSettings
from bot.core.store import Store

Q = "8卡H800全参微调7B需要多少显存？"
APOLOGY = "抱歉，这次没能算出答案"


class Scenario:
    """Messages to the WeCom app of one server, and what their members saw."""

    def __init__(self, name: str, base: str, fake, maker, engine: sa.Engine, figure: str, n: int = 2):
        self.name, self.base, self.fake, self.maker, self.engine, self.figure = name, base, fake, maker, engine, figure
        tag = uuid.uuid4().hex[:6]
        self.users = [f"fault{tag}{i}" for i in range(n)]
        self.ids = {u: str(7_400_000_000_000_000_000 + int(tag, 16) * 100 + i) for i, u in enumerate(self.users)}
        self.acks: list[float] = []

    def send(self, user: str) -> None:
        inner = (
            f"<xml><ToUserName><![CDATA[{CORP_ID}]]></ToUserName><FromUserName><![CDATA[{user}]]></FromUserName>"
            f"<CreateTime>{int(time.time())}</CreateTime><MsgType><![CDATA[text]]></MsgType>"
            f"<Content><![CDATA[{Q}]]></Content><MsgId>{self.ids[user]}</MsgId><AgentID>{AGENT_ID}</AgentID></xml>"
        )
        query, raw = self.maker.xml_callback(inner, AGENT_ID)  # a retry is signed anew, as WeCom does
        started = time.monotonic()
        assert httpx.post(f"{self.base}/wecom/app", params=query, content=raw, timeout=30).status_code == 200
        self.acks.append(time.monotonic() - started)

    def leases(self) -> dict[str, str]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.text("SELECT message_id, state FROM channel_leases")).all()
        return {m: s for m, s in rows if m in self.ids.values()}

    def until(self, check, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            assert time.monotonic() < deadline, f"{self.name}: {what}; leases {self.leases()}"
            time.sleep(0.1)

    def claimed(self, timeout: float = 15) -> None:
        self.until(lambda: len(self.leases()) == len(self.users), timeout, "the messages were never claimed")

    def replied(self, timeout: float = 20) -> None:
        self.until(lambda: all(self.fake.markdown_to(u) for u in self.users), timeout, "a member got no reply")

    def redeliver_and_count(self, settle_s: float = 1.5) -> dict[str, int]:
        for user in self.users:
            self.send(user)  # WeCom's retry of each message, after the fault
        time.sleep(settle_s)  # time for a second reply, if one were coming
        got = {u: self.fake.markdown_to(u) for u in self.users}
        counts = {
            "sent": len(self.users),
            "answered": sum(1 for texts in got.values() for t in texts if self.figure in t),
            "apologised": sum(1 for texts in got.values() for t in texts if APOLOGY in t),
            "lost": sum(1 for texts in got.values() if not texts),
            "duplicates": sum(len(texts) - 1 for texts in got.values() if len(texts) > 1),
            "slowest ack ms": round(max(self.acks) * 1000),
        }
        print(f"fault {self.name}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
        assert counts["lost"] == 0 and counts["duplicates"] == 0, (counts, got)
        assert counts["answered"] + counts["apologised"] == counts["sent"], got
        states = self.leases()
        assert set(states.values()) == {"delivered"}, states  # a restarted worker would answer them again
        return counts


@pytest.fixture
def served(shared_advisor, fake_wecom, monkeypatch, env, fit_7b_h800, app_maker):
    """`served(name, store_url=None, **env)` -> a Scenario against the real app on loopback."""
    from fake_wecom import AIBOT_AES_KEY, AIBOT_TOKEN, APP_AES_KEY, APP_TOKEN

    started: list[tuple[ServerThread, Store]] = []

    def start(name: str, store_url: str | None = None, **extra: str) -> Scenario:
        values = {
            "WECOM_AIBOT_TOKEN": AIBOT_TOKEN,
            "WECOM_AIBOT_AES_KEY": AIBOT_AES_KEY,
            "WECOM_CORP_ID": CORP_ID,
            "WECOM_AGENT_ID": AGENT_ID,
            "WECOM_APP_SECRET": fake_wecom.CORP_SECRET,
            "WECOM_APP_TOKEN": APP_TOKEN,
            "WECOM_APP_AES_KEY": APP_AES_KEY,
            "WECOM_API_BASE": fake_wecom.base,
            "CHANNEL_WORKERS": "2",
            "CHANNEL_FAULT_DELAY_S": "1",
            **extra,
        }
        for k, v in values.items():
            monkeypatch.setenv(k, v)
        url = store_url or f"sqlite:///{env}/store.sqlite3"
        store = Store(url)
        advisor = Advisor(store=store, toolbox=shared_advisor.toolbox, offline=shared_advisor.offline)
        server = ServerThread(create_app(advisor=advisor, api_settings=ApiSettings(rate_limit_per_minute=0)), "/readyz")
        started.append((server, store))
        base = server.base
        httpx.get(f"{base}/wecom/app")  # builds the delivery core (an unsigned URL check, refused)
        return Scenario(name, base, fake_wecom, app_maker, store.engine, fit_7b_h800)

    yield start
    for server, store in started:
        server.stop()
        store.close()


def test_sqlite_store_paused_mid_answer_delays_the_answers(served, env):
    """Another connection holds SQLite's write lock for 6 s while the answers wait to store their turns (each answer
    is held 3 s first, so the lock is surely taken before any answer is ready to be stored, however busy the
    machine: with a 1 s hold a full-suite run once saw an answer stored before the lock)."""
    s = served("sqlite store paused 6 s", CHANNEL_FAULT_DELAY_S="3")
    for user in s.users:
        s.send(user)
    s.claimed()
    lock = sqlite3.connect(env / "store.sqlite3", timeout=10, isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")  # the write lock: every writer waits (busy timeout) until it is let go
    time.sleep(6)
    assert not any(s.fake.markdown_to(u) for u in s.users)  # nothing could be stored, so nothing went out yet
    lock.execute("COMMIT")
    lock.close()
    s.replied()
    counts = s.redeliver_and_count()
    assert counts["answered"] == counts["sent"]  # a pause within the busy timeout is only a delay


def test_postgres_store_gone_mid_answer_apologises_once_and_remembers(served):
    """The PostgreSQL database refuses every connection while the answers are under way, then comes back:
    each member gets one apology, and once the store answers the leases are marked delivered (before, they
    stayed `claimed`, and a restarted worker answered the WeCom retry a second time)."""
    from pg import ADMIN_URL, temp_database

    psycopg = pytest.importorskip("psycopg")
    with temp_database() as url:
        name = url.rsplit("/", 1)[1]
        s = served("postgresql store gone 3 s", store_url=url, CHANNEL_FAULT_DELAY_S="1.5")
        for user in s.users:
            s.send(user)
        s.claimed()
        with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                (name,),
            )
            try:
                s.replied()  # the apology needs no store
            finally:
                admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        s.until(lambda: set(s.leases().values()) == {"delivered"}, 15, "the delivered marks were never written")
        counts = s.redeliver_and_count()
        assert counts["apologised"] == counts["sent"]
        s.engine.dispose()


@pytest.fixture
def redis_server(tmp_path):
    """A redis-server of the test's own on a free loopback port (not the machine's 6379, which others use)."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed; the Redis outage is tested where it is (CI installs it)")
    port = free_port()
    proc = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(tmp_path),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    import redis

    client = redis.Redis(port=port, socket_timeout=1)
    deadline = time.monotonic() + 10
    while True:
        try:
            client.ping()
            break
        except redis.exceptions.ConnectionError:
            assert time.monotonic() < deadline and proc.poll() is None, "redis-server did not start"
            time.sleep(0.05)
    yield proc, port, client
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def test_redis_stopped_mid_answer_loses_and_repeats_nothing(served, redis_server):
    proc, port, client = redis_server
    s = served("redis stopped", REDIS_URL=f"redis://127.0.0.1:{port}/0", GPU_ADVISOR_REDIS_PREFIX="fault-test:")
    first, later = s.users
    s.send(first)
    s.until(lambda: s.leases(), 15, "the first message was never claimed")
    assert int(client.info("clients")["connected_clients"]) >= 2  # the server is on this Redis (re-index notices)
    proc.kill()  # SIGKILL: no goodbye to its clients
    proc.wait()
    s.send(later)  # acknowledged and answered with Redis gone
    s.replied()
    counts = s.redeliver_and_count()
    assert counts["answered"] == counts["sent"]
    assert max(s.acks) < 2.0  # the outage never holds an acknowledgement (WeCom retries after 5 s)


def test_platform_api_answering_500_then_200_delivers_each_answer_once(served, fake_wecom):
    """WeCom's message/send answers HTTP 500 three times: before, both answers failed, one apology met the
    third 500 (that member got nothing, the other an apology for an answer that was ready); now each piece is
    tried again after 0.5, 1 and 2 s, and every member gets the answer, once."""
    s = served("wecom API 500 three times, then 200")
    fake_wecom.fail_sends = 3
    for user in s.users:
        s.send(user)
    s.replied()
    counts = s.redeliver_and_count()
    assert fake_wecom.failed_sends == 3
    assert counts["answered"] == counts["sent"]
