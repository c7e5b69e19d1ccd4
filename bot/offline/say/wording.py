"""How the planner says what it assumed, what a follow-up changed, and what went wrong, in words a
person can act on (no field names, no validation dumps)."""

from __future__ import annotations

import re
from typing import Any

from bot.offline.say.phrases import say
from bot.offline.say.render import count, method_label
from bot.offline.understand.dialogue import LABELS
from bot.offline.understand.frames import DEFAULT_LABEL
from tools.catalog.lookup import get_gpu, get_model
from tools.errors import AdvisorError, UnknownName

#: fields whose error means "the catalog has no such figure", not "your input is wrong"
CATALOG_FIELDS = {
    "purchase_cny": ("采购价", "purchase price"),
    "rent_cny_per_hour": ("租赁价", "rental price"),
    "price_cny_per_hour": ("租赁价", "rental price"),
    "node_kw_per_gpu": ("功耗", "power figure"),
}
_BOUND = re.compile(
    r"Input should be (greater than or equal to|less than or equal to|greater than|less than) ([\d.,]+)"
)
_IDENT = re.compile(r"\s*[(（]?\b[a-z]+(?:_[a-z0-9]+)+\b[)）]?")


#: the unit a slot's bare number is read in
UNITS = {"months": ("个月", "months"), "hours_per_day": ("小时", "h"), "hours": ("小时", "h")}


def _value(key: str, value: Any, lang: str) -> str:
    try:
        if key == "gpu":
            return get_gpu(value).name
        if key == "model":
            return get_model(value).name
    except AdvisorError:
        return str(value)
    if key == "method":
        return method_label(value, lang).strip()
    if key == "workload" and value in ("infer", "finetune", "pretrain", "train"):
        return say(f"workload_{value}", lang)
    if key == "tokens":
        return f"{count(value)} token" if lang == "zh" else f"{count(value)} tokens"
    if isinstance(value, bool):
        return ("开" if value else "关") if lang == "zh" else ("on" if value else "off")
    if key in UNITS and isinstance(value, int | float):
        return f"{value:g} {UNITS[key][0 if lang == 'zh' else 1]}"
    if isinstance(value, float) and value.is_integer():
        return f"{int(value):,}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def changed_items(changed: list[tuple[str, Any, Any]], lang: str) -> str:
    parts = []
    for key, old, new in changed:
        name = LABELS.get(key, (key, key))[0 if lang == "zh" else 1]
        new_text = _value(key, new, lang)
        parts.append(f"{name} {_value(key, old, lang)} → {new_text}" if old not in (None, []) else f"{name} {new_text}")
    return ("；" if lang == "zh" else "; ").join(parts)


def carried_items(carried: dict[str, Any], lang: str) -> str:
    """What a follow-up keeps from the turns before it, label and value: "16 张 GPU · 每天 6 小时"."""
    parts = []
    for key, value in carried.items():
        if key in LABELS:
            parts.append(f"{LABELS[key][0 if lang == 'zh' else 1]} {_value(key, value, lang)}")
    return " · ".join(parts)


def defaults_note(defaulted: dict[str, Any], slots: dict[str, Any], intent: str, lang: str) -> str:
    items = []
    for key, value in defaulted.items():
        label = DEFAULT_LABEL.get(key, {}).get(value, {}).get(lang)
        if label:
            items.append(label)
    if not items:
        return ""
    sep = "、" if lang == "zh" else ", "
    hint = say("defaults_hint_gpu" if "gpu" in defaulted else "defaults_hint", lang)
    return say("defaults_note", lang, items=sep.join(items), hint=hint)


def error_text(err: AdvisorError, slots: dict[str, Any], lang: str) -> str:
    """A calculator error in words: a missing catalog figure is the catalog's gap, not the user's mistake."""
    if isinstance(err, UnknownName):
        return say("unknown_name", lang, message=err.message(lang))
    gap = CATALOG_FIELDS.get(err.field or "")
    if gap and slots.get("gpu"):
        name = _value("gpu", slots["gpu"], lang)
        what = gap[0 if lang == "zh" else 1]
        return say("catalog_gap_figure", lang, gpu=name, what=what)
    message = err.message("en")
    bound = _BOUND.search(message)
    label = LABELS.get((err.field or "").split(".")[0])
    if bound and label:
        word = {
            "greater than or equal to": ("至少为", "at least"),
            "less than or equal to": ("不能超过", "at most"),
            "greater than": ("必须大于", "more than"),
            "less than": ("必须小于", "less than"),
        }[bound.group(1)]
        return say(
            "invalid_bound",
            lang,
            what=label[0 if lang == "zh" else 1],
            cond=word[0 if lang == "zh" else 1],
            limit=bound.group(2).rstrip(".,"),
        )
    if "Input should" in message:
        return say("invalid_generic", lang)
    return say("invalid_input", lang, message=_IDENT.sub("", err.message(lang)).strip())
