"""Searches over a monotone need: the largest batch or context that fits (fit_inference's max_batch, max_context).

Pure arithmetic on closures; no model or GPU knowledge.
"""

from __future__ import annotations

import math


def root(lines: tuple[tuple[float, float], ...], room: float) -> float:
    """Where a concave piecewise-linear need (the minimum of `lines`, each (offset, slope)) uses up `room`."""
    best = 0.0
    for offset, slope in lines:
        if slope <= 0:  # a flat line: every x meets it, or none does
            if room >= offset:
                return math.inf
            continue
        best = max(best, (room - offset) / slope)
    return best


def largest(ok, cap: int, guess: float) -> int:
    """Largest x in [1, cap] with ok(x) (ok monotone: true, then false); 0 when ok(1) fails.

    The search gallops out from `guess` (an estimate from the closed form), so a good guess costs a few
    calls of `ok`; the answer does not depend on the guess.
    """
    if not ok(1):
        return 0
    x = cap if not guess < cap else max(1, int(guess))
    if ok(x):
        lo, step = x, 1
        while lo < cap:
            hi = min(lo + step, cap)
            if not ok(hi):
                break
            lo, step = hi, step * 2
        else:
            return lo
    else:
        hi, step = x, 1
        while True:
            lo = max(1, hi - step)
            if ok(lo):
                break
            hi, step = lo, step * 2
    return bisect(ok, lo, hi)


def bisect(ok, lo: int, hi: int) -> int:
    """The largest x in [lo, hi) with ok(x), given ok(lo) (ok true, then false; hi is never tried)."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo
