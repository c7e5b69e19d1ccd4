"""Dialogue state: a question's slots, and a follow-up as an edit of the previous frame.

The state a turn leaves is its frame: the intent and the slots it was answered with. A follow-up
("seq 改成 16k 呢", "and with 16 of those?", "换成 H800", "每天 10 小时", "开 gradient checkpointing")
is read as an edit: the previous intent, the previous slots, and the slots this question gives
replacing theirs. `changes()` lists what the edit changed, so the answer can say it.
"""

from __future__ import annotations

import re
from typing import Any

from bot.offline.understand.question import ParsedQuestion
from tools.catalog.lookup import get_model
from tools.errors import AdvisorError

#: slots a question can give, in the planner's names (what a frame is made of)
SLOTS = (
    "model",
    "gpu",
    "gpus",
    "n_gpus",
    "method",
    "objective",
    "sharding",
    "workload",
    "precision",
    "tokens",
    "seq_len",
    "batch",
    "context_len",
    "budget_cny",
    "budget_usd",
    "budget_eur",
    "hours_per_day",
    "months",
    "zero_stage",
    "price_cny_per_hour",
    "price_usd_per_hour",
    "china_only",
    "domestic_only",
    "gpu_hours",
    "hours",
    "deadline_hours",
    "purchase_price_cny",
    "offload",
    "micro_batch",
    "grad_checkpointing",
    "currency",
    "electricity_cny_per_kwh",
    "pue",
    "servers_per_rack",
    "rack_limit_kw",
)
#: an edit confident enough to start a new frame must be this sure of its own intent
NEW_INTENT_CONFIDENCE = 0.7
#: a short follow-up ("并发改成 200 呢") keeps the previous intent unless the model is this sure of another
SHORT_NEW_INTENT_CONFIDENCE = 0.9
#: slots a new question (not an edit) takes over from the conversation when it does not give them
CARRIED = (
    "model",
    "gpu",
    "n_gpus",
    "method",
    "objective",
    "workload",
    "precision",
    "tokens",
    "seq_len",
    "context_len",
    "batch",
    "hours_per_day",
    "months",
    "zero_stage",
    "price_cny_per_hour",
    "price_usd_per_hour",
    "china_only",
    "domestic_only",
    "currency",
    "electricity_cny_per_kwh",
    "pue",
    "servers_per_rack",
    "rack_limit_kw",
)
#: a message that is only a value ("16k", "4 卡", "H800?"): an edit even without 呢 / what about
_SHORT = 24
_CHANGE = re.compile(
    r"改成|改为|换成|换为|调到|调成|拉到|加到|降到|改用|换用|instead|switch to|change (?:it )?to", re.I
)
_BARE_K = re.compile(
    r"^\s*(?:那|那么|and|what about|how about)?\s*(\d+(?:\.\d+)?)\s*k\s*(?:呢|的呢|上下文呢|\?|？)?\s*$", re.I
)

LABELS = {
    "model": ("模型", "model"),
    "gpu": ("GPU", "GPU"),
    "n_gpus": ("卡数", "GPUs"),
    "method": ("方法", "method"),
    "objective": ("训练目标", "objective"),
    "precision": ("精度", "precision"),
    "tokens": ("数据量", "tokens"),
    "seq_len": ("序列长度", "sequence length"),
    "context_len": ("上下文", "context"),
    "batch": ("并发", "concurrency"),
    "hours_per_day": ("每天使用", "hours a day"),
    "months": ("时长", "months"),
    "zero_stage": ("ZeRO 阶段", "ZeRO stage"),
    "budget_cny": ("预算", "budget"),
    "budget_usd": ("预算（美元）", "budget (USD)"),
    "budget_eur": ("预算（欧元）", "budget (EUR)"),
    "price_cny_per_hour": ("每卡时价格", "price per GPU-hour"),
    "price_usd_per_hour": ("每卡时价格（美元）", "price per GPU-hour (USD)"),
    "gpu_hours": ("卡时", "GPU-hours"),
    "hours": ("时长（小时）", "hours"),
    "offload": ("卸载", "offload"),
    "micro_batch": ("micro batch", "micro batch"),
    "grad_checkpointing": ("梯度检查点", "gradient checkpointing"),
    "workload": ("任务", "workload"),
    "currency": ("币种", "currency"),
    "domestic_only": ("只用国产卡", "domestic only"),
    "china_only": ("国内可买", "available in China"),
    "electricity_cny_per_kwh": ("电价", "electricity price"),
    "pue": ("PUE", "PUE"),
    "servers_per_rack": ("每柜服务器数", "servers per rack"),
    "rack_limit_kw": ("机柜功率上限", "rack power limit"),
}


def _counted_gpu(p: ParsedQuestion) -> str | None:
    """The card the question is about: the one its GPU count is written with ("a 4090 … say 8x H100s": the
    H100), else the first named."""
    cards: list[tuple[int, int]] = []
    for start, end in sorted((start, end) for slot, start, end in p.spans if slot == "gpus"):
        if cards and start - cards[-1][1] <= 1:  # "80GB A100": the card's memory and its name are one card
            cards[-1] = (cards[-1][0], max(end, cards[-1][1]))
        else:
            cards.append((start, end))
    if len(p.gpus) > 1 and len(cards) == len(p.gpus):  # one span per card, in order
        for slot, start, end in p.spans:
            if slot == "n_gpus":
                for i, (c_start, c_end) in enumerate(cards):
                    if start <= c_start and c_end <= end:
                        return p.gpus[i]
    return p.gpus[0] if p.gpus else None


def slots_of(p: ParsedQuestion) -> dict[str, Any]:
    """The planner's slots from one parsed question (None where the question is silent)."""
    return {
        "model": p.models[0] if p.models else None,
        "gpu": _counted_gpu(p),
        "gpus": list(p.gpus) or None,
        "excluded": [*p.excluded_gpus, *p.excluded_vendors] or None,
        "n_gpus": p.n_gpus,
        "method": p.method,
        "objective": p.objective,
        "sharding": p.sharding,
        "workload": p.workload,
        "precision": p.precision,
        "kv_precision": p.kv_precision,
        "tokens": p.tokens,
        "seq_len": p.seq_len,
        "batch": p.batch or p.concurrency,
        "context_len": p.context_len,
        "budget_cny": p.budget_cny,
        "budget_usd": p.budget_amount if p.budget_currency == "USD" else None,
        "budget_eur": p.budget_amount if p.budget_currency == "EUR" else None,
        "hours_per_day": p.hours_per_day,
        "months": p.months,
        "zero_stage": p.zero_stage,
        "price_cny_per_hour": p.price_cny_per_hour,
        "price_usd_per_hour": p.price_per_hour if p.price_currency == "USD" else None,
        "china_only": p.china_only or None,
        "domestic_only": p.domestic_only or None,
        "gpu_hours": p.gpu_hours,
        "hours": p.hours,
        "deadline_hours": p.deadline_hours or (p.deadline_days * 24 if p.deadline_days else None),
        "purchase_price_cny": p.purchase_price_cny,
        "offload": p.offload,
        "micro_batch": p.micro_batch,
        "grad_checkpointing": p.grad_checkpointing,
        "currency": p.currency,
        "electricity_cny_per_kwh": p.electricity_cny_per_kwh,
        "pue": p.pue,
        "servers_per_rack": p.servers_per_rack,
        "rack_limit_kw": p.rack_limit_kw,
    }


def _given(slots: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in slots.items() if v not in (None, [])}


def is_edit(p: ParsedQuestion, previous: dict[str, Any] | None) -> bool:
    """Whether the question edits the previous frame rather than asking something new."""
    if not previous:
        return False
    if p.intent in ("greeting", "out_of_scope") and p.confidence >= NEW_INTENT_CONFIDENCE:
        return False
    mine = _given(slots_of(p))
    if _BARE_K.match(p.text):
        return True
    if p.follow_up and (p.intent == previous["intent"] or p.confidence < NEW_INTENT_CONFIDENCE):
        return True
    if p.follow_up and len(p.text.strip()) <= _SHORT and mine and p.confidence < SHORT_NEW_INTENT_CONFIDENCE:
        return True
    if _CHANGE.search(p.text) and len(p.text.strip()) <= _SHORT and mine:
        return True  # "并发改成 200 呢", "换成 H800"
    if p.models and p.gpus:
        return False  # a question that names its own model and GPU starts afresh
    short = len(p.text.strip()) <= _SHORT and bool(mine)
    return short and (p.intent == previous["intent"] or p.confidence < NEW_INTENT_CONFIDENCE)


def keeps_intent(p: ParsedQuestion, previous: dict[str, Any]) -> bool:
    """Whether an edit keeps the previous intent ("换成 H800 呢") or asks something new of the same frame
    ("那要多久呢" after a fit: time, with the same model and GPUs). A change said as a change ("改成",
    "换成", "instead") always keeps it."""
    if p.intent == previous["intent"] or p.intent in ("knowledge", "out_of_scope", "greeting"):
        return True
    if _CHANGE.search(p.text) and len(p.text.strip()) <= _SHORT:
        return True
    short = len(p.text.strip()) <= _SHORT
    return p.confidence < (SHORT_NEW_INTENT_CONFIDENCE if short else NEW_INTENT_CONFIDENCE)


def edit(p: ParsedQuestion, previous: dict[str, Any]) -> dict[str, Any]:
    """The previous slots with this question's replacing theirs."""
    mine = slots_of(p)
    if m := _BARE_K.match(p.text):
        value = int(float(m.group(1)) * 1024)
        key = (
            "seq_len"
            if previous["slots"].get("seq_len") or previous["intent"] in ("time", "fit", "min_gpus", "train_memory")
            else "context_len"
        )
        if previous["slots"].get("workload") == "infer" or previous["intent"] in (
            "speed",
            "serving_capacity",
            "kv_cache",
            "recommend_serving",
        ):
            key = "context_len"
        mine[key] = value
    if (
        mine.get("seq_len")
        and not mine.get("context_len")
        and previous["slots"].get("context_len")
        and not previous["slots"].get("seq_len")
    ):
        mine["context_len"], mine["seq_len"] = mine["seq_len"], None  # "seq 改成 16k" in a serving dialogue
    if (
        mine.get("context_len")
        and not mine.get("seq_len")
        and previous["slots"].get("seq_len")
        and not previous["slots"].get("context_len")
    ):
        mine["seq_len"], mine["context_len"] = mine["context_len"], None
    slots = dict(previous["slots"])
    if mine.get("gpu"):
        slots["gpus"] = None  # a new card replaces the old list
    if mine.get("model") and (sibling := _sibling(previous["slots"].get("model"), mine["model"])):
        mine["model"] = sibling  # "32B 呢" after Qwen2.5-7B: the same family's 32B, Qwen2.5-32B
    for key, value in mine.items():
        if value not in (None, []):
            slots[key] = value
    return drop_stale(_prices_of_the_card(slots, previous["slots"], mine), previous["slots"])


#: what is said of one card and is no figure of another ("H100 at $1.8 per hour", then "A800 呢")
_PER_CARD = ("price_cny_per_hour", "price_usd_per_hour", "purchase_price_cny")


def _prices_of_the_card(slots: dict[str, Any], before: dict[str, Any], mine: dict[str, Any]) -> dict[str, Any]:
    """A price said for the previous card is not carried to another card (unless this question gives one)."""
    if not before.get("gpu") or slots.get("gpu") == before.get("gpu"):
        return slots
    return {k: (None if k in _PER_CARD and mine.get(k) in (None, []) else v) for k, v in slots.items()}


_BARE = re.compile(r"(\d+(?:\.\d+)?)B")
_SIZE_IN_NAME = re.compile(r"(?<![\w.])\d+(?:\.\d+)?[Bb](?![a-z])")


def _sibling(before: str | None, size: str) -> str | None:
    """The catalog model named like the previous one at a bare size the follow-up gives ("32B" after Qwen2.5-7B:
    Qwen2.5-32B); None when the size is not bare, the previous model is no catalog model or has no such sibling."""
    if not _BARE.fullmatch(size or "") or not before or _BARE.fullmatch(before):
        return None
    try:
        name = get_model(before).name
        swapped = _SIZE_IN_NAME.sub(size, name, count=1)
        hit = get_model(swapped) if swapped != name else None
        return hit.id if hit and not hit.generic else None  # a catalog model, never a generic shape of that name
    except AdvisorError:
        return None


#: what only one kind of job has: a switch to the other drops it (a LoRA method means nothing to serving)
ONLY_FOR = {
    "infer": ("method", "objective", "zero_stage", "offload", "seq_len", "micro_batch", "tokens", "grad_checkpointing"),
    "train": ("context_len", "batch", "concurrency"),
}


def drop_stale(slots: dict[str, Any], before: dict[str, Any]) -> dict[str, Any]:
    """A new topic drops what no longer applies: switching between serving and training forgets the other job's
    settings."""
    job, was = slots.get("workload"), before.get("workload")
    if not job or job == was:
        return slots
    stale = ONLY_FOR["infer" if job == "infer" else "train"]
    return {k: (None if k in stale else v) for k, v in slots.items()}


#: slots that say one thing two ways: a question that gives one does not carry the other from before
_ONE_OF = (("price_cny_per_hour", "price_usd_per_hour"), ("price_usd_per_hour", "price_cny_per_hour"))


def carry(p: ParsedQuestion, previous: dict[str, Any] | None) -> dict[str, Any]:
    """A new question's slots, with the conversation's model, GPU… where it gives none."""
    mine = slots_of(p)
    if previous and not (p.models and p.gpus):
        blocked = {"gpu"} if p.unknown_gpus else set()
        blocked |= {"model"} if p.unknown_models else set()
        for one, other in _ONE_OF:  # a price given now, in either currency, replaces the one said before
            if mine.get(one) not in (None, []):
                blocked.add(other)
        for key in CARRIED:
            if key not in blocked and mine.get(key) in (None, []) and previous["slots"].get(key) not in (None, []):
                mine[key] = previous["slots"][key]
        return drop_stale(_prices_of_the_card(mine, previous["slots"], slots_of(p)), previous["slots"])
    return mine


def changes(before: dict[str, Any], after: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(slot, old, new) for every slot the edit changed."""
    out = []
    for key in LABELS:
        old, new = before.get(key), after.get(key)
        if new not in (None, []) and new != old:
            out.append((key, old, new))
    return out


def carried_slots(
    p: ParsedQuestion, slots: dict[str, Any], changed: list, state: dict[str, Any] | None
) -> dict[str, Any]:
    """The slots an answer takes from the conversation's earlier turns (neither said now nor just changed)."""
    previous = ((state or {}).get("frame") or {}).get("slots") or {}
    own = {k for k, v in slots_of(p).items() if v not in (None, [], False)}
    edited = {k for k, _, _ in changed}
    return {
        k: v
        for k, v in slots.items()
        if k in previous and previous[k] == v and k not in own and k not in edited and v not in (None, [], False)
    }
