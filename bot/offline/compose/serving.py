"""Composers for serving: fits for inference, decode speed, serving capacity, a serving shortlist; where the GPUs
alone do not hold the model and the question states the host RAM, the CPU+GPU hybrid run (KTransformers, llama.cpp /
Ollama spilling to RAM): fit_inference's `hybrid` rows as formats against VRAM + RAM with their decode bound."""

from __future__ import annotations

import re
from typing import Any

from bot.core.toolbox import ToolRun
from bot.offline.compose.evidence import (
    against_measured,
    against_target,
    host_ram,
    measured_speed,
    oom_but_serves,
    target_speed,
)
from bot.offline.compose.shortlist import pick_gpu, picks, sourcing_args, without_excluded
from bot.offline.compose.sizes import wayout, working
from bot.offline.compose.systems import layouts, minimum
from bot.offline.compose.toolargs import assumed, budget_args, budget_text, serving_args
from bot.offline.say.assumptions import assumptions_block
from bot.offline.say.phrases import say
from bot.offline.say.render import Out, breakdown_table, count, gb, money, usable
from bot.offline.understand.decide import BUY, RENT
from bot.offline.understand.parse import ParsedQuestion
from bot.offline.understand.request.reader import read
from tools.catalog.lookup import get_gpu, get_model

#: the question asks for long context ("支持长文本", "128k context"): the longest sequence the cards hold is said
SHORTEST_USEFUL_CONTEXT = wayout.SHORTEST_USEFUL_CONTEXT
LONG_CONTEXT = re.compile(
    r"长文本|长上下文|长序列|长对话|long[- ]?context|long (?:text|input|prompt|document)s?|\d+\s*k\s*(?:context|上下文)",
    re.I,
)


def fit_infer(s: dict[str, Any], run: ToolRun, out: Out, oom: bool = False, text: str = "") -> None:
    """Serving memory; `oom`: the user reports an OOM on this setup (the log wins over a "fits"); `text`: the
    question, which when it speaks of concurrency on the user's own cards gets what more concurrency needs."""
    lang = out.lang
    args = serving_args(s)
    r = run("fit_inference", args)
    if not r["fits"] and s.get("host_ram_gb"):  # the GPUs alone are short and the user states the host RAM: the
        args["host_ram_gb"] = s["host_ram_gb"]  # CPU+GPU hybrid run is weighed (the same fit, with its rows)
        r = run("fit_inference", args)
    if oom and r["fits"]:
        oom_but_serves(args, r, run, out)
        out.add(breakdown_table(r, lang))
        out.add(assumptions_block(r["assumptions"], lang))
        return
    precision = assumed(r, "precision")
    common = {
        "model": r["model"],
        "n": r["n_gpus"],
        "gpu": r["gpu"],
        "precision": precision,
        "batch": r["batch"],
        "ctx": f"{r['context_len']:,}",
        "need": gb(r["per_gpu_gb"]),
        "usable": usable(r, lang),
    }
    if r["fits"]:
        out.add(say("fit_infer_yes", lang, **common))
    else:
        out.add(say("fit_infer_no", lang, short=gb(r["shortfall_gb"]), **common))
    if r["n_gpus"] > 1:  # the whole the cards split: the figure people check first (as training's model states)
        # the precision the fit used (a card without FP8 runs an FP8-published model in BF16), not the published one
        used = next((a["value"] for a in r.get("assumptions", []) if a["key"] == "precision"), args.get("precision"))
        m = run("model_memory", {"model": args["model"], **({"precision": used} if used else {})})
        out.add(say("weights_total", lang, weights=gb(m["weights_gb"]), precision=m["precision"], n=r["n_gpus"]))
    out.add(breakdown_table(r, lang))
    out.add(
        say(
            "why_infer",
            lang,
            weights=gb(r["breakdown_gb"]["weights"]),
            kv=gb(r["breakdown_gb"]["kv_cache"]),
            kv_tok=f"{r['kv_cache_bytes_per_token']:,.0f} B",
        )
    )
    todo = []
    if not r["fits"]:  # the ways out on their own cards first, more cards last (sizes/wayout: one order)
        todo += wayout.serving(args, r, run, lang, precision=precision, owned=owned_count(text),
                               has_fp8=bool(get_gpu(args["gpu"]).fp8_tflops),
                               host_ram=bool(args.get("host_ram_gb")) or "host_ram" in read(text).cued)  # fmt: skip
    else:
        todo.append(say("max_batch_line", lang, n=r["n_gpus"], ctx=f"{r['context_len']:,}", max_batch=r["max_batch"]))
        if r.get("max_context") and LONG_CONTEXT.search(text) and "diagnose" not in read(text).cued:
            # "支持长文本": the longest one sequence these cards hold (not for a trouble told, whose cause is asked)
            limit = get_model(args["model"]).max_context  # the model's own window caps what memory would hold
            key = "max_context_capped" if limit and r["max_context"] > limit else "max_context_line"
            todo.append(say(key, lang, n=r["n_gpus"], gpu=r["gpu"], ctx=f"{r['max_context']:,}", limit=f"{limit or 0:,}",
                            model=r["model"]))  # fmt: skip
        if s.get("n_gpus") and r["max_batch"] and layouts.CONCURRENCY.search(text):
            full = run("inference_speed", {**args, "batch": r["max_batch"]})  # the speed at that concurrency
            todo.append(
                say(
                    "max_batch_speed",
                    lang,
                    max_batch=r["max_batch"],
                    decode=f"{full['decode_tokens_per_s']:,.1f}",
                    total=f"{full['total_tokens_per_s']:,.0f}",
                )
            )
            more = layouts.more_line(r["n_gpus"], r["gpu"], r["max_batch"], r["context_len"], lang)
            todo.append("- " + more)
    if r["fits"] and r["n_gpus"] > 1:
        todo += _how_to_split(args, r, precision, run, lang)
    if precision == "bf16" and get_gpu(args["gpu"]).bf16_tflops is None:  # V100, T4: the same bytes, in FP16
        todo.append(say("no_bf16_serve", lang, gpu=r["gpu"]))
    if todo:
        out.add(say("todo_header", lang) + "\n" + "\n".join(todo))
    if not r["fits"] and (block := hybrid_block(r, lang)):
        out.add(block)
    named = bool(read(text).parsed.gpus) and not minimum.OR_ABOVE.search(text)  # "也是A100 40G以上吗": a floor asked
    if text and not named and (minimum.COUNT.search(text) or minimum.MINIMUM.search(text)):
        # "how many GPUs for a 30B": the count per card type; "至少要多大显存": the floor by precision
        (minimum.counts if minimum.COUNT.search(text) else minimum.ladder)(args, run, out)
        run("fit_inference", args)  # the fit as asked stays the last call: the one the verdict and a reader take
    out.add(assumptions_block(r["assumptions"], lang))


def owned_count(text: str) -> int | None:
    """The most cards the question says the asker has ("8 A100", "GPU number: 8"), or None."""
    if not text:
        return None
    counts = [int(m.value) for m in read(text).mentions if m.role == "gpus_total" and isinstance(m.value, int | float)]
    return max(counts, default=None)


def _how_to_split(args: dict[str, Any], r: dict[str, Any], precision: str, run: ToolRun, lang: str) -> list[str]:
    """A fit on several cards says how to set them up ("多卡怎么部署" is what such a question asks): the split the
    calculator sized (tensor parallel, or pipeline when the heads do not divide), and one copy per card when one
    card holds the model, as it is or quantized."""
    key = "split_tp" if r["pp"] == 1 else "split_pp"
    lines = [say(key, lang, n=r["n_gpus"], tp=r["tp"], pp=r["pp"])]
    fewer = []  # no precision named and no card holds it alone: the fewest cards quantized, when fewer
    for option in (precision, *_LOWER_PRECISIONS.get(precision, ())):
        one = run("fit_inference", {**args, "n_gpus": 1, "precision": option})
        if one["verdict"] == "fits":  # a "tight" fit leaves no room for a batch: no copy per card
            key = "replica_one" if option == precision else "replica_quant"
            lines.append(say(key, lang, n=r["n_gpus"], need=gb(one["per_gpu_gb"]), precision=option))
            break
        if option != precision and one["min_gpus"] and one["min_gpus"] < r["min_gpus"] and not args.get("precision"):
            fewer.append((one["min_gpus"], option))
    else:
        for n, lower in sorted(fewer, key=lambda f: f[0]):  # fewest first; at a count, the gentler format first
            q = run("fit_inference", {**args, "n_gpus": n, "precision": lower})
            if q["verdict"] == "fits":  # a "tight" count leaves no room for a batch: not offered as the fewest
                w = run("model_memory", {"model": args["model"], "precision": lower})
                lines.append(say("quant_fewer", lang, precision=lower, n=q["n_gpus"], gpu=q["gpu"],
                                 need=gb(q["per_gpu_gb"]), weights=gb(w["weights_gb"])))  # fmt: skip
                break
    run("fit_inference", args)  # the fit as asked stays the last call: the one the verdict and a reader take
    return lines


_LOWER_PRECISIONS = wayout.LOWER_PRECISIONS


def fewest_that_hold(args: dict[str, Any], s: dict[str, Any], run: ToolRun) -> tuple[dict[str, Any], bool]:
    """fit_inference of `args`; when the question gave no count and the model does not fit, again on the fewest
    cards that hold it (`args["n_gpus"]` is updated). Returns the fit and whether the count was raised."""
    fit = run("fit_inference", args)
    if not fit["fits"] and not s.get("n_gpus") and fit["min_gpus"]:
        args["n_gpus"] = fit["min_gpus"]
        return run("fit_inference", args), True
    return fit, False


def speed(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    lang = out.lang
    args = serving_args(s)
    fit, raised = fewest_that_hold(args, s, run)
    if raised:  # no count given: the speed on the fewest cards that hold the model, said up front
        out.add(say("speed_on_min_gpus", lang, gpu=fit["gpu"], model=fit["model"], n=fit["n_gpus"]))
    if not fit["fits"]:  # the fit (what a part before said is not said again), then the setups that hold it
        part = Out(lang=lang)
        fit_infer(with_host_ram({**s, "workload": "infer"}, p), run, part)
        working.unsaid(part, out)
        working.speed(fit, args, run, out, p.text or "")
        return
    r = run("inference_speed", args)
    bound = {"memory": "显存带宽", "compute": "算力"}[r["bound"]] if lang == "zh" else r["bound"]
    out.add(
        say(
            "speed_verdict",
            lang,
            decode=f"{r['decode_tokens_per_s']:,.1f}",
            total=f"{r['total_tokens_per_s']:,.0f}",
            n=r["n_gpus"],
            gpu=r["gpu"],
            model=r["model"],
            precision=r["precision"],
            batch=r["batch"],
            ctx=f"{r['context_len']:,}",
            bound=bound,
            tpot=f"{r['tpot_ms']:,.1f}",
            ttft=f"{r['ttft_s']:,.2f}",
        )
    )
    if measured := measured_speed(p, s):  # "只有 19 tokens/s，正常吗": their figure beside ours, with a verdict
        against_measured(r, out, measured)
    elif target := target_speed(p):  # "need 30 tokens/s": met or not by this setup
        against_target(r, out, target)
    out.add(
        assumptions_block(r["assumptions"], lang, ("bandwidth_efficiency", "context_len", "prompt_len", "precision"))
    )


#: the first token's wait asked in words (a capacity answer otherwise gives only tokens/s)
_LATENCY = re.compile(r"首字|首 ?token|首包|ttft|time to first token|first[- ]token|latency|延迟|响应时间", re.I)


def capacity(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    """Serving capacity: the most concurrent sequences at a context, and tokens/s per user at that load
    (or at the user's own concurrency)."""
    lang = out.lang
    args = {**serving_args(s), "batch": 1}
    f = run("fit_inference", args)
    precision = assumed(f, "precision")
    if not f["fits"] or not f["max_batch"]:
        out.add(
            say(
                "capacity_none",
                lang,
                n=f["n_gpus"],
                gpu=f["gpu"],
                ctx=f"{f['context_len']:,}",
                need=gb(f["per_gpu_gb"]),
                usable=usable(f, lang),
                min_n=f["min_gpus"] or "—",
            )
        )
        return
    top = run("inference_speed", {**args, "batch": f["max_batch"]})
    out.add(
        say(
            "capacity_verdict",
            lang,
            n=f["n_gpus"],
            gpu=f["gpu"],
            model=f["model"],
            precision=precision,
            ctx=f"{f['context_len']:,}",
            max_batch=f"{f['max_batch']:,}",
            decode=f"{top['decode_tokens_per_s']:,.1f}",
            total=f"{top['total_tokens_per_s']:,.0f}",
        )
    )
    if p.text and _LATENCY.search(p.text):  # "首字延迟多少": the first token's wait, for a prompt of that length
        prompt = assumed(top, "prompt_len")
        out.add(say("capacity_ttft", lang, ttft=f"{top['ttft_s']:,.2f}", prompt=f"{prompt:,}"))
    kv = f["kv_cache_gb_per_sequence"]
    out.add(say("capacity_batching", lang, kv=f"{kv:.2f}" if kv < 1 else f"{kv:.1f}", ctx=f"{f['context_len']:,}"))
    if p.text and (claim := layouts.per_request_claim(read(p.text))):  # "单次推理需要 13G": weights once
        layouts.per_request_correction(s, claim, f["gpu"], run, out)
    if s.get("n_gpus"):  # the user's own cards: how else they split
        counts = layouts.card_counts(read(p.text)) if p.text else []
        layouts.layouts(args, max([f["n_gpus"], *counts]), run, out)
    out.add(layouts.more_line(f["n_gpus"], f["gpu"], f["max_batch"], f["context_len"], lang))  # more concurrency
    users = s.get("batch")
    if users and users > 1:
        if users <= f["max_batch"]:
            r = run("inference_speed", {**args, "batch": users})
            out.add(
                say(
                    "capacity_users",
                    lang,
                    users=users,
                    decode=f"{r['decode_tokens_per_s']:,.1f}",
                    total=f"{r['total_tokens_per_s']:,.0f}",
                )
            )
        else:
            need = run("fit_inference", {**args, "batch": users})
            out.add(
                say("capacity_over", lang, users=users, max_batch=f"{f['max_batch']:,}", min_n=need["min_gpus"] or "—")
            )
    out.add(assumptions_block(f["assumptions"], lang, ("precision", "kv_precision", "context_len", "usable_fraction")))


def recommend_serving(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    """A serving shortlist for a model at a concurrency and context (one month of rent as the cost)."""
    lang = out.lang
    args: dict[str, Any] = {"model": s["model"], "workload": "infer"}
    args.update({k: s[k] for k in ("batch", "context_len") if s.get(k)})
    args.update(budget_args(s))
    # "预算 30 万买卡部署 7B", "能跑 70B 的方案，预算 50 万": a budget is for cards unless renting is said
    buying = bool(budget_args(s)) and (bool(BUY.search(p.text)) or not RENT.search(p.text))
    if buying:
        args["pricing"] = "buy"
    r = without_excluded(run("recommend_gpus", {**args, **sourcing_args(s, p, out)}), s)
    chosen = picks(r, out)
    if not chosen:
        return
    best = r.get("best_value") or r.get("cheapest") or chosen[-1][1]
    batch = next((a["value"] for a in r["assumptions"] if a["key"] == "batch"), s.get("batch") or 1)
    ctx = next((a["value"] for a in r["assumptions"] if a["key"] == "context_len"), s.get("context_len") or 4096)
    out.add(
        say(
            "serving_recommend_buy_intro" if buying else "serving_recommend_intro",
            lang,
            model=r["model"],
            batch=batch,
            ctx=f"{ctx:,}",
            n=best["n_gpus"],
            gpu=best["gpu"],
            budget=budget_text(r, lang) if buying else "",
        )
    )
    lines = []
    for label, o in chosen:
        cost = money(o["total_cny"], lang) if o.get("total_cny") is not None else say("no_price", lang)
        speed = o.get("tokens_per_s")  # None: a card with no published bandwidth, never shown as "0 token/s"
        lines.append(
            say(
                "serving_pick" if speed else "serving_pick_no_speed",
                lang,
                label=label,
                n=o["n_gpus"],
                gpu=pick_gpu(o, lang),
                tps=f"{speed or 0:,.0f}",
                cost=cost,
            )
        )
    out.add("\n".join(dict.fromkeys(lines)))
    w = run("model_memory", {"model": s["model"]})  # the figure a reader checks the count against
    byp = w["weights_by_precision_gb"]
    out.add(say("serving_weights_line", lang, model=w["model"], bf16=gb(byp["bf16"]), fp8=gb(byp["fp8"]),
                int4=gb(byp["int4"]), params=count(w["params_b"] * 1e9)))  # fmt: skip
    floor_args = {"model": s["model"], **({"context_len": ctx} if s.get("context_len") else {})}
    if not buying and p.text and minimum.MINIMUM.search(p.text) and not p.gpus:  # "至少要多大显存": the floor
        minimum.ladder(floor_args, run, out)
    elif not buying and p.text and minimum.WHICH.search(p.text) and not p.gpus:  # "哪些 GPU 能跑": each card's count
        domestic, speed = bool(minimum.DOMESTIC.search(p.text)), "speed" in read(p.text).cued
        minimum.counts(floor_args, run, out, domestic=domestic, speed=speed)
    if buying:
        out.add(say("budget_note", lang))
    out.add(
        assumptions_block(r["assumptions"], lang, ("pricing", "batch", "context_len", "precision", "fx_cny_per_usd"))
    )


def with_host_ram(s: dict[str, Any], p: ParsedQuestion) -> dict[str, Any]:
    """The slots with the host RAM the user states (GB), for the serving fit to weigh a hybrid run."""
    have = host_ram(p)
    return {**s, "host_ram_gb": have[1]} if have else s


def _bound(h: dict[str, Any]) -> str:
    """A hybrid row's decode bound, or a dash where the card has no published memory bandwidth."""
    return "—" if h["decode_tokens_per_s"] is None else f"≤ {h['decode_tokens_per_s']:g}"


def hybrid_block(r: dict[str, Any], lang: str) -> str | None:
    """The formats against VRAM + RAM (fit_inference output `r` with host_ram_gb), or None when there are none."""
    rows = r.get("hybrid") or []
    if not rows:
        return None
    yes, no = ("能", "不能") if lang == "zh" else ("yes", "no")
    lines = [say("hybrid_head", lang), "|---|---|---|---|---|---|"]
    for h in rows:
        lines.append(
            f"| {h['format']} | {gb(h['weights_gb'])} | {gb(h['gpu_gb'])} | {gb(h['ram_gb'])} | "
            f"{yes if h['fits'] else no} | {_bound(h)} |"
        )
    fitting = [h for h in rows if h["fits"]]
    bw = f"{r['host_bandwidth_gb_s']:g}"
    if fitting:
        best = fitting[0]
        key = "hybrid_fits" if best["ram_gb"] > 0 else "hybrid_gpu_only"  # a format small enough for the GPUs alone
        lead = say(key, lang, fmt=best["format"], weights=gb(best["weights_gb"]), gpu=gb(best["gpu_gb"]),
                   ram=gb(best["ram_gb"]), tps=_bound(best).removeprefix("≤ "), bw=bw)  # fmt: skip
        if rows[0] is not best:
            lead += " " + say("hybrid_top_no", lang, fmt=rows[0]["format"], weights=gb(rows[0]["weights_gb"]))
    else:
        lead = say("hybrid_none", lang, fmt=rows[-1]["format"], ram=gb(rows[-1]["ram_gb"]))
    note = say("hybrid_note", lang, bw=bw)
    said = next((a for a in r.get("assumptions", []) if a["key"] == "host_bandwidth"), None)
    if said and said.get("default", True) and (m := re.search(r"\((\d+ × [\w-]+) channels\)", said.get("note", ""))):
        host = say("hybrid_host_desktop" if m.group(1).startswith("2 ×") else "hybrid_host_server", lang)
        note += " " + say("hybrid_bw_default", lang, bw=bw, what=m.group(1), host=host)
    return lead + "\n\n" + "\n".join(lines) + "\n\n" + note
