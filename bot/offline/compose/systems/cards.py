"""The cards side by side beneath a capacity or system plan (issue 26): "上线一个 Qwen2.5-32B 的客服，100 并发，选什么卡"
is a choice of card before it is a plan, so the plan's answer also shows `recommend_gpus`' shortlist: for serving,
how many of each card hold the weights and the KV cache of the requests in flight (at the question's lengths, else
at the shortlist's full default window, and said so beside the plan's own count); for a budget for machines, the
cards alone at their purchase price (before servers and network). The cheapest, fastest and best-value picks share
one line where they are the same option (`shortlist.picks`). Every figure is a tool output.
"""

from __future__ import annotations

import math
from typing import Any

from bot.core.toolbox import ToolRun
from bot.offline.compose.shortlist import pick_gpu, pick_time, picks, sourcing_args, without_excluded
from bot.offline.compose.toolargs import budget_args
from bot.offline.say.phrases import say
from bot.offline.say.render import Out, money
from tools.errors import AdvisorError

#: recommend_gpus' largest batch and context (tools/schemas/recommend.py)
MAX_BATCH, MAX_CONTEXT = 100_000, 1_000_000


def _sourcing(s: dict[str, Any], lang: str, buying: bool) -> dict[str, Any]:
    """A purchase in mainland China (a Chinese question that buys, or "国内") compares the cards that can be bought
    there; a rented shortlist keeps every card and flags the restricted ones (`pick_gpu`)."""
    args = sourcing_args(s)
    if lang == "zh" and buying:
        args["china_available"] = True
    return args


def _any_pick(r: dict[str, Any]) -> bool:
    return any(r.get(k) for k in ("cheapest", "fastest", "best_value"))


def serving_cards(
    s: dict[str, Any],
    concurrency: float,
    context: int | None,
    run: ToolRun,
    out: Out,
    plan_pick: dict | None = None,
    plan_length: tuple[int, int] | None = None,
) -> dict | None:
    """How many of each card hold `concurrency` requests of `context` tokens (None: the question gave no length, and
    the shortlist's default window is used, said in the header), and how that relates to the plan's pick
    (`plan_pick`, a plan_serving candidate sized for `plan_length` = (prompt, output) tokens per request).
    Returns the recommend_gpus output, or None when it refused."""
    lang = out.lang
    batch = max(1, min(math.ceil(concurrency - 1e-9), MAX_BATCH))
    args: dict[str, Any] = {"model": s["model"], "workload": "infer", "batch": batch}
    if context:
        args["context_len"] = max(1, min(int(context), MAX_CONTEXT))
    if s.get("precision") in ("bf16", "fp16", "fp8", "int8", "int4"):
        args["precision"] = s["precision"]
    buying = bool(budget_args(s))  # a budget for machines: the cards at their purchase price, within it
    if buying:
        args.update({"pricing": "buy", **budget_args(s)})
    try:
        r = without_excluded(run("recommend_gpus", {**args, **_sourcing(s, lang, buying)}), s)
    except AdvisorError:
        return None
    if not _any_pick(r):  # nothing within the budget: the plan above already says what is nearest
        return r
    chosen = picks(r, out)
    window = next((a["value"] for a in r["assumptions"] if a["key"] == "context_len"), None)
    basis = say("cards_basis_buy" if buying else "cards_basis_rent", lang).strip()
    lines = [
        say(
            "cards_infer_header", lang, batch=f"{batch:,}", ctx=f"{window or args.get('context_len', 0):,}", basis=basis
        )
    ]
    for label, o in chosen:
        cost = money(o["total_cny"], lang) if o.get("total_cny") is not None else say("no_price", lang).strip()
        speed = o.get("tokens_per_s")
        lines.append(
            say(
                "serving_pick" if speed else "serving_pick_no_speed",
                lang,
                label=label,
                n=o["n_gpus"],
                gpu=pick_gpu(o, lang),
                tps=f"{speed or 0:,.0f}",
                cost=cost,
            )
        )
    out.add("\n".join(lines))
    if plan_pick is not None:
        if (
            window and plan_length and window > sum(plan_length)
        ):  # the shortlist's full window against the plan's requests
            key = "cards_infer_bridge_window"
        else:
            key = "cards_infer_bridge_memory" if plan_pick["limited_by"] == "memory" else "cards_infer_bridge"
        out.add(
            say(
                key,
                lang,
                gpu=plan_pick["gpu"],
                precision=plan_pick["precision"],
                n=plan_pick["n_gpus"],
                limited=say(f"limited_{plan_pick['limited_by']}", lang).strip(),
                window=f"{window or 0:,}",
                prompt=f"{plan_length[0]:,}" if plan_length else "—",
                output=f"{plan_length[1]:,}" if plan_length else "—",
            )
        )
    return r


def training_cards(s: dict[str, Any], args: dict[str, Any], run: ToolRun, out: Out) -> dict | None:
    """The cards alone for a training or fine-tuning job within a budget, at their purchase price (`args`: the
    plan_system call's job, model, method, tokens, deadline)."""
    lang = out.lang
    workload = "train" if args["job"] == "train" else "finetune"
    rec: dict[str, Any] = {"model": args["model"], "workload": workload, "pricing": "buy", **budget_args(s)}
    for key in ("method", "tokens", "deadline_hours"):
        if args.get(key):
            rec[key] = args[key]
    try:
        r = without_excluded(run("recommend_gpus", {**rec, **_sourcing(s, lang, True)}), s)
    except AdvisorError:
        return None
    if not _any_pick(r):  # nothing within the budget: the plan above already says what is nearest
        return r
    chosen = picks(r, out)
    lines = [say("cards_train_header", lang)]
    for label, o in chosen:
        cost = money(o["total_cny"], lang) if o.get("total_cny") is not None else "—"
        price = money(o["price_cny"], lang) if o.get("price_cny") is not None else "—"
        lines.append(
            say(
                "cards_train_row",
                lang,
                label=label,
                n=o["n_gpus"],
                gpu=pick_gpu(o, lang),
                time=pick_time(o, lang),
                cost=cost,
                price=price,
            )
        )
    out.add("\n".join(lines))
    return r
