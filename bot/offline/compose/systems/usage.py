"""Rent or buy as the hardware will be used (issue 26).

* An IDC or 智算中心 that buys cards to rent out ("每卡时 20 元，出租率 60%，多久回本？"): `rent_vs_buy` with its
  price and occupancy; the rent side is its revenue. The answer: revenue and running cost a month, payback months,
  and the occupancy below which it never pays back.
* Buying for one job ("只跑一个 7B 全参微调 10 亿 token 的任务，买一台 8 卡 H800 划算还是租？"): the job's hours from
  `training_time`, then `rent_vs_buy` with those hours: renting just that job against buying for it, and how many
  such jobs before buying wins.
Every figure is a tool output.
"""

from __future__ import annotations

import re
from typing import Any

from bot.core.toolbox import ToolRun
from bot.offline.say.phrases import say
from bot.offline.say.render import Out, duration, money, months_label, num, pct, rate
from bot.offline.understand.parse import ParsedQuestion
from bot.offline.understand.request.reader import read

#: words that say the buyer rents the cards out (the IDC side of the market)
RENTING_OUT = re.compile(
    r"出租|租出去|对外租|智算中心|算力中心|\bidc\b|rent (?:them |it )?out|renting out|occupancy|出租率|上架率", re.I
)
#: words that say the purchase is for one job ("只跑一个…任务", "just this one run")
ONE_JOB = re.compile(
    r"只跑一个|只做一个|只有一个|就一个|一次性|这一个|one (?:job|run|task)|single (?:job|run)|just (?:this|one)", re.I
)


def _occupancy(p: ParsedQuestion) -> float | None:
    for m in read(p.text).mentions:
        if m.role == "occupancy" and isinstance(m.value, int | float) and m.value > 0:
            return m.value / 100 if m.value > 1 else float(m.value)
    return None


def rent_or_buy_as_used(s: dict[str, Any], p: ParsedQuestion, args: dict, run: ToolRun, out: Out) -> bool:
    """Answer the IDC or the one-job question; False when the question is neither (the usual comparison)."""
    occupancy = _occupancy(p)
    if occupancy is not None or RENTING_OUT.search(p.text):
        _idc(args, occupancy, run, out)
        return True
    if s.get("model") and s.get("tokens") and (ONE_JOB.search(p.text) or not s.get("hours_per_day")):
        _one_job(s, args, run, out)
        return True
    return False


def _idc(args: dict, occupancy: float | None, run: ToolRun, out: Out) -> None:
    lang = out.lang
    if occupancy is not None:
        args = {**args, "occupancy": occupancy}
        args.pop("hours_per_day", None)
    r = run("rent_vs_buy", args)
    line = "idc_payback" if r["breakeven_months"] else "idc_never"
    out.add(
        say(
            line,
            lang,
            n=r["n_gpus"],
            gpu=r["gpu"],
            price=rate(r["rent_cny_per_hour"], lang),
            occupancy=pct(r["hours_per_day"] / 24) if occupancy is None else pct(occupancy),
            revenue=money(r["rent_monthly_cny"], lang),
            running=money(r["own_monthly_cny"], lang),
            upfront=money(r["own_upfront_cny"], lang),
            months=months_label(r["breakeven_months"], lang) if r["breakeven_months"] else "—",
        )
    )
    floor = r.get("payback_floor_utilisation")
    if floor is not None and floor <= 1:
        out.add(say("idc_floor", lang, floor=pct(floor)))
    elif floor is not None:
        out.add(say("idc_floor_never", lang))
    if occupancy is None:
        out.add(say("idc_ask_occupancy", lang, hpd=num(r["hours_per_day"])))


def _one_job(s: dict, args: dict, run: ToolRun, out: Out) -> None:
    lang = out.lang
    t = run(
        "training_time",
        {
            "model": s["model"],
            "gpu": args["gpu"],
            "n_gpus": args["n_gpus"],
            "tokens": s["tokens"],
            "method": s.get("method") or "full",
        },
    )
    r = run("rent_vs_buy", {**args, "job_hours": t["hours"]})
    key = "job_rent" if r["cheaper"] == "rent" else "job_buy"
    out.add(
        say(
            key,
            lang,
            n=r["n_gpus"],
            gpu=r["gpu"],
            model=t["model"],
            hours=duration(t["hours"], lang),
            rent=money(r["job_rent_cny"], lang),
            own=money(r["job_own_cny"], lang),
            upfront=money(r["own_upfront_cny"], lang),
        )
    )
    if r["jobs_to_break_even"]:
        out.add(say("job_breakeven", lang, jobs=num(r["jobs_to_break_even"])))
    if r.get("breakeven_hours_per_day"):
        out.add(
            say(
                "job_breakeven_hours",
                lang,
                hpd=num(r["breakeven_hours_per_day"]),
                months=months_label(r["months"], lang),
            )
        )
