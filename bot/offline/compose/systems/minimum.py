"""The least memory a model needs to serve, by precision, and the smallest common card that holds it (issue 26):
"部署一个 11B 的模型至少需要多大显存？" asks for the floor, not for one assumed card's fit.

The ladder is the memory classes a buyer chooses between (16, 24, 48, 80, 96 GB); each precision's line is the
weights (model_memory) and the first card of the ladder that holds the model with one sequence (fit_inference).
"How many GPUs for a 30B?" with no card named gets the count per card class instead, in bf16 and int4.
"""

from __future__ import annotations

import re
from typing import Any

from bot.core.toolbox import ToolRun
from bot.offline.say.phrases import say
from bot.offline.say.render import Out, gb
from tools.catalog.lookup import get_gpu, get_model
from tools.errors import AdvisorError

#: the question asks for the floor ("至少", "最低", "minimum") rather than a fit on a card of its own
MINIMUM = re.compile(r"至少|最低|最少|最小|起码|基本(?:需要|要求|配置)|minimum|at least|least", re.IGNORECASE)
#: a card named as the floor in question ("最低配置…也是 A100 40G 以上吗", "an A100 or better?"): the floor is asked
OR_ABOVE = re.compile(
    r"[a-z]{1,3}\d{2,4}[a-z]*(?:\s*\d+\s*g(?:b)?)?\s*(?:及|或)?(?:以上|更高|起步)|or (?:above|higher|better)",
    re.IGNORECASE,
)
#: one card per memory class, smallest first (catalog ids)
LADDER = ("t4", "rtx-4090", "l20", "a100-sxm4-80gb", "h20")
PRECISIONS = ("fp32", "bf16", "int8", "int4")


def ladder(args: dict[str, Any], run: ToolRun, out: Out) -> None:
    """Per precision: the weights and the smallest card of the ladder that serves the model at batch 1."""
    lang = out.lang
    w = run("model_memory", {"model": args["model"]})
    byp = w["weights_by_precision_gb"]
    lines = [say("minimum_header", lang, model=w["model"])]
    for precision in PRECISIONS:
        if precision not in byp:
            continue
        base = {**args, "n_gpus": 1, "batch": 1, "precision": precision}
        held = None
        for gpu in LADDER:
            with run.survey():
                f = run("fit_inference", {**base, "gpu": gpu})
            if f["verdict"] == "fits":
                held = f
                break
        if held is None:
            lines.append(say("minimum_none", lang, precision=precision, weights=gb(byp[precision])))
            continue
        lines.append(
            say(
                "minimum_row",
                lang,
                precision=precision,
                weights=gb(byp[precision]),
                gpu=held["gpu"],
                need=gb(held["per_gpu_gb"]),
                ctx=f"{held['context_len']:,}",
            )
        )
    out.add("\n".join(lines))


#: the question asks for a card count ("how many GPUs", "几张卡", "多少张")
COUNT = re.compile(r"how many (?:gpus?|cards?)|几张|几块|多少(?:张|块|个)?(?:卡|GPU|显卡)|多少张", re.IGNORECASE)
#: the question asks which cards run the model ("在哪些 GPU 芯片可以跑起来", "which GPUs can run it")
WHICH = re.compile(r"哪些\s*(?:gpu|显卡|卡|芯片|硬件|加速卡)|which (?:gpus?|cards?|chips?|hardware)", re.IGNORECASE)
#: the question speaks of Chinese-made accelerators ("国产化适配情况"): their class joins the count per card type
DOMESTIC = re.compile(r"国产|信创|domestic|chinese[- ]made", re.IGNORECASE)
#: the domestic card of the count per card type (catalog id)
DOMESTIC_LADDER = ("ascend-910b",)
#: the weight formats a count per card type is given in: as published, and the usual quantised one
COUNT_PRECISIONS = ("bf16", "int4")


def counts(args: dict[str, Any], run: ToolRun, out: Out, domestic: bool = False, speed: bool = False) -> None:
    """How many of each card class serve the model (one sequence at the fit's context), in bf16 and int4: the
    count per card type a "how many GPUs" question owes when it names no card (with the domestic class when the
    question speaks of domestic cards, and each count's one-stream decode speed when the question asks speed)."""
    lang = out.lang
    rows = [say("counts_header", lang)]
    model = None
    for gpu in (*LADDER, *(DOMESTIC_LADDER if domestic else ())):
        cells = []
        name = None
        for precision in COUNT_PRECISIONS:
            with run.survey():
                f = run("fit_inference", {**args, "gpu": gpu, "n_gpus": 1, "batch": 1, "precision": precision})
            model, name = f["model"], f["gpu"]
            n = 1 if f["verdict"] == "fits" else f["min_gpus"]
            tps = _decode(run, {**args, "gpu": gpu, "n_gpus": n, "batch": 1, "precision": precision}) if n else None
            cells.append(say("counts_cell_speed", lang, n=n, tps=f"{tps:,.0f}") if speed and tps else str(n or "—"))
        rows.append(say("counts_row", lang, gpu=name, bf16=cells[0], int4=cells[1]))
    out.add(say("counts_title", lang, model=model) + "\n\n" + "\n".join(rows))


def _decode(run: ToolRun, args: dict[str, Any]) -> float | None:
    """One stream's decode tokens/s on that count (None where the speed model has no figure for the card)."""
    try:
        with run.survey():
            return run("inference_speed", args)["decode_tokens_per_s"]
    except AdvisorError:
        return None


#: the cards with FP8 tensor cores an FP8-published model is counted on when the card asked lacks FP8 (catalog ids:
#: the one sold in mainland China, then the largest memory)
FP8_CARDS = ("h20", "h200-sxm-141gb")


def on_fp8_cards(args: dict[str, Any], r: dict[str, Any], run: ToolRun, lang: str) -> str | None:
    """ "8×A100 够跑 DeepSeek-R1 吗": a model published in FP8, on a card without FP8, is weighed in BF16 there; the
    line says how many cards that compute in FP8 serve it as published (None when that does not apply)."""
    if args.get("precision") or assumed_precision(r) == "fp8":
        return None
    try:
        model, gpu = get_model(args["model"]), get_gpu(args["gpu"])
    except AdvisorError:
        return None
    if model.native_precision != "fp8" or gpu.fp8_tflops:
        return None
    counts = []
    for card in FP8_CARDS:
        with run.survey():
            f = run("fit_inference", {**args, "gpu": card, "n_gpus": 1, "precision": "fp8"})
        n = 1 if f["fits"] else f["min_gpus"]
        if n:
            counts.append(say("fp8_card_count", lang, n=n, gpu=f["gpu"]))
    sep = "；" if lang == "zh" else "; "
    return say("fp8_cards_infer", lang, gpu=r["gpu"], counts=sep.join(counts)) if counts else None


def fp8_on_card_without(args: dict[str, Any]) -> str | None:
    """FP8 asked on a card without FP8 tensor cores (an A100, a V100): the card's name, else None."""
    if args.get("precision") != "fp8" or not args.get("gpu"):
        return None
    try:
        gpu = get_gpu(args["gpu"])
    except AdvisorError:
        return None
    return None if gpu.fp8_tflops else gpu.name


def assumed_precision(r: dict[str, Any]) -> str | None:
    return next((a["value"] for a in r.get("assumptions", []) if a["key"] == "precision"), None)
