"""Serving capacity from traffic (issue 26): "客服大模型 Qwen3-32B，日活 5000，高峰并发 200，要几张卡？H20 还是 4090？".

The traffic (peak concurrency, QPS or daily users) becomes a `plan_serving` call over the cards the question names
(else the serving cards the price catalog covers); the answer is the pick and its card count first, the per-card
table, how daily users or QPS became requests in flight, the machines that hold the pick (`plan_system`), and the
assumptions. Every figure is a tool output.
"""

from __future__ import annotations

import math
import re
from typing import Any

from bot.core.toolbox import ToolRun
from bot.offline.compose.shortlist import allowed
from bot.offline.compose.systems.cards import serving_cards
from bot.offline.compose.systems.layouts import per_request_claim, per_request_correction
from bot.offline.compose.systems.people import all_at_once, as_sessions
from bot.offline.say.phrases import say
from bot.offline.say.render import Out, gb, money_span, num, pct
from bot.offline.understand.frames import DEFAULT_GPU
from bot.offline.understand.request.figures import RANGE_GAP
from bot.offline.understand.request.model import Request
from bot.offline.understand.request.reader import normalised
from tools.catalog.lookup import get_gpu, gpus
from tools.catalog.prices import prices_for
from tools.errors import AdvisorError
from tools.schemas.plan import DEFAULT_SERVING_GPUS

TRAFFIC_ROLES = ("concurrency", "qps", "daily_users")


def traffic(request: Request) -> dict[str, float]:
    """The traffic figures the question gives, by plan_serving's field names (the first of each role)."""
    out: dict[str, float] = {}
    ends: dict[str, int] = {}
    norm = normalised(request.text)
    for m in request.mentions:
        if m.role not in TRAFFIC_ROLES or not isinstance(m.value, int | float):
            continue
        value = int(m.value) if m.role != "qps" else float(m.value)
        if m.role not in out:
            out[m.role] = value
        elif re.fullmatch(RANGE_GAP, norm[ends[m.role] : m.start]):  # "300–500 QPS": sized for the peak end
            out[m.role] = max(out[m.role], value)
        ends[m.role] = m.end
    return out


#: plan_serving's defaults for a request's lengths (tools/schemas/plan.py), used when only a window is given
DEFAULT_OUTPUT = 300


def lengths(request: Request) -> dict[str, int]:
    """The request lengths the question states, by plan_serving's field names: a prompt and an output length as
    given; a context length alone ("32k context") is the prompt plus the output, so the prompt is the length less
    the output (the default output when none is given) and the KV cache is sized for it; a context *window* ("a full
    context window of 128k", "128k 上下文窗口") is what each request may hold in the KV cache (`context_tokens`: memory
    and each decode step's reads are sized for it) while a request prefills only its new prompt, the earlier turns
    kept by prefix caching (the prompt stays the tool's default)."""
    first: dict[str, int] = {}
    for m in request.mentions:
        if m.role in ("prompt_len", "output_len", "context_len", "seq_len") and isinstance(m.value, int | float):
            if m.value >= 1:
                first.setdefault(m.role, int(m.value))
    out: dict[str, int] = {}
    if "output_len" in first:
        out["output_tokens"] = min(first["output_len"], 100_000)
    window = first.get("context_len") or first.get("seq_len")
    if "prompt_len" in first:
        out["prompt_tokens"] = min(first["prompt_len"], 1_000_000)
    elif window and WINDOW.search(request.parsed.text or ""):
        out["context_tokens"] = min(window, 1_000_000)
    elif window:
        output = out.get("output_tokens", DEFAULT_OUTPUT)
        out["prompt_tokens"] = min(max(window - output, 1), 1_000_000)
    return out


#: the context named as a window, the most a conversation holds (not each request's length)
WINDOW = re.compile(r"context window|full context|上下文窗口|完整上下文|满上下文|全上下文", re.I)


#: the most domestic cards compared when the question asks for domestic ones only
DOMESTIC_CANDIDATES = 6


def targets(request: Request) -> tuple[dict[str, float], list[str]]:
    """The latency and speed targets the question states, by plan_serving's field names, and the user's own words
    for each (quoted in the answer: a TTFT given in ms reaches the tool in seconds)."""
    out: dict[str, float] = {}
    said: list[str] = []
    for m in request.mentions:
        if not isinstance(m.value, int | float) or m.value <= 0:
            continue
        if m.role == "ttft_target" and "ttft_s" not in out:
            ms = bool(re.search(r"ms|毫秒", m.text, re.I))
            out["ttft_s"] = m.value / 1000 if ms else float(m.value)
            said.append(m.text)
        elif m.role == "speed_target" and "tokens_per_s_per_user" not in out:
            out["tokens_per_s_per_user"] = float(m.value)
            said.append(m.text)
    return out, said


def _gpus(s: dict[str, Any]) -> list[str]:
    named = list(dict.fromkeys(s.get("gpus") or ([s["gpu"]] if s.get("gpu") else [])))
    if s.get("domestic_only"):  # 国产化: Chinese-made accelerators only (priced ones first)
        named = [g for g in named if get_gpu(g).domestic]
        if not named:
            named = allowed(s, [g.id for g in _domestic()])
    return named or allowed(s, DEFAULT_SERVING_GPUS) or list(DEFAULT_SERVING_GPUS)


def _domestic() -> list[Any]:
    """Chinese-made datacenter accelerators with a bandwidth figure, priced ones first, then the fastest."""
    ranked = sorted(
        (g for g in gpus() if g.domestic and g.bandwidth_gb_s and g.segment == "datacenter"),
        key=lambda g: (prices_for(g) is None, -(g.bandwidth_gb_s or 0)),
    )
    return ranked[:DOMESTIC_CANDIDATES]


def _cell(x: float | None, digits: int = 2) -> str:
    return "—" if x is None else f"{x:,.{digits}f}"


def serving_plan(s: dict[str, Any], request: Request, run: ToolRun, out: Out) -> None:
    lang = out.lang
    given = traffic(request)
    gpus = _gpus(s)
    wanted, said = targets(request)
    args: dict[str, Any] = {"model": s["model"], "gpus": gpus, **given, **wanted, **lengths(request)}
    if s.get("hours_per_day"):  # owned cards' cost at the hours a day they will be busy, as the user said
        args["hours_per_day"] = min(float(s["hours_per_day"]), 24.0)
    if s.get("precision") in ("bf16", "fp16", "fp8", "int8", "int4"):
        args["precision"] = s["precision"]
    if lang == "zh" or s.get("china_only"):  # a mainland purchase: the pick is a card that can be bought there
        args["china_purchasable"] = True
    if claim := per_request_claim(request):  # "单次推理需要 13G，80G 是不是只能 8 个": weights once, KV per request
        named = s.get("gpus") or ([s["gpu"]] if s.get("gpu") else [])
        per_request_correction(s, claim, named[0] if named else DEFAULT_GPU, run, out)
    sessions = as_sessions(request, args)  # people who each keep a window: that many sessions at once
    r = run("plan_serving", args)
    cands = r["candidates"]
    if said:
        out.add(say("targets_said", lang, said="、".join(said) if lang == "zh" else ", ".join(said)))
    pick = next((c for c in cands if f"{c['gpu']} {c['precision']}" == r["pick"]), None)
    if pick is None:
        sep = "、" if lang == "zh" else ", "
        unmet = sep.join(say(f"unmet_{u}", lang).strip() for u in r["unmet"]) or "—"
        timed = [c for c in cands if c["ttft_s"] is not None]
        near = min(timed, key=lambda c: (len(c["unmet"]), c["ttft_s"])) if timed else None
        nearest = (
            say(
                "serving_nearest",
                lang,
                gpu=near["gpu"],
                precision=near["precision"],
                tp=near["gpus_per_replica"],
                ttft=_cell(near["ttft_s"]),
                tps=_cell(near["tokens_per_s_per_user"], 1),
            ).strip()
            if near
            else "—"
        )
        out.add(say("serving_none", lang, unmet=unmet, nearest=nearest))
    else:
        out.add(
            say(
                "plan_serving_pick",
                lang,
                gpu=pick["gpu"],
                precision=pick["precision"],
                n=pick["n_gpus"],
                replicas=pick["replicas"],
                tp=pick["gpus_per_replica"],
                concurrency=num(r["concurrency"]),
                prompt=f"{r['prompt_tokens']:,}",
                output=f"{r['output_tokens']:,}",
                ttft=num(r["ttft_s"]),
                tps=num(r["tokens_per_s_per_user"]),
                headroom=pct(r["headroom"]),
            )
        )
        kind = r["pick_reason"].removeprefix("lowest_").removesuffix("_cost")
        if kind in ("own", "rent"):
            cost = pick["cny_per_million_tokens"][kind]
            out.add(say("serving_why_pick", lang, basis=say(f"basis_{kind}", lang).strip(), cost=_cell(cost)))
        else:
            out.add(say("serving_why_fewest", lang))
    if pick is not None:  # the default latency target that sets the count, next to the count
        _relaxed(r, pick, wanted, args, run, out)
    if r.get("context_tokens"):  # a window each request holds: its memory in GB, and what a request prefills
        _window(s, r, run, out)
    vague = [m.text for m in request.mentions if m.role == "tokens"]
    if vague and not lengths(request):  # "passing 3000k tokens": per request, per second or per day is not said
        sep = "、" if lang == "zh" else ", "
        out.add(
            say(
                "tokens_ambiguous",
                lang,
                said=sep.join(f"“{t}”" for t in dict.fromkeys(vague)),
                prompt=f"{r['prompt_tokens']:,}",
                output=f"{r['output_tokens']:,}",
            )
        )
    rows = [say("serving_table_header", lang)]
    for c in cands:
        if c["gpus_per_replica"] is None:
            rows.append(say("serving_row_unfit", lang, gpu=c["gpu"], precision=c["precision"], note=c["note"]))
            continue
        rows.append(
            say(
                "serving_row",
                lang,
                gpu=c["gpu"],
                precision=c["precision"],
                tp=c["gpus_per_replica"],
                batch=c["batch_per_replica"],
                replicas=c["replicas"],
                n=c["n_gpus"],
                limited=_limited(c, lang),
                ttft=_cell(c["ttft_s"]),
                tps=_cell(c["tokens_per_s_per_user"], 1),
                rent=_cell(c["cny_per_million_tokens"]["rent"]),
                own=_cell(c["cny_per_million_tokens"]["own"]),
            )
        )
    out.add("\n".join(rows))
    stated = bool(lengths(request))  # the floor at the question's lengths, else at the shortlist's stated window
    length = (r["prompt_tokens"], r["output_tokens"])
    if r.get("context_tokens"):  # a window held per request: the cards that hold it are sized for the window
        length = (r["context_tokens"] - r["output_tokens"], r["output_tokens"])
    serving_cards(s, r["concurrency"], sum(length) if stated else None, run, out, pick, length)
    if pick is not None and pick["max_batch_per_replica"]:
        out.add(
            say(
                "scale_line",
                lang,
                tp=pick["gpus_per_replica"],
                gpu=pick["gpu"],
                mem=f"{pick['max_batch_per_replica']:,}",
                load=f"{pick['batch_per_replica']:,}",
            )
        )
    if sessions:  # people who each keep a window, planned as that many sessions: the reading said
        out.add(say("people_sessions", lang, users=f"{sessions:,}", window=f"{args['context_tokens']:,}"))
    elif not all_at_once(request, r, pick, args, run, out):  # a count of people: its reading said, with the bound
        _traffic_lines(r, given, args, run, out)
    restricted = sorted({c["gpu"] for c in cands if c["export_restricted"]})
    if restricted:
        out.add(say("restricted_note", lang, gpus="、".join(restricted) if lang == "zh" else ", ".join(restricted)))
    if pick is not None:
        _machines(s, {**given, **wanted, **lengths(request)}, pick, run, out)
    out.add(say("serving_assumptions", lang, hours=num(24)))


def _limited(c: dict, lang: str) -> str:
    """What limits a candidate; one that misses a target says which (its count is the nearest it gets)."""
    if c["unmet"]:
        sep = "、" if lang == "zh" else ", "
        return say("row_unmet", lang, unmet=sep.join(say(f"unmet_{u}", lang).strip() for u in c["unmet"])).strip()
    return say(f"limited_{c['limited_by']}", lang).strip()


#: the first-token target tried when the default one (not the user's) is what sets the pick's count
RELAXED_TTFT_S = 5.0


def _relaxed(r: dict, pick: dict, wanted: dict, args: dict, run: ToolRun, out: Out) -> None:
    """The pick's count is set by the default first-token target (long prompts on a card with little compute): the
    same card planned at a looser target the user may accept, so the answer shows what the default costs."""
    if "ttft_s" in wanted or pick["limited_by"] != "latency" or r["ttft_s"] >= RELAXED_TTFT_S:
        return
    try:
        loose = run(
            "plan_serving", {**args, "gpus": [pick["gpu"]], "precision": pick["precision"], "ttft_s": RELAXED_TTFT_S}
        )
    except AdvisorError:
        return
    c = next((c for c in loose["candidates"] if c["meets_targets"]), None)
    if c is None or c["n_gpus"] >= pick["n_gpus"]:
        return
    out.add(
        say(
            "ttft_relaxed",
            out.lang,
            ttft=num(r["ttft_s"]),
            gpu=pick["gpu"],
            precision=pick["precision"],
            n=pick["n_gpus"],
            loose=num(loose["ttft_s"]),
            loose_n=c["n_gpus"],
            loose_ttft=_cell(c["ttft_s"]),
        )
    )


def _traffic_lines(r: dict, given: dict, args: dict, run: ToolRun, out: Out) -> None:
    """How the traffic became requests in flight: daily users beside a concurrency are converted too (a second
    plan_serving call), so both figures are shown."""
    lang = out.lang
    rpu = next((a["value"] for a in r["assumptions"] if a["key"] == "requests_per_user"), None)
    peak = next((a["value"] for a in r["assumptions"] if a["key"] == "peak_factor"), None)
    if r["traffic_source"] == "daily_users":
        out.add(
            say(
                "daily_users_used",
                lang,
                users=f"{given['daily_users']:,}",
                rpu=num(rpu),
                peak=num(peak),
                qps=num(r["qps"], 2),
                derived=num(r["concurrency"]),
            )
        )
    elif r["traffic_source"] == "qps":
        duration = next((a["value"] for a in r["assumptions"] if a["key"] == "request_duration_s"), None)
        out.add(say("qps_used", lang, qps=num(r["qps"], 2), duration=num(duration), derived=num(r["concurrency"])))
    if r["traffic_source"] == "concurrency" and "daily_users" in given:
        other = run(
            "plan_serving", {"model": args["model"], "gpus": args["gpus"][:1], "daily_users": given["daily_users"]}
        )
        a = {x["key"]: x["value"] for x in other["assumptions"]}
        out.add(
            say(
                "daily_users_check",
                lang,
                users=f"{given['daily_users']:,}",
                rpu=num(a["requests_per_user"]),
                peak=num(a["peak_factor"]),
                derived=num(other["concurrency"]),
                concurrency=num(r["concurrency"]),
            )
        )


def cheapest_meeting(plan: dict) -> dict | None:
    """The machines a plan_system output is shown as: the cheapest priced option that meets the ask."""
    priced = [o for o in plan["options"] if o["total_low_cny"] is not None and o["meets"]]
    return min(priced, key=lambda o: (o["total_low_cny"], o["servers"][0]["nodes"])) if priced else None


def _machines(s: dict, given: dict, pick: dict, run: ToolRun, out: Out) -> None:
    """The servers that hold the pick, from plan_system (the platforms of that card)."""
    lang = out.lang
    try:
        sysr = run(
            "plan_system", {"job": "serve", "model": s["model"], "platforms": [get_gpu(pick["gpu"]).id], **given}
        )
    except AdvisorError:
        return
    if (o := cheapest_meeting(sysr)) is None:
        return
    server = o["servers"][0]
    low, high = money_span(o["total_low_cny"], o["total_high_cny"], lang)
    rack_kw = next((a["value"] for a in sysr["assumptions"] if a["key"] == "rack_kw"), None)
    out.add(
        say(
            "serving_machines",
            lang,
            nodes=server["nodes"],
            platform=server["name"],
            gpus=o["n_gpus"],
            low=low,
            high=high,
            kw=num(o["power_kw"]),
            rack_kw=num(rack_kw),
            racks=o["racks"],
        )
    )
    if pick.get("n_gpus") and pick["n_gpus"] < o["n_gpus"]:  # a whole server for a plan of fewer cards: said so
        out.add(say("serving_machines_partial", lang, need=pick["n_gpus"], gpus=o["n_gpus"]))


def _window(s: dict[str, Any], r: dict[str, Any], run: ToolRun, out: Out) -> None:
    """The memory of the requests in flight at their window (weights once, the KV cache per request), in GB."""
    n = max(1, math.ceil(r["concurrency"] - 1e-9))
    args = {"model": s["model"], "context_len": r["context_tokens"], "batch": n}
    if s.get("precision") in ("bf16", "fp16", "fp8", "int8", "int4"):
        args["precision"] = s["precision"]
    try:
        m = run("model_memory", args)
    except AdvisorError:
        return
    out.add(say("serving_window", out.lang, ctx=f"{r['context_tokens']:,}", prompt=f"{r['prompt_tokens']:,}",
                weights=gb(m["weights_gb"]), precision=m["precision"], kv=gb(m["kv_cache_gb_per_request"]), n=n,
                kv_all=gb(m["kv_cache_gb"]), total=gb(m["serving_gb"]), kv_precision=m["kv_precision"]))  # fmt: skip
