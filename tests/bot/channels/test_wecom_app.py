"""The WeCom self-built app: XML callbacks on the real API server, answers through a fake WeCom API
(gettoken, message/send) that records every message and checks its size and token."""

from __future__ import annotations

import time

import httpx
import pytest
from fake_wecom import AGENT_ID, APP_AES_KEY, APP_TOKEN, CORP_ID

from bot.channels.ledger import DeliveryLog

Q = "8卡H800全参微调7B需要多少显存？"


def _xml(user: str, text: str, msg_id: str, msg_type: str = "text", to: str = CORP_ID) -> str:
    field = (
        f"<Content><![CDATA[{text}]]></Content>"
        if msg_type == "text"
        else f"<Recognition><![CDATA[{text}]]></Recognition>"
    )
    return (
        f"<xml><ToUserName><![CDATA[{to}]]></ToUserName><FromUserName><![CDATA[{user}]]></FromUserName>"
        f"<CreateTime>{int(time.time())}</CreateTime><MsgType><![CDATA[{msg_type}]]></MsgType>{field}"
        f"<MsgId>{msg_id}</MsgId><AgentID>{AGENT_ID}</AgentID></xml>"
    )


def _post(base: str, maker, inner: str, **kw) -> httpx.Response:
    query, raw = maker.xml_callback(inner, AGENT_ID, **kw)
    return httpx.post(f"{base}/wecom/app", params=query, content=raw, headers={"Content-Type": "text/xml"})


def test_url_verification(bot_server, app_maker):
    base = bot_server()
    echo = app_maker.encrypt("echo-778899")
    assert httpx.get(f"{base}/wecom/app", params={**app_maker.query(echo), "echostr": echo}).text == "echo-778899"


def test_a_question_is_acknowledged_empty_and_answered_through_message_send(
    fit_7b_h800, bot_server, app_maker, fake_wecom, advisor
):
    base = bot_server()
    resp = _post(base, app_maker, _xml("zhangsan", Q, "1001"))
    assert resp.status_code == 200 and resp.content == b""  # the empty passive reply
    assert fake_wecom.wait_for(lambda: fake_wecom.markdown_to("zhangsan"))
    [answer] = fake_wecom.markdown_to("zhangsan")
    assert answer.startswith("**放得下。**") and fit_7b_h800 in answer and "|---" not in answer
    [sent] = fake_wecom.sent
    assert sent["agentid"] == int(AGENT_ID) and sent["msgtype"] == "markdown"
    assert [t.question for t in advisor.store.turns(f"wecom:{CORP_ID}:zhangsan")] == [Q]
    # a second question reuses the cached access token
    _post(base, app_maker, _xml("zhangsan", "H800 的显存是多少？", "1002"))
    assert fake_wecom.wait_for(lambda: len(fake_wecom.markdown_to("zhangsan")) == 2)
    assert len(fake_wecom.tokens_issued) == 1


def test_redeliveries_are_answered_once(bot_server, app_maker, fake_wecom):
    base = bot_server()
    for _ in range(3):
        assert _post(base, app_maker, _xml("lisi", Q, "2001")).status_code == 200
    assert fake_wecom.wait_for(lambda: fake_wecom.markdown_to("lisi"))
    time.sleep(1.0)
    assert len(fake_wecom.markdown_to("lisi")) == 1


def test_an_expired_token_is_refreshed_and_the_message_sent_once(bot_server, app_maker, fake_wecom):
    base = bot_server()
    _post(base, app_maker, _xml("wangwu", "H800 的显存是多少？", "3001"))
    assert fake_wecom.wait_for(lambda: fake_wecom.markdown_to("wangwu"))
    fake_wecom.expire_next_send = True  # WeCom answers 42001 for the cached token
    _post(base, app_maker, _xml("wangwu", "A100 80GB 的显存带宽是多少？", "3002"))
    assert fake_wecom.wait_for(lambda: len(fake_wecom.markdown_to("wangwu")) == 2)
    assert len(fake_wecom.tokens_issued) == 2 and "A100" in fake_wecom.markdown_to("wangwu")[1]


def test_a_failing_model_gets_an_apology(bot_server, app_maker, fake_wecom, held):
    held.fail = True
    base = bot_server()
    _post(base, app_maker, _xml("zhao", Q, "4001"))
    assert fake_wecom.wait_for(lambda: fake_wecom.markdown_to("zhao"))
    [apology] = fake_wecom.markdown_to("zhao")
    assert apology.startswith("抱歉") and "请求编号" in apology


def test_a_9000_character_answer_arrives_in_pieces_within_2048_bytes(
    bot_server, app_maker, fake_wecom, advisor, tmp_path
):
    from bot.core.planner import PlanResult

    lines = [
        f"第{'一二三四五六七八九十'[i % 10]}条建议：先核算显存，再看互联带宽，最后比较租用与购买的总成本，"
        "并留出余量给激活值和通信缓冲。"
        for i in range(200)
    ]
    long_answer = "\n".join(lines)
    assert len(long_answer) >= 9000

    class LongAnswers:  # a planner whose answer is this long (an LLM's would be refused by the quality gate)
        mode = "offline"

        def plan(self, text, ctx, tools, emit=None):
            return PlanResult(answer=long_answer, language="zh")

    advisor.offline = LongAnswers()
    base = bot_server()
    _post(base, app_maker, _xml("qian", "给我一份详细的 GPU 选型建议", "5001"))

    def all_parts() -> bool:
        got = fake_wecom.markdown_to("qian")
        return bool(got) and f"/{len(got)} 部分）" in got[0]

    assert fake_wecom.wait_for(all_parts, 60)
    pieces = fake_wecom.markdown_to("qian")
    assert len(pieces) >= 5 and all(len(p.encode("utf-8")) <= 2048 for p in pieces)
    assert pieces[0].startswith(f"（第 1/{len(pieces)} 部分）")
    received = [ln for p in pieces for ln in p.split("\n")[1:]]
    assert [ln for ln in received if ln.startswith("第")] == lines  # every line, whole, in order


@pytest.mark.parametrize("attack", ["wrong corp id", "wrong receive-id", "bad signature", "garbage"])
def test_bad_app_callbacks_are_refused(bot_server, app_maker, fake_wecom, advisor, attack, caplog):
    base = bot_server()
    if attack == "wrong corp id":
        resp = _post(base, app_maker, _xml("mallory", Q, "9001", to="ww-other"))
    elif attack == "wrong receive-id":
        resp = _post(base, app_maker, _xml("mallory", Q, "9002"), receive_id="ww-other")
    elif attack == "bad signature":
        query, raw = app_maker.xml_callback(_xml("mallory", Q, "9003"), AGENT_ID)
        query["msg_signature"] = "f" * 40
        resp = httpx.post(f"{base}/wecom/app", params=query, content=raw)
    else:
        resp = httpx.post(f"{base}/wecom/app", params=app_maker.query("x"), content=b"<xml><<<")
    assert 400 <= resp.status_code < 500
    time.sleep(0.3)
    assert fake_wecom.sent == [] and DeliveryLog(advisor.store.engine).for_channel("wecom") == []
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert APP_TOKEN not in logged and APP_AES_KEY not in logged and fake_wecom.CORP_SECRET not in logged
