"""The offline planner's composers: one per intent, each calling tools and filling templates.

Every figure written here is a tool output (formatted, never computed), so grounding finds it.
"""

from __future__ import annotations

import re
from typing import Any

from bot.offline.parse import ParsedQuestion
from bot.offline.phrases import say
from bot.offline.render import (
    PART_NAMES,
    Out,
    assumptions_block,
    breakdown_table,
    count,
    duration,
    excerpt,
    gb,
    method_label,
    money,
    months_label,
    num,
    pct,
    rate,
)
from bot.toolbox import ToolRun
from tools.catalog import get_gpu
from tools.errors import AdvisorError

MANY_GPUS = 64  # beyond this, "add GPUs" is not a useful suggestion next to a settings change
def compose(intent: str, s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    if p.unknown_gpus or p.unknown_models:
        unknown_names(p, run, out)
        if (p.unknown_gpus and not s.get("gpu")) or (p.unknown_models and not s.get("model")) or intent in (
                "knowledge", "out_of_scope", "specs"):
            return
    handler = {
        "fit": _fit, "min_gpus": _fit, "time": _time, "cost": _cost, "rent_vs_buy": _rent_vs_buy,
        "compare": _compare, "recommend": _recommend, "speed": _speed, "specs": _specs,
        "knowledge": _knowledge, "out_of_scope": _out_of_scope, "greeting": _greeting, "price_claim": _price_claim,
    }.get(intent, _knowledge)
    if intent == "min_gpus":
        handler = _min_gpus
    handler(s, p, run, out)


def unknown_names(p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    """Unknown GPU and model names with the closest catalog names (from the tools' own errors)."""
    for name in p.unknown_gpus:
        try:
            run("gpu_specs", {"gpu": name})
        except AdvisorError as err:
            out.add(say("unknown_name", out.lang, message=err.message(out.lang)))
    for name in p.unknown_models:
        if p.models:
            continue  # the size it carries was resolved to a generic model
        try:
            run("fit_inference", {"model": name, "gpu": "a100-sxm4-80gb"})
        except AdvisorError as err:
            out.add(say("unknown_name", out.lang, message=err.message(out.lang)))


def _n(s: dict[str, Any], default: int) -> int:
    """The GPU count the user gave (even an impossible 0, so the calculator can say so), else a default."""
    return default if s.get("n_gpus") is None else s["n_gpus"]


def _training_args(s: dict[str, Any]) -> dict[str, Any]:
    method = s.get("method") or "full"
    args: dict[str, Any] = {"model": s["model"], "gpu": s["gpu"], "method": method, "n_gpus": _n(s, 1)}
    for key in ("precision", "seq_len", "micro_batch", "zero_stage"):
        if s.get(key) is not None:
            args[key] = s[key]
    if args.get("precision") in ("int8", "int4", "nf4", "tf32"):
        args.pop("precision")
    if s.get("offload"):
        args["offload"] = "optimizer+params" if s["offload"] == "param" else "optimizer"
    return args


def _is_inference(s: dict[str, Any]) -> bool:
    return s.get("workload") == "infer"


def _fit(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    if _is_inference(s):
        _fit_infer(s, run, out)
        return
    lang = out.lang
    r = run("fit_training", _training_args(s))
    label = method_label(r["method"], lang)
    common = {"method_label": label, "model": r["model"], "n": r["n_gpus"], "gpu": r["gpu"], "zero": r["zero_stage"],
              "need": gb(r["per_gpu_gb"]), "usable": gb(r["usable_gb"])}
    if r["fits"]:
        out.add(say("fit_train_yes", lang, headroom=gb(r["headroom_gb"]), **common))
    else:
        out.add(say("fit_train_no", lang, short=gb(r["shortfall_gb"]), **common))
    if r.get(f"default_note_{lang}"):  # a default (checkpointing) decided the verdict: say so in one line
        out.add(r[f"default_note_{lang}"])
    out.add(breakdown_table(r, lang))
    if not r["fits"]:
        part = max(r["breakdown_gb"], key=lambda k: r["breakdown_gb"][k])
        out.add(say("why_largest", lang, part=PART_NAMES[lang][part], part_gb=gb(r["breakdown_gb"][part]),
                    bpp=num(r["bytes_per_param_states"]), trainable=count(r["trainable_params_b"] * 1e9)))
    todo = []
    near = [x for x in r["suggestions"] if x["change"] != "more_gpus" or x["n_gpus"] <= MANY_GPUS]
    for sug in near[:4]:
        todo.append(say("suggestion", lang, text=sug[f"description_{lang}"], need=gb(sug["per_gpu_gb"]),
                        n=sug["n_gpus"], gpu=sug["gpu"]))
    shown_more = any(x["change"] == "more_gpus" for x in near[:4])
    if r["min_gpus"] and r["min_gpus"] != r["n_gpus"] and not shown_more and (r["min_gpus"] <= MANY_GPUS or not near):
        todo.append(say("min_gpus_train", lang, n=r["min_gpus"], gpu=r["gpu"], zero=r["min_gpus_zero_stage"]))
    elif not r["min_gpus"]:
        todo.append(say("min_gpus_none", lang))
    if r["host_ram_gb"]:
        todo.append(say("host_ram", lang, ram=gb(r["host_ram_gb"])))
    if todo:
        out.add(say("todo_header", lang) + "\n" + "\n".join(todo))
    out.add(assumptions_block(r["assumptions"], lang))


def _min_gpus(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    """“How many GPUs?”: find the minimum, then show the fit at that count."""
    if _is_inference(s):
        probe = run("fit_inference", _serving_args(s))
        if probe["min_gpus"] and probe["min_gpus"] != probe["n_gpus"]:
            s = {**s, "n_gpus": probe["min_gpus"]}
        _fit_infer(s, run, out)
        return
    probe = run("fit_training", _training_args(s))
    if probe["min_gpus"] and probe["min_gpus"] != probe["n_gpus"]:
        s = {**s, "n_gpus": probe["min_gpus"], "zero_stage": probe["min_gpus_zero_stage"]}
    _fit(s, p, run, out)


def _serving_extra(s: dict[str, Any]) -> dict[str, Any]:
    return {k: s[k] for k in ("batch", "context_len") if s.get(k)}


def _price_claim(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    amount = p.budget_cny or p.purchase_price_cny
    claim = next((m for spans in p.mentions.values() for m in spans if str(int(amount)) in m.replace(",", "")), None)
    _price_ranges(s["gpu"], run, out, claim=claim or (f"{amount:,.0f} 元" if out.lang == "zh" else f"{amount:,.0f} CNY"))


def _fit_infer(s: dict[str, Any], run: ToolRun, out: Out) -> None:
    lang = out.lang
    args = _serving_args(s)
    r = run("fit_inference", args)
    precision = _assumed(r, "precision")
    common = {"model": r["model"], "n": r["n_gpus"], "gpu": r["gpu"], "precision": precision,
              "batch": r["batch"], "ctx": f"{r['context_len']:,}", "need": gb(r["per_gpu_gb"]), "usable": gb(r["usable_gb"])}
    if r["fits"]:
        out.add(say("fit_infer_yes", lang, **common))
    else:
        out.add(say("fit_infer_no", lang, short=gb(r["shortfall_gb"]), **common))
    out.add(breakdown_table(r, lang))
    out.add(say("why_infer", lang, weights=gb(r["breakdown_gb"]["weights"]), kv=gb(r["breakdown_gb"]["kv_cache"]),
                kv_tok=f"{r['kv_cache_bytes_per_token']:,.0f} B"))
    todo = []
    if not r["fits"]:
        for lower in _LOWER_PRECISIONS.get(precision, ()):
            q = run("fit_inference", {**args, "precision": lower})
            if q["fits"]:
                todo.append(say("quantized_fit", lang, precision=lower, need=gb(q["per_gpu_gb"]), n=q["n_gpus"], gpu=q["gpu"]))
                break
    if not r["fits"] and r["min_gpus"]:
        todo.append(say("min_gpus_infer", lang, n=r["min_gpus"], gpu=r["gpu"]))
    elif r["fits"]:
        todo.append(say("max_batch_line", lang, n=r["n_gpus"], ctx=f"{r['context_len']:,}", max_batch=r["max_batch"]))
    if todo:
        out.add(say("todo_header", lang) + "\n" + "\n".join(todo))
    out.add(assumptions_block(r["assumptions"], lang))


#: what to try when the weights do not fit: the next smaller formats, in order
_LOWER_PRECISIONS = {"fp32": ("bf16", "int8", "int4"), "bf16": ("int8", "int4"), "fp16": ("int8", "int4"),
                     "fp8": ("int4",), "int8": ("int4",)}
_PRICE_WORDS = re.compile(r"价格|多少钱|价钱|贵|便宜|报价|price|cost|cheaper|expensive", re.IGNORECASE)


def _serving_args(s: dict[str, Any]) -> dict[str, Any]:
    """fit_inference / inference_speed arguments; the weight precision only when the user named one
    (the calculators default to the model's published precision)."""
    args: dict[str, Any] = {"model": s["model"], "gpu": s["gpu"], "n_gpus": _n(s, 1), **_serving_extra(s)}
    if s.get("precision") in ("bf16", "fp16", "fp8", "int8", "int4", "nf4"):
        args["precision"] = "int4" if s["precision"] == "nf4" else s["precision"]
    return args


def _assumed(r: dict[str, Any], key: str) -> Any:
    return next(a["value"] for a in r["assumptions"] if a["key"] == key)


def _time(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    lang = out.lang
    n = _n(s, 8)
    method = s.get("method") or "full"
    args = {"model": s["model"], "gpu": s["gpu"], "n_gpus": n, "tokens": s["tokens"], "method": method}
    if s.get("precision") in ("bf16", "fp16", "fp8", "fp32"):
        args["precision"] = s["precision"]
    if s.get("seq_len"):
        args["seq_len"] = s["seq_len"]
    t = run("training_time", args)
    out.add(say("time_verdict", lang, time=duration(t["hours"], lang), low=duration(t["hours_low"], lang),
                high=duration(t["hours_high"], lang), n=t["n_gpus"], gpu=t["gpu"], method_label=method_label(method, lang),
                model=t["model"], tokens=count(t["tokens"]), flops=f"{t['total_flops']:.2e}"))
    out.add(say("time_detail", lang, mfu=pct(t["mfu"]), mfu_low=pct(t["mfu_low"]), mfu_high=pct(t["mfu_high"]),
                tps=f"{t['tokens_per_s']:,.0f}", comm=pct(t["comm_share"]), gpu_hours=f"{t['gpu_hours']:,.0f}"))
    fit = run("fit_training", {**_training_args({**s, "n_gpus": n, "method": method}), "grad_checkpointing": True})
    if not fit["fits"]:
        out.add(say("time_not_fit", lang, need=gb(fit["per_gpu_gb"]), usable=gb(fit["usable_gb"]),
                    min_n=fit["min_gpus"] or "—"))
    _cost_of(t["gpu_hours"], s, run, out)
    out.add(assumptions_block(t["assumptions"], lang, ("model_architecture", "mfu", "seq_len", "nodes_fabric")))


def _cost_of(gpu_hours: float, s: dict[str, Any], run: ToolRun, out: Out) -> None:
    lang = out.lang
    args: dict[str, Any] = {"gpu": s["gpu"], "gpu_hours": gpu_hours}
    if s.get("price_cny_per_hour"):
        args["price_cny_per_hour"] = s["price_cny_per_hour"]
    try:
        c = run("run_cost", args)
    except AdvisorError:
        out.add(say("cost_no_price", lang, gpu=get_gpu(s["gpu"]).name))
        return
    if s.get("price_cny_per_hour"):
        out.add(say("cost_user_price", lang, price=rate(c["price_cny_per_hour"], lang), total=money(c["total_cny"], lang)))
    else:
        out.add(say("cost_line", lang, price=rate(c["price_cny_per_hour"], lang),
                    price_low=rate(c["price_low_cny_per_hour"], lang), price_high=rate(c["price_high_cny_per_hour"], lang),
                    total=money(c["total_cny"], lang), low=money(c["low_cny"], lang), high=money(c["high_cny"], lang),
                    source=_short_source(c["price_source"])))


def _short_source(text: str) -> str:
    return text.split(" (")[0][:80]


def _cost(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    lang = out.lang
    claims = [f for f in p.user_figures if f.unit == "CNY"]
    if claims and s.get("gpu"):
        _price_ranges(s["gpu"], run, out, claim=claims[0].text)
        return
    if s.get("gpu_hours") or (s.get("hours") and s.get("gpu")):
        gpu_hours = s.get("gpu_hours") or s["hours"] * _n(s, 1)
        args: dict[str, Any] = {"gpu": s["gpu"], "gpu_hours": gpu_hours}
        if s.get("price_cny_per_hour"):
            args["price_cny_per_hour"] = s["price_cny_per_hour"]
        c = run("run_cost", args)
        out.add(say("cost_only", lang, total=money(c["total_cny"], lang), low=money(c["low_cny"], lang),
                    high=money(c["high_cny"], lang), gpu_hours=f"{c['gpu_hours']:,.0f}", price=rate(c["price_cny_per_hour"], lang),
                    price_low=rate(c["price_low_cny_per_hour"], lang), price_high=rate(c["price_high_cny_per_hour"], lang),
                    source=_short_source(c["price_source"])))
        return
    if s.get("model") and s.get("tokens"):
        _time(s, p, run, out)
        return
    _price_ranges(s["gpu"], run, out)


def _price_ranges(gpu: str, run: ToolRun, out: Out, claim: str | None = None) -> None:
    lang = out.lang
    r = run("gpu_specs", {"gpu": gpu})

    def rng(low: float | None, high: float | None, fmt) -> str:
        return f"{fmt(low, lang)}–{fmt(high, lang)}" if low and high else "—"

    values = {"gpu": r["name"], "buy": rng(r["purchase_low_cny"], r["purchase_high_cny"], money),
              "rent": rng(r["rent_low_cny_per_hour"], r["rent_high_cny_per_hour"], rate),
              "source": _short_source(r["price_source"] or "—")}
    out.add(say("price_claim", lang, claim=claim, **values) if claim else say("price_ranges", lang, **values))


def _rent_vs_buy(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    lang = out.lang
    args: dict[str, Any] = {"gpu": s["gpu"], "n_gpus": _n(s, 8)}
    for key in ("hours_per_day", "months"):
        if s.get(key):
            args[key] = s[key]
    if s.get("price_cny_per_hour"):
        args["rent_cny_per_hour"] = s["price_cny_per_hour"]
    if s.get("purchase_price_cny"):
        args["purchase_cny"] = s["purchase_price_cny"]
    r = run("rent_vs_buy", args)
    hpd = f"{num(r['hours_per_day'])} 小时" if lang == "zh" else f"{num(r['hours_per_day'])} h"
    common = {"n": r["n_gpus"], "gpu": r["gpu"], "hpd": hpd, "months": months_label(r["months"], lang),
              "own": money(r["own_total_cny"], lang), "rent": money(r["rent_total_cny"], lang)}
    if r["cheaper"] == "buy":
        be = months_label(r["breakeven_months"], lang) if r["breakeven_months"] else "—"
        out.add(say("rvb_buy", lang, breakeven=be, **common))
    else:
        out.add(say("rvb_rent", lang, **common))
    out.add(say("rvb_detail", lang, rent_price=rate(r["rent_cny_per_hour"], lang), rent_monthly=money(r["rent_monthly_cny"], lang),
                upfront=money(r["own_upfront_cny"], lang), own_monthly=money(r["own_monthly_cny"], lang)))
    if r.get("breakeven_hours_per_day"):
        bhpd = f"{num(r['breakeven_hours_per_day'])} 小时" if lang == "zh" else f"{num(r['breakeven_hours_per_day'])} h"
        out.add(say("rvb_breakeven_util", lang, bhpd=bhpd))
    flips = [say("rvb_flip", lang, text=f[lang]) for f in r.get("flip", [])[:3]]
    if flips:
        out.add(say("todo_header", lang) + "\n" + "\n".join(flips))
    out.add(assumptions_block(r["assumptions"], lang, ("electricity_cny_per_kwh", "pue", "hosting_cny_per_kw_month",
                                                  "depreciation_years", "rent_cny_per_hour", "purchase_cny")))


def _compare(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    lang = out.lang
    names = list(dict.fromkeys(s.get("gpus") or []))
    if len(names) < 2:
        _specs(s, p, run, out)
        return
    if _PRICE_WORDS.search(p.text) and not s.get("model"):
        for name in names[:4]:  # "A100 40G 和 80G 价格差多少": the price ranges side by side
            _price_ranges(name, run, out)
        return
    r = run("compare_gpus", {"gpus": names})
    out.add(say("compare_intro", lang, names=" / ".join(row["name"] for row in r["rows"])))
    out.add(_spec_table(r["rows"], lang))
    first = r["rows"][0]["name"]
    lines = []
    for row, ratio in zip(r["rows"][1:], r["ratios_to_first"][1:]):
        lines.append(say("compare_ratio", lang, gpu=row["name"], first=first, mem=_x(ratio["memory"]),
                         bw=_x(ratio["bandwidth"]), bf16=_x(ratio["bf16"])))
    out.add("\n".join(lines))
    if s.get("model"):
        method = s.get("method") or ("lora" if s.get("workload") != "infer" else "full")
        for name in names[:3]:
            f = run("fit_training", {"model": s["model"], "gpu": name, "method": method, "grad_checkpointing": True})
            out.add(say("replace_fit", lang, model=f["model"], method_label=method_label(method, lang), gpu=f["gpu"],
                        verdict=say("yes_fits" if f["fits"] else "no_fits", lang), need=gb(f["per_gpu_gb"]),
                        usable=gb(f["usable_gb"])))
    if any(get_gpu(n).vendor != "nvidia" for n in names):
        out.add(say("replace_note", lang))


def _x(v: float | None) -> str:
    return "—" if v is None else f"{v:g}"


def _spec_table(rows: list[dict[str, Any]], lang: str) -> str:
    head = ("| GPU | 显存 | 带宽 GB/s | BF16 TFLOPS | FP8 TFLOPS | 互联 GB/s | 功耗 W |\n|---|---|---|---|---|---|---|"
            if lang == "zh" else
            "| GPU | memory | bandwidth GB/s | BF16 TFLOPS | FP8 TFLOPS | link GB/s | TDP W |\n|---|---|---|---|---|---|---|")
    lines = [head]
    for r in rows:
        vals = [f"{r['memory_gb']:g} GB", r["bandwidth_gb_s"], r["bf16_tflops"] or r["fp16_tflops"], r["fp8_tflops"],
                r["interconnect_gb_s"], r["tdp_w"]]
        lines.append("| " + r["name"] + " | " + " | ".join("—" if v is None else (v if isinstance(v, str) else f"{v:g}")
                                                            for v in vals) + " |")
    return "\n".join(lines)


def _specs(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    lang = out.lang
    names = list(dict.fromkeys(s.get("gpus") or ([s["gpu"]] if s.get("gpu") else [])))
    if not names:
        _knowledge(s, p, run, out)
        return
    for name in names[:4]:
        r = run("gpu_specs", {"gpu": name})
        china = ("可采购" if r["china_available"] else "受限") if lang == "zh" else ("available" if r["china_available"] else "restricted")
        out.add(say("specs_line", lang, gpu=r["name"], mem=f"{r['memory_gb']:g} GB", mem_type=r["memory_type"],
                    bw=_unit(r["bandwidth_gb_s"], "GB/s"), bf16=_unit(r["bf16_tflops"] or r["fp16_tflops"], "TFLOPS"),
                    fp8=_unit(r["fp8_tflops"], "TFLOPS"), link=_unit(r["interconnect_gb_s"], "GB/s"),
                    link_kind=r["interconnect_kind"], tdp=_unit(r["tdp_w"], "W"), china=china + "，" + r["china_note"]
                    if lang == "zh" else china + " — " + r["china_note"]))
    if p.user_figures and names:
        money_claims = [f for f in p.user_figures if f.unit == "CNY"]
        if money_claims:
            _price_ranges(names[0], run, out, claim=money_claims[0].text)


def _unit(v: float | None, unit: str) -> str:
    return "—" if v is None else f"{v:g} {unit}"


def _speed(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    lang = out.lang
    args = _serving_args(s)
    fit = run("fit_inference", args)
    if not fit["fits"]:
        _fit_infer({**s, "workload": "infer"}, run, out)
        return
    r = run("inference_speed", args)
    bound = {"memory": "显存带宽", "compute": "算力"}[r["bound"]] if lang == "zh" else r["bound"]
    out.add(say("speed_verdict", lang, decode=f"{r['decode_tokens_per_s']:,.1f}", total=f"{r['total_tokens_per_s']:,.0f}",
                n=r["n_gpus"], gpu=r["gpu"], model=r["model"], precision=r["precision"], batch=r["batch"],
                ctx=f"{r['context_len']:,}", bound=bound, tpot=f"{r['tpot_ms']:,.1f}", ttft=f"{r['ttft_s']:,.2f}"))
    out.add(assumptions_block(r["assumptions"], lang, ("bandwidth_efficiency", "context_len", "prompt_len", "precision")))


def _recommend(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    lang = out.lang
    workload = s.get("workload") or "finetune"
    workload = "train" if workload in ("pretrain", "train") else workload
    args: dict[str, Any] = {"model": s.get("model") or "7B", "workload": workload}
    if s.get("method") and workload != "infer":
        args["method"] = s["method"]
    if workload != "infer":
        args["tokens"] = s.get("tokens") or 1_000_000_000
    for key, target in (("budget_cny", "budget_cny"), ("deadline_hours", "deadline_hours"), ("batch", "batch"),
                        ("context_len", "context_len")):
        if s.get(key):
            args[target] = s[key]
    if s.get("china_only"):
        args["china_available"] = True
    r = run("recommend_gpus", args)
    labels = {"zh": {"cheapest": "最省钱", "fastest": "最快", "best_value": "性价比"},
              "en": {"cheapest": "Cheapest", "fastest": "Fastest", "best_value": "Best value"}}[lang]
    picks = [(k, r.get(k)) for k in ("cheapest", "fastest", "best_value") if r.get(k)]
    if not picks:
        reason = "; ".join(d[f"reason_{lang}"] for d in r.get("dropped", [])[:3]) or "—"
        out.add(say("recommend_none", lang, reason=reason))
        return
    best = picks[-1][1]
    out.add(say("recommend_intro", lang, n=best["n_gpus"], gpu=best["gpu"], workload=workload, model=args["model"]))
    lines = []
    for key, o in picks:
        when = duration(o["hours"], lang) if o.get("hours") else (f"{o.get('tokens_per_s', 0):,.0f} token/s")
        cost = money(o["total_cny"], lang) if o.get("total_cny") is not None else "—"
        lines.append(say("recommend_pick", lang, label=labels[key], n=o["n_gpus"], gpu=o["gpu"], time=when, cost=cost))
    out.add("\n".join(lines))
    dropped = [say("dropped_line", lang, gpu=d["gpu"], reason=d[f"reason_{lang}"]) for d in r.get("dropped", [])[:4]]
    if dropped:
        out.add("\n".join(dropped))
    out.add(assumptions_block(r["assumptions"], lang, ("pricing", "method", "grad_checkpointing", "tokens")))


def _knowledge(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    lang = out.lang
    r = run("search_knowledge", {"query": p.text[:500], "k": 5, "lang": lang})
    if not r["passages"]:
        r = run("search_knowledge", {"query": p.text[:500], "k": 5})
    if not r["passages"]:
        out.add(say("knowledge_none", lang))
        return
    out.add(say("knowledge_intro", lang))
    # quote prose: skip stubs and passages that are code or data blocks (they stay citable)
    substantial = [x for x in r["passages"] if "```" not in x["text"] and len(excerpt(x["text"])) >= 80]
    if not substantial:
        out.add(say("knowledge_none", lang))
        return
    for passage in substantial[:2]:
        body = excerpt(passage["text"])
        marker = f" [{ref_number(run, passage['doc_id'])}]"
        out.add("\n".join(f"> {line}" for line in body.splitlines()) + marker)


def ref_number(run: ToolRun, doc_id: str) -> int:
    """The [n] of a note in the sources list (one entry per note, in citation order)."""
    docs = list(dict.fromkeys(c.doc_id for c in run.citations))
    return docs.index(doc_id) + 1


def _out_of_scope(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    out.add(say("out_of_scope", out.lang))


def _greeting(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    out.add(say("greeting", out.lang))


# ---- citations and follow-ups -----------------------------------------------------------------------

def cite(text: str, intent: str, run: ToolRun, out: Out) -> None:
    """Cite the knowledge base for calculator answers too (the guide's advice, corrections)."""
    if intent in ("out_of_scope", "greeting"):
        return
    if intent != "knowledge":
        try:
            hint = CITE_HINTS.get(intent, {}).get(out.lang, "")
            run("search_knowledge", {"query": f"{text[:400]} {hint}", "k": 2, "lang": out.lang})
        except AdvisorError:
            return
    if not run.citations:
        return
    docs: dict[str, Any] = {}
    for c in run.citations:
        docs.setdefault(c.doc_id, c)
    lines = [say("ref_line", out.lang, n=i, title=c.title, source=c.source) for i, c in enumerate(list(docs.values())[:3], 1)]
    out.add(say("refs_header", out.lang) + "\n" + "\n".join(lines))


#: words added to the citation search so passages match what the answer is about, not just its words
CITE_HINTS = {
    "fit": {"zh": "显存 放不下 OOM 估算", "en": "memory fit OOM estimate"},
    "min_gpus": {"zh": "显存 多卡 估算", "en": "memory how many GPUs"},
    "time": {"zh": "训练时间 集群 互联", "en": "training time cluster interconnect"},
    "cost": {"zh": "价格 渠道 租赁", "en": "price channel rental"},
    "price_claim": {"zh": "价格 渠道", "en": "price channel"},
    "rent_vs_buy": {"zh": "自建 租赁 回本", "en": "build rent break-even"},
    "compare": {"zh": "对比 替代 国产卡 生态", "en": "compare replace domestic accelerators software"},
    "speed": {"zh": "推理 KV cache 带宽", "en": "inference KV cache bandwidth"},
    "recommend": {"zh": "选型 显存 预算", "en": "selection memory budget"},
    "specs": {"zh": "规格 显存 互联", "en": "specs memory interconnect"},
}

FOLLOW_UPS = {
    "fit": {"zh": ["用 QLoRA 的话单卡够吗？", "换成 H800 呢？", "训练 1B token 要多久？"],
            "en": ["What about QLoRA on one card?", "And on H800?", "How long for 1B tokens?"]},
    "time": {"zh": ["租还是买更划算？", "换成 A800 要多久？", "用 LoRA 能快多少？"],
             "en": ["Rent or buy?", "How long on A800 instead?", "How much faster with LoRA?"]},
    "cost": {"zh": ["租还是买更划算？", "国产卡能省多少？"], "en": ["Rent or buy?", "What would domestic cards cost?"]},
    "rent_vs_buy": {"zh": ["每天只用 8 小时呢？", "换成 H800 呢？"], "en": ["What if we use it 8 hours a day?", "And for H800?"]},
    "compare": {"zh": ["70B 模型 LoRA 微调放得下吗？", "两者租金差多少？"], "en": ["Does a 70B LoRA fine-tune fit?", "How do their rental prices compare?"]},
    "recommend": {"zh": ["只考虑国产卡呢？", "预算翻倍呢？"], "en": ["Only domestic cards?", "What if the budget doubles?"]},
    "speed": {"zh": ["并发 64 呢？", "用 int4 量化呢？"], "en": ["What about 64 concurrent users?", "And with int4 weights?"]},
    "specs": {"zh": ["和 A100 比呢？", "能放下 70B 推理吗？"], "en": ["How does it compare to the A100?", "Can it serve a 70B model?"]},
}


def follow_ups(intent: str, s: dict[str, Any], lang: str) -> list[str]:
    key = "fit" if intent == "min_gpus" else intent
    return list(FOLLOW_UPS.get(key, {}).get(lang, []))
