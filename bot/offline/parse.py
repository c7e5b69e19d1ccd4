"""Offline question parser: a Chinese or English question -> intent and slots (`ParsedQuestion`).

    >>> q = parse("8卡H800全参微调Llama-2-7B，1B tokens 要多久？多少钱？")
    >>> q.intent, q.intents, q.n_gpus, q.method, q.tokens
    ('time', ['time', 'cost'], 8, 'full', 1000000000.0)

Order of work on the NFKC-normalised, lower-cased text: token amounts, then GPU and model names
(matched against the catalogs' names and aliases, longest span first), then money, then the other
slots. Each recognised span is masked with a marker of the same length, so a later pattern never
reads a digit that belongs to a name ("A100 80G") or to an amount ("30万"), and positions stay
those of the user's text for `mentions`. GPU names become the marker `\\ue000`, which lets the count
patterns read "8×H800" and "H800 x 8" as counts of a GPU.

The parser reports what the user typed; judging it (0 GPUs, a negative size) is the planner's and
the calculators' job, helped by `invalid`, which lists the spans that cannot be right.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from bot.language import detect_language
from bot.offline import lexicon as lx
from bot.offline.money import claims, money, tokens
from bot.offline.names import _C, GPU_MARK, MODEL_MARK, names_in
from bot.offline.quantities import counts, durations, gpu_hours, hours, lengths
from bot.offline.words import words
from bot.offline.work import Work

Intent = Literal[
    "fit", "min_gpus", "time", "cost", "price", "rent_vs_buy", "build_budget", "compare", "domestic", "recommend",
    "recommend_serving", "speed", "serving_capacity", "specs", "power", "precision_speedup", "weights", "kv_cache",
    "zero_states", "train_memory", "knowledge", "out_of_scope", "greeting",
]  # fmt: skip
INTENTS: tuple[str, ...] = Intent.__args__


class UserFigure(BaseModel):
    """A number the user states as a fact ("H100 是 25 万一张对吧"): to check, never to repeat as fact."""

    model_config = ConfigDict(extra="forbid")
    text: str
    value: float
    unit: str  # "CNY", "USD", "GB", "TFLOPS", "GB/s", "W"
    kind: Literal["price", "price_per_month", "memory", "compute", "bandwidth", "power"]


class ParsedQuestion(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str
    language: Literal["zh", "en"]
    #: intents[0], or, when no cue was found (intents == []), a guess from the slots
    intent: Intent
    #: every intent whose cues scored, strongest first
    intents: list[Intent] = Field(default_factory=list)
    #: the intent model's probability for `intent` (1.0 for a rule: a bare greeting)
    confidence: float = 0.0
    models: list[str] = Field(default_factory=list)
    gpus: list[str] = Field(default_factory=list)
    unknown_gpus: list[str] = Field(default_factory=list)
    unknown_models: list[str] = Field(default_factory=list)
    n_gpus: int | None = None  # total across nodes
    n_nodes: int | None = None
    method: Literal["full", "lora", "qlora", "freeze"] | None = None
    workload: Literal["pretrain", "finetune", "infer", "train"] | None = None
    precision: Literal["fp32", "tf32", "bf16", "fp16", "fp8", "int8", "int4", "nf4"] | None = None
    mixed_precision: bool = False
    zero_stage: int | None = None
    offload: bool | Literal["optimizer", "param"] | None = None
    seq_len: int | None = None
    context_len: int | None = None
    micro_batch: int | None = None
    batch: int | None = None
    concurrency: int | None = None
    tokens: float | None = None
    budget_cny: float | None = None  # set only when the budget is in CNY (no exchange rate here)
    budget_amount: float | None = None
    budget_currency: Literal["CNY", "USD"] | None = None
    price_cny_per_hour: float | None = None  # per GPU-hour, CNY only
    price_per_hour: float | None = None
    price_currency: Literal["CNY", "USD"] | None = None
    purchase_price_cny: float | None = None  # per card, when the user gives one as an input
    hours: float | None = None  # wall-clock run time the user gives ("跑 1000 小时")
    gpu_hours: float | None = None  # "5000 卡时", "5000 GPU-hours"
    hours_per_day: float | None = None
    months: float | None = None
    deadline_hours: float | None = None
    deadline_days: float | None = None
    china_only: bool = False  # only what can be bought in China (国内能买到, 国产)
    domestic_only: bool = False  # Chinese-made accelerators only (国产, 信创)
    grad_checkpointing: bool | None = None
    currency: Literal["CNY", "USD"] | None = None  # the currency the user asks the answer in
    follow_up: bool = False
    injection: bool = False
    user_figures: list[UserFigure] = Field(default_factory=list)
    #: slot -> [low, high] where the user gave a range ("8到16卡"); the slot holds the high end
    ranges: dict[str, list[float]] = Field(default_factory=dict)
    #: slots whose value the user marked as approximate (约, 左右, about)
    approximate: list[str] = Field(default_factory=list)
    #: spans that cannot be right ("0卡", "-5B")
    invalid: list[str] = Field(default_factory=list)
    #: slot -> raw spans matched, for debugging
    mentions: dict[str, list[str]] = Field(default_factory=dict)


# --- language and intent ------------------------------------------------------------------------

# --- the classifier's view, and intent --------------------------------------------------------------

GPU_TOKEN, MODEL_TOKEN = "Ⓖ", "Ⓜ"
#: below this probability the classifier's intent is not trusted: knowledge search or out of scope
CONFIDENCE = 0.4
#: a second part of the question ("…要多久？多少钱？") counts when its own intent is at least this sure
PART_CONFIDENCE = 0.6
_GREETING_ONLY = _C(lx.GREETING_ONLY)
_DOMAIN = _C(lx.DOMAIN_WORDS)
_PARTS = re.compile(r"[?？。!！;；]+|(?<=[吗呢])[，,]")
_RUNS = re.compile(f"({GPU_MARK}|{MODEL_MARK})\\1*")

#: slot -> flag the classifier sees
_FLAGS = (
    ("gpus", "gpu"), ("models", "model"), ("n_gpus", "n_gpus"), ("tokens", "tokens"), ("budget_amount", "budget"),
    ("price_per_hour", "price_hour"), ("purchase_price_cny", "price_card"), ("concurrency", "concurrency"),
    ("context_len", "context"), ("seq_len", "seq"), ("months", "months"), ("hours_per_day", "hours_per_day"),
    ("gpu_hours", "gpu_hours"), ("hours", "hours"), ("precision", "precision"), ("method", "method"),
    ("zero_stage", "zero"), ("deadline_days", "deadline"), ("user_figures", "claim"),
)


def _abstract(w: Work) -> str:
    """The text as the classifier sees it: GPU names -> Ⓖ, model names -> Ⓜ (positions kept)."""
    return "".join(GPU_TOKEN if c == GPU_MARK else MODEL_TOKEN if c == MODEL_MARK else w.src[i] for i, c in enumerate(w.t))


def _flags(w: Work) -> list[str]:
    s = w.slots
    flags = [flag for slot, flag in _FLAGS if s.get(slot) not in (None, [], False)]
    if len(s.get("gpus", [])) + len(s.get("unknown_gpus", [])) >= 2:
        flags.append("gpus2")
    if s.get("unknown_models") and not s.get("models"):
        flags.append("model")
    if s.get("unknown_gpus") and not s.get("gpus"):
        flags.append("gpu")
    for key in ("workload", "domestic_only", "china_only"):
        if s.get(key):
            flags.append(f"{key}:{s[key]}")
    return flags


def _collapse(text: str) -> str:
    return _RUNS.sub(lambda m: m.group(1), text).strip()


def _slots(text: str) -> Work:
    w = Work(text or "")
    tokens(w)
    names_in(w)
    gpu_hours(w)
    money(w)
    claims(w)
    durations(w)
    hours(w)
    lengths(w)
    counts(w)
    words(w)
    return w


def analyse(text: str) -> tuple[str, list[str]]:
    """What the intent model reads: the abstracted text and the slot flags."""
    w = _slots(text)
    return _collapse(_abstract(w)), _flags(w)


def _intents(w: Work) -> tuple[str, list[str], float]:
    s = w.src.strip()
    if _GREETING_ONLY.match(s):
        return "greeting", ["greeting"], 1.0
    from bot.offline.intent_model import model

    clf = model()
    abstract, flags = _abstract(w), _flags(w)
    ranked = clf.predict(_collapse(abstract), flags)
    intent, confidence = ranked[0]
    if confidence < CONFIDENCE:
        named = w.slots["gpus"] or w.slots["models"] or w.slots["unknown_gpus"] or w.slots["unknown_models"]
        domain = len(_DOMAIN.findall(s))
        if intent in ("out_of_scope", "greeting") or not (named or domain >= 2):
            return "out_of_scope", [], confidence
        return ("knowledge" if intent != "knowledge" else intent), [], confidence
    if intent in ("out_of_scope", "greeting"):
        return intent, [], confidence
    found = [intent]
    bounds = [0, *(m.end() for m in _PARTS.finditer(abstract)), len(abstract)]
    parts = [abstract[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
    if sum(1 for part in parts if len(part.strip(" ?？。!！;；，,")) >= 2) >= 2:
        for part in parts:
            text = _collapse(part.strip(" ?？。!！;；，,"))
            if len(text) < 2:
                continue
            part_intent, p = clf.predict(text, flags)[0]
            if p >= PART_CONFIDENCE and part_intent not in found and part_intent not in ("out_of_scope", "greeting"):
                found.append(part_intent)
    return intent, found, confidence


# --- entry point ------------------------------------------------------------------------------


def parse(text: str) -> ParsedQuestion:
    """Intent and slots of one question; never raises on any string."""
    w = _slots(text)
    w.slots["language"] = detect_language(text or "")
    w.slots["intent"], w.slots["intents"], w.slots["confidence"] = _intents(w)
    figures = sorted(w.slots["user_figures"], key=lambda f: f.pop("at"))
    w.slots["user_figures"] = [UserFigure(**f) for f in figures]
    p = ParsedQuestion(**w.slots)
    from bot.offline.dialogue import slots_of  # the planner's view of the slots (imports this module)
    from bot.offline.refine import refine

    settled = refine(p.intent, slots_of(p), p)
    if settled != p.intent:
        p.intents = [settled, *(i for i in p.intents if i not in (settled, p.intent))]
        p.intent = settled
    return p
