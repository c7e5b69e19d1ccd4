"""Publishable widget keys (`keys create --widget --origin`): what they open, from where, and how often.

The browser side (the snippet on a host page, the panel, the chat) is in tests/bot/channels/widget/.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from bot.api import keys
from bot.channels.widget.origins import normalize_origin
from bot.cli import app as cli

SHOP = "https://shop.example.com"
ASK = {"text": "70B 全参训练，单卡 A100 够吗？"}


def _widget_key(*origins: str) -> dict:
    args = ["keys", "create", "shop", "--widget", "--json"]
    for origin in origins:
        args += ["--origin", origin]
    created = CliRunner().invoke(cli, args)
    assert created.exit_code == 0, created.output
    return json.loads(created.output)


def _headers(key: str, origin: str | None = SHOP, lang: str = "en") -> dict[str, str]:
    headers = {"Authorization": f"Bearer {key}", "Accept-Language": lang}
    if origin:
        headers["Origin"] = origin
    return headers


@pytest.mark.parametrize(
    ("typed", "origin"),
    [
        ("https://Shop.Example.com/", "https://shop.example.com"),
        ("https://shop.example.com:443", "https://shop.example.com"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
    ],
)
def test_origins_are_normalised(typed, origin):
    assert normalize_origin(typed) == origin


@pytest.mark.parametrize(
    "typed",
    [
        "shop.example.com",
        "ftp://shop.example.com",
        "https://shop.example.com/page",
        "https://*.example.com",
        "https://user:pw@shop.example.com",
        "",
    ],
)
def test_a_bad_origin_is_refused_with_the_reason(env, typed):
    result = CliRunner().invoke(cli, ["keys", "create", "shop", "--widget", "--origin", typed])
    assert result.exit_code == 2
    assert "origin" in result.output.lower() and "Traceback" not in result.output


def test_cli_makes_a_publishable_key_listed_with_its_origins(env):
    runner = CliRunner()
    assert runner.invoke(cli, ["keys", "create", "shop", "--widget"]).exit_code == 2  # no --origin
    assert runner.invoke(cli, ["keys", "create", "shop", "--origin", SHOP]).exit_code == 2  # --origin without --widget
    record = _widget_key(SHOP, "https://portal.example.cn/")
    assert record["key"].startswith("pk_") and record["origins"] == [SHOP, "https://portal.example.cn"]
    listed = json.loads(runner.invoke(cli, ["keys", "list", "--json"]).output)
    assert [(k["name"], k.get("kind"), k.get("origins")) for k in listed] == [
        ("shop", "widget", [SHOP, "https://portal.example.cn"])
    ]
    assert all("key" not in k for k in listed)
    assert runner.invoke(cli, ["keys", "revoke", record["id"]]).exit_code == 0


def test_widget_key_streams_answers_from_a_listed_origin_only(client, sse_json):
    record = _widget_key(SHOP)
    resp = client.post("/v1/ask/stream", json=ASK, headers=_headers(record["key"]))
    assert resp.status_code == 200
    cid = resp.headers["x-conversation-id"]
    assert cid.startswith(f"widget:{record['id']}:")
    events = sse_json(resp.text)
    assert events[-1][0] == "final" and events[-1][1]["trace"]["conversation_id"] == cid

    other = client.post("/v1/ask/stream", json=ASK, headers=_headers(record["key"], "https://evil.example.net"))
    assert other.status_code == 403
    assert other.json()["error"]["code"] == "origin_not_allowed"
    assert "https://evil.example.net" in other.json()["error"]["message"]
    assert client.post("/v1/ask/stream", json=ASK, headers=_headers(record["key"], None)).status_code == 403
    # the panel itself runs on this server's origin (inside an iframe only the listed origins may frame)
    own = client.post("/v1/ask/stream", json=ASK, headers=_headers(record["key"], "http://127.0.0.1"))
    assert own.status_code == 200
    # "this server" is never whatever the Host header says: a name pointed here by DNS (a CNAME, a rebinding
    # record) sends an Origin equal to its Host, and is still not one of the key's sites
    posing = {**_headers(record["key"], "http://shop-clone.example"), "Host": "shop-clone.example"}
    assert client.post("/v1/ask/stream", json=ASK, headers=posing).status_code == 403


def test_widget_key_opens_only_the_widget_routes(client):
    record = _widget_key(SHOP)
    for method, path, body in [
        ("GET", "/v1/models", None),
        ("POST", "/v1/ask", ASK),
        ("POST", "/v1/tools/fit_training", {"model": "7B", "gpu": "A100"}),
        ("GET", "/v1/catalog/gpus", None),
        ("POST", "/v1/chat/completions", {}),
    ]:
        resp = client.request(method, path, json=body, headers=_headers(record["key"], lang="zh"))
        assert resp.status_code == 403, path
        assert resp.json()["error"]["code"] == "widget_key_not_allowed"
        assert "组件" in resp.json()["error"]["message"]
    # a publishable key existing closes the API to callers without a key
    assert client.get("/v1/models").status_code == 401
    revoked = CliRunner().invoke(cli, ["keys", "revoke", record["id"]])
    assert revoked.exit_code == 0
    resp = client.post("/v1/ask/stream", json=ASK, headers=_headers(record["key"]))
    assert resp.status_code == 401 and "revoked" in resp.json()["error"]["message"]


def test_widget_conversations_and_feedback_stay_with_their_key(client):
    first, second = _widget_key(SHOP), _widget_key(SHOP)
    cid = client.post("/v1/ask/stream", json=ASK, headers=_headers(first["key"])).headers["x-conversation-id"]
    fb = {"conversation_id": cid, "turn": 0, "rating": 1, "comment": "清楚"}
    assert client.post("/v1/feedback", json=fb, headers=_headers(first["key"])).status_code == 201
    # another key cannot continue or rate it, nor pick its own id
    assert client.post("/v1/feedback", json=fb, headers=_headers(second["key"])).status_code == 404
    stolen = client.post("/v1/ask/stream", json={**ASK, "conversation_id": cid}, headers=_headers(second["key"]))
    assert stolen.status_code == 404
    chosen = client.post("/v1/ask/stream", json={**ASK, "conversation_id": "mine"}, headers=_headers(first["key"]))
    assert chosen.status_code == 404
    go_on = client.post(
        "/v1/ask/stream", json={"text": "换成 8 卡呢？", "conversation_id": cid}, headers=_headers(first["key"])
    )
    assert go_on.status_code == 200 and go_on.headers["x-conversation-id"] == cid


def test_widget_calls_are_rate_limited_per_client_address(make_client):
    client = make_client(widget_rate_limit_per_minute=2)
    record = _widget_key(SHOP)
    fb = {"conversation_id": f"widget:{record['id']}:x", "turn": 0, "rating": 1}
    codes = [client.post("/v1/feedback", json=fb, headers=_headers(record["key"])).status_code for _ in range(3)]
    assert codes[:2] == [404, 404] and codes[2] == 429
    resp = client.post("/v1/feedback", json=fb, headers=_headers(record["key"]))
    assert int(resp.headers["retry-after"]) >= 1


def test_a_visitor_over_the_widget_rate_limit_is_told_to_wait_not_that_authentication_failed(make_client):
    # a chatty visitor keeps hearing "too many requests", never the key-guessing lock-out
    client = make_client(widget_rate_limit_per_minute=1, auth_failures_per_minute=3)
    record = _widget_key(SHOP)
    fb = {"conversation_id": f"widget:{record['id']}:x", "turn": 0, "rating": 1}
    answers = [client.post("/v1/feedback", json=fb, headers=_headers(record["key"], lang="zh")) for _ in range(8)]
    assert [a.status_code for a in answers[:2]] == [404, 429]
    for resp in answers[1:]:
        assert resp.status_code == 429
        assert resp.json()["error"]["code"] == "rate_limited", resp.json()
        assert resp.json()["error"]["message"].startswith("请求过于频繁")


def test_secret_key_is_refused_by_widget_pages_and_never_written_into_them(client):
    _, secret = keys.create(client.app.state.advisor.store, "ops")
    for path in (f"/widget?key={secret}", f"/chat?key={secret}"):
        resp = client.get(path, headers={"Accept-Language": "en"})
        assert resp.status_code == 403, path
        assert "secret API key" in resp.text and secret not in resp.text
    config = client.get(f"/widget/config?key={secret}", headers={"Origin": SHOP})
    assert config.status_code == 403 and config.json()["error"]["code"] == "secret_key"
    assert secret not in config.text


def test_panel_is_framed_only_by_the_listed_origins(client):
    record = _widget_key(SHOP, "https://portal.example.cn")
    resp = client.get(f"/widget?key={record['key']}&parent={SHOP}&title=<b>Hi</b>")
    assert resp.status_code == 200
    csp = resp.headers["content-security-policy"]
    assert f"frame-ancestors {SHOP} https://portal.example.cn" in csp
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert "<b>Hi</b>" not in resp.text and "&lt;b&gt;Hi&lt;/b&gt;" in resp.text  # options are escaped
    refused = client.get(
        f"/widget?key={record['key']}&parent=https://evil.example.net", headers={"Accept-Language": "zh"}
    )
    assert refused.status_code == 403 and "https://evil.example.net" in refused.text and "--origin" in refused.text
    assert client.get("/widget?key=pk_unknown", headers={"Accept-Language": "en"}).status_code == 403


def test_loader_check_answers_with_cors_and_a_clear_refusal(client):
    record = _widget_key(SHOP)
    ok = client.get(f"/widget/config?key={record['key']}", headers={"Origin": SHOP})
    assert ok.status_code == 200 and ok.headers["access-control-allow-origin"] == SHOP
    no = client.get(f"/widget/config?key={record['key']}&lang=zh", headers={"Origin": "https://evil.example.net"})
    assert no.status_code == 403
    # readable by the refused page (so the loader can say why), in the page's language
    assert no.headers["access-control-allow-origin"] == "https://evil.example.net"
    assert no.json()["error"]["code"] == "origin_not_allowed" and "--origin" in no.json()["error"]["message"]


def test_chat_page_is_open_while_the_api_is_open_and_needs_a_key_after(client):
    page = client.get("/chat")
    assert page.status_code == 200 and "frame-ancestors 'none'" in page.headers["content-security-policy"]
    record = _widget_key(SHOP)
    assert client.get("/chat", headers={"Accept-Language": "en"}).status_code == 401
    assert client.get(f"/chat?key={record['key']}").status_code == 200


def test_after_an_upgrade_the_panel_never_runs_with_modules_cached_from_the_last_release(client):
    from bot.channels.widget.assets import version

    page = client.get("/widget", params={"key": _widget_key(SHOP)["key"]})
    assert f"panel.js?v={version()}" in page.text
    # the page's own links carry the release: kept a day
    assert client.get(f"/widget/assets/panel.js?v={version()}").headers["cache-control"] == "public, max-age=86400"
    # what panel.js imports has no version in its URL: revalidated each time (a 304 when unchanged)
    imported = client.get("/widget/assets/i18n.js")
    assert imported.headers["cache-control"] == "no-cache"
    again = client.get("/widget/assets/i18n.js", headers={"If-None-Match": imported.headers["etag"]})
    assert again.status_code == 304
    assert client.get("/widget/assets/panel.js?v=0000000000").headers["cache-control"] == "no-cache"


def test_a_widget_key_alone_closes_the_open_api_and_revoking_it_does_not_open_it_again(client):
    assert client.get("/v1/models").status_code == 200  # open while no key of either kind exists
    record = _widget_key(SHOP)
    assert client.get("/v1/models").status_code == 401
    assert CliRunner().invoke(cli, ["keys", "revoke", record["id"]]).exit_code == 0
    assert client.get("/v1/models").status_code == 401
