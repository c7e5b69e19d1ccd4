"""A step or epoch count (or a GPU-hours sum) the asker saw, explained on their own figures ("29450条，batch_size=1，为什么一个epoch约1800
steps?", "global batch 1*4*7=28 … but the log gives 2007", "200 epoch, gradient accumulation = 6 … 1200 epochs?"):
their arithmetic redone (`diagnose`'s `steps`: global batch = micro-batch × accumulation × GPUs, steps = samples ×
epochs ÷ global batch), then where the count they saw agrees or not: the setting the gap equals and why a trainer
counts that way, or the samples per step their count implies. It needs no model and no card, so none is asked:
when the words ask nothing else a calculator answers, this is the whole answer (with the parts asked in words)."""

from __future__ import annotations

import re
from typing import Any

from bot.core.planner import PlanResult
from bot.offline.compose.support import worded_after
from bot.offline.say.phrases import say
from bot.offline.understand.request.counts import run_counts
from bot.offline.understand.request.model import Request
from tools.errors import AdvisorError

#: the asks this answer covers by itself: an explanation, a why, a setting (the step count's)
OWN_ASKS = frozenset({"knowledge", "diagnose", "config"})


def _n(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}".rstrip("0").rstrip(".")


def plan(text: str, request: Request, run: Any, lang: str) -> PlanResult | None:
    """The whole answer for a count seen asked about and nothing else a calculator answers; else None."""
    if "knowledge" not in request.asks or not set(request.cued) <= OWN_ASKS:
        return None  # a count said beside a question of time or memory is that question's figure
    counts = run_counts(text)
    if counts is None:
        return _card_hours(request, run, lang)
    if (own := _own_reckoning(text, counts)) is not None:
        counts = {**counts, "expected_steps": own}
    try:
        o = run("diagnose", {**counts, "workload": "train"})["steps"]
    except AdvisorError:
        return None
    if not o:
        return None
    blocks = [
        say(
            "steps_redone",
            lang,
            micro=o["micro_batch"],
            accum=o["grad_accum"],
            gpus=o["n_gpus"],
            batch=_n(o["global_batch"]),
            samples=_n(o["samples"]),
            per_epoch=_n(o["steps_per_epoch"]),
            epochs=_n(o["epochs"]),
            total=_n(o["total_steps"]),
        ),
        _verdict(o, lang),
    ]
    if o.get("expected_agrees"):
        blocks.insert(1, say("steps_own", lang, own=_n(o["expected"])))
    left = [k for k in ("epochs", "micro_batch", "grad_accum", "n_gpus") if k not in counts]
    if left:
        sep = "、" if lang == "zh" else ", "
        blocks.append(say("steps_assumed", lang, items=sep.join(say(f"steps_default_{k}", lang) for k in left)))
    answer = worded_after(["\n\n".join(b for b in blocks if b)], request.cued, text, run, lang)
    return PlanResult(answer=answer, language=lang, tool_calls=run.calls, citations=run.citations, follow_ups=[])


#: a result the asker worked out ("8031*1/28≈286.82", "= 287", "应该是 287 步")
_RECKONED = re.compile(r"(?:[=≈]|约等于|应该是|should be)\s*`?(\d[\d,]*(?:\.\d+)?)(?![\d*/×x])")


def _own_reckoning(text: str, counts: dict[str, Any]) -> float | None:
    """The asker's own result for the steps, when they wrote one: a figure after "=", "≈" or "should be" that is
    neither the count they saw nor one of their settings ("the total training steps should be 8031*1/28≈286.82"),
    the last one written."""
    given = {float(v) for v in counts.values()}
    found = [v for m in _RECKONED.finditer(text) if (v := float(m.group(1).replace(",", ""))) not in given]
    return found[-1] if found else None  # the last: "1*4*7=28 … 8031*1/28≈286.82" ends on the steps


def _card_hours(request: Request, run: Any, lang: str) -> PlanResult | None:
    """ "8 卡跑了 24 小时，算下来 192 卡时，对吗？": GPUs × hours redone (run_cost on the card named), set against the
    GPU-hours the asker wrote (the bill is not asked: a price would need its own caveats)."""
    said = {}
    for m in request.mentions:
        said.setdefault(m.role, m.value)
    gpus, hours, stated = said.get("gpus_total"), said.get("wall_clock"), said.get("gpu_hours")
    if not (request.parsed.gpus and gpus and hours and stated):
        return None
    try:
        c = run("run_cost", {"gpu": request.parsed.gpus[0], "hours": float(hours), "n_gpus": int(gpus)})
    except AdvisorError:
        return None
    agrees = abs(c["gpu_hours"] / float(stated) - 1) <= AGREE
    line = say(
        "card_hours_agree" if agrees else "card_hours_differ",
        lang,
        n=_n(gpus),
        hours=_n(hours),
        total=_n(c["gpu_hours"]),
        stated=_n(stated),
    )
    return PlanResult(answer=line, language=lang, tool_calls=run.calls, citations=run.citations, follow_ups=[])


#: a figure that agrees with the one redone: within this share
AGREE = 0.05


def _verdict(o: dict[str, Any], lang: str) -> str:
    stated, ratio, factor = o["stated"], o["ratio"], o["factor"]
    if o["agrees"]:
        return say("steps_agree", lang, stated=_n(stated)) if o["stated_unit"] == "steps" else ""
    labels = {}
    if factor:
        value = o[factor]
        labels = {"what": say(f"steps_what_{factor}", lang), "value": value, "why": say(f"steps_why_{factor}", lang)}
    if o["stated_unit"] == "epochs":
        if factor:
            return say(
                "steps_epochs_factor", lang, stated=_n(stated), epochs=_n(o["epochs"]), ratio=_n(ratio), **labels
            )
        return say("steps_epochs_other", lang, stated=_n(stated), epochs=_n(o["epochs"]), ratio=_n(ratio))
    if factor:  # the gap is that setting's value, said as the setting (the ratio itself is within 5% of it)
        return say("steps_factor_more" if ratio > 1 else "steps_factor_fewer", lang, stated=_n(stated), **labels)
    return say(
        "steps_implied",
        lang,
        stated=_n(stated),
        implied=_n(o["implied_batch"]),
        samples=_n(o["samples"]),
        epochs=_n(o["epochs"]),
        batch=_n(o["global_batch"]),
    )
