"""Answers off the event loop: each runs in a worker thread under a capacity limiter and a deadline.

An offline answer is CPU work under the GIL; run on the event loop it would hold every other request
(health checks included) until it finished. `run_answer` hands it to a thread, so the loop keeps
serving, and stops waiting after the deadline with 504. The abandoned answer still finishes in its
thread and is stored (nothing a user sent is lost); the caller just no longer waits for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread

from bot.api.errors import ApiError


async def run_answer(work: Callable[[], Any], limiter: anyio.CapacityLimiter, deadline_s: float, lang: str) -> Any:
    """Run a blocking answer in a worker thread (the event loop keeps serving /healthz and the rest),
    one of `limiter`'s slots at a time, and give up waiting after `deadline_s` with 504. An abandoned
    answer still finishes in its thread and is stored."""
    try:
        with anyio.fail_after(deadline_s):
            return await anyio.to_thread.run_sync(work, limiter=limiter, abandon_on_cancel=True)
    except TimeoutError:
        msg = (
            f"回答超过了 {deadline_s:g} 秒的时限，请稍后重试或把问题问得更具体些。"
            if lang == "zh"
            else f"The answer took longer than the {deadline_s:g} s limit; try again or ask a narrower question."
        )
        raise ApiError(504, msg, code="answer_timeout") from None
