"""Requests Bolt cannot read: never a 500. Unsigned ones are refused like any forgery (401); signed but
malformed ones get a 400 that tells Slack not to retry, and nothing is sent to the workspace."""

from __future__ import annotations

import time

import pytest

SIGNED_BUT_MALFORMED = [
    ("application/json", b"{not json"),
    ("application/json", b"[1, 2]"),
    ("application/json", '{"text": "\xff"}'.encode("latin-1")),  # not UTF-8
    ("application/x-www-form-urlencoded", b"payload=%7Bbroken"),
    ("application/x-www-form-urlencoded", b"payload=%5B%5D"),  # a JSON array
    ("application/json", b'{"event": ' + b"[" * 20_000 + b"]" * 20_000 + b"}"),  # deeper than the parser goes
    ("application/x-www-form-urlencoded", b"payload=" + b"%5B" * 20_000),
]


@pytest.mark.parametrize(("content_type", "body"), SIGNED_BUT_MALFORMED)
def test_a_signed_malformed_body_is_a_400_slack_should_not_retry(slack_server, fake_slack, kit, content_type, body):
    signed = slack_server.http.post(
        slack_server.url, content=body, headers={"Content-Type": content_type, **kit.sign(body)}
    )
    assert signed.status_code == 400 and signed.headers["x-slack-no-retry"] == "1"
    assert "malformed Slack request" in signed.json()["error"]
    unsigned = slack_server.http.post(slack_server.url, content=body, headers={"Content-Type": content_type})
    assert unsigned.status_code == 401 and unsigned.json() == {"error": "invalid request"}
    stale = slack_server.http.post(
        slack_server.url, content=body, headers={"Content-Type": content_type, **kit.sign(body, int(time.time()) - 360)}
    )
    assert stale.status_code == 401
    assert fake_slack.calls == []


def test_a_timestamp_that_is_not_a_number_is_refused_not_a_crash(slack_server, fake_slack, kit):
    body = b'{"type": "url_verification", "challenge": "x"}'
    for stamp in ("abc", "", "1e9"):
        r = slack_server.http.post(
            slack_server.url,
            content=body,
            headers={
                "Content-Type": "application/json",
                "X-Slack-Request-Timestamp": stamp,
                "X-Slack-Signature": "v0=00",
            },
        )
        assert r.status_code == 401, stamp
    assert fake_slack.calls == []


def test_a_signed_payload_with_unexpected_fields_is_a_400_not_a_500(slack_server, fake_slack, kit):
    odd_view = {
        "type": "view_submission",
        "team": {"id": kit.TEAM},
        "user": {"id": kit.USER},
        "view": {"id": "V1", "callback_id": "x", "state": {"values": {}}},
    }  # no view type
    r = slack_server.post_interaction(odd_view)
    assert r.status_code == 400 and r.headers["x-slack-no-retry"] == "1"
    assert fake_slack.calls == []


def test_an_unsigned_body_is_refused_before_it_is_parsed(slack_server, fake_slack):
    """Nested far deeper than any parser goes, not UTF-8, or not JSON at all: unsigned, it is a 401 like any
    forgery, since not a byte of it is read before the signature."""
    for body in (b"[" * 500_000, b'{"a": ' * 100_000, b"\xff\xfe\x00", b"payload=" + b"%5B" * 100_000):
        r = slack_server.http.post(slack_server.url, content=body, headers={"Content-Type": "application/json"})
        assert r.status_code == 401 and r.json() == {"error": "invalid request"}, r.text[:200]
    assert fake_slack.calls == []
