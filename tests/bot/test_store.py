"""Conversations persist in SQLite (default) and PostgreSQL, and survive a restart."""

import concurrent.futures
import threading
import time

import pytest
from pg import temp_database

from bot.core.store import Store, UnknownConversation
from bot.core.trace import AnswerTrace


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def url(request, tmp_path):
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/sub/gpu-advisor.sqlite3"
    else:
        with temp_database() as pg_url:
            yield pg_url


def _trace(cid: str, answer: str) -> AnswerTrace:
    return AnswerTrace(
        conversation_id=cid,
        answer=answer,
        language="zh",
        mode="offline",
        tool_calls=[{"id": "call_1", "tool": "fit_training", "input": {"model": "70B"}, "output": {"fits": False}}],
    )


def test_turns_traces_and_state_survive_a_restart(url):
    store = Store(url)
    cid = store.new_conversation(channel="cli")
    i0 = store.start_turn(cid, "70B 全参训练，单卡 A100 够吗？")
    store.finish_turn(cid, i0, _trace(cid, "不够。"), state={"model": "70B", "gpu": "a100-sxm4-80gb"})
    i1 = store.start_turn(cid, "那换成H800呢？")
    assert (i0, i1) == (0, 1)
    store.close()

    again = Store(url)  # a new process would do exactly this
    turns = again.turns(cid)
    assert [t.question for t in turns] == ["70B 全参训练，单卡 A100 够吗？", "那换成H800呢？"]
    assert turns[0].status == "answered" and turns[0].trace["tool_calls"][0]["tool"] == "fit_training"
    assert turns[1].status == "pending"  # asked but not answered: kept, not lost
    assert again.last_state(cid) == {"model": "70B", "gpu": "a100-sxm4-80gb"}
    assert again.turns(cid, limit=1)[0].idx == 1
    again.close()


def test_failed_turn_keeps_the_question(url):
    store = Store(url)
    cid = store.new_conversation()
    idx = store.start_turn(cid, "hello?")
    store.fail_turn(cid, idx, "endpoint timed out")
    t = store.turns(cid)[0]
    assert (t.question, t.status) == ("hello?", "failed")
    assert store.last_state(cid) is None


def test_feedback_needs_an_existing_turn(url):
    store = Store(url)
    cid = store.new_conversation()
    idx = store.start_turn(cid, "q")
    store.finish_turn(cid, idx, _trace(cid, "a"))
    store.add_feedback(cid, idx, rating=1, comment="准确")
    assert store.feedback_for(cid)[0]["comment"] == "准确"
    with pytest.raises(UnknownConversation):
        store.add_feedback(cid, 7, rating=-1)


def test_sqlite_uses_wal(tmp_path):
    store = Store(f"sqlite:///{tmp_path}/x.sqlite3")
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"


def test_timestamps_come_back_in_utc(url):
    store = Store(url)
    cid = store.new_conversation()
    store.start_turn(cid, "q")
    assert store.turns(cid)[0].created_at.utcoffset().total_seconds() == 0


@pytest.mark.postgres
def test_workers_starting_together_on_a_fresh_database_all_come_up():
    """Several workers creating the schema at once must not race in CREATE TABLE (a pg_type duplicate)."""
    import threading

    from bot.channels.ledger import DeliveryLog, SqlSeenKeys

    with temp_database() as pg_url:
        errors: list[BaseException] = []
        barrier = threading.Barrier(6)

        def start() -> None:
            try:
                barrier.wait()
                store = Store(pg_url)
                SqlSeenKeys(store.engine)
                DeliveryLog(store.engine)
                store.close()
            except BaseException as err:  # collected and asserted below
                errors.append(err)

        threads = [threading.Thread(target=start) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert errors == []
        store = Store(pg_url)
        cid = store.new_conversation(channel="api")
        assert store.start_turn(cid, "q") == 0
        store.close()


def test_two_first_messages_of_one_chat_at_once_both_open_the_conversation(tmp_path):
    """Two WeCom messages from one user arriving together both created the conversation row; the second failed
    on the unique id and its answer became an apology."""
    store = Store(f"sqlite:///{tmp_path}/race.sqlite3")
    barrier = threading.Barrier(8)

    def open_it(_):
        barrier.wait()
        return store.new_conversation(channel="wecom", conversation_id="wecom:corp:zhangsan", owner="wecom:corp")

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        assert set(pool.map(open_it, range(8))) == {"wecom:corp:zhangsan"}
    assert store.owner_of("wecom:corp:zhangsan") == (True, "wecom:corp")
    store.close()


def test_eight_answers_at_once_on_sqlite_all_land_and_keep_their_connections(tmp_path):
    """What a server does under 8 clients: every turn is written and finished, and the engine keeps its
    connections (the default pool of 5 closed and reopened one for every answer past the fifth)."""
    from sqlalchemy import event

    store = Store(f"sqlite:///{tmp_path}/s.sqlite3")
    opened = []
    event.listen(store.engine, "connect", lambda *_: opened.append(1))
    start = threading.Barrier(8)

    def client(n: int) -> list[int]:
        start.wait()
        done = []
        for i in range(30):
            cid = store.new_conversation(channel="api")
            idx = store.start_turn(cid, f"问题 {n}-{i}")
            time.sleep(0.002)  # the answer
            store.finish_turn(cid, idx, _trace(cid, f"答案 {n}-{i}"))
            done.append(store.turns(cid)[0].status == "answered" and store.turns(cid)[0].answer == f"答案 {n}-{i}")
        return done

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = [ok for done in pool.map(client, range(8)) for ok in done]
    assert results == [True] * 240
    assert len(opened) <= 8  # at most one per client, kept
    store.close()


def test_a_stored_trace_reads_back_as_its_json_dump_with_figures_and_chinese_intact(url):
    """The trace is stored as pydantic's own JSON text; what is read back is the trace's JSON dump, value for value
    (floats, non-ASCII text, nested outputs), and a state next to it is stored as before."""
    store = Store(url)
    cid = store.new_conversation(channel="cli")
    idx = store.start_turn(cid, "70B 全参训练，8 张 H800 要多久？")
    trace = AnswerTrace(
        conversation_id=cid,
        answer="约 **3.2 天**（MFU 0.4），每卡 1,126.5 GB。",
        language="zh",
        mode="offline",
        tool_calls=[
            {
                "id": "call_1",
                "tool": "training_time",
                "input": {"model": "70B", "n_gpus": 8, "mfu": 0.4},
                "output": {"days": 3.2183, "gpu_hours": 617.9, "notes": ["按 6·N·D 估算"], "ratio": 1e-7},
            }
        ],
    )
    store.finish_turn(cid, idx, trace, state={"model": "70B", "gpus": 8})
    store.close()
    again = Store(url).turns(cid)[0]
    assert again.trace == trace.model_dump(mode="json")
    assert again.state == {"model": "70B", "gpus": 8}
