"""`gpu-advisor proposal`: a dated proposal a sales engineer can send — the requirement as understood, the options
side by side, the recommendation and why, the bill of materials (Markdown and an XLSX workbook), the assumptions,
what was left out and the validity date. Every figure is a `plan_system` output; the words are in
`templates/proposal.yaml`.

Example: gpu-advisor proposal --job finetune --model Qwen2.5-14B --budget-cny 2000000 --out ./proposal
"""

from __future__ import annotations

import datetime as dt
import functools
from pathlib import Path
from typing import Annotated

import typer

from bot.cli.output import calculate, console, option_from
from tools.schemas.plan import PlanSystemInput as Sys
from tools.yaml_data import load_yaml

TEMPLATES = Path(__file__).parent / "templates" / "proposal.yaml"
VALID_DAYS = 30  # how long the prices in a proposal are offered for


@functools.cache
def _words() -> dict:
    return load_yaml(TEMPLATES.read_text(encoding="utf-8"))


def _w(key: str, lang: str, **values) -> str:
    return _words()[key][lang].format(**values)


def _yuan(x: float | None) -> str:
    return "—" if x is None else f"{x:,.0f}"


def document(r: dict, args: dict, lang: str, today: dt.date) -> str:
    """The proposal as Markdown, from one plan_system output."""
    lines = [
        f"# {_w('title', lang)}",
        _w("dated", lang, date=today.isoformat(), valid=(today + dt.timedelta(days=VALID_DAYS)).isoformat()),
    ]
    a = {x["key"]: x["value"] for x in r["assumptions"]}
    lines.append(_w("requirement", lang))
    need = [_w(f"job_{r['job']}", lang, model=r["model"], method=a.get("method", ""), tokens=f"{a.get('tokens', 0):,}")]
    if args.get("budget_cny"):
        need.append(_w("budget", lang, budget=_yuan(args["budget_cny"])))
    if args.get("deadline_hours"):
        need.append(_w("deadline", lang, hours=args["deadline_hours"]))
    need.append(_w("domestic", lang) if args.get("domestic") else _w("china", lang))
    lines.append("\n".join(f"- {x}" for x in need))
    lines.append(_w("options", lang))
    rows = [_w("options_header", lang)]
    for o in r["options"]:
        s = o["servers"][0]
        price = (
            f"{_yuan(o['total_low_cny'])}–{_yuan(o['total_high_cny'])}"
            if o["total_low_cny"] is not None
            else _w("unpriced", lang)
        )
        hours = f"{o['hours']:,.1f}" if o["hours"] is not None else "—"
        rows.append(
            f"| {o['label']} | {s['name']} × {s['nodes']} | {o['n_gpus']} | {hours} | {price} | {o['power_kw']:g} | {o['racks']} |"
        )
    lines.append("\n".join(rows))
    best = next((o for o in r["options"] if o["label"] == r["best_value"]), None)
    if best is None:
        lines.append(_w("none", lang, nearest=r["nearest"] or "—"))
    else:
        lines += [
            _w("recommendation", lang, label=best["label"]),
            _w("why_best", lang, cheapest=r["cheapest"], fastest=r["fastest"]),
            _w("bom", lang),
        ]
        rows = [_w("bom_header", lang)]
        for b in best["bom"]:
            rows.append(
                f"| {b['item']} | {b['qty']} | {_yuan(b['low_cny'])} | {_yuan(b['high_cny'])} | {b['source']} |"
            )
        lines.append("\n".join(rows))
    lines.append(_w("assumptions", lang))
    lines.append("\n".join(f"- {x['key']}: {x['value']} {x['unit']} {x['note']}".rstrip() for x in r["assumptions"]))
    if r["skipped"]:
        lines.append(_w("excluded", lang))
        lines.append("\n".join(f"- {s}" for s in r["skipped"]))
    return "\n\n".join(lines) + "\n"


def workbook(r: dict, path: Path) -> None:
    """bom.xlsx: the recommended option's bill of materials, and every option's totals."""
    from openpyxl import Workbook

    wb = Workbook()
    ws = wb.active
    ws.title = "BOM"
    ws.append(["item", "qty", "low_cny", "high_cny", "source"])
    best = next((o for o in r["options"] if o["label"] == (r["best_value"] or r["cheapest"])), None)
    for b in (best or {}).get("bom", []):
        ws.append([b["item"], b["qty"], b["low_cny"], b["high_cny"], b["source"]])
    opts = wb.create_sheet("Options")
    opts.append(["option", "server", "nodes", "gpus", "hours", "total_low_cny", "total_high_cny", "power_kw", "racks"])
    for o in r["options"]:
        s = o["servers"][0]
        opts.append(
            [
                o["label"],
                s["name"],
                s["nodes"],
                o["n_gpus"],
                o["hours"],
                o["total_low_cny"],
                o["total_high_cny"],
                o["power_kw"],
                o["racks"],
            ]
        )
    wb.save(path)


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
    out: Annotated[Path, typer.Option("--out", help="Folder for proposal.md and bom.xlsx.")] = Path("proposal"),
) -> None:
    """Write a dated proposal (proposal.md) and its bill of materials (bom.xlsx) for a job and a budget or deadline."""
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
    out.mkdir(parents=True, exist_ok=True)
    (out / "proposal.md").write_text(document(r, args, lang, dt.date.today()), encoding="utf-8")
    workbook(r, out / "bom.xlsx")
    console.print(f"{out / 'proposal.md'}\n{out / 'bom.xlsx'}")


def register(app: typer.Typer) -> None:
    app.command("proposal")(proposal)
