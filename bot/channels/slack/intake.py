"""The checks a request to POST /slack/events passes before Bolt reads it (pure functions, no I/O).

Bolt parses the body before it verifies the signature, and a body it cannot parse (not UTF-8, broken JSON,
JSON nested past the parser's depth, a JSON array, an interaction `payload` that is not a JSON object) or a
non-numeric `X-Slack-Request-Timestamp` makes it answer 500 with an empty body. So the signature is checked
here first, on the raw bytes, and nothing is parsed for a request that fails it:

    401 {"error": "invalid request"}   when it is not signed with the signing secret (as Bolt answers)
    400 {"error": "<what is wrong>"}   when it is signed but malformed, with `X-Slack-No-Retry: 1`: sending
                                       the same bytes again cannot help

Everything else goes to Bolt unchanged, and Bolt verifies it again (the same scheme).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from urllib.parse import parse_qsl

SIGNATURE_WINDOW_S = 5 * 60  # as Bolt's verifier (slack_sdk.signature)


def malformed(raw: bytes, content_type: str | None) -> str | None:
    """What is wrong with the body, or None when Bolt can read it (mirrors Bolt's own body parsing)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return "the body is not UTF-8"
    if not text:
        return None  # Bolt reads an empty body as {} and answers 404 (no listener)
    kind = (content_type or "").split(";")[0].strip().lower()
    if kind == "application/json" or text.startswith("{"):
        return _object(text, "the body is not a JSON object")
    if "payload" in text:
        payload = dict(parse_qsl(text, keep_blank_values=True)).get("payload")
        return None if payload is None else _object(payload, "the form field `payload` is not a JSON object")
    return None


def signed(raw: bytes, headers: Mapping[str, str], signing_secret: str) -> bool:
    """True when X-Slack-Signature matches the body and X-Slack-Request-Timestamp is within 5 minutes: Slack's
    scheme, as Bolt checks it, over the raw bytes (Bolt's verifier needs a body that decodes as UTF-8)."""
    timestamp = (headers.get("x-slack-request-timestamp") or "").strip()
    signature = headers.get("x-slack-signature") or ""
    if not timestamp.isdigit() or not signature or abs(time.time() - int(timestamp)) > SIGNATURE_WINDOW_S:
        return False
    digest = hmac.new(signing_secret.encode(), b"v0:" + timestamp.encode() + b":" + raw, hashlib.sha256).hexdigest()
    return hmac.compare_digest(f"v0={digest}", signature)


def timestamp_readable(headers: Mapping[str, str]) -> bool:
    """Bolt turns the timestamp into an int without a check: absent is fine (it fails verification cleanly),
    a non-numeric value is not."""
    value = headers.get("x-slack-request-timestamp")
    return value is None or value.strip().isdigit()


def _object(text: str, problem: str) -> str | None:
    try:
        return None if isinstance(json.loads(text), dict) else problem
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
        return problem
