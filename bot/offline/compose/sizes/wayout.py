"""The ways out of a "does not fit" on the asker's own hardware, in one order for serving and training.

A user who says "it does not fit on my cards" wants first what makes it fit ON THOSE CARDS, then what to buy or
rent. Both the serving and the training "what to do" lists rank their lines by this order:

0. use all the cards they have (tensor parallel up to their count; ZeRO-3 sharding over them for training);
1. a quantised checkpoint or format (FP8 where the card has it, int8, int4; 8-bit optimizer states for training);
2. a shorter context or a smaller batch (micro-batch, gradient checkpointing);
3. offload to host RAM (ZeRO-Offload / ZeRO-3 offload for training, CPU/GPU hybrid for serving), with the RAM;
4. LoRA / QLoRA (training);
5. only then more cards or a bigger card.
"""

from __future__ import annotations

from collections.abc import Iterable

from bot.core.toolbox import ToolRun
from bot.offline.compose.systems import minimum
from bot.offline.say.phrases import say
from bot.offline.say.render import gb

ALL_CARDS, QUANTISED, SHORTER, OFFLOAD, ADAPTERS, MORE = range(6)

#: fit_training's suggestion kinds (tools/memory/train_advice.py `change`) -> their place in the order
TRAINING_RANK = {
    "zero3": ALL_CARDS,
    "quant_storage": ALL_CARDS,  # a 4-bit base ZeRO-3 can shard over the cards they have
    "adamw8bit": QUANTISED,
    "micro_batch": SHORTER,
    "grad_checkpointing": SHORTER,
    "offload_optimizer": OFFLOAD,
    "offload_params": OFFLOAD,
    "lora": ADAPTERS,
    "qlora": ADAPTERS,
    "more_gpus": MORE,
    "bigger_gpu": MORE,
}


def rank_training(change: str, method: str = "full", short: frozenset | set = frozenset()) -> float:
    """The place of a fit_training suggestion kind in the order (an unknown kind goes before more hardware); for a
    run that is LoRA already, QLoRA is its quantised base, not a change of method; an offload in `short` (its host
    RAM exceeds the user's) comes after the adapters, before more hardware."""
    if change == "qlora" and method in ("lora", "qlora"):
        return QUANTISED
    if change in short:
        return ADAPTERS + 0.5
    return TRAINING_RANK.get(change, ADAPTERS)


def pick_training(
    suggestions: Iterable[dict], method: str = "full", limit: int = 6, short: frozenset | set = frozenset()
) -> list[dict]:
    """The suggestions to show, in the order: the first of each kind of way out (so that an offload route is not
    crowded out by two adapter methods), then the others of a kind already shown, up to `limit`; both stable. One
    offload only (the first that fits: optimizer states before parameters, the lighter on RAM and speed), and a
    bigger card only where nothing else is."""
    ranked = sorted(suggestions, key=lambda x: rank_training(x["change"], method, short))
    kinds = {x["change"] for x in ranked}
    if "offload_optimizer" in kinds:
        ranked = [x for x in ranked if x["change"] != "offload_params"]
    if kinds - {"bigger_gpu"}:  # any other way out, on their cards or with more of them
        ranked = [x for x in ranked if x["change"] != "bigger_gpu"]
    firsts, rest, seen = [], [], set()
    for x in ranked:
        group = rank_training(x["change"], method, short)
        (rest if group in seen else firsts).append(x)
        seen.add(group)
    chosen = {id(x) for x in (firsts + rest)[:limit]}
    return [x for x in ranked if id(x) in chosen]


def ordered(lines: Iterable[tuple[int, str]]) -> list[str]:
    """(rank, line) pairs -> the lines in the order (stable within a rank)."""
    return [line for _, line in sorted(lines, key=lambda p: p[0])]


#: the next smaller formats to try when the weights do not fit, in order (FP8 first on a card that computes it)
LOWER_PRECISIONS = {
    "fp32": ("bf16", "int8", "int4"),
    "bf16": ("int8", "int4"),
    "fp16": ("int8", "int4"),
    "fp8": ("int4",),
    "int8": ("int4",),
}
#: the GGUF format the CPU+GPU hybrid line is sized in (the common 4-bit one)
HYBRID_FORMAT = "Q4_K_M"
#: a context shorter than this is no remedy for a chat or RAG deployment
SHORTEST_USEFUL_CONTEXT = 1024


def lower_precisions(precision: str, has_fp8: bool) -> tuple[str, ...]:
    """The formats below `precision` to try, FP8 first where the card has FP8 tensor cores."""
    lower = LOWER_PRECISIONS.get(precision, ())
    return ("fp8", *lower) if has_fp8 and precision in ("fp32", "bf16", "fp16") else lower


def serving(
    args: dict, r: dict, run: ToolRun, lang: str, *, precision: str, owned: int | None, has_fp8: bool, host_ram: bool
) -> list[str]:
    """The "what to do" lines of a serving fit `r` that does not fit (fit_inference of `args`), in the order: all
    the cards they have (`owned`, when more than the fit used), a quantised format, a shorter context, the CPU+GPU
    hybrid (when the host RAM was neither given nor asked: given, the hybrid table follows; asked, the setup's host
    RAM is said after the fit, sizes/host.py), then more cards. The quantised fit that holds it, else the fit as
    asked, is called again last."""
    lines: list[tuple[int, str]] = []
    if owned and owned > r["n_gpus"]:
        a = run("fit_inference", {**args, "n_gpus": owned})
        if a["fits"]:
            pp = say("all_cards_pp", lang, pp=a["pp"]) if a.get("pp", 1) > 1 else ""
            lines.append((ALL_CARDS, say("all_cards_fit", lang, n=owned, gpu=a["gpu"], tp=a["tp"], pp=pp,
                                         need=gb(a["per_gpu_gb"]))))  # fmt: skip
    theirs = {**args, "n_gpus": owned} if owned and owned > r["n_gpus"] and not lines else args  # all, if not enough
    quantised, fewest, last = False, None, args
    for lower in lower_precisions(precision, has_fp8):
        q = run("fit_inference", {**theirs, "precision": lower})
        if q["fits"]:
            lines.append((QUANTISED, say("quantized_fit", lang, precision=lower, need=gb(q["per_gpu_gb"]),
                                         n=q["n_gpus"], gpu=q["gpu"])))  # fmt: skip
            quantised, last = True, {**theirs, "precision": lower}
            break
        if q["min_gpus"] and q["min_gpus"] < (r["min_gpus"] or q["min_gpus"] + 1):
            fewest = (q["min_gpus"], lower)  # the smallest format's count: the fewest more cards, quantised
    if r.get("max_context", 0) >= SHORTEST_USEFUL_CONTEXT:  # only the KV of this length overflows
        lines.append((SHORTER, say("shorter_context_fits", lang, ctx=f"{r['max_context']:,}",
                                   asked=f"{r['context_len']:,}")))  # fmt: skip
    shorter = r.get("max_context", 0) >= SHORTEST_USEFUL_CONTEXT
    if not (quantised or shorter or host_ram) and (row := _hybrid_row(args, r, run)):  # none fits the GPUs alone
        lines.append((OFFLOAD, say("offload_hybrid", lang, fmt=row["format"], weights=gb(row["weights_gb"]),
                                   gpu=gb(row["gpu_gb"]), ram=gb(row["ram_gb"]))))  # fmt: skip
    if fewest and not quantised:  # "70B on V100s": 2 cards in int4 before 8 in fp16
        q = run("fit_inference", {**args, "n_gpus": fewest[0], "precision": fewest[1]})
        if q["fits"]:
            w = run("model_memory", {"model": args["model"], "precision": fewest[1]})
            lines.append((MORE, say("quant_fewer", lang, precision=fewest[1], n=q["n_gpus"], gpu=q["gpu"],
                                    need=gb(q["per_gpu_gb"]), weights=gb(w["weights_gb"]))))  # fmt: skip
    if r["min_gpus"]:
        lines.append((MORE, say("min_gpus_infer", lang, n=r["min_gpus"], gpu=r["gpu"])))
    if fp8 := minimum.on_fp8_cards(args, r, run, lang):
        lines.append((MORE, fp8))  # "8×A100 够跑 R1 吗": the count on cards that run it as published
    run("fit_inference", last)  # the last call: the quantised fit where one holds it (as before), else the fit asked
    return ordered(lines)


def _hybrid_row(args: dict, r: dict, run: ToolRun) -> dict | None:
    """The HYBRID_FORMAT row of the CPU+GPU split on these cards, when part of it sits in host RAM. The split does
    not depend on the RAM (only whether it fits does), so the RAM passed is the whole weights at the fit's
    precision: every row's share in RAM is then reported as it is."""
    whole = r["breakdown_gb"]["weights"] * r["n_gpus"]
    h = run("fit_inference", {**args, "host_ram_gb": round(whole + 1)})
    row = next((x for x in h.get("hybrid") or [] if x["format"] == HYBRID_FORMAT), None)
    return row if row and row["ram_gb"] > 0 else None
