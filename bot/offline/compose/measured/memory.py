"""A memory figure the user states for the job, set against the estimate this answer computed for it: "my
estimate about 68GB", "文档说 lora 训练只要显存 21g", "要 22gb 左右是否正常", "requires a GPU with at least 24G".

A figure is the job's (not the memory of a card the user has) when the reader placed it as a claim, or when a
word of need, use or estimate stands just before it ("只要", "需要", "占用", "estimate", "at least"); a figure
equal to the memory of the cards named (3 × 24 GB = "72GB vram") is what the user has, which the fit answers.
Each figure is paired with the model named nearest before it, and compared with the fit this answer made for
that model: the fit's own total on one card, else `model_memory` at the fit's precision and context (the whole
job on one card). The verdict is `tools.memory.verdict.stated_verdict`; the line quotes the user's words, the estimate
and the settings it stands on, and where the user's figure is higher, what usually makes up the difference.
"""

from __future__ import annotations

import re
from typing import Any

from bot.core.toolbox import ToolRun
from bot.offline.say.phrases import say
from bot.offline.say.render import Out, gb, method_label
from bot.offline.understand.request.model import Mention, Request
from bot.offline.understand.request.reader import normalised
from tools.catalog.lookup import get_gpu
from tools.errors import AdvisorError
from tools.memory.verdict import stated_verdict

_FIGURE = re.compile(r"(\d+(?:\.\d+)?)\s*(?:gb|gib|g)(?![a-z])", re.IGNORECASE)
#: words of need, use or estimate just before a figure: the figure is the job's, not a card's
_CUE = re.compile(
    r"(?:只要|只需|需要|要|占用|占了|用了|消耗|估计|大概|估算|estimate[ds]?|consumes?|uses?|takes?|requires?|"
    r"requirement|needs?|at\s*least|@\s*least|~)"
    r"(?:\s*(?:about|around|roughly|approximately|only|just|约|大约|大概|只))?"
    r"\W{0,3}(?:显存|vram|gpu memory|memory|of)?\W{0,3}$",
    re.IGNORECASE,
)
#: words around a figure that make it the memory the user has, the host's RAM, or one card's share of a split
_NOT_THE_JOB = re.compile(
    r"\bhave\b|\bhas\b|我有|手上|手头|ddr\d?|\bram\b|\bcpu\b|host|system memory|主机|内存|"
    r"(?:gpu|卡|card)\s*\d(?=[^\d.g])|(?<![\d.])\d\s*(?:号)?卡|第.张|每张|每卡|per (?:gpu|card)|each (?:gpu|card)",
    re.IGNORECASE,
)
#: "20到40g", "36G-40G": the figure closes a range whose low end stands before it
_RANGE = re.compile(r"(\d+(?:\.\d+)?)\s*(?:g|gb)?\s*(?:到|至|-|~|～|to)\s*$", re.IGNORECASE)
#: "36G-40G": the figure opens a range whose high end follows it
_RANGE_ON = re.compile(r"^\s*(?:到|至|-|~|～|to)\s*(\d+(?:\.\d+)?)\s*(?:gb|gib|g)(?![a-z])", re.IGNORECASE)
#: a precision just after the figure ("36G-40G in 4bit", "fp16 下 14G"): the figure is the weights at it, not the job
_WEIGHTS_AT = re.compile(
    r"^\W{0,3}(?:of\s+)?(?:weights?\s+)?(?:in|at|用|按|的)?\s*(4[- ]?bit|8[- ]?bit|16[- ]?bit|int4|int8|fp16|bf16|fp8)",
    re.IGNORECASE,
)
_BITS = {"4": "int4", "8": "int8", "16": "bf16"}
#: words before a figure that make it what the user saw in use, not an estimate or a requirement
_SEEN = re.compile(
    r"实测|占用|占了|用了|消耗|我这边|显示|consum|\buse[sd]?\b|using|takes|\bsee\b|showing", re.IGNORECASE
)
_FITS = ("fit_inference", "fit_training")
#: at most this many figures are set against the estimate (a pasted log can hold dozens)
_MAX = 3


def _gb(text: str, m: Mention) -> float | None:
    got = _FIGURE.match(text[m.start : m.end + 4])
    return float(got.group(1)) if got else None


def _cards_memory(request: Request) -> set[float]:
    """The memory of the cards named, one card and each count said of them (what the user has)."""
    p = request.parsed
    counts = {1.0, float(p.n_gpus or 1)} | {
        float(m.value) for m in request.mentions if m.role == "gpus_total" and isinstance(m.value, int | float)
    }
    have: set[float] = set()
    for g in p.gpus:
        try:
            mem = get_gpu(g).memory_gb
        except AdvisorError:
            continue
        have |= {mem * n for n in counts}
    return have


def seen(request: Request, m: Mention) -> bool:
    """The figure is what the user saw in use ("实测占用 22gb", "consumes ~14.3 GB"), not an estimate."""
    text = normalised(request.text)
    return bool(_SEEN.search(text[max(0, m.start - 30) : m.start]))


def _job_figure(request: Request, text: str, m: Mention) -> bool:
    """The figure is said of the whole job: not the memory the user has, the host's RAM, or what one card of a
    split was seen using ("0卡的显存占用是2g多", "两张卡占用显存都是72G")."""
    if _NOT_THE_JOB.search(text, max(0, m.start - 16), m.end + 12):  # words cut at the window's edges are not words
        return False
    return not (seen(request, m) and (request.parsed.n_gpus or 1) > 1)


def stated(request: Request) -> list[tuple[Mention, float, float, str | None, str, int]]:
    """The memory figures the user gives for the job (low and high ends: one figure is both), each with the model
    named nearest before it (as the fit calls name it), the user's words and where they end, in the order said; a
    figure said twice is one."""
    text = normalised(request.text)
    have = _cards_memory(request)
    stand_ins = request.parsed.stand_ins
    out: list[tuple[Mention, float, float, str | None, str, int]] = []
    model: str | None = None
    for m in request.mentions:
        if m.role in ("model", "model_size") and isinstance(m.value, str):
            model = stand_ins.get(m.value, m.value)
            continue
        if m.role not in ("claim", "gpu_memory_gb"):
            continue
        value = _gb(text, m)
        if value is None or any(abs(value - h) <= 0.05 * h for h in have):
            continue
        start = max(0, m.start - 24)
        r = _RANGE.search(text[start : m.start])
        low = float(r.group(1)) if r and float(r.group(1)) < value else value
        begins = start + r.start() if low < value else m.start  # the range's words start at its low end
        cued = m.role == "claim" or _CUE.search(text[max(0, begins - 14) : begins])
        if not cued or not _job_figure(request, text, m):
            continue
        end = m.end
        if low == value and (on := _RANGE_ON.match(text[m.end : m.end + 16])) and float(on.group(1)) > value:
            value, end = float(on.group(1)), m.end + on.end()  # "36G-40G": the range as one figure
        if all(abs(value - v) > 1e-9 for _, _, v, _, _, _ in out):
            out.append((m, low, value, model, text[begins:end].strip(), end))
    return out[:_MAX]


def _weights_at(text: str, end: int) -> str | None:
    """The precision a figure ending at `end` is said at when it is the weights' ("in 4bit"): the calculators'
    name for it."""
    got = _WEIGHTS_AT.match(text[end : end + 24])
    if not got:
        return None
    word = got.group(1).lower().replace(" ", "").replace("-", "")
    return _BITS.get(word.removesuffix("bit"), word) if word.endswith("bit") else word


def _weights(call: Any, precision: str, run: ToolRun) -> float | None:
    try:
        return run("model_memory", {"model": call.input["model"], "precision": precision}).get("weights_gb")
    except AdvisorError:
        return None


def _estimate(call: Any, run: ToolRun) -> float | None:
    """The whole job on one card, in GB: the fit's total when it is on one card, else `model_memory`."""
    o = call.output
    if o.get("n_gpus") == 1:
        return o.get("per_gpu_gb")
    args = {"model": call.input["model"], "precision": call.input.get("precision")}
    args = {k: v for k, v in args.items() if v}
    try:
        if call.tool == "fit_inference":
            return run("model_memory", {**args, "context_len": o["context_len"]}).get("serving_gb")
        method = o.get("method")
        return run("model_memory", {**args, "method": method}).get("training_total_gb") if method else None
    except AdvisorError:
        return None


def _basis(call: Any, lang: str) -> str:
    o, i = call.output, call.input
    where = say("stated_on_one" if o.get("n_gpus") == 1 else "stated_in_all", lang)
    precision = i.get("precision") or next(
        (a.get("value") for a in o.get("assumptions", []) if a.get("key") == "precision"), None
    )
    if call.tool == "fit_inference":
        return say("stated_basis_serve", lang, precision=precision or "bf16", ctx=f"{o['context_len']:,}", where=where)
    seq = next((a.get("value") for a in o.get("assumptions", []) if a.get("key") == "seq_len"), None)
    return say(
        "stated_basis_train",
        lang,
        method=method_label(o.get("method", "full"), lang).strip(),
        seq=f"{int(seq):,}" if seq else "—",
        where=where,
    )


def add(request: Request, run: ToolRun, out: Out, at: int, said: str = "") -> None:
    """One line per memory figure the user gave for the job: agrees with the estimate, or above or below it by
    how much, with the settings the estimate stands on, put at `at` (first). `said`: a line already given on a figure (the memory the
    user has in all, "是否只需要 700G 就够"), whose figure is not set against the estimate again."""
    figures = [f for f in stated(request) if f[0].text.strip() not in said]
    text = normalised(request.text)
    if not figures:
        return
    fits = [c for c in run.calls if c.tool in _FITS and c.output.get("per_gpu_gb")]
    shown = 0
    for m, low, value, model, words, end in figures:  # in the order said, from `at` on
        # the job as asked is the first fit of its model (a remedy sized after it, int8 or LoRA, is another job)
        call = next((c for c in fits if model and c.input.get("model") == model), None)
        if call is None and len({c.input.get("model") for c in fits}) == 1:
            call = fits[0]
        bits = _weights_at(text, end)  # "36G-40G in 4bit": the weights at that precision
        estimate = (_weights(call, bits, run) if bits else _estimate(call, run)) if call else None
        if not estimate:
            continue
        # a range agrees when the estimate lies within it; else it is above or below as a whole
        ends = stated_verdict(low, estimate), stated_verdict(value, estimate)
        verdict = "above" if ends[0] == "above" else "below" if ends[1] == "below" else "close"
        kind = "serve" if call.tool == "fit_inference" else "train"
        key = f"stated_{verdict}" + (f"_{kind}" if verdict == "above" and seen(request, m) else "")
        out.blocks.insert(
            at + shown,
            say(
                key,
                out.lang,
                said=words,
                model=call.output.get("model", ""),
                est=gb(estimate),
                basis=say("stated_basis_weights", out.lang, precision=bits) if bits else _basis(call, out.lang),
            ),
        )
        shown += 1
