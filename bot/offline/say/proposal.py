"""The proposal a sales engineer sends (issue 26): the requirement as understood, the options side by side, the
recommendation and why, the bill of materials, the assumptions, what was left out and the validity date — as
Markdown, and the bill of materials as an XLSX workbook (openpyxl). Every figure is a `plan_system` output; the
words are in `templates/proposal.yaml`. Used by `gpu-advisor proposal` and `POST /v1/proposals`."""

from __future__ import annotations

import datetime as dt
import io

from bot.offline.say import proposal_charts
from bot.offline.say.proposal_words import w as _w

VALID_DAYS = 30  # how long the prices in a proposal are offered for


def _yuan(x: float | None) -> str:
    return "—" if x is None else f"{x:,.0f}"


def files(r: dict, args: dict, lang: str, today: dt.date, call=None) -> dict[str, bytes]:
    """Everything a proposal is: proposal.md, bom.xlsx and the charts there are figures for (tco.png, capacity.png).
    `call` runs the chart's calculators (default `tools.call`; a planner passes its toolbox)."""
    data = proposal_charts.series(r, args, call)
    pngs = proposal_charts.render(data, lang)
    return {"proposal.md": document(r, args, lang, today, data, pngs).encode("utf-8"), "bom.xlsx": workbook(r), **pngs}


def document(
    r: dict, args: dict, lang: str, today: dt.date, charts: dict | None = None, pngs: dict | None = None
) -> str:
    """The proposal as Markdown, from one plan_system output (and the chart figures, linked as tco.png and
    capacity.png beside it)."""
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
    if charts is not None:
        lines += _charts(charts, pngs or {}, lang)
    lines.append(_w("assumptions", lang))
    lines.append("\n".join(f"- {x['key']}: {x['value']} {x['unit']} {x['note']}".rstrip() for x in r["assumptions"]))
    if r["skipped"]:
        lines.append(_w("excluded", lang))
        lines.append("\n".join(f"- {s}" for s in r["skipped"]))
    return "\n\n".join(lines) + "\n"


def _charts(data: dict, pngs: dict, lang: str) -> list[str]:
    """The charts section: each chart linked with one line of what it shows, or why it is missing."""
    out = [_w("charts", lang)]
    if data.get("why", {}).get("tco") == "no_option":
        return [*out, _w("chart_no_option", lang)]
    t = data.get("tco")
    if t and "tco.png" in pngs:
        be = t["breakeven_months"]
        said = (
            _w("chart_tco_breakeven", lang, months=f"{be:.1f}")
            if be is not None and be <= t["months"]
            else _w("chart_tco_never", lang, months=t["months"])
        )
        out.append(
            _w(
                "chart_tco_link",
                lang,
                n=t["n_gpus"],
                gpu=t["gpu"],
                hours=f"{t['hours_per_day']:g}",
                months=t["months"],
                breakeven=said,
            )
        )
    else:
        out.append(_w("chart_no_tco", lang))
    c = data.get("capacity")
    if c and "capacity.png" in pngs:
        key = "chart_capacity_serve_link" if c["kind"] == "serve" else "chart_capacity_train_link"
        y = c["asked"]["y"] if c["kind"] == "serve" else f"{c['asked']['y']:,.1f}"
        out.append(_w(key, lang, gpu=c["gpu"], x=f"{c['asked']['x']:g}", y=y))
    else:
        out.append(_w("chart_no_capacity", lang))
    if pngs and lang == "zh" and proposal_charts.chart_lang(lang) != "zh":
        out.append(_w("chart_font_note", lang))
    return out


def workbook(r: dict) -> bytes:
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
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()
