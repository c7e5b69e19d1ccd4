"""`gpu_specs` and `compare_gpus`: the catalog as tools."""

from __future__ import annotations

import functools

from tools.catalog import price_book
from tools.catalog.gpu_spec import GpuSpec
from tools.catalog.lookup import get_gpu
from tools.catalog.prices import prices_for
from tools.schemas.common import assume
from tools.schemas.specs import CompareGpusInput, CompareGpusOutput, GpuSpecsInput, GpuSpecsOutput

#: output key -> catalog field; ratios are unit-free, so their keys carry no unit
RATIO_FIELDS = {
    "memory": "memory_gb",
    "bandwidth": "bandwidth_gb_s",
    "bf16": "bf16_tflops",
    "fp8": "fp8_tflops",
    "tf32": "tf32_tflops",
    "interconnect": "interconnect_gb_s",
    "tdp": "tdp_w",
}


@functools.cache
def _row(g: GpuSpec) -> GpuSpecsOutput:
    """One GPU's output row; built once per record (catalog records and outputs are frozen)."""
    data = g.model_dump(mode="json")
    unverified = sorted({f for s in g.sources if not s.verified for f in s.fields})
    assumptions = [assume(key="compute_convention", value="dense", note="tensor TFLOPS without 2:4 sparsity")]
    if unverified:
        assumptions.append(
            assume(key="unverified_fields", value=", ".join(unverified), note="not confirmed by a vendor document")
        )
    table = prices_for(g)
    buy = table.default("purchase") if table else None
    rent = table.default("rental") if table else None
    return GpuSpecsOutput(
        purchase_low_cny=buy.low_cny if buy else None,
        purchase_high_cny=buy.high_cny if buy else None,
        rent_low_cny_per_hour=rent.low_cny if rent else None,
        rent_high_cny_per_hour=rent.high_cny if rent else None,
        price_source=(buy or rent).cite() if (buy or rent) else None,
        id=g.id,
        name=g.name,
        vendor=g.vendor,
        memory_gb=g.memory_gb,
        memory_type=g.memory_type,
        memory_type_zh=g.memory_type_zh or g.memory_type,
        memory_reported_gib=g.memory_reported_gib,
        bandwidth_gb_s=g.bandwidth_gb_s,
        fp32_tflops=g.fp32_tflops,
        tf32_tflops=g.tf32_tflops,
        fp16_tflops=g.fp16_tflops,
        bf16_tflops=g.bf16_tflops,
        fp8_tflops=g.fp8_tflops,
        int8_tops=g.int8_tops,
        interconnect_gb_s=g.interconnect_gb_s,
        interconnect_kind=g.interconnect.kind,
        interconnect_kind_zh=g.interconnect.kind_for_zh,
        pcie_gen=g.pcie_gen,
        tdp_w=g.tdp_w,
        form_factor=g.form_factor,
        launch_year=g.launch_year,
        china_available=g.china.available,
        china_note=g.china.note,
        china_note_zh=g.china.note_zh,
        domestic=g.domestic,
        same_silicon_as=g.same_silicon_as,
        sources=data["sources"],
        notes=g.notes,
        assumptions=assumptions,
    )


price_book.on_change(_row.cache_clear)  # a price book imported since: the rows show its prices


def gpu_specs(inp: GpuSpecsInput) -> GpuSpecsOutput:
    """A GPU's catalog entry: memory, bandwidth, dense TFLOPS per precision, interconnect, TDP, China status, sources."""
    return _row(get_gpu(inp.gpu))


def compare_gpus(inp: CompareGpusInput) -> CompareGpusOutput:
    """GPUs side by side, each figure as a ratio to the first."""
    rows = [_row(get_gpu(name)) for name in inp.gpus]
    first = rows[0]
    ratios = []
    for r in rows:
        ratio: dict[str, float | None] = {}
        for key, f in RATIO_FIELDS.items():
            a, b = getattr(r, f), getattr(first, f)
            ratio[key] = round(a / b, 2) if a and b else None
        ratios.append(ratio)
    return CompareGpusOutput(rows=rows, ratios_to_first=ratios, assumptions=first.assumptions[:1])
