"""Composers for money and power: run cost, price lookup, rent vs buy, a hardware budget, power draw."""

from __future__ import annotations

import math
import re
from typing import Any

from bot.core.toolbox import ToolRun
from bot.offline.compose.shortlist import pick_gpu, pick_time, picks, sourcing_args, spec_distance, without_excluded
from bot.offline.compose.systems import nodes, usage
from bot.offline.compose.toolargs import assumed, budget_args, budget_text, n_of, short_source
from bot.offline.compose.train import cost_span, price_notes, time, user_price
from bot.offline.say.assumptions import assumptions_block
from bot.offline.say.phrases import say
from bot.offline.say.render import Out, money, money_span, months_label, num, rate
from bot.offline.understand.decide import BUY, RENT
from bot.offline.understand.parse import ParsedQuestion
from tools.catalog.lookup import gpus
from tools.catalog.prices import prices_for
from tools.errors import AdvisorError
from tools.units import HOURS_PER_MONTH

_PRICE_WORDS = re.compile(r"价格|多少钱|价钱|贵|便宜|报价|price|cost|cheaper|expensive", re.IGNORECASE)


def price_claim(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    amount = p.budget_cny or p.purchase_price_cny
    # the user's figure as they wrote it ("30万", "300,000元"), where the parser noted it: a figure of the
    # question grounds only itself
    claim = next(iter(p.mentions.get("budget_amount" if p.budget_cny else "per_card", [])), None)
    price_ranges(s["gpu"], run, out, claim=claim or (f"{amount:,.0f} 元" if out.lang == "zh" else f"{amount:,.0f} CNY"))


def cost(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    """A bill from GPU-hours, or from GPUs × a duration (hours, months, days a week…); no model needed."""
    lang = out.lang
    claims = [f for f in p.user_figures if f.unit == "CNY"]
    if claims and s.get("gpu"):
        price_ranges(s["gpu"], run, out, claim=claims[0].text)
        return
    args: dict[str, Any] = {"gpu": s["gpu"]}
    if s.get("gpu_hours"):
        args["gpu_hours"] = s["gpu_hours"]
    elif s.get("hours") or s.get("months"):
        months = s.get("months") or 0
        busy = (s.get("hours_per_day") or 24) / 24
        args.update(hours=s.get("hours") or months * HOURS_PER_MONTH * busy, n_gpus=n_of(s, 1))
    elif s.get("model") and s.get("tokens"):
        time(s, p, run, out)
        return
    else:
        price(s, p, run, out)
        return
    args.update(user_price(s))  # their price, in 元 or dollars
    if s.get("currency") == "USD":
        args["currency"] = "USD"
    c = run("run_cost", args)
    if c["price_source"] == "user":  # their price: one figure, no catalog range or source to name
        out.add(say("cost_only_user", lang, total=money(c["total_cny"], lang), gpu_hours=f"{c['gpu_hours']:,.0f}",
                    price=rate(c["price_cny_per_hour"], lang)))  # fmt: skip
    else:
        out.add(say("cost_only", lang, gpu_hours=f"{c['gpu_hours']:,.0f}", **cost_span(c, lang)))
    price_notes(s, c, "price_cny_per_hour", out)
    if not s.get("gpu_hours") and not s.get("hours") and s.get("months"):  # the period said, and the hours it makes
        said = next(iter(p.mentions.get("months", [])), None) or months_label(s["months"], lang)
        daily = next(iter(p.mentions.get("hours_per_day", [])), None) if s.get("hours_per_day") else None
        at = say("cost_period_daily", lang, daily=daily) if daily else say("cost_period_always", lang)
        out.add(say("cost_period", lang, period=said, at=at, hours=f"{args['hours']:,.0f}"))
    if c.get("total_usd") is not None:
        usd = {"usd": f"{c['total_usd']:,.0f}", "fx": f"{c['fx_cny_per_usd']:g}"}
        if c["price_source"] == "user":
            out.add(say("cost_usd_user", lang, **usd))
        else:
            out.add(say("cost_usd", lang, low_usd=f"{c['low_usd']:,.0f}", high_usd=f"{c['high_usd']:,.0f}", **usd))


def price(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    """Price lookup: the catalog's ranges, or "no published price" with what we know and the nearest priced cards."""
    claims = [f for f in p.user_figures if f.unit == "CNY"]
    if not claims and (p.budget_cny or p.purchase_price_cny) and p.gpus and not p.models:
        price_claim(s, p, run, out)  # "H100 只要 1000 元": the catalog's price, never theirs
        return
    names, at = list(dict.fromkeys(s.get("gpus") or [s["gpu"]])), len(out.blocks)
    for name in names[:4]:
        price_ranges(name, run, out, claim=claims[0].text if claims else None)
    if len(names) == 1 and p.n_gpus and BUY.search(p.text or "") and not RENT.search(p.text or ""):
        nodes.buy_bill(names[0], p.n_gpus, run, out, at)  # "买 8 张 H20 多少钱": the bill for that many, first
    if len(names) == 1 and (p.n_gpus or 1) > 1 and RENT.search(p.text or ""):  # "2H100 … rent these": their hour
        try:
            c = run("run_cost", {"gpu": names[0], "n_gpus": p.n_gpus, "hours": 1})
        except AdvisorError:
            return
        out.add(say("price_hour_of_n", out.lang, n=p.n_gpus, gpu=c["gpu"], low=rate(c["low_cny"], out.lang),
                    high=rate(c["high_cny"], out.lang), mid=rate(c["total_cny"], out.lang)))  # fmt: skip


def price_ranges(gpu: str, run: ToolRun, out: Out, claim: str | None = None) -> None:
    lang = out.lang
    r = run("gpu_specs", {"gpu": gpu})

    def rng(low: float | None, high: float | None, fmt) -> str:
        return f"{fmt(low, lang)}–{fmt(high, lang)}" if low and high else "—"

    if not (r["purchase_low_cny"] or r["rent_low_cny_per_hour"]):
        _no_price(r, run, out)
        return
    values = {
        "gpu": r["name"],
        "buy": rng(r["purchase_low_cny"], r["purchase_high_cny"], money),
        "rent": rng(r["rent_low_cny_per_hour"], r["rent_high_cny_per_hour"], rate),
        "source": short_source(r["price_source"] or "—", lang),
    }
    out.add(say("price_claim", lang, claim=claim, **values) if claim else say("price_ranges", lang, **values))


def _no_price(r: dict[str, Any], run: ToolRun, out: Out) -> None:
    """No price on file: say so, say what we know, and give the priced cards closest in memory and compute."""
    lang = out.lang
    priced = [(spec_distance(r, g), g.id) for g in gpus() if g.id != r["id"] and prices_for(g) is not None]
    near = []
    for _, gid in sorted(priced)[:2]:
        q = run("gpu_specs", {"gpu": gid})
        buy = (
            f"{money(q['purchase_low_cny'], lang)}–{money(q['purchase_high_cny'], lang)}"
            if q["purchase_low_cny"]
            else "—"
        )
        rent = (
            f"{rate(q['rent_low_cny_per_hour'], lang)}–{rate(q['rent_high_cny_per_hour'], lang)}"
            if q["rent_low_cny_per_hour"]
            else "—"
        )
        near.append(say("price_nearest", lang, gpu=q["name"], buy=buy, rent=rent))
    sep = "；" if lang == "zh" else "; "
    bf16 = r["bf16_tflops"] or r["fp16_tflops"]
    out.add(
        say(
            "price_none",
            lang,
            gpu=r["name"],
            mem=f"{r['memory_gb']:g} GB" if r["memory_gb"] else "—",
            bf16=f"{bf16:g} TFLOPS" if bf16 else "—",
            nearest=sep.join(near) or "—",
        )
    )


def build_budget(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    """A hardware budget: which cards (bought, not rented) it pays for, for the workload asked about."""
    lang = out.lang
    workload = {"pretrain": "train", "infer": "infer"}.get(s.get("workload") or "", "finetune")
    args: dict[str, Any] = {"model": s["model"], "workload": workload, "pricing": "buy", **budget_args(s)}
    if workload != "infer":
        args["tokens"] = s["tokens"]
        if s.get("method"):
            args["method"] = s["method"]
    else:
        args.update({k: s[k] for k in ("batch", "context_len") if s.get(k)})
    r = without_excluded(run("recommend_gpus", {**args, **sourcing_args(s, p, out)}), s)
    chosen = picks(r, out)
    if not chosen:
        return
    best = r.get("best_value") or r.get("cheapest") or chosen[-1][1]
    out.add(
        say(
            "budget_intro",
            lang,
            budget=budget_text(r, lang),
            workload=workload,
            model=r["model"],
            n=best["n_gpus"],
            gpu=best["gpu"],
        )
    )
    lines = []
    for label, o in chosen:
        cost_text = money(o["total_cny"], lang) if o.get("total_cny") is not None else say("no_price", lang)
        lines.append(
            say(
                "budget_pick",
                lang,
                label=label,
                n=o["n_gpus"],
                gpu=pick_gpu(o, lang),
                cost=cost_text,
                time=pick_time(o, lang),
            )
        )
    out.add("\n".join(dict.fromkeys(lines)))
    out.add(say("budget_note", lang))
    out.add(assumptions_block(r["assumptions"], lang, ("method", "tokens", "fx_cny_per_usd")))


def power(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    """Server and rack kW, yearly kWh and the electricity bill."""
    lang = out.lang
    args: dict[str, Any] = {"gpu": s["gpu"], "n_gpus": n_of(s, 8)}
    for key in ("hours_per_day", "electricity_cny_per_kwh", "pue", "servers_per_rack", "rack_limit_kw"):
        if s.get(key):
            args[key] = s[key]
    r = run("power_draw", args)
    per_server = assumed(r, "gpus_per_server")
    per_rack = assumed(r, "servers_per_rack")
    hpd = assumed(r, "hours_per_day")
    out.add(
        say(
            "power_verdict",
            lang,
            n=r["n_gpus"],
            gpu=r["gpu"],
            total_kw=num(r["total_kw"]),
            server_kw=num(r["server_kw"]),
            per_server=per_server,
            kw_per_gpu=f"{r['kw_per_gpu']:g}",
            per_rack=per_rack,
            rack_kw=num(r["rack_kw"]),
        )
    )
    pue = assumed(r, "pue")
    price = assumed(r, "electricity_cny_per_kwh")
    out.add(
        say(
            "power_energy",
            lang,
            facility_kw=num(r["facility_kw"]),
            hpd=num(hpd),
            kwh=f"{r['kwh_per_year']:,.0f}",
            pue=f"{pue:g}",
            price=f"{price:g}",
            year=money(r["electricity_cny_per_year"], lang),
            month=money(r["electricity_cny_per_month"], lang),
        )
    )
    if r["servers_per_rack_at_limit"] is not None:
        out.add(
            say(
                "rack_limit_fit" if r["servers_per_rack_at_limit"] else "rack_limit_none",
                lang,
                limit=f"{s['rack_limit_kw']:g}",
                per_rack=r["servers_per_rack_at_limit"],
                servers=r["servers"],
                racks=r["racks_at_limit"] or 0,
                server_kw=num(r["server_kw"]),
            )
        )
    out.add(
        assumptions_block(
            r["assumptions"], lang, ("kw_per_gpu", "load_factor", "pue", "electricity_cny_per_kwh", "servers_per_rack")
        )
    )


#: GPU-hours said as a monthly rate ("每月 200 卡时", "200 GPU-hours a month")
_PER_MONTH = re.compile(r"每月|每个月|一个月|月均|/\s*月|per month|a month|monthly|/\s*mo(?:nth)?\b", re.IGNORECASE)


def _use_rate(s: dict[str, Any], p: ParsedQuestion, args: dict[str, Any]) -> float | None:
    """ "一个月大概 200 卡时": GPU-hours over a period are how much the cards are used, so they set the hours a day
    on the cards named (else on the fewest cards that can give them), over the horizon the user gave, or the
    tool's; a one-month period is the rate's, not a horizon (nobody buys cards for one month)."""
    months = s.get("months")
    monthly = months == 1 or _PER_MONTH.search(p.text)
    if not monthly and not months:
        return None
    per_month = s["gpu_hours"] if monthly else s["gpu_hours"] / months
    n = s.get("n_gpus") or max(1, math.ceil(per_month / HOURS_PER_MONTH))
    args["n_gpus"] = n
    args["hours_per_day"] = round(min(24.0, per_month / n / HOURS_PER_MONTH * 24), 2)
    if months == 1:
        args.pop("months", None)
    return per_month


def rent_vs_buy(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    lang = out.lang
    args: dict[str, Any] = {"gpu": s["gpu"], "n_gpus": n_of(s, 8)}
    for key in ("hours_per_day", "months", "electricity_cny_per_kwh", "pue"):
        if s.get(key):
            args[key] = s[key]
    per_month = _use_rate(s, p, args) if s.get("gpu_hours") and not s.get("hours_per_day") else None
    if s.get("price_cny_per_hour"):
        args["rent_cny_per_hour"] = s["price_cny_per_hour"]
    elif s.get("price_usd_per_hour"):
        args["rent_usd_per_hour"] = s["price_usd_per_hour"]
    if s.get("purchase_price_cny"):
        args["purchase_cny"] = s["purchase_price_cny"]
    if usage.rent_or_buy_as_used(s, p, args, run, out):  # an IDC renting out, or buying for one job
        return
    try:
        r = run("rent_vs_buy", args)
    except AdvisorError as err:
        if err.field != "purchase_cny":
            raise
        _rent_side(args, per_month, run, out)  # no purchase price on file: what renting costs as used
        return
    hpd = f"{num(r['hours_per_day'])} 小时" if lang == "zh" else f"{num(r['hours_per_day'])} h"
    common = {
        "n": r["n_gpus"],
        "gpu": r["gpu"],
        "hpd": hpd,
        "months": months_label(r["months"], lang),
        "own": money(r["own_total_cny"], lang),
        "rent": money(r["rent_total_cny"], lang),
    }
    if r["cheaper"] == "buy":
        be = months_label(r["breakeven_months"], lang) if r["breakeven_months"] else "—"
        out.add(say("rvb_buy", lang, breakeven=be, **common))
    else:
        out.add(say("rvb_rent", lang, **common))
    out.add(
        say(
            "rvb_detail",
            lang,
            rent_price=rate(r["rent_cny_per_hour"], lang),
            rent_monthly=money(r["rent_monthly_cny"], lang),
            upfront=money(r["own_upfront_cny"], lang),
            own_monthly=money(r["own_monthly_cny"], lang),
        )
    )
    price_notes(s, r, "rent_cny_per_hour", out)
    if per_month:
        hpd_rate = f"{num(r['hours_per_day'])} 小时" if lang == "zh" else f"{num(r['hours_per_day'])} h"
        said = next(iter(p.mentions.get("gpu_hours", [])), f"{per_month:,.0f}")  # as the user wrote it
        out.add(say("rvb_use_rate", lang, use=said, n=r["n_gpus"], hpd=hpd_rate))
    if r.get("breakeven_hours_per_day"):
        bhpd = f"{num(r['breakeven_hours_per_day'])} 小时" if lang == "zh" else f"{num(r['breakeven_hours_per_day'])} h"
        out.add(say("rvb_breakeven_util", lang, bhpd=bhpd))
    flips = [say("rvb_flip", lang, text=f[lang]) for f in r.get("flip", [])[:3]]
    if flips:
        out.add(say("todo_header", lang) + "\n" + "\n".join(flips))
    out.add(
        assumptions_block(
            r["assumptions"],
            lang,
            (
                "electricity_cny_per_kwh",
                "pue",
                "hosting_cny_per_kw_month",
                "depreciation_years",
                "rent_cny_per_hour",
                "purchase_cny",
            ),
        )
    )


def _rent_side(args: dict[str, Any], per_month: float | None, run: ToolRun, out: Out) -> None:
    """Rent or buy with no purchase price on file: the rental bill a month at the use asked about, the buy side
    named as the gap (the user's quote fills it)."""
    lang = out.lang
    hours = HOURS_PER_MONTH * args.get("hours_per_day", 24) / 24
    cost_args: dict[str, Any] = {"gpu": args["gpu"]}
    n = args["n_gpus"]
    cost_args.update(n_gpus=n, hours=round(per_month / n if per_month else hours, 1))
    if args.get("rent_cny_per_hour"):
        cost_args["price_cny_per_hour"] = args["rent_cny_per_hour"]
    c = run("run_cost", cost_args)
    low, high = money_span(c["low_cny"], c["high_cny"], lang)
    out.add(
        say(
            "rvb_rent_only",
            lang,
            gpu=c["gpu"],
            n=args["n_gpus"],
            gpu_hours=f"{c['gpu_hours']:,.0f}",
            price=rate(c["price_cny_per_hour"], lang),
            total=money(c["total_cny"], lang),
            span=say("money_span", lang, low=low, high=high) if c["low_cny"] != c["high_cny"] else "",
            source=short_source(c["price_source"], lang),
        )
    )
