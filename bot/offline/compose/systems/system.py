"""Machines for a job and a budget (issue 26): "预算 200 万，做 7B 到 14B 的微调，怎么配？", "20 万搭一台跑 Qwen2.5-72B
推理的机器".

`plan_system` gives complete options per server platform; the answer is the options side by side (servers, cards,
hours or per-user speed, price range, power, racks), the cheapest / fastest / best value (or why they coincide),
the bill of materials of the best-value option, what was left out and why, and the assumptions. Every figure is a
tool output.
"""

from __future__ import annotations

import re
from typing import Any

from bot.core.toolbox import ToolRun
from bot.offline.compose.shortlist import excluded
from bot.offline.compose.systems import rl
from bot.offline.compose.systems.capacity import lengths, traffic
from bot.offline.compose.systems.cards import serving_cards, training_cards
from bot.offline.compose.systems.people import reading_in_plan
from bot.offline.compose.toolargs import budget_said, foreign_budget, rate
from bot.offline.say.phrases import say
from bot.offline.say.render import Out, count, duration, method_label, money, money_span, num
from bot.offline.understand.request.model import Request
from tools.catalog.lookup import get_model
from tools.catalog.servers import platforms
from tools.errors import AdvisorError
from tools.schemas.plan import PlanSystemInput

#: the words that ask for machines rather than for cards or rented hours ("怎么配", "搭一台", "买服务器")
MACHINE_CUES = re.compile(
    r"怎么配|如何配|配置|配什么|搭(?:一|建|个)|整机|服务器|机器|采购|买什么|买哪|怎么买|方案|组网|集群|"
    r"\bbuild\b|\bservers?\b|\bmachines?\b|what (?:should|to) (?:we |i )?buy|purchase|cluster",
    re.I,
)
#: the concurrency a serving machine is planned for when the question gives no traffic (said in the answer)
DEFAULT_CONCURRENCY = 10


#: a personal build ("build a PC", "配一台电脑"): the cards a budget buys (recommend_gpus), not servers
_PERSONAL = re.compile(r"\bpcs?\b|desktop|workstation|gaming rig|home ?lab|电脑|台式机|工作站|个人主机", re.I)


def wants_machines(text: str) -> bool:
    return bool(MACHINE_CUES.search(text)) and not _PERSONAL.search(text)


#: intents whose question, given traffic or a budget for machines, is a capacity or system plan
SYSTEM_INTENTS = frozenset(
    {
        "min_gpus",
        "fit",
        "speed",
        "serving_capacity",
        "recommend_serving",
        "recommend",
        "build_budget",
        "cost",
        "compare",
    }
)


#: what makes a question with traffic a capacity plan rather than a check of the user's own setup
PLAN_INTENTS = frozenset({"min_gpus", "serving_capacity", "recommend_serving", "recommend", "build_budget", "compare"})
PLAN_ASKS = frozenset({"min_count", "choose", "config"})


def route(intent: str, s: dict[str, Any], request: Request, text: str):
    """The composer of a question about serving traffic or machines within a budget, else None (the frame's).

    A count of cards the user has ("用 2 张 H20 放得下吗", "一张 L20 上并发 64 呢") is a check of that setup and
    stays with its frame, unless the question asks how many cards its traffic needs; so do questions that ask
    neither for a count, a choice nor a configuration."""
    if rl.applies(intent, s, request):  # "train deepseek r1 671b using grpo": the RL run's pools and servers
        return rl.rl_plan
    given = traffic(request)
    # a population's traffic (QPS, daily users) asks what serves it, whatever words carry the question ("QPS：
    # 300–500，不用 H100，成本尽量低"), even beside cards of the user's own ("with 8 A100 … for 10 000 users")
    sized = bool({"qps", "daily_users"} & set(given))
    count_for_traffic = bool(given) and ("min_count" in request.asks or sized)  # "how many GPUs for 100 users"
    if not s.get("model") or intent not in SYSTEM_INTENTS or (s.get("n_gpus") and not count_for_traffic):
        return None
    if intent not in PLAN_INTENTS and not PLAN_ASKS & set(request.asks) and not sized:
        return None
    training = trains(s, request)
    budgeted = bool(
        s.get("budget_cny") or s.get("budget_usd") or s.get("budget_eur") or s.get("deadline_hours")
    )  # "$50,000 for servers"
    if given and not training:
        if budgeted and wants_machines(text):
            return system_plan
        from bot.offline.compose.systems.capacity import serving_plan

        return serving_plan
    if budgeted and wants_machines(text):
        return system_plan
    return None


def trains(s: dict[str, Any], request: Request) -> bool:
    """Whether the job is a training run. The user's own words decide ("微调", "LoRA"); a population's traffic
    (QPS, daily users, "200 名员工要用") with no training word is a service to run, whatever the frame's default
    job ("公司 200 名员工要用 Qwen2.5-32B，买什么服务器" is not a fine-tuning run); else the frame's job stands."""
    p = request.parsed
    if p.workload in ("train", "finetune", "pretrain") or p.method:
        return True
    if p.workload == "infer" or {"qps", "daily_users"} & set(traffic(request)):
        return False
    return s.get("workload") in ("train", "finetune") or bool(s.get("method"))


def plans_without_model(intent: str, s: dict[str, Any], request: Request) -> bool:
    """Whether a question that names no model is still planned (on the default model, said): it gives traffic
    (concurrency, QPS, daily users) and asks what serves it, with no cards of its own and no model name we do not
    know. The model changes the count, so the answer says which one it assumed and how to change it."""
    given = traffic(request)
    own = s.get("n_gpus") and not {"qps", "daily_users"} & set(given)  # a concurrency on the user's cards: a check
    if own or request.parsed.unknown_models or request.parsed.models:
        return False
    training = trains(s, request)
    asks = PLAN_INTENTS | {"serving_capacity"}
    machines = intent in SYSTEM_INTENTS and wants_machines(request.text)  # "200 人并发 100，选购什么规格的服务器"
    return bool(given) and not training and (intent in asks or bool(PLAN_ASKS & set(request.asks)) or machines)


def planned_without(planned, s: dict[str, Any], request: Request) -> tuple[str, ...]:
    """The frame's defaults a plan does not use, so none is assumed or said: the card and the count (it compares
    cards itself); a service to run takes no training tokens or default job ("200 名员工要用…" is not a 1B-token
    fine-tune); an RL run is sized, not timed on a token count."""
    if planned is rl.rl_plan:
        return ("gpu", "n_gpus", "tokens")
    if not trains(s, request):  # machines to serve with ("预算 20 万买服务器跑 72B") take no tokens either
        return ("gpu", "n_gpus", "tokens") if planned is system_plan else ("gpu", "n_gpus", "tokens", "workload")
    return ("gpu", "n_gpus")


def plans_without_budget(s: dict[str, Any], request: Request) -> bool:
    """Whether a buying question that states no budget is still planned: a model and the traffic of the people
    who will use it ("50 employees will use Llama-3.1-8B, which servers should we buy?") size the machines; the
    budget would only bound them."""
    return bool(s.get("model")) and bool(traffic(request)) and not trains(s, request)


def follow_ups(planned, lang: str) -> list[str]:
    """What a buyer asks next after a system plan, as a reply the dialogue answers (a domestic-only variant); a
    capacity plan offers none yet: its traffic is not carried into the next turn."""
    return say("follow_system", lang).split("|") if planned is system_plan else []


def largest_model(s: dict[str, Any], names: list[str]) -> str:
    """A range of models ("7B 到 14B"): the machines are sized for the largest of them."""
    best, size = s["model"], 0.0
    for name in [s["model"], *names]:
        try:
            b = get_model(name).params_b
        except AdvisorError:
            continue
        if b > size:
            best, size = name, b
    return best


def system_plan(s: dict[str, Any], request: Request, run: ToolRun, out: Out) -> None:
    lang = out.lang
    serve = s.get("workload") == "infer" or not trains(s, request)
    job = "serve" if serve else ("train" if s.get("workload") == "train" else "finetune")
    model = largest_model(s, request.parsed.models)
    args: dict[str, Any] = {"job": job, "model": model}
    for key in ("budget_cny", "deadline_hours"):
        if s.get(key):
            args[key] = s[key]
    if given := foreign_budget(s):  # a budget in dollars or euros: in 元 at the stated rate, said
        args["budget_cny"] = round(given[0] * rate(given[1]))
    if s.get("method") in ("full", "lora", "qlora") and job != "serve":
        args["method"] = s["method"]
    if s.get("tokens") and job != "serve":
        args["tokens"] = s["tokens"]
    if s.get("domestic_only"):
        args["domestic"] = True
    if s.get("gpus") or s.get("gpu"):
        args["platforms"] = list(dict.fromkeys(s.get("gpus") or [s["gpu"]]))
    elif s.get("excluded"):  # "不用 H100": every platform but those of the ruled-out cards (the tool takes 12)
        args["platforms"] = [p.id for p in platforms() if not excluded(s, p.gpu)][:12]
    nodes = [m.value for m in request.mentions if m.role == "nodes" and isinstance(m.value, int | float)]
    if nodes:  # "搭一台": the machines are at most that many servers
        args["max_nodes"] = int(nodes[0])
    defaulted_traffic = False
    if job == "serve":
        args.update(traffic(request))
        args.update(lengths(request))
        if not any(k in args for k in ("concurrency", "qps", "daily_users")):
            args["concurrency"], defaulted_traffic = DEFAULT_CONCURRENCY, True
    r = run("plan_system", args)
    _header(r, args, lang, out, given)
    if defaulted_traffic:
        out.add(say("serve_default_traffic", lang, concurrency=DEFAULT_CONCURRENCY))
    reading_in_plan(request, r, out)  # "给 100 人用": the people read as daily users, said
    _table(r, args, lang, out)
    _picks(r, lang, out)
    if job == "serve":  # the cards side by side at the traffic planned for (the plan's lengths)
        flight = args.get("concurrency") or next(
            (o["capacity"]["concurrency"] for o in r["options"] if (o["capacity"] or {}).get("concurrency")), None
        )
        stated = "prompt_tokens" in args or "output_tokens" in args or "context_tokens" in args
        if flight:
            context = _length("prompt_tokens", args) + _length("output_tokens", args) if stated else None
            context = max(context or 0, args.get("context_tokens") or 0) or None  # a window held per request
            serving_cards(s, flight, context, run, out)
    else:
        training_cards(s, args, run, out)
    best = next((o for o in r["options"] if o["label"] == (r["best_value"] or r["cheapest"])), None)
    if best is not None:
        _bom(best, lang, out)
    restricted = [x.split(":")[0] for x in r["skipped"] if "not purchasable" in x]
    if restricted:
        out.add(say("skipped_restricted", lang, names=", ".join(restricted)))
    host = next((a for a in r["assumptions"] if a["key"] == "price_basis"), None)
    rack_kw = next((a["value"] for a in r["assumptions"] if a["key"] == "rack_kw"), None)
    share = _host_share(r)
    if host is not None and share is not None:
        out.add(say("system_assumptions", lang, host=money(share, lang), rack_kw=num(rack_kw)))


def _length(key: str, args: dict) -> int:
    """A request length of the plan: the question's, else plan_system's default."""
    return int(args.get(key) or PlanSystemInput.model_fields[key].default)


def _host_share(r: dict) -> float | None:
    """The host share per card the BOM used (its line's source names it)."""
    for o in r["options"]:
        for line in o["bom"]:
            if "host share" in line["item"]:
                return _share_from_source(line["source"])
    return None


def _share_from_source(source: str) -> float | None:
    m = re.search(r"host_share_cny_per_gpu ([\d.]+)", source)
    return float(m.group(1)) if m else None


def _header(r: dict, args: dict, lang: str, out: Out, given: tuple[float, str] | None = None) -> None:
    method = next((a["value"] for a in r["assumptions"] if a["key"] == "method"), None)
    tokens = next((a["value"] for a in r["assumptions"] if a["key"] == "tokens"), None)
    if r["job"] == "serve":
        # the requests in flight planned for: as given, else what the daily users or QPS came to in the plan
        flight = args.get("concurrency") or next(
            (o["capacity"]["concurrency"] for o in r["options"] if (o.get("capacity") or {}).get("concurrency")), None
        )
        job = say("job_serve", lang, concurrency=num(flight) if flight else "—")
    else:
        job = say(f"job_{r['job']}", lang, method=method_label(method, lang).strip(), tokens=count(tokens))
    if args.get("budget_cny"):
        out.add(
            say("system_header", lang, job=job, model=r["model"], budget=budget_said(given, args["budget_cny"], lang))
        )
    elif args.get("deadline_hours"):
        out.add(
            say(
                "system_header_deadline",
                lang,
                job=job,
                model=r["model"],
                deadline=duration(args["deadline_hours"], lang),
            )
        )
    else:
        out.add(say("system_header_plain", lang, job=job, model=r["model"]))


def _what(o: dict, lang: str) -> str:
    if o["hours"] is not None:
        return duration(o["hours"], lang)
    cap = o["capacity"] or {}
    if cap.get("tokens_per_s_per_user") is not None:
        return (
            f"{cap['tokens_per_s_per_user']:,.1f}（{cap['precision']}）"
            if lang == "zh"
            else (f"{cap['tokens_per_s_per_user']:,.1f} ({cap['precision']})")
        )
    return "—"


def _price(o: dict, lang: str) -> str:
    if o["total_low_cny"] is None:
        return say("price_unknown", lang).strip()
    low, high = money_span(o["total_low_cny"], o["total_high_cny"], lang)
    over = say("over_budget", lang) if "budget" in o["unmet"] else ""
    return f"{low}–{high}{over}"


def _table(r: dict, args: dict, lang: str, out: Out) -> None:
    if not r["options"]:
        return
    what = say("what_hours" if r["job"] != "serve" else "what_capacity", lang).strip()
    rows = [say("system_table_header", lang, what=what)]
    for o in r["options"]:
        server = o["servers"][0]
        rows.append(
            say(
                "system_row",
                lang,
                label=o["label"],
                server=server["name"],
                nodes=server["nodes"],
                gpus=o["n_gpus"],
                what=_what(o, lang),
                price=_price(o, lang),
                kw=num(o["power_kw"]),
                racks=o["racks"],
            )
        )
    out.add("\n".join(rows))


def _picks(r: dict, lang: str, out: Out) -> None:
    by = {o["label"]: o for o in r["options"]}
    if r["cheapest"] is None:
        unmet = sorted({u for o in r["options"] for u in o["unmet"]})
        priced = [o for o in r["options"] if o["total_low_cny"] is not None and "fit" not in o["unmet"]]
        if priced:
            o = min(priced, key=lambda o: (o["total_low_cny"], o["servers"][0]["nodes"]))
            nearest = say(
                "system_nearest",
                lang,
                label=o["label"],
                nodes=o["servers"][0]["nodes"],
                server=o["servers"][0]["name"],
                price=_price(o, lang),
            ).strip()
        else:
            nearest = "—"
        reasons = (
            "、".join(say(f"unmet_{u}", lang).strip() for u in unmet)
            if lang == "zh"
            else ", ".join(say(f"unmet_{u}", lang).strip() for u in unmet)
        )
        out.add(say("system_none", lang, unmet=reasons or "—", nearest=nearest))
        return
    best = by[r["best_value"]]
    if r["cheapest"] == r["fastest"] == r["best_value"]:  # one option three times: one line that says why
        reason = "coincide_only" if "only_one_option_meets" in r["coincide"] else "coincide_both"
        out.add(
            say(
                "pick_all_same",
                lang,
                label=r["best_value"],
                price=_price(best, lang),
                what=_what(best, lang),
                why=say(reason, lang).strip(),
            )
        )
        return
    lines = [
        say("pick_cheapest", lang, label=r["cheapest"], price=_price(by[r["cheapest"]], lang)),
        say("pick_fastest", lang, label=r["fastest"], what=_what(by[r["fastest"]], lang)),
    ]
    if r["job"] == "serve" and (best["capacity"] or {}).get("cny_per_million_tokens_own") is not None:
        why = say("why_best_serve", lang, cost=f"{best['capacity']['cny_per_million_tokens_own']:,.2f}")
    elif r["job"] == "serve":
        why = say("why_best_cheapest", lang)
    else:
        why = say("why_best_train", lang)
    lines.append(say("pick_best", lang, label=r["best_value"], why=why.strip()))
    out.add("\n".join(lines))
    if "cheapest=fastest" in r["coincide"]:
        reason = "coincide_only" if "only_one_option_meets" in r["coincide"] else "coincide_both"
        out.add(say("coincide_note", lang, why=say(reason, lang).strip()))


def _bom(o: dict, lang: str, out: Out) -> None:
    rows = [say("bom_header", lang, label=o["label"])]
    for line in o["bom"]:
        low = money(line["low_cny"], lang) if line["low_cny"] is not None else "—"
        high = money(line["high_cny"], lang) if line["high_cny"] is not None else "—"
        rows.append(say("bom_row", lang, item=line["item"], qty=line["qty"], low=low, high=high))
    out.add("\n".join(rows))
    if o["network"]:
        n = o["network"]
        out.add(
            say(
                "network_line",
                lang,
                ports=n["ports"],
                gbps=num(n["gbps"]),
                kind=n["kind"],
                switches=n["switches"],
                tiers=n["tiers"],
            )
        )
