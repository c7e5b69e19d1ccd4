""" "生成方案" in a conversation: after a serving or systems answer the proposal of that requirement comes back as
signed, dated, per-conversation links the app serves (opened as a person would: the Markdown read, the workbook
loaded with openpyxl, the charts as images); a forged, expired or another owner's link is a 404; the same links
reach Slack and WeCom in their own formats; with nothing planned yet the answer asks for the requirement."""

from __future__ import annotations

import io
import json
import re
from urllib.parse import urlsplit

from openpyxl import load_workbook
from PIL import Image

from bot.api import keys
from bot.channels.render import Answer, render_wecom
from bot.channels.slack.blocks import answer_text
from bot.core import attachments
from tools.catalog import user_models

LINK = re.compile(r"\[([a-z.]+)\]\((\S+?)\)")


def _links(answer: str) -> dict[str, str]:
    return dict(LINK.findall(answer))


def test_a_proposal_asked_for_in_chat_is_served_by_its_links(client, env):
    user_models.use_data_dir(env / "data")
    try:
        first = client.post("/v1/ask", json={"text": "Qwen3-32B 客服，高峰并发 200，要几张卡？"}).json()
        cid = first["conversation_id"]
        planned = next(c for c in first["tool_calls"] if c["tool"] == "plan_system")
        r = client.post("/v1/ask", json={"text": "生成方案", "conversation_id": cid})
        assert r.status_code == 200, r.text
        trace = r.json()
        asked = next(c for c in trace["tool_calls"] if c["tool"] == "plan_system")
        assert asked["input"] == planned["input"]  # the requirement as the conversation understood it
        best = asked["output"]["best_value"]
        assert f"方案已生成：推荐 {best}" in trace["answer"] and trace["ungrounded"] == [] and trace["unused"] == []
        links = _links(trace["answer"])
        assert set(links) == {"proposal.md", "bom.xlsx", "tco.png", "capacity.png"}
        md = client.get(links["proposal.md"])  # no key needed: the signed link is the credential
        assert md.status_code == 200 and md.headers["content-type"].startswith("text/markdown")
        assert md.text.startswith("# 算力方案建议书") and f"## 推荐：{best}" in md.text
        wb = load_workbook(io.BytesIO(client.get(links["bom.xlsx"]).content))
        assert [row[0] for row in wb["Options"].iter_rows(values_only=True)][1:] == [
            o["label"] for o in asked["output"]["options"]
        ]
        png = Image.open(io.BytesIO(client.get(links["tco.png"]).content))
        assert png.format == "PNG" and png.size == (960, 576)
        # a link changed in any part, or past its date, opens nothing
        url = urlsplit(links["proposal.md"])
        forged = url.path + "?" + url.query.replace("sig=", "sig=0")
        assert client.get(forged).status_code == 404
        other = url.path.replace("proposal.md", "../meta.json")
        assert client.get(other).status_code == 404
        token = url.path.split("/")[4]
        meta = attachments.root() / token / "meta.json"
        record = json.loads(meta.read_text())
        meta.write_text(json.dumps({**record, "expires": 1}))
        assert client.get(links["proposal.md"]).status_code == 404
        meta.write_text(json.dumps(record))
        # the same answer in Slack and WeCom keeps the links
        answer = Answer.from_trace(_trace(trace))
        assert links["bom.xlsx"] in answer_text(answer) and links["bom.xlsx"] in render_wecom(answer)
    finally:
        user_models.use_data_dir(None)


def test_without_a_signature_only_a_key_that_may_read_the_conversation_opens_the_files(client, advisor, env):
    user_models.use_data_dir(env / "data")
    try:
        _, mine = keys.create(advisor.store, "sales")
        _, theirs = keys.create(advisor.store, "other")
        auth = {"Authorization": f"Bearer {mine}"}
        first = client.post("/v1/ask", json={"text": "预算 200 万，做 14B 的微调，怎么配？"}, headers=auth).json()
        again = client.post(
            "/v1/ask", json={"text": "make this a proposal", "conversation_id": first["conversation_id"]}, headers=auth
        ).json()
        assert "The proposal is ready" in again["answer"]
        path = urlsplit(_links(again["answer"])["proposal.md"]).path
        assert client.get(path).status_code == 401
        assert client.get(path, headers={"Authorization": f"Bearer {theirs}"}).status_code == 404
        ok = client.get(path, headers=auth)
        assert ok.status_code == 200 and ok.text.startswith("# Compute proposal")
    finally:
        user_models.use_data_dir(None)


def test_with_nothing_planned_the_answer_asks_for_the_requirement(client):
    r = client.post("/v1/ask", json={"text": "出个方案"}).json()
    assert "先说需求" in r["answer"] and "/v1/proposals/files/" not in r["answer"] and r["ungrounded"] == []


def _trace(data: dict):
    from bot.core.trace import AnswerTrace

    return AnswerTrace.model_validate(data)
