"""Composers for training: memory fit, minimum GPUs, time (and its cost), precision speed-up."""

from __future__ import annotations

from math import prod
from typing import Any

from bot.core.toolbox import ToolRun
from bot.offline.compose.evidence import against_seen, host_ram, memory_seen, oom_but_fits, reported_oom
from bot.offline.compose.serving import fit_infer, with_host_ram
from bot.offline.compose.sizes import wayout
from bot.offline.compose.toolargs import is_inference, serving_args, short_source, timing_args, training_args
from bot.offline.say.assumptions import assumptions_block
from bot.offline.say.phrases import say
from bot.offline.say.render import (
    PART_NAMES,
    Out,
    breakdown_table,
    count,
    duration,
    gb,
    method_label,
    money,
    money_span,
    num,
    pct,
    rate,
    usable,
)
from bot.offline.understand.parse import ParsedQuestion
from bot.offline.understand.paste.degrees import parallel_degrees
from bot.offline.understand.request.reader import read
from tools.catalog.lookup import get_gpu
from tools.errors import AdvisorError

MANY_GPUS = 64  # beyond this, "add GPUs" is not a useful suggestion next to a settings change
#: the fine-tuning methods a buyer compares when the question names none ("多少卡微调 X")
METHODS = ("full", "lora", "qlora")


def unnamed_finetune(s: dict[str, Any], p: ParsedQuestion) -> bool:
    """A fine-tuning question that names no method: the answer owes full, LoRA and QLoRA side by side."""
    return s.get("workload") == "finetune" and p.method is None and not is_inference(s)


def _how_to_fit(s: dict[str, Any], p: ParsedQuestion) -> bool:
    """A training run on the user's cards, the method not named, and the setup asked for ("基于怎样的配置可以…训练起来",
    "how can I train with a 3090"): the methods side by side are the answer."""
    asked = s.get("workload") in ("train", "finetune") and p.method is None and s.get("gpu") and s.get("model")
    return bool(asked) and "config" in read(p.text).asks


def fit(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out, methods: str = "") -> None:
    """Whether the run fits; `methods` (the by-method table a count question gets) follows the verdict."""
    if is_inference(s):
        fit_infer(with_host_ram(s, p), run, out, oom=reported_oom(p), text=p.text or "")
        return
    lang = out.lang
    if not methods and _how_to_fit(s, p):  # "怎样的配置可以在一台4090上训练起来": which method fits there, each
        methods = by_method(s, run, lang)  # with its count (worked out first: the run answered is the last called)
    r = run("fit_training", training_args(s))
    label = method_label(r["method"], lang, r.get("objective", "sft"))
    common = {
        "method_label": label,
        "model": r["model"],
        "n": r["n_gpus"],
        "gpu": r["gpu"],
        "zero": r["zero_stage"],
        "need": gb(r["per_gpu_gb"]),
        "usable": usable(r, lang),
    }
    if r["fits"] and reported_oom(p):  # the user has seen it fail: the log wins over the estimate
        oom_but_fits(s, r, run, out)
        out.add(breakdown_table(r, lang))
        out.add(assumptions_block(r["assumptions"], lang))
        return
    if r["fits"]:
        lead = say("fit_train_yes", lang, headroom=gb(r["headroom_gb"]), **common)
    else:
        lead = say("fit_train_no", lang, short=gb(r["shortfall_gb"]), **common)
    if r["fits"] and (seen := memory_seen(p)):  # "每张卡占满 32G，正常吗": the memory they saw, judged, leads
        against_seen(r, out, seen, lead)
    else:
        out.add(lead)
    if (
        r["method"] == "full" and r["n_gpus"] > 1 and not s.get("pp")
    ):  # the whole that ZeRO splits: the figure people check first
        total = run("model_memory", {"model": s["model"], "method": "full", "n_gpus": r["n_gpus"]})
        out.add(
            say(
                "states_total", lang, states=gb(total["model_states_gb"]), bpp=f"{total['bytes_per_trainable_param']:g}"
            )
        )
    if methods:
        out.add(methods)
    if r.get("verdict") == "tight":  # within the estimate's own error: say so rather than a flat yes/no
        out.add(say("fit_tight", lang, gap=gb(abs(r["margin_gb"])), band=gb(r["uncertainty_gb"])))
    if r.get(f"default_note_{lang}"):  # a default (checkpointing) decided the verdict: say so in one line
        out.add(r[f"default_note_{lang}"])
    out.add(breakdown_table(r, lang))
    if not r["fits"]:
        part = max(r["breakdown_gb"], key=lambda k: r["breakdown_gb"][k])
        out.add(
            say(
                "why_largest",
                lang,
                part=PART_NAMES[lang][part],
                part_gb=gb(r["breakdown_gb"][part]),
                bpp=num(r["bytes_per_param_states"]),
                trainable=count(r["trainable_params_b"] * 1e9),
            )
        )
    todo, short = [], set()  # short: an offload whose host RAM exceeds what the user states (after the adapters)
    near = [x for x in r["suggestions"] if x["change"] != "more_gpus" or x["n_gpus"] <= MANY_GPUS]  # sizes/wayout
    if (have := host_ram(p)) is not None and not r["host_ram_gb"]:
        short = {x["change"] for x in near if "offload" in x["settings"]
                 and (run("fit_training", {**training_args(s), **x["settings"]})["host_ram_gb"] or 0) > have[1]}  # fmt: skip
    near = wayout.pick_training(near, r["method"], short=short)
    for sug in near:
        todo.append(say("suggestion", lang, text=sug[f"description_{lang}"], need=gb(sug["per_gpu_gb"]),
                        n=sug["n_gpus"], gpu=sug["gpu"]))  # fmt: skip
        if "offload" in sug["settings"] and not r["host_ram_gb"]:  # the host RAM an offload moves states to
            moved = run("fit_training", {**training_args(s), **sug["settings"]})["host_ram_gb"]
            todo += [say("host_ram", lang, ram=gb(moved))] if moved else []
            if moved and (have := host_ram(p)) is not None:  # the RAM the user gave, against what it needs
                todo.append(say("host_ram_enough" if have[1] >= moved else "host_ram_short", lang, have=have[0]))
    if any("offload" in x["settings"] for x in r["suggestions"]) and not r["host_ram_gb"]:
        run("fit_training", training_args(s))  # the run answered stays the last one called (the probes came after it)
    shown_more = any(x["change"] == "more_gpus" for x in near)
    if r["min_gpus"] and r["min_gpus"] != r["n_gpus"] and not shown_more and (r["min_gpus"] <= MANY_GPUS or not near):
        todo.append(say("min_gpus_train", lang, n=r["min_gpus"], gpu=r["gpu"], zero=r["min_gpus_zero_stage"]))
    elif not r["min_gpus"] and not any(x["change"] == "quant_storage" for x in near):
        todo.append(say("min_gpus_none", lang))  # (a 4-bit base ZeRO-3 leaves whole: the storage line says the way)
    if r["host_ram_gb"]:
        todo.append(say("host_ram", lang, ram=gb(r["host_ram_gb"])))
        if (have := host_ram(p)) is not None:  # the user's own host RAM against what the offload needs
            text, value = have
            todo.append(say("host_ram_enough" if value >= r["host_ram_gb"] else "host_ram_short", lang, have=text))
    if todo:
        out.add(say("todo_header", lang) + "\n" + "\n".join(todo))
    out.add(assumptions_block(r["assumptions"], lang))


def by_method(s: dict[str, Any], run: ToolRun, lang: str) -> str:
    """Full, LoRA and QLoRA on the question's card: each method's fewest GPUs (with its ZeRO stage), the memory
    per GPU at that count against usable, and the unsharded total; with a token count, each run's time and rented
    cost at that count. All from `fit_training`, `model_memory`, `training_time` and `run_cost`."""
    tokens = s.get("tokens")
    head = rule = ""
    if tokens:
        head, rule = say("methods_time_head", lang, tokens=count(int(tokens))), "---|---|"
    rows = []
    for method in METHODS:
        base = {**training_args({**s, "method": method, "n_gpus": 1}), "grad_checkpointing": True}
        base.pop("zero_stage", None)
        if method == "qlora":  # counted as planned: the 4-bit base in bf16 storage, which ZeRO-3 and FSDP shard
            base["quant_storage"] = "bf16"
        probe = run("fit_training", base)
        total = gb(run("model_memory", {"model": s["model"], "method": method})["training_total_gb"])
        n = probe["min_gpus"]
        cells = ""
        if not n:
            cells = " — | — |" if tokens else ""
            rows.append(say("methods_row_none", lang, method=method_label(method, lang).strip(), many=MANY_GPUS * 16,
                            total=total, time_cells=cells))  # fmt: skip
            continue
        stage = probe["min_gpus_zero_stage"] if n > 1 else None
        r = probe if n == probe["n_gpus"] else run("fit_training", {**base, "n_gpus": n, "zero_stage": stage or 0})
        if tokens:
            cells = _method_time(s, method, n, run, lang)
        zero = say("methods_zero", lang, stage=stage) if stage else say("methods_zero_none", lang)
        rows.append(say("methods_row", lang, method=method_label(method, lang).strip(), n=n, zero=zero,
                        need=gb(r["per_gpu_gb"]), usable=usable(r, lang), total=total, time_cells=cells))  # fmt: skip
    gpu = get_gpu(s["gpu"]).name
    return (
        "\n".join([say("methods_header", lang, gpu=gpu, time_head=head, time_rule=rule), *rows])
        + "\n\n"
        + say("methods_note", lang)
    )


def _method_time(s: dict[str, Any], method: str, n: int, run: ToolRun, lang: str) -> str:
    """One method's time and rented cost for the question's tokens on `n` GPUs, as two table cells."""
    t = run("training_time", {**timing_args(s, method), "n_gpus": n})
    try:
        c = run(
            "run_cost",
            {
                "gpu": s["gpu"],
                "gpu_hours": t["gpu_hours"],
                **({"price_cny_per_hour": s["price_cny_per_hour"]} if s.get("price_cny_per_hour") else {}),
            },
        )
        cost = money(c["total_cny"], lang)
    except AdvisorError:
        cost = "—"
    return f" {duration(t['hours'], lang)} | {cost} |"


def min_gpus(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    """“How many GPUs?”: find the minimum (serving or training), then show the fit at that count."""
    infer = is_inference(s)
    degrees = {} if infer else parallel_degrees(p.text)
    if degrees and s.get("n_gpus") == prod(degrees.values()):  # the layout the user set decides the count
        _parallel_headline(degrees, out)
        fit({**s, "tp": degrees["tp"], "pp": degrees["pp"]}, p, run, out)
        return
    probe = run("fit_inference", serving_args(s)) if infer else run("fit_training", training_args(s))
    if probe["min_gpus"] and probe["min_gpus"] != probe["n_gpus"]:
        s = {**s, "n_gpus": probe["min_gpus"]}
        if not infer:
            s["zero_stage"] = probe["min_gpus_zero_stage"]
    # "多少卡微调 X": full, LoRA and QLoRA side by side, each with its own count (worked out first, so that the
    # run answered is the last one called)
    fit(s, p, run, out, methods=by_method(s, run, out.lang) if unnamed_finetune(s, p) else "")


def _parallel_headline(degrees: dict[str, int], out: Out) -> None:
    """ "tensor_parallelism=2 pipeline_parallelism=8, how many GPUs": TP × PP (× DP) is the count, said first;
    whole 8-GPU servers for it."""
    n, per_node = prod(degrees.values()), 8
    values = {"n": n, "tp": degrees["tp"], "pp": degrees["pp"], "per_node": per_node, "nodes": -(-n // per_node)}
    if "dp" in degrees:
        out.add(say("parallel_count_dp_set", out.lang, dp=degrees["dp"], **values))
    else:
        out.add(say("parallel_count", out.lang, dp_text="", **values))


def time(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    lang = out.lang
    method = s.get("method") or "full"
    args = timing_args(s, method)
    n = args["n_gpus"]
    if s.get("precision") in ("bf16", "fp16", "fp8", "fp32"):
        args["precision"] = s["precision"]
    t = run("training_time", args)
    if s.get("deadline_hours") and p.n_gpus is None and t["hours"] > s["deadline_hours"]:
        t = _count_for_deadline(args, t, s["deadline_hours"], p, run, out)
        n = args["n_gpus"] = t["n_gpus"]
    elif s.get("deadline_hours"):  # a count was given: say whether it makes the deadline
        out.add(
            say(
                "deadline_met" if t["hours"] <= s["deadline_hours"] else "deadline_missed",
                lang,
                deadline=_deadline_words(p),
                n=t["n_gpus"],
                gpu=t["gpu"],
            )
        )
    out.add(
        say(
            "time_verdict",
            lang,
            time=duration(t["hours"], lang),
            low=duration(t["hours_low"], lang),
            high=duration(t["hours_high"], lang),
            n=t["n_gpus"],
            gpu=t["gpu"],
            method_label=method_label(method, lang),
            model=t["model"],
            tokens=count(t["tokens"]),
            flops=f"{t['total_flops']:.2e}",
        )
    )
    out.add(
        say(
            "time_detail",
            lang,
            mfu=pct(t["mfu"]),
            mfu_low=pct(t["mfu_low"]),
            mfu_high=pct(t["mfu_high"]),
            tps=f"{t['tokens_per_s']:,.0f}",
            comm=pct(t["comm_share"]),
            gpu_hours=f"{t['gpu_hours']:,.0f}",
        )
    )
    shown = _fit_shown(run, args)
    fit = run("fit_training", {**training_args({**s, "n_gpus": n, "method": method}), "grad_checkpointing": True})
    if not fit["fits"] and not shown:  # a fit part of this answer already said so, with its remedies
        out.add(
            say(
                "time_not_fit" if method == "full" else "time_not_fit_adapter",
                lang,
                need=gb(fit["per_gpu_gb"]),
                usable=usable(fit, lang),
                min_n=fit["min_gpus"] or "—",
            )
        )
    cost_of(t["gpu_hours"], s, run, out)
    out.add(assumptions_block(t["assumptions"], lang, ("model_architecture", "mfu", "seq_len", "nodes_fabric")))


def _fit_shown(run: ToolRun, args: dict[str, Any]) -> bool:
    """Whether an earlier part of this answer fitted the same run (model, card, count, method) in memory."""
    same = ("model", "gpu", "n_gpus", "method")
    return any(c.tool == "fit_training" and all(c.input.get(k) == args.get(k) for k in same) for c in run.calls)


def _deadline_words(p: ParsedQuestion) -> str:
    """The deadline as the user wrote it ("三个月内", "within 30 days"): repeated, never converted."""
    return (p.mentions.get("deadline_days") or p.mentions.get("deadline_hours") or [""])[0]


#: counts tried for a deadline: whole 8-GPU nodes, doubling
DEADLINE_COUNTS = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)


def _count_for_deadline(
    args: dict[str, Any], first: dict[str, Any], deadline_h: float, p: ParsedQuestion, run: ToolRun, out: Out
) -> dict[str, Any]:
    """ "三个月内训完要几张": the run timed on doubling counts of whole nodes until it ends within the deadline
    (the estimate's middle); says the count and the one below it. Returns the timing the answer then uses."""
    lang = out.lang
    said = _deadline_words(p)
    previous = first
    for n in DEADLINE_COUNTS:
        if n <= first["n_gpus"]:
            continue
        t = run("training_time", {**args, "n_gpus": n})
        if t["hours"] <= deadline_h:
            out.add(
                say(
                    "deadline_count",
                    lang,
                    deadline=said,
                    n=n,
                    gpu=t["gpu"],
                    time=duration(t["hours"], lang),
                    prev_n=previous["n_gpus"],
                    prev_time=duration(previous["hours"], lang),
                )
            )
            return t
        previous = t
    out.add(
        say(
            "deadline_none",
            lang,
            deadline=said,
            n=previous["n_gpus"],
            gpu=previous["gpu"],
            time=duration(previous["hours"], lang),
        )
    )
    return previous


def cost_of(gpu_hours: float, s: dict[str, Any], run: ToolRun, out: Out) -> None:
    lang = out.lang
    args: dict[str, Any] = {"gpu": s["gpu"], "gpu_hours": gpu_hours, **user_price(s)}
    try:
        c = run("run_cost", args)
    except AdvisorError:
        out.add(say("cost_no_price", lang, gpu=get_gpu(s["gpu"]).name))
        return
    if c["price_source"] == "user":
        out.add(
            say("cost_user_price", lang, price=rate(c["price_cny_per_hour"], lang), total=money(c["total_cny"], lang))
        )
    else:
        out.add(say("cost_line", lang, **cost_span(c, lang)))
    price_notes(s, c, "price_cny_per_hour", out)


def user_price(s: dict[str, Any]) -> dict[str, float]:
    """run_cost's price input from the price the user gave: in 元, else in dollars (converted by the calculator at
    its dated rate); {} for the catalog's."""
    if s.get("price_cny_per_hour"):
        return {"price_cny_per_hour": s["price_cny_per_hour"]}
    if s.get("price_usd_per_hour"):
        return {"price_usd_per_hour": s["price_usd_per_hour"]}
    return {}


def cost_span(c: dict[str, Any], lang: str) -> dict[str, str]:
    """A run_cost output at a catalog price as the cost lines say it: the price and its range, the total and its
    range, the price's source."""
    low, high = money_span(c["low_cny"], c["high_cny"], lang)
    return {
        "price": rate(c["price_cny_per_hour"], lang),
        "price_low": rate(c["price_low_cny_per_hour"], lang),
        "price_high": rate(c["price_high_cny_per_hour"], lang),
        "total": money(c["total_cny"], lang),
        "low": low,
        "high": high,
        "source": short_source(c["price_source"], lang),
    }


def price_notes(s: dict[str, Any], r: dict[str, Any], key: str, out: Out) -> None:
    """Where the price per card-hour came from when it is not plainly the card's own quote: the user's dollar price
    in 元 at the calculator's dated rate, or the quote of the card that shares the silicon."""
    said = {a["key"]: a for a in r["assumptions"]}
    if s.get("price_usd_per_hour") and not s.get("price_cny_per_hour"):
        usd, fx = f"{s['price_usd_per_hour']:g}", f"{said['fx_cny_per_usd']['value']:g}"
        out.add(say("usd_price_note", out.lang, usd=usd, cny=rate(r[key], out.lang), fx=fx))
    for kind in ("rental", "purchase"):
        if twin := said.get(f"{kind}_price_of"):
            out.add(say(f"twin_{kind}_price", out.lang, gpu=r["gpu"], twin=twin["value"]))
