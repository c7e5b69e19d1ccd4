"""The offline planner: parse the question, carry slots over from the conversation, call the same
tools the LLM would, and render a templated answer in the user's language.

Flow: `parse()` → merge with the previous turn's slots (follow-ups such as “那换成H800呢？”) →
pick the intent → if something essential is missing, ask one short question and offer the default
(a reply such as “按默认” / “default” takes it) → run the intent's composer in `bot.offline.answers` →
cite knowledge-base passages → follow-up suggestions. Everything is deterministic.
"""

from __future__ import annotations

import re
from typing import Any

from bot.offline import answers
from bot.offline.parse import ParsedQuestion, parse
from bot.offline.phrases import say
from bot.offline.render import Out
from bot.planner import Context, Emit, PlanResult, ToolRunFactory, _ignore
from tools.errors import AdvisorError

#: slots a follow-up inherits from the previous turn
CARRIED = ("model", "gpu", "gpus", "n_gpus", "method", "workload", "precision", "tokens", "seq_len", "batch",
           "context_len", "budget_cny", "hours_per_day", "months", "zero_stage", "price_cny_per_hour", "china_only")

DEFAULTS: dict[str, Any] = {"model": "7B", "gpu": "a100-sxm4-80gb", "tokens": 1_000_000_000, "gpu_hours": 1000}
DEFAULT_LABEL = {"model": {"zh": "7B 模型", "en": "a 7B model"}, "gpu": {"zh": "A100 80GB", "en": "A100 80GB"},
                 "tokens": {"zh": "1B token", "en": "1B tokens"}, "gpu_hours": {"zh": "1000 卡时", "en": "1000 GPU-hours"}}
# DEFAULTS["model"] is a size: a generic dense 7B, offered as the figure "7B" (grounded under "planner_defaults")
ASK_KEY = {"model": "ask_model", "gpu": "ask_gpu", "tokens": "ask_tokens", "gpu_hours": "ask_hours"}

_ACCEPT_DEFAULT = re.compile(r"^\s*(按默认|默认|就按默认|可以|好的?|行|ok|okay|yes|sure|default|go ahead|use the default)[。.!！]*\s*$",
                             re.IGNORECASE)

#: what each intent needs before it can answer
REQUIRED = {
    "fit": ("model", "gpu"),
    "min_gpus": ("model", "gpu"),
    "time": ("model", "gpu", "tokens"),
    "speed": ("model", "gpu"),
    "rent_vs_buy": ("gpu",),
    "recommend": ("model",),
}


def _slots(p: ParsedQuestion, state: dict[str, Any], follow_up: bool) -> dict[str, Any]:
    """This question's slots, with the previous turn's where this one is silent (follow-ups)."""
    mine: dict[str, Any] = {
        "model": p.models[0] if p.models else None,
        "gpu": p.gpus[0] if p.gpus else None,
        "gpus": list(p.gpus),
        "n_gpus": p.n_gpus,
        "method": p.method,
        "workload": p.workload,
        "precision": p.precision,
        "tokens": p.tokens,
        "seq_len": p.seq_len,
        "batch": p.batch or p.concurrency,
        "context_len": p.context_len,
        "budget_cny": p.budget_cny,
        "hours_per_day": p.hours_per_day,
        "months": p.months,
        "zero_stage": p.zero_stage,
        "price_cny_per_hour": p.price_cny_per_hour,
        "china_only": p.china_only or None,
        "gpu_hours": p.gpu_hours,
        "hours": p.hours,
        "deadline_hours": p.deadline_hours or (p.deadline_days * 24 if p.deadline_days else None),
        "purchase_price_cny": p.purchase_price_cny,
        "offload": p.offload,
        "micro_batch": p.micro_batch,
    }
    if follow_up or not _standalone(p):
        blocked = {"gpu", "gpus"} if p.unknown_gpus else set()
        blocked |= {"model"} if p.unknown_models else set()
        for key in CARRIED:
            if key not in blocked and mine.get(key) in (None, []) and state.get(key) not in (None, []):
                mine[key] = state[key]
        if p.gpus and not p.n_gpus and state.get("n_gpus") and not follow_up:
            mine["n_gpus"] = state["n_gpus"]
    return mine


def _standalone(p: ParsedQuestion) -> bool:
    """A question that names its own model and GPU starts afresh."""
    return bool(p.models and p.gpus)


_RENT = re.compile(r"划算|回本|自建|买卡|租卡|电费|机房|rent|buy|break[- ]?even|electricity", re.IGNORECASE)
_TIME = re.compile(r"多久|多长时间|几天|GPU\s*小时|卡时|gpu[- ]?hours?|how long", re.IGNORECASE)
_CLAIM = re.compile(r"只要|只需|才要?|就要|costs?|is only|price is|价格是|卖")


def _intent(p: ParsedQuestion, state: dict[str, Any]) -> str:
    if p.gpus and not p.models and (p.budget_cny or p.purchase_price_cny) and _CLAIM.search(p.text):
        return "price_claim"  # "H100 只要 1000 元" states a price; we answer with the catalog's, never theirs
    if p.intents and p.intents[0] == "knowledge" and p.gpus and (p.months or p.hours_per_day) and _RENT.search(p.text):
        return "rent_vs_buy"  # "自建是不是用半年以上才划算？A100": a claim our rent-vs-buy can check
    if p.gpus and not p.models and (p.intent in ("cost", "specs", "knowledge")) and re.search(r"自建|电费|机房", p.text):
        return "rent_vs_buy"  # owning costs (power, hosting) are in the rent-vs-buy model
    if p.models and p.intent in ("fit", "knowledge") and not p.workload == "infer" and _TIME.search(p.text):
        return "time"  # "训练一次要多少 GPU 小时": a duration, not a memory question
    if p.intents and p.intents[0] in ("fit", "min_gpus") and not p.models and p.gpus and "specs" in p.intents:
        return "specs"  # "how much memory does the H100 have?" asks for a spec, not a fit
    if p.intents:
        return p.intents[0]
    if p.follow_up and state.get("intent"):
        return state["intent"]
    if state.get("intent") and (p.gpus or p.models or p.n_gpus or p.tokens) and not (p.models and p.gpus):
        return state["intent"]
    return p.intent


class RulesPlanner:
    """Deterministic planner: same tools and the same trace as the LLM agent, no key needed."""

    mode = "offline"

    def plan(self, text: str, ctx: Context, tools: ToolRunFactory, emit: Emit = _ignore) -> PlanResult:
        run = tools(emit)
        state = dict(ctx.state or {})
        pending = state.pop("pending", None)
        p = parse(text)
        lang = ctx.language or p.language
        if pending and _ACCEPT_DEFAULT.match(text):
            intent = pending["intent"]
            slots = dict(pending["slots"])
            slots[pending["missing"]] = DEFAULTS[pending["missing"]]
        else:
            intent = _intent(p, state)
            slots = _slots(p, state, p.follow_up or bool(pending))
            if intent == "rent_vs_buy" and p.months == 1 and re.search(r"(一个|每个?)月|per month|a month", text):
                slots["months"] = None  # "电费一个月多少钱" asks for a monthly figure, not a one-month horizon
        if p.injection and intent in ("out_of_scope", "knowledge") and not (p.gpus or p.models):
            intent = "out_of_scope"
        out = Out(lang=lang)
        if p.injection:
            out.add(say("injection_note", lang))
        missing = [k for k in REQUIRED.get(intent, ()) if not slots.get(k)]
        if intent == "cost" and not (slots.get("gpu_hours") or slots.get("hours") or slots.get("model")
                                     or p.user_figures or slots.get("gpu")):
            missing = ["gpu"]  # with a GPU alone, the answer is its price ranges
        if intent == "recommend" and not slots.get("model") and not slots.get("gpu"):
            missing = ["model"]
        shown = len(out.blocks)
        if missing and (p.unknown_gpus or p.unknown_models):
            answers.unknown_names(p, run, out)  # say which names we do not know, with the closest ones
        if missing and len(out.blocks) == shown:
            key = missing[0]
            out.add(say(ASK_KEY[key], lang, default=DEFAULT_LABEL[key][lang]))
            new_state = {**{k: v for k, v in slots.items() if k in CARRIED}, "intent": intent,
                         "pending": {"intent": intent, "missing": key, "slots": slots}}
            return PlanResult(answer=out.text(), language=lang, tool_calls=run.calls, citations=run.citations,
                              follow_ups=[], state=_jsonable(new_state),
                              offered={"planner_defaults": {key: DEFAULTS[key]}})
        offered: dict[str, Any] = {}
        try:
            if not missing:
                answers.compose(intent, slots, p, run, out)
        except AdvisorError as err:
            message = err.message(lang)
            out.add(say("unknown_name" if getattr(err, "suggestions", None) is not None else "invalid_input", lang,
                        message=message))
            offered["tool_error"] = {"message": message}  # a limit the calculator states ("≤ 100000") is its figure
        if len(out.blocks) == shown:
            out.add(say("knowledge_none", lang))  # never an empty answer: say what we can do
        answers.cite(text, intent, run, out)
        state_out = {**{k: v for k, v in slots.items() if k in CARRIED and v not in (None, [])}, "intent": intent}
        return PlanResult(answer=out.text(), language=lang, tool_calls=run.calls, citations=run.citations,
                          follow_ups=answers.follow_ups(intent, slots, lang), state=_jsonable(state_out), offered=offered)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value
