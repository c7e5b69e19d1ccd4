"""Slot facts that settle an intent the classifier cannot see well; used by the parser (on the question's own
slots) and by the planner (on the frame after a follow-up edit)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.offline.understand.question import ParsedQuestion

_REPLACE = re.compile(r"替代|代替|取代|平替|替换|replace|substitute|instead of", re.I)
#: words of buying hardware (a budget with them is for cards, not for rent)
BUY = re.compile(r"买|采购|购置|自建|搭|buy|purchase|build|hardware|硬件", re.I)
#: words of renting (a budget with them is for rent)
RENT = re.compile(r"租|rent|上云|云上|云服务|cloud|每月|一个月|per month|monthly", re.I)
_CLAIM = re.compile(r"只要|只需|才要?|就要|costs? only|is only|price is|价格是|卖|告诉我", re.I)


def refine(intent: str, slots: dict[str, Any], p: ParsedQuestion) -> str:
    """Slot facts the classifier cannot see well: two cards and a replacement word, a price stated as fact."""
    if intent in ("train_memory", "zero_states") and slots.get("workload") == "infer" and not slots.get("method"):
        return "fit"  # "用 vllm 部署 qwen3-30b-a3b 需要多少显存": serving memory, not training states
    budget = slots.get("budget_cny") or slots.get("budget_usd")
    if intent in ("fit", "min_gpus") and budget and not p.gpus and slots.get("model"):
        # "客户要一个能跑 70B 推理的方案，预算 50 万": a budget and no card is a request for a shortlist
        return "recommend_serving" if slots.get("workload") == "infer" else "recommend"
    if intent in ("fit", "min_gpus") and slots.get("domestic_only") and not p.gpus and slots.get("model"):
        return "domestic"  # "国产卡能跑 deepseek 满血版吗": the Chinese-made cards, each with the model's fit
    if intent == "compare" and slots.get("domestic_only"):
        return "domestic"
    if (
        intent in ("fit", "min_gpus", "specs", "knowledge")
        and len(p.gpus) + len(p.unknown_gpus) >= 2
        and _REPLACE.search(p.text)
    ):
        return "compare"  # "910B 能替代 A100 做 7B 的 LoRA 吗": the comparison runs the fit on each card
    stated = any(f.unit == "CNY" and f.kind == "price" for f in p.user_figures)
    # a card's price stated as fact is checked, unless the figure is a budget to spend ("买" words) or a rent
    hardware = intent in ("build_budget", "recommend") and BUY.search(p.text)
    if (
        p.gpus
        and not p.models
        and not hardware
        and intent not in ("rent_vs_buy", "cost")
        and (stated or ((p.budget_cny or p.purchase_price_cny) and _CLAIM.search(p.text)))
    ):
        return "price"  # "H100 只要 1000 元", "确认一下 H100 是不是 1000 元一张": checked against the catalog
    if (
        intent == "cost"
        and p.tokens
        and not slots.get("model")
        and not (slots.get("hours") or slots.get("months") or slots.get("gpu_hours"))
    ):
        return "time"  # "8 卡 H800 训 100B tokens 要花多少": a token count is billed through a training run's time
    if intent == "build_budget" and slots.get("model") and not BUY.search(p.text):
        return "recommend"  # "预算 30 万，一周内微调完 14B，上什么卡": a budget for the job, not for hardware
    if (
        intent in ("recommend", "build_budget")
        and (slots.get("workload") == "infer" or p.concurrency)
        and slots.get("model")
    ):
        return "recommend_serving"
    if (
        intent == "recommend"
        and budget
        and slots.get("workload") != "infer"
        and re.search(r"买|采购|搭|buy|purchase|build", p.text, re.I)
    ):
        return "build_budget"  # a budget to buy cards with, with or without the model named
    if (
        intent == "speed"
        and p.concurrency
        and slots.get("model")
        and re.search(r"最多|最大|max|how many|多少路|多少人|几路", p.text, re.I)
    ):
        return "serving_capacity"
    return intent
