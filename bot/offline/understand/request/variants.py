"""Alternatives asked in one question, one answer each (methods, both jobs, several models, concurrencies, cards
as each was named), and how a combination's labels are joined."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from bot.offline.understand.cards.silicon import chips
from bot.offline.understand.lexicon import PRECISIONS
from bot.offline.understand.request import setups

if TYPE_CHECKING:
    from bot.offline.understand.question import ParsedQuestion


#: both jobs asked at once ("推理和微调需要多少卡", "fine-tuning and inference"): the two joined by a conjunction
_BOTH_JOBS = re.compile(
    r"(?:推理|部署|inference|serving|serve)\s*(?:和|与|及|跟|以及|、|/|and|&|\+|or|还是)\s*(?:微调|训练|全参|fine-?tun\w*|training|train)|"
    r"(?:微调|训练|fine-?tun\w*|training|train)\s*(?:和|与|及|跟|以及|、|/|and|&|\+|or|还是)\s*(?:推理|部署|inference|serving|serve)",
    re.IGNORECASE,
)
#: the intents one answer per alternative suits (a memory fit, a count, a time)
_PER_VARIANT = ("fit", "min_gpus", "time", "train_memory", "zero_states", "speed", "weights", "recommend")
_DIGITS = re.compile(r"\d+")
#: weight precisions a serving question can set side by side ("4-bit / 8-bit 量化", "fp16 还是 int8"), by bytes per
#: weight: two names of one width ("fp16 / bf16", "nf4 / GPTQ") are one alternative
_WEIGHTS = [(name, re.compile(rx, re.IGNORECASE)) for name, rx in PRECISIONS if name not in ("tf32", "fp32")]
_WIDTH = {"bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "nf4": 0.5, "int4": 0.5}
_SERVING_PER_PRECISION = ("fit", "min_gpus", "speed", "weights")


def _in_a_name(span: str, text: str) -> bool:
    """Every time the span is said it ends a name ("qwen2.5-32b-instruct-gptq-int4", "Qwen2-72B-AWQ"): the model
    as the user runs it, not an alternative they weigh."""
    at = [m.start() for m in re.finditer(re.escape(span), text, re.IGNORECASE)]
    return bool(at) and all(i > 0 and text[i - 1] in "-_" for i in at)


def _precisions(p: ParsedQuestion) -> list[str]:
    """The weight precisions named, one per width, in the order said ("nf4" is said as the 4-bit "int4")."""
    found: dict[float, str] = {}
    for span in p.mentions.get("precision", []):
        if _in_a_name(span, p.text or ""):
            continue
        name = next((n for n, rx in _WEIGHTS if rx.search(span)), None)
        if name:
            found.setdefault(_WIDTH[name], "int4" if name == "nf4" else name)
    return list(found.values())


def variants(intent: str, p: ParsedQuestion) -> list[tuple[str, dict[str, Any]]]:
    """Alternatives in one question, one answer each: methods ("LoRA 行吗？QLoRA 呢？"), both jobs ("推理和微调需要
    多少卡"), several models ("what about 7B and 13B"), and every combination of those asked together ("GPU RAM
    to fine-tune and to run the 70B and the 13B": four answers). A label is a template key ("method_lora") or a
    name; a combination's labels are joined by `VARIANT_SEP`."""
    if intent not in _PER_VARIANT:
        return []
    axes: list[list[tuple[str, dict[str, Any]]]] = []
    found = []
    for span in p.mentions.get("method", []):
        low = span.lower()
        method = (
            "qlora"
            if "qlora" in low or "q-lora" in low
            else "lora"
            if "lora" in low or "低秩" in low
            else "freeze"
            if re.search(r"冻结|freez|frozen", low)
            else "full"
        )
        if method not in found:
            found.append(method)
    if len(found) >= 2 and intent != "speed":
        axes.append([(f"method_{m}", {"method": m}) for m in found])
    elif intent in ("fit", "min_gpus") and _BOTH_JOBS.search(p.text or ""):
        axes.append([("workload_infer", {"workload": "infer"}), ("workload_finetune", {"workload": "finetune"})])
    models = list(dict.fromkeys(p.models))
    # a list of models with nothing else to vary ("footprints of Llama-3.1-8B, -70B, -405B, Llama-3-8B, -70B"): each;
    # cards of one silicon ("A100/A800") are one card to vary
    if 2 <= len(models) <= (4 if axes else 6) and not chips(p.gpus)[1:]:
        axes.append([(m, {"model": m}) for m in models])
    # "8并发、16并发能达到多少": a serving figure at each concurrency named, one answer each
    levels = list(
        dict.fromkeys(int(m.group(0)) for span in p.mentions.get("concurrency", []) if (m := _DIGITS.search(span)))
    )
    if intent in ("speed", "serving_capacity") and 2 <= len(levels) <= 4:
        axes.append([(f"concurrency_{n}", {"batch": n, "concurrency": n}) for n in levels])
    # "如果使用 4-bit / 8-bit 量化": a serving figure at each weight precision named, one answer each
    serving = p.workload not in ("train", "finetune", "pretrain") and p.method is None
    if serving and intent in _SERVING_PER_PRECISION and 2 <= len(named := _precisions(p)) <= 3:
        axes.append([(f"precision_{q}", {"precision": q}) for q in named])
    gpus = list(dict.fromkeys(p.gpus))
    if not axes and intent == "fit" and 2 <= len(own := setups.named(p)) <= 4:  # "8张4090 或者 6张v100": each as said
        axes.append([(g, {"gpu": g, "n_gpus": n}) for g, n in own])
    elif not axes and 2 <= len(gpus) <= 4 and (intent in ("speed", "time") or (intent == "fit" and p.n_gpus is None)):
        axes.append([(g, {"gpu": g}) for g in gpus])  # "A10 的推理速度比 3090 慢一倍": each card's own figure
    out: list[tuple[str, dict[str, Any]]] = [("", {})]
    for axis in axes[:2]:  # at most two axes (methods or jobs, then models): eight answers at the very most
        out = [(f"{a}{VARIANT_SEP}{b}" if a else b, {**x, **y}) for a, x in out for b, y in axis]
    return [] if out == [("", {})] else out


#: what joins the labels of a combination of alternatives ("workload_infer|llama-2-70b")
VARIANT_SEP = "|"
