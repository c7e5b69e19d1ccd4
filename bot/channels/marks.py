"""Delivered marks the store could not take when the answer went out, written once it answers again.

    marks = PendingMarks(leases)
    marks.add(key, claim, leased=True)     # the answer (or apology) reached the user; the store was down
    marks.flush()                           # what is still unwritten; a background thread retries every few s

A message answered while the store was paused or gone reached the user, but its lease still says `claimed`
(or, where even the claim failed, there is no lease at all). Left so, a redelivery that reaches a restarted
or another worker finds a lease whose owner is gone and answers it again, and the start-up sweep apologises
for it: a second reply. So the mark is kept here and retried until the store takes it: the lease this process
holds moves to `delivered`, and a message answered without a lease gets a `delivered` row of its own. A lease
another process took over in the meantime is left to that process.
"""

from __future__ import annotations

import logging
import threading

from bot.channels.leases import Claim, Leases

log = logging.getLogger("gpu_advisor.channels")

RETRY_EVERY_S = 2.0


class PendingMarks:
    def __init__(self, leases: Leases, every_s: float = RETRY_EVERY_S):
        self.leases, self.every_s = leases, every_s
        self._pending: dict[str, tuple[Claim, bool]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, key: str, claim: Claim, leased: bool) -> None:
        with self._lock:
            self._pending[key] = (claim, leased)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="channel-marks", daemon=True)
                self._thread.start()
        log.warning("%s message %s delivered; the store will be told once it answers", claim.channel, claim.message_id)

    def __len__(self) -> int:
        with self._lock:
            return len(self._pending)

    def flush(self) -> int:
        """Write what the store takes now; returns how many marks are still waiting."""
        with self._lock:
            todo = list(self._pending.items())
        for key, (claim, leased) in todo:
            try:
                self.leases.settle(key, claim, leased)
            except Exception as err:
                log.info("the store still does not take the delivered mark of %s (%s)", key, type(err).__name__)
                break  # the store is still away: try again later
            with self._lock:
                self._pending.pop(key, None)
            log.warning("%s message %s marked delivered after the store came back", claim.channel, claim.message_id)
        return len(self)

    def close(self) -> None:
        self._stop.set()
        self.flush()

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            self.flush()
