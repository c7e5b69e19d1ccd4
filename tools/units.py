"""One unit system for the calculators.

Inside `tools/` memory is in bytes, compute in FLOP/s and bandwidth in bytes/s; outputs are
converted at the edge into fields whose names carry the unit (`memory_gb`, `bandwidth_gb_s`).
GB is the decimal gigabyte (10**9 bytes) used in answers; GiB (2**30) is what `nvidia-smi`
reports, and is only used where a card is described that way.
"""

from __future__ import annotations

KB = 10**3
MB = 10**6
GB = 10**9
TB = 10**12
GiB = 2**30
MiB = 2**20

TFLOPS = 10**12
HOURS_PER_MONTH = 730  # 8,760 h / 12, the convention used in TCO models

#: bytes per element for each precision name used in the public API
BYTES_PER_PARAM: dict[str, float] = {
    "fp32": 4.0,
    "tf32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
    "nf4": 0.5,
}

#: bytes per weight of the quantised storage formats, with their per-group constants
NF4_BYTES = 0.5 + 0.127 / 8  # 4-bit weights + double-quantised constants (QLoRA paper, arXiv 2305.14314)
INT4_GROUP_BYTES = 0.5 + 0.25 / 8  # AWQ/GPTQ group 128: fp16 scale + zero per 128 weights ≈ 0.25 bit
#: OCP microscaling FP4: 4-bit E2M1 values in blocks of 32 sharing one 8-bit (E8M0) scale = 4.25 bits
MXFP4_BYTES = 0.5 + 1 / 32


def gb(n_bytes: float, ndigits: int = 2) -> float:
    """Bytes -> decimal GB, rounded for presentation."""
    return round(n_bytes / GB, ndigits)


def gib_to_gb(gib: float) -> float:
    return gib * GiB / GB


def plain(value: float) -> str:
    """A number as prose writes it: like `format(value, "g")` (six significant digits, no trailing
    zeros) but never in exponent form, which no reader types and no answer may show ("1e-06B")."""
    text = f"{value:.6g}"
    if "e" not in text:
        return text
    digits = max(0, 5 - int(f"{abs(value):e}".split("e")[1]))
    text = f"{value:.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text
