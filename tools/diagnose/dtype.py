"""The memory the user says the run takes, set against the model's weights at each precision: a figure that is the
weights at 4 bytes a parameter says the model was loaded in fp32 (frameworks.yaml
`transformers.from_pretrained_dtype`: without torch_dtype, from_pretrained loads fp32), twice what the 16-bit
checkpoint needs; loading it in 16-bit (torch_dtype / .half()) halves it."""

from __future__ import annotations

from tools.diagnose.context import Candidate, Setup, count, gib
from tools.diagnose.facts import say
from tools.units import BYTES_PER_PARAM, GB

#: the said figure within this share of the fp32 weights (what else the process holds: a CUDA context, buffers)
USED_TOLERANCE = 0.15
#: the precisions a said figure is set against
_PRECISIONS = ("fp32", "bf16", "int8", "int4")


def _at(total: float) -> dict[str, float]:
    return {p: BYTES_PER_PARAM[p] * total / GB for p in _PRECISIONS}


def fp32_weights(total_params: float, used_gb: float) -> bool:
    """The said figure is the weights in fp32: of the precisions, fp32's weights are the closest, within
    USED_TOLERANCE. (A reader asks before it hands the figure over: a figure this explains nothing about is not
    the run's.)"""
    at = _at(total_params)
    best = min(at, key=lambda p: abs(at[p] - used_gb))
    return best == "fp32" and abs(at[best] - used_gb) <= USED_TOLERANCE * used_gb


def dtype_causes(s: Setup) -> list[Candidate]:
    i = s.inp
    if not i.used_gb or s.params is None or i.precision == "fp32" or s.workload == "train":
        return []
    total = s.params.total
    if not fp32_weights(total, i.used_gb):
        return []
    at = _at(total)
    arith = say("fp32_load", used=f"{i.used_gb:g}", params=count(total), fp32=f"{at['fp32']:.1f}",
                half=f"{at['bf16']:.1f}", int4=f"{at['int4']:.1f}")  # fmt: skip
    return [Candidate("loaded_in_fp32", arith, "torch_dtype", "torch.float16 (or model.half())", named=True,
                      prior=0.85)]  # fmt: skip


#: runs that load with from_pretrained themselves (an engine picks the checkpoint's dtype)
_LOADS_BY_HAND = (None, "pytorch", "transformers", "accelerate")
#: the 16-bit weights "fit" when they leave this share of the memory for the rest (context, inputs)
HALF_FITS = 0.9


def default_fp32_causes(s: Setup) -> list[Candidate]:
    """A model loaded by hand in fp32 (the reader hands precision fp32 where from_pretrained has no torch_dtype:
    frameworks.yaml `transformers.from_pretrained_dtype`) that ran out of memory: where its fp32 weights overrun
    the memory the load spreads them over (one card, or every card under device_map) and its 16-bit weights
    would fit, the default dtype is the cause and torch_dtype the fix."""
    i = s.inp
    if not (s.workload == "infer" and i.precision == "fp32" and s.framework in _LOADS_BY_HAND and s.oom):
        return []
    if s.params is None or not s.capacity:
        return []
    gpus = max(i.n_gpus, 1) if i.layer_split else 1
    room = s.capacity * gpus
    fp32, half = 4 * s.params.total, 2 * s.params.total
    if fp32 <= room or half > HALF_FITS * room:
        return []
    arith = say("fp32_default", params=count(s.params.total), fp32=gib(fp32), cap=gib(room), half=gib(half),
                gpus=f"{gpus} GPU" if gpus == 1 else f"{gpus} GPUs")  # fmt: skip
    return [Candidate("weights_exceed_memory", arith, "torch_dtype", "torch.float16", named=True, prior=0.9,
                      figure=fp32, extra={"words": "fp32_default"})]  # fmt: skip
