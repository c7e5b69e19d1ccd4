"""The "Assumptions" list of an offline answer, in the reader's words (`templates/assumptions.yaml`).

A tool reports each default it took as {key, value, unit, note, default}; the key is a field name and
the note is English. A reader sees a label for the key, the value in their language and, in a Chinese
answer, the note rewritten by pattern with its figures carried over verbatim, or no note at all. The
whole note always stays in the trace.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

from bot.offline.say.phrases import localize_name, say
from tools.yaml_data import load_yaml

PHRASEBOOK = Path(__file__).parent / "templates" / "assumptions.yaml"
SHOWN = (
    "model_architecture",
    "seq_len",
    "micro_batch",
    "grad_checkpointing",
    "precision",
    "usable_fraction",
    "zero_stage",
    "context_len",
    "kv_precision",
    "mfu",
    "nodes_fabric",
    "pricing",
    "hours_per_day",
    "objective",
    "quant_storage",
)
#: keys shown even when the user gave the value: their note carries what the calculator assumed of it (the models
#: a DPO run keeps beside the policy, what ZeRO-3 does with a 4-bit base's storage)
STATED = frozenset({"objective", "quant_storage"})


@functools.cache
def _book() -> dict[str, Any]:
    book = load_yaml(PHRASEBOOK.read_text(encoding="utf-8"))
    for lang in ("zh", "en"):
        book[f"notes_{lang}"] = [(re.compile(p), t) for p, t in book[f"notes_{lang}"]]
    return book


def label(key: str, lang: str) -> str:
    """The reader's name for an assumption key; a key without one is shown with its words spaced."""
    entry = _book()["labels"].get(key)
    return entry[lang] if entry else key.replace("_", " ")


def value_text(key: str, value: Any, lang: str) -> str:
    words = _book()["values"].get(key, {})
    if isinstance(value, (bool, str)) and value in words:
        return str(words[value][lang])
    if isinstance(value, bool):
        return ("是" if value else "否") if lang == "zh" else ("yes" if value else "no")
    if isinstance(value, float) and not value.is_integer():
        return f"{value:g}"
    return localize_name(str(value), lang)


def unit_text(unit: str, lang: str) -> str:
    entry = _book()["units"].get(unit)
    return entry[lang] if entry else unit


def note_text(note: str, lang: str) -> str:
    """The note a reader sees: rewritten by the first matching pattern; else English cut to its first sentence,
    and nothing in a Chinese answer."""
    for pattern, template in _book()[f"notes_{lang}"]:
        m = pattern.match(note)
        if m:
            return template.format(**{k: v for k, v in m.groupdict().items() if v is not None})
    return "" if lang == "zh" else english_units(short_note(note))


def english_units(text: str) -> str:
    """An English note with the tools' Chinese money units ("35–50 元/卡时") in the units' English words: the
    figures stay as they are, only the unit after them is said in the reader's language."""
    units = sorted((u for u in _book()["units"] if "元" in u), key=len, reverse=True)
    pattern = "|".join(re.escape(u) for u in units)
    return re.sub(rf"\s?(?:{pattern})", lambda m: " " + _book()["units"][m.group(0).strip()]["en"], text)


def short_note(note: str, limit: int = 140) -> str:
    """A note without links, cut to its first sentence."""
    note = re.sub(r"\s*[(<]?https?://\S+[)>]?", "", note).strip()
    end = re.search(r"(?<=[.。])\s", note)
    if end and end.start() < limit:
        return note[: end.start()].rstrip()
    return note if len(note) <= limit else note[:limit].rstrip() + "…"


def line(a: dict[str, Any], lang: str) -> str:
    value = value_text(a["key"], a["value"], lang)
    unit = unit_text(a.get("unit") or "", lang)
    note = note_text(a.get("note") or "", lang)
    shown = f"{value} {unit}" if unit else value
    if lang == "zh":
        return f"- {label(a['key'], lang)}：{shown}" + (f"（{note}）" if note else "")
    return f"- {label(a['key'], lang)}: {shown}" + (f" ({note})" if note else "")


def assumptions_block(items: list[dict[str, Any]], lang: str, keys: tuple[str, ...] = SHOWN) -> str:
    """The defaults a tool took among `keys`, one line each under the answer's "Assumptions" header."""
    lines = [line(a, lang) for a in items if a["key"] in keys and (a.get("default", True) or a["key"] in STATED)]
    return (say("assumptions_header", lang) + "\n" + "\n".join(lines)) if lines else ""
