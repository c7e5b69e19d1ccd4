"""What the user asks, decided once: the final intent and slots of a question, in its conversation.

The intent is read in layers, each for what the one before cannot see:

1. the classifier (`intent_model`, through `parse()`), on the words;
2. `refine()`: slot facts that settle an intent the classifier cannot see well (two cards and a replacement
   word, a price stated as fact, a budget without a card…). `parse()` applies it to the question's own
   slots, so that the dialogue rules below compare the question's real intent with the previous one;
3. `decide()`: the conversation. A reply to the planner's question for a missing slot, an edit of the
   previous frame ("换成 H800 呢") or a new question carrying the conversation's model and GPU; then the
   injection rule, and `refine()` once more on the frame the dialogue made (an edit can bring the budget
   or the card that settles it: "预算 50 万呢" after a fit question).

The planner (`bot/offline/rules.py`) calls `decide()` once per question and only plans and composes from
what it returns. `lengths()`, `assumed_workload()` and `parts()` (with `request/variants.py`) are the rest of what the
question means: which length it gave, whether a bare "够吗" is about serving, which methods it compares and
which second questions ("…要多久？多少钱？") still need their own answer.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bot.offline.understand import dialogue
from bot.offline.understand.frames import ACCEPT_DEFAULT, ASK_DEFAULTS, SERVING, TRAINING, TRAINING_SIGNS
from bot.offline.understand.lexicon import BUY_WORDS, CUE_GROUPS, RENT_WORDS
from bot.offline.understand.request.asks import ASK_INTENT, CUES, TRAINING_RUN, cued, unworded_lead
from tools.catalog.stand_in import read_name, stand_in

if TYPE_CHECKING:
    from bot.offline.understand.question import ParsedQuestion

_REPLACE = re.compile(r"替代|代替|取代|平替|替换|replace|substitute|instead of", re.I)
BUY = re.compile(BUY_WORDS, re.I)
RENT = re.compile(RENT_WORDS, re.I)
#: renting weighed against buying or anything else ("自购还是租", "rent or buy", "TCO 对比")
_WEIGHED = re.compile(CUES["rent_vs_buy"] + r"|还是|或者|\bor\b|\bvs\.?\b|对比|比较|tco|compar|购|own", re.I)
#: words that weigh buying against something (renting, another option, its worth), not buying alone
_BUY_WEIGHED = re.compile(
    CUES["rent_vs_buy"]
    + r"|还是|或者|\bor\b|\bvs\.?\b|对比|比较|tco|compar|划算|值得|回本|收回成本|worth|cheaper|break-?even|pay ?back",
    re.I,
)
_CLAIM = re.compile(r"只要|只需|才要?|就要|costs? only|is only|price is|价格是|卖|告诉我", re.I)


def refine(intent: str, slots: dict[str, Any], p: ParsedQuestion) -> str:
    """Slot facts the classifier cannot see well: two cards and a replacement word, a price stated as fact.
    Each rule says the question it exists for."""
    if intent in ("train_memory", "zero_states") and slots.get("workload") == "infer" and not slots.get("method"):
        return "fit"  # "用 vllm 部署 qwen3-30b-a3b 需要多少显存": serving memory, not training states
    budget = slots.get("budget_cny") or slots.get("budget_usd") or slots.get("budget_eur")
    if intent in ("fit", "min_gpus") and budget and not p.gpus and slots.get("model"):
        # "客户要一个能跑 70B 推理的方案，预算 50 万": a budget and no card is a request for a shortlist
        return "recommend_serving" if slots.get("workload") == "infer" else "recommend"
    if intent in ("fit", "min_gpus") and slots.get("domestic_only") and not p.gpus and slots.get("model"):
        return "domestic"  # "国产卡能跑 deepseek 满血版吗": the Chinese-made cards, each with the model's fit
    if intent == "compare" and slots.get("domestic_only"):
        return "domestic"
    if (
        intent in ("fit", "min_gpus", "specs", "knowledge")
        and len(p.gpus) + len(p.unknown_gpus) >= 2
        and _REPLACE.search(p.text)
    ):
        return "compare"  # "910B 能替代 A100 做 7B 的 LoRA 吗": the comparison runs the fit on each card
    if intent in ("fit", "min_gpus") and len(p.gpus) >= 2 and not slots.get("model") and not p.unknown_models:
        # "the best GPUs for deep learning are RTX 3080 and RTX 3090 … which one we should go for": named cards and
        # no model to size: the cards side by side (what a count or a fit would need a model for)
        return "compare"
    stated = any(f.unit == "CNY" and f.kind == "price" for f in p.user_figures)
    # a card's price stated as fact is checked, unless the figure is a budget to spend ("买" words) or a rent
    hardware = intent in ("build_budget", "recommend") and BUY.search(p.text)
    if (
        p.gpus
        and not p.models
        and not hardware
        and intent not in ("rent_vs_buy", "cost")
        and (stated or ((p.budget_cny or p.purchase_price_cny) and _CLAIM.search(p.text)))
    ):
        return "price"  # "H100 只要 1000 元", "确认一下 H100 是不是 1000 元一张": checked against the catalog
    if (
        intent == "cost"
        and p.tokens
        and not slots.get("model")
        and not (slots.get("hours") or slots.get("months") or slots.get("gpu_hours"))
    ):
        return "time"  # "8 卡 H800 训 100B tokens 要花多少": a token count is billed through a training run's time
    if (
        intent == "cost"
        and TRAINING_RUN.search(p.text)
        and not (
            p.hours or p.months or p.gpu_hours or slots.get("hours") or slots.get("months") or slots.get("gpu_hours")
        )
        and not BUY.search(p.text)
    ):
        return "time"  # "training cost of deepseek-vl-1.3B", "how long to train? … the cost of 8 A100s": a run's time
    if (
        intent == "cost"
        and BUY.search(p.text)
        and not RENT.search(p.text)
        and not (p.tokens or p.gpu_hours or p.hours or p.months)
    ):
        return "price"  # "那买一张呢？" after a rental's cost: the purchase price, not the hours carried over
    if (
        intent == "cost"
        and (slots.get("hours") or 0) <= 1
        and not (p.tokens or p.gpu_hours or p.n_gpus or p.months or slots.get("model"))
        and RENT.search(p.text)
    ):
        return "price"  # "租 H100 一小时大概多少钱": the price of one GPU-hour is the catalog's rental range
    if intent == "build_budget" and slots.get("model") and not BUY.search(p.text):
        return "recommend"  # "预算 30 万，一周内微调完 14B，上什么卡": a budget for the job, not for hardware
    if (
        intent in ("recommend", "build_budget")
        and (slots.get("workload") == "infer" or p.concurrency)
        and slots.get("model")
    ):
        return "recommend_serving"  # "预算 50 万，部署 Qwen2.5-72B 给 100 人用，上什么卡": a serving shortlist
    if intent == "recommend" and budget and slots.get("workload") != "infer" and BUY.search(p.text):
        return "build_budget"  # a budget to buy cards with, with or without the model named
    if (
        intent == "speed"
        and p.concurrency
        and slots.get("model")
        and re.search(r"最多|最大|max|how many|多少路|多少人|几路", p.text, re.I)
    ):
        return "serving_capacity"  # "8B 在 L40S 上最多撑多少并发": the capacity, not one user's speed
    if intent in ("speed", "fit") and slots.get("model") and not p.gpus and WHICH_CARDS.search(p.text):
        return (
            "recommend_serving"  # "72B 在哪些 GPU 上跑得起来、速度怎么样": the cards that run it, each with its speed
        )
    if (
        intent == "speed"
        and slots.get("workload") != "infer"
        and TRAINING_RUN.search(p.text)
        and not _SERVING.search(p.text)
    ):
        return (
            "time"  # "Training Llama3 70B on 8 x A100 only achieves 20 TFLOPS": a training run's speed (MFU, tokens/s)
        )
    if (
        intent == "fit"
        and p.hours
        and NORMAL.search(p.text)
        and any(slots.get(k) for k in TRAINING_SIGNS)
        and slots.get("workload") != "infer"
    ):
        return "time"  # "One RTX 3090, 88 hours, is this normal?": their run's hours beside the estimate, not a fit
    said = set(cued(p.text, p)) if intent == "time" else set()
    # "基于怎样的配置可以在一台4090上训练起来": whether and how it fits there; no run was sized to time
    if said & {"config", "fits"} and "time" not in said and slots.get("model") and p.gpus and not _sized_run(p, slots):
        return "fit"
    if intent == "rent_vs_buy" and RENT.search(p.text) and not (BUY.search(p.text) or _WEIGHED.search(p.text)):
        return "price"  # "what would be good service to rent these from?": renting only, the price of a GPU-hour
    if intent == "rent_vs_buy" and BUY.search(p.text) and not (RENT.search(p.text) or _BUY_WEIGHED.search(p.text)):
        return "price"  # "buy 16 H100, how much?": buying only, nothing weighed against it: what the cards cost
    if intent == "fit" and slots.get("model") and not (p.gpus or p.unknown_gpus or p.n_gpus) and SIZING.search(p.text):
        return "min_gpus"  # "要微调满血 DeepSeek-R1，需要什么硬件配置": no card or count to fit, so the count is asked
    if intent in ("knowledge", "out_of_scope") and not slots.get("model") and SIZING.search(p.text):
        # "what hardware is necessary?", "需要什么配置": a sizing request, whose model is asked for (never assumed)
        return "recommend_serving" if _SERVING.search(p.text) else "min_gpus"
    return intent


def _sized_run(p: ParsedQuestion, slots: dict[str, Any]) -> bool:
    return bool(p.tokens or p.hours or p.months or p.gpu_hours or slots.get("epochs"))


#: "is this normal": a figure the user saw, asked about (its estimate beside it), not a question of fit
NORMAL = re.compile(
    r"正常吗|正不正常|是否正常|正常么|合理吗|是否合理|is (?:this|it|that) (?:normal|expected|reasonable|ok)|normal\?|expected\?",
    re.IGNORECASE,
)
_SERVING = re.compile(r"推理|部署|serv(?:e|ing)|inference|deploy|users?\b|用户|并发|concurren", re.IGNORECASE)
#: words that ask which cards (plural: a shortlist, not one card's figure)
WHICH_CARDS = re.compile(r"哪些\s*(?:gpu|显卡|卡|芯片|型号)|which (?:gpus|cards)\b|what gpus\b", re.IGNORECASE)
#: words that ask what hardware a job needs, whatever else the question says (no model named: it is asked for)
SIZING = re.compile(
    r"hardware (?:requirements?|specs?|needed|necessary|will be necessary)|how many (?:graphics cards|gpus|cards)|"
    r"which (?:gpu|hardware|server)|what (?:sort of |kind of )?(?:config|hardware|gpus?|server)\b|"
    r"buy (?:a )?(?:server|gpu|machine)|server with (?:a )?gpu|硬件(?:要求|配置|需求)|需要什么(?:显卡|卡|配置|硬件)|"
    r"什么(?:样的)?配置|多少(?:张|块)?(?:显卡|卡)|最低(?:显卡)?配置",
    re.IGNORECASE,
)


_ACCEPT = re.compile(ACCEPT_DEFAULT, re.IGNORECASE)
#: the slot that carries (unknown model name, what stands in for it) from a reply to the size question to the
#: answer, which says it; the planner takes it out of the slots before anything reads them
STAND_IN_FOR = "stand_in_for"
_SIZE = re.compile(r"\d+(?:\.\d+)?B")
_OOM = re.compile(dict(CUE_GROUPS)["oom"], re.IGNORECASE)
#: a second intent that the first one's answer already covers
COVERS = {
    "time": {"cost", "fit", "min_gpus"},
    "fit": {"min_gpus"},
    "min_gpus": {"fit"},
    "cost": {"price"},
    "price": {"cost"},
    "serving_capacity": {"speed", "fit"},
    "speed": {"serving_capacity"},
    "rent_vs_buy": {"cost", "price", "build_budget"},
    "build_budget": {"recommend", "price", "cost"},
    "recommend_serving": {"recommend", "speed", "fit"},
    "recommend": {"recommend_serving", "build_budget"},
    "compare": {"specs", "domestic", "fit", "min_gpus", "price"},
    "domestic": {"compare", "specs", "recommend"},
    "specs": {"price", "compare"},
    "availability": {"specs", "price", "domestic"},
    "train_memory": {"fit", "zero_states", "weights"},
    "zero_states": {"train_memory"},
    "weights": {"fit"},
    "kv_cache": {"fit", "weights"},
    "power": {"cost", "rent_vs_buy"},
}


@dataclass
class Decision:
    """A question's final reading: its intent and the frame's slots (what the dialogue state keeps)."""

    intent: str
    slots: dict[str, Any]
    #: (slot, old, new) for every slot an edit of the previous frame changed (said in the answer)
    changed: list[tuple[str, Any, Any]] = field(default_factory=list)
    #: the previous question asked again on names the reply gives ("Qwen2.5-32B", "用 H20"): its answer, not the
    #: card's own figures
    again: bool = False


def decide(text: str, p: ParsedQuestion, state: dict[str, Any] | None) -> Decision:
    """The final intent and slots of `p` (parsed from `text`), given the conversation's state: the previous
    frame (`state["frame"]`) and the slot the planner asked for (`state["pending"]`)."""
    state = state or {}
    previous, pending = state.get("frame"), state.get("pending")
    changed: list[tuple[str, Any, Any]] = []
    again = False
    if pending and _ACCEPT.match(text):
        # "按默认" after "哪个模型？（默认 7B）": the question that was asked, with the offered default
        intent = pending["intent"]
        slots = {**pending["slots"], pending["missing"]: ASK_DEFAULTS[pending["missing"]]}
        if pending.get("unknown_model"):  # the default stands in for a named model: said, never silent
            slots[STAND_IN_FOR] = (pending["unknown_model"], None)
    elif (
        pending
        and dialogue.slots_of(p).get(pending["missing"]) not in (None, [])
        and (
            p.confidence < dialogue.NEW_INTENT_CONFIDENCE
            or (pending.get("unknown_model") and _sizes_only(p))
            or names_only(p)
        )
    ):
        # the reply gives what was asked for ("A800"), unless it is sure of a question of its own
        intent = pending["intent"]
        slots = dialogue.edit(p, {"intent": intent, "slots": pending["slots"]})
        if (name := pending.get("unknown_model")) and _SIZE.fullmatch(slots.get("model") or ""):
            # "13B" after "“Baichuan2”多大？": the family's catalog model of that size stands in, when there is one
            parts = read_name(name)
            model = parts and stand_in(parts, size_b=float(slots["model"][:-1]))
            slots["model"] = model.id if model else slots["model"]
            slots[STAND_IN_FOR] = (name, slots["model"])
    elif previous and previous.get("intent") not in _OWN_WORDS and names_only(p):
        # "Qwen2.5-32B", "用 H20" after an answer: the same question again, on the names just given
        base = {"intent": pending["intent"], "slots": pending["slots"]} if pending else previous
        intent, slots, again = base["intent"], dialogue.edit(p, base), True
        changed = dialogue.changes(base["slots"], slots)
    elif dialogue.is_edit(p, previous):
        intent = previous["intent"] if dialogue.keeps_intent(p, previous) else p.intent
        slots = dialogue.edit(p, previous)
        if intent == "rent_vs_buy" != previous["intent"] and not p.months:
            slots.pop("months", None)  # a rental's duration is not a rent-or-buy horizon
        changed = dialogue.changes(previous["slots"], slots)
    else:
        intent = unworded_lead(p.intent, text, p)
        slots = dialogue.carry(p, previous)
    if p.injection and intent in ("out_of_scope", "knowledge") and not (p.gpus or p.models):
        intent = "out_of_scope"  # an instruction to the bot, with nothing of the domain named, is not a question
    return Decision(refine(intent, slots, p), slots, changed, again)


#: intents whose answer is its words, not figures of a model or card: a bare name after one is a new question
_OWN_WORDS = frozenset({"knowledge", "out_of_scope", "greeting"})
_NAME_SLOTS = frozenset({"models", "gpus", "unknown_models", "unknown_gpus"})
#: what may stand around names in a reply that gives only names ("用 H20 呢", "Qwen2.5-32B 的", "and H100?")
_FILLER = re.compile(
    r"(?:[\s,，、。.!！?？:：;；()（）]|那么?|就|用|换|是|呢|吧|的|和|或|还有|模型|显卡|卡|请|麻烦|"
    r"\b(?:and|or|with|use|using|on|the|model|gpu|what about|how about|please|pls|thanks)\b)*",
    re.IGNORECASE,
)


def names_only(p: ParsedQuestion) -> bool:
    """ "Qwen2.5-32B", "用 H20": a message that gives model or card names and nothing else (no question words, no
    figures): the answer to "哪个模型？", or the previous question asked again on these names."""
    rest = _around_names(p)
    return rest is not None and all(_FILLER.fullmatch(r) for r in rest)


def wordless(p: ParsedQuestion) -> bool:
    """ "Qwen2.5-32B": names alone, in no language of their own (the conversation's language answers it)."""
    rest = _around_names(p)
    return rest is not None and not re.search(r"[^\W\d_]", "".join(rest))


def _around_names(p: ParsedQuestion) -> list[str] | None:
    """The text between and around the names of models and cards; None when there are none."""
    names = [(a, b) for slot, a, b in p.spans if slot in _NAME_SLOTS]
    if not names or p.injection:
        return None
    text = unicodedata.normalize("NFKC", p.text or "").replace("\u3000", " ")
    rest, at = [], 0
    for a, b in sorted(names):
        rest.append(text[at:a])
        at = max(at, b)
    rest.append(text[at:])
    return rest


def _sizes_only(p: ParsedQuestion) -> bool:
    """ "13B", "总参 47B、激活 13B": a reply that gives sizes and names nothing else (the answer to "多大？")."""
    return bool(p.models) and all(_SIZE.fullmatch(m) for m in p.models) and not (p.gpus or p.unknown_models)


def lengths(intent: str, slots: dict[str, Any]) -> dict[str, Any]:
    """A length the user gave is a context for a serving question and a sequence for a training one."""
    serving = intent in SERVING or (intent in ("fit", "min_gpus", "compare") and slots.get("workload") == "infer")
    if serving and not slots.get("context_len") and slots.get("seq_len"):
        slots["context_len"], slots["seq_len"] = slots["seq_len"], None
    elif intent in TRAINING and not slots.get("seq_len") and slots.get("context_len"):
        slots["seq_len"], slots["context_len"] = slots["context_len"], None
    return slots


def assumed_workload(intent: str, slots: dict[str, Any], p: ParsedQuestion) -> str | None:
    """ "Qwen2.5-32B 一张 L40S 够吗": a fit question with no sign of training is about running the model (the
    answer says so in its defaults note); an OOM report stays a training one."""
    if intent in ("fit", "min_gpus") and not any(slots.get(k) for k in TRAINING_SIGNS) and not _OOM.search(p.text):
        return "infer"
    return None


#: the intents that size a training run's memory
_TRAINING_MEMORY = frozenset({"train_memory", "zero_states"})


def parts(intent: str, p: ParsedQuestion, asks: Iterable[str] = ()) -> list[str]:
    """The question's other parts ("…要多久？多少钱？") that the first intent's answer does not already cover: the
    classifier's second intents, then every ask of the request (`request/asks.py`) that has a frame of its own.
    A serving question with no training word gets no training-memory part ("本地推理deepseek r1需要多少显存空间")."""
    serving_only = p.workload == "infer" and not TRAINING_RUN.search(p.text or "")
    found: list[str] = []
    for extra in [*p.intents[1:], *(ASK_INTENT[a] for a in asks if a in ASK_INTENT)]:
        if serving_only and extra in _TRAINING_MEMORY:
            continue
        if extra not in COVERS.get(intent, ()) and extra != intent and extra not in found:
            found.append(extra)
    return found
