"""A verdict for every choice ("选哪个", "which should we pick", "H20 还是 4090？"): the card to pick and the
figures that decide it, from the tool calls the answer already made.

Per card assessed: the count the job needs (the fit at the user's count, else the calculator's minimum), the
rental cost of that many cards for an hour (`run_cost`, at catalog prices) and whether it can be bought in
mainland China (the catalog's export status). The pick is the card that does the job for the least money
where every candidate has a price, else with the fewest cards, else with the most memory bandwidth (serving)
or compute (training). Restricted cards are flagged, with the pick among buyable cards when that differs.
Nothing here writes a figure of its own: every number shown is a tool output.

With no job to size ("H20 还是 4090？", "A100 or H100 for fine-tuning?") the comparison's spec rows decide: training
goes to the most BF16 compute per yuan of catalog rent (per card where a price is missing), serving to the most
memory bandwidth per yuan, a large model to the most memory per card. A named workload gets its pick; none gets
one line that says which card each use picks ("看用途"), or one pick when every use picks the same card.
"""

from __future__ import annotations

from typing import Any

from bot.core.toolbox import ToolRun
from bot.offline.say.phrases import say
from bot.offline.say.render import Out, money, num, rate
from tools.catalog.lookup import get_gpu
from tools.errors import AdvisorError

FIT_TOOLS = ("fit_inference", "fit_training")
#: a fit's inputs that make it another job (what a variant changes), not another card or count
JOB_KEYS = ("model", "precision", "method")


def _candidates(run: ToolRun) -> dict[str, dict[str, Any]]:
    """Per GPU (by its catalog name): the count needed, and the specs row when a comparison ran."""
    cards: dict[str, dict[str, Any]] = {}
    surveyed = getattr(run, "surveyed", set())  # the options a survey probed (count per card type) are no pick
    calls = [c for c in run.calls if c.id not in surveyed]
    fits = [c for c in calls if c.tool in FIT_TOOLS and c.output.get("gpu")]
    # the job as asked is the last fit (a variant at int4 or LoRA beside it is another job, not a cheaper count)
    same = {k: fits[-1].input.get(k) for k in JOB_KEYS} if fits else {}
    for call in calls:
        if call.tool in FIT_TOOLS and any(call.input.get(k) != v for k, v in same.items()):
            continue
        if call.tool == "compare_gpus":
            for row in call.output.get("rows", []):
                cards.setdefault(row["name"], {})["row"] = row
        elif call.tool in FIT_TOOLS and call.output.get("gpu"):
            o = call.output
            card = cards.setdefault(o["gpu"], {})
            card["tool"] = call.tool
            need = o["n_gpus"] if o.get("fits") else o.get("min_gpus")
            if need and (card.get("need") is None or need < card["need"]):
                card["need"], card["model"], card["gpu_id"] = need, o.get("model"), call.input.get("gpu")
                card["precision"] = call.input.get("precision")  # a quantised job is said as one
                card["tp"] = o.get("tp") if o.get("fits") and (o.get("pp") or 1) > 1 else None
            card.setdefault("need", None)
    return {name: c for name, c in cards.items() if "tool" in c}


def _rent(name: str, card: dict[str, Any], run: ToolRun) -> float | None:
    if not card.get("need"):
        return None
    try:
        r = run("run_cost", {"gpu": card["gpu_id"] or name, "n_gpus": card["need"], "hours": 1})
    except AdvisorError:
        return None
    return r.get("total_cny")


def _decode(name: str, card: dict[str, Any], run: ToolRun) -> float | None:
    """Decode tokens/s of the served model on the count it needs (serving only)."""
    if card["tool"] != "fit_inference" or not card.get("need") or not card.get("model"):
        return None
    # a pipeline split (TP=2 × PP=3 on 6 cards) decodes one sequence stage after stage: as fast as its TP group
    n = card.get("tp") or card["need"]
    try:
        args = {"model": card["model"], "gpu": card["gpu_id"] or name, "n_gpus": n}
        r = run("inference_speed", {**args, **({"precision": card["precision"]} if card.get("precision") else {})})
    except AdvisorError:
        return None
    return r.get("decode_tokens_per_s")


def _spread(name: str, card: dict[str, Any], run: ToolRun) -> int | None:
    """The servers a served model's count spans on a card with only PCIe between cards (no NVLink): a model split
    over several such machines sends every token's tensor-parallel traffic over the network, no workable setup.
    None: one server holds it, the card has NVLink, or the job is training (data parallel crosses servers)."""
    if card["tool"] != "fit_inference" or not card.get("need"):
        return None
    gpu = card["gpu_id"] or name
    try:
        link = get_gpu(gpu).interconnect
        kind = (link.kind if link else "").lower()
        if "nvlink" in kind and "no nvlink" not in kind:
            return None
        c = run("plan_cluster", {"gpu": gpu, "n_gpus": card["need"]})
    except AdvisorError:
        return None
    return c["nodes"] if c.get("nodes", 1) > 1 else None


def _speed_key(card: dict[str, Any]) -> float:
    row = card.get("row") or {}
    return -((row.get("bandwidth_gb_s") if card["tool"] == "fit_inference" else row.get("bf16_tflops")) or 0.0)


#: what decides each use when no job is sized: the spec row's field (a fallback field where it is missing)
VIEWS = {"train": ("bf16_tflops", "fp16_tflops"), "serve": ("bandwidth_gb_s",), "memory": ("memory_gb",)}
WORKLOAD_VIEW = {"pretrain": "train", "finetune": "train", "train": "train", "infer": "serve"}
UNIT = {"train": "TFLOPS", "serve": "GB/s", "memory": "GB"}


def _field(row: dict[str, Any], view: str) -> float | None:
    return next((row[f] for f in VIEWS[view] if row.get(f)), None)


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _spec_verdict(run: ToolRun, out: Out, at: int, china: bool, workload: str | None) -> None:
    """A choice between cards with no job to size: the pick per use from the comparison's rows and catalog rent."""
    rows: dict[str, dict[str, Any]] = {}
    for call in run.calls:
        if call.tool == "compare_gpus":
            for row in call.output.get("rows", []):
                rows.setdefault(row["name"], row)
    if len(rows) < 2:
        return
    lang, sep = out.lang, ("；" if out.lang == "zh" else "; ")
    rents = {n: _rent(n, {"need": 1, "gpu_id": r.get("id")}, run) for n, r in rows.items()}
    barred = {n for n, r in rows.items() if china and r.get("china_available") is False}

    def view(name: str) -> tuple[str, str] | None:
        """(the card this use picks, the sentence with the figures that decide it); None when nothing tells."""
        have = {n: _field(r, name) for n, r in rows.items() if _field(r, name)}
        if len(have) < 2 or (len(set(have.values())) == 1 and len(have) == len(rows)):
            return None  # a figure on one card only, or the same on every card: this use does not decide
        per_yuan = name != "memory" and all(rents[n] for n in have)
        best = max(have, key=lambda n: have[n] / rents[n] if per_yuan else have[n])
        buyable = [n for n in have if n not in barred]
        pick = (
            best
            if best not in barred or not buyable
            else max(buyable, key=lambda n: have[n] / rents[n] if per_yuan else have[n])
        )
        figs = "、" if lang == "zh" else ", "
        text = say(f"verdict_view_{name}", lang, gpu=best,
                   figs=figs.join(f"{n} {num(v)} {UNIT[name]}" for n, v in have.items()))  # fmt: skip
        if per_yuan:
            text += say("verdict_per_yuan", lang, what=say(f"verdict_what_{name}", lang))
        if pick != best:  # the best card cannot be bought in mainland China: the buyable one beside it
            text += say("verdict_view_buyable", lang, gpu=pick)
        missing = [n for n in rows if n not in have]
        if missing:
            text += say("verdict_view_missing", lang, gpus=" / ".join(missing))
        return pick, text

    views = {name: v for name in VIEWS if (v := view(name))}
    if not views:
        return
    if any(v is not None for v in rents.values()):  # the rent the per-yuan reasons stand on, said once
        figs = "、" if lang == "zh" else ", "
        known = figs.join(f"{n} {rate(v, lang)}" for n, v in rents.items() if v is not None)
        views["rent"] = ("", say("verdict_rents", lang, rents=known))
    wanted = WORKLOAD_VIEW.get(workload or "")
    if wanted in views:  # the use the user named decides; memory per card is said beside it
        pick = views[wanted][0]
        reasons = [views[wanted][1]] + [
            v[1] for k, v in views.items() if k == "rent" or (k == "memory" and v[0] != pick)
        ]
        text = say("verdict_pick", lang, gpu=pick, reasons=_cap(sep.join(reasons)))
    elif len({v[0] for k, v in views.items() if k != "rent"}) == 1:
        pick = views[next(k for k in views if k != "rent")][0]
        text = say("verdict_pick", lang, gpu=pick, reasons=_cap(sep.join(v[1] for v in views.values())))
    else:
        text = say("verdict_depends", lang, views=_cap(sep.join(v[1] for v in views.values())))
    restricted = [n for n in rows if n in barred]
    if restricted:
        verb = "are" if len(restricted) > 1 else "is"
        text += (
            " "
            + say("verdict_restricted", lang, gpus=" / ".join(restricted), verb=verb)
            + ("。" if lang == "zh" else ".")
        )
    other = [n for n, r in rows.items() if r.get("vendor") and r.get("vendor") != "nvidia"]
    if other and len(other) < len(rows):  # CUDA beside another stack: the software is part of the choice
        verb = "are" if len(other) > 1 else "is"
        text += " " + say("verdict_ecosystem", lang, gpus=" / ".join(other), verb=verb)
    out.blocks.insert(at, text)


def _assess_the_others(run: ToolRun, gpus: list[str]) -> None:
    """ "8张4090 或者 6张v100 能运行吗": the answer sized the job on the first card named; the same job on each other
    card named (one call each, the count left to the calculator) so that the choice weighs every card."""
    fits = [c for c in run.calls if c.tool in FIT_TOOLS and c.output.get("gpu")]
    if not fits or len(gpus) < 2:
        return
    asked = next((c for c in reversed(fits) if c.input.get("gpu") in gpus), fits[-1])
    done = {c.input.get("gpu") for c in fits if c.tool == asked.tool}
    for gpu in gpus:
        # "910B 系列 … 910B3": a family named beside one of its members names that member, not another card
        if gpu not in done and not any(o != gpu and o.startswith(gpu) for o in gpus):
            args = {k: v for k, v in asked.input.items() if k not in ("gpu", "n_gpus")}
            try:
                run(asked.tool, {**args, "gpu": gpu})
            except AdvisorError:
                continue


def verdict(
    asks: list[str],
    run: ToolRun,
    out: Out,
    at: int,
    china: bool = False,
    workload: str | None = None,
    gpus: list[str] | None = None,
    counts_named: bool = False,
) -> None:
    """When the user asked to choose between cards that the answer assessed, put the pick first. `china`: the
    buyer is in mainland China (asked in Chinese, or said so): a card that cannot be bought there ranks last.
    `gpus`: the catalog cards the user named, each assessed for the job before the pick; `counts_named`: each card
    came with the user's own count ("8张4090 或者 6张v100"), so where the rent is not known for all, the faster
    setup is the pick rather than the one with fewer cards."""
    named = len(dict.fromkeys(gpus or []))
    if "choose" not in asks and not (named >= 2 and "compare" in asks and set(asks) <= {"compare", "knowledge"}):
        return  # no choice asked; a question that only sets cards side by side ("A100 vs H100?") is one
    _assess_the_others(run, list(dict.fromkeys(gpus or [])))
    cards = _candidates(run)
    if len(cards) < 2:  # no job sized on two cards: the spec rows decide, per use
        _spec_verdict(run, out, at, china, workload)
        return
    lang = out.lang
    feasible = {n: c for n, c in cards.items() if c.get("need")}
    if not feasible:
        out.blocks.insert(at, say("verdict_none_fits", lang, gpus=" / ".join(cards)))
        return
    for name, card in feasible.items():
        card["rent"] = _rent(name, card, run)
        card["decode"] = _decode(name, card, run)
        card["spread"] = _spread(name, card, run) if len(feasible) > 1 else None
    priced = all(c.get("rent") is not None for c in feasible.values())
    timed = all(c.get("decode") for c in feasible.values())

    def key(item: tuple[str, dict[str, Any]]) -> tuple:
        c = item[1]
        barred = china and (c.get("row") or {}).get("china_available") is False
        # the money for the work: rent per decoded token when both are known, else rent, else cards, else speed
        per_work = c["rent"] / c["decode"] if priced and timed else c["rent"] if priced else 0.0
        spread = c["spread"] is not None  # a model split over servers of PCIe-only cards ranks after any other
        if counts_named and timed and not priced:
            return (barred, spread, -c["decode"], c["need"])
        return (barred, spread, per_work, c["need"], _speed_key(c))

    ranked = sorted(feasible.items(), key=key)
    pick, card = ranked[0]
    others = [n for n in cards if n != pick]
    counts = [
        say("verdict_count_other", lang, gpu=n, n=cards[n]["need"])
        if cards[n].get("need")
        else say("verdict_no_fit_other", lang, gpu=n)
        for n in others
    ]
    sep = "；" if lang == "zh" else "; "
    job = (card.get("model") or "") + (" " if card.get("model") else "")
    if card.get("precision"):  # the counts are for the quantised job (the one that fits): said, so that a count of
        job += say("verdict_precision", lang, precision=card["precision"])  # one is never read as the bf16 one's
    reasons = [say("verdict_count", lang, job=job, n=card["need"], gpu=pick, others=sep.join(counts))]
    if timed:
        speeds = [
            say("verdict_speed_other", lang, gpu=n, tps=num(feasible[n]["decode"])) for n in others if n in feasible
        ]
        reasons.append(say("verdict_speed", lang, tps=num(card["decode"]), others=sep.join(speeds)))
    if priced:
        rents = [
            say("verdict_rent_other", lang, gpu=n, cost=money(feasible[n]["rent"], lang))
            for n in others
            if n in feasible
        ]
        reasons.append(say("verdict_rent", lang, cost=money(card["rent"], lang), others=sep.join(rents)))
    elif any(c.get("rent") is not None for c in feasible.values()):  # the prices on file, and the gap named
        known = [
            say("verdict_rent_other", lang, gpu=n, cost=rate(c["rent"], lang))
            for n, c in feasible.items()
            if c.get("rent") is not None
        ]
        missing = [n for n, c in feasible.items() if c.get("rent") is None]
        reasons.append(say("verdict_rent_partial", lang, known=sep.join(known), missing=" / ".join(missing)))
    spreads = [(n, c) for n, c in feasible.items() if c.get("spread")]
    reasons += [say("verdict_spread", lang, gpu=n, n=c["need"], nodes=c["spread"]) for n, c in spreads]
    restricted = [n for n, c in cards.items() if (c.get("row") or {}).get("china_available") is False]
    if restricted and china:
        verb = "are" if len(restricted) > 1 else "is"
        reasons.append(say("verdict_restricted", lang, gpus=" / ".join(restricted), verb=verb))
    text = say("verdict_pick", lang, gpu=pick, reasons=sep.join(reasons))
    if pick in restricted and china:
        buyable = [n for n, _ in ranked if n not in restricted]
        if buyable:
            text += " " + say("verdict_depends_available", lang, gpu=buyable[0])
    out.blocks.insert(at, text)
