"""Catalog records, re-exported: `GpuSpec`, `ModelSpec` and the `Source` each figure cites."""

from tools.catalog.gpu_spec import GpuSpec
from tools.catalog.model_spec import ModelSpec
from tools.catalog.record_base import (
    GPU_FIGURES,
    MODEL_FIGURES,
    AltFigure,
    ChinaStatus,
    Interconnect,
    Precision,
    Source,
)

__all__ = [
    "GPU_FIGURES",
    "MODEL_FIGURES",
    "AltFigure",
    "ChinaStatus",
    "GpuSpec",
    "Interconnect",
    "ModelSpec",
    "Precision",
    "Source",
]
