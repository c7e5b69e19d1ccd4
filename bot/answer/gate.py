"""The quality gate: an LLM answer is shipped only if it is at least as good as the offline one.

    verdict = check(question, result, lang="zh", state=ctx.state)
    verdict.ok, verdict.reasons            # ("no_tool_call", "ungrounded", ...)
    verdict.report("zh")                   # what the repair round tells the model

What is checked, in this order (each failure is one reason code; `REASONS` lists them all):

  truncated         the reply was cut off (`finish_reason: length`)
  empty             nothing left to say
  markup            chat-template debris: <|im_end|>, <tool_call>, raw tool-call JSON, an open ``` fence
  repetition        a loop: one character or phrase repeated over and over, a line said three times
  echo              the question repeated back
  too_long          runaway length
  wrong_language    not in the user's language
  unknown_name      a GPU or model name the catalogs do not know
  no_tool_call      the question's intent (offline parser) needs a figure, and no calculator ran
  missing_key_figure  no key figure of the calculators that ran (fit: per-GPU memory or GPU count, …)
  missing_verdict   a fit / rent-or-buy question without the verdict (fits / does not fit, rent / buy)
  wrong_verdict     the verdict is the opposite of the calculator's
  bad_citation      a [n] marker that names no passage the model was given
  ungrounded        a figure with no source (figures inside `code` and code blocks count too)
  premise_as_fact   a figure only the question contains, stated as a fact instead of as the user's premise

The intent comes from the offline parser (`bot.offline.understand.parse.parse(text).intent`), or from the
conversation state for a follow-up that names no intent of its own ("那换成 H800 呢？"). Figures are
matched by `bot.grounding`; only passages the answer cites with [n] count as sources.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rapidfuzz import fuzz

from bot.core.language import detect_language
from bot.core.planner import PlanResult
from bot.core.toolbox import SEARCH
from bot.grounding.check import GroundingResult, UngroundedNumber, ground
from bot.grounding.inputs import trusted_tool_outputs
from tools.yaml_data import load_yaml

REASONS = (
    "truncated",
    "empty",
    "markup",
    "repetition",
    "echo",
    "too_long",
    "wrong_language",
    "unknown_name",
    "no_tool_call",
    "missing_key_figure",
    "missing_verdict",
    "wrong_verdict",
    "bad_citation",
    "ungrounded",
    "premise_as_fact",
)
#: reasons that removing the offending sentences can cure (the last resort before falling back)
DROPPABLE = frozenset({"ungrounded", "premise_as_fact"})

#: intents whose answer is a figure (a calculator must run); the others (knowledge, greeting, out_of_scope) are prose
FIGURE_INTENTS = frozenset({"fit", "min_gpus", "time", "cost", "rent_vs_buy", "compare", "recommend", "speed", "specs"})
CALCULATORS_KEY = {  # the key figures of a calculator's output; None: any figure it returned
    "fit_training": ("per_gpu_gb", "min_gpus", "usable_gb", "capacity_gb", "shortfall_gb", "headroom_gb"),
    "fit_inference": ("per_gpu_gb", "min_gpus", "max_batch", "usable_gb", "capacity_gb", "shortfall_gb"),
    "training_time": (
        "hours",
        "days",
        "gpu_hours",
        "hours_low",
        "hours_high",
        "days_low",
        "days_high",
        "gpu_hours_low",
        "gpu_hours_high",
    ),
    "inference_speed": ("decode_tokens_per_s", "total_tokens_per_s", "prefill_tokens_per_s"),
    "run_cost": ("total_cny", "low_cny", "high_cny", "total_usd"),
    "rent_vs_buy": ("rent_total_cny", "own_total_cny", "breakeven_months", "saving_cny", "breakeven_hours_per_day"),
}
MAX_CHARS = {"zh": 3000, "en": 6000}

_DEBRIS = re.compile(
    r"<\|[A-Za-z_]{2,30}\|>|</?(?:tool_call|tool_response|think|function|start_of_turn|end_of_turn|s)>|\[/?INST\]"
    r"|\[TOOL_CALLS\]|<unk>|\ufffd|^\s*\{\s*\"(?:name|tool|function|arguments|tool_calls)\"\s*:",
    re.MULTILINE,
)
_FENCE = re.compile(r"^\s*(```|~~~)", re.MULTILINE)
_CHAR_RUN = re.compile(r"([^\s\-=|:_*#~.─—·0-9])\1{5,}")
_PHRASE_RUN = re.compile(r"(\S.{1,39}?)\1{3,}", re.DOTALL)
_SENTENCE_END = re.compile(r"(?<=[。！？!?])|\n|(?<=\.)\s")
REPEAT_SIMILARITY = 90  # rapidfuzz ratio at which two sentences count as the same one said again
_TABLE_ONLY = re.compile(r"^[\s\-=|:_*#~.─—]*$")
_CITE = re.compile(r"[\[【]\s*(\d{1,4}(?:\s*[,，、]\s*\d{1,4})*)\s*[\]】](?!\()")
_PREMISE = re.compile(
    r"你说的|你说|您说|你提到|您提到|你给的|您给的|你给出|按你|按您|照你|如你所说|根据你|你所说|您所说|你认为|你以为|用户"
    # a possessive attributes a figure only with a word for one ("你的预算", "your quote"), not any "您的…"
    r"|[你您]的(?:预算|报价|价格|数字|数据|估计|估算|说法|假设|前提|出价|成本|需求)"
    r"|you said|you mention|you quote|you gave|you give|you cite|you were told|as you|you state|you claim|claimed"
    r"|your (?:own )?(?:budget|quote|quoted|price|figure|number|estimate|claim|premise|assumption|offer|cost)",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"[^。！？!?\n]*(?:[。！？!?]|\n|$)|[^\n]+")

_FIT_NO = re.compile(
    r"放不下|装不下|放不进|装不进|不能放下|无法放下|放不了|跑不了|跑不起来|不够用|显存不足|显存不够|内存不足|超出显存|会\s?OOM|爆显存"
    r"|does\s*n[o']t fit|do\s*n[o']t fit|does not fit|do not fit|won'?t fit|will not fit|cannot fit|can'?t fit|not fit"
    r"|not enough (?:GPU )?memory|out of memory|exceeds? (?:the )?(?:usable |available )?memory|too large for|too big for",
    re.IGNORECASE,
)
_FIT_YES = re.compile(
    r"放得下|能放下|可以放下|装得下|能装下|可以装下|放得进|能放进|可以跑|能跑|跑得动|跑得起来|够用|足够|能容纳|可以容纳|不会\s?OOM"
    r"|\bfits?\b|will fit|can fit|enough memory|is enough|are enough|within (?:the )?(?:usable )?memory|room to spare",
    re.IGNORECASE,
)
_RENT = re.compile(
    r"租[^，。；\n]{0,8}(?:更)?(?:划算|便宜|省钱|合算)|建议租|选择租|推荐租|租用更|租赁更|租卡更"
    r"|rent(?:ing)?\b[^.;\n]{0,30}\b(?:cheaper|wins|better|pays off|less)|recommend rent|go with rent",
    re.IGNORECASE,
)
_BUY = re.compile(
    r"(?:买|购买|自购|自建|采购|买断)[^，。；\n]{0,8}(?:更)?(?:划算|便宜|省钱|合算)|建议(?:买|购买|采购|自建)|选择(?:买|购买)"
    r"|推荐(?:买|购买)|(?:buy|buying|own|owning|purchas\w*)\b[^.;\n]{0,30}\b(?:cheaper|wins|better|pays off|less)"
    r"|recommend (?:buy|purchas|own)|go with (?:buy|own|purchas)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class GateResult:
    reasons: tuple[str, ...]
    details: dict[str, str]  # reason -> what exactly (figures, names), for the report and the log
    grounding: GroundingResult  # every figure of the answer (code included) and its source
    premises: tuple[UngroundedNumber, ...] = ()  # question-only figures stated as facts

    @property
    def ok(self) -> bool:
        return not self.reasons

    def report(self, lang: str) -> str:
        """What the repair round tells the model: one line per reason, in the answer's language."""
        texts = _texts()[_lang(lang)]
        return "\n".join(f"- {texts[r].format(detail=self.details.get(r, ''))}".rstrip() for r in self.reasons)

    def droppable(self) -> bool:
        """True when only sentences with unsourced figures stand in the way."""
        return bool(self.reasons) and set(self.reasons) <= DROPPABLE

    def offending(self) -> GroundingResult:
        """The figures to drop (ungrounded ones and premises stated as facts) as a GroundingResult."""
        return GroundingResult(numbers=[], ungrounded=[*self.grounding.ungrounded, *self.premises])


@functools.cache
def _texts() -> dict[str, dict[str, str]]:
    return load_yaml((Path(__file__).parents[1] / "llm" / "prompts" / "gate.yaml").read_text(encoding="utf-8"))


def _lang(lang: str | None) -> str:
    return "zh" if lang == "zh" else "en"


# ---- the check ----------------------------------------------------------------------------------
def check(
    question: str,
    result: PlanResult,
    *,
    lang: str,
    state: Mapping[str, Any] | None = None,
    finish_reason: str | None = None,
    tool_errors: int = 0,
) -> GateResult:
    """Every reason `result.answer` may not be shipped as an answer to `question` (none: ship it)."""
    answer = result.answer or ""
    reasons: dict[str, str] = {}
    if finish_reason == "length":
        reasons["truncated"] = ""
    if not answer.strip():
        reasons["empty"] = ""
    _shape(question, answer, lang, reasons)
    _names(question, answer, reasons)
    grounding, premises = _grounding(question, answer, result, reasons)
    calculators = [c for c in result.tool_calls if c.tool != SEARCH]
    intent = intent_of(question, state)
    if intent in FIGURE_INTENTS:
        if not calculators:
            # a clarifying question (no figure) is fine when a calculator was tried and said what is missing
            if not (tool_errors and not grounding.numbers):
                reasons["no_tool_call"] = intent
        elif not _states_key_figure(answer, calculators):
            reasons["missing_key_figure"] = ", ".join(sorted({c.tool for c in calculators}))
    _verdicts(answer, intent, calculators, reasons)
    ordered = tuple(r for r in REASONS if r in reasons)
    return GateResult(reasons=ordered, details=reasons, grounding=grounding, premises=tuple(premises))


@functools.lru_cache(maxsize=256)
def _parse(text: str):
    from bot.offline.understand.parse import parse

    return parse(text)


def intent_of(question: str, state: Mapping[str, Any] | None = None) -> str:
    """The question's intent by the offline parser; a follow-up without cues inherits the last turn's."""
    parsed = _parse(question)
    if not parsed.intents and state and state.get("intent"):
        return str(state["intent"])
    return parsed.intent


def _shape(question: str, answer: str, lang: str, reasons: dict[str, str]) -> None:
    debris = _DEBRIS.search(answer)
    if debris or len(_FENCE.findall(answer)) % 2:
        reasons["markup"] = debris.group().strip() if debris else "```"
    loop = _CHAR_RUN.search(answer) or next(
        (m for m in _PHRASE_RUN.finditer(answer) if not _TABLE_ONLY.match(m.group(1))), None
    )
    lines = [ln.strip() for ln in answer.splitlines() if len(ln.strip()) >= 8 and not _TABLE_ONLY.match(ln)]
    repeated = next((ln for ln in lines if lines.count(ln) >= 3), None) or _said_three_times(answer)
    if loop or repeated:
        reasons["repetition"] = loop.group()[:40] if loop else repeated[:40]
    if _echoes(question, answer):
        reasons["echo"] = ""
    if len(answer) > MAX_CHARS[_lang(lang)]:
        reasons["too_long"] = str(MAX_CHARS[_lang(lang)])
    if answer.strip() and detect_language(_without_code(answer)) != _lang(lang):
        reasons["wrong_language"] = _lang(lang)


def _said_three_times(answer: str) -> str | None:
    """A sentence said three times or more, near enough (a small model's loop drifts: "任何意见" -> "任住意见")."""
    sentences = [s.strip() for s in _SENTENCE_END.split(answer) if len(s.strip()) >= 8 and not _TABLE_ONLY.match(s)]
    for i, s in enumerate(sentences):
        if sum(1 for t in sentences[i:] if fuzz.ratio(s, t) >= REPEAT_SIMILARITY) >= 3:
            return s
    return None


def _norm(text: str) -> str:
    return re.sub(r"[\W_]+", "", text.lower())


def _echoes(question: str, answer: str) -> bool:
    q, a = _norm(question), _norm(answer)
    if not q or not a:
        return False
    if a == q or (q in a and len(a) <= 1.3 * len(q) + 6):
        return True
    return len(a) <= 2 * len(q) and difflib.SequenceMatcher(None, q, a, autojunk=False).ratio() >= 0.9


def _names(question: str, answer: str, reasons: dict[str, str]) -> None:
    """Unknown GPU or model names, except those the user typed (saying "A1000 is not a known GPU" is right)."""
    parsed = _parse(_without_code(answer))
    typed = _norm(question)
    unknown = [n for n in (*parsed.unknown_gpus, *parsed.unknown_models) if _norm(n) not in typed]
    if unknown:
        reasons["unknown_name"] = ", ".join(dict.fromkeys(unknown))


def _without_code(text: str) -> str:
    text = re.sub(r"(?ms)^\s*(```|~~~).*?^\s*\1\s*$", " ", text)
    return re.sub(r"`[^`\n]*`", " ", text)


def uncode(text: str) -> str:
    """`text` with code marks blanked (same length), so that figures in code are read like prose."""
    out = _FENCE.sub(lambda m: m.group().replace(m.group(1), "   "), text)
    out = re.sub(r"(?m)^(\s*   )[A-Za-z0-9_+-]*$", lambda m: " " * len(m.group()), out)  # the fence's language tag
    return out.replace("`", " ")


def cited_refs(answer: str) -> list[int]:
    """The passage numbers the answer cites, in order of appearance ("[1]", "【2】", "[1, 3]")."""
    refs: list[int] = []
    for m in _CITE.finditer(answer):
        refs += [int(x) for x in re.split(r"\s*[,，、]\s*", m.group(1))]
    return refs


def _grounding(
    question: str, answer: str, result: PlanResult, reasons: dict[str, str]
) -> tuple[GroundingResult, list[UngroundedNumber]]:
    refs = cited_refs(answer)
    bad = sorted({r for r in refs if not 1 <= r <= len(result.citations)})
    if bad:
        reasons["bad_citation"] = ", ".join(f"[{r}]" for r in bad)
    cited = {result.citations[r - 1].id: result.citations[r - 1].text for r in refs if 1 <= r <= len(result.citations)}
    # a calculator fed a figure the model made up (not in the question) is no source (bot.grounding)
    outputs, _tainted = trusted_tool_outputs(result.tool_calls, question)
    outputs.update(result.offered)
    text = uncode(answer)
    grounding = ground(text, outputs, cited, question)
    if grounding.ungrounded:
        reasons["ungrounded"] = ", ".join(dict.fromkeys(u.text for u in grounding.ungrounded))
    premises = [
        UngroundedNumber(text=n.text, value=n.value, unit=n.unit, start=n.start, end=n.end)
        for n in grounding.numbers
        if n.source_id == "question" and not _as_premise(text, n.start)
    ]
    if premises:
        reasons["premise_as_fact"] = ", ".join(dict.fromkeys(p.text for p in premises))
    return grounding, premises


def _as_premise(text: str, start: int) -> bool:
    """A question-only figure is fine inside a sentence that attributes it to the user."""
    for m in _SENTENCE.finditer(text):
        if m.start() <= start < max(m.end(), m.start() + 1):
            return bool(_PREMISE.search(m.group()))
    return False


def _states_key_figure(answer: str, calculators: list) -> bool:
    text = uncode(answer)
    for call in calculators:
        keys = CALCULATORS_KEY.get(call.tool)
        source = call.output if keys is None else {k: call.output[k] for k in keys if call.output.get(k) is not None}
        if source and any(n.source_id == call.id for n in ground(text, {call.id: source}, {}, "").numbers):
            return True
    return False


def _verdicts(answer: str, intent: str, calculators: list, reasons: dict[str, str]) -> None:
    fits = {
        bool(c.output.get("fits"))
        for c in calculators
        if c.tool in ("fit_training", "fit_inference") and isinstance(c.output.get("fits"), bool)
    }
    if fits:
        said = _fit_polarity(answer)
        if said and not said & fits:
            reasons["wrong_verdict"] = "fits" if True in fits else "does not fit"
        elif not said and intent == "fit":
            reasons["missing_verdict"] = "fits" if True in fits else "does not fit"
    cheaper = {c.output.get("cheaper") for c in calculators if c.tool == "rent_vs_buy"} & {"rent", "buy"}
    if cheaper:
        said = ({"rent"} if _RENT.search(answer) else set()) | ({"buy"} if _BUY.search(answer) else set())
        if said and not said & cheaper:
            reasons["wrong_verdict"] = "/".join(sorted(cheaper))
        elif not said and intent == "rent_vs_buy":
            reasons["missing_verdict"] = "/".join(sorted(cheaper))


def _fit_polarity(answer: str) -> set[bool]:
    said: set[bool] = set()
    if _FIT_NO.search(answer):
        said.add(False)
    if _FIT_YES.search(_FIT_NO.sub(" ", answer)):  # "放不下" contains no "放得下", "不能放下" does contain "能放下"
        said.add(True)
    return said
