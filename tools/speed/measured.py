"""A measured speed against the calculators' estimate for the same setup: the one place that decides whether it
is what the hardware gives ("normal"), above the estimate ("high"), below it ("low") or far below ("very_low").
The diagnosis (`tools/diagnose/slow.py`) and the answer's speed section (`bot/offline/compose/evidence.py`) both
read it, so the lead and the body of one answer cannot give opposite verdicts.

The band is the one the answer's speed section already used (0.7–1.3 × the estimate is normal, under 0.4 far
below); the diagnosis used to call "slow" anything under 0.6 of its own estimate, which left 0.6–0.7 said both ways.
"""

from __future__ import annotations

from typing import Literal

#: measured ÷ estimated: above HIGH faster than the estimate, from LOW to HIGH normal, below VERY_LOW far below
HIGH, LOW, VERY_LOW = 1.3, 0.7, 0.4

Verdict = Literal["high", "normal", "low", "very_low"]


def verdict(measured: float, expected: float) -> Verdict:
    """How a measured speed stands against the estimate for its setup (both in the same unit, e.g. tokens/s)."""
    ratio = measured / expected if expected else 1.0
    if ratio > HIGH:
        return "high"
    if ratio >= LOW:
        return "normal"
    return "low" if ratio >= VERY_LOW else "very_low"


def below(measured: float, expected: float) -> bool:
    """Slower than the setup should run: a speed fix may be the cause."""
    return verdict(measured, expected) in ("low", "very_low")
