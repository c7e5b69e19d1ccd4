"""The delivery core: one answer per platform message however often it is redelivered, a bounded pool
that says "busy" instead of hanging, an apology (never silence) on failure or timeout, conversation
ids readable at /v1/conversations, and a delivery record per message."""

from __future__ import annotations

import threading
import time

import pytest
from pg import temp_database

from bot.channels.delivery import Delivery, Inbound, conversation_id
from bot.channels.ledger import DeliveryLog, LocalSeen, RedisSeenKeys, SqlSeenKeys
from bot.channels.settings import DeliverySettings
from bot.core.redis_client import RedisConfig
from bot.core.store_schema import make_engine

Q_ZH = "8卡H800全参微调7B需要多少显存？"
Q_EN = "70B inference on 4 A100 80GB, fits?"


def _msg(mid: str, text: str = Q_ZH, chat: str = "wrkChat1", user: str = "zhangsan") -> Inbound:
    return Inbound(channel="wecom", tenant="AIBOT1", chat=chat, message_id=mid, text=text, user=user)


def _delivery(advisor, **conf) -> Delivery:
    conf.setdefault("workers", 2)
    conf.setdefault("queue", 8)
    return Delivery(advisor, DeliverySettings(**conf))


def test_conversation_ids_are_readable_and_never_shared():
    assert conversation_id("wecom", "ww1234", "wrkSFfCgAAxyz") == "wecom:ww1234:wrkSFfCgAAxyz"
    assert conversation_id("slack", "T01", "C02", "1700000000.000100") == "slack:T01:C02:1700000000.000100"
    odd_a, odd_b = conversation_id("wecom", "ww1", "张三/a"), conversation_id("wecom", "ww1", "张三/b")
    assert odd_a != odd_b and len(odd_a) <= 64 and odd_a.startswith("wecom:ww1:")
    long = conversation_id("wecom", "w" * 40, "c" * 60, "u" * 60)
    assert len(long) <= 64 and long.startswith("wecom:")
    assert long != conversation_id("wecom", "w" * 40, "c" * 60, "u" * 59)


def test_a_message_delivered_three_times_is_answered_once(advisor, sink_factory):
    delivery = _delivery(advisor)
    sinks = [sink_factory() for _ in range(3)]
    tickets = [delivery.accept(_msg("msg-1"), s) for s in sinks]
    assert [t.status for t in tickets] == ["queued", "duplicate", "duplicate"]
    assert sinks[0].done.wait(30)
    delivery.close()
    assert len(sinks[0].answers) == 1 and not sinks[1].answers and not sinks[2].answers
    answer = sinks[0].answers[0]
    assert answer.verdict.startswith("**放得下。**") and answer.tables
    assert "正在计算显存…" in sinks[0].progress_notes
    turns = advisor.store.turns("wecom:AIBOT1:wrkChat1")
    assert [t.question for t in turns] == [Q_ZH] and turns[0].status == "answered"
    records = DeliveryLog(advisor.store.engine).for_conversation("wecom:AIBOT1:wrkChat1")
    assert [(r.status, r.message_id) for r in records] == [("answered", "msg-1")] and records[0].latency_ms > 0


def test_a_redelivery_that_reached_another_process_is_answered_once(advisor, sink_factory):
    """Two processes share the store, not their memory: each accepts the message at once (no I/O on the
    acknowledgement), and the worker that claims it second drops it, closing its own reply."""
    here, there = _delivery(advisor), _delivery(advisor)

    class Closing(sink_factory):
        closed = 0

        def duplicate(self):
            self.closed += 1
            self.done.set()

    sinks = [Closing(), Closing()]
    assert [here.accept(_msg("msg-x"), sinks[0]).status, there.accept(_msg("msg-x"), sinks[1]).status] == [
        "queued",
        "queued",
    ]
    assert sinks[0].done.wait(30) and sinks[1].done.wait(30)
    here.close()
    there.close()
    assert sorted((len(s.answers), s.closed) for s in sinks) == [(0, 1), (1, 0)]
    assert len(advisor.store.turns("wecom:AIBOT1:wrkChat1")) == 1


def test_the_local_ttl_set_forgets_after_its_ttl_and_stays_bounded():
    now = [0.0]
    seen = LocalSeen(max_keys=3, clock=lambda: now[0])
    assert seen.first("a", 10) and not seen.first("a", 10)
    now[0] = 11
    assert seen.first("a", 10)  # expired: a new sighting
    for k in "bcde":
        assert seen.first(k, 100)
    assert len(seen._expires) <= 3 and not seen.first("e", 100)


def test_a_full_pool_answers_busy_in_the_users_language(advisor, held, sink_factory):
    delivery = _delivery(advisor, workers=1, queue=1)
    held.hold()
    first, second, third, fourth = (sink_factory() for _ in range(4))
    assert delivery.accept(_msg("a", chat="c1"), first).status == "queued"
    assert held.started.acquire(timeout=10)  # the worker is busy with the first question
    assert delivery.accept(_msg("b", chat="c2"), second).status == "queued"  # waits in the queue
    busy_zh = delivery.accept(_msg("c", chat="c3"), third)
    busy_en = delivery.accept(_msg("d", text=Q_EN, chat="c4"), fourth)
    assert (busy_zh.status, busy_en.status) == ("busy", "busy")
    assert "请稍后再问" in busy_zh.reply and "ask again" in busy_en.reply
    held.release()
    assert first.done.wait(30) and second.done.wait(30)
    delivery.close()
    assert len(first.answers) == len(second.answers) == 1
    statuses = sorted(r.status for r in DeliveryLog(advisor.store.engine).for_channel("wecom"))
    assert statuses == ["answered", "answered", "busy", "busy"]


def test_a_failing_model_gets_an_apology_with_a_request_id(advisor, held, sink_factory, caplog):
    held.fail = True
    delivery = _delivery(advisor)
    zh, en = sink_factory(), sink_factory()
    t_zh = delivery.accept(_msg("f1", chat="c1"), zh)
    t_en = delivery.accept(_msg("f2", text=Q_EN, chat="c2"), en)
    assert zh.done.wait(30) and en.done.wait(30)
    delivery.close()
    assert not zh.answers and not en.answers
    assert zh.apologies == [f"抱歉，这次没能算出答案，请稍后重试。如需反馈，请附上请求编号 {t_zh.request_id}。"]
    assert t_en.request_id in en.apologies[0] and en.apologies[0].startswith("Sorry")
    assert "secret detail" not in zh.apologies[0] + en.apologies[0]
    assert {r.status for r in DeliveryLog(advisor.store.engine).for_channel("wecom")} == {"apology"}


def test_a_slow_answer_is_replaced_by_one_apology_and_never_sent_late(advisor, held, sink_factory):
    held.hold()
    delivery = _delivery(advisor, answer_timeout_s=0.3)
    sink = sink_factory()
    ticket = delivery.accept(_msg("slow"), sink)
    assert sink.done.wait(10)
    assert len(sink.apologies) == 1 and ticket.request_id in sink.apologies[0] and "太久" in sink.apologies[0]
    held.release()
    delivery.close()  # the late answer finishes here, and is dropped
    assert sink.answers == [] and len(sink.apologies) == 1
    assert [r.status for r in DeliveryLog(advisor.store.engine).for_channel("wecom")] == ["timeout"]


def test_a_platform_that_refuses_the_answer_still_gets_an_apology(advisor, sink_factory):
    delivery = _delivery(advisor)
    sink = sink_factory(refuse=True)
    ticket = delivery.accept(_msg("r1"), sink)
    assert sink.done.wait(30)
    delivery.close()
    assert sink.answers == [] and ticket.request_id in sink.apologies[0]
    assert [r.status for r in DeliveryLog(advisor.store.engine).for_channel("wecom")] == ["failed"]


def test_a_question_the_advisor_cannot_use_gets_its_clear_message(advisor, sink_factory):
    delivery = _delivery(advisor)
    sink = sink_factory()
    delivery.accept(_msg("long", text="显存" * 2500), sink)
    assert sink.done.wait(30)
    delivery.close()
    assert "问题长度为 5000 个字符" in sink.answers[0].verdict and not sink.apologies


def test_fifty_users_at_once_get_fifty_answers(advisor, sink_factory):
    delivery = _delivery(advisor, workers=4, queue=64)
    sinks = [sink_factory() for _ in range(50)]
    tickets = [
        delivery.accept(_msg(f"m{i}", text="A100 80GB 的显存带宽是多少？", chat=f"user{i}"), s)
        for i, s in enumerate(sinks)
    ]
    assert {t.status for t in tickets} == {"queued"}
    assert all(s.done.wait(120) for s in sinks)
    delivery.close()
    assert [len(s.answers) for s in sinks] == [1] * 50 and not any(s.apologies for s in sinks)
    assert len({t.conversation_id for t in tickets}) == 50


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_the_sql_ttl_set_lets_exactly_one_of_many_racing_workers_win(backend, tmp_path):
    def check(url: str) -> None:
        seen = SqlSeenKeys(make_engine(url))
        results: list[bool] = []
        barrier = threading.Barrier(8)

        def offer():
            barrier.wait()
            results.append(seen.first("msg:wecom:AIBOT1:same", 600))

        threads = [threading.Thread(target=offer) for _ in range(8)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        assert sorted(results) == [False] * 7 + [True]
        assert seen.first("short", 1) and not seen.first("short", 1)
        time.sleep(1.2)
        assert seen.first("short", 1)  # expired: a new sighting

    if backend == "sqlite":
        check(f"sqlite:///{tmp_path}/ttl.sqlite3")
    else:
        with temp_database() as url:
            check(url)


def test_redis_ttl_set_when_redis_url_is_set():
    redis = pytest.importorskip("redis")
    url = "redis://127.0.0.1:6379/15"
    try:
        redis.Redis.from_url(url, socket_connect_timeout=1).ping()
    except redis.exceptions.ConnectionError:
        pytest.skip("Redis is not reachable on 127.0.0.1:6379; the SQL TTL set is tested instead")
    seen = RedisSeenKeys(RedisConfig(url, prefix=f"test:{time.time_ns()}:"))
    assert seen.first("m1", 600) and not seen.first("m1", 600) and seen.first("m2", 600)
    assert seen.key("m1").startswith(seen.config.prefix)  # the deployment's prefix, as every Redis key
    ttl = seen.client.ttl(seen.key("m1"))
    assert 590 <= ttl <= 600


def test_redis_outage_falls_back_to_the_sql_ttl_set(tmp_path):
    """Nothing listens on this port: the offer goes to the SQL table, still exactly once."""
    sql = SqlSeenKeys(make_engine(f"sqlite:///{tmp_path}/ttl.sqlite3"))
    seen = RedisSeenKeys(RedisConfig("redis://127.0.0.1:1/0"), fallback=sql)
    assert seen.first("m1", 600) and not seen.first("m1", 600)
    assert seen.breaker.down and not sql.first("m1", 600)


def test_redis_url_switches_the_core_to_redis(advisor, monkeypatch):
    redis = pytest.importorskip("redis")
    try:
        redis.Redis.from_url("redis://127.0.0.1:6379/15", socket_connect_timeout=1).ping()
    except redis.exceptions.ConnectionError:
        pytest.skip("Redis is not reachable on 127.0.0.1:6379")
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:6379/15")
    prefix = f"test{time.time_ns()}:"
    monkeypatch.setenv("GPU_ADVISOR_REDIS_PREFIX", prefix)
    delivery = Delivery.from_settings(advisor)
    try:
        assert isinstance(delivery.seen, RedisSeenKeys)
        assert delivery.seen.key("m") == f"{prefix}seen:m"
    finally:
        delivery.close()


# ---- leases: a crash mid-answer loses nothing and answers nothing twice ----------------------------------


def _left_by(monkeypatch, delivery, mid: str, host: str | None = None, start: str = "an-earlier-start", **claim):
    """A lease on message `mid` as another process left it: this machine's earlier start (gone) or `host`."""
    import bot.channels.leases as leases
    from bot.channels.leases import Claim, question_digest

    with monkeypatch.context() as m:
        m.setattr(leases, "START", start)
        if host:
            m.setattr(leases, "HOST", host)
        values = {"route": "", "reply_to": None, **claim}
        made = Claim("wecom", mid, "wecom:AIBOT1:wrkChat1", "req-old", "zh", question_digest(Q_ZH), **values)
        assert delivery.leases.claim(f"msg:wecom:AIBOT1:{mid}", made) == "won"
    advisor_store = delivery.advisor.store
    advisor_store.new_conversation("wecom", "wecom:AIBOT1:wrkChat1", owner="wecom:AIBOT1")
    advisor_store.start_turn("wecom:AIBOT1:wrkChat1", Q_ZH, channel="wecom", owner="wecom:AIBOT1")  # left pending


def test_a_redelivery_of_a_message_a_dead_process_claimed_is_answered_once(advisor, sink_factory, monkeypatch):
    delivery = _delivery(advisor)
    _left_by(monkeypatch, delivery, "msg-dead")
    first, second = sink_factory(), sink_factory()
    assert delivery.accept(_msg("msg-dead"), first).status == "queued"
    assert first.done.wait(30)
    later = _delivery(advisor)  # a second redelivery, to another process: delivered already
    later.accept(_msg("msg-dead"), second)
    time.sleep(1.0)
    delivery.close()
    later.close()
    assert len(first.answers) == 1 and not first.apologies and not second.answers and not second.apologies
    statuses = [t.status for t in advisor.store.turns("wecom:AIBOT1:wrkChat1")]
    assert statuses == ["failed", "answered"]  # the interrupted turn is closed, not left pending
    assert delivery.leases.get("msg:wecom:AIBOT1:msg-dead").state == "delivered"


def test_a_live_owner_elsewhere_keeps_its_message_until_its_deadline(advisor, sink_factory, monkeypatch):
    delivery = _delivery(advisor)
    _left_by(monkeypatch, delivery, "msg-far", host="another-machine")
    early = sink_factory()
    delivery.accept(_msg("msg-far"), early)
    time.sleep(1.0)
    assert not early.answers and not early.apologies  # held: that machine may still answer
    from sqlalchemy import update

    from bot.channels.leases import leases

    with delivery.leases.engine.begin() as conn:  # its deadline passes without a word from it
        conn.execute(update(leases).values(deadline=leases.c.updated_at))
    after = _delivery(advisor)
    late = sink_factory()
    after.accept(_msg("msg-far"), late)
    assert late.done.wait(30)
    delivery.close()
    after.close()
    assert len(late.answers) + len(late.apologies) == 1


def test_at_start_up_an_unanswered_message_gets_one_apology_through_its_channel(advisor, sink_factory, monkeypatch):
    delivery = _delivery(advisor)
    _left_by(monkeypatch, delivery, "msg-gone", route="wecom-app", reply_to={"user": "lisi"})
    reached: list[tuple[dict, str]] = []
    sink = sink_factory()

    def factory(reply_to: dict, lang: str):
        reached.append((reply_to, lang))
        return sink

    assert delivery.recover({"wecom-app": factory}, every_s=None) == 1
    assert delivery.recover(every_s=None) == 0  # once only
    redelivered = sink_factory()
    delivery.accept(_msg("msg-gone"), redelivered)
    time.sleep(1.0)
    delivery.close()
    assert reached == [({"user": "lisi"}, "zh")]
    assert len(sink.apologies) == 1 and "重启" in sink.apologies[0] and "req-old" in sink.apologies[0]
    assert not redelivered.answers and not redelivered.apologies
    assert [t.status for t in advisor.store.turns("wecom:AIBOT1:wrkChat1")] == ["failed"]
    records = DeliveryLog(advisor.store.engine).for_channel("wecom")
    assert [(r.message_id, r.status) for r in records] == [("msg-gone", "apology")]


def test_a_lease_store_that_fails_still_gets_the_user_an_answer(advisor, sink_factory, monkeypatch):
    delivery = _delivery(advisor)

    def down(*args, **kwargs):
        raise ConnectionError("the database does not answer")

    monkeypatch.setattr(delivery.leases, "claim", down)
    sink = sink_factory()
    delivery.accept(_msg("msg-nostore"), sink)
    assert sink.done.wait(30)
    delivery.close()
    assert len(sink.answers) == 1 and not sink.apologies  # answering twice is better than never
