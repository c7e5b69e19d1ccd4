"""`rent_vs_buy`: renting against owning over a horizon, with the break-even month (run cost is `tools.money.run_cost`).

Owning, per GPU (all in 元; a month is 730 h, `tools.units.HOURS_PER_MONTH`):

    capex           = purchase + host_share                         (paid at month 0)
    busy_h / month  = hours_per_day / 24 × 730
    energy / month  = node_kW × load_factor × PUE × 元/kWh × busy_h
    hosting / month = node_kW × 元/(kW·month)                       (provisioned power, busy or not)
    upkeep / month  = capex × (maintenance% + cost_of_capital%) / 12
    own(m)          = n × (capex + m × (energy + hosting + upkeep))  (cash out by month m)
    rent(m)         = n × m × rent_price × busy_h
    break-even      = capex / (rent/month − running/month), months  (resale ignored)

Over the horizon M, own_total = own(M) − residual, residual = residual% × n × capex.
"""

from __future__ import annotations

from tools.catalog.gpu_spec import GpuSpec
from tools.catalog.lookup import get_gpu
from tools.catalog.prices import GpuPrices, Kind, TcoParam, node_kw_per_gpu, tco_params
from tools.errors import Unsupported
from tools.memo import per_record
from tools.money.run_cost import missing_price, priced, quote_assumptions, twin_assumption, usd_price, usd_rate
from tools.schemas.common import Assumption, assume
from tools.schemas.money import RentVsBuyInput, RentVsBuyOutput
from tools.units import HOURS_PER_MONTH

BREAKEVEN_CAP_MONTHS = 120


def _param(inp: RentVsBuyInput, key: str, assumptions: list[Assumption]) -> float:
    spec: TcoParam = tco_params()[key]
    given = getattr(inp, key)
    value = spec.default if given is None else given
    assumptions.append(assume(key, value, spec.unit, given is None, "" if given is not None else spec.cite()))
    return value


def _price(inp: RentVsBuyInput, gpu: GpuSpec, kind: Kind, assumptions: list[Assumption]) -> float:
    field, unit = ("rent_cny_per_hour", "元/卡时") if kind == "rental" else ("purchase_cny", "元/卡")
    given = getattr(inp, field)
    if given is not None:
        assumptions.append(assume(key=field, value=given, unit=unit, default=False))
        return given
    if kind == "rental" and inp.rent_usd_per_hour is not None:
        price, said = usd_price(inp.rent_usd_per_hour, inp.fx_cny_per_usd, field)
        assumptions += said
        return price
    table, of = priced(gpu, kind)
    stated = _catalog_prices(table)[kind] if table is not None else None
    if stated is None:
        what = ("rental price", "租赁价格（元/卡时）") if kind == "rental" else ("purchase price", "采购价格（元/卡）")
        raise missing_price(gpu, field, *what)
    mid, said = stated
    assumptions += said
    if of is not gpu:
        assumptions.append(twin_assumption(gpu, of, kind))
    return mid


@per_record
def _catalog_prices(table: GpuPrices) -> dict[str, tuple[float, tuple[Assumption, ...]] | None]:
    """Per kind, the default quote's mid price and the assumptions stating it and the alternatives (once per table)."""
    out: dict[str, tuple[float, tuple[Assumption, ...]] | None] = {}
    for kind in ("rental", "purchase"):
        field, unit = ("rent_cny_per_hour", "元/卡时") if kind == "rental" else ("purchase_cny", "元/卡")
        quote = table.default(kind)
        if quote is None:
            out[kind] = None
            continue
        main = assume(
            key=field,
            value=quote.mid_cny,
            unit=unit,
            note=f"middle of {quote.low_cny:g}–{quote.high_cny:g} {unit}. {quote.note} {quote.cite()}",
        )
        alternatives = quote_assumptions(
            field.removesuffix("_cny_per_hour").removesuffix("_cny"), table.alternatives(kind), unit
        )
        out[kind] = (quote.mid_cny, (main, *alternatives))
    return out


@per_record
def _node_power(gpu: GpuSpec) -> tuple[float | None, Assumption | None]:
    """Whole-server kW per GPU from the catalog, and the assumption stating it (once per GPU record)."""
    kw, kw_note = node_kw_per_gpu(gpu, tco_params()["node_power_factor_vs_tdp"].default)
    if kw is None:
        return None, None
    return kw, assume(key="node_kw_per_gpu", value=round(kw, 4), unit="kW/卡", note=kw_note)


def rent_vs_buy(inp: RentVsBuyInput) -> RentVsBuyOutput:
    """Rent by the card-hour or buy and host: totals over `months`, running costs, break-even and what flips it."""
    gpu = get_gpu(inp.gpu)
    a: list[Assumption] = []
    rent_price = _price(inp, gpu, "rental", a)
    purchase = _price(inp, gpu, "purchase", a)
    host = _param(inp, "host_share_cny_per_gpu", a)
    if inp.node_kw_per_gpu is not None:
        kw = inp.node_kw_per_gpu
        a.append(assume(key="node_kw_per_gpu", value=kw, unit="kW/卡", default=False))
    else:
        kw, kw_assumption = _node_power(gpu)
        if kw is None:
            raise Unsupported(
                f"No power figure for {gpu.name}; give node_kw_per_gpu (server power per GPU, kW).",
                f"没有 {gpu.name} 的功耗数据，请给出 node_kw_per_gpu（每卡分摊的整机功耗，kW）。",
                field="node_kw_per_gpu",
            )
        a.append(kw_assumption)
    load = _param(inp, "load_factor", a)
    pue = _param(inp, "pue", a)
    elec = _param(inp, "electricity_cny_per_kwh", a)
    hosting = _param(inp, "hosting_cny_per_kw_month", a)
    dep_years = _param(inp, "depreciation_years", a)
    maint = _param(inp, "maintenance_pct_per_year", a)
    residual_pct = _param(inp, "residual_value_pct", a)
    coc = _param(inp, "cost_of_capital_pct_per_year", a)
    a.append(assume(key="hours_per_month", value=HOURS_PER_MONTH, unit="h", note="8,760 h / 12"))

    n, months = inp.n_gpus, inp.months
    hours_per_day = inp.hours_per_day if inp.occupancy is None else 24 * inp.occupancy
    if inp.occupancy is not None:
        a.append(
            assume(
                key="occupancy",
                value=inp.occupancy,
                default=False,
                note="share of hours the cards are rented out (出租率): busy hours = 24 × occupancy; rent = revenue",
            )
        )
    busy_h = hours_per_day / 24 * HOURS_PER_MONTH  # per GPU per month
    capex = purchase + host  # per GPU
    energy_rate = kw * load * pue * elec  # 元 per busy GPU-hour
    fixed_month = kw * hosting + capex * (maint + coc) / 100 / 12  # per GPU, busy or not
    running_month = n * (energy_rate * busy_h + fixed_month)
    rent_month = n * rent_price * busy_h
    upfront = n * capex
    residual = upfront * residual_pct / 100
    rent_total = rent_month * months
    own_total = upfront + running_month * months - residual

    saving_month = rent_month - running_month
    breakeven = upfront / saving_month if saving_month > 0 else None
    if breakeven is not None and breakeven > BREAKEVEN_CAP_MONTHS:
        breakeven = None
    fixed_total = upfront - residual + n * months * fixed_month
    margin_per_busy_h = n * months * HOURS_PER_MONTH / 24 * (rent_price - energy_rate)
    be_hours = fixed_total / margin_per_busy_h if margin_per_busy_h > 0 else None
    if be_hours is not None and be_hours > 24:
        be_hours = None
    cheaper = "buy" if own_total < rent_total else "rent"
    margin_h = rent_price - energy_rate  # per busy GPU-hour
    floor = fixed_month / (HOURS_PER_MONTH * margin_h) if margin_h > 0 else None
    job: dict = {}
    if inp.job_hours is not None:  # buying for one job against renting just it
        h = inp.job_hours
        job_rent = n * rent_price * h
        job_own = upfront - residual + n * (energy_rate * h + fixed_month * h / HOURS_PER_MONTH)
        per_job_saving = job_rent - n * (energy_rate * h + fixed_month * h / HOURS_PER_MONTH)
        job = dict(
            job_hours=h,
            job_rent_cny=round(job_rent, 2),
            job_own_cny=round(job_own, 2),
            jobs_to_break_even=round((upfront - residual) / per_job_saving, 1) if per_job_saving > 0 else None,
        )
        cheaper = "buy" if job_own < job_rent else "rent"
        a.append(assume(key="job_hours", value=h, unit="h", default=False, note="the one job's wall-clock hours"))

    flip = _flip_points(
        cheaper=cheaper,
        rent_price=rent_price,
        purchase=purchase,
        elec=elec,
        hours_per_day=hours_per_day,
        months=months,
        be_hours=be_hours,
        rent_total=rent_total,
        own_total=own_total,
        upfront=upfront,
        residual=residual,
        saving_month=saving_month,
        busy_total=n * busy_h * months,
        capex_weight=n * (1 + (maint + coc) / 100 / 12 * months - residual_pct / 100),
        energy_weight=n * months * busy_h * kw * load * pue,
    )
    # in cents, rounded once per point (round(x) is ~5x cheaper than round(x, 2) and gave the same cents on
    # 740,000 random points); plain dicts: the output model validates the list in one pass
    rent_c, running_c, upfront_c = rent_month * 100, running_month * 100, upfront * 100
    cumulative = [
        {"month": m, "rent_cny": round(rent_c * m) / 100, "own_cny": round(upfront_c + running_c * m) / 100}
        for m in range(months + 1)
    ]
    out = dict(
        gpu=gpu.name,
        n_gpus=n,
        hours_per_day=round(hours_per_day, 4),
        months=months,
        rent_cny_per_hour=rent_price,
        purchase_cny=purchase,
        rent_total_cny=round(rent_total, 2),
        own_total_cny=round(own_total, 2),
        rent_monthly_cny=round(rent_month, 2),
        own_monthly_cny=round(running_month, 2),
        own_upfront_cny=round(upfront, 2),
        own_residual_cny=round(residual, 2),
        own_cost_per_gpu_hour_cny=round((capex / (dep_years * 12) + running_month / n) / busy_h, 4),
        breakeven_months=None if breakeven is None else round(breakeven, 2),
        breakeven_utilisation=None if be_hours is None else round(be_hours / 24, 4),
        breakeven_hours_per_day=None if be_hours is None else round(be_hours, 2),
        payback_floor_utilisation=None if floor is None else round(floor, 4),
        occupancy=inp.occupancy,
        **job,
        cheaper=cheaper,
        saving_cny=round(abs(job["job_rent_cny"] - job["job_own_cny"]) if job else abs(rent_total - own_total), 2),
        flip=flip,
        cumulative=cumulative,
        currency=inp.currency,
    )
    if inp.currency == "USD":
        fx, fx_assumption = usd_rate(inp.fx_cny_per_usd)
        a.append(fx_assumption)
        out.update(fx_cny_per_usd=fx, rent_total_usd=round(rent_total / fx, 2), own_total_usd=round(own_total / fx, 2))
    return RentVsBuyOutput.trusted(**out, assumptions=a)


def _flip_points(
    *,
    cheaper: str,
    rent_price: float,
    purchase: float,
    elec: float,
    hours_per_day: float,
    months: int,
    be_hours: float | None,
    rent_total: float,
    own_total: float,
    upfront: float,
    residual: float,
    saving_month: float,
    busy_total: float,
    capex_weight: float,
    energy_weight: float,
) -> list[dict]:
    """For each lever, the value at which renting and owning cost the same over the horizon (validated as
    `FlipPoint`s with the output, in one pass)."""
    buy = cheaper == "buy"
    gap = rent_total - own_total  # > 0: owning is cheaper
    p_star = own_total / busy_total
    buy_price = purchase + gap / capex_weight if capex_weight > 0 else None
    buy_price = buy_price if buy_price is not None and buy_price > 0 else None
    elec_star = elec + gap / energy_weight if energy_weight > 0 else None
    elec_star = elec_star if elec_star is not None and elec_star >= 0 else None
    m_star = (upfront - residual) / saving_month if saving_month > 0 else None
    m_star = m_star if m_star is not None and m_star <= BREAKEVEN_CAP_MONTHS else None

    def r(x: float | None, nd: int = 2) -> float | None:
        return None if x is None else round(x, nd)

    def txt(x: float | None, unit: str) -> str:
        return "—" if x is None else f"{x:,.2f} {unit}"

    now_en = "buying" if buy else "renting"
    other_en, other_zh = ("renting", "租用") if buy else ("buying", "购买")
    return [
        dict(
            parameter="rent_cny_per_hour",
            current=rent_price,
            threshold=r(p_star),
            unit="元/卡时",
            en=f"{other_en.capitalize()} wins if the rental price is {'below' if buy else 'above'} {txt(p_star, 'CNY per GPU-hour')}.",
            zh=f"租价{'低于' if buy else '高于'} {txt(p_star, '元/卡时')} 时改为{other_zh}更省。",
        ),
        dict(
            parameter="hours_per_day",
            current=hours_per_day,
            threshold=r(be_hours),
            unit="h/天",
            en=(
                f"{other_en.capitalize()} wins {'below' if buy else 'above'} {txt(be_hours, 'h/day')} of use."
                if be_hours is not None
                else f"No daily use up to 24 h flips the verdict; {now_en} stays cheaper."
            ),
            zh=(
                f"每天使用{'少于' if buy else '多于'} {txt(be_hours, '小时')} 时改为{other_zh}更省。"
                if be_hours is not None
                else "每天使用 0–24 小时之间都不会改变结论。"
            ),
        ),
        dict(
            parameter="months",
            current=months,
            threshold=r(m_star),
            unit="月",
            en=(
                f"{other_en.capitalize()} wins with a horizon {'shorter' if buy else 'longer'} than {txt(m_star, 'months')}."
                if m_star is not None
                else f"No horizon up to {BREAKEVEN_CAP_MONTHS} months flips the verdict."
            ),
            zh=(
                f"使用期{'短于' if buy else '长于'} {txt(m_star, '个月')} 时改为{other_zh}更省。"
                if m_star is not None
                else f"{BREAKEVEN_CAP_MONTHS} 个月以内的使用期都不会改变结论。"
            ),
        ),
        dict(
            parameter="purchase_cny",
            current=purchase,
            threshold=r(buy_price),
            unit="元/卡",
            en=f"{other_en.capitalize()} wins if a card costs {'more' if buy else 'less'} than {txt(buy_price, 'CNY')}.",
            zh=f"单卡采购价{'高于' if buy else '低于'} {txt(buy_price, '元')} 时改为{other_zh}更省。",
        ),
        dict(
            parameter="electricity_cny_per_kwh",
            current=elec,
            threshold=r(elec_star, 3),
            unit="元/kWh",
            en=(
                f"{other_en.capitalize()} wins if electricity costs {'more' if buy else 'less'} than {txt(elec_star, 'CNY/kWh')}."
                if elec_star is not None
                else "No electricity price flips the verdict."
            ),
            zh=(
                f"电价{'高于' if buy else '低于'} {txt(elec_star, '元/kWh')} 时改为{other_zh}更省。"
                if elec_star is not None
                else "电价再低也不会改变结论。"
            ),
        ),
    ]


__all__ = ["BREAKEVEN_CAP_MONTHS", "rent_vs_buy"]
