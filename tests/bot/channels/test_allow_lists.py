"""Optional allow-lists: a Slack app installed in other workspaces answers only SLACK_TEAM_IDS, a WeCom AI bot
in groups with other corps answers only the members of WECOM_CORP_IDS. What is not listed is acknowledged
(the platform does not retry) and gets nothing: no reply, no conversation, no delivery record."""

from __future__ import annotations

import time

import httpx
from loopback import ServerThread
from slack_fake import BOT_TOKEN, CHANNEL, SIGNING_SECRET, TEAM, FakeSlack, SlackClient, event_envelope, mention

from bot.api.app import create_app
from bot.api.settings import ApiSettings
from bot.channels.ledger import DeliveryLog
from bot.channels.slack.settings import SlackSettings

Q = "8卡H800全参微调7B需要多少显存？"


def test_slack_answers_only_the_listed_workspaces(advisor, fit_7b_h800):
    fake = FakeSlack()
    server = None
    try:
        settings = SlackSettings(
            bot_token=BOT_TOKEN, signing_secret=SIGNING_SECRET, api_url=fake.api_url, team_ids=f"T0SOMEONEELSE,{TEAM}"
        )
        other = SlackSettings(
            bot_token=BOT_TOKEN, signing_secret=SIGNING_SECRET, api_url=fake.api_url, team_ids="T0ONLY"
        )
        assert settings.team_allowed(TEAM) and not other.team_allowed(TEAM) and SlackSettings().team_allowed("T1")
        app = create_app(advisor=advisor, api_settings=ApiSettings(rate_limit_per_minute=0), slack_settings=other)
        server = ServerThread(app, ready_path="/readyz")
        ts = f"{int(time.time())}.000200"
        assert SlackClient(server.base).post_event(event_envelope(mention(Q, ts))).status_code == 200
        time.sleep(2)
        assert fake.replies(CHANNEL, ts) == [] and not advisor.store.exists(f"slack:{TEAM}:{CHANNEL}:{ts}")
        server.stop()
        app = create_app(advisor=advisor, api_settings=ApiSettings(rate_limit_per_minute=0), slack_settings=settings)
        server = ServerThread(app, ready_path="/readyz")
        ts = f"{int(time.time())}.000300"
        assert SlackClient(server.base).post_event(event_envelope(mention(Q, ts))).status_code == 200
        deadline = time.monotonic() + 60
        while not any(fit_7b_h800 in m.text for m in fake.replies(CHANNEL, ts)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert any(fit_7b_h800 in m.text for m in fake.replies(CHANNEL, ts))
    finally:
        if server is not None:
            server.stop()
        fake.close()


def test_the_wecom_ai_bot_answers_only_members_of_the_listed_corps(bot_server, aibot_maker, advisor):
    base = bot_server(WECOM_CORP_IDS="ww-ours,ww-partner")

    def post(corp: str | None, msgid: str) -> httpx.Response:
        sender = {"userid": "zhao", **({"corpid": corp} if corp else {})}
        body = {"msgid": msgid, "aibotid": "AIBOTID42", "chattype": "single", "from": sender}
        body |= {"msgtype": "text", "text": {"content": Q}}
        query, raw = aibot_maker.json_callback(body)
        return httpx.post(f"{base}/wecom/aibot", params=query, content=raw, timeout=30)

    stranger = post("ww-stranger", "m-stranger")
    assert stranger.status_code == 200 and stranger.content == b""  # acknowledged, nothing opened
    time.sleep(1)
    assert DeliveryLog(advisor.store.engine).for_channel("wecom") == []
    for corp, mid in (("ww-partner", "m-partner"), (None, "m-own")):
        reply = aibot_maker.open_reply(post(corp, mid).json())
        assert reply["msgtype"] == "stream"
