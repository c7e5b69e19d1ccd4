"""Catalog records: one pydantic model per GPU and per language model.

Every figure in a record is covered by a `Source` that names the document, its address, the date
it was read (`as_of`) and whether the figure was checked against the vendor's own document
(`verified`). Compute figures are **dense** tensor rates; when a datasheet headline is the 2:4
sparse rate, the record stores half of it and says so in `notes`.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, model_validator

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


#: a Chinese character: what a `*_zh` text must contain
_CJK = re.compile(r"[\u4e00-\u9fff]")
#: an all-lowercase English word ("reduced", "no", "per"): a text holding one is prose, not a product name
PROSE_WORD = re.compile(r"\b[a-z]{2,}\b")


def _is_chinese(text: str, field: str) -> None:
    if not _CJK.search(text):
        raise ValueError(f"{field} must be written in Chinese")


def check_zh(text: str, zh: str | None, field: str) -> None:
    """A catalog text shown in answers needs its Chinese version `zh` when it is prose (it holds an English word
    such as "reduced" or "not stated"); a bare product name ("NVLink 4", "HBM3e") is the same in both languages."""
    if zh is None:
        if PROSE_WORD.search(text):
            raise ValueError(f"{field} {text!r} is prose: give {field}_zh, its Chinese version")
    else:
        _is_chinese(zh, f"{field}_zh")


class ChinaStatus(Frozen):
    """Whether the card can be bought in mainland China, with the same note in English and in Chinese
    (a Chinese answer shows `note_zh`; both carry the same facts, figures and dates)."""

    available: bool
    note: str
    note_zh: str

    @model_validator(mode="after")
    def _zh_is_chinese(self) -> ChinaStatus:
        _is_chinese(self.note_zh, "china.note_zh")
        return self


class Interconnect(Frozen):
    kind: str  # "NVLink 4", "PCIe 4.0 x16", "Infinity Fabric", "HCCS", ...
    #: `kind` in Chinese; required when `kind` is prose ("PCIe 4.0 x16 (no NVLink)"), not a bare product name
    kind_zh: str | None = None
    #: scale-up bandwidth per GPU, bidirectional total (the NVIDIA datasheet convention)
    gb_s: float | None = None
    convention: str = "bidirectional total per GPU"

    @model_validator(mode="after")
    def _prose_has_zh(self) -> Interconnect:
        check_zh(self.kind, self.kind_zh, "interconnect.kind")
        return self

    @property
    def kind_for_zh(self) -> str:
        """What a Chinese answer shows: the Chinese text, or the product name when `kind` is only that."""
        return self.kind_zh or self.kind
