"""The offline planner: understand the question, keep the dialogue's frame, answer first.

Flow: `parse()` (slots by rules, intent by the trained model) → `decide()` (`bot.offline.understand.decide`,
the one place where what the user asks is decided: whether this is an edit of the previous frame ("换成 H800
呢", "and with 16 of those?") or a new question, and the final intent and slots) → the
intent's frame (`bot.offline.understand.frames`) fills the slots it can default, and says so ("按 A100 80GB
估算；换卡请说") → only a slot the frame cannot do without is asked for, and a reply such as
"按默认" then answers the question that was asked → the frame's composer → citations, follow-ups.
A question with two parts ("LoRA 行吗？QLoRA 呢？", "要多久？多少钱？") gets both answered.
Everything is deterministic.
"""

from __future__ import annotations

from typing import Any

from bot.core.language import detect_language
from bot.core.planner import Context, Emit, PlanResult, ToolRunFactory, _ignore
from bot.offline.compose import answers, diagnosis, info, network, proposal, support
from bot.offline.compose.evidence import host_ram
from bot.offline.compose.measured import gap, steps
from bot.offline.compose.measured import memory as stated_memory
from bot.offline.compose.sizes import holds, host, longest, method, scaling, together, tradeoff
from bot.offline.compose.sizes import verdicts as asked_verdicts
from bot.offline.compose.systems import electricity, hostside, minimum, nodes, system
from bot.offline.compose.toolargs import on_pick
from bot.offline.compose.verdict import verdict
from bot.offline.parts import part_label
from bot.offline.say.phrases import localize_name, say
from bot.offline.say.render import Out, count, said_once
from bot.offline.say.wording import carried_items, changed_items, defaults_note, error_text
from bot.offline.understand.decide import SIZING, STAND_IN_FOR, assumed_workload, decide, lengths, parts, wordless
from bot.offline.understand.dialogue import carried_slots
from bot.offline.understand.frames import (
    ASK_DEFAULTS,
    ASK_EXAMPLES,
    ASK_KEY,
    DEFAULT_GPU,
    DEFAULT_LABEL,
    FP8_GPU,
    SIZE_EXAMPLE,
    fp8_native,
    frame,
)
from bot.offline.understand.parse import ParsedQuestion
from bot.offline.understand.request import setups
from bot.offline.understand.request.asks import unanswered
from bot.offline.understand.request.reader import read
from bot.offline.understand.request.source import engine_of_source, with_source
from bot.offline.understand.request.variants import VARIANT_SEP, variants
from tools.catalog.lookup import get_model
from tools.errors import AdvisorError


class RulesPlanner:
    """Deterministic planner: same tools and the same trace as the LLM agent, no key needed."""

    mode = "offline"

    def plan(self, text: str, ctx: Context, tools: ToolRunFactory, emit: Emit = _ignore) -> PlanResult:
        run = tools(emit)
        # mentions (with their roles) and asks: the one reader; a question naming no model asked in a model's
        # repository is about that model (`ctx.source`, said in the answer), unless the conversation has one
        request = with_source(read(text), ctx.source, ctx.state)
        lang = ctx.language or request.parsed.language
        if proposal.asked(text):  # "生成方案": the proposal of what the conversation planned, as files
            return proposal.plan(ctx.state, run, lang)
        if (counted := steps.plan(text, request, run, lang)) is not None:  # "为什么一个 epoch 1800 步": redone
            return counted
        lead, below = None, ""
        if (paste := diagnosis.pasted(text, request)) is not None:  # a log, command or config: why it broke
            if paste.framework is None:  # a question filed in an engine's repository is about that engine
                paste.framework = engine_of_source(ctx.source)
            with run.survey():  # its what-if fits explain the evidence; the servers block sizes the estimate's job
                lead, below = diagnosis.plan(text, paste, request, run, lang)
            # an error the estimate cannot speak to: the diagnosis is the answer, unless a part asked still needs it
            if diagnosis.exclusive(paste) and not unanswered(request.cued, run.calls):
                lead.answer = support.worded_after([lead.answer, below], request.cued, text, run, lang)
                return lead
        result = self._plan(text, ctx, run, request)
        # a cause that earned the lead first, then the estimate of the setup as asked, then what to check
        if lead is not None:
            parts = [lead.answer, diagnosis.line("details_header", lang)] if lead.answer else []
            result.answer = said_once([b for b in (*parts, result.answer, below) if b])
            result.offered = {**lead.offered, **result.offered}
        return result

    def _plan(self, text: str, ctx: Context, run, request) -> PlanResult:
        p = request.parsed
        decided = decide(text, p, ctx.state)  # what the user asks: the one place it is decided
        intent, user_slots, changed = decided.intent, decided.slots, decided.changed
        lang = ctx.language or (_previous_language(ctx) if wordless(p) else None) or p.language
        out = Out(lang=lang)
        if stood := user_slots.pop(STAND_IN_FOR, None):  # a reply to "“X”多大？": which model X is computed on
            name, value = stood
            line = (
                answers.stand_in_line(name, value, lang)
                if value
                else say("stand_in_default", lang, name=name, model=localize_name(default_model_name(), lang))
            )
            out.add(line)
        offered: dict[str, Any] = {}
        if changed:
            offered["previous_frame"] = {k: old for k, old, _ in changed if old is not None}
            offered["edited_frame"] = {k: new for k, _, new in changed}
            out.add(say("changed_note", lang, items=changed_items(changed, lang)))
        if carried := carried_slots(p, user_slots, changed, ctx.state):
            out.add(say("carried_note", lang, items=carried_items(carried, lang)))
            offered["carried_frame"] = carried  # figures said in earlier turns: their source
        if p.injection:
            out.add(say("injection_note", lang))
        for line in answers.reading_notes(p, lang):  # what was read for the user: a memory, a source, servers
            out.add(line)
        f = frame(intent)
        fabric = intent in _NETWORK_INTENTS and bool(user_slots.get("gpu")) and network.applies(text, p)
        slots = lengths(intent, dict(user_slots))
        unknown = {"gpu"} if p.unknown_gpus else set()
        unknown |= {"model"} if p.unknown_models and not p.models else set()
        defaulted = {k: v for k, v in f.defaults.items() if slots.get(k) in (None, []) and k not in unknown}
        if slots.get("workload") == "infer":  # a service to run takes no training tokens, so none is assumed or said
            defaulted.pop("tokens", None)
        serving = slots.get("workload") == "infer" or intent in ("speed", "serving_capacity", "recommend_serving")
        if defaulted.get("gpu") == DEFAULT_GPU and (slots.get("precision") == "fp8" or (serving and fp8_native(slots))):
            defaulted["gpu"] = FP8_GPU  # the card we assume must run what was asked: the A100 has no FP8
        if workload := assumed_workload(intent, slots, p):
            defaulted["workload"] = workload  # said in the defaults note
        slots.update(defaulted)
        if card := minimum.fp8_on_card_without(slots):  # "FP8 … is 8×A100 enough?": weighed in what the card runs
            slots["precision"] = None
            out.add(say("fp8_not_on_card", lang, gpu=card))
        # a name we do not know is never replaced by a default card or model: it is said, with the closest
        missing = [
            k
            for k in (*f.needs, *sorted(unknown & set(f.defaults)))
            if slots.get(k) in (None, [])
            and not (k == "budget_cny" and (slots.get("budget_usd") or slots.get("budget_eur")))
            and not (fabric and k == "model")  # the network comparison states its example model
        ]
        traffic = ["capacity"] if any(m.role in ("concurrency", "qps", "daily_users") for m in request.mentions) else []
        if missing == ["model"] and not decided.again and (cards := _cards_alone(p, [*request.cued, *traffic])):
            # "A100 比 4090 慢，正常吗？", "V100 不支持 bf16？": the cards' own figures answer; the model asked in a line
            intent, missing = cards, []
            slots = {**slots, "gpus": list(dict.fromkeys(p.gpus)) if cards == "compare" else None}
            out.add(say("no_model_cards", lang))
        if missing == ["model"] and system.plans_without_model(intent, slots, request):
            # traffic and a sizing ask, no model ("deploy for 10 000 users, which hardware"): planned on the default
            slots["model"] = defaulted["model"] = ASK_DEFAULTS["model"]
            missing = []
        missing = [] if missing == ["budget_cny"] and system.plans_without_budget(slots, request) else missing
        # no model named in a question that asks for figures ("微调需要几张 4090？"): answered on the stated default,
        # with the same answer for other sizes and one question for the model after it (a bare "显存" is asked)
        sized = scaling.applies(intent, text)
        scaled = (
            missing == ["model"]
            and bool(request.cued or traffic or decided.again)
            and not (p.unknown_models or p.unknown_gpus or p.invalid)
        )
        if scaled := scaled and sized:
            defaulted = {"model": ASK_DEFAULTS["model"], **defaulted}
            slots["model"], missing = ASK_DEFAULTS["model"], []
        # "按默认" to "“GLM-5.2”多大？": the default is no size of that model, so the other sizes are given beside it
        unsized = stood[0] if stood and not stood[1] and sized else None
        scaled = scaled or bool(unsized)
        shown = len(out.blocks)
        if missing and (p.unknown_gpus or p.unknown_models):
            answers.unknown_names(p, run, out)  # say which names we do not know, with the closest ones
        sizeless = [n for n in p.unknown_models if n not in p.stand_ins] if "model" in missing and not p.models else []
        if missing:
            state = {"frame": {"intent": intent, "slots": _clean(user_slots)}}
            if len(out.blocks) == shown:  # nothing said yet: ask for the first missing slot
                key = missing[0]
                label = DEFAULT_LABEL.get(key, {}).get(ASK_DEFAULTS.get(key), {}).get(lang, "")
                example = ASK_EXAMPLES.get(key)  # the example figure in the question is ours: offered as its source
                out.add(
                    say(ASK_KEY.get(key, "ask_model"), lang, default=label, example=example[lang] if example else "")
                )
                state["pending"] = {"intent": intent, "missing": key, "slots": _clean(user_slots)}
                if key == "model" and p.gpus and not (p.unknown_gpus or p.invalid or traffic or SIZING.search(text)):
                    # "MLU370 能训大模型吗": what the card gives (not for a sizing request, which needs the model)
                    answers.compose("specs", {"gpu": p.gpus[0], "gpus": list(dict.fromkeys(p.gpus))}, p, run, out)
                offered = {
                    "planner_defaults": {key: ASK_DEFAULTS.get(key)},
                    **({"ask_example": {key: example["value"]}} if example else {}),
                    **offered,
                }
            elif sizeless:  # "“GLM-5.2”多大？" was asked: a reply with its size answers the question asked
                state["pending"] = {
                    "intent": intent,
                    "missing": "model",
                    "slots": _clean(user_slots),
                    "unknown_model": sizeless[0],
                }
                offered = {"ask_example": dict(SIZE_EXAMPLE), **offered}
            # else the unknown names were said, with the closest ones: nothing can be computed without them
            answers.knowledge_part(request.cued, text, run, out, shown, first=True)  # then the question back
            return PlanResult(
                answer=out.text(),
                language=lang,
                tool_calls=run.calls,
                citations=run.citations,
                follow_ups=[],
                state=_jsonable(state),
                offered=offered,
            )
        if planned := system.route(intent, slots, request, text):  # traffic or machines: a capacity/system plan
            for key in system.planned_without(planned, slots, request):  # no default card, count or unused tokens
                if defaulted.pop(key, None) is not None:
                    slots[key] = None
            if planned is system.system_plan and p.models:  # "7B 到 14B": sized for the largest, and kept so
                slots["model"] = user_slots["model"] = system.largest_model(slots, p.models)
        if intent == "time" and slots.get("deadline_hours") and p.n_gpus is None:
            defaulted.pop("n_gpus", None)  # the count is worked out from the deadline, not assumed
        if intent == "rent_vs_buy" and slots.get("gpu_hours") and "n_gpus" in defaulted:
            defaulted.pop("n_gpus")
            slots["n_gpus"] = None  # "每月 200 卡时": the cards come from the use (compose/money.py)
        if defaulted and intent not in ("knowledge", "out_of_scope", "greeting"):
            note = defaults_note(defaulted, slots, intent, lang)
            if note:
                out.add(note)
                offered["planner_defaults"] = dict(defaulted)
        if p.tokens_from and slots.get("tokens") == p.tokens:  # the product the question implies, said once
            given = p.tokens_from
            if "samples" in given:
                held = given.get("seq_len") is not None and slots.get("seq_len") == given["seq_len"]
                note = say(
                    "tokens_from_seq" if held else "tokens_from",
                    lang,
                    seq=f"{given.get('seq_len') or 0:,.0f}",
                    samples=f"{given['samples']:,.0f}",
                    length=f"{given['tokens_per_sample']:,.0f}",
                    epochs=f"{given['epochs']:g}",
                    tokens=count(p.tokens),
                )
            else:
                note = say(
                    "tokens_epochs",
                    lang,
                    per_epoch=count(given["tokens_per_epoch"]),
                    epochs=f"{given['epochs']:g}",
                    tokens=count(p.tokens),
                )
            out.add(note)
            offered["question_tokens"] = {**given, "tokens": p.tokens}
        answered_at, calls_at = len(out.blocks), len(run.calls)
        if planned:
            try:
                planned(slots, request, run, out)
            except AdvisorError as err:
                out.add(error_text(err, slots, lang))
            if slots.get("n_gpus") and planned is not system.system_plan:  # and what the user's own cards hold
                self._answer(intent, slots, p, run, out, offered)
            electricity.add(text, slots, p, request.cued, run, out)  # "一年电费多少": the bill of the machines planned
        elif fabric:
            try:  # "2 台 8 卡 H800 要不要上 IB": the cluster's run timed on each fabric named
                network.network(slots, p, run, out)
            except AdvisorError as err:
                out.add(error_text(err, slots, lang))
            intent = "time"  # cited and carried as the training run it is
        else:
            self._answer(intent, slots, p, run, out, offered)
        on = on_pick(slots, p, run)  # the parts after a recommendation: on the cards it recommends
        for extra in () if planned else parts(intent, p, request.cued):
            self._part(extra, on, p, run, out, offered, answered_at)
        if not planned and not fabric:  # an ask the parts above left without its calculator: its own frame
            for extra in [_SIZED_ASKS[a] for a in unanswered(request.cued, run.calls) if a in _SIZED_ASKS]:
                if extra != intent:
                    self._part(extra, on, p, run, out, offered, answered_at)
        if intent != "knowledge":  # a part asked in words: the note that answers it (first, when asked first)
            answers.knowledge_part(request.cued, text, run, out, answered_at)
        none = say("knowledge_none", lang)  # one part found nothing while another answered: that part is not said
        if none in out.blocks[answered_at:] and len(out.blocks) - answered_at > 1:
            out.blocks.remove(none)
        method.add(text, slots, run, calls_at, out)  # "how to calculate": the steps behind the figures above
        holds.add(text, p, run, out)  # "is one or two enough", "1卡最多推理什么模型": what the cards named hold
        tradeoff.add(request, run, out, calls_at)  # a count and a time asked: the days at each count
        longest.add(text, run, out)  # "最大训练长度": the longest sequence the fitted run holds
        together.add(text, p, run, out, answered_at)  # "7B 和 20B 同时部署在一张卡上": their summed fit
        if scaled:
            scaling.add(intent, slots["model"], run, calls_at, out)
            # "MLU370 能训大模型吗": and what the card gives; a run's time or bill on one card asks nothing of the card,
            # two cards named beside it are compared ("H800 25h … 2卡A800 75小时")
            about_cards = intent not in ("time", "cost") or len(set(p.gpus)) >= 2
            if p.gpus and not (traffic or SIZING.search(text)) and about_cards:
                answers.compose("specs", {"gpu": p.gpus[0], "gpus": list(dict.fromkeys(p.gpus))}, p, run, out)
            scaling.ask(out, unsized)
        if said := answers.memory_verdict(request, run, lang):  # "是否只需要 700G 显卡": the yes or no, first
            out.blocks.insert(answered_at, said)
        stated_memory.add(request, run, out, answered_at, said)  # "my estimate about 68GB", "文档说只要 21g"
        china = lang == "zh" or p.china_only
        if not planned and not fabric:
            nodes.across(run, out)  # a count beyond one server: the servers, network, power, racks and bill
        host.add(request, text, run, out, host_ram(p))  # "还有多少内存需求": host RAM per server of the setup sized
        hostside.add(text, run, out)  # "GPU and CPU", "显卡，CPU和内存": each server's CPU cores, RAM and disk
        info.drop_moot_ask_back(p, run, out)  # asked back for a card, then sized the job on one: not asked
        # a choice ends in a pick, put first (after the servers: the cards it sizes for the choice size nothing else)
        before = len(out.blocks)
        verdict(request.cued, run, out, answered_at, china, p.workload, p.gpus, bool(setups.named(p)))
        if not planned:  # "能否在1张4090上完成，如果不行2张3090是否可以": a yes or no to each setup asked, in order
            asked_verdicts.add(request, run, out, answered_at + len(out.blocks) - before, calls_at, intent)
        gap.add(request, run, out, answered_at)  # a gap measured between two named cards, its verdict before the pick
        if len(out.blocks) == shown:
            out.add(say("knowledge_none", lang))  # never an empty answer: say what we can do
        answers.cite(text, intent, run, out)
        if run.errors:  # a limit a calculator states in its refusal ("0.01B to 100,000B") is that calculator's figure
            offered.setdefault("tool_error", {"messages": []})["messages"].extend(run.errors)
        state_out: dict[str, Any] = {"frame": {"intent": intent, "slots": _clean(user_slots)}}
        if scaled:  # a reply with the model ("Qwen2.5-32B") answers this question again, on it
            state_out["pending"] = {"intent": intent, "missing": "model", "slots": _clean(user_slots)}
            if unsized:  # its size then stands on the family's catalog model of that size, when there is one
                state_out["pending"]["unknown_model"] = unsized
        if system_call := next((c for c in reversed(run.calls) if c.tool == "plan_system"), None):
            state_out[proposal.SYSTEM_STATE] = system_call.input  # the requirement a "生成方案" turns into files
        return PlanResult(
            answer=out.text(),
            language=lang,
            tool_calls=run.calls,
            citations=run.citations,
            follow_ups=system.follow_ups(planned, lang) if planned else answers.follow_ups(intent, slots, lang),
            state=_jsonable(state_out),
            offered=offered,
        )

    def _part(
        self, extra: str, slots: dict[str, Any], p: ParsedQuestion, run, out: Out, offered: dict, answered_at: int
    ) -> None:
        """Another part of the question, on its own frame; its defaults fill what is still empty (an empty slot
        must not hide its default). A part whose frame lacks what it needs is left to the asks gate to name; a
        part that says nothing the answer had not said is dropped ("吞吐多少" on a model that does not fit)."""
        ef = frame(extra)
        eslots = {**slots, **{k: v for k, v in ef.defaults.items() if slots.get(k) in (None, [])}}
        fitted = [c.output["n_gpus"] for c in run.calls if c.tool == "fit_training" and c.output.get("fits")]
        if extra == "time" and slots.get("n_gpus") in (None, []) and fitted:
            eslots["n_gpus"] = max(fitted)  # timed on the cards the fit above found, not on a default count
        if all(eslots.get(k) not in (None, []) for k in ef.needs):
            before = len(out.blocks)
            self._answer(extra, eslots, p, run, out, offered)
            if set(out.blocks[before:]) <= set(out.blocks[answered_at:before]):
                del out.blocks[before:]

    def _answer(self, intent: str, slots: dict[str, Any], p: ParsedQuestion, run, out: Out, offered: dict) -> None:
        for label, change in variants(intent, p) or [(None, {})]:
            if label:
                names = [part_label(part, out.lang) for part in label.split(VARIANT_SEP)]
                out.add(say("part_header", out.lang, label=" · ".join(names)))
            try:  # a length is a context for a serving part and a sequence for a training one, part by part
                answers.compose(intent, lengths(intent, {**slots, **change}), p, run, out)
            except AdvisorError as err:
                message = error_text(err, slots, out.lang)
                out.add(message)
                # a limit the calculator states is its figure; every part's message is kept (two-part answers)
                offered.setdefault("tool_error", {"messages": []})["messages"].append(message)


#: intents a question about the network between nodes is read as (words, cards): it is answered by compose/network
_NETWORK_INTENTS = frozenset({"knowledge", "compare", "specs", "out_of_scope", "fit", "min_gpus", "time", "speed"})
#: asks a frame of their own answers from the model and the cards alone (a cost or a price also needs the use:
#: without it the frame shows a price sheet, which answers nothing asked; the asks gate names it instead)
_SIZED_ASKS = {"fits": "fit", "min_count": "min_gpus", "time": "time", "speed": "speed", "capacity": "serving_capacity"}
#: asks whose answer needs the model's size (a memory fit, a count, a run's time or money)
_NEEDS_MODEL = frozenset({"fits", "min_count", "time", "cost", "capacity", "rent_vs_buy", "choose"})


def _cards_alone(p: ParsedQuestion, cued: list[str]) -> str | None:
    """ "compare" (two or more cards) or "specs" (one) when the question names cards, no model, and asks nothing
    that needs the model's size (a speed gap between cards, a feature of a card); else None."""
    if not p.gpus or p.models or p.unknown_models or set(cued) & _NEEDS_MODEL:
        return None
    return "compare" if len(set(p.gpus)) >= 2 else "specs"


def _previous_language(ctx: Context) -> str | None:
    """The language of the conversation's last question, for a reply in none ("Qwen2.5-32B")."""
    return detect_language(ctx.history[-1][0]) if ctx.history else None


def _clean(slots: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in slots.items() if v not in (None, [])}


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def default_model_name() -> str:
    """The model a reply "按默认" to the model question is computed on ("generic dense 7B")."""
    return get_model(ASK_DEFAULTS["model"]).name
