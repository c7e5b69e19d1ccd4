"""One accelerator in the GPU catalog (tools/data/gpus.yaml)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from tools.catalog.record_base import GPU_FIGURES, AltFigure, ChinaStatus, Frozen, Interconnect, Source, check_zh

#: Chinese accelerator vendors ("国产"): what `domestic` means, separate from `china.available`
DOMESTIC_VENDORS = frozenset(
    {"huawei", "cambricon", "moore-threads", "hygon", "biren", "kunlunxin", "enflame", "metax", "iluvatar"}
)


class GpuSpec(Frozen):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9.\-]*$")
    name: str
    vendor: Literal[
        "nvidia",
        "amd",
        "huawei",
        "cambricon",
        "moore-threads",
        "intel",
        "hygon",
        "biren",
        "kunlunxin",
        "enflame",
        "metax",
        "iluvatar",
        "other",
    ]
    family: str  # "Ampere", "Hopper", "Ada", "Blackwell", "CDNA3", "Da Vinci", ...
    aliases: tuple[str, ...] = ()
    memory_gb: float = Field(gt=0)
    memory_type: str
    #: memory_type in Chinese; required when memory_type is prose ("not stated in the sources read")
    memory_type_zh: str | None = None
    #: what the driver reports (nvidia-smi 81920 MiB = 80 GiB); the calculators use memory_gb
    memory_reported_gib: float | None = None
    bandwidth_gb_s: float | None = Field(default=None, gt=0)
    fp32_tflops: float | None = Field(default=None, gt=0)
    tf32_tflops: float | None = Field(default=None, gt=0)
    fp16_tflops: float | None = Field(default=None, gt=0)
    bf16_tflops: float | None = Field(default=None, gt=0)
    fp8_tflops: float | None = Field(default=None, gt=0)
    int8_tops: float | None = Field(default=None, gt=0)
    interconnect: Interconnect
    #: the record of the same silicon and memory sold under another name (A800 -> A100): same capacity, same rates
    same_silicon_as: str | None = None
    #: how many devices the driver exposes per package (MI250X: 2 GCDs of 64 GB each); memory_gb is the package total
    devices_per_package: int = Field(default=1, ge=1, le=8)
    interconnect_gb_s: float | None = Field(default=None, gt=0)
    #: achieved decode bandwidth relative to the calibrated default efficiencies, where published serving runs on
    #: this card reach less of its datasheet bandwidth than the reference cards (None: 1, no such runs found)
    decode_bandwidth_factor: float | None = Field(default=None, gt=0, le=1)
    pcie_gen: int | None = Field(default=None, ge=3, le=6)
    tdp_w: float | None = Field(default=None, gt=0)
    form_factor: str  # "SXM4", "PCIe", "OAM", "PCIe dual-slot", ...
    segment: Literal["datacenter", "workstation", "consumer"] = "datacenter"
    launch_year: int | None = Field(default=None, ge=2015, le=2030)
    china: ChinaStatus
    #: dense figures derived from a sparse datasheet headline (halved) are named here
    halved_from_sparse: tuple[str, ...] = ()
    sources: tuple[Source, ...]
    alternatives: tuple[AltFigure, ...] = ()
    notes: str | None = None

    @model_validator(mode="after")
    def _interconnect_consistent(self) -> GpuSpec:
        if self.interconnect_gb_s is not None and self.interconnect.gb_s not in (None, self.interconnect_gb_s):
            raise ValueError("interconnect_gb_s and interconnect.gb_s disagree")
        check_zh(self.memory_type, self.memory_type_zh, "memory_type")
        return self

    @property
    def domestic(self) -> bool:
        """Made by a Chinese vendor (Huawei, Hygon, Cambricon, ...): not the same as being purchasable in China."""
        return self.vendor in DOMESTIC_VENDORS

    @property
    def verified(self) -> bool:
        """True when every figure the record gives is covered by a source checked against the vendor's document."""
        return not self.unverified_fields()

    def unverified_fields(self) -> tuple[str, ...]:
        """Non-null figures that no verified source covers (third-party reports, derivations, recalls)."""
        checked = {f for src in self.sources if src.verified for f in src.fields}
        return tuple(f for f in GPU_FIGURES if getattr(self, f) is not None and f not in checked)

    def peak_tflops(self, precision: str) -> float | None:
        """Dense tensor peak for a training/inference precision (int4/nf4 compute as bf16)."""
        key = {
            "fp32": "fp32_tflops",
            "tf32": "tf32_tflops",
            "fp16": "fp16_tflops",
            "bf16": "bf16_tflops",
            "fp8": "fp8_tflops",
            "int8": "int8_tops",
            "int4": "bf16_tflops",
            "nf4": "bf16_tflops",
        }[precision]
        value = getattr(self, key)
        if value is None and precision == "bf16":
            value = self.fp16_tflops
        return value
