"""`run_cost`: the cost of a run of GPU-hours at a rental price per card-hour, and the price helpers
`rent_vs_buy` shares (a missing price said in both languages, the alternatives kept when sources
disagree, the 元-per-dollar rate)."""

from __future__ import annotations

from tools.catalog.gpu_spec import GpuSpec
from tools.catalog.lookup import get_gpu
from tools.catalog.prices import GpuPrices, Kind, PriceQuote, fx_params, prices_for, tco_params
from tools.errors import InvalidInput, Unsupported
from tools.schemas.common import Assumption, assume
from tools.schemas.money import RunCostInput, RunCostOutput


def missing_price(gpu: GpuSpec, field: str, what_en: str, what_zh: str) -> InvalidInput:
    return Unsupported(
        f"No {what_en} is on file for {gpu.name}; give your own as {field}.",
        f"目录中没有 {gpu.name} 的{what_zh}，请用 {field} 给出您的价格。",
        field=field,
    )


def quote_assumptions(prefix: str, quotes: tuple[PriceQuote, ...], unit: str) -> list[Assumption]:
    return [
        assume(
            key=f"{prefix}_alternative_{i}",
            value=f"{q.low_cny:g}–{q.high_cny:g}",
            unit=unit,
            note=f"not used; kept because sources disagree: {q.note} {q.cite()}",
        )
        for i, q in enumerate(quotes, start=1)
    ]


def usd_rate(given: float | None = None) -> tuple[float, Assumption]:
    """元 per US dollar: the one given, else the TCO default, with its assumption."""
    param = tco_params()["fx_cny_per_usd"]
    value = given if given is not None else param.default
    return value, assume(key="fx_cny_per_usd", value=value, unit="元/$", default=given is None, note=param.cite())


def eur_rate(given: float | None = None) -> tuple[float, Assumption]:
    """元 per euro: the one given, else the dated default (tco.yaml `fx`), with its assumption."""
    param = fx_params()["fx_cny_per_eur"]
    value = given if given is not None else param.default
    return value, assume(key="fx_cny_per_eur", value=value, unit="元/€", default=given is None, note=param.cite())


def priced(gpu: GpuSpec, kind: Kind) -> tuple[GpuPrices | None, GpuSpec]:
    """The card's price table for `kind`, else that of the card it shares its silicon with (an A800 has no rental
    quote on file; the A100 80GB's is the market for the same chip), with the card whose prices they are."""
    table = prices_for(gpu)
    if (table is None or table.default(kind) is None) and gpu.same_silicon_as:
        twin = get_gpu(gpu.same_silicon_as)
        other = prices_for(twin)
        if other is not None and other.default(kind) is not None:
            return other, twin
    return table, gpu


def twin_assumption(gpu: GpuSpec, of: GpuSpec, kind: Kind) -> Assumption:
    what = "rental" if kind == "rental" else "purchase"
    return assume(
        key=f"{what}_price_of",
        value=of.name,
        note=f"the catalog has no {what} quote for {gpu.name}; the quote of {of.name}, the same silicon, is used",
    )


def usd_price(usd: float, fx_given: float | None, key: str) -> tuple[float, list[Assumption]]:
    """A price per card-hour the user gave in US dollars, in 元 at the dated rate (both stated)."""
    fx, fx_assumption = usd_rate(fx_given)
    cny = round(usd * fx, 4)
    note = f"given as {usd:g} USD per card-hour, at {fx:g} 元/$"
    return cny, [assume(key=key, value=cny, unit="元/卡时", default=False, note=note), fx_assumption]


def run_cost(inp: RunCostInput) -> RunCostOutput:
    """Cost of a run of GPU-hours at a rental price per card-hour (the user's, or the catalog range).

    total = gpu_hours × price; low/high use the ends of the default quote's range (or the user's price).
    """
    gpu = get_gpu(inp.gpu)
    gpu_hours = inp.total_gpu_hours
    assumptions: list[Assumption] = []
    if inp.price_cny_per_hour is not None:
        price = low = high = inp.price_cny_per_hour
        source = "user"
        assumptions.append(assume(key="price_cny_per_hour", value=price, unit="元/卡时", default=False))
    elif inp.price_usd_per_hour is not None:
        price, said = usd_price(inp.price_usd_per_hour, inp.fx_cny_per_usd, "price_cny_per_hour")
        low = high = price
        source = "user"
        assumptions += said
    else:
        table, of = priced(gpu, "rental")
        quote = table.default("rental") if table else None
        if quote is None:
            raise missing_price(gpu, "price_cny_per_hour", "rental price", "租赁价格（元/卡时）")
        price, low, high = quote.mid_cny, quote.low_cny, quote.high_cny
        source = quote.cite()
        assumptions.append(
            assume(
                key="price_cny_per_hour",
                value=price,
                unit="元/卡时",
                note=f"middle of {low:g}–{high:g} 元/卡时. {quote.note} {source}",
            )
        )
        if of is not gpu:
            assumptions.append(twin_assumption(gpu, of, "rental"))
        assumptions += quote_assumptions("rental_price", table.alternatives("rental"), "元/卡时")
    if inp.gpu_hours is None:
        assumptions.append(
            assume(
                key="gpu_hours",
                value=gpu_hours,
                unit="卡时",
                default=False,
                note=f"{inp.hours:g} h × {inp.n_gpus} GPUs",
            )
        )
    out = dict(
        gpu=gpu.name,
        gpu_hours=gpu_hours,
        price_cny_per_hour=round(price, 4),
        price_low_cny_per_hour=low,
        price_high_cny_per_hour=high,
        total_cny=round(gpu_hours * price, 2),
        low_cny=round(gpu_hours * low, 2),
        high_cny=round(gpu_hours * high, 2),
        price_source=source,
        currency=inp.currency,
    )
    if inp.currency == "USD":
        fx, fx_assumption = usd_rate(inp.fx_cny_per_usd)
        assumptions.append(fx_assumption)
        out.update(
            fx_cny_per_usd=fx,
            total_usd=round(gpu_hours * price / fx, 2),
            low_usd=round(gpu_hours * low / fx, 2),
            high_usd=round(gpu_hours * high / fx, 2),
            price_usd_per_hour=round(price / fx, 4),
        )
    return RunCostOutput(**out, assumptions=assumptions)


__all__ = ["eur_rate", "missing_price", "quote_assumptions", "run_cost", "usd_rate"]
