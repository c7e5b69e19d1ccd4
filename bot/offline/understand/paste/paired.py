"""Two cards, each with the speed it gave ("3090能达到 300 token/s，910B 单卡维持在20～30 token/s，似乎慢了不少"): the
question is about the slow one. The speed read first belongs to the card said before it, so a diagnosis that took the
first card and the first speed would judge the fast reference run, not the run complained of; here each speed is
paired with the card mentioned last before it, and a slowness complaint is about the slowest pair."""

from __future__ import annotations

from typing import Any

from bot.offline.understand.request.model import Request


def slowest_card(request: Request) -> tuple[str, float] | None:
    """(card id, tokens/s) of the slowest of two or more cards that each come with a measured speed; None otherwise."""
    pairs: list[tuple[str, float]] = []
    card: Any = None
    for m in sorted(request.mentions, key=lambda m: getattr(m, "start", 0) or 0):
        if m.role == "gpu" and isinstance(m.value, str):
            card = m.value
        elif m.role == "throughput_measured" and card is not None and m.value:
            pairs.append((card, float(m.value)))
            card = None  # a card's first figure is its own; a later one needs the card said again
    if len({c for c, _ in pairs}) < 2:
        return None
    return min(pairs, key=lambda p: p[1])
