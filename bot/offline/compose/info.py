"""Composers for choosing cards and for words: specs, compare, domestic alternatives, recommend, knowledge."""

from __future__ import annotations

import re
from typing import Any

from bot.core.toolbox import ToolRun
from bot.offline.compose import relevance
from bot.offline.compose.evidence import against_bandwidth
from bot.offline.compose.money import _PRICE_WORDS, price_ranges
from bot.offline.compose.serving import fewest_that_hold
from bot.offline.compose.shortlist import pick_gpu, pick_time, picks, sourcing_args, spec_distance, without_excluded
from bot.offline.compose.toolargs import assumed, budget_args, is_inference, n_of, serving_args
from bot.offline.compose.train import by_method
from bot.offline.say.assumptions import assumptions_block
from bot.offline.say.phrases import localize_name, say
from bot.offline.say.render import Out, count, duration, excerpt, gb, method_label, money, usable
from bot.offline.understand.frames import ASK_DEFAULTS, DEFAULT_GPU
from bot.offline.understand.parse import ParsedQuestion
from tools.catalog.lookup import get_gpu, get_model, gpus
from tools.errors import AdvisorError


def compare(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    lang = out.lang
    names = list(dict.fromkeys(s.get("gpus") or [s["gpu"]]))
    if len(names) < 2:  # one card named: compared with the reference card (said in the answer's defaults note)
        names.append(DEFAULT_GPU if names[0] != DEFAULT_GPU else "h100-sxm5-80gb")
    if _PRICE_WORDS.search(p.text) and not s.get("model"):
        for name in names[:4]:  # "A100 40G 和 80G 价格差多少": the price ranges side by side
            price_ranges(name, run, out)
        return
    r = run("compare_gpus", {"gpus": names})
    against_bandwidth(r["rows"], r["ratios_to_first"], p, out)  # "A100 only 40 tok/s, 4090 and L40 over 50": first
    out.add(say("compare_intro", lang, names=" / ".join(row["name"] for row in r["rows"])))
    out.add(_spec_table(r["rows"], lang))
    first = r["rows"][0]["name"]
    lines = [
        say("compare_ratio", lang, gpu=row["name"], first=first, mem=_x(x["memory"]), bw=_x(x["bandwidth"]),
            bf16=_x(x["bf16"]))
        for row, x in zip(r["rows"][1:], r["ratios_to_first"][1:])
    ]  # fmt: skip
    out.add("\n".join(lines))
    example = not s.get("model") and not (p.unknown_models or p.unknown_gpus) and is_inference(s)
    if example:  # "L20 和 4090 做推理哪个划算": serving figures need a model, so one is taken as the example, said
        s = {**s, "model": ASK_DEFAULTS["model"]}
        out.add(say("compare_serving_example", lang, model=localize_name(get_model(s["model"]).name, lang)))
    if s.get("model"):
        for name in names[:3]:
            if example or _SPEED_WORDS.search(p.text):  # "训练 70B 速度差多少": the job itself timed on each card
                job_line(s, name, run, out)
            else:
                fit_line(s, name, run, out)
    if any(get_gpu(n).vendor != "nvidia" for n in names):
        out.add(say("replace_note", lang))


_SPEED_WORDS = re.compile(r"速度|快|慢|多久|耗时|吞吐|token/s|tokens?/s|speed|faster|slower|how long|throughput", re.I)


def job_line(s: dict[str, Any], gpu: str, run: ToolRun, out: Out) -> None:
    """The question's job on one card of a comparison: decode speed on the fewest cards that hold the model when
    serving, else the training time on the question's count (8 by default) and tokens (1B by default)."""
    lang = out.lang
    if is_inference(s):
        args = {**serving_args(s), "gpu": gpu}
        f, _ = fewest_that_hold(args, s, run)
        if not f["fits"]:  # the count the question gave cannot hold it
            _served_line(f, out)
            return
        r = run("inference_speed", args)
        out.add(
            say(
                "compare_speed_line",
                lang,
                n=r["n_gpus"],
                gpu=r["gpu"],
                model=r["model"],
                precision=r["precision"],
                decode=f"{r['decode_tokens_per_s']:,.1f}",
                total=f"{r['total_tokens_per_s']:,.0f}",
            )
        )
        return
    method = s.get("method") or ("lora" if s.get("workload") == "finetune" else "full")  # as the time answer
    t = run(
        "training_time",
        {
            "model": s["model"],
            "gpu": gpu,
            "n_gpus": n_of(s, 8),
            "tokens": int(s.get("tokens") or 1_000_000_000),
            "method": method,
        },
    )
    out.add(
        say(
            "compare_time_line",
            lang,
            n=t["n_gpus"],
            gpu=t["gpu"],
            model=t["model"],
            tokens=count(t["tokens"]),
            method_label=method_label(method, lang),
            time=duration(t["hours"], lang),
            low=duration(t["hours_low"], lang),
            high=duration(t["hours_high"], lang),
        )
    )


def fit_line(s: dict[str, Any], gpu: str, run: ToolRun, out: Out) -> None:
    """Whether the question's model fits one card of a comparison: served (on the question's count, else one
    card) when the question is about serving, else trained (LoRA unless a method was named)."""
    lang = out.lang
    if is_inference(s):
        f = run("fit_inference", {**serving_args(s), "gpu": gpu})
        if not f["fits"] and f["min_gpus"] and not s.get("n_gpus"):  # a big model: how many of this card it takes
            out.add(
                say(
                    "replace_fit_infer_min",
                    lang,
                    model=f["model"],
                    precision=assumed(f, "precision"),
                    gpu=f["gpu"],
                    n=f["min_gpus"],
                )
            )
        else:
            _served_line(f, out)
        return
    method = s.get("method") or "lora"
    f = run("fit_training", {"model": s["model"], "gpu": gpu, "method": method, "grad_checkpointing": True})
    out.add(
        say(
            "replace_fit",
            lang,
            model=f["model"],
            method_label=method_label(method, lang),
            gpu=f["gpu"],
            verdict=say("yes_fits" if f["fits"] else "no_fits", lang),
            need=gb(f["per_gpu_gb"]),
            usable=usable(f, lang),
        )
    )


def _served_line(f: dict[str, Any], out: Out) -> None:
    """A fit_inference output as one line of a comparison: fits or not, per-GPU need against usable."""
    lang = out.lang
    verdict = say("yes_fits" if f["fits"] else "no_fits", lang)
    out.add(say("replace_fit_infer", lang, model=f["model"], precision=assumed(f, "precision"), n=f["n_gpus"],
                gpu=f["gpu"], verdict=verdict, need=gb(f["per_gpu_gb"]), usable=usable(f, lang)))  # fmt: skip


def _x(v: float | None) -> str:
    return "—" if v is None else f"{v:g}"


def _spec_table(rows: list[dict[str, Any]], lang: str) -> str:
    head = (
        "| GPU | 显存 | 带宽 GB/s | BF16 TFLOPS | FP8 TFLOPS | 互联 GB/s | 功耗 W |\n|---|---|---|---|---|---|---|"
        if lang == "zh"
        else "| GPU | memory | bandwidth GB/s | BF16 TFLOPS | FP8 TFLOPS | link GB/s | TDP W |\n|---|---|---|---|---|---|---|"
    )
    lines = [head]
    for r in rows:
        vals = [
            f"{r['memory_gb']:g} GB",
            r["bandwidth_gb_s"],
            r["bf16_tflops"] or r["fp16_tflops"],
            r["fp8_tflops"],
            r["interconnect_gb_s"],
            r["tdp_w"],
        ]
        lines.append(
            "| "
            + r["name"]
            + " | "
            + " | ".join("—" if v is None else (v if isinstance(v, str) else f"{v:g}") for v in vals)
            + " |"
        )
    return "\n".join(lines)


def _named_cards(s: dict[str, Any]) -> list[str]:
    """The cards the frame names, once each, in the order given."""
    return list(dict.fromkeys(s.get("gpus") or ([s["gpu"]] if s.get("gpu") else [])))


def specs(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    lang = out.lang
    names = _named_cards(s)
    if not names:
        knowledge(s, p, run, out)
        return
    for name in names[:4]:
        r = run("gpu_specs", {"gpu": name})
        # the catalog's notes in the answer's language; the template ends the sentence, so the note's own stop goes
        if lang == "zh":
            china = ("可采购" if r["china_available"] else "受限") + "，" + r["china_note_zh"].rstrip("。")
            link_kind, mem_type = r["interconnect_kind_zh"], r["memory_type_zh"]
        else:
            china = ("available" if r["china_available"] else "restricted") + " — " + r["china_note"].rstrip(".")
            link_kind, mem_type = r["interconnect_kind"], r["memory_type"]
        out.add(
            say(
                "specs_line",
                lang,
                gpu=r["name"],
                mem=f"{r['memory_gb']:g} GB",
                mem_type=mem_type,
                bw=_unit(r["bandwidth_gb_s"], "GB/s"),
                bf16=_unit(r["bf16_tflops"], "TFLOPS")
                if r["bf16_tflops"] or not r["fp16_tflops"]
                else say("no_bf16", lang, fp16=_unit(r["fp16_tflops"], "TFLOPS")),  # V100, T4: FP16 only
                fp8=_unit(r["fp8_tflops"], "TFLOPS"),
                link=_unit(r["interconnect_gb_s"], "GB/s"),
                link_kind=link_kind,
                tdp=_unit(r["tdp_w"], "W"),
                china=china,
            )
        )
    if p.user_figures and names:
        money_claims = [f for f in p.user_figures if f.unit == "CNY"]
        if money_claims:
            price_ranges(names[0], run, out, claim=money_claims[0].text)


def availability(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    """Can the card be bought in mainland China: the catalog's status and note, its price when on file, and for a
    restricted card the cards that can be bought and come closest in memory and compute."""
    lang = out.lang
    names = _named_cards(s)
    restricted: list[dict[str, Any]] = []
    for name in names[:4]:
        r = run("gpu_specs", {"gpu": name})
        note = r["china_note_zh"] if lang == "zh" else r["china_note"]
        out.add(say("availability_yes" if r["china_available"] else "availability_no", lang, gpu=r["name"], note=note))
        if r["china_available"] and (r["purchase_low_cny"] or r["rent_low_cny_per_hour"]):
            price_ranges(name, run, out)
        elif not r["china_available"]:
            restricted.append(r)
    if restricted:
        target = restricted[0]
        nearest = _nearest_available(target)
        if nearest:
            table = run("compare_gpus", {"gpus": [target["id"], *nearest]})
            out.add(say("availability_alternatives", lang, gpu=target["name"]))
            out.add(_spec_table(table["rows"], lang))


def _nearest_available(r: dict[str, Any], n: int = 3) -> list[str]:
    """Cards sold in mainland China closest to `r` in memory and dense 16-bit compute (log distance), newest first
    among equals; cards without either figure are left out."""
    if not (r["memory_gb"] and (r["bf16_tflops"] or r["fp16_tflops"])):
        return []
    scored = [
        (round(spec_distance(r, g), 6), -(g.launch_year or 0), g.id)
        for g in gpus()
        if g.id != r["id"] and g.china.available and g.memory_gb and (g.bf16_tflops or g.fp16_tflops)
    ]
    return [gid for _, _, gid in sorted(scored)[:n]]


def _unit(v: float | None, unit: str) -> str:
    return "—" if v is None else f"{v:g} {unit}"


def recommend(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    lang = out.lang
    # "训练" alone is the common case, fine-tuning; training from scratch is said ("预训练", "from scratch")
    workload = {"pretrain": "train", "infer": "infer"}.get(s.get("workload") or "", "finetune")
    args: dict[str, Any] = {"model": s.get("model") or "7B", "workload": workload}
    if s.get("method") and workload != "infer":
        args["method"] = s["method"]
    if workload != "infer":
        args["tokens"] = s.get("tokens") or 1_000_000_000
    for key in ("deadline_hours", "batch", "context_len"):
        if s.get(key):
            args[key] = s[key]
    args.update(budget_args(s))
    r = without_excluded(run("recommend_gpus", {**args, **sourcing_args(s, p, out)}), s)
    chosen = picks(r, out)
    if not chosen:
        return
    best = r.get("best_value") or r.get("cheapest") or chosen[-1][1]
    out.add(say("recommend_intro", lang, n=best["n_gpus"], gpu=best["gpu"], workload=workload, model=args["model"]))
    lines = []
    for label, o in chosen:
        cost = money(o["total_cny"], lang) if o.get("total_cny") is not None else "—"
        lines.append(
            say(
                "recommend_pick",
                lang,
                label=label,
                n=o["n_gpus"],
                gpu=pick_gpu(o, lang),
                time=pick_time(o, lang),
                cost=cost,
            )
        )
    out.add("\n".join(lines))
    defaulted = not (s.get("china_only") or s.get("domestic_only"))  # the mainland filter by default: said once
    shown = [d for d in r.get("dropped", []) if not (defaulted and d.get("reason") == "not_in_china")]
    dropped = [say("dropped_line", lang, gpu=d["gpu"], reason=d[f"reason_{lang}"]) for d in shown[:4]]
    if dropped:
        out.add("\n".join(dropped))
    if workload == "finetune" and p.method is None and s.get("model"):  # each method's count on the pick's card
        out.add(by_method({**s, "gpu": best["gpu"], "tokens": args["tokens"]}, run, lang))
    out.add(
        assumptions_block(
            r["assumptions"], lang, ("pricing", "method", "grad_checkpointing", "tokens", "fx_cny_per_usd")
        )
    )


#: what decides most answers, in the order asked back, with the slot that says it is known
DECIDING = (("workload", "back_workload"), ("models", "back_model"), ("gpus", "back_gpu"))


def ask_back(p: ParsedQuestion, lang: str) -> str:
    """Nothing to compute and nothing in the knowledge base: one short question for the two or three things
    that decide the answer (those the question does not already say), never a bare "nothing found"."""
    missing = [
        say(key, lang) for slot, key in DECIDING if not getattr(p, slot) and not (slot == "models" and p.unknown_models)
    ]
    # only a question about a job of its own (a card, a model, a count, a job word) is helped by being asked back
    about_a_job = p.gpus or p.models or p.unknown_models or p.n_gpus or p.workload or p.method
    if not missing or not about_a_job or p.intent in ("out_of_scope", "greeting"):
        return say("knowledge_none", lang)
    return say("ask_back", lang, items=("、" if lang == "zh" else ", ").join(missing))


def knowledge(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    """One direct sentence first (the best passage's most relevant sentence, cited), then at most two passages
    above the relevance cut-off; nothing below it is shown."""
    lang = out.lang
    r = run("search_knowledge", {"query": (asked := relevance.asked(p.text))[:500], "k": 5, "lang": lang})
    if not r["passages"]:
        r = run("search_knowledge", {"query": asked[:500], "k": 5})
    terms = relevance.terms(asked)
    ranked = relevance.relevant(terms, [x for x in r["passages"] if "```" not in x["text"]])
    if not ranked:
        out.add(ask_back(p, lang))
        return
    best = ranked[0]
    sentence = relevance.best_sentence(terms, excerpt(best["text"], limit=1200))
    out.add(say("knowledge_direct", lang, sentence=sentence, n=ref_number(run, best["doc_id"])))
    shown = [x for x in ranked[:2] if len(excerpt(x["text"])) >= 80]
    if shown:
        out.add(say("knowledge_more", lang))
    for passage in shown:
        body = excerpt(passage["text"])
        marker = f" [{ref_number(run, passage['doc_id'])}]"
        out.add("\n".join(f"> {line}" for line in body.splitlines()) + marker)


def domestic(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    """Chinese-vendor cards beside the card to replace: a spec table (and the fit of a model, when named)."""
    lang = out.lang
    target = s["gpu"]
    home = [g.id for g in gpus() if g.domestic]
    if not home:
        out.add(say("domestic_none", lang))
        return
    r = run("compare_gpus", {"gpus": [target, *home[:6]]})
    out.add(say("domestic_intro", lang, gpu=r["rows"][0]["name"]))
    out.add(_spec_table(r["rows"], lang))
    if s.get("model"):
        for name in [target, *home[:3]]:
            try:
                fit_line(s, name, run, out)
            except AdvisorError:
                continue
    out.add(say("replace_note", lang))


def ref_number(run: ToolRun, doc_id: str) -> int:
    """The [n] of a note in the sources list (one entry per note, in citation order)."""
    docs = list(dict.fromkeys(c.doc_id for c in run.citations))
    return docs.index(doc_id) + 1


def out_of_scope(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    empty = not re.search(r"[^\W_]", p.text or "")  # "？", "…": nothing asked yet, in no language: ask in both
    out.add(say("ask_what", "zh") + "\n\n" + say("ask_what", "en") if empty else say("out_of_scope", out.lang))


def greeting(s: dict[str, Any], p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    out.add(say("greeting", out.lang))


def drop_moot_ask_back(p: ParsedQuestion, run: ToolRun, out: Out) -> None:
    """The question back for a card is moot once the answer sized the job on one ("(GPU and CPU) for 70B SFT")."""
    sized = {"fit_training", "fit_inference", "recommend_gpus", "plan_serving", "plan_system"}
    if (back := ask_back(p, out.lang)) in out.blocks and any(c.tool in sized for c in run.calls):
        out.blocks.remove(back)
