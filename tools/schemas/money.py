"""Inputs and outputs of the money tools: `run_cost`, `rent_vs_buy` and `power_draw` (field names: see DESIGN.md)."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from typing_extensions import TypedDict

from tools.schemas.common import ToolInput, ToolOutput

Currency = Literal["CNY", "USD"]


class RunCostInput(ToolInput):
    """What does a run of N GPU-hours cost at rental prices?

    The run is `gpu_hours` card-hours, or `hours` of wall-clock time on `n_gpus` cards. Whatever is left out
    is assumed and stated: no n_gpus is one card, no hours is one hour (the price of an hour), and when
    gpu_hours is given it is the total (hours × n_gpus, if different, are noted and not used).
    """

    gpu: str = Field(description="GPU name or alias, e.g. 'H800', 'A100 80GB', '910B'.")
    gpu_hours: float | None = Field(None, gt=0, description="Total GPU-hours (card-hours). Or give hours and n_gpus.")
    hours: float | None = Field(None, gt=0, description="Wall-clock hours of the run (with n_gpus); omitted: 1.")
    n_gpus: int | None = Field(None, ge=1, le=1_000_000, description="GPUs used for `hours`; omitted: 1.")
    price_cny_per_hour: float | None = Field(
        None, gt=0, description="Your rental price per card-hour in 元; omitted: the catalog default."
    )
    price_usd_per_hour: float | None = Field(
        None, gt=0, description="Your rental price per card-hour in US dollars, converted at fx_cny_per_usd."
    )
    currency: Currency = Field("CNY", description="CNY (default) or USD: USD adds *_usd fields.")
    fx_cny_per_usd: float | None = Field(None, gt=0, description="元 per US dollar; omitted: the dated default.")

    @model_validator(mode="after")
    def _usage(self) -> RunCostInput:
        if self.gpu_hours is not None:
            if (
                self.hours is not None
                and self.n_gpus is not None
                and not math.isclose(self.hours * self.n_gpus, self.gpu_hours, rel_tol=1e-9)
            ):
                self.note(
                    "gpu_hours",
                    self.gpu_hours,
                    "卡时",
                    f"gpu_hours is the total; hours × n_gpus = {self.hours:g} × {self.n_gpus} = "
                    f"{self.hours * self.n_gpus:g} was not used",
                    default=False,
                )
            return self
        if self.hours is None:
            self.note("hours", 1, "h", "no duration given: the cost of one hour")
        if self.n_gpus is None:
            self.note("n_gpus", 1, "卡", "no GPU count given: one card")
        self.resolve(hours=1.0 if self.hours is None else self.hours, n_gpus=self.n_gpus or 1)
        return self

    @property
    def total_gpu_hours(self) -> float:
        if self.gpu_hours is not None:
            return self.gpu_hours
        assert self.hours is not None and self.n_gpus is not None  # resolved by the validator
        return self.hours * self.n_gpus


class RunCostOutput(ToolOutput):
    gpu: str
    gpu_hours: float
    price_cny_per_hour: float
    price_low_cny_per_hour: float
    price_high_cny_per_hour: float
    total_cny: float
    low_cny: float
    high_cny: float
    price_source: str
    currency: Currency = "CNY"
    fx_cny_per_usd: float | None = None
    total_usd: float | None = None
    low_usd: float | None = None
    high_usd: float | None = None
    price_usd_per_hour: float | None = None


class RentVsBuyInput(ToolInput):
    """Rent GPUs by the hour, or buy and host them? Totals over a horizon and the break-even month."""

    gpu: str = Field(description="GPU name or alias.")
    n_gpus: int = Field(8, ge=1, le=1_000_000, description="GPUs to rent or buy.")
    hours_per_day: float = Field(24, gt=0, le=24, description="Hours a day the GPUs are busy.")
    months: int = Field(36, ge=1, le=120, description="Horizon in months (a month is 730 h).")
    occupancy: float | None = Field(
        None,
        gt=0,
        le=1,
        description="An IDC renting its cards out: the share of hours they are rented (出租率); replaces "
        "hours_per_day (busy hours = 24 × occupancy), and the rent side is then the IDC's revenue.",
    )
    job_hours: float | None = Field(
        None,
        gt=0,
        le=1_000_000,
        description="Buying for one job: its wall-clock hours on these GPUs; the verdict then compares buying "
        "with renting just that job.",
    )
    rent_cny_per_hour: float | None = Field(None, gt=0, description="Rental price per card-hour; default: catalog mid.")
    rent_usd_per_hour: float | None = Field(
        None, gt=0, description="Rental price per card-hour in US dollars, converted at fx_cny_per_usd."
    )
    purchase_cny: float | None = Field(None, gt=0, description="Purchase price per card (card only); default: mid.")
    host_share_cny_per_gpu: float | None = Field(None, ge=0, description="Server, CPUs, RAM, NICs per GPU, 元.")
    node_kw_per_gpu: float | None = Field(None, gt=0, description="Whole-server power per GPU at full load, kW.")
    load_factor: float | None = Field(None, gt=0, le=1, description="Average draw as a share of full load.")
    pue: float | None = Field(None, ge=1, le=3, description="Data-centre power usage effectiveness; default: TCO data.")
    electricity_cny_per_kwh: float | None = Field(
        None, ge=0, description="Electricity price, 元/kWh; default: TCO data."
    )
    hosting_cny_per_kw_month: float | None = Field(None, ge=0, description="Colocation per provisioned kW-month.")
    depreciation_years: float | None = Field(
        None,
        gt=0,
        le=15,
        description="Years the capex is written off over (owned cost per GPU-hour); default: TCO data.",
    )
    maintenance_pct_per_year: float | None = Field(
        None, ge=0, le=100, description="Maintenance per year, % of capex; default: TCO data."
    )
    residual_value_pct: float | None = Field(None, ge=0, le=100, description="Resale at the horizon, % of capex.")
    cost_of_capital_pct_per_year: float | None = Field(
        None, ge=0, le=100, description="Cost of capital per year, % of capex; default: TCO data."
    )
    currency: Currency = Field("CNY", description="CNY (default) or USD: USD adds *_usd totals.")
    fx_cny_per_usd: float | None = Field(None, gt=0, description="元 per US dollar; omitted: the dated default.")


class MonthPoint(TypedDict):
    """One month of the two cumulative cost curves (a typed dict: 37 of them validate ~2x faster than models,
    and the wire format is the same object)."""

    month: int
    rent_cny: float
    own_cny: float


class FlipPoint(BaseModel):
    """A parameter whose value at `threshold` makes renting and owning cost the same over the horizon."""

    model_config = ConfigDict(frozen=True)

    parameter: str
    current: float
    threshold: float | None  # None: no value in range flips the verdict
    unit: str
    en: str
    zh: str


class RentVsBuyOutput(ToolOutput):
    gpu: str
    n_gpus: int
    hours_per_day: float
    months: int
    rent_cny_per_hour: float
    purchase_cny: float
    rent_total_cny: float
    own_total_cny: float
    rent_monthly_cny: float
    own_monthly_cny: float  # running cost only (power, hosting, maintenance, capital)
    own_upfront_cny: float
    own_residual_cny: float
    own_cost_per_gpu_hour_cny: float  # depreciation + running, per busy GPU-hour
    breakeven_months: float | None  # None: owning never catches up within 120 months
    breakeven_utilisation: float | None  # share of 24 h at which totals match over the horizon
    breakeven_hours_per_day: float | None
    #: the share of hours rented below which rental income never covers the running costs (IDC side; > 1: never
    #: pays back even fully rented; None: the price does not cover the electricity)
    payback_floor_utilisation: float | None = None
    occupancy: float | None = None
    job_hours: float | None = None
    job_rent_cny: float | None = None  # renting just the job: n × price × job_hours
    job_own_cny: float | None = None  # buying for it: capex − residual + running costs over the job's hours
    jobs_to_break_even: float | None = None  # such jobs before buying costs less than renting each
    cheaper: Literal["rent", "buy"]
    saving_cny: float  # what the cheaper option saves over the horizon
    flip: list[FlipPoint]
    cumulative: list[MonthPoint]
    currency: Currency = "CNY"
    fx_cny_per_usd: float | None = None
    rent_total_usd: float | None = None
    own_total_usd: float | None = None

    @classmethod
    def _nested(cls):
        return {"flip": FlipPoint, "cumulative": MonthPoint}


# ---- Input and output of `power_draw`: electricity and rack power of a GPU deployment.


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
