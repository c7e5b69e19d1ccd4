"""precision_speedup validates its input once and hands the run's fields to training_time as they are.

That is only sound while every value PrecisionSpeedupInput accepts is one TrainingTimeInput accepts too, and
the two runs it reports must be exactly what training_time says for the same run.
"""

from typing import get_args

import pytest
from annotated_types import Ge, Gt, Le, Lt

from tools.schemas.speed import PrecisionSpeedupInput, TrainingTimeInput
from tools.speed.precision_speedup import precision_speedup
from tools.speed.training_time import training_time

SHARED = ("model", "gpu", "n_gpus", "tokens", "method", "seq_len")


def _bounds(field) -> tuple[float, float]:
    low, high = float("-inf"), float("inf")
    for m in field.metadata:
        if isinstance(m, Ge | Gt):
            low = max(low, m.ge if isinstance(m, Ge) else m.gt)
        if isinstance(m, Le | Lt):
            high = min(high, m.le if isinstance(m, Le) else m.lt)
    return low, high


@pytest.mark.parametrize("name", SHARED)
def test_the_run_fields_accept_nothing_training_time_refuses(name):
    outer, inner = PrecisionSpeedupInput.model_fields[name], TrainingTimeInput.model_fields[name]
    (lo_out, hi_out), (lo_in, hi_in) = _bounds(outer), _bounds(inner)
    assert lo_out >= lo_in and hi_out <= hi_in
    if get_args(inner.annotation):
        assert set(get_args(outer.annotation)) <= set(get_args(inner.annotation))
    else:
        assert outer.annotation == inner.annotation


@pytest.mark.parametrize("name", ["precision", "baseline"])
def test_both_precisions_are_ones_training_time_takes(name):
    accepted = set(get_args(TrainingTimeInput.model_fields["precision"].annotation))
    assert set(get_args(PrecisionSpeedupInput.model_fields[name].annotation)) <= accepted


@pytest.mark.parametrize(
    "args",
    [
        {"model": "Llama-3-8B", "gpu": "H100", "n_gpus": 8, "tokens": 1_000_000_000},
        {"model": "70B", "gpu": "H800", "n_gpus": 64, "tokens": 20_000_000_000, "method": "lora", "seq_len": 8192},
        {
            "model": "Qwen2.5-7B",
            "gpu": "H20",
            "n_gpus": 1,
            "tokens": 5_000_000,
            "precision": "bf16",
            "baseline": "fp32",
        },
    ],
)
def test_both_rows_are_what_training_time_says(args):
    out = precision_speedup(PrecisionSpeedupInput(**args))
    run = {k: v for k, v in args.items() if k not in ("precision", "baseline")}
    for row in (out.baseline, out.faster):
        t = training_time(TrainingTimeInput(**run, precision=row.precision))
        assert (row.hours, row.gpu_hours, row.mfu, row.tokens_per_s) == (
            round(t.hours, 2),
            round(t.gpu_hours, 1),
            t.mfu,
            round(t.tokens_per_s),
        )
