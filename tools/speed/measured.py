"""A measured speed against the calculators' estimate for the same setup: the one place that decides whether it
is what the hardware gives ("normal"), above the estimate ("high"), below it ("low") or far below ("very_low").
The diagnosis (`tools/diagnose/slow.py`) and the answer's speed section (`bot/offline/compose/evidence.py`) both
read it, so the lead and the body of one answer cannot give opposite verdicts.

The band is the one the answer's speed section already used (0.7–1.3 × the estimate is normal, under 0.4 far
below); the diagnosis used to call "slow" anything under 0.6 of its own estimate, which left 0.6–0.7 said both ways.
"""

from __future__ import annotations

from typing import Literal

#: measured ÷ estimated: above HIGH faster than the estimate, from LOW to HIGH normal, below VERY_LOW far below
HIGH, LOW, VERY_LOW = 1.3, 0.7, 0.4

Verdict = Literal["high", "normal", "low", "very_low"]


def verdict(measured: float, expected: float) -> Verdict:
    """How a measured speed stands against the estimate for its setup (both in the same unit, e.g. tokens/s)."""
    ratio = measured / expected if expected else 1.0
    if ratio > HIGH:
        return "high"
    if ratio >= LOW:
        return "normal"
    return "low" if ratio >= VERY_LOW else "very_low"


def below(measured: float, expected: float) -> bool:
    """Slower than the setup should run: a speed fix may be the cause."""
    return verdict(measured, expected) in ("low", "very_low")


#: the words a training verdict is said in: measured.verdict's band, named for a run's speed
TRAINING = {"high": "faster", "normal": "normal", "low": "slow", "very_low": "very_slow"}


def training_tokens_per_s(
    value: float, unit: str, *, step_tokens: float, seq_len: int, n_gpus: int, flops_per_token: float
) -> float:
    """A training speed the user measured, in tokens/s over all GPUs: a step holds `step_tokens` (micro-batch ×
    accumulation × data-parallel GPUs × sequence length), a sample `seq_len` tokens, and TFLOPS per GPU are model
    FLOPs (`flops_per_token` a token)."""
    if unit == "s_per_step":
        return step_tokens / value
    if unit == "steps_per_s":
        return step_tokens * value
    if unit == "samples_per_s":
        return value * seq_len
    if unit == "tokens_per_s_per_gpu":
        return value * n_gpus
    if unit == "tflops_per_gpu":
        return value * 1e12 * n_gpus / flops_per_token
    return value  # tokens_per_s


def training(
    value: float,
    unit: str,
    *,
    expected_tokens_per_s: float,
    step_tokens: float,
    seq_len: int,
    n_gpus: int,
    flops_per_token: float,
    peak_flops: float,
) -> dict[str, float | str]:
    """A measured training speed against the estimate for its run: its tokens/s (all GPUs and per GPU), seconds per
    step, the MFU it implies (model FLOPs over the GPUs' peak), its ratio to the estimate and the verdict (faster,
    normal, slow, very_slow: `verdict`'s band)."""
    tokens_s = training_tokens_per_s(
        value, unit, step_tokens=step_tokens, seq_len=seq_len, n_gpus=n_gpus, flops_per_token=flops_per_token
    )
    return {
        "measured_tokens_per_s": tokens_s,
        "measured_tokens_per_s_per_gpu": tokens_s / n_gpus,
        "measured_seconds_per_step": step_tokens / tokens_s,
        "measured_mfu": tokens_s * flops_per_token / (n_gpus * peak_flops),
        "measured_ratio": tokens_s / expected_tokens_per_s,
        # the tokens a step (a sample, for samples/s) would hold for the measured figure to be the estimate's pace
        "normal_tokens": round(expected_tokens_per_s * (seq_len if unit == "samples_per_s" else step_tokens) / tokens_s),
        "measured_verdict": TRAINING[verdict(tokens_s, expected_tokens_per_s)],
    }  # fmt: skip
