"""Catalog records: one pydantic model per GPU and per language model.

Every figure in a record is covered by a `Source` that names the document, its address, the date
it was read (`as_of`) and whether the figure was checked against the vendor's own document
(`verified`). Compute figures are **dense** tensor rates; when a datasheet headline is the 2:4
sparse rate, the record stores half of it and says so in `notes`.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import BaseModel, ConfigDict

Precision = Literal["fp32", "tf32", "bf16", "fp16", "fp8", "int8", "int4", "nf4"]

#: the numeric GPU fields that must be covered by a source when present
GPU_FIGURES = (
    "memory_gb",
    "bandwidth_gb_s",
    "fp32_tflops",
    "tf32_tflops",
    "fp16_tflops",
    "bf16_tflops",
    "fp8_tflops",
    "int8_tops",
    "interconnect_gb_s",
    "pcie_gen",
    "tdp_w",
    "launch_year",
)

MODEL_FIGURES = (
    "n_layers",
    "hidden_size",
    "n_heads",
    "n_kv_heads",
    "head_dim",
    "ffn_size",
    "vocab_size",
    "params_b",
    "active_params_b",
    "n_experts",
    "experts_per_token",
    "max_context",
)


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Source(Frozen):
    """Where figures come from. `fields` lists the record fields this source supports."""

    title: str
    url: str
    as_of: dt.date
    fields: tuple[str, ...]
    verified: bool = True
    note: str | None = None


class AltFigure(Frozen):
    """A figure from another source that disagrees with the one stored; kept, not used."""

    field: str
    value: float
    source: str
    url: str
    as_of: dt.date
    note: str


class ChinaStatus(Frozen):
    available: bool
    note: str


class Interconnect(Frozen):
    kind: str  # "NVLink 4", "PCIe 4.0 x16", "Infinity Fabric", "HCCS", ...
    #: scale-up bandwidth per GPU, bidirectional total (the NVIDIA datasheet convention)
    gb_s: float | None = None
    convention: str = "bidirectional total per GPU"
