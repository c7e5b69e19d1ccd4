"""How much faster a training run gets at a lower compute precision (FP8 vs BF16), through `training_time`.

The speed-up is the ratio of the two `training_time` results (same model, GPUs, tokens, sequence length),
so it carries that calculator's MFU calibration per precision; the peak ratio of the card's dense
tensor figures is returned beside it, because the real gain is smaller than the peak ratio.
"""

from __future__ import annotations

from tools.catalog.lookup import get_gpu
from tools.errors import Unsupported
from tools.schemas.speed import PrecisionSpeedupInput, PrecisionSpeedupOutput, TrainingTimeInput
from tools.speed.training_time import training_hours, training_time

_PEAK = {
    "fp32": "fp32_tflops",
    "tf32": "tf32_tflops",
    "bf16": "bf16_tflops",
    "fp16": "fp16_tflops",
    "fp8": "fp8_tflops",
}


def precision_speedup(inp: PrecisionSpeedupInput) -> PrecisionSpeedupOutput:
    """Training time of one run at two compute precisions (default FP8 vs BF16), the speed-up and the peak ratio."""
    gpu = get_gpu(inp.gpu)
    for prec in (inp.precision, inp.baseline):
        if getattr(gpu, _PEAK[prec]) is None:
            raise Unsupported(
                f"{gpu.name} has no published {prec.upper()} tensor figure (FP8 needs Hopper or newer).",
                f"{gpu.name} 没有 {prec.upper()} 张量算力数据（FP8 需要 Hopper 或更新的卡）。",
                field="gpu",
            )
    common = {
        "model": inp.model,
        "gpu": inp.gpu,
        "n_gpus": inp.n_gpus,
        "tokens": inp.tokens,
        "method": inp.method,
        "seq_len": inp.seq_len,
    }
    # validated once, at the edge: these fields carry PrecisionSpeedupInput's limits, which lie within
    # TrainingTimeInput's (tests/tools/speed/test_precision_input.py holds them together)
    base = training_hours(TrainingTimeInput.trusted(**common, precision=inp.baseline))
    fast = training_time(TrainingTimeInput.trusted(**common, precision=inp.precision))
    peak_b, peak_f = getattr(gpu, _PEAK[inp.baseline]), getattr(gpu, _PEAK[inp.precision])

    def row(prec: str, t) -> dict:
        return {
            "precision": prec,
            "hours": round(t.hours, 2),
            "gpu_hours": round(t.gpu_hours, 1),
            "mfu": t.mfu,
            "tokens_per_s": round(t.tokens_per_s),
        }

    assumptions = [a for a in fast.assumptions if a.key != "precision"]  # validated records, shared as they are
    return PrecisionSpeedupOutput(
        model=fast.model,
        gpu=fast.gpu,
        n_gpus=fast.n_gpus,
        tokens=inp.tokens,
        baseline=row(inp.baseline, base),
        faster=row(inp.precision, fast),
        speedup=round(base.hours / fast.hours, 2),
        peak_ratio=round(peak_f / peak_b, 2) if peak_b else None,
        hours_saved=round(base.hours - fast.hours, 2),
        assumptions=assumptions,
    )
