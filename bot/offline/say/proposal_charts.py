"""The proposal's two charts (issue 26): the cost of renting against owning the recommended option month by month
over the horizon (`rent_vs_buy`'s cumulative curves), and its capacity — for serving, the GPUs `plan_serving`
needs as the peak load grows around the one asked; for training and fine-tuning, the job's wall-clock hours
(`training_time`) as servers are added. Every plotted figure is a calculator output: `series` calls them (through
the caller's `call`, so a planner's toolbox records the calls) and `render` only draws.

The PNGs are drawn with matplotlib's Agg backend (no display). Chinese labels need a CJK font: the first of
`CJK_FONTS` that matplotlib finds on the machine is used; with none, the charts are labelled in English (a
missing glyph would print as a box) and `render` says so, and the proposal says so under the charts.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Callable

from bot.offline.say.proposal_words import w
from tools.errors import AdvisorError

#: CJK fonts matplotlib may find on a machine (none is downloaded): Noto/Source Han, WenQuanYi, Windows, macOS
CJK_FONTS = (
    "Noto Sans CJK SC",
    "Noto Sans SC",
    "Source Han Sans SC",
    "Source Han Sans CN",
    "WenQuanYi Zen Hei",
    "WenQuanYi Micro Hei",
    "SimHei",
    "Microsoft YaHei",
    "PingFang SC",
    "Heiti SC",
    "AR PL UMing CN",
)
#: the peak loads of the serving capacity chart, as multiples of the asked one
LOAD_STEPS = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)
#: the server counts of the training capacity chart, as multiples of the recommended one (at least 1 server)
NODE_STEPS = (0.25, 0.5, 1.0, 2.0, 4.0)
SIZE_PX = (960, 576)  # 8 × 4.8 inches at 120 dpi
Call = Callable[[str, dict], dict]


def _call() -> Call:
    import tools

    return tools.call


def recommended(r: dict) -> dict | None:
    """The option the proposal recommends (the best value, as the document does), or None when none meets the ask."""
    return next((o for o in r["options"] if o["label"] == r.get("best_value")), None)


def series(r: dict, args: dict, call: Call | None = None) -> dict:
    """{"tco": rent_vs_buy output or None, "capacity": {...} or None, "why": {...}} for the recommended option."""
    call = call or _call()
    best = recommended(r)
    if best is None:
        return {"tco": None, "capacity": None, "why": {"tco": "no_option", "capacity": "no_option"}}
    why: dict[str, str] = {}
    tco = _tco(best, args, call)
    if tco is None:
        why["tco"] = "no_price"
    capacity = _serving(r, best, args, call) if r["job"] == "serve" else _training(r, best, call)
    if capacity is None:
        why["capacity"] = "no_figure"
    return {"tco": tco, "capacity": capacity, "why": why}


def _tco(best: dict, args: dict, call: Call) -> dict | None:
    """rent_vs_buy for the option's cards at the horizon asked; a card with no purchase quote takes the BOM's card
    price (the platform's own, from servers.yaml), and no chart when there is no rental price either."""
    gpu = best["servers"][0]["gpu"]
    ask = {
        "gpu": gpu,
        "n_gpus": best["n_gpus"],
        "hours_per_day": args.get("hours_per_day") or 24,
        "months": args.get("months") or 36,
    }
    cards = next((b for b in best["bom"] if b["low_cny"] is not None and b["qty"] == best["n_gpus"]), None)
    tries = [ask]
    if cards is not None:
        tries.append({**ask, "purchase_cny": round((cards["low_cny"] + cards["high_cny"]) / 2 / cards["qty"], 2)})
    for inp in tries:
        try:
            return call("rent_vs_buy", inp)
        except AdvisorError:
            continue
    return None


def _serving(r: dict, best: dict, args: dict, call: Call) -> dict | None:
    cap = best.get("capacity") or {}
    peak = cap.get("concurrency")
    if not peak:
        return None
    keep = ("prompt_tokens", "output_tokens", "ttft_s", "tokens_per_s_per_user")
    base = {k: args[k] for k in keep if args.get(k) is not None}
    points = []
    for step in LOAD_STEPS:
        load = max(1, round(peak * step))
        try:
            out = call(
                "plan_serving",
                {
                    **base,
                    "model": r["model"],
                    "gpus": [best["servers"][0]["gpu"]],
                    "concurrency": load,
                    "precision": cap.get("precision"),
                },
            )
        except AdvisorError:
            continue
        c = out["candidates"][0] if out["candidates"] else None
        if c is not None and c.get("n_gpus"):
            points.append({"x": load, "y": c["n_gpus"]})
    if len(points) < 2:
        return None
    gpu = best["servers"][0]["gpu"]
    return {"kind": "serve", "gpu": gpu, "points": points, "asked": {"x": peak, "y": best["n_gpus"]}}


def _training(r: dict, best: dict, call: Call) -> dict | None:
    s = best["servers"][0]
    a = {x["key"]: x["value"] for x in r["assumptions"]}
    points = []
    for nodes in sorted({max(1, round(s["nodes"] * step)) for step in NODE_STEPS}):
        try:
            out = call(
                "training_time",
                {
                    "model": r["model"],
                    "gpu": s["gpu"],
                    "n_gpus": nodes * s["gpus_per_node"],
                    "tokens": a.get("tokens", 1_000_000_000),
                    "method": a.get("method", "lora"),
                },
            )
        except AdvisorError:
            continue
        points.append({"x": nodes * s["gpus_per_node"], "y": out["hours"]})
    if len(points) < 2 or best["hours"] is None:
        return None
    return {"kind": r["job"], "gpu": s["gpu"], "points": points, "asked": {"x": best["n_gpus"], "y": best["hours"]}}


@functools.cache
def cjk_font() -> str | None:
    """The first CJK font matplotlib knows on this machine, or None."""
    from matplotlib import font_manager

    known = {f.name for f in font_manager.fontManager.ttflist}
    return next((name for name in CJK_FONTS if name in known), None)


def chart_lang(lang: str) -> str:
    """The language the charts are labelled in: Chinese only where a CJK font is installed."""
    return "zh" if lang == "zh" and cjk_font() else "en"


def render(data: dict, lang: str) -> dict[str, bytes]:
    """{"tco.png": …, "capacity.png": …}: the charts there are figures for."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    lang = chart_lang(lang)
    font = {"family": [cjk_font(), "DejaVu Sans"]} if lang == "zh" else {}
    out: dict[str, bytes] = {}
    with matplotlib.rc_context({"font.sans-serif": font["family"]} if font else {}):
        if data.get("tco"):
            fig = Figure(figsize=(SIZE_PX[0] / 120, SIZE_PX[1] / 120), dpi=120)
            _draw_tco(fig.subplots(), data["tco"], lang)
            out["tco.png"] = _png(fig)
        if data.get("capacity"):
            fig = Figure(figsize=(SIZE_PX[0] / 120, SIZE_PX[1] / 120), dpi=120)
            _draw_capacity(fig.subplots(), data["capacity"], lang)
            out["capacity.png"] = _png(fig)
    return out


def _png(fig) -> bytes:
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def _draw_tco(ax, t: dict, lang: str) -> None:
    months = [p["month"] for p in t["cumulative"]]
    ax.plot(
        months,
        [p["rent_cny"] / 1e4 for p in t["cumulative"]],
        color="#d62728",
        linewidth=2,
        label=w("chart_rent", lang, price=f"{t['rent_cny_per_hour']:g}"),
    )
    ax.plot(
        months, [p["own_cny"] / 1e4 for p in t["cumulative"]], color="#1f77b4", linewidth=2, label=w("chart_own", lang)
    )
    be = t["breakeven_months"]
    if be is not None and be <= t["months"]:
        y = (t["own_upfront_cny"] + t["own_monthly_cny"] * be) / 1e4
        ax.scatter([be], [y], color="black", zorder=5)
        ax.annotate(
            w("chart_breakeven", lang, months=f"{be:.1f}"), (be, y), textcoords="offset points", xytext=(10, -18)
        )
    ax.set_title(
        w("chart_tco_title", lang, n=t["n_gpus"], gpu=t["gpu"], hours=f"{t['hours_per_day']:g}", months=t["months"])
    )
    ax.set_xlabel(w("chart_months", lang))
    ax.set_ylabel(w("chart_cost", lang))
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left")


def _draw_capacity(ax, c: dict, lang: str) -> None:
    xs = [p["x"] for p in c["points"]]
    ys = [p["y"] for p in c["points"]]
    gpu = c["gpu"]
    if c["kind"] == "serve":
        ax.step(xs, ys, where="post", color="#2ca02c", linewidth=2, label=w("chart_gpus_needed", lang, gpu=gpu))
        ax.plot(xs, ys, "o", color="#2ca02c")
        ax.set_xlabel(w("chart_load", lang))
        ax.set_ylabel(w("chart_gpus", lang))
        ax.set_title(w("chart_capacity_serve_title", lang, gpu=gpu))
        note = w("chart_asked_serve", lang, x=f"{c['asked']['x']:g}", y=c["asked"]["y"])
    else:
        ax.plot(xs, ys, "o-", color="#9467bd", linewidth=2, label=w("chart_hours_line", lang, gpu=gpu))
        ax.set_xscale("log", base=2)
        ax.set_xticks(xs, [f"{x:g}" for x in xs])
        ax.set_xlabel(w("chart_gpus", lang))
        ax.set_ylabel(w("chart_hours", lang))
        ax.set_title(w("chart_capacity_train_title", lang, gpu=gpu))
        note = w("chart_asked_train", lang, x=c["asked"]["x"], y=f"{c['asked']['y']:,.1f}")
    ax.scatter([c["asked"]["x"]], [c["asked"]["y"]], color="black", zorder=5, s=60, label=note)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best")
