"""After a crash: the messages a dead (or overdue) process left claimed and undelivered get an apology through
their channel, once, where the platform will not redeliver them (`Delivery.recover` runs this at start-up and
then every minute). Each is taken over first (`Leases.orphans`), so two processes never both apologise, and a
redelivery that arrives later finds the message delivered."""

from __future__ import annotations

import logging

from bot.channels.leases import fail_orphaned_turns
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
