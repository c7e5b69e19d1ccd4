"""`fit_together`: several models served side by side on the same GPUs, each by its own engine (a chat model
beside an embedding model, a 7B beside a 20B): each model's own need on each card as `fit_inference` gives it
alone, summed and set against what the engines together may take.

    need     = Σ fit_inference(model).per_gpu_gb  (weights, KV cache, activations and one CUDA context each:
               every engine is its own process)
    usable   = the card's usable memory at `usable_fraction` (as fit_inference states it)
    share    = ⌈need / card capacity⌉ to 0.01: the `gpu_memory_utilization` each engine must be allowed, so the
               first to start does not take the whole card (vLLM preallocates its share)

Pure: catalog data in, figures out.
"""

from __future__ import annotations

import math

from tools.memory.fit_inference import fit_inference
from tools.schemas.common import assume
from tools.schemas.memory import FitInferenceInput
from tools.schemas.plan import FitTogetherInput, FitTogetherOutput


def _share(need_gb: float, capacity_gb: float) -> float:
    return math.ceil(need_gb / capacity_gb * 100 - 1e-9) / 100


def fit_together(inp: FitTogetherInput) -> FitTogetherOutput:
    """Several models on the same GPUs, each its own engine: their summed memory per card, and each one's share."""
    fits, parts = [], []
    for model in inp.models:
        args = {"model": model, "gpu": inp.gpu, "n_gpus": inp.n_gpus, "batch": inp.batch}
        args |= {"usable_fraction": inp.usable_fraction}
        if inp.precision:
            args["precision"] = inp.precision
        if inp.context_len:
            args["context_len"] = inp.context_len
        out = fit_inference(FitInferenceInput.model_validate(args))
        fits.append(out)
        parts.append(
            {
                "model": model,
                "name": out.model,
                "per_gpu_gb": out.per_gpu_gb,
                "weights_gb": out.breakdown_gb.get("weights", 0.0),
                "kv_cache_gb": out.breakdown_gb.get("kv_cache", 0.0),
                "share_fraction": _share(out.per_gpu_gb, out.capacity_gb),
            }
        )
    capacity, usable = fits[0].capacity_gb, fits[0].usable_gb
    need = round(sum(p["per_gpu_gb"] for p in parts), 2)
    return FitTogetherOutput.trusted(
        gpu=fits[0].gpu,
        n_gpus=inp.n_gpus,
        parts=parts,
        per_gpu_gb=need,
        capacity_gb=capacity,
        usable_gb=usable,
        fits=need <= usable,
        headroom_gb=round(max(0.0, usable - need), 2),
        shortfall_gb=round(max(0.0, need - usable), 2),
        share_fraction=round(sum(p["share_fraction"] for p in parts), 2),
        assumptions=[
            assume("usable_fraction", inp.usable_fraction, "", "usable_fraction" not in inp.model_fields_set,
                   note="share of each card the engines together may take"),
            assume("engines", len(parts), "", note="one engine (one process, its own CUDA context) per model"),
        ],
    )  # fmt: skip
