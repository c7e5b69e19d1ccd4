"""GPU prices and TCO parameters: load `tools/data/prices.yaml` and `tools/data/tco.yaml`.

Prices are CNY: purchase per card (the card alone), rental per card-hour. Each GPU has at most one
default quote per kind; the others are kept as alternatives because sources disagree. TCO parameters
each carry a default, a range, a unit and their sources; `rent_vs_buy` lets every one be overridden.
"""

from __future__ import annotations

import datetime as dt
import functools
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tools.catalog import price_book
from tools.catalog.gpu_spec import GpuSpec
from tools.yaml_data import load_yaml

DATA_DIR = Path(__file__).parents[1] / "data"

Kind = Literal["purchase", "rental"]
Channel = Literal["official-distributor", "grey-market", "cloud-rental", "used", "price-book"]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PriceSource(_Frozen):
    title: str
    #: the title as an English answer names it, where `title` is in another language
    title_en: str | None = None
    url: str
    #: publication date as precise as known: "2025", "2024-09", "2024-12-27"
    published: str = Field(pattern=r"^\d{4}(-\d{2}(-\d{2})?)?$")
    as_of: dt.date  # when we read it


class PriceQuote(_Frozen):
    kind: Kind
    low_cny: float = Field(gt=0)
    high_cny: float = Field(gt=0)
    channel: Channel
    default: bool = False
    source: PriceSource
    verified: bool = False
    note: str = ""

    @model_validator(mode="after")
    def _ordered(self) -> PriceQuote:
        if self.low_cny > self.high_cny:
            raise ValueError(f"low_cny {self.low_cny} > high_cny {self.high_cny}")
        return self

    @property
    def mid_cny(self) -> float:
        return (self.low_cny + self.high_cny) / 2

    def cite(self) -> str:
        return f"{self.source.title} ({self.source.published}; {self.channel}; {self.source.url})"


class GpuPrices(_Frozen):
    gpu: str
    quotes: tuple[PriceQuote, ...]

    @model_validator(mode="after")
    def _one_default_per_kind(self) -> GpuPrices:
        for kind in ("purchase", "rental"):
            n = sum(1 for q in self.quotes if q.kind == kind and q.default)
            has_kind = any(q.kind == kind for q in self.quotes)
            if has_kind and n != 1:
                raise ValueError(f"{self.gpu}: {n} default {kind} quotes (need exactly one)")
        return self

    def default(self, kind: Kind) -> PriceQuote | None:
        return next((q for q in self.quotes if q.kind == kind and q.default), None)

    def alternatives(self, kind: Kind) -> tuple[PriceQuote, ...]:
        return tuple(q for q in self.quotes if q.kind == kind and not q.default)


class TcoSource(_Frozen):
    title: str
    url: str
    as_of: dt.date


class TcoParam(_Frozen):
    default: float
    low: float
    high: float
    unit: str
    verified: bool = False
    note: str
    sources: tuple[TcoSource, ...] = ()

    @model_validator(mode="after")
    def _in_range(self) -> TcoParam:
        if not self.low <= self.default <= self.high:
            raise ValueError(f"default {self.default} outside [{self.low}, {self.high}]")
        return self

    @functools.cached_property
    def _citation(self) -> str:
        refs = "; ".join(f"{s.title} <{s.url}>" for s in self.sources) or "no public source found"
        checked = "" if self.verified else " [unverified]"
        return f"{self.note.strip()} Sources: {refs}.{checked}"

    def cite(self) -> str:
        return self._citation


class NodePower(_Frozen):
    gpus: tuple[str, ...]
    node_kw: float = Field(gt=0)
    gpus_per_node: int = Field(gt=0)
    verified: bool = False
    note: str
    source: TcoSource

    @property
    def kw_per_gpu(self) -> float:
        return self.node_kw / self.gpus_per_node


TCO_KEYS = (
    "host_share_cny_per_gpu",
    "node_power_factor_vs_tdp",
    "load_factor",
    "pue",
    "electricity_cny_per_kwh",
    "hosting_cny_per_kw_month",
    "depreciation_years",
    "maintenance_pct_per_year",
    "residual_value_pct",
    "cost_of_capital_pct_per_year",
    "fx_cny_per_usd",
)


def _load(filename: str) -> dict:
    with open(DATA_DIR / filename, encoding="utf-8") as fh:
        return load_yaml(fh) or {}


def price_table() -> dict[str, GpuPrices]:
    """The catalog's quotes, with the deployment's price book (`price_book`) laid over them: a GPU the book
    prices takes the book's quote as its default of that kind, the catalog's kept as alternatives."""
    return _price_table(price_book.current(), dt.date.today())


@functools.cache
def shipped_price_table() -> dict[str, GpuPrices]:
    raw = _load("prices.yaml").get("gpus", {})
    return {gpu_id: GpuPrices(gpu=gpu_id, quotes=tuple(quotes)) for gpu_id, quotes in raw.items()}


@functools.cache
def _price_table(book: price_book.Book | None, today: dt.date) -> dict[str, GpuPrices]:
    table = shipped_price_table()
    if book is None:
        return table
    out = dict(table)
    for gpu_id in {r.item for r in book.rows if r.target == "gpu"}:
        shipped = table[gpu_id].quotes if gpu_id in table else ()
        quotes = list(shipped)
        for kind in ("purchase", "rental"):
            row = book.for_gpu(gpu_id, kind)
            if row is None:
                continue
            quotes = [q.model_copy(update={"default": False}) if q.kind == kind else q for q in quotes]
            quotes.insert(0, book_quote(book, row, today))
        out[gpu_id] = GpuPrices(gpu=gpu_id, quotes=tuple(quotes))
    return out


def book_cny(row: price_book.BookRow) -> float:
    """A price book row's price in CNY (USD at tco.yaml's fx_cny_per_usd)."""
    return row.price * (tco_params()["fx_cny_per_usd"].default if row.currency == "USD" else 1)


def book_quote(book: price_book.Book, row: price_book.BookRow, today: dt.date) -> PriceQuote:
    """The quote a price book row makes: one price (low = high), named by the book's label (date, vendor, flag)."""
    cny = book_cny(row)
    fx = f" Converted: ${row.price:g} × {cny / row.price:g} 元/$." if row.currency == "USD" else ""
    valid = f" Valid until {row.valid_until}." if row.valid_until else ""
    flag = {
        "ok": "",
        "stale": f" Stale: over {book.max_age_days} days old.",
        "expired": f" Expired: valid until {row.valid_until}.",
    }[book.status(row, today)]
    return PriceQuote(
        kind=row.kind,
        low_cny=cny,
        high_cny=cny,
        channel="price-book",
        default=True,
        source=PriceSource(
            title=book.label(row, today),
            url=f"{book.file} row {row.row}",
            published=row.date.isoformat(),
            as_of=book.imported,
        ),
        verified=True,
        note=f"The deployment's own price book: {row.vendor}, quoted {row.date}.{flag}{valid}{fx}",
    )


price_book.on_change(_price_table.cache_clear)


def source_title(cited: str, lang: str) -> str:
    """The price source a quote's `cite()` names, as an answer in `lang` names it: its short title, in English
    for an English answer where the catalog has an English title (never a Chinese title in an English line)."""
    short = cited.split(" (")[0][:80]
    if lang == "zh":
        return short
    for prices in shipped_price_table().values():
        for q in prices.quotes:
            if q.source.title_en and cited.startswith(q.source.title):
                return q.source.title_en
    return short


def prices_for(gpu: GpuSpec) -> GpuPrices | None:
    return price_table().get(gpu.id)


@functools.cache
def tco_params() -> dict[str, TcoParam]:
    raw = _load("tco.yaml")["params"]
    params = {key: TcoParam.model_validate(value) for key, value in raw.items()}
    missing = set(TCO_KEYS) - set(params)
    if missing:
        raise ValueError(f"tco.yaml lacks {sorted(missing)}")
    return params


@functools.cache
def host_params() -> dict[str, TcoParam]:
    """tco.yaml's `host` rules (CPU cores per GPU, system RAM per GB of GPU memory), each with its sources."""
    return {k: TcoParam.model_validate(v) for k, v in _load("tco.yaml")["host"].items()}


@functools.cache
def fx_params() -> dict[str, TcoParam]:
    """tco.yaml's `fx`: exchange rates other than the dollar's (fx_cny_per_eur), each with its source."""
    return {k: TcoParam.model_validate(v) for k, v in _load("tco.yaml")["fx"].items()}


@functools.cache
def host_reference() -> dict:
    """tco.yaml's `host_reference`: a published 8-GPU server's cores and RAM, to set the rules against."""
    return dict(_load("tco.yaml")["host_reference"])


@functools.cache
def node_power_table() -> tuple[NodePower, ...]:
    return tuple(NodePower.model_validate(row) for row in _load("tco.yaml").get("node_power", []))


def node_kw_per_gpu(gpu: GpuSpec, factor_vs_tdp: float) -> tuple[float | None, str]:
    """Whole-server power per GPU in kW (maximum draw) and where the figure comes from.

    A published node figure (DGX) wins; otherwise `factor_vs_tdp` × the card's TDP; None when the
    catalog has no TDP either.
    """
    for row in node_power_table():
        if gpu.id in row.gpus:
            return row.kw_per_gpu, f"{row.note} ({row.node_kw} kW / {row.gpus_per_node}; {row.source.url})"
    if gpu.tdp_w:
        return (
            factor_vs_tdp * gpu.tdp_w / 1000,
            f"{factor_vs_tdp} × catalog TDP {gpu.tdp_w:g} W (no published node figure for {gpu.name})",
        )
    return None, "no node power figure and no TDP in the catalog"
