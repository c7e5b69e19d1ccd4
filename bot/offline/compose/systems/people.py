"""A count of people is the people who use a model, not the requests at one moment (issue 26): "给 300 人用",
"300 人使用", "serve it to about 12 people" are its users, planned as daily users (each using it on a day) and
turned into requests in flight by plan_serving. A count said as daily users ("日活 5000", "2000 DAU") is that
already; a count with a word of simultaneity ("100 人同时在线", "64 concurrent users") is a concurrency
(understand/quantities.py). Where the count is a bare number of people the answer says how it was read and what
the other reading would take: all of them asking at once, planned on the picked card at the same targets."""

from __future__ import annotations

import re
from typing import Any

from bot.core.toolbox import ToolRun
from bot.offline.say.phrases import say
from bot.offline.say.render import Out, num
from bot.offline.understand.request.model import Request
from bot.offline.understand.request.reader import normalised
from tools.errors import AdvisorError
from tools.schemas.plan import PlanServingInput

#: the words that make a count of users a daily count already ("日活 300", "300 DAU", "300 daily active users")
_DAILY = re.compile(r"日活|活跃|dau|daily|active|per day|a day|每天|每日", re.I)
_TRAFFIC = ("concurrency", "qps", "daily_users")


def people_count(request: Request) -> int | None:
    """The number of people the question says will use the model, when it is a bare count of people (not a daily
    count said as such)."""
    norm = normalised(request.text)
    for m in request.mentions:
        if m.role == "daily_users" and isinstance(m.value, int | float):
            around = norm[max(0, m.start - 6) : m.end + 14]
            return None if _DAILY.search(around) else int(m.value)
    return None


def as_sessions(request: Request, args: dict[str, Any]) -> int | None:
    """People who each keep a context window ("serve it to about 5 people with a full context window of 128k"): the
    window a conversation keeps is held in the KV cache per person, whether or not that person is generating, so
    the people are planned as sessions at once (a concurrency), not as a day's requests. Changes `args` in place;
    the number of people where it did."""
    users = people_count(request)
    if users is None or not args.get("context_tokens") or "daily_users" not in args:
        return None
    args.pop("daily_users")
    args["concurrency"] = users
    return users


def all_at_once(request: Request, r: dict, pick: dict | None, args: dict[str, Any], run: ToolRun, out: Out) -> bool:
    """The reading of a count of people, said beside the plan (requests per person a day, the peak factor, the
    requests in flight they come to), with the cards the picked option would need were all of them to ask at the
    same moment (the upper bound of that traffic). False where nothing was said (not a count of people)."""
    users = people_count(request)
    if users is None or pick is None or r["traffic_source"] != "daily_users" or users <= r["concurrency"]:
        return False
    bound = {k: v for k, v in args.items() if k not in _TRAFFIC}
    bound.update(gpus=[pick["gpu"]], precision=pick["precision"], concurrency=users)
    try:
        other = run("plan_serving", bound)
    except AdvisorError:
        return False
    cand = next((c for c in other["candidates"] if c["n_gpus"]), None)
    if cand is None:
        return False
    a = {x["key"]: x["value"] for x in r["assumptions"]}
    out.add(
        say(
            "people_read",
            out.lang,
            users=f"{users:,}",
            rpu=num(a.get("requests_per_user")),
            peak=num(a.get("peak_factor")),
            derived=num(r["concurrency"]),
            gpu=pick["gpu"],
            precision=pick["precision"],
            n=f"{cand['n_gpus']:,}",
        )
    )
    return True


def reading_in_plan(request: Request, r: dict, out: Out) -> None:
    """The reading of a count of people beside a machines plan (plan_system, which turns daily users into requests
    in flight at plan_serving's defaults): said once, with those defaults and what it came to."""
    users = people_count(request)
    flight = next(
        (o["capacity"]["concurrency"] for o in r["options"] if (o.get("capacity") or {}).get("concurrency")), None
    )
    if users is None or r["job"] != "serve" or flight is None:
        return
    fields = PlanServingInput.model_fields
    out.add(
        say(
            "people_read_plan",
            out.lang,
            users=f"{users:,}",
            rpu=num(fields["requests_per_user"].default),
            peak=num(fields["peak_factor"].default),
            derived=num(flight),
        )
    )
