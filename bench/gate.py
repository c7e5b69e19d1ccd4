"""The benchmark gate (issue 28): same-run ratios checked against `gate.yaml`, for `load.py --quick` and
`calculators.py --quick` (and tests/bench/test_gate.py, which runs both in CI).

A ratio is a figure divided by a baseline measured in the same run, interleaved with it (the /healthz route, a
trivial function), so a busy machine weighs on both alike. Each check takes the median of several rounds; a
check over its limit is measured again once (a second set of rounds, the median over all of them) before it
fails, so one unlucky stretch of a shared machine does not fail CI while a real regression still does.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

#: the limits; BENCH_GATE_LIMITS names another file (tests/bench/test_gate.py checks that the gate can fail)
LIMITS = Path(os.environ.get("BENCH_GATE_LIMITS") or Path(__file__).with_name("gate.yaml"))


def limits() -> dict:
    return yaml.safe_load(LIMITS.read_text(encoding="utf-8"))


@dataclass
class Check:
    name: str
    measured: float
    reference: float
    margin: float
    higher_is_better: bool = False

    @property
    def limit(self) -> float:
        return self.reference / self.margin if self.higher_is_better else self.reference * self.margin

    @property
    def ok(self) -> bool:
        return self.measured >= self.limit if self.higher_is_better else self.measured <= self.limit

    def line(self) -> str:
        sign = "≥" if self.higher_is_better else "≤"
        verdict = "ok" if self.ok else "REGRESSED"
        return (
            f"  {self.name:<34} {self.measured:>9.3f}  limit {sign} {self.limit:<9.3f} "
            f"(reference {self.reference:g}, margin ×{self.margin:g})  {verdict}"
        )


def judged(
    name: str, rounds: Callable[[], list[float]], reference: float, margin: float, higher_is_better: bool = False
) -> Check:
    """The median of `rounds()`'s ratios against the limit; over it, measured again and judged on all rounds."""
    got = rounds()
    check = Check(name, statistics.median(got), reference, margin, higher_is_better)
    if not check.ok:
        got += rounds()
        check = Check(name, statistics.median(got), reference, margin, higher_is_better)
    return check


def report(title: str, checks: list[Check]) -> int:
    print(f"benchmark gate, {title} (limits: {LIMITS.name}; ratios against a baseline measured in this run):")
    for c in checks:
        print(c.line())
    failed = [c.name for c in checks if not c.ok]
    print("gate: " + ("passed" if not failed else "FAILED: " + ", ".join(failed)))
    return 1 if failed else 0
