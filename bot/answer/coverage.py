"""The coverage gate (grounding's mirror): nothing the user said is dropped without a word.

After an answer is composed (offline or by the LLM), every mention of the question (`Request.mentions`) is
either an input of a tool call (`fed`: which tool and field), named in the answer, or explained in one
line that says why it was not used ("主机的 CPU 与内存（64 核、512G）不影响显存和速度的估算"). The reasons are
per role (`templates/coverage.yaml`); a figure whose role nothing placed is said as not understood, with a
request to say what it is. `unused` is what is left neither used nor explained: after the repair, empty.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from bot.core.planner import PlanResult
from bot.core.trace import MentionUse
from bot.offline.understand.request.asks import answered
from bot.offline.understand.request.model import Mention, Request
from bot.offline.understand.request.reader import canonical, normalised
from tools.catalog.lookup import get_gpu
from tools.errors import AdvisorError

TEMPLATES = Path(__file__).with_name("templates") / "coverage.yaml"
#: at most this many figures are listed per reason (a pasted log can hold dozens); the rest are counted
MAX_LISTED = 6
#: setups where the host's RAM holds part of the model (so it is not beside the point)
_HYBRID = re.compile(
    r"offload|卸载|llama\.cpp|llamacpp|ollama|ktransformers|cpu_infer|gguf|内存不够|内存不足|host (?:ram|memory)|shm",
    re.I,
)
_ONE_QUESTION = re.compile(r"[^\n0-9]{1,200}[?？]")
#: an answer that asks the user for something (what it needs to compute)
_ASKS_FOR = re.compile(r"请告诉我|告诉我|请问|[?？]|\btell me\b|\bname the\b|\bwhich\b.*\?", re.IGNORECASE)
_WORD = re.compile(r"[^0-9a-z\u4e00-\u9fff.]+")


@cache
def _templates() -> dict[str, Any]:
    return yaml.safe_load(TEMPLATES.read_text(encoding="utf-8"))


def _norm(value: Any) -> str:
    return _WORD.sub("", str(value).lower())


def _leaves(value: Any, path: str):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _leaves(v, path)
    else:
        yield path, value


def _same(mention: Mention, value: Any) -> bool:
    if isinstance(value, bool) or value is None:
        return False
    want = mention.value
    if isinstance(want, int | float) and isinstance(value, int | float):
        return abs(float(value) - float(want)) <= 1e-6 * max(1.0, abs(float(want)))
    if isinstance(want, str) and isinstance(value, str):
        if mention.role in ("gpu", "model") and canonical(value) == want:
            return True
        a, b = _norm(want), _norm(value)
        return bool(a) and len(a) >= 2 and (a == b or a in b or (len(b) >= 3 and b in a))
    return False


#: a card said by its memory alone ("4卡3090（24GB）", "A100=40G", "每张卡显存是32G")
_MEMORY_SIZE = re.compile(r"\s*(\d{1,3}(?:\.\d+)?)\s*(?:g|gb|gib)\s*", re.I)
#: a size the driver reports a little under the card's nominal memory ("15G" on a 16 GB card) is that memory
_REPORTED_SHARE = 0.9


def _memory_said(mention: Mention) -> float | None:
    """The memory of a card the mention gives, when that is all it gives (a gpu or gpu_memory_gb mention)."""
    if mention.role == "gpu_memory_gb" and isinstance(mention.value, int | float):
        return float(mention.value)
    if mention.role == "gpu" and (m := _MEMORY_SIZE.fullmatch(str(mention.text))):
        return float(m.group(1))
    return None


def _card_memory(value: Any) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return float(get_gpu(value).memory_gb)
    except (AdvisorError, ValueError, TypeError):
        return None


def _fed_memory(memory: float, result: PlanResult) -> str | None:
    """The tool input that is a card with this memory: the size the user gave is the card the answer computed on."""
    for call in result.tool_calls:
        for path, value in _leaves(call.input, ""):
            if path.split(".")[-1] in ("gpu", "gpus") and (have := _card_memory(value)):
                if _REPORTED_SHARE * have <= memory <= have:
                    return f"{call.tool}.{path}"
    return None


def _fed(mention: Mention, result: PlanResult) -> str | None:
    for call in result.tool_calls:
        if call.tool == "search_knowledge":
            continue
        for path, value in _leaves(call.input, ""):
            if _same(mention, value):
                return f"{call.tool}.{path}"
    if (memory := _memory_said(mention)) is not None and (fed := _fed_memory(memory, result)):
        return fed
    for source, offered in result.offered.items():
        for path, value in _leaves(offered, ""):
            if _same(mention, value):
                return f"{source}.{path}"
    return None


def _named(mention: Mention, answer: str, question: str = "") -> bool:
    text = mention.text.lower().strip()
    if len(text) >= 2:
        return text in answer
    # a one-character figure counts as named where the answer quotes it with the words after it ("“5 tokens per
    # second”"): the bare digit would match any figure
    span = question[mention.start : mention.end + 24].lower()
    return any(f"“{span[:n].strip()}”" in answer for n in range(len(text) + 2, len(span) + 1))


def covers(request: Request, result: PlanResult) -> list[MentionUse]:
    """Each mention and how the answer covers it (`input`, `named`), or `unused`."""
    answer = result.answer.lower()
    uses = []
    for m in request.mentions:
        fed = _fed(m, result)
        use = "input" if fed else "named" if _named(m, answer, request.text) else "unused"
        uses.append(MentionUse(text=m.text, role=m.role, use=use, fed=fed))
    return uses


def explain(
    uses: list[MentionUse],
    lang: str,
    asked_back: bool = False,
    hybrid: bool = False,
    shown_as: list | None = None,
    host_checked: bool = False,
) -> str:
    """One line per reason for the mentions nothing used: the repair that makes `unused` empty. `asked_back`:
    the answer is a question for what is missing; what a calculator takes is kept for the reply. `hybrid`: the
    setup offloads to the CPU (an offload setting, llama.cpp / Ollama / KTransformers), so host RAM matters;
    `host_checked`: a calculator of the answer computed the host RAM (a hybrid or offloading fit), so it is not
    said to be unchecked."""
    t = _templates()
    reasons: dict[str, list[str]] = {}
    hidden: dict[str, int] = {}
    for i, u in enumerate(uses):
        if u.use == "unused":
            reason = t["role_reason"].get(u.role, "kept" if asked_back else "not_needed")
            if reason == "host" and (hybrid or host_checked):
                reason = "host_checked" if host_checked else "host_offload"
            items = reasons.setdefault(reason, [])
            words = u.text if shown_as is None else shown_as[i]
            if words is None:
                hidden[reason] = hidden.get(reason, 0) + 1  # read from a folded form ("1¼"): counted, not quoted
                continue
            quoted = f"“{words}”"  # the user's words, verbatim: an echo of the question, never a new figure
            if quoted not in items:
                items.append(quoted)
    lines = []
    sep = "、" if lang == "zh" else ", "
    for reason, items in reasons.items():
        shown = sep.join(items[:MAX_LISTED])
        if len(items) > MAX_LISTED:
            shown += t["more"][lang].format(n=len(items) - MAX_LISTED)
        if hidden.get(reason):  # no digit of ours: the count would be a figure without a source
            shown = sep.join(filter(None, [shown, t["others"][lang]]))
        lines.append(t["reasons"][reason][lang].format(items=shown))
    if not lines:
        return ""
    return t["header"][lang] + "\n" + "\n".join(f"- {line}" for line in lines)


def _as_typed(mention: Mention, question: str) -> str | None:
    """The mention as the user typed it (full-width digits and all), to quote; None when folding changed its length
    ("1¼") and it cannot be cut out of the question."""
    if mention.text in question:
        return mention.text
    if len(normalised(question)) == len(question):
        typed = question[mention.start : mention.end].strip()
        return typed if typed and typed in question else None
    return None


def gate(request: Request, result: PlanResult) -> tuple[list[MentionUse], list[MentionUse]]:
    """Cover every mention; state the ones nothing used (appended to the answer). Returns (mentions, unused)."""
    uses = covers(request, result)
    # a question back (the planner's pending slot, or a model's answer that is one question and no figure)
    computed = any(c.tool != "search_knowledge" for c in result.tool_calls)
    asked_back = (
        bool((result.state or {}).get("pending"))
        or _ONE_QUESTION.fullmatch(result.answer.strip()) is not None
        or (not computed and _ASKS_FOR.search(result.answer) is not None)
    )
    hybrid = bool(_HYBRID.search(request.text)) or any(m.role == "offload" for m in request.mentions)
    lang = result.language if result.language in ("zh", "en") else "en"
    checked = answered("host_ram", list(result.tool_calls))
    shown_as = [_as_typed(m, request.text) for m in request.mentions]
    note = explain(uses, lang, asked_back, hybrid, shown_as=shown_as, host_checked=checked)
    if note:
        result.answer = result.answer.rstrip() + "\n\n" + note
        uses = [u.model_copy(update={"use": "explained"}) if u.use == "unused" else u for u in uses]
    return uses, [u for u in uses if u.use == "unused"]
