"""The parts of one offline answer, labelled: a variant's label (a method, a job, a concurrency, a catalog
name)."""

from __future__ import annotations

from bot.offline.say.phrases import say
from tools.catalog.lookup import get_gpu, get_model
from tools.errors import AdvisorError


def part_label(part: str, lang: str) -> str:
    """A variant's label: a method or a job in words, a concurrency with its figure, else a catalog name."""
    if part.startswith(("method_", "workload_")):
        return say(part, lang).strip()
    if part.startswith("precision_"):  # a weight precision named ("int4"): said as the calculators name it
        return part.removeprefix("precision_")
    if part.startswith("concurrency_"):
        return say("concurrency_level", lang, n=part.removeprefix("concurrency_"))
    return catalog_name(part)


def catalog_name(name: str) -> str:
    """A variant's label: the model's or the card's catalog name. A card whose name holds a size ("ascend-910b",
    "910B") is the card, never a generic model of that size ("通用稠密 910B")."""
    found = []
    for get in (get_model, get_gpu):
        try:
            found.append(get(name))
        except AdvisorError:
            continue
    if not found:
        return name
    return next((f.name for f in found if not getattr(f, "generic", False)), found[0].name)
