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

from bot.core.language import detect_language
from bot.offline.understand import lexicon as lx
from bot.offline.understand.cards.memory import card_memory, named_memory
from bot.offline.understand.cards.unlisted import unlisted
from bot.offline.understand.cards.variant import named_variant
from bot.offline.understand.decide import refine
from bot.offline.understand.dialogue import slots_of
from bot.offline.understand.facility import facility
from bot.offline.understand.intent_model import model
from bot.offline.understand.money import claims, money, sample_length, sample_tokens, tokens
from bot.offline.understand.names import _C, GPU_MARK, MODEL_MARK, names_in
from bot.offline.understand.quantities import counts, durations, gpu_hours, grids, hours, lengths, moe_sizes
from bot.offline.understand.question import INTENTS, Intent, ParsedQuestion, UserFigure
from bot.offline.understand.request.exclude import excluded
from bot.offline.understand.words import words
from bot.offline.understand.work import Work

__all__ = ["INTENTS", "Intent", "ParsedQuestion", "UserFigure", "analyse", "parse"]

# --- the classifier's view, and intent --------------------------------------------------------------

GPU_TOKEN, MODEL_TOKEN = "Ⓖ", "Ⓜ"
#: below this probability the classifier's intent is not trusted: knowledge search or out of scope
CONFIDENCE = 0.4
#: a second part of the question ("…要多久？多少钱？") counts when its own intent is at least this sure
PART_CONFIDENCE = 0.6
_GREETING_ONLY = _C(lx.GREETING_ONLY)
_DOMAIN = _C(lx.DOMAIN_WORDS)
#: a request to explain a term ("what is", "what's", "explain", "是什么")
_DEFINE = _C(r"是什么|什么是|什么意思|\bwhat(?:'s|’s| is| are)\b|\bexplain\b|\bdefine\b|\bmeaning of\b")
_PARTS = re.compile(r"[?？。!！;；]+|(?<=[吗呢])[，,]")
_RUNS = re.compile(f"({GPU_MARK}|{MODEL_MARK})\\1*")

#: slot -> flag the classifier sees
_FLAGS = (
    ("gpus", "gpu"),
    ("models", "model"),
    ("n_gpus", "n_gpus"),
    ("tokens", "tokens"),
    ("budget_amount", "budget"),
    ("price_per_hour", "price_hour"),
    ("purchase_price_cny", "price_card"),
    ("concurrency", "concurrency"),
    ("context_len", "context"),
    ("seq_len", "seq"),
    ("months", "months"),
    ("hours_per_day", "hours_per_day"),
    ("gpu_hours", "gpu_hours"),
    ("hours", "hours"),
    ("precision", "precision"),
    ("method", "method"),
    ("zero_stage", "zero"),
    ("deadline_days", "deadline"),
    ("user_figures", "claim"),
)


def _abstract(w: Work) -> str:
    """The text as the classifier sees it: GPU names -> Ⓖ, model names -> Ⓜ (positions kept)."""
    return "".join(
        GPU_TOKEN if c == GPU_MARK else MODEL_TOKEN if c == MODEL_MARK else w.src[i] for i, c in enumerate(w.t)
    )


def _flags(w: Work) -> list[str]:
    s = w.slots
    # the people who use a model are traffic to the classifier, as a concurrency is (quantities.py)
    flags = [f for slot, f in _FLAGS if s.get(slot) not in (None, [], False) or (slot == "concurrency" and w.people)]
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
    named_variant(w)
    unlisted(w)
    excluded(w)
    moe_sizes(w)
    grids(w)
    named_memory(w)
    card_memory(w)
    sample_tokens(w)
    gpu_hours(w)
    facility(w)
    money(w)
    claims(w)
    durations(w)
    hours(w)
    lengths(w)
    sample_length(w)
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
    clf = model(analyse)
    abstract, flags = _abstract(w), _flags(w)
    ranked = clf.predict(_collapse(abstract), flags)
    intent, confidence = ranked[0]
    flags = [f for f in flags if not f.startswith(("workload", "china_only", "domestic_only"))]
    if confidence < CONFIDENCE:
        # unsure: slots the parser found (a model, a GPU, a method…) back the model's best guess; a domain word
        # alone makes it a knowledge question; nothing of the domain, or a best guess of "out of scope", is that
        if intent in ("out_of_scope", "greeting"):
            # "What's tensor parallelism?": a term of the domain asked to be explained is a knowledge question
            domain_term = _DEFINE.search(s) and _DOMAIN.search(s) and intent != "greeting"
            return ("knowledge", ["knowledge"], confidence) if domain_term else ("out_of_scope", [], confidence)
        if flags:
            return intent, [intent], confidence
        return ("knowledge" if _DOMAIN.search(s) else "out_of_scope"), [], confidence
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
    w.slots["spans"] = w.spans
    p = ParsedQuestion(**w.slots)
    settled = refine(p.intent, slots_of(p), p)
    if settled != p.intent:
        p.intents = [settled, *(i for i in p.intents if i not in (settled, p.intent))]
        p.intent = settled
    return p
