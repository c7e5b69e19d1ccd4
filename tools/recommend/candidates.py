"""The options `recommend_gpus` weighs: one candidate per GPU type at its count, how the candidates are
ranked (cheapest first, unpriced last by hours) with the three picks, and a candidate as the option the
output shows."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from tools.catalog.gpu_spec import GpuSpec
from tools.catalog.prices import PriceQuote
from tools.recommend.reasons import option_text
from tools.schemas.recommend import RecommendInput, RecommendOption


@dataclass
class Candidate:
    """One GPU type at its chosen count, before ranking."""

    gpu: GpuSpec
    n: int
    min_gpus: int
    per_gpu_gb: float
    usable_gb: float
    zero_stage: int | None
    tp: int = 1  # inference: tensor-parallel size inside a node (the rest is pipeline stages)
    hours: float | None = None
    hours_low: float | None = None
    hours_high: float | None = None
    tokens_per_s: float | None = None
    speed_note: tuple[str, str] | None = None
    cost: tuple[float, float, float] | None = None
    quote: PriceQuote | None = None
    tags: list[str] = field(default_factory=list)

    @property
    def gpu_hours(self) -> float | None:
        return None if self.hours is None else self.hours * self.n


def rank(cands: list[Candidate], workload: str) -> tuple[list[Candidate], dict[str, Candidate | None]]:
    priced = sorted((c for c in cands if c.cost), key=lambda c: (c.cost[0], c.hours or 0, c.gpu.id))
    unpriced = sorted(
        (c for c in cands if not c.cost),
        key=lambda c: (c.hours if c.hours is not None else math.inf, -(c.tokens_per_s or 0), c.gpu.id),
    )
    ranked = priced + unpriced
    if workload == "infer":
        timed = [c for c in ranked if c.tokens_per_s]
        fastest = max(timed, key=lambda c: c.tokens_per_s, default=None)
        value = [c for c in priced if c.tokens_per_s]
        best = min(value, key=lambda c: c.cost[0] / c.tokens_per_s, default=None)
    else:
        fastest = min(ranked, key=lambda c: c.hours, default=None)
        best = min(priced, key=lambda c: c.cost[0] * c.hours, default=None)
    picks = {"cheapest": priced[0] if priced else None, "fastest": fastest, "best_value": best}
    for name, c in picks.items():
        if c is not None:
            c.tags.append(name)
    return ranked, picks


def option(c: Candidate, rank: int, inp: RecommendInput) -> RecommendOption:
    def r4(x):
        return None if x is None else float(f"{x:.4g}")

    def cny(x):
        return None if x is None else round(x, 2)

    cost = c.cost or (None, None, None)
    why_en, why_zh = option_text(c, inp)
    return RecommendOption(
        rank=rank,
        gpu=c.gpu.name,
        gpu_id=c.gpu.id,
        n_gpus=c.n,
        fits=True,
        per_gpu_gb=c.per_gpu_gb,
        usable_gb=c.usable_gb,
        zero_stage=c.zero_stage,
        min_gpus=c.min_gpus,
        hours=r4(c.hours),
        hours_low=r4(c.hours_low),
        hours_high=r4(c.hours_high),
        gpu_hours=r4(c.gpu_hours),
        total_cny=cny(cost[0]),
        low_cny=cny(cost[1]),
        high_cny=cny(cost[2]),
        price_cny=None if c.quote is None else c.quote.mid_cny,
        price_source=None if c.quote is None else c.quote.cite(),
        tokens_per_s=r4(c.tokens_per_s),
        china_available=c.gpu.china.available,
        why=why_en,
        why_zh=why_zh,
    )
