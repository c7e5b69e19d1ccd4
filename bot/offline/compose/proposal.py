""" "生成方案" / "make this a proposal" in a conversation (issue 26): the proposal for the requirement as understood so
far, handed over as files (proposal.md, bom.xlsx and the charts) that the advisor keeps and links under the answer.

The requirement is the conversation's state: the `plan_system` input the last systems or serving answer used
(`SYSTEM_STATE`, which the planner keeps in the state), else the frame's slots (a choice between cards for a
model and a job: those cards' platforms). Nothing is re-read from old answers. The answer itself says what was
planned in one line, its figures from the `plan_system` call it makes; the document is `bot/offline/say/proposal.py`.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from bot.core.planner import PlanResult
from bot.offline.say.proposal import files
from bot.offline.say.proposal_charts import recommended
from bot.offline.say.proposal_words import w
from bot.offline.say.render import money_span
from bot.offline.say.wording import error_text
from tools.errors import AdvisorError

#: where the planner keeps the last plan_system input in the conversation's state
SYSTEM_STATE = "system"
#: a message that asks for the proposal and nothing else: short, a verb of making and the word for the document
_ZH = re.compile(
    r"^(请|麻烦)?(帮我|给我)?(生成|出|做|写|导出|整理|来)(一)?(个|份|下)?(正式的?|完整的?)?(方案|建议书|方案书)(吧|文档|文件)?$"
)
_EN = re.compile(
    r"^(please\s+)?(make|turn|write|generate|create|give me|export)\s+(this|it|that|me)?\s*(into\s+)?"
    r"(a|the)?\s*(written\s+)?proposal(\s+(of|for)\s+(this|it|that))?(\s+please)?$",
    re.IGNORECASE,
)
MAX_CHARS = 60


def asked(text: str) -> bool:
    """Whether the message asks for the proposal of what the conversation has planned ("生成方案", "出个方案",
    "make this a proposal"), and nothing more."""
    t = re.sub(r"[\s，。！？!?,.、~～]+$", "", text.strip()).strip()
    if len(t) > MAX_CHARS:
        return False
    return bool(_ZH.match(re.sub(r"\s+", "", t)) or _EN.match(re.sub(r"[\s,，]+", " ", t)))


def requirement(state: dict[str, Any] | None) -> dict[str, Any] | None:
    """The plan_system input for the conversation so far, or None when it has planned nothing a proposal can hold."""
    state = state or {}
    if isinstance(state.get(SYSTEM_STATE), dict):
        return dict(state[SYSTEM_STATE])
    slots = (state.get("frame") or {}).get("slots") or {}
    job = {"infer": "serve", "finetune": "finetune", "train": "train"}.get(slots.get("workload") or "")
    if not slots.get("model") or job is None:
        return None
    args: dict[str, Any] = {"job": job, "model": slots["model"]}
    for key in ("method", "tokens", "budget_cny", "deadline_hours", "concurrency", "qps", "daily_users"):
        if slots.get(key) not in (None, [], ""):
            args[key] = slots[key]
    if job == "serve" and not {"concurrency", "qps", "daily_users"} & set(args) and slots.get("batch"):
        args["concurrency"] = slots["batch"]  # the requests in flight the serving answer sized
    if job != "serve" and args.get("method") not in (None, "full", "lora", "qlora"):
        args.pop("method")
    cards = slots.get("gpus") or ([slots["gpu"]] if slots.get("gpu") else [])
    if cards:
        args["platforms"] = list(dict.fromkeys(cards))[:12]
    return args


def plan(state: dict[str, Any] | None, run, lang: str, today: dt.date | None = None) -> PlanResult:
    """The proposal for the conversation's requirement: one line in the answer, the files attached."""
    args = requirement(state)
    keep = dict(state or {})
    if args is None:
        return PlanResult(answer=w("chat_need", lang), language=lang, state=keep)
    try:
        r = run("plan_system", args)
    except AdvisorError as err:
        return PlanResult(answer=error_text(err, args, lang), language=lang, tool_calls=run.calls, state=keep)
    made = files(r, args, lang, today or dt.date.today(), call=run)
    best = recommended(r)
    if best is None:
        line = w("chat_none", lang, nearest=r["nearest"] or "—")
    else:
        s = best["servers"][0]
        price = (
            "–".join(money_span(best["total_low_cny"], best["total_high_cny"], lang))
            if best["total_low_cny"] is not None
            else w("unpriced", lang)
        )
        line = w(
            "chat_made", lang, label=best["label"], server=s["name"], nodes=s["nodes"], n=best["n_gpus"], price=price
        )
    return PlanResult(
        answer=line + "\n\n" + w("chat_contents", lang),
        language=lang,
        tool_calls=run.calls,
        citations=run.citations,
        state={**keep, SYSTEM_STATE: args},
        attachments=made,
    )
