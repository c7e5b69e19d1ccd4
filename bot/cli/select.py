"""What to buy. `gpu-advisor recommend`: which GPUs, how many, how long and at what cost, and why the others were
dropped. `gpu-advisor proposal`: a dated proposal a sales engineer can send — the requirement as understood, the
options side by side, the recommendation and why, the bill of materials (Markdown and an XLSX workbook), the
assumptions, what was left out and the validity date; every figure a `plan_system` output, the words in
`bot/offline/say/templates/proposal.yaml`. Example: gpu-advisor proposal --job finetune --model Qwen2.5-14B --budget-cny 2000000

The options take their default and help from the input model (`option_from`): `--workload` has no default,
as the calculator has none.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated

import typer
from rich.panel import Panel

from bot.cli.output import JsonOpt, assumptions_table, calculate, console, fmt, lang_of, option_from, table
from bot.offline.say.proposal import files
from tools.schemas.plan import PlanSystemInput as Sys
from tools.schemas.recommend import RecommendInput as Rec


def _fig(x: float | None, money: bool = False) -> str:
    """Three significant digits for hours and tokens/s; whole 元 for money."""
    if x is None:
        return "—"
    if money or x >= 100:
        return f"{x:,.0f}"
    return f"{float(f'{x:.3g}'):g}"


def _range(mid: float | None, low: float | None, high: float | None, money: bool = False) -> str:
    if mid is None:
        return "—"
    text = _fig(mid, money)
    if low is not None and high is not None and low != high:
        text += f" ({_fig(low, money)}–{_fig(high, money)})"
    return text


def _grouped(dropped: list[dict], zh: bool) -> list[tuple[str, str]]:
    """One row per distinct reason, naming every GPU it applies to."""
    groups: dict[str, list[str]] = {}
    for d in dropped:
        groups.setdefault(d["reason_zh"] if zh else d["reason_en"], []).append(d["gpu"])
    return [(", ".join(names), reason) for reason, names in groups.items()]


def recommend(
    model: str = option_from(Rec, "model", "--model", "-m"),
    workload: str = option_from(Rec, "workload", "--workload", "-w"),
    method: str | None = option_from(Rec, "method"),
    tokens: str | None = option_from(Rec, "tokens", "--tokens", "-t"),
    budget: float | None = option_from(Rec, "budget_cny", "--budget"),
    deadline_hours: float | None = option_from(Rec, "deadline_hours"),
    china: bool | None = option_from(Rec, "china_available", "--china"),
    pricing: str = option_from(Rec, "pricing"),
    seq_len: int = option_from(Rec, "seq_len"),
    batch: int = option_from(Rec, "batch"),
    context_len: int = option_from(Rec, "context_len"),
    precision: str = option_from(Rec, "precision"),
    max_gpus: int = option_from(Rec, "max_gpus"),
    top_k: int = option_from(Rec, "top_k", "--top"),
    as_json: JsonOpt = False,
) -> None:
    """Rank GPU types and counts for a job under a budget, a deadline and China availability.

    Examples: gpu-advisor recommend --model 70B --workload finetune --method lora --tokens 1B --budget 300000
              gpu-advisor recommend --model Qwen2.5-7B --workload finetune --tokens 1B --china
              gpu-advisor recommend --model 70B --workload infer --batch 16 --pricing buy
    """
    args = {
        "model": model,
        "workload": workload,
        "method": method,
        "tokens": tokens,
        "budget_cny": budget,
        "deadline_hours": deadline_hours,
        "china_available": china,
        "pricing": pricing,
        "seq_len": seq_len,
        "batch": batch,
        "context_len": context_len,
        "precision": precision,
        "max_gpus": max_gpus,
        "top_k": top_k,
    }
    lang = lang_of(model + (tokens or ""))
    r = calculate("recommend_gpus", args, lang, as_json)
    if r is None:
        return
    render(r, lang)


def render(r: dict, lang: str = "en") -> None:
    zh = lang == "zh"
    infer = r["workload"] == "infer"
    job = f"{r['workload']}" + (f" ({r['method']})" if r["method"] else "")
    tokens = f", {r['tokens']:,} tokens" if r["tokens"] else ""
    cost_col = {"buy": "cards, 元", "rent": "rent / month, 元" if infer else "rent, 元"}[r["pricing"]]
    columns = ["#", "GPU", "n", "GB / GPU", "ZeRO", "tokens/s" if infer else "hours", cost_col, "China"]
    rows = []
    for o in r["options"]:  # the why column is for the picks below; the table keeps to figures
        speed = _fig(o["tokens_per_s"]) if infer else _range(o["hours"], o["hours_low"], o["hours_high"])
        rows.append(
            (
                o["rank"],
                o["gpu"],
                o["n_gpus"],
                f"{fmt(o['per_gpu_gb'])} / {fmt(o['usable_gb'])}",
                o["zero_stage"],
                speed,
                _range(o["total_cny"], o["low_cny"], o["high_cny"], money=True),
                o["china_available"],
            )
        )
    caption = f"cost: {r['cost_basis']}"
    if r["more_options"]:
        caption += f"\n{r['more_options']} more option(s) pass; show them with --top"
    if rows:
        console.print(table(f"GPU options for {job} of {r['model']}{tokens}", columns, rows, caption=caption))
    console.print(Panel(r["verdict_zh"] if zh else r["verdict_en"], expand=False))
    picks = [
        (label, r[key])
        for key, label in (("cheapest", "cheapest"), ("fastest", "fastest"), ("best_value", "best value"))
        if r[key]
    ]
    if picks:
        t = table("Picks", ["", "why"], [(label, o["why_zh"] if zh else o["why"]) for label, o in picks])
        t.columns[1].justify = "left"
        console.print(t)
    if r["dropped"]:
        t = table("Dropped", ["GPU", "reason"], _grouped(r["dropped"], zh))
        t.columns[1].justify = "left"
        console.print(t)
    console.print(assumptions_table(r["assumptions"]))


# ---- gpu-advisor proposal --------------------------------------------------------------------------------


def proposal(
    job: str = option_from(Sys, "job"),
    model: str = option_from(Sys, "model", "--model", "-m"),
    budget_cny: float | None = option_from(Sys, "budget_cny", "--budget-cny"),
    deadline_hours: float | None = option_from(Sys, "deadline_hours"),
    tokens: str = typer.Option("1B", "--tokens", help="finetune/train: training tokens, e.g. '1B', '10亿'."),
    method: str | None = option_from(Sys, "method"),
    concurrency: int | None = option_from(Sys, "concurrency"),
    daily_users: int | None = option_from(Sys, "daily_users"),
    domestic: bool = option_from(Sys, "domestic"),
    lang: Annotated[str, typer.Option("--lang", help="zh or en.")] = "zh",
    hours_per_day: Annotated[
        float, typer.Option("--hours-per-day", min=0.1, max=24, help="The cost chart: hours a day the cards are busy.")
    ] = 24,
    months: Annotated[
        int, typer.Option("--months", min=1, max=120, help="The cost chart: the horizon in months.")
    ] = 36,
    out: Annotated[
        Path, typer.Option("--out", help="Folder for proposal.md, bom.xlsx, tco.png and capacity.png.")
    ] = Path("proposal"),
) -> None:
    """Write a dated proposal (proposal.md), its bill of materials (bom.xlsx) and its charts (tco.png: rent vs own by
    month; capacity.png: cards vs peak load, or hours vs cards) for a job and a budget or deadline."""
    args = {
        "job": job,
        "model": model,
        "budget_cny": budget_cny,
        "deadline_hours": deadline_hours,
        "tokens": tokens,
        "method": method,
        "concurrency": concurrency,
        "daily_users": daily_users,
        "domestic": domestic,
    }
    lang = "en" if lang == "en" else "zh"
    r = calculate("plan_system", {k: v for k, v in args.items() if v not in (None, False)}, lang)
    if r is None:
        return
    made = files(r, {**args, "hours_per_day": hours_per_day, "months": months}, lang, dt.date.today())
    out.mkdir(parents=True, exist_ok=True)
    for name, content in made.items():
        (out / name).write_bytes(content)
    console.print("\n".join(str(out / name) for name in made))


def register(app: typer.Typer) -> None:
    app.command("recommend")(recommend)
    app.command("proposal")(proposal)
