"""How many optimizer steps a training run takes, and where a step or epoch count the user saw comes from (read by
`diagnose`, whose `steps` field it fills).

One optimizer step takes micro_batch samples on each of n_gpus data-parallel GPUs, grad_accum times over:
global batch = micro_batch × grad_accum × n_gpus. An epoch is ⌈samples ÷ (micro_batch × n_gpus)⌉ forward passes
per GPU, and steps per epoch are those passes ÷ grad_accum, rounded down (at least 1), as the Hugging Face Trainer
counts them; total steps = steps per epoch × epochs. A count the user saw is set against it: the ratio, whether
it agrees (within 5%), the settings the ratio equals (a log that counts passes, not updates, is off by exactly
grad_accum; one that counts one GPU's share is off by n_gpus) and the global batch the count implies.
"""

from __future__ import annotations

import math
from typing import Any

from tools.schemas.common import Assumption
from tools.schemas.speed import StepsFactor, TrainingStepsInput, TrainingStepsOutput

#: the settings a run left out take these values (each stated as an assumption)
_LEFT_OUT = {
    "epochs": "one pass over the data",
    "micro_batch": "one sample per GPU per pass",
    "grad_accum": "no gradient accumulation",
    "n_gpus": "one GPU",
}
#: a stated count within this share of the computed one agrees with it
AGREE = 0.05


def _factors(ratio: float, settings: dict[str, float]) -> list[StepsFactor]:
    """The settings (above 1) that the ratio or its inverse equals, within AGREE, and their product when two do."""
    gap = max(ratio, 1 / ratio)
    out = [StepsFactor(name=k, value=v) for k, v in settings.items() if v > 1 and abs(gap / v - 1) <= AGREE]
    return out


def training_steps(inp: TrainingStepsInput) -> TrainingStepsOutput:
    """Optimizer steps of a training run, per epoch and in total, from samples, epochs, micro-batch, accumulation and
    GPUs, and a step or epoch count the user saw set against them: whether it agrees, the ratio and the setting the
    gap equals."""
    per_pass = inp.micro_batch * inp.n_gpus
    batches = math.ceil(inp.samples / per_pass)
    per_epoch = max(1, batches // inp.grad_accum)
    total = math.ceil(per_epoch * inp.epochs - 1e-9)
    out = {
        "samples": inp.samples,
        "epochs": inp.epochs,
        "micro_batch": inp.micro_batch,
        "grad_accum": inp.grad_accum,
        "n_gpus": inp.n_gpus,
        "global_batch": per_pass * inp.grad_accum,
        "batches_per_epoch": batches,
        "steps_per_epoch": per_epoch,
        "total_steps": total,
    }
    out["assumptions"] = [
        Assumption(key=k, value=getattr(inp, k), note=note)
        for k, note in _LEFT_OUT.items()
        if k not in inp.model_fields_set
    ]
    settings = {"grad_accum": inp.grad_accum, "n_gpus": inp.n_gpus, "micro_batch": inp.micro_batch}
    if inp.stated_steps is not None:
        ratio = inp.stated_steps / total
        out |= {
            "stated_steps": inp.stated_steps,
            "ratio": round(ratio, 4),
            "agrees": abs(ratio - 1) <= AGREE,
            "factors": _factors(ratio, settings),
            "implied_global_batch": round(inp.samples * inp.epochs / inp.stated_steps, 2),
        }
    elif inp.stated_epochs is not None:
        ratio = inp.stated_epochs / inp.epochs
        out |= {
            "stated_epochs": inp.stated_epochs,
            "ratio": round(ratio, 4),
            "agrees": abs(ratio - 1) <= AGREE,
            "factors": _factors(ratio, settings),
        }
    return TrainingStepsOutput(**out)


def counted(inp: Any) -> dict[str, Any]:
    """`diagnose`'s view of the run's steps (its `steps` field): flat figures, empty without the samples."""
    if not getattr(inp, "samples", None):
        return {}
    given = {k: getattr(inp, k) for k in ("micro_batch", "grad_accum", "n_gpus") if getattr(inp, k) is not None}
    extra = {k: getattr(inp, k) for k in ("epochs", "stated_steps", "stated_epochs") if getattr(inp, k) is not None}
    o = training_steps(TrainingStepsInput(samples=inp.samples, **given, **extra))
    out: dict[str, Any] = {
        "samples": o.samples, "epochs": o.epochs, "micro_batch": o.micro_batch, "grad_accum": o.grad_accum,
        "n_gpus": o.n_gpus, "global_batch": o.global_batch, "steps_per_epoch": o.steps_per_epoch,
        "total_steps": o.total_steps, "agrees": o.agrees, "ratio": o.ratio,
        "factor": o.factors[0].name if o.factors else None, "implied_batch": o.implied_global_batch,
        "stated": o.stated_steps if o.stated_steps is not None else o.stated_epochs,
        "stated_unit": "steps" if o.stated_steps is not None else ("epochs" if o.stated_epochs is not None else None),
    }  # fmt: skip
    if (mine := getattr(inp, "expected_steps", None)) is not None:  # the user's own reckoning, checked too
        out |= {"expected": mine, "expected_agrees": abs(mine / o.total_steps - 1) <= AGREE}
    return out
