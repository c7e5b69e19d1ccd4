"""What the three recommendation composers (a job, a serving shortlist, a hardware budget) share: the sourcing
arguments for `recommend_gpus`, its picks with their labels, and how a pick's speed is said."""

from __future__ import annotations

import math
from typing import Any

from bot.offline.say.phrases import say
from bot.offline.say.render import Out, duration

LABELS = {
    "zh": {"cheapest": "最省钱", "fastest": "最快", "best_value": "性价比"},
    "en": {"cheapest": "Cheapest", "fastest": "Fastest", "best_value": "Best value"},
}


def sourcing_args(s: dict[str, Any]) -> dict[str, Any]:
    """Only cards sold in China, or only Chinese-made ones (国产: a narrower ask, not the same one)."""
    args: dict[str, Any] = {}
    if s.get("china_only") or s.get("domestic_only"):
        args["china_available"] = True
    if s.get("domestic_only"):
        args["domestic"] = True
    return args


def picks(r: dict[str, Any], out: Out) -> list[tuple[str, dict[str, Any]]]:
    """(label, option) for the cheapest, fastest and best-value picks; none: says why (the first drop reasons)."""
    found = [(LABELS[out.lang][k], r[k]) for k in ("cheapest", "fastest", "best_value") if r.get(k)]
    if not found:
        reason = "; ".join(d[f"reason_{out.lang}"] for d in r.get("dropped", [])[:3]) or "—"
        out.add(say("recommend_none", out.lang, reason=reason))
    return found


def spec_distance(r: dict[str, Any], g: Any) -> float:
    """How far catalog card `g` is from the card `r` (a gpu_specs output) in memory and dense 16-bit compute: the
    sum of the two absolute log ratios, a missing figure counting as 1."""
    mem, tf = r["memory_gb"] or 1, r["bf16_tflops"] or r["fp16_tflops"] or 1
    return abs(math.log((g.memory_gb or 1) / mem)) + abs(math.log((g.bf16_tflops or g.fp16_tflops or 1) / tf))


def pick_gpu(o: dict[str, Any], lang: str) -> str:
    """A pick's card, flagged when it cannot be bought through normal channels in mainland China."""
    if o.get("china_available") is False:
        return o["gpu"] + ("（中国大陆受限）" if lang == "zh" else " (restricted in mainland China)")
    return o["gpu"]


def pick_time(o: dict[str, Any], lang: str) -> str:
    """A pick's run time, else its decode speed; a card with no published figure says so, never "0 token/s"."""
    if o.get("hours"):
        return duration(o["hours"], lang)
    if o.get("tokens_per_s"):
        return f"{o['tokens_per_s']:,.0f} token/s"
    return say("no_speed", lang)
