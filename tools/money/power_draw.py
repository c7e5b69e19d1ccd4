"""Power of a GPU deployment: server and rack kW, yearly energy and the electricity bill.

The figures are those `rent_vs_buy` uses for its running costs (tools/data/tco.yaml): whole-server
power per GPU from a published node figure (DGX) or the catalog TDP × a node factor, an average load
factor, the data centre's PUE and an electricity price. A year is 365 days; a month is 730 h.

    server kW       = kW per GPU × GPUs per server                          (full load, nameplate-like)
    facility kW     = kW per GPU × n × load factor × PUE                     (average, while busy)
    kWh per year    = facility kW × hours a day × 365
    servers a rack holds at a limit = floor(rack limit kW / server kW)      (full load, so the rack never trips)
"""

from __future__ import annotations

import math

from tools.catalog.lookup import get_gpu
from tools.catalog.prices import node_kw_per_gpu, tco_params
from tools.errors import Unsupported
from tools.schemas.common import assume
from tools.schemas.money import PowerDrawInput, PowerDrawOutput
from tools.units import HOURS_PER_MONTH

DAYS_PER_YEAR = 365


def power_draw(inp: PowerDrawInput) -> PowerDrawOutput:
    """Server and rack power (kW), yearly energy (kWh) and electricity cost of n GPUs, from the TCO data."""
    gpu = get_gpu(inp.gpu)
    params = tco_params()
    kw, note = node_kw_per_gpu(gpu, params["node_power_factor_vs_tdp"].default)
    if kw is None:
        raise Unsupported(
            f"There is no published power figure for {gpu.name} (no TDP in the catalog), so its power cannot be "
            "worked out; the vendor's server datasheet gives it.",
            f"目录里没有 {gpu.name} 的功耗数据（无 TDP），无法估算功耗；可查看厂商整机规格书。",
            field="gpu",
        )
    a = [assume("kw_per_gpu", value=round(kw, 3), unit="kW", note=note)]
    values = {}
    for key in ("load_factor", "pue", "electricity_cny_per_kwh"):
        given = getattr(inp, key)
        param = params[key]
        values[key] = param.default if given is None else given
        a.append(
            assume(
                key,
                value=values[key],
                unit=param.unit,
                default=given is None,
                note=param.cite() if given is None else "given",
            )
        )
    for key, unit, note in (
        ("gpus_per_server", "", "GPUs per server"),
        (
            "servers_per_rack",
            "",
            "an assumption, not a sourced figure: say how many servers share "
            "a rack (racks are often limited to 10–20 kW)",
        ),
        ("hours_per_day", "h", "busy hours a day"),
    ):
        a.append(assume(key, value=getattr(inp, key), unit=unit, default=key not in inp.model_fields_set, note=note))
    servers = math.ceil(inp.n_gpus / inp.gpus_per_server)
    facility = kw * inp.n_gpus * values["load_factor"] * values["pue"]
    kwh_year = facility * inp.hours_per_day * DAYS_PER_YEAR
    cny_year = kwh_year * values["electricity_cny_per_kwh"]
    per_rack = racks = None
    if inp.rack_limit_kw is not None:  # whole servers at full load (nameplate-like) under the rack's limit
        per_rack = math.floor(inp.rack_limit_kw / (kw * inp.gpus_per_server) + 1e-9)
        racks = math.ceil(servers / per_rack) if per_rack else None
    return PowerDrawOutput(
        gpu=gpu.name,
        n_gpus=inp.n_gpus,
        kw_per_gpu=round(kw, 3),
        server_kw=round(kw * inp.gpus_per_server, 2),
        servers=servers,
        rack_kw=round(kw * inp.gpus_per_server * inp.servers_per_rack, 2),
        total_kw=round(kw * inp.n_gpus, 2),
        facility_kw=round(facility, 2),
        kwh_per_year=round(kwh_year),
        electricity_cny_per_year=round(cny_year),
        electricity_cny_per_month=round(cny_year / (DAYS_PER_YEAR * 24) * HOURS_PER_MONTH),
        servers_per_rack_at_limit=per_rack,
        racks_at_limit=racks,
        assumptions=a,
    )
