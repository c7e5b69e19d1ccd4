"""One serving replica at the peak: how prefill and decode share its time, what each user sees, what it serves.

A replica runs `b` sequences with continuous batching. From `inference_speed` at that batch: a decode step
takes `tpot` (r = 1/tpot steps a second) and one prompt's prefill takes S seconds. Each finished request is
replaced by a new one whose prompt must be prefilled, so with `out` output tokens per request:

    k   = b · r · S / out          (prefill seconds needed per second of pure decoding)
    ρ   = k / (1 + k)              (share of the replica's time spent on prefill)
    u   = r · (1 − ρ)              (tokens/s each user sees)
    λ   = b · u / out              (requests a second the replica completes)
    TTFT = S + ρ / (2(1 − ρ)) · S + tpot     (M/D/1 mean wait for the prefill slot, then one step)

The request's own TTFT is left out of its duration when working out λ, which slightly overstates λ's demand
for prefill, so ρ errs high (the plan errs towards more GPUs). The memory side is `fit_inference`'s max batch
at prompt + output tokens per sequence.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

from annotated_types import Le

from tools.catalog.lookup import get_gpu, get_model
from tools.memory.fit_inference import default_kv_precision, max_batch_that_fits, min_gpus_that_fit
from tools.memory.search import bisect
from tools.schemas.speed import InferenceSpeedInput

#: the largest batch inference_speed models (its input's limit): a replica's batch is searched up to it
SPEED_BATCH_CAP = next(m.le for m in InferenceSpeedInput.model_fields["batch"].metadata if isinstance(m, Le))


class Peak(NamedTuple):
    """What one replica does at the peak with `batch` sequences in flight (a tuple: the batch search builds
    hundreds per plan)."""

    batch: int
    ttft_s: float
    tokens_per_s_per_user: float
    output_tokens_per_s: float
    qps: float
    prefill_share: float


def max_batch(model: str, gpu: str, tp: int, precision: str, context: int) -> int:
    """The most sequences of `context` tokens whose KV cache fits on `tp` GPUs beside the weights (0: none):
    fit_inference's max_batch at its defaults (its KV precision for `precision`), memoised per replica shape."""
    kv = default_kv_precision(precision)
    return max_batch_that_fits(get_model(model), get_gpu(gpu), precision, kv, tp, context)


def min_gpus(model: str, gpu: str, precision: str, context: int) -> int | None:
    """The fewest GPUs one replica needs for one sequence of `context` tokens (None: not on any count): fit_inference's
    min_gpus at its defaults."""
    return min_gpus_that_fit(get_model(model), get_gpu(gpu), precision, context)


def speed_input(
    model: str, gpu: str, tp: int, precision: str, prompt: int, output: int, held: int | None = None
) -> InferenceSpeedInput:
    """inference_speed's input for one replica of `tp` GPUs (the KV read per step is prompt + half the output, or
    the context a request holds less half the output when it holds more: a chat's window), validated once per
    replica shape; `step_times` on it works out what does not depend on the batch once."""
    half = max(1, output // 2)
    return InferenceSpeedInput(
        model=model,
        gpu=gpu,
        n_gpus=tp,
        precision=precision,
        batch=1,
        context_len=max(prompt + half, (held or 0) - half),
        prompt_len=prompt,
    )


def at_peak(steps: Callable[[int], tuple[float, float]], batch: int, output: int) -> Peak:
    """One replica running `batch` sequences; `steps` is `step_times` on the replica's shape (1 ≤ batch ≤
    SPEED_BATCH_CAP, inside the input's limits; inference_speed reads no field derived from the batch)."""
    tpot_ms, ttft_s = steps(batch)
    tpot = tpot_ms / 1e3
    prefill = max(ttft_s - tpot, 0.0)  # inference_speed's TTFT is the prefill plus one decode step
    return share(batch, tpot, prefill, output)


def share(batch: int, tpot_s: float, prefill_s: float, output: int) -> Peak:
    """The closed form above: a replica's time split between prefill and decode at `batch` in flight."""
    r = 1 / tpot_s
    k = batch * r * prefill_s / output
    rho = k / (1 + k)
    user = r * (1 - rho)
    wait = rho / (2 * (1 - rho)) * prefill_s
    return Peak(
        batch=batch,
        ttft_s=prefill_s + wait + tpot_s,
        tokens_per_s_per_user=user,
        output_tokens_per_s=batch * user,
        qps=batch * user / output,
        prefill_share=rho,
    )


def replicas_needed(in_flight: float, headroom: float, batch: int) -> int:
    """⌈in flight × (1 + headroom) / batch per replica⌉, at least one."""
    return max(1, math.ceil(in_flight * (1 + headroom) / batch - 1e-9))


def per_million(price: float | None, tp: int, tokens_per_s: float | None) -> float | None:
    """元 per million output tokens: tp cards at `price` 元 per card-hour producing `tokens_per_s` together."""
    if price is None or not tokens_per_s:
        return None
    return round(tp * price / (tokens_per_s * 3600) * 1e6, 2)


def largest_batch(ok, cap: int) -> int:
    """Largest b in [1, cap] with ok(b), ok being true then false as b grows; 0 when ok(1) fails."""
    if cap < 1 or not ok(1):
        return 0
    return bisect(ok, 1, cap + 1)
