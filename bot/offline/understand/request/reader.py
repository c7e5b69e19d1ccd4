"""`read(text) -> Request`: the one reader. The slot stages (`understand/parse.py`) find what the calculators take
and the intent; this turns their spans into mentions with roles, adds what they left (`figures.py`), and
collects the asks (`asks.py`). The planner and the coverage gate read the request, never the text again.

    >>> r = read("CPU 64 核、内存 512G、4 张 4090，能跑 Qwen2.5-32B 吗？速度多少")
    >>> [(m.text, m.role) for m in r.mentions]  # doctest: +NORMALIZE_WHITESPACE
    [('64 核', 'cpu_cores'), ('512G', 'ram_gb'), ('4 张 4090', 'gpus_total'), ('4090', 'gpu'),
     ('Qwen2.5-32B', 'model')]
    >>> r.asks
    ['fits', 'speed']
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from bot.offline.understand.lexicon import CONFIRM
from bot.offline.understand.names import _names, _norm
from bot.offline.understand.parse import parse
from bot.offline.understand.request.addresses import addresses
from bot.offline.understand.request.asks import asks, cued
from bot.offline.understand.request.figures import frameworks, line_at, loose_figures, role_of
from bot.offline.understand.request.model import Mention, Request

#: the parser's slot -> the mention's role (slots not here are not figures the user gave: flags, language…)
SLOT_ROLE = {
    "models": "model", "unknown_models": "model", "gpus": "gpu", "unknown_gpus": "gpu", "n_gpus": "gpus_total",
    "n_nodes": "nodes", "method": "method", "objective": "objective", "precision": "precision", "kv_precision": "kv_precision", "zero_stage": "zero_stage",
    "offload": "offload", "grad_checkpointing": "checkpointing", "seq_len": "seq_len", "context_len": "context_len",
    "micro_batch": "micro_batch", "batch": "batch", "concurrency": "concurrency", "tokens": "tokens",
    "budget_amount": "budget", "price_per_hour": "price_user", "purchase_price_cny": "price_user",
    "per_card": "price_user", "hours": "wall_clock", "gpu_hours": "gpu_hours", "hours_per_day": "hours_per_day",
    "months": "months", "deadline_days": "deadline", "deadline_hours": "deadline",
    "electricity_cny_per_kwh": "electricity_tariff", "pue": "pue", "servers_per_rack": "servers_per_rack",
    "rack_limit_kw": "power_kw", "user_figures": "claim", "params_b": "model_size", "input_len": "prompt_len",
    "output_len": "output_len", "epochs": "epochs", "samples": "samples", "gpu_memory": "gpu_memory_gb",
    "excluded_gpus": "excluded", "excluded_vendors": "excluded",
}  # fmt: skip
#: slots whose mention's value is the span itself (a name); every other slot's is the parser's field of that name
_NAME_SLOTS = frozenset({"models", "unknown_models", "gpus", "unknown_gpus", "excluded_gpus", "excluded_vendors"})


_CONFIRM = re.compile(CONFIRM, re.IGNORECASE)
#: a figure stated as a fact about something ("the H100 has 200 GB", "H100 是 25 万"): a claim to check
_STATED = re.compile(
    r"(?:\bhas|\bhave|\bis|\bare|\bcosts?|是|有|只有|只要|达到|高达|能到)\s*(?:about|around|约|大约)?\s*$",
    re.IGNORECASE,
)
#: a line that lists the asker's setup: a short label and a colon open it ("GPU：RTX 5090 32GB", "内存：64GB DDR5",
#: "- RAM: 512GB"); its figures are what they have, not figures to confirm
_SPEC_LINE = re.compile(r"\s*[-*•]?\s*[\w\u4e00-\u9fff ]{1,16}\s*[:：]")
_BARE_SIZE = re.compile(r"\d+(?:\.\d+)?(?:\s*[bm])?", re.IGNORECASE)  # "13" of "7/13/70b": a size listed
_CONNECTOR = re.compile(
    r"^(?:or|and|vs\.?|versus|for|on|with|of|和|与|跟|还是|或者|或)\s+|^(?:和|与|跟|还是|或者|或|用|跑)\s*",
    re.IGNORECASE,
)


def canonical(name: str) -> str | None:
    """The catalog id of a GPU or model name as people write it ("A100 80GB" -> "a100-sxm4-80gb"), else None."""
    known = _names().lookup(_norm(name))
    return known[1] if known else None


def normalised(text: str) -> str:
    """The text the parser's positions refer to (NFKC, ideographic space as a space)."""
    return unicodedata.normalize("NFKC", text or "").replace("\u3000", " ")


@lru_cache(maxsize=256)
def read(text: str) -> Request:
    """The request of one message (cached: the planner and the coverage gate read the same message; treat the
    result as read-only)."""
    p = parse(text)
    norm = normalised(text)
    mentions: list[Mention] = []
    taken: list[tuple[int, int]] = []
    for slot, start, end in p.spans:
        role = SLOT_ROLE.get(slot, slot)
        span = norm[start:end].strip()
        if lead := _CONNECTOR.match(span):  # "or A100 80GB", "和 H20": the name, not the word before it
            start, span = start + lead.end(), span[lead.end() :]
        if not span:
            continue
        value = span if slot in _NAME_SLOTS else getattr(p, slot, None)
        if isinstance(value, list):
            value = span
        if value is None and (number := re.search(r"\d+(?:\.\d+)?", span)):
            value = float(number.group(0))
        if role == "claim" and not (
            (_CONFIRM.search(norm) and not _SPEC_LINE.match(line_at(norm, start)))
            or p.injection
            or _STATED.search(norm[max(0, start - 14) : start])
        ):
            # a figure the parser kept to check ("24G" in a question ending in 吗) is a claim only when the user
            # asks to confirm it, and never on a line listing their setup ("我想确认…能部署的模型上限" above
            # "内存：64GB DDR5"); otherwise it is what its words make it: the host's RAM, a card's memory…
            number = re.search(r"\d+(?:\.\d+)?", span)
            if number:
                role = role_of(norm, start + number.start(), norm[start + number.end() : end + 12])[0]
                value = float(number.group(0))
        if role == "model" and _BARE_SIZE.fullmatch(span):
            role = "model_size"  # "8B", "405B": a size with no name (sized on the generic shape), not a model's name
        if slot == "model_again" and p.models:  # "满血版 671B" of the one model named (same_model.named_size)
            role, value = "model", p.models[0]
        elif role in ("gpu", "model", "excluded") and (known := canonical(span)):
            value = known  # the catalog id, which is what a tool call takes
        mentions.append(
            Mention(
                text=span,
                role=role,
                value=value if isinstance(value, float | int | str) else None,
                start=start,
                end=end,
            )
        )
        taken.append((start, end))
    mentions += frameworks(norm, taken)
    mentions += loose_figures(norm, taken + addresses(norm))  # an address's digits are not figures
    mentions.sort(key=lambda m: (m.start, -m.end))
    return Request(
        text=text, language=p.language, mentions=_dedupe(mentions), asks=asks(norm, p), cued=cued(norm, p), parsed=p
    )


def _dedupe(mentions: list[Mention]) -> list[Mention]:
    seen, out = set(), []
    for m in mentions:
        key = (m.start, m.end, m.role)
        if key not in seen:
            seen.add(key)
            out.append(m)
    return out
