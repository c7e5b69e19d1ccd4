"""Input and output of `power_draw`: electricity and rack power of a GPU deployment."""

from __future__ import annotations

from pydantic import Field

from tools.schemas.common import ToolInput, ToolOutput


class PowerDrawInput(ToolInput):
    """GPUs, how many hours a day they run, and optional overrides of the TCO defaults."""

    gpu: str = Field(description="GPU name or alias.")
    n_gpus: int = Field(8, ge=1, le=1_000_000, description="GPUs in the deployment.")
    gpus_per_server: int = Field(8, ge=1, le=16, description="GPUs per server.")
    servers_per_rack: int = Field(4, ge=1, le=64, description="Servers sharing one rack (for the rack figure).")
    hours_per_day: float = Field(24, gt=0, le=24, description="Hours a day the GPUs are busy.")
    load_factor: float | None = Field(None, gt=0, le=1, description="Average draw as a share of full load.")
    pue: float | None = Field(None, ge=1, le=3, description="Data-centre power usage effectiveness.")
    electricity_cny_per_kwh: float | None = Field(None, ge=0, description="Electricity price, 元/kWh.")
    rack_limit_kw: float | None = Field(None, gt=0, le=200, description="Power a rack may draw, kW (the room's limit).")


class PowerDrawOutput(ToolOutput):
    gpu: str
    n_gpus: int
    kw_per_gpu: float  # whole-server power per GPU at full load
    server_kw: float  # one server at full load
    servers: int
    rack_kw: float  # servers_per_rack servers at full load
    total_kw: float  # all servers at full load (IT power)
    facility_kw: float  # average draw × PUE while busy
    kwh_per_year: float  # facility energy at hours_per_day
    electricity_cny_per_year: float
    electricity_cny_per_month: float
    servers_per_rack_at_limit: int | None = None  # whole servers at full load within rack_limit_kw
    racks_at_limit: int | None = None  # racks the servers need at that limit (None when not one server fits)
