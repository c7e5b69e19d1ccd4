"""The WeCom AI bot over HTTP callbacks, against the real API server on loopback: encrypted callbacks
built the way WeCom builds them, WeCom's stream-refresh polling, and a fake WeCom for response_url."""

from __future__ import annotations

import concurrent.futures
import logging
import time
import uuid

import httpx
import pytest
from fake_wecom import AIBOT_AES_KEY, AIBOT_TOKEN

from bot.channels.ledger import DeliveryLog

Q = "@GPU顾问 8卡H800全参微调7B需要多少显存？"
AIBOT = "AIBOTID42"


class WeComSide:
    """Plays WeCom: posts encrypted callbacks and keeps refreshing a stream the way WeCom does."""

    def __init__(self, base: str, maker):
        self.url, self.maker = f"{base}/wecom/aibot", maker
        self.client = httpx.Client(timeout=30)
        self.cards: dict[str, list[dict]] = {}  # the template cards each stream's replies carried

    def reply_with_card(self, body: dict, **kw) -> dict | None:
        reply = self.reply(body, **kw)
        if reply and reply["msgtype"] == "stream_with_template_card":
            self.cards.setdefault(reply["stream"]["id"], []).append(reply["template_card"])
        return reply

    def post(self, body: dict, **kw) -> httpx.Response:
        query, raw = self.maker.json_callback(body, **kw)
        return self.client.post(self.url, params=query, content=raw, headers={"Content-Type": "application/json"})

    def reply(self, body: dict, **kw) -> dict | None:
        resp = self.post(body, **kw)
        assert resp.status_code == 200, resp.text
        return self.maker.open_reply(resp.json()) if resp.content else None

    def ask(
        self,
        msgid: str,
        text: str = Q,
        user: str = "zhangsan",
        chat: str | None = "wrkGroup1",
        response_url: str | None = None,
    ) -> dict | None:
        body = {
            "msgid": msgid,
            "aibotid": AIBOT,
            "chattype": "group" if chat else "single",
            "from": {"userid": user},
            "msgtype": "text",
            "text": {"content": text},
        }
        if chat:
            body["chatid"] = chat
        if response_url:
            body["response_url"] = response_url
        return self.reply_with_card(body)

    def refresh(self, stream_id: str, user: str = "zhangsan") -> dict:
        return self.reply_with_card(
            {
                "msgid": uuid.uuid4().hex,
                "aibotid": AIBOT,
                "chattype": "single",
                "from": {"userid": user},
                "msgtype": "stream",
                "stream": {"id": stream_id},
            }
        )["stream"]

    def until_final(self, stream_id: str, user: str = "zhangsan", timeout: float = 90) -> tuple[str, list[str]]:
        seen, deadline = [], time.monotonic() + timeout
        while time.monotonic() < deadline:
            stream = self.refresh(stream_id, user)
            seen.append(stream["content"])
            if stream["finish"]:
                return stream["content"], seen
            time.sleep(0.1)
        raise AssertionError(f"stream {stream_id} never finished; saw {seen[-3:]}")


@pytest.fixture
def wecom(bot_server, aibot_maker) -> WeComSide:
    return WeComSide(bot_server(), aibot_maker)


def test_url_verification_echoes_the_decrypted_string(bot_server, aibot_maker):
    base = bot_server()
    echo = aibot_maker.encrypt("echo-5821349")
    assert httpx.get(f"{base}/wecom/aibot", params={**aibot_maker.query(echo), "echostr": echo}).text == "echo-5821349"
    bad = {**aibot_maker.query(echo), "echostr": echo, "msg_signature": "0" * 40}
    assert httpx.get(f"{base}/wecom/aibot", params=bad).status_code == 403


def test_a_group_question_streams_progress_then_one_grounded_answer(fit_7b_h800, wecom, advisor):
    first = wecom.ask("msg-1")
    assert first["msgtype"] == "stream" and first["stream"]["finish"] is False
    assert first["stream"]["feedback"] == {"id": first["stream"]["id"]}  # WeCom reads it from the first reply
    final, seen = wecom.until_final(first["stream"]["id"])
    assert final.startswith("**放得下。**") and fit_7b_h800 in final and "|---" not in final
    assert "`组成" in final and "**你还可以问：**" in final
    assert ("**参考：**" in final) == ("[1]" in final)  # sources come with the sentence they support, or not at all
    assert all(not s or s in ("正在思考…", final) or s.startswith("正在") for s in seen)
    conv = advisor.store.turns(f"wecom:{AIBOT}:wrkGroup1")
    assert [t.question for t in conv] == ["8卡H800全参微调7B需要多少显存？"]  # the @-mention is not part of it
    # the same final for a refresh after the finish, with the feedback id set
    again = wecom.refresh(first["stream"]["id"])
    assert again == {
        "id": first["stream"]["id"],
        "finish": True,
        "content": final,
        "feedback": {"id": first["stream"]["id"]},
    }


def test_the_conversation_is_readable_over_the_api(wecom, bot_server, advisor):
    """A single chat is one conversation, owned by the bot's workspace: an admin key reads it, another key
    gets the same 404 as for a missing id."""
    from bot.api import keys

    sid = wecom.ask("msg-api", chat=None, user="lisi")["stream"]["id"]
    wecom.until_final(sid, user="lisi")
    _, admin = keys.create(advisor.store, "ops", admin=True)
    _, other = keys.create(advisor.store, "someone-else")
    url = f"{wecom.url.rsplit('/wecom', 1)[0]}/v1/conversations/wecom:{AIBOT}:lisi"
    conv = httpx.get(url, headers={"Authorization": f"Bearer {admin}"}).json()
    assert conv["turns"][0]["status"] == "answered" and "放得下" in conv["turns"][0]["answer"]
    assert httpx.get(url, headers={"Authorization": f"Bearer {other}"}).status_code == 404


def test_three_deliveries_of_one_message_get_one_answer(fit_7b_h800, wecom, advisor):
    replies = [wecom.ask("msg-dup") for _ in range(3)]
    ids = {r["stream"]["id"] for r in replies if r}
    assert len(ids) == 1  # WeCom's retries are pointed at the first stream
    final, _ = wecom.until_final(ids.pop())
    assert fit_7b_h800 in final
    assert len(advisor.store.turns(f"wecom:{AIBOT}:wrkGroup1")) == 1
    assert [r.status for r in DeliveryLog(advisor.store.engine).for_channel("wecom")] == ["answered"]


def test_fifty_users_at_once_get_fifty_answers(bot_server, aibot_maker, advisor):
    wecom = WeComSide(bot_server(CHANNEL_WORKERS=4), aibot_maker)
    users = [f"user{i:02d}" for i in range(50)]
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        firsts = list(
            pool.map(lambda u: wecom.ask(f"m-{u}", text="A100 80GB 的显存带宽是多少？", user=u, chat=None), users)
        )
        finals = list(pool.map(lambda fu: wecom.until_final(fu[0]["stream"]["id"], fu[1])[0], zip(firsts, users)))
    assert len({f["stream"]["id"] for f in firsts}) == 50
    assert all("A100" in f for f in finals)
    for u in users:
        assert len(advisor.store.turns(f"wecom:{AIBOT}:{u}")) == 1
    assert [r.status for r in DeliveryLog(advisor.store.engine).for_channel("wecom")] == ["answered"] * 50


def test_a_failing_model_gets_an_apology_not_silence(wecom, held):
    held.fail = True
    final, _ = wecom.until_final(wecom.ask("msg-fail")["stream"]["id"])
    assert final.startswith("抱歉，这次没能算出答案") and "请求编号" in final
    assert "secret detail" not in final


def test_refreshes_out_of_order_twice_and_after_finish_see_one_coherent_final(wecom, held):
    held.hold()
    s1 = wecom.ask("msg-a", text="A100 80GB 的显存带宽是多少？", chat=None)["stream"]["id"]
    s2 = wecom.ask("msg-b", text="H800 的显存是多少？", chat=None)["stream"]["id"]
    assert wecom.refresh(s2)["finish"] is False and wecom.refresh(s1)["finish"] is False
    held.release()
    f2, _ = wecom.until_final(s2)
    f1, _ = wecom.until_final(s1)
    assert "H800" in f2 and "A100" in f1 and f1 != f2
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        again = list(pool.map(lambda sid: wecom.refresh(sid)["content"], [s1, s2, s1, s2, s1, s2]))
    assert again == [f1, f2] * 3
    unknown = wecom.refresh("s-never-issued")
    assert unknown["finish"] is True and unknown["content"] == "这条回答已经过期，请重新提问。"


def test_a_fourth_message_in_flight_is_asked_to_wait(wecom, held):
    held.hold()
    for i in range(3):
        assert wecom.ask(f"busy-{i}", chat=None)["stream"]["finish"] is False
    fourth = wecom.ask("busy-3", chat=None)["stream"]
    assert fourth["finish"] is True and "3 个问题正在计算" in fourth["content"]
    held.release()


def test_an_answer_later_than_the_stream_window_goes_out_through_response_url(
    fit_7b_h800, bot_server, aibot_maker, fake_wecom, held
):
    wecom = WeComSide(bot_server(WECOM_STREAM_WINDOW_S=1), aibot_maker)
    held.hold()
    url = fake_wecom.response_url()
    sid = wecom.ask("msg-late", response_url=url)["stream"]["id"]
    time.sleep(1.2)  # WeCom stops refreshing after the window; nobody fetched the answer
    held.release()
    assert fake_wecom.wait_for(lambda: fake_wecom.responses, 30)
    [(key, body)] = fake_wecom.responses
    assert url.endswith(key) and body["msgtype"] == "markdown" and fit_7b_h800 in body["markdown"]["content"]
    time.sleep(1.5)
    assert len(fake_wecom.responses) == 1  # single use, and sent once
    assert wecom.refresh(sid)["finish"] is True


def test_welcome_feedback_and_unsupported_messages(wecom, advisor):
    welcome = wecom.reply(
        {
            "msgid": "e1",
            "aibotid": AIBOT,
            "chattype": "single",
            "from": {"userid": "wangwu"},
            "msgtype": "event",
            "event": {"eventtype": "enter_chat"},
        }
    )
    assert welcome["msgtype"] == "text" and welcome["text"]["content"].count("？") >= 2
    assert "\n3. " in welcome["text"]["content"]
    image = wecom.reply(
        {
            "msgid": "i1",
            "aibotid": AIBOT,
            "chattype": "single",
            "from": {"userid": "wangwu"},
            "msgtype": "image",
            "image": {"url": "https://example.invalid/x.png"},
        }
    )
    assert image["stream"]["finish"] is True and "文字" in image["stream"]["content"]
    sid = wecom.ask("msg-fb", chat=None, user="wangwu")["stream"]["id"]
    wecom.until_final(sid, user="wangwu")
    feedback = {
        "msgid": "e2",
        "aibotid": AIBOT,
        "chattype": "single",
        "from": {"userid": "wangwu"},
        "msgtype": "event",
        "event": {"eventtype": "feedback_event", "feedback_event": {"id": sid, "type": 2, "content": "太乐观"}},
    }
    assert wecom.reply(feedback) is None
    assert wecom.reply(feedback) is None  # delivered twice by WeCom: counted once
    assert _eventually(lambda: advisor.store.feedback_for(f"wecom:{AIBOT}:wangwu"))
    time.sleep(0.3)
    [fb] = advisor.store.feedback_for(f"wecom:{AIBOT}:wangwu")
    assert (fb["turn"], fb["rating"], fb["comment"]) == (0, -1, "太乐观")


def _eventually(check, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(0.05)
    return check()


def test_feedback_after_a_restart_still_finds_its_answer(bot_server, aibot_maker, advisor):
    """Which answer a feedback id stands for is kept in the store, not in the process that answered."""
    first = WeComSide(bot_server(), aibot_maker)
    sid = first.ask("msg-r1", chat=None, user="sun")["stream"]["id"]
    first.until_final(sid, user="sun")
    second = WeComSide(bot_server(), aibot_maker)  # a new server process's app: empty board, same store
    assert (
        second.reply(
            {
                "msgid": "e-r1",
                "aibotid": AIBOT,
                "chattype": "single",
                "from": {"userid": "sun"},
                "msgtype": "event",
                "event": {"eventtype": "feedback_event", "feedback_event": {"id": sid, "type": 1}},
            }
        )
        is None
    )
    assert _eventually(lambda: advisor.store.feedback_for(f"wecom:{AIBOT}:sun"))[0]["rating"] == 1


def test_the_follow_ups_come_as_buttons_and_a_click_asks_one_once(bot_server, aibot_maker, fake_wecom, advisor):
    wecom = WeComSide(bot_server(), aibot_maker)
    sid = wecom.ask("msg-fu", text="H800 的显存是多少？", chat="wrkGroupF", user="zhou")["stream"]["id"]
    final, _ = wecom.until_final(sid, user="zhou")
    assert "**你还可以问：**" in final  # the list stays in the text: a client without cards still shows it
    conv = f"wecom:{AIBOT}:wrkGroupF"
    follow_ups = advisor.store.turns(conv)[0].trace["follow_ups"]
    assert follow_ups, "this question has suggested follow-ups"
    [card] = wecom.cards[sid]  # with the finished answer, once
    for _ in range(3):
        assert wecom.refresh(sid, user="zhou")["finish"] is True
    assert len(wecom.cards[sid]) == 1
    assert [b["key"] for b in card["button_list"]] == [f"ask:{q}" for q in follow_ups[:6]]
    assert all(b["text"].rstrip("…") in q for b, q in zip(card["button_list"], follow_ups, strict=False))
    # a colleague presses the second button
    url = fake_wecom.response_url()
    click = aibot_maker.card_click(card, 1, user="wu", aibot=AIBOT, response_url=url, chat="wrkGroupF")
    assert wecom.reply(click) is None  # the empty reply, at once; the answer follows through response_url
    assert fake_wecom.wait_for(lambda: fake_wecom.responses, 60)
    [(key, body)] = fake_wecom.responses
    text = body["markdown"]["content"]
    assert url.endswith(key) and text.startswith(f"**问：**{follow_ups[1]}")
    assert ("**参考：**" in text) == ("[1]" in text)
    turns = advisor.store.turns(conv)
    assert [t.question for t in turns] == ["H800 的显存是多少？", follow_ups[1]]  # the same conversation
    # the same button again, and the same event redelivered: nothing more
    again = aibot_maker.card_click(
        card, 1, user="wu", aibot=AIBOT, response_url=fake_wecom.response_url(), chat="wrkGroupF"
    )
    assert wecom.reply(again) is None and wecom.reply(again) is None
    time.sleep(1.0)
    assert len(fake_wecom.responses) == 1 and len(advisor.store.turns(conv)) == 2
    # 👍 on the clicked answer lands on its turn
    fid = body["markdown"]["feedback"]["id"]
    wecom.reply(
        {
            "msgid": "e-fu",
            "aibotid": AIBOT,
            "chattype": "group",
            "chatid": "wrkGroupF",
            "from": {"userid": "wu"},
            "msgtype": "event",
            "event": {"eventtype": "feedback_event", "feedback_event": {"id": fid, "type": 1}},
        }
    )
    assert _eventually(lambda: advisor.store.feedback_for(conv))[0]["turn"] == 1


def test_the_acknowledgement_never_waits_on_the_shared_store(wecom, monkeypatch):
    """De-duplication across processes is claimed by the worker, after the reply: a slow store (here 1.5 s a
    key) delays the answer, not the acknowledgement."""
    from bot.channels.ledger import SqlSeenKeys

    real = SqlSeenKeys.first

    def slow(self, key, ttl_s):
        time.sleep(1.5)
        return real(self, key, ttl_s)

    monkeypatch.setattr(SqlSeenKeys, "first", slow)
    t0 = time.perf_counter()
    first = wecom.ask("msg-slow", chat=None, user="feng")
    took = time.perf_counter() - t0
    assert first["stream"]["finish"] is False and took < 1.0
    final, _ = wecom.until_final(first["stream"]["id"], user="feng")
    assert "放得下" in final


def test_voice_mixed_and_quoted_messages_are_read_as_text(wecom, advisor):
    voice = wecom.reply(
        {
            "msgid": "v1",
            "aibotid": AIBOT,
            "chattype": "single",
            "from": {"userid": "zhao"},
            "msgtype": "voice",
            "voice": {"content": "H800 的显存是多少？"},
        }
    )
    assert "H800" in wecom.until_final(voice["stream"]["id"], user="zhao")[0]
    mixed = wecom.reply(
        {
            "msgid": "x1",
            "aibotid": AIBOT,
            "chattype": "single",
            "from": {"userid": "qian"},
            "msgtype": "mixed",
            "mixed": {
                "msg_item": [
                    {"msgtype": "text", "text": {"content": "A100 80GB 的显存带宽是多少？"}},
                    {"msgtype": "image", "image": {"url": "https://example.invalid/y.png"}},
                ]
            },
        }
    )
    assert "A100" in wecom.until_final(mixed["stream"]["id"], user="qian")[0]
    assert [t.question for t in advisor.store.turns(f"wecom:{AIBOT}:zhao")] == ["H800 的显存是多少？"]


def _no_secret_in(caplog) -> None:
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert AIBOT_TOKEN not in text and AIBOT_AES_KEY not in text and "8卡H800" not in text


@pytest.mark.parametrize(
    "attack", ["bad signature", "old timestamp", "replayed nonce", "wrong receive-id", "garbage body", "no signature"]
)
def test_forged_stale_replayed_or_garbage_callbacks_get_4xx_and_no_answer(wecom, aibot_maker, advisor, attack, caplog):
    caplog.set_level(logging.DEBUG)
    body = {
        "msgid": "evil-1",
        "aibotid": AIBOT,
        "chattype": "single",
        "from": {"userid": "mallory"},
        "msgtype": "text",
        "text": {"content": "8卡H800全参微调7B需要多少显存？"},
    }
    if attack == "replayed nonce":
        query, raw = aibot_maker.json_callback(body)
        assert wecom.client.post(wecom.url, params=query, content=raw).status_code == 200  # the genuine one
        resp = wecom.client.post(wecom.url, params=query, content=raw)
        assert resp.status_code == 403 and "replayed" in resp.text
        return  # the genuine delivery is answered once; the replay started nothing
    if attack == "bad signature":
        query, raw = aibot_maker.json_callback(body)
        query["msg_signature"] = query["msg_signature"][::-1]
    elif attack == "old timestamp":
        query, raw = aibot_maker.json_callback(body, timestamp=str(int(time.time()) - 400))
    elif attack == "wrong receive-id":
        query, raw = aibot_maker.json_callback(body, receive_id="ww-some-other-corp")
    elif attack == "garbage body":
        raw = b"\x00\xffnot json at all"
        query = aibot_maker.query("whatever")
    else:
        query, raw = aibot_maker.json_callback(body)
        query.pop("msg_signature")
    resp = wecom.client.post(wecom.url, params=query, content=raw)
    assert 400 <= resp.status_code < 500
    time.sleep(0.3)
    assert not advisor.store.exists(f"wecom:{AIBOT}:mallory")
    assert DeliveryLog(advisor.store.engine).for_channel("wecom") == []
    _no_secret_in(caplog)
