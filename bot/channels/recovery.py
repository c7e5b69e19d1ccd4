"""After a crash: the messages a dead (or overdue) process left claimed and undelivered get an apology through
their channel, once, where the platform will not redeliver them (`Delivery.recover` runs this at start-up and
then every minute). Each is taken over first (`Leases.orphans`), so two processes never both apologise, and a
redelivery that arrives later finds the message delivered. Answers streamed over HTTP (the widget) are leased
too (`open_stream`); at start-up the questions a stopped process left half-answered are closed as failed."""

from __future__ import annotations

import logging

from bot.channels.leases import Claim, fail_orphaned_turns, question_digest
from bot.channels.ledger import DeliveryRecord
from bot.channels.render import phrase

log = logging.getLogger("gpu_advisor.channels")


def recover_once(delivery, recoverers: dict) -> int:
    """One sweep; returns how many interrupted messages were reached (or tried)."""
    try:
        orphans = delivery.leases.orphans(frozenset(recoverers))
    except Exception:
        log.exception("could not look for interrupted channel messages")
        return 0
    for lease in orphans:
        claim = lease.claim
        fail_orphaned_turns(delivery.advisor.store, claim)
        status = "apology"
        try:
            sink = recoverers[claim.route](claim.reply_to or {}, claim.lang)
            sink.apology(phrase("interrupted", claim.lang, request_id=claim.request_id))
        except Exception:
            log.exception("the interrupted %s message %s could not be reached", claim.channel, claim.message_id)
            status = "failed"
        try:
            delivery.leases.advance(lease.key, "delivered")
        except Exception:
            log.exception("could not mark %s message %s delivered", claim.channel, claim.message_id)
            delivery.marks.add(lease.key, claim, leased=True)
        delivery.log.record(
            DeliveryRecord(claim.channel, claim.message_id, claim.conversation_id, status, 0.0, claim.request_id)
        )
    if orphans:
        log.warning("apologised for %d channel message(s) an earlier stop left unanswered", len(orphans))
    return len(orphans)


# ---- answers streamed over HTTP (the widget, /v1/ask/stream) ----------------------------------------
#: the lease route of a streamed answer: nothing to send after a crash (the client's connection is gone, the
#: widget shows a network error at once), but its stored question is closed as failed at the next start
STREAM_ROUTE = "api-stream"


def open_stream(leases, conversation_id: str, question: str, lang: str, request_id: str) -> str | None:
    """Lease one streamed answer for this process; the key, or None when the store did not take it."""
    key = f"stream:{request_id}"
    claim = Claim("api", request_id, conversation_id, request_id, lang, question_digest(question), STREAM_ROUTE)
    try:
        leases.claim(key, claim)
    except Exception:
        log.exception("could not lease the streamed answer %s", request_id)
        return None
    return key


def close_stream(leases, key: str | None) -> None:
    if key is None:
        return
    try:
        leases.advance(key, "delivered")
    except Exception:
        log.exception("could not close the lease of the streamed answer %s", key)


def close_interrupted_streams(leases, store) -> int:
    """At start-up: the questions a stopped process was streaming answers to are closed as failed at once,
    so the conversation shows the question and its failure (not a turn pending until it is old)."""
    try:
        orphans = leases.orphans(frozenset({STREAM_ROUTE}))
    except Exception:
        log.exception("could not look for interrupted streamed answers")
        return 0
    for lease in orphans:
        fail_orphaned_turns(store, lease.claim)
        close_stream(leases, lease.key)
    if orphans:
        log.warning("closed %d streamed answer(s) an earlier stop interrupted as failed", len(orphans))
    return len(orphans)
