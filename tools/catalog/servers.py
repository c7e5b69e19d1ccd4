"""Server platforms (`tools/data/servers.yaml`): GPUs per node, intra-node link, NICs, power, and how a server is
priced (its cards plus the host share per GPU, or no public price); the network parts priced for multi-node
systems. Every record names its source and the date it was read."""

from __future__ import annotations

import datetime as dt
import functools
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tools.yaml_data import load_yaml

DATA_DIR = Path(__file__).parents[1] / "data"


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ServerSource(_Frozen):
    title: str
    url: str
    as_of: dt.date
    published: str | None = None
    verified: bool = False

    def cite(self) -> str:
        return f"{self.title} ({self.url}, read {self.as_of.isoformat()})"


class Link(_Frozen):
    kind: str
    gb_s: float = Field(gt=0)
    source: ServerSource | None = None


class Nics(_Frozen):
    count: int = Field(ge=0)
    gbps: float = Field(gt=0)
    kind: str
    source: ServerSource | None = None


class NodePower(_Frozen):
    value: float = Field(gt=0)  # kW, maximum input
    note: str
    source: ServerSource


class CardPrice(_Frozen):
    low_cny: float = Field(gt=0)
    high_cny: float = Field(gt=0)
    note: str
    source: ServerSource


class Pricing(_Frozen):
    basis: Literal["cards_plus_host", "none"]
    note: str
    card_price_from: str | None = None  # a GPU id whose purchase quote stands in (a stated ratio)
    cross_check: str | None = None
    sources: tuple[ServerSource, ...] = ()


class Platform(_Frozen):
    id: str
    name: str
    name_zh: str
    gpu: str  # GPU catalog id
    gpus_per_node: int = Field(ge=1, le=16)
    intra_node: Link
    nics: Nics
    node_kw: NodePower
    rack_units: int = Field(ge=1, le=48)
    card_price: CardPrice | None = None
    price: Pricing


class NetworkPart(_Frozen):
    item: str
    item_zh: str
    usd: float = Field(gt=0)
    ports: int | None = None
    note: str
    source: ServerSource


@functools.cache
def _raw() -> dict:
    with open(DATA_DIR / "servers.yaml", encoding="utf-8") as fh:
        return load_yaml(fh) or {}


@functools.cache
def platforms() -> tuple[Platform, ...]:
    return tuple(Platform.model_validate({"id": key, **row}) for key, row in _raw()["platforms"].items())


@functools.cache
def network_parts() -> dict[str, NetworkPart]:
    return {key: NetworkPart.model_validate(row) for key, row in _raw()["network"].items()}


def platform(platform_id: str) -> Platform:
    for p in platforms():
        if p.id == platform_id:
            return p
    raise KeyError(platform_id)
