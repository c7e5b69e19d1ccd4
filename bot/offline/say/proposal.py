"""The proposal a sales engineer sends (issue 26): the requirement as understood, the options side by side, the
recommendation and why, the bill of materials, the assumptions, what was left out and the validity date — as
Markdown, and the bill of materials as an XLSX workbook (openpyxl). Every figure is a `plan_system` output; the
words are in `templates/proposal.yaml`. Used by `gpu-advisor proposal` and `POST /v1/proposals`."""

from __future__ import annotations

import datetime as dt
import functools
import io
from pathlib import Path

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
