"""Inputs and outputs of `gpu_specs` and `compare_gpus`."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from tools.schemas.common import ToolInput, ToolOutput


class GpuSpecsInput(ToolInput):
    """Look up one GPU's catalog entry."""

    gpu: str = Field(description="GPU name or alias, e.g. 'H800', 'A100 80G', '昇腾910B'.")


class GpuSpecsOutput(ToolOutput):
    """The catalog entry (every field of GpuSpec) with its sources."""

    id: str
    name: str
    vendor: str
    memory_gb: float
    memory_type: str
    #: memory_type for a Chinese answer (the same as memory_type where that is only a product name)
    memory_type_zh: str
    memory_reported_gib: float | None
    bandwidth_gb_s: float | None
    fp32_tflops: float | None
    tf32_tflops: float | None
    fp16_tflops: float | None
    bf16_tflops: float | None
    fp8_tflops: float | None
    int8_tops: float | None
    interconnect_gb_s: float | None
    interconnect_kind: str
    #: interconnect_kind for a Chinese answer (the same as interconnect_kind where that is only a product name)
    interconnect_kind_zh: str
    pcie_gen: int | None
    tdp_w: float | None
    form_factor: str
    launch_year: int | None
    china_available: bool
    china_note: str
    #: china_note in Chinese: the same facts, figures and dates
    china_note_zh: str
    #: made by a Chinese vendor (国产): a different question from china_available
    domestic: bool = False
    #: the same silicon sold under another name (A800 -> the A100's record)
    same_silicon_as: str | None = None
    sources: list[dict[str, Any]]
    notes: str | None = None
    #: default price quotes from tools/data/prices.yaml (None where none is on file)
    purchase_low_cny: float | None = None
    purchase_high_cny: float | None = None
    rent_low_cny_per_hour: float | None = None
    rent_high_cny_per_hour: float | None = None
    price_source: str | None = None


class CompareGpusInput(ToolInput):
    """Compare several GPUs side by side."""

    gpus: list[str] = Field(min_length=2, max_length=12, description="Two or more GPU names or aliases.")


class CompareGpusOutput(ToolOutput):
    rows: list[GpuSpecsOutput]
    #: ratio of each figure to the first GPU's, keyed memory, bandwidth, bf16, fp8, tf32, interconnect, tdp
    #: (None where either is unknown)
    ratios_to_first: list[dict[str, float | None]]
