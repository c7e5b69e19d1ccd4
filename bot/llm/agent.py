"""LLM mode: a LangChain agent (`create_agent`) over an OpenAI-compatible chat endpoint.

    planner = AgentPlanner.from_settings(settings)            # once per process
    result = planner.plan(text, ctx, toolbox.run, emit)      # PlanResult, mode "llm"
    fixed = planner.repair(text, ctx, result, report, emit)  # one more round, or None

The model gets the registry's tools (`bot.llm.tools`), the system prompt of the question's
language (`bot/llm/prompts/system_{zh,en}.md`), the last turns of the conversation as prior messages
and the slots of the last turn in one line. Tool calls go through the `ToolRun`, so the trace has
every call with its full output; tool errors go back to the model as text. Caps: the graph stops
after `llm_max_steps` steps (a model turn or a round of tool calls is one step), each request has
`llm_timeout_s` and `llm_max_retries`; tool calls per answer are capped at twice the steps.
Every failure of the endpoint or of the model (refused connection, 5xx after retries, timeout,
malformed response, too many steps, an empty answer) is a `PlannerError` with a short reason:
the advisor then answers offline. The answer text is not streamed from here: the advisor streams
it after grounding.
"""

from __future__ import annotations

import functools
import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from bot.core.language import detect_language
from bot.core.planner import Context, Emit, PlannerError, PlanResult, ToolRunFactory, _ignore
from bot.core.settings import Settings
from bot.core.toolbox import SEARCH, ToolRun
from bot.llm.budget import HISTORY_PREFIX, context_tokens, fit, server_token_count, tools_tokens
from bot.llm.calls import Calls, TokenRelay, failure_kind, failure_reason, guard_calls
from bot.llm.client import Provider, chat_model
from bot.llm.deadline import answer_deadline
from bot.llm.prompts import render
from bot.llm.tools import ToolBudget, langchain_tools

log = logging.getLogger("gpu_advisor.agent")

HISTORY_ANSWER_CHARS = 2000  # earlier answers are cut to this in the prompt
#: slots the next turn inherits, read from the last tool inputs (the offline planner's names)
CARRIED = (
    "model",
    "gpu",
    "n_gpus",
    "method",
    "workload",
    "precision",
    "tokens",
    "seq_len",
    "batch",
    "context_len",
    "zero_stage",
    "price_cny_per_hour",
    "hours_per_day",
    "months",
    "budget_cny",
)
INTENT = {
    "fit_training": "fit",
    "fit_inference": "fit",
    "training_time": "time",
    "inference_speed": "speed",
    "run_cost": "cost",
    "rent_vs_buy": "rent_vs_buy",
    "compare_gpus": "compare",
    "gpu_specs": "specs",
    "recommend_gpus": "recommend",
    SEARCH: "knowledge",
}
STATE_LABELS = {"zh": "上一轮的设定", "en": "Settings from earlier turns"}
NO_STATE = {"zh": "（新对话，没有之前的设定。）", "en": "(A new conversation: nothing carried over.)"}

_FOLLOW_UPS = re.compile(
    r"^\s*[*_>]*\s*(?:FOLLOW[- ]?UPS?|追问)\s*[*_]*\s*[:：]\s*(.*?)\s*[*_]*\s*$", re.IGNORECASE | re.MULTILINE
)
_THINK = re.compile(r"<think>.*?</think>\s*", re.DOTALL)

#: follow-up suggestions by the last tool used, when the model gave none
SUGGEST = {
    "zh": {
        "fit": ["用 LoRA 或 QLoRA 能省多少显存？", "训练要多久、花多少钱？"],
        "time": ["这次训练要花多少钱？", "换成别的 GPU 会快多少？"],
        "cost": ["租和买哪个更划算？", "有没有更便宜的国产卡方案？"],
        "speed": ["部署需要几张卡？", "用 int4 量化会快多少？"],
        "rent_vs_buy": ["每天只用一半时间呢？", "国产卡的总成本怎么样？"],
        "compare": ["训练同一个模型各要多久？", "哪一张在国内更好买？"],
        "specs": ["它能训练多大的模型？", "和 A100 比怎么样？"],
        "recommend": ["推荐方案要训练多久？", "租和买哪个更划算？"],
        "knowledge": ["我的模型需要几张卡？", "租卡大概多少钱？"],
    },
    "en": {
        "fit": ["How much memory would LoRA or QLoRA save?", "How long would training take, and what would it cost?"],
        "time": ["What would this run cost?", "How much faster on another GPU?"],
        "cost": ["Is renting or buying cheaper?", "Is there a cheaper domestic option?"],
        "speed": ["How many GPUs do we need to serve it?", "How much faster with int4 quantisation?"],
        "rent_vs_buy": ["What if we only use them half the day?", "What about the TCO of domestic GPUs?"],
        "compare": ["How long would each take to train the same model?", "Which is easier to buy in China?"],
        "specs": ["How large a model can it train?", "How does it compare with the A100?"],
        "recommend": ["How long would the recommended setup take?", "Is renting or buying cheaper?"],
        "knowledge": ["How many GPUs does my model need?", "What does renting cost?"],
    },
}


@dataclass
class AgentPlanResult(PlanResult):
    """A PlanResult that remembers its messages and its ToolRun, so `repair` can continue it."""

    messages: list[BaseMessage] = field(default_factory=list, repr=False, compare=False)
    run: ToolRun | None = field(default=None, repr=False, compare=False)
    finish_reason: str | None = None  # of the last model reply ("length": cut off by max_tokens)
    tool_errors: int = 0  # calculator calls that were refused (bad arguments, unknown names)
    deadline_at: float = 0.0  # time.monotonic() by which the whole answer (repair round included) must be done
    model_calls: int = 0  # model requests made for this answer so far (retries included)
    passages: str = ""  # the passages offered up front, as the system prompt shows them


class AgentPlanner:
    """The LLM planner (mode "llm"); thread-safe: every `plan` builds its own agent graph."""

    mode = "llm"

    def __init__(
        self,
        model: Any,
        provider: Provider,
        max_steps: int = 8,
        deadline_s: float = 60.0,
        max_retries: int = 1,
        context_tokens: int = 8192,
        max_tokens: int = 1024,
        probe: Callable[[], int] | None = None,
        count_tokens: Callable[[str], int | None] | None = None,
    ):
        self.model = model
        self.provider = provider
        self.max_steps = max_steps
        self.deadline_s = deadline_s
        self.max_retries = max_retries
        self.max_tokens = max_tokens
        self._context = context_tokens
        self._probe = probe  # asks the server for its context length, once
        self._lock = threading.Lock()
        self._tools_tokens: int | None = None
        self._count_tokens = count_tokens  # the server's own tokenizer, where it offers one
        self._last_count: tuple[str, int] | None = None  # the system prompt is the same for every call of an answer

    def context_tokens(self) -> int:
        """The model's context length: the server's word when it gives one (asked once), else the setting."""
        with self._lock:
            if self._probe is not None:
                probe, self._probe = self._probe, None
                self._context = probe()
            return self._context

    @classmethod
    def from_settings(cls, settings: Settings, http_client: httpx.Client | None = None) -> AgentPlanner:
        model, provider = chat_model(settings, http_client)
        if provider.refusal:
            log.warning("LLM agent will not be used: %s", provider.refusal)
        client = model.http_client
        probe = count = None
        if provider.name in ("vllm", "compatible", "ollama") or provider.local:  # hosted APIs say nothing useful
            probe = functools.partial(
                context_tokens, settings.llm_base_url, provider.model, client, settings.llm_context_tokens
            )
            count = functools.partial(server_token_count, settings.llm_base_url, provider.model, client)
        return cls(
            model,
            provider,
            max_steps=settings.llm_max_steps,
            deadline_s=settings.llm_deadline_s,
            max_retries=settings.llm_max_retries,
            context_tokens=settings.llm_context_tokens,
            max_tokens=settings.llm_max_tokens,
            probe=probe,
            count_tokens=count,
        )

    # ------------------------------------------------------------------------------------------
    def plan(self, text: str, ctx: Context, tools: ToolRunFactory, emit: Emit = _ignore) -> PlanResult:
        lang = ctx.language or detect_language(text)
        run: ToolRun = tools(emit)
        messages = [*_history(ctx), HumanMessage(text)]
        passages = _upfront(run, text)
        return self._run(lang, ctx, run, messages, time.monotonic() + self.deadline_s, 0, passages)

    def repair(
        self, text: str, ctx: Context, result: PlanResult, report: str, emit: Emit = _ignore
    ) -> PlanResult | None:
        """Ask the model once more to remove or source the figures named in `report`."""
        if not isinstance(result, AgentPlanResult) or result.run is None or not report:
            return None
        run = result.run
        run.emit = emit
        note = render(f"repair_{_lang(result.language)}", report=report)
        if time.monotonic() >= result.deadline_at:
            log.warning("no repair round: the answer's deadline has passed")
            return None
        try:
            return self._run(
                result.language,
                ctx,
                run,
                [*result.messages, HumanMessage(note)],
                result.deadline_at,
                result.model_calls,
                result.passages,
            )
        except PlannerError as err:
            log.warning("repair round failed: %s", err)
            return None

    # ------------------------------------------------------------------------------------------
    def _run(
        self,
        lang: str,
        ctx: Context,
        run: ToolRun,
        messages: list[BaseMessage],
        deadline_at: float,
        calls_before: int,
        passages: str = "",
    ) -> AgentPlanResult:
        if self.provider.refusal:
            raise PlannerError(self.provider.refusal, kind="refused")
        budget = ToolBudget(2 * self.max_steps)
        calls = Calls(calls_before)
        agent = create_agent(
            self.model,
            langchain_tools(run.box, run, _lang(lang), budget),
            system_prompt=render(f"system_{_lang(lang)}", context=_state_line(ctx.state, lang) + passages),
            middleware=[guard_calls(calls, self.max_retries, self._fit)],
        )
        try:
            # LangGraph runs at most recursion_limit - 1 steps: max_steps model turns + tool rounds
            with answer_deadline(deadline_at):
                out = agent.invoke(
                    {"messages": messages}, {"recursion_limit": self.max_steps + 1, "callbacks": [TokenRelay(run.emit)]}
                )
        except PlannerError:
            raise
        except Exception as err:
            raise PlannerError(failure_reason(err), kind=failure_kind(err)) from err
        final = out["messages"][-1] if out.get("messages") else None
        answer = _text(final) if isinstance(final, AIMessage) else ""
        answer, follow_ups = _split_follow_ups(_THINK.sub("", answer))
        if not answer.strip():
            if isinstance(final, AIMessage) and final.invalid_tool_calls:
                raise PlannerError("the model sent a tool call whose arguments are not valid JSON")
            raise PlannerError("the model returned an empty answer")
        return AgentPlanResult(
            answer=answer.strip(),
            language=_lang(lang),
            tool_calls=run.calls,
            citations=run.citations,
            follow_ups=follow_ups or _suggest(run, lang),
            state=_next_state(ctx.state, run),
            messages=list(out["messages"]),
            run=run,
            finish_reason=(final.response_metadata or {}).get("finish_reason"),
            tool_errors=max(0, run.attempts - len(run.calls)),
            deadline_at=deadline_at,
            model_calls=calls.n,
            passages=passages,
        )

    def _count(self, text: str) -> int | None:
        """The server's token count of `text`; asked no more once the server has shown it cannot say."""
        if self._count_tokens is None or not text:
            return None
        last = self._last_count
        if last is not None and last[0] == text:
            return last[1]
        n = self._count_tokens(text)
        if n is None:
            self._count_tokens = None
        else:
            self._last_count = (text, n)
        return n

    def _fit(self, request: Any) -> Any:
        """The request with earlier turns left out as needed to fit the context (PlannerError "context" if it cannot)."""
        if self._tools_tokens is None:
            self._tools_tokens = tools_tokens(request.tools, self._count)
        system = request.system_message.content if request.system_message is not None else ""
        system = system if isinstance(system, str) else str(system)
        messages = fit(
            self._count(system) or system,
            self._tools_tokens,
            list(request.messages),
            self.context_tokens(),
            self.max_tokens,
        )
        return request if len(messages) == len(request.messages) else request.override(messages=messages)


# ---- passages up front ---------------------------------------------------------------------------------
#: a passage is offered before the first model call (saving a search round trip) when retrieval is confident:
#: an RRF score that needs both the lexical and the dense leg near the top (1/61 + 0.5/70 with the defaults)
UPFRONT_MIN_SCORE = 0.023
UPFRONT_MAX = 2
PASSAGES_LABEL = {"zh": "可引用的知识库段落", "en": "Knowledge-base passages you may cite"}


def _upfront(run: ToolRun, question: str) -> str:
    """The confident passages for the question, registered as citable, as lines for the system prompt."""
    retriever = run.box.retriever
    if retriever is None:
        return ""
    try:
        found = retriever.search(question, k=UPFRONT_MAX)
    except Exception as err:  # retrieval is an aid here: never a reason not to answer
        log.warning("up-front retrieval failed: %s", err)
        return ""
    confident = [p.model_dump() for p in found if p.score >= UPFRONT_MIN_SCORE][:UPFRONT_MAX]
    if not confident:
        return ""
    refs = run.offer(confident)
    lang = _lang(detect_language(question))
    lines = [f"[{ref}] {p['title']}: {p['text']}" for ref, p in zip(refs, confident, strict=True)]
    return f"\n{PASSAGES_LABEL[lang]}:\n" + "\n".join(lines)


# ---- messages ------------------------------------------------------------------------------------
def _lang(lang: str | None) -> str:
    return "zh" if lang == "zh" else "en"


def _history(ctx: Context) -> list[BaseMessage]:
    """Earlier turns as messages, ids marked so that `bot.llm.budget.fit` may leave the oldest out."""
    messages: list[BaseMessage] = []
    for i, (question, answer) in enumerate(ctx.history):
        short = answer if len(answer) <= HISTORY_ANSWER_CHARS else answer[:HISTORY_ANSWER_CHARS] + " …"
        messages += [HumanMessage(question, id=f"{HISTORY_PREFIX}{i}q"), AIMessage(short, id=f"{HISTORY_PREFIX}{i}a")]
    return messages


def _state_line(state: dict[str, Any], lang: str) -> str:
    items = [
        f"{k}={v}" for k, v in (state or {}).items() if k in (*CARRIED, "gpus", "intent") and v not in (None, [], "")
    ]
    if not items:
        return NO_STATE[_lang(lang)]
    return f"{STATE_LABELS[_lang(lang)]}: " + ", ".join(items)


def _text(message: AIMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)


def _split_follow_ups(answer: str) -> tuple[str, list[str]]:
    """The answer without its FOLLOW-UPS line, and the questions from it (at most three)."""
    found: list[str] = []
    for match in _FOLLOW_UPS.finditer(answer):
        found = [q.strip(" *_`\"'") for q in re.split(r"\s*[|｜]\s*", match.group(1))]
    cleaned = _FOLLOW_UPS.sub("", answer).rstrip()
    return cleaned, [q for q in found if q][:3]


def _suggest(run: ToolRun, lang: str) -> list[str]:
    intent = next((INTENT[c.tool] for c in reversed(run.calls) if c.tool in INTENT), "knowledge")
    return list(SUGGEST[_lang(lang)][intent])


def _next_state(previous: dict[str, Any], run: ToolRun) -> dict[str, Any]:
    """The slots the next turn inherits: the previous ones, overwritten by the last tool inputs."""
    state = {k: v for k, v in (previous or {}).items() if k != "pending"}
    for call in run.calls:
        if call.tool == SEARCH:
            continue
        for key in CARRIED:
            value = call.input.get(key)
            if isinstance(value, str | int | float | bool):
                state[key] = value
        if call.tool == "compare_gpus" and isinstance(call.input.get("gpus"), list):
            state["gpus"] = [g for g in call.input["gpus"] if isinstance(g, str)]
        if call.tool == "run_cost" and call.input.get("gpu_hours"):
            state["gpu_hours"] = call.input["gpu_hours"]
        state["intent"] = INTENT.get(call.tool, state.get("intent"))
    return state
