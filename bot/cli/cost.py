"""`gpu-advisor cost` and `gpu-advisor rent-vs-buy`: what a run costs, and whether to rent or buy.

The options that are input fields take their default and help from the input model (`option_from`);
`--plot` and `--json` are the command line's own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.panel import Panel

from bot.cli.output import (
    JsonOpt,
    assumptions_table,
    calculate,
    console,
    err_console,
    fmt,
    lang_of,
    option_from,
    print_json,
    table,
)
from tools.schemas.money import RentVsBuyInput as Rvb
from tools.schemas.money import RunCostInput as Cost

PLOT_HINT = "Plotting needs matplotlib: pip install 'gpu-advisor[plot]'"


def cost(
    gpu: str = option_from(Cost, "gpu", "--gpu", "-g"),
    gpu_hours: float | None = option_from(Cost, "gpu_hours"),
    hours: float | None = option_from(Cost, "hours"),
    n_gpus: int | None = option_from(Cost, "n_gpus", "--n-gpus", "-n"),
    price: float | None = option_from(Cost, "price_cny_per_hour", "--price"),
    currency: str = option_from(Cost, "currency"),
    fx: float | None = option_from(Cost, "fx_cny_per_usd", "--fx"),
    as_json: JsonOpt = False,
) -> None:
    """Cost of a run at rental prices, with the low-high range of the price on file.

    Examples: gpu-advisor cost --gpu H800 --gpu-hours 1000
              gpu-advisor cost --gpu "A100 80GB" --hours 100 --n-gpus 8 --price 18
    """
    args = {
        "gpu": gpu,
        "gpu_hours": gpu_hours,
        "hours": hours,
        "n_gpus": n_gpus,
        "price_cny_per_hour": price,
        "currency": currency,
        "fx_cny_per_usd": fx,
    }
    lang = lang_of(gpu)
    r = calculate("run_cost", args, lang, as_json)
    if r is not None:
        render_cost(r, lang)


def render_cost(r: dict, lang: str = "en") -> None:
    """A run_cost output: GPU-hours, the price and the total with their ranges, then the assumptions."""
    rows = [
        ("GPU-hours", r["gpu_hours"]),
        (
            "price, 元/card-hour",
            f"{fmt(r['price_cny_per_hour'])} ({fmt(r['price_low_cny_per_hour'])}–{fmt(r['price_high_cny_per_hour'])})",
        ),
        ("total, 元", f"{fmt(r['total_cny'])} ({fmt(r['low_cny'])}–{fmt(r['high_cny'])})"),
    ]
    if r.get("total_usd") is not None:
        rows.append(("total, $", f"{fmt(r['total_usd'])} ({fmt(r['low_usd'])}–{fmt(r['high_usd'])})"))
    source = "your price" if r["price_source"] == "user" else "price on file, source in the assumptions below"
    console.print(table(f"Run cost on {r['gpu']}", ["", "value"], rows, caption=source))
    console.print(assumptions_table(r["assumptions"]))


def rent_vs_buy(
    gpu: str = option_from(Rvb, "gpu", "--gpu", "-g"),
    n_gpus: int = option_from(Rvb, "n_gpus", "--n-gpus", "-n"),
    hours_per_day: float = option_from(Rvb, "hours_per_day"),
    months: int = option_from(Rvb, "months"),
    rent: float | None = option_from(Rvb, "rent_cny_per_hour", "--rent"),
    purchase: float | None = option_from(Rvb, "purchase_cny", "--purchase"),
    electricity: float | None = option_from(Rvb, "electricity_cny_per_kwh", "--electricity"),
    pue: float | None = option_from(Rvb, "pue"),
    hosting: float | None = option_from(Rvb, "hosting_cny_per_kw_month", "--hosting"),
    host_share: float | None = option_from(Rvb, "host_share_cny_per_gpu", "--host-share"),
    residual: float | None = option_from(Rvb, "residual_value_pct", "--residual"),
    plot: Annotated[Path | None, typer.Option("--plot", help="Write the cumulative-cost chart to this PNG.")] = None,
    currency: str = option_from(Rvb, "currency"),
    fx: float | None = option_from(Rvb, "fx_cny_per_usd", "--fx"),
    as_json: JsonOpt = False,
) -> None:
    """Rent by the card-hour or buy and host: totals, monthly costs, break-even month and what would flip it.

    Example: gpu-advisor rent-vs-buy --gpu "A100 80GB" --n-gpus 8 --hours-per-day 24 --months 36 --plot tco.png
    """
    pyplot = _pyplot() if plot is not None else None  # fail before computing when matplotlib is missing
    args = {
        "gpu": gpu,
        "n_gpus": n_gpus,
        "hours_per_day": hours_per_day,
        "months": months,
        "rent_cny_per_hour": rent,
        "purchase_cny": purchase,
        "electricity_cny_per_kwh": electricity,
        "pue": pue,
        "hosting_cny_per_kw_month": hosting,
        "host_share_cny_per_gpu": host_share,
        "residual_value_pct": residual,
        "currency": currency,
        "fx_cny_per_usd": fx,
    }
    lang = lang_of(gpu)
    r = calculate("rent_vs_buy", args, lang)
    if plot is not None:
        draw_plot(r, plot, pyplot)
    if as_json:
        print_json(r)
        return
    render_rent_vs_buy(r, lang)
    if plot is not None:
        console.print(f"chart written to {plot}")


def render_rent_vs_buy(r: dict, lang: str = "en") -> None:
    """A rent_vs_buy output: the verdict, both sides' costs, what would flip it, then the assumptions."""
    be = r["breakeven_months"]
    be_text = (
        f"owning catches up after {be:g} months" if be is not None else "owning never catches up within 120 months"
    )
    verdict = "[bold green]Buy.[/]" if r["cheaper"] == "buy" else "[bold yellow]Rent.[/]"
    console.print(
        Panel(
            f"{verdict} {r['n_gpus']}× {r['gpu']}, {fmt(r['hours_per_day'])} h/day for {r['months']} months: "
            f"rent {fmt(r['rent_total_cny'])} 元 vs own {fmt(r['own_total_cny'])} 元 "
            f"(saves {fmt(r['saving_cny'])} 元); {be_text}.",
            expand=False,
        )
    )
    rows = [
        ("rental price, 元/card-hour", r["rent_cny_per_hour"], ""),
        ("purchase price, 元/card", r["purchase_cny"], ""),
        ("upfront (cards + servers)", r["own_upfront_cny"], ""),
        ("per month", r["rent_monthly_cny"], r["own_monthly_cny"]),
        (f"total over {r['months']} months", r["rent_total_cny"], r["own_total_cny"]),
        ("owned cost per busy GPU-hour", "", r["own_cost_per_gpu_hour_cny"]),
    ]
    console.print(table("Rent vs buy (元)", ["", "rent", "own"], rows))
    key = "zh" if lang == "zh" else "en"
    flips = table(
        "What would flip it",
        ["lever", "now", "break-even", "meaning"],
        [(f["parameter"], f["current"], f["threshold"], f[key]) for f in r["flip"]],
    )
    flips.columns[3].justify = "left"
    console.print(flips)
    console.print(assumptions_table(r["assumptions"]))


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        err_console.print(PLOT_HINT, highlight=False, markup=False)
        raise typer.Exit(2) from None
    return plt


def draw_plot(r: dict, path: Path, plt) -> None:
    """Two cumulative cost curves (万元) and the break-even point."""
    months = [p["month"] for p in r["cumulative"]]
    rent = [p["rent_cny"] / 1e4 for p in r["cumulative"]]
    own = [p["own_cny"] / 1e4 for p in r["cumulative"]]
    fig, ax = plt.subplots(figsize=(8, 4.8), dpi=120)
    ax.plot(months, rent, label=f"rent ({r['rent_cny_per_hour']:g} CNY/card-hour)", color="#d62728", linewidth=2)
    ax.plot(months, own, label="own (upfront + running)", color="#1f77b4", linewidth=2)
    be = r["breakeven_months"]
    if be is not None and be <= r["months"]:
        y = (r["own_upfront_cny"] + r["own_monthly_cny"] * be) / 1e4
        ax.scatter([be], [y], color="black", zorder=5)
        ax.annotate(f"break-even: {be:.1f} months", (be, y), textcoords="offset points", xytext=(10, -18))
    if r["own_residual_cny"]:
        ax.scatter([r["months"]], [r["own_total_cny"] / 1e4], marker="v", color="#1f77b4", label="own, after resale")
    be_txt = f"break-even {be:.1f} months" if be is not None else "no break-even within 120 months"
    if be is not None and be > r["months"]:
        be_txt += f" (after the {r['months']}-month horizon: renting is cheaper)"
    ax.set_title(f"{r['n_gpus']}x {r['gpu']}, {r['hours_per_day']:g} h/day: {be_txt}")
    ax.set_xlabel("months")
    ax.set_ylabel("cumulative cost (10k CNY)")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def register(app: typer.Typer) -> None:
    app.command("cost")(cost)
    app.command("rent-vs-buy")(rent_vs_buy)
